"""Text helpers of the extractive reader: sentences, content terms, typed spans.

Kept apart from the reader so each file stays small; nothing here is public API.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

from chronobench.text import READER_STOPWORDS, stem

_MONTHS_TEXT = (
    "january february march april may june july august september october november december"
)
MONTHS = _MONTHS_TEXT.split()
_MONTH_RE = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
# Absolute dates: "8 May, 2023", "May 8, 2023", "May 2023", "2023-05-08", a bare year.
DATE_RE = re.compile(
    rf"\b(?:{_DAY}\s+{_MONTH_RE},?\s+\d{{4}}|{_MONTH_RE}\s+{_DAY},?\s+\d{{4}}"
    rf"|{_MONTH_RE},?\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|{_DAY}\s+{_MONTH_RE}|(?:19|20)\d{{2}})\b",
    re.IGNORECASE,
)
_DMY_RE = re.compile(rf"\b({_DAY})\s+({_MONTH_RE}),?\s+(\d{{4}})\b", re.IGNORECASE)
_MDY_RE = re.compile(rf"\b({_MONTH_RE})\s+({_DAY}),?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# Relative time words resolved against the passage date ("yesterday" -> the day before).
RELATIVE_RE = re.compile(
    r"\b(yesterday|today|tonight|last night|this morning|last (?:week|weekend|month|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|next (?:week|month|year)"
    r"|\d+ (?:days|weeks|months|years) ago|a (?:few )?(?:days|weeks|months|years?) ago)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS_TEXT = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty "
    "hundred"
)
NUMBER_WORDS = _NUMBER_WORDS_TEXT.split()
NUMBER_RE = re.compile(r"\b(?:\d+(?:[.,]\d+)?|" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
NAME_RE = re.compile(r"\b[A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)*")
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
# "[7 May 2023] Caroline: ..." / "Caroline: ..." / "(session 3, 8 May 2023) ..."
_HEADER_RE = re.compile(r"^\s*((?:[\[(][^\])]{0,80}[\])]\s*)*(?:[A-Z][\w .'-]{0,40}:\s)?)")


def words(text: str) -> list[str]:
    """Word tokens of ``text`` in their original case."""
    return _WORD_RE.findall(text)


def terms(text: str) -> list[str]:
    """Stemmed lowercase content words (reader stopwords removed, apostrophes dropped)."""
    return list(_terms(text))


@lru_cache(maxsize=262_144)
def _terms(text: str) -> tuple[str, ...]:
    # Memoised: a run re-reads the same memory lines for many probes, and stemming
    # dominates the reader's cost.
    out = []
    for w in words(text):
        low = w.lower().replace("'", "")
        if low not in READER_STOPWORDS:
            out.append(stem(low))
    return tuple(out)


@dataclass(frozen=True)
class Sentence:
    """One candidate sentence with what the reader needs about its passage."""

    text: str
    header: str  # speaker / date prefix of its line, kept for matching
    passage_index: int
    passage_date: date | None
    passage_date_text: str | None


def parse_date(text: str) -> date | None:
    """The first full day-month-year date in ``text``, if any."""
    for regex, order in ((_ISO_RE, "ymd"), (_DMY_RE, "dmy"), (_MDY_RE, "mdy")):
        m = regex.search(text)
        if not m:
            continue
        try:
            if order == "ymd":
                return date(int(m[1]), int(m[2]), int(m[3]))
            day, month = (m[1], m[2]) if order == "dmy" else (m[2], m[1])
            mon = next(i for i, name in enumerate(MONTHS, 1) if name.startswith(month[:3].lower()))
            return date(int(m[3]), mon, int(re.sub(r"\D", "", day)))
        except (ValueError, StopIteration):
            continue
    return None


def format_date(d: date) -> str:
    """LoCoMo's answer style: '7 May 2023'."""
    return f"{d.day} {MONTHS[d.month - 1].capitalize()} {d.year}"


def split_sentences(context: tuple[str, ...]) -> list[Sentence]:
    """Split passages into sentences, remembering each line's header and passage date."""
    out: list[Sentence] = []
    for p_idx, passage in enumerate(context):
        for text, header, p_date, p_date_text in _passage_sentences(passage):
            out.append(Sentence(text, header, p_idx, p_date, p_date_text))
    return out


@lru_cache(maxsize=65_536)
def _passage_sentences(passage: str) -> tuple[tuple[str, str, date | None, str | None], ...]:
    # Memoised per passage: the same memory items recur across a run's prompts.
    p_date = parse_date(passage)
    m_date = DATE_RE.search(passage)
    p_date_text = format_date(p_date) if p_date else (m_date.group(0) if m_date else None)
    out = []
    for line in passage.splitlines():
        header_match = _HEADER_RE.match(line)
        header = header_match.group(1) if header_match else ""
        body = line[len(header) :]
        for piece in _SENT_SPLIT.split(body):
            piece = piece.strip()
            if piece and words(piece):
                out.append((piece, header.strip(), p_date, p_date_text))
    return tuple(out)


def resolve_relative(expr: str, anchor: date) -> str:
    """Turn a relative time phrase into LoCoMo-style text anchored at ``anchor``."""
    low = expr.lower()
    if low in ("yesterday",):
        return format_date(anchor - timedelta(days=1))
    if low in ("today", "tonight", "this morning"):
        return format_date(anchor)
    if low == "last night":
        return format_date(anchor - timedelta(days=1))
    if low == "last year":
        return str(anchor.year - 1)
    if low.startswith("next year"):
        return str(anchor.year + 1)
    if low.startswith("last ") or low.startswith("next "):
        unit = low.split(" ", 1)[1]
        rel = "before" if low.startswith("last") else "after"
        return f"the {unit} {rel} {format_date(anchor)}"
    return f"{low} from {format_date(anchor)}"
