"""Prompt construction shared by every system, so systems differ only in what memory they show."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from chronobench.protocols import ChatMessage, GenerationParams, GenerationRequest

ABSTAIN_REPLY = "Not mentioned"

_SYSTEM_QA = (
    "You are an assistant with long-term memory. Answer the question using only the "
    "memory shown. Reply with a short answer (a few words). If the memory does not "
    f"contain the answer, reply exactly: {ABSTAIN_REPLY}."
)
_SYSTEM_SUMMARY = (
    "You are an assistant with long-term memory. Summarise the events in the memory "
    "shown, in chronological order, in a short paragraph."
)


# A summary request, as people word one ("Summarise what has happened so far.", "Please
# give me a summary of ...", "Sum up ..."): what an agent reads to pick its task.
_SUMMARY_REQUEST = re.compile(
    r"^\W*(?:please\s+|can you\s+|could you\s+)?"
    r"(?:summari[sz]e|sum up|recap|(?:give|write)(?: me)? an? (?:short |brief )?summary)\b",
    re.IGNORECASE,
)


def is_summary_request(text: str) -> bool:
    """Whether a question asks for a summary (the systems' task routing reads only this)."""
    return bool(_SUMMARY_REQUEST.search(text))


def rollback_instruction(request: str) -> str:
    """The instruction that prompt-level baselines get instead of a real rollback."""
    return (
        f'The user asked you to roll your memory back: "{request}". Behave as if everything '
        "after that point never happened: do not use any information from after it."
    )


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about four characters per token for English)."""
    return max(1, (len(text) + 3) // 4)


def _render_memory(items: Sequence[str]) -> str:
    return _render(tuple(items))


# Memoised: a system showing one memory view for a session's questions (a whole
# history is ~100 KB) renders it once.
@lru_cache(maxsize=32)
def _render(items: tuple[str, ...]) -> str:
    if not items:
        return "(memory is empty)"
    return "\n".join(f"- {t}" for t in items)


def _request(
    system: str,
    task: str,
    question: str,
    last_line: str,
    items: Sequence[str],
    params: GenerationParams,
    instruction: str | None,
) -> GenerationRequest:
    parts = [f"Memory:\n{_render_memory(items)}"]
    if instruction:
        parts.append(instruction)
    parts.append(last_line)
    return GenerationRequest(
        messages=(ChatMessage("system", system), ChatMessage("user", "\n\n".join(parts))),
        params=params,
        task=task,
        context=tuple(items),
        question=question,
    )


def qa_request(
    question: str,
    items: Sequence[str],
    params: GenerationParams,
    *,
    instruction: str | None = None,
) -> GenerationRequest:
    """A QA prompt over ``items`` (memory lines), optionally with a rollback instruction."""
    last = f"Question: {question}\nAnswer:"
    return _request(_SYSTEM_QA, "qa", question, last, items, params, instruction)


def summary_request(
    question: str,
    items: Sequence[str],
    params: GenerationParams,
    *,
    instruction: str | None = None,
) -> GenerationRequest:
    """A summarisation prompt over ``items``."""
    return _request(_SYSTEM_SUMMARY, "summary", question, question, items, params, instruction)
