"""Shared helpers for the backbone tests (not a conftest: imported explicitly)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chronobench.protocols import ChatMessage, Completion, GenerationParams, GenerationRequest


def texts(completions: Sequence[Completion]) -> list[str]:
    """The texts of a backbone's completions."""
    return [c.text for c in completions]


def make_request(
    question: str,
    context: tuple[str, ...] = (),
    task: str = "qa",
    system: str | None = "Answer from the memory.",
    params: GenerationParams | None = None,
) -> GenerationRequest:
    """A request whose messages carry the context and question, as systems build them."""
    messages = []
    if system is not None:
        messages.append(ChatMessage("system", system))
    body = "\n".join(context) + f"\n\nQuestion: {question}"
    messages.append(ChatMessage("user", body))
    return GenerationRequest(
        messages=tuple(messages),
        params=params or GenerationParams(),
        task=task,
        context=context,
        question=question,
    )


# A small LoCoMo-like conversation used to tune and test the extractive reader.
CONVERSATION: tuple[str, ...] = (
    "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday and it "
    "was so powerful.",
    "[1:56 pm on 8 May, 2023] Melanie: That's great! I'm painting a sunset with my kids "
    "this weekend.",
    "[1:56 pm on 8 May, 2023] Caroline: I'm a transgender woman and I want to become a counselor.",
    "[3:10 pm on 25 May, 2023] Melanie: I ran a charity race for mental health last Saturday.",
    "[3:10 pm on 25 May, 2023] Caroline: My friend Jolene gave me a necklace from Sweden.",
    "[3:10 pm on 25 May, 2023] Melanie: We have three kids and two dogs.",
    "[3:10 pm on 25 May, 2023] Caroline: I moved from Sweden four years ago.",
)


TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def save_tiny_causal_lm(path: Path) -> Path:
    """Save a 1-layer random GPT-2 with a word-level tokenizer in ``path`` (no downloads)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = ["<pad>", "<eos>", "<unk>"] + (
        [
            "<system>",
            "<user>",
            "<assistant>",
            "answer",
            "from",
            "the",
            "memory",
            "question",
            "what",
            "is",
            "a",
            "b",
            "c",
            "1",
            "2",
            "3",
        ]
    )
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    fast.chat_template = TINY_CHAT_TEMPLATE
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=128,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path
