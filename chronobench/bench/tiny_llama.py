"""A tiny, randomly initialised Llama-architecture model and tokenizer, built locally.

The GPU check (``scripts/gpu_check.sh``) and the ``gpu``-marked vLLM test need a real
model directory that vLLM can load, but no weights may be downloaded. This builds one
in a second: a byte-level BPE tokenizer trained on a few sentences (so any text
encodes, no unknown tokens), wrapped as a ``PreTrainedTokenizerFast`` with a chat
template, and a two-layer ``LlamaForCausalLM`` with random weights (head size 64, which
every vLLM attention backend supports). Its outputs are noise, but deterministic noise:
greedy decoding of the same prompt gives the same tokens, which is what the harness
checks need.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHAT_TEMPLATE", "build_tiny_llama"]

# Plain-text roles; the generation prompt ends with the assistant header.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_SPECIAL = ["<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
_CORPUS = [
    "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted.",
    "Melanie painted a sunrise over the lake last year and ran a charity race.",
    "Question: When did Caroline go to the support group? Answer: 7 May 2023.",
    "Memory:\n- The user adopted a dog named Oscar.\n- The user moved to Berlin.",
    "Summarise what has happened so far. Not mentioned. Roll your memory back.",
    "0123456789 the a an of to in on at for with from by and or but not yes no",
]


def build_tiny_llama(
    folder: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 512,
    hidden_size: int = 128,
    layers: int = 2,
    max_positions: int = 8192,
) -> Path:
    """Write a loadable tiny Llama model + tokenizer to ``folder``; returns the folder.

    ``hidden_size`` is split into heads of 64; ``max_positions`` bounds the prompt plus
    generated tokens (the byte-level tokenizer makes prompts long, so it is generous).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    if hidden_size % 64:
        raise ValueError(f"hidden_size must be a multiple of 64 (head size), got {hidden_size}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=max_positions,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)

    heads = hidden_size // 64
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    return folder
