"""Reading a language model's reply as an answer, and counting what did not parse.

A real model (SmolLM2-135M on CPU) does not reply with a clean span. Read from
its outputs on LoCoMo prompts: it runs past its answer into copies of the memory lines
(``\\n- [1:51 pm on 15 July, 2023] Melanie: ...``), starts with a preamble ("The answer
is: 20 July, 2023"), echoes a memory line as its answer, bullet, timestamp and speaker
included, and puts a speaker tag before an abstention ("Caroline: Not mentioned").

:func:`read_answer` is what the runner scores for a language-model backbone (the
extractive reader's spans are scored as they are): the first non-empty line, without a
preamble, a leading bullet, timestamp or speaker tag, or wrapping quotes. The reply
itself is kept on the sample row (``reply``), so :func:`reply_failures` can count, per
row and from the row alone, every way the reply departed from what was asked. Nothing is
dropped: a reply that still is no short answer after reading is scored as it is and
counted (``not_a_span``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from chronobench.metrics.qa import AFFIRMATIVE, NEGATIVE
from chronobench.metrics.text import is_abstention, normalize_answer

__all__ = [
    "FAILURE_KINDS",
    "READER_VERSION",
    "MAX_SPAN_WORDS",
    "RECOVERED_KINDS",
    "count_failures",
    "read_answer",
    "reply_failures",
]

#: The reading rules' version: the known set's identity names it (a change re-reads).
READER_VERSION = 2

#: Longer than this many words (after reading) is not a short answer.
MAX_SPAN_WORDS = 12

#: Every kind :func:`reply_failures` and the repair agent report, in table order.
FAILURE_KINDS: tuple[str, ...] = (
    "multi_line",  # ran past its first line (cut there)
    "preamble",  # "The answer is:", "Answer:" (dropped)
    "echoed_memory",  # a memory line's bullet / timestamp / speaker tag (dropped)
    "not_a_span",  # still more than MAX_SPAN_WORDS words (scored as it is)
    "abstain_other_words",  # abstained, not with the reply the prompt asked for
    "yes_no_unparsed",  # a recall reply that neither says yes / no nor abstains
    "empty",  # nothing left to score
    "resolver_not_a_number",  # the request resolver's reply: neither a number nor NONE
    "citation_missing",  # repair agent: a line without [refs]
    "citation_wrong",  # repair agent: a ref that names no record shown
    "args_unparsed",  # repair agent: a slot the reply did not give as 'slot = value'
)

#: Kinds the reader recovers from: what it reads is what the reply meant (a first line,
#: a preamble or an echoed tag dropped, an abstention in other words). A reply showing
#: only these is counted ``recovered_replies``; one showing any other kind, ``unread_replies``.
RECOVERED_KINDS = frozenset({"multi_line", "preamble", "echoed_memory", "abstain_other_words"})

_PREAMBLE = re.compile(
    r"^(?:the\s+)?(?:short\s+|final\s+)?answer(?:\s+to\s+(?:this|the|your)\s+question)?"
    r"(?:\s+is)?\s*[:\-]\s*|^a\s*:\s*",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
_STAMP = re.compile(r"^\[[^\]]{0,60}\]\s*")
# A one- or two-word capitalised name and a colon: the speaker tags of LoCoMo's lines.
_SPEAKER = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s+")
_QUOTES = "\"'`*_ "


def _read(reply: str) -> tuple[str, list[str]]:
    kinds: list[str] = []
    lines = [ln.strip() for ln in reply.strip().splitlines() if ln.strip()]
    if not lines:
        return "", ["empty"]
    if len(lines) > 1:
        kinds.append("multi_line")
    text = lines[0]
    stripped = _PREAMBLE.sub("", text, count=1)
    if stripped != text:
        kinds.append("preamble")
        text = stripped.strip()
    echoed = text
    for _ in range(4):  # in any order: "Jon: [10:43 am on 4 February, 2023] Jon: ..."
        before = echoed
        echoed = _BULLET.sub("", echoed, count=1)
        echoed = _STAMP.sub("", echoed, count=1)
        echoed = _SPEAKER.sub("", echoed, count=1)
        if echoed == before:
            break
    if echoed != text:
        kinds.append("echoed_memory")
        text = echoed
    text = text.strip(_QUOTES)
    if not text:
        kinds.append("empty")
    return text, kinds


def read_answer(reply: str, task: str = "qa") -> str:
    """The answer scored for ``reply`` (see the module docstring); summaries are kept whole
    (surrounding whitespace dropped)."""
    if task == "summary":
        return reply.strip()
    return _read(reply)[0]


def reply_failures(
    reply: str, probe: Mapping[str, Any], *, abstain_reply: str = "Not mentioned"
) -> list[str]:
    """The :data:`FAILURE_KINDS` of one probe's ``reply`` (``probe``: the row's probe)."""
    kind = probe.get("kind")
    if kind == "summary":
        return [] if reply.strip() else ["empty"]
    answer, kinds = _read(reply)
    recall = (probe.get("meta") or {}).get("format") == "recall"
    words = normalize_answer(answer).split() if answer else []
    # "No, it's not true. ..." answers a recall question: its yes / no is what is scored
    # (chronobench.metrics.qa.affirms / says_no), however long the rest.
    yes_no = recall and bool(words) and words[0] in AFFIRMATIVE | NEGATIVE
    if answer and len(answer.split()) > MAX_SPAN_WORDS and not yes_no:
        kinds.append("not_a_span")
    if answer and is_abstention(answer):
        if normalize_answer(answer) != normalize_answer(abstain_reply):
            kinds.append("abstain_other_words")
    elif answer and recall and not yes_no:
        kinds.append("yes_no_unparsed")
    return kinds


def count_failures(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Failure counts over sample rows: probe rows with a ``reply`` (language-model
    backbones), each query's resolver note (``resolver``) once, and a repair row's own
    ``parse_failures``. ``replies`` is how many replies were read, ``failed_replies`` how
    many of them showed at least one kind; of those, ``recovered_replies`` showed only
    :data:`RECOVERED_KINDS` and ``unread_replies`` some other kind (a resolver reply
    that named no version, a repair agent's reply with a kind), so the two add up to
    ``failed_replies``; absent kinds are 0."""
    out: Counter[str] = Counter()
    replies = 0
    resolved: set[str] = set()
    for r in rows:
        if "reply" in r and r.get("reply") is not None:
            replies += 1
            kinds = reply_failures(str(r["reply"]), r.get("probe") or {})
            out.update(kinds)
            out["failed_replies"] += bool(kinds)
            if kinds:
                recovered = set(kinds) <= RECOVERED_KINDS
                out["recovered_replies" if recovered else "unread_replies"] += 1
        note = r.get("resolver")
        if isinstance(note, Mapping) and r.get("query_id") not in resolved:
            resolved.add(str(r.get("query_id")))
            replies += 1
            # Empty, prose, or a number out of range: the reranker's top-1 stood.
            reason = str(note.get("reason") or "")
            if note.get("status") == "fallback" and not reason.startswith("version "):
                out["resolver_not_a_number"] += 1
                out["failed_replies"] += 1
                out["unread_replies"] += 1  # nothing was read from it: the top-1 stood
        pf = r.get("parse_failures") or {}
        for k, n in pf.items():
            out[str(k)] += int(n)
        # The repair agent's kinds (a slot without its line, a citation missing or
        # wrong) are all unread: the agent went on without what the reply lacked.
        out["unread_replies"] += int(pf.get("failed_replies", 0))
        if "parse_failures" in r:
            replies += int(r.get("replies") or 0)
    totals = ("failed_replies", "recovered_replies", "unread_replies")
    result = {k: int(out.get(k, 0)) for k in (*FAILURE_KINDS, *totals)}
    result.update({k: int(v) for k, v in out.items() if k not in result})
    result["replies"] = replies
    return result
