"""Requests that name a time: "since last Tuesday", "everything after 8 May", "before
the trip in June".

A request is read once into a :class:`TimeRef` (no dates resolved yet), then resolved
against the writes' own timestamps (``valid_time``): the reference "now" is the last
write's timestamp, so relative times ("the past month", "last Monday") count back from
when the memory was last written, and a month or holiday without a year is its latest
occurrence not after "now".

Two kinds of reference:

- a **bound** cuts the history by date alone. ``before D`` keeps the versions dated
  before D ("since 1 July", "from March on", "the last two weeks", "before Christmas");
  ``through D`` keeps those dated on or before D ("everything after 22 May can go",
  "keep only January", "up to the end of September"); ``on D`` names the day's
  versions ("the 7 July chat and everything after"): ``undo`` lands before the first,
  ``restore_to`` after the last.
- a **month filter** narrows an event search ("Jolene's trip to Alaska in June"): the
  described commits are kept to those dated in that month (when any is).

Rules were written on the tuning sets (``locomo_v3_tuning`` and the templates); see
docs/metrics.md. A request with no date word is not touched (``read`` returns None).
Month names, :class:`TimeRef` and the resolution against the writes' dates live in
:mod:`chronomem.dates` (re-exported here).
"""

from __future__ import annotations

import re

from chronomem.dates import (
    DAY_RE,
    MONTH_RE,
    MONTHS,
    YEAR_RE,
    TimeRef,
    bound_target,
    interval,
    month_days,
    parse_stamp,
)

__all__ = ["TimeRef", "bound_target", "interval", "month_days", "parse_stamp", "read"]

# Abbreviations and words that are also common English ("may", "mar", "jun"...) count
# as a month only in a date context (next to a day, or after a relation word).
_AMBIGUOUS = {
    "may",
    "mar",
    "jan",
    "feb",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "march",
}
_NUM = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Relation words: which side of the named time is kept.
_FROM = r"(?:since|from|starting(?: from| on)?|beginning|as of the start of)"
_AFTER = r"(?:after|past)"
_UPTO = (
    r"(?:before|through|thru|until|till|til|up to|up until|upto|by|as of|only|to|"
    r"end of|the end of)"
)
_REL_WORD = re.compile(
    r"\b(?:since|from|after|before|through|thru|until|till|til|up to|by|as of|only|"
    r"onwards?|on|end of|keep|in)\s*$"
)


_HOLIDAYS = {
    "christmas eve": "xmas_eve",
    "christmas": "xmas",
    "xmas": "xmas",
    "new year's eve": "nye",
    "new years eve": "nye",
    "new year's day": "ny",
    "new year's": "ny",
    "new year": "ny",
    "valentine's day": "valentine",
    "valentines day": "valentine",
    "valentine's": "valentine",
    "valentines": "valentine",
    "halloween": "halloween",
    "thanksgiving": "thanksgiving",
    "independence day": "july4",
    "the fourth of july": "july4",
    "fourth of july": "july4",
    "4th of july": "july4",
}
_HOLIDAY = (
    "(?P<hol>" + "|".join(re.escape(h) for h in sorted(_HOLIDAYS, key=len, reverse=True)) + ")"
)

_P_DAY_MONTH = re.compile(rf"\b(?:the\s+)?{DAY_RE}(?:\s+of)?\s+{MONTH_RE}{YEAR_RE}\b")
_P_MONTH_DAY = re.compile(rf"\b{MONTH_RE}\s+(?:the\s+)?{DAY_RE}\b(?!:){YEAR_RE}")
_P_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b")
_P_MONTH = re.compile(
    rf"\b(?P<edge>(?:the\s+)?(?:end|beginning|start|middle)\s+of\s+|early\s+|late\s+|mid-?\s*)?"
    rf"{MONTH_RE}{YEAR_RE}(?P<poss>'s)?\b"
)
_P_YEAR = re.compile(
    r"\b(?:in|from|since|of|before|after|through|until|during)\s+(?P<year>(?:19|20)\d\d)\b"
)
_P_AGO = re.compile(
    r"\b(?:the\s+)?(?:last|past|previous|recent)\s+(?:(?P<n>\d+|a|an|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|couple of|few)\s+)?(?P<unit>days?|weeks?|fortnight|months?)\b"
    r"|\b(?P<n2>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)\s+"
    r"(?P<unit2>days?|weeks?|months?)\s+ago\b"
)
_P_WEEKDAY = re.compile(r"\blast\s+(?P<wd>" + "|".join(_WEEKDAYS) + r")\b")
_P_THIS = re.compile(r"\bthis\s+(?P<what>year|month)\b")
_P_HOL = re.compile(rf"\b{_HOLIDAY}\b")
_P_ORD = re.compile(r"\b(?:on\s+)?the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)\b")


def _relation(text: str, start: int, end: int) -> str | None:
    """The relation the words around a time span give it: "since"/"from" (the time is
    the first thing removed), "after" (the last thing kept), "upto" (the last kept,
    for "before": the first removed), or None."""
    before = text[max(0, start - 40) : start]
    after = text[end : end + 25]
    if re.search(r"\b(?:before|prior to|earlier than)\s*(?:the\s+)?$", before):
        return "before"
    if re.search(rf"\b{_FROM}\s*(?:the\s+)?(?:start of\s+|beginning of\s+)?$", before):
        return "since"
    if re.search(r"^\s*(?:on|onwards?|and (?:later|beyond|on))\b", after):
        return "since"
    if re.search(rf"\b{_AFTER}\s*(?:the\s+)?$", before):
        return "after"
    if re.search(
        r"\b(?:through|thru|until|till|til|up ?to|up until|by|as of|only|keep(?: only)?|"
        r"just|had by|got by|end of)\s*(?:the\s+)?(?:end of\s+)?$",
        before,
    ):
        return "upto"
    return None


def read(query: str) -> TimeRef | None:
    """The time ``query`` names, or None (most requests name none)."""
    text = " ".join((query or "").lower().replace("\u2019", "'").split())
    if not text:
        return None
    # Relative periods: "the past month", "the last two weeks", "3 days ago".
    m = _P_AGO.search(text)
    # A bare "last week" inside an event ("a car he found last week") is the event's own
    # time; it bounds the request only after a relation ("since last week").
    bare = m is not None and not (m.group("n") or m.group("n2") or m.group(0).startswith("the "))
    if bare and not re.search(r"\b(?:since|from|in|over|during|within)\s*$", text[: m.start()]):
        m = None
    if m:
        n_txt = m.group("n") or m.group("n2") or "1"
        unit = (m.group("unit") or m.group("unit2") or "").rstrip("s")
        n = int(n_txt) if n_txt.isdigit() else _NUM.get(n_txt, 1)
        if unit == "fortnight":
            unit, n = "week", 2 * n
        if unit == "month":
            return TimeRef("before", "months_ago", (n,), True, m.group(0))
        return TimeRef("before", "ago", (n * (7 if unit == "week" else 1),), True, m.group(0))
    m = _P_WEEKDAY.search(text)
    if m and not re.search(
        r"\b(?:since|from|after|before|until|till|through)\s*$", text[: m.start()]
    ):
        m = None
    if m:
        return _bound(text, m, "weekday", (_WEEKDAYS.index(m.group("wd")),), True)
    m = _P_THIS.search(text)
    if m and _relation(text, m.start(), m.end()) in ("since", None):
        return TimeRef("before", "this_" + m.group("what"), (), True, m.group(0))
    for pat in (_P_ISO, _P_DAY_MONTH, _P_MONTH_DAY):
        m = pat.search(text)
        if m:
            if pat is _P_ISO:
                value = (int(m.group("m")), int(m.group("d")), int(m.group("year")))
            else:
                year = m.group("year")
                value = (MONTHS[m.group("mon")], int(m.group("day")), int(year) if year else None)
            if not 1 <= value[0] <= 12 or not 1 <= value[1] <= 31:
                continue
            return _bound(text, m, "day", value, True, day=True)
    m = _P_HOL.search(text)
    if m:
        return _bound(text, m, "holiday", (_HOLIDAYS[m.group("hol")],), True, day=True)
    for m in _P_MONTH.finditer(text):
        mon = m.group("mon")
        rel = _relation(text, m.start(), m.end())
        edge = (m.group("edge") or "").strip()
        if (
            mon in _AMBIGUOUS
            and rel is None
            and not edge
            and not re.search(r"\b(?:in|during|of)\s*$", text[: m.start()])
        ):
            continue
        year = m.group("year")
        value = (MONTHS[mon], int(year) if year else None)
        # "the 3rd" elsewhere in a request that names a month: that day of the month.
        od = _P_ORD.search(text)
        if od and 1 <= int(od.group("day")) <= 31:
            return _bound(
                text, od, "day", (value[0], int(od.group("day")), value[1]), True, day=True
            )
        if rel is None:
            # "the trip in June": an event of that month (a filter); "keep only January's
            # chats" reads as a bound through it.
            if m.group("poss") or re.search(r"\bonly\b", text[: m.start()]):
                return TimeRef("through", "month", value, False, m.group(0))
            return TimeRef("month", "month", value, True, m.group(0))
        if rel == "upto" and "end" not in edge and re.search(r"\bin\s*$", text[: m.start()]):
            # "keep only what you got in March": through the month.
            return TimeRef("through", "month", value, False, m.group(0))
        return _from_relation(
            rel, "month", value, m.group(0), start_edge="beginning" in edge or "start" in edge
        )
    m = _P_YEAR.search(text)
    if m:
        rel = _relation(text, m.start() + m.group(0).find(m.group("year")), m.end())
        if "in " + m.group("year") in m.group(0) or "from" in m.group(0):
            rel = rel or "since"
        return _from_relation(rel or "since", "year", (int(m.group("year")),), m.group(0))
    return None


def _bound(
    text: str, m: re.Match, what: str, value: tuple, start: bool, day: bool = False
) -> TimeRef:
    rel = _relation(text, m.start(), m.end())
    if rel is None and day:
        return TimeRef("on", what, value, start, m.group(0))
    return _from_relation(rel or "since", what, value, m.group(0))


def _from_relation(
    rel: str | None, what: str, value: tuple, span: str, start_edge: bool = False
) -> TimeRef:
    if rel in ("since", "before"):
        return TimeRef("before", what, value, True, span)
    if rel == "upto" and start_edge:
        return TimeRef("before", what, value, True, span)
    if rel in ("after", "upto"):
        return TimeRef("through", what, value, False, span)
    return TimeRef("month", what, value, True, span)
