"""Calendar days for requests that name a time: month names, :class:`TimeRef`, and
resolving one against the writes' own dates.

:mod:`chronomem.timeref` reads a request into a :class:`TimeRef`; the
functions here turn it into a day range (:func:`interval`) with "now" the last write's
day, and into a restore target (:func:`bound_target`) or a month filter's days
(:func:`month_days`). :func:`parse_stamp` reads a write's ``valid_time`` as a day,
:func:`parse_moment` as a day and time of day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for m in names
}
MONTH_RE = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
DAY_RE = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
YEAR_RE = r"(?:,?\s+(?P<year>(?:19|20)\d\d))?"


@dataclass(frozen=True)
class TimeRef:
    """A time named by a request, before resolution against the writes' dates.

    ``kind``: ``"before"``, ``"through"`` or ``"on"`` (a bound), ``"month"`` (a month
    filter). ``what`` says how ``value`` reads: ``"day"`` (month, day, year|None),
    ``"month"`` (month, year|None), ``"year"`` (year,), ``"ago"`` (days,), ``"months_ago"``
    (months,), ``"weekday"`` (index,), ``"holiday"`` (name,), ``"this_year"``,
    ``"this_month"``. ``start``: for a month or year, the bound is at its first day
    (``True``) or its last (``False``). ``span``: the matched text.
    """

    kind: str
    what: str
    value: tuple
    start: bool
    span: str


# -- resolution against the writes' dates --------------------------------------------------

_STAMP_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)(?!\d)")
_STAMP_DAY_MONTH = re.compile(rf"\b{DAY_RE}\s+{MONTH_RE},?\s+(?P<year>(?:19|20)\d\d)\b", re.I)
_STAMP_MONTH_DAY = re.compile(rf"\b{MONTH_RE}\s+{DAY_RE},?\s+(?P<year>(?:19|20)\d\d)\b", re.I)
_CLOCK_12H = re.compile(r"\b(?P<h>[01]?\d):(?P<min>[0-5]\d)\s*(?P<half>[ap])\.?m\b", re.I)
_CLOCK_ISO = re.compile(r"T(?P<h>[0-2]\d):(?P<min>[0-5]\d)(?::(?P<s>[0-5]\d))?")


def parse_stamp(stamp: str | None) -> date | None:
    """The calendar day of a write's ``valid_time`` (ISO 8601, or LoCoMo's
    "1:56 pm on 8 May, 2023"); None when it has none or it does not parse."""
    if not stamp:
        return None
    s = str(stamp).strip()
    m = _STAMP_ISO.search(s)
    try:
        if m:
            return date(int(m.group("year")), int(m.group("m")), int(m.group("d")))
        m = _STAMP_DAY_MONTH.search(s) or _STAMP_MONTH_DAY.search(s)
        if m:
            return date(int(m.group("year")), MONTHS[m.group("mon").lower()], int(m.group("day")))
    except ValueError:
        return None
    return None


def parse_moment(stamp: str | None) -> datetime | None:
    """A write's ``valid_time`` as a moment in UTC: its day (:func:`parse_stamp`) and its
    time of day when the stamp gives one ("1:56 pm", "T13:56"), else midnight. A zone
    offset in an ISO stamp is ignored, as :func:`parse_stamp` ignores it for the day: the
    two always agree on the calendar day. None when the day does not parse."""
    day = parse_stamp(stamp)
    if day is None:
        return None
    s = str(stamp)
    hour = minute = second = 0
    if m := _CLOCK_12H.search(s):
        hour = int(m.group("h")) % 12 + (12 if m.group("half").lower() == "p" else 0)
        minute = int(m.group("min"))
    elif m := _CLOCK_ISO.search(s):
        hour, minute, second = int(m.group("h")), int(m.group("min")), int(m.group("s") or 0)
        if hour > 23:
            hour = minute = second = 0
    return datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=timezone.utc)


def _latest(month: int, day: int, now: date, year: int | None) -> date | None:
    """``month``/``day`` in ``year``, or its latest occurrence not after ``now``."""
    try:
        if year is not None:
            return date(year, month, day)
        d = date(now.year, month, min(day, 28 if month == 2 else day))
        return d if d <= now else date(now.year - 1, month, d.day)
    except ValueError:
        return None


def _holiday(name: str, year: int) -> date:
    if name == "thanksgiving":  # fourth Thursday of November
        first = date(year, 11, 1)
        return first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    return {
        "xmas": date(year, 12, 25),
        "xmas_eve": date(year, 12, 24),
        "nye": date(year, 12, 31),
        "ny": date(year, 1, 1),
        "valentine": date(year, 2, 14),
        "halloween": date(year, 10, 31),
        "july4": date(year, 7, 4),
    }[name]


def _month_end(year: int, month: int) -> date:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return nxt - timedelta(days=1)


def interval(ref: TimeRef, now: date) -> tuple[date, date] | None:
    """The named time as a ``[first, last]`` day range (None if it is not a date)."""
    v = ref.value
    if ref.what == "day":
        d = _latest(v[0], v[1], now, v[2])
        return None if d is None else (d, d)
    if ref.what == "month":
        year = v[1] if v[1] is not None else (now.year if v[0] <= now.month else now.year - 1)
        return date(year, v[0], 1), _month_end(year, v[0])
    if ref.what == "year":
        return date(v[0], 1, 1), date(v[0], 12, 31)
    if ref.what == "ago":
        d = now - timedelta(days=v[0])
        return d, d
    if ref.what == "months_ago":
        y, m = now.year, now.month - v[0]
        while m < 1:
            y, m = y - 1, m + 12
        d = date(y, m, min(now.day, _month_end(y, m).day))
        return d, d
    if ref.what == "weekday":
        back = (now.weekday() - v[0]) % 7 or 7
        d = now - timedelta(days=back)
        return d, d
    if ref.what == "holiday":
        d = _holiday(v[0], now.year)
        if d > now:
            d = _holiday(v[0], now.year - 1)
        return d, d
    if ref.what == "this_year":
        return date(now.year, 1, 1), date(now.year, 1, 1)
    if ref.what == "this_month":
        return date(now.year, now.month, 1), date(now.year, now.month, 1)
    return None


def bound_target(
    ref: TimeRef, history: list[tuple[int, int | None, date | None]], intent: str
) -> int | None:
    """The restore target of a bound ``ref`` over ``history`` (``(version_id, parent,
    day)`` in history order, root first); None when the bound keeps or drops nothing
    dated, or no write is dated."""
    dated = [(v, p, d) for v, p, d in history if d is not None]
    if not dated or ref.kind not in ("before", "through", "on"):
        return None
    now = max(d for _, _, d in dated)
    span = interval(ref, now)
    if span is None:
        return None
    first, last = span
    if ref.kind == "on":
        on = [(v, p) for v, p, d in dated if first <= d <= last]
        if not on:
            return None
        return on[0][1] if intent == "undo" else on[-1][0]
    cut = first if ref.kind == "before" else last
    keep = [
        v for v, _, d in history if d is None or (d < cut if ref.kind == "before" else d <= cut)
    ]
    # The last kept version on the linear history (undated ones count as kept only up
    # to the first dated version that is dropped).
    target = history[0][0]
    for v, _, d in history:
        if d is not None and not (d < cut if ref.kind == "before" else d <= cut):
            break
        target = v
    return target if keep else None


def month_days(
    ref: TimeRef, history: list[tuple[int, int | None, date | None]]
) -> tuple[date, date] | None:
    """The day range of a month filter over ``history`` (None: no dated write)."""
    days = [d for _, _, d in history if d is not None]
    return None if not days else interval(ref, max(days))
