"""Mechanical checks of the claims behind the hand-written NL request sets.

A person wrote each request from the LoCoMo turns; what a script can verify, it does here,
so that a wrong gold is caught before any rule is measured on it:

- every ``claim`` names turns that exist, and its ``unique`` pattern matches the turns
  of exactly one session (the event's): "the chat where X" names one chat;
- an offset (``{"days": 2}``, ``{"sessions": -1}``) applied to the event's session gives
  the named session on LoCoMo's own session dates (exactly N calendar days, or the
  N-th chat after/before);
- an ordinal ("the second time X") is the right mention: the sessions whose turns match
  ``topic``, in order, hold the event at that position (and ``count`` of them, if given);
- "before you knew X" names the *first* session (or turn) matching ``topic``;
- a month ("the April chat where X") leaves one ``topic`` session in that month;
- a negation ("not the X one, the Y one") rules out a different session that matches
  ``topic`` too;
- the target follows from the named session and the intent (``restore_to`` keeps the
  named session, ``undo`` removes it), and at turn level from the evidence turns;
- no request copies a turn (or, for selective requests, its observation) for more than
  six words in a row; the styles are balanced; all ten conversations are covered;
- a request that must be refused (``"expect": "refuse"``) has no target, and content it
  claims is absent (``absent``) matches no turn of its conversation.

Run ``python -m data_builders.claims [LOCOMO_JSON]`` to list every problem (exit 1 if any;
the LoCoMo file as the builders find it when no path is given).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QDIR = Path(__file__).resolve().parent / "user_queries"
#: The four held-out sets in the time, order, negation and refusal styles, by role.
SETS = {
    "session": "locomo_nl_session_heldout.jsonl",
    "turn": "locomo_nl_turn_heldout.jsonl",
    "forget": "locomo_nl_forget_heldout.jsonl",
    "refuse": "locomo_nl_refuse_heldout.jsonl",
}
#: A second writing of the same four roles, by another writer who did not read the first;
#: its session set adds plain paraphrases with wording gaps.
SETS_V4 = {
    "session": "locomo_v4_heldout.jsonl",
    "turn": "locomo_v4_turn_heldout.jsonl",
    "forget": "locomo_v4_forget_heldout.jsonl",
    "refuse": "locomo_v4_refuse_heldout.jsonl",
}
#: A third writing of the same four roles (the session of 2026-12-07), by writers who read
#: neither the older sets nor the resolver, held out while the v4 sets became development sets.
SETS_V5 = {
    "session": "locomo_v5_heldout.jsonl",
    "turn": "locomo_v5_turn_heldout.jsonl",
    "forget": "locomo_v5_forget_heldout.jsonl",
    "refuse": "locomo_v5_refuse_heldout.jsonl",
}
#: A fourth writing (the session of 2026-12-07, afternoon), held out while the v5 sets, read
#: twice as aggregates, stay on the board; its session set adds the polite several-clause style.
SETS_V6 = {
    "session": "locomo_v6_heldout.jsonl",
    "turn": "locomo_v6_turn_heldout.jsonl",
    "forget": "locomo_v6_forget_heldout.jsonl",
    "refuse": "locomo_v6_refuse_heldout.jsonl",
}
#: A fifth writing (the session of 2026-12-07, evening), held out while the v6 sets, read
#: twice as aggregates, stay on the board; same styles as v6.
SETS_V7 = {
    "session": "locomo_v7_heldout.jsonl",
    "turn": "locomo_v7_turn_heldout.jsonl",
    "forget": "locomo_v7_forget_heldout.jsonl",
    "refuse": "locomo_v7_refuse_heldout.jsonl",
}
#: A sixth writing (the session of 2026-12-07 from 11:56 UTC), held out while the v7 sets, read
#: four times as aggregates, stay on the board; same styles as v6 and v7.
SETS_V8 = {
    "session": "locomo_v8_heldout.jsonl",
    "turn": "locomo_v8_turn_heldout.jsonl",
    "forget": "locomo_v8_forget_heldout.jsonl",
    "refuse": "locomo_v8_refuse_heldout.jsonl",
}
#: A seventh writing (the session of 2026-12-07 from 14:40 UTC), held out while the v8 sets,
#: read three times as aggregates, become development sets; same styles as v6 to v8.
SETS_V9 = {
    "session": "locomo_v9_heldout.jsonl",
    "turn": "locomo_v9_turn_heldout.jsonl",
    "forget": "locomo_v9_forget_heldout.jsonl",
    "refuse": "locomo_v9_refuse_heldout.jsonl",
}
#: An eighth writing (the session of 2026-12-07 from 22:40 UTC), held out while the v9 sets,
#: read six times as aggregates, stay on the board; same styles as v6 to v9.
SETS_V10 = {
    "session": "locomo_v10_heldout.jsonl",
    "turn": "locomo_v10_turn_heldout.jsonl",
    "forget": "locomo_v10_forget_heldout.jsonl",
    "refuse": "locomo_v10_refuse_heldout.jsonl",
}
#: Every family of sets the checker verifies, by name.
FAMILIES = {
    "nl": SETS,
    "v4": SETS_V4,
    "v5": SETS_V5,
    "v6": SETS_V6,
    "v7": SETS_V7,
    "v8": SETS_V8,
    "v9": SETS_V9,
    "v10": SETS_V10,
}
#: Session-level styles, each to be roughly as frequent as the others.
SESSION_STYLES = ("offset", "knowledge", "casual", "ordinal", "month", "negation", "embedded")
#: The styles a family's session set may use.
FAMILY_STYLES = {
    "nl": SESSION_STYLES,
    "v4": (*SESSION_STYLES, "paraphrase"),
    "v5": (*SESSION_STYLES, "paraphrase"),
    "v6": (*SESSION_STYLES, "paraphrase", "polite"),
    "v7": (*SESSION_STYLES, "paraphrase", "polite"),
    "v8": (*SESSION_STYLES, "paraphrase", "polite"),
    "v9": (*SESSION_STYLES, "paraphrase", "polite"),
    "v10": (*SESSION_STYLES, "paraphrase", "polite"),
}
MIN_SIZE = {"session": 80, "turn": 40, "forget": 30, "refuse": 15}
#: The longest run of words a request may share with a turn (longer: copied, not phrased).
MAX_SHARED_WORDS = 6
# The loader's rule: a request naming a whole conversation cuts at the session edge, so a
# turn-level request must not use these words.
_NAMES_CONVERSATION = re.compile(
    r"\b(?:conversations?|convos?|chats?|talks?|sessions?|discussions?)\b", re.IGNORECASE
)
_DATE = re.compile(r"(\d{1,2}) (\w+), (\d{4})$")
_WORD = re.compile(r"[a-z0-9']+")


@dataclass
class Conversation:
    """One LoCoMo conversation as the checks read it."""

    sample_id: str
    dates: dict[int, dt.date]  # session -> date
    turns: dict[str, tuple[int, str]]  # dialog id -> (session, text)
    observations: dict[str, list[str]]  # "oN.K" -> its evidence dialog ids
    observation_text: dict[str, str]
    _grams: set[tuple[str, ...]] | None = None
    _matches: dict[str, list[str]] = field(default_factory=dict)

    def copies_a_turn(self, text: str) -> bool:
        """Whether ``text`` shares more than :data:`MAX_SHARED_WORDS` words in a row with a turn."""
        if self._grams is None:
            self._grams = set()
            for _, turn in self.turns.values():
                self._grams |= _grams(_words(turn))
        return not self._grams.isdisjoint(_grams(_words(text)))

    def sessions_matching(self, pattern: str) -> list[int]:
        """The sessions with a turn matching ``pattern`` (case-insensitive), in order."""
        return sorted({self.turns[d][0] for d in self.turns_matching(pattern)})

    def turns_matching(self, pattern: str) -> list[str]:
        """The turns matching ``pattern`` (case-insensitive), in dialog order."""
        if pattern not in self._matches:
            rx = re.compile(pattern, re.IGNORECASE)
            self._matches[pattern] = [d for d, (_, t) in self.turns.items() if rx.search(t)]
        return self._matches[pattern]


def session_date(text: str) -> dt.date:
    """``'1:56 pm on 8 May, 2023'`` -> ``date(2023, 5, 8)``."""
    m = _DATE.search(text.strip())
    if not m:
        raise ValueError(f"unparseable LoCoMo session date {text!r}")
    return dt.datetime.strptime(" ".join(m.groups()), "%d %B %Y").date()


def load_conversations(path: str | Path) -> dict[str, Conversation]:
    """The LoCoMo file's conversations by sample id."""
    from data_builders.locomo.streams import observations, session_numbers

    out: dict[str, Conversation] = {}
    for rec in json.loads(Path(path).read_text(encoding="utf-8")):
        conv = rec["conversation"]
        dates: dict[int, dt.date] = {}
        turns: dict[str, tuple[int, str]] = {}
        obs: dict[str, list[str]] = {}
        obs_text: dict[str, str] = {}
        for n in session_numbers(conv):
            dates[n] = session_date(str(conv[f"session_{n}_date_time"]))
            for t in conv[f"session_{n}"]:
                turns[str(t["dia_id"])] = (n, str(t.get("text", "")))
            for k, (_, text, ids) in enumerate(observations(rec, n), start=1):
                obs[f"o{n}.{k}"] = list(ids)
                obs_text[f"o{n}.{k}"] = text
        out[rec["sample_id"]] = Conversation(rec["sample_id"], dates, turns, obs, obs_text)
    return out


def read_set(path: str | Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file (blank lines skipped)."""
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _grams(words: list[str], n: int = MAX_SHARED_WORDS + 1) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def longest_shared_run(text: str, sources: Iterable[str]) -> int:
    """The longest run of consecutive words ``text`` shares with any of ``sources``."""
    words = _words(text)
    best = 0
    for src in sources:
        sw = _words(src)
        # Classic longest-common-substring over words; the texts are short.
        prev = [0] * (len(sw) + 1)
        for w in words:
            cur = [0] * (len(sw) + 1)
            for j, s in enumerate(sw, start=1):
                if w == s:
                    cur[j] = prev[j - 1] + 1
                    best = max(best, cur[j])
            prev = cur
    return best


def _named_session(
    claim: dict[str, Any], conv: Conversation, where: str
) -> tuple[int | None, list[str]]:
    """The session a claim names, and the problems found on the way."""
    probs: list[str] = []
    event = claim.get("event") or []
    if not event:
        return None, [f"{where}: claim has no 'event' turns"]
    missing = [d for d in event if d not in conv.turns]
    if missing:
        return None, [f"{where}: event turns {missing} not in {conv.sample_id}"]
    ev_sessions = {conv.turns[d][0] for d in event}
    if len(ev_sessions) != 1:
        return None, [f"{where}: event turns span sessions {sorted(ev_sessions)}"]
    ev = ev_sessions.pop()
    if "unique" in claim:
        hit = conv.sessions_matching(claim["unique"])
        if hit != [ev]:
            probs.append(f"{where}: unique {claim['unique']!r} matches sessions {hit}, not [{ev}]")
        elif not set(conv.turns_matching(claim["unique"])) & set(event):
            probs.append(f"{where}: unique {claim['unique']!r} matches none of the event turns")
    topic = claim.get("topic")
    topic_sessions = conv.sessions_matching(topic) if topic else []
    if topic and ev not in topic_sessions:
        probs.append(f"{where}: topic {topic!r} does not match the event session {ev}")
    if "ordinal" in claim:
        k = int(claim["ordinal"])
        if not topic:
            probs.append(f"{where}: an ordinal needs a 'topic'")
        elif abs(k) > len(topic_sessions) or k == 0:
            probs.append(f"{where}: ordinal {k} but topic matches {topic_sessions}")
        elif topic_sessions[k - 1 if k > 0 else k] != ev:
            probs.append(
                f"{where}: ordinal {k} of {topic_sessions} is session "
                f"{topic_sessions[k - 1 if k > 0 else k]}, not the event's {ev}"
            )
        if "count" in claim and len(topic_sessions) != int(claim["count"]):
            probs.append(f"{where}: count {claim['count']} but topic matches {topic_sessions}")
    if claim.get("first"):
        if not topic:
            probs.append(f"{where}: 'first' needs a 'topic'")
        elif topic_sessions and topic_sessions[0] != ev:
            probs.append(f"{where}: first topic session is {topic_sessions[0]}, not {ev}")
    if "month" in claim:
        y, m = (int(x) for x in str(claim["month"]).split("-"))
        if (conv.dates[ev].year, conv.dates[ev].month) != (y, m):
            probs.append(
                f"{where}: event session {ev} is dated {conv.dates[ev]}, not {claim['month']}"
            )
        in_month = [
            s for s in topic_sessions if (conv.dates[s].year, conv.dates[s].month) == (y, m)
        ]
        if topic and in_month != [ev]:
            probs.append(f"{where}: topic sessions in {claim['month']}: {in_month}, not [{ev}]")
    if "not" in claim:
        ruled = {conv.turns[d][0] for d in claim["not"] if d in conv.turns}
        if len(ruled) != 1 or len(claim["not"]) != sum(d in conv.turns for d in claim["not"]):
            probs.append(f"{where}: 'not' turns {claim['not']} must exist and share one session")
        elif ev in ruled:
            probs.append(f"{where}: the ruled-out session is the event's own ({ev})")
        elif topic and not ruled <= set(topic_sessions):
            probs.append(f"{where}: ruled-out session {ruled} does not match topic {topic!r}")
    named = ev
    off = claim.get("offset")
    if off:
        order = sorted(conv.dates)
        if "sessions" in off:
            i = order.index(ev) + int(off["sessions"])
            if not 0 <= i < len(order):
                return None, probs + [f"{where}: offset {off} runs off the sessions"]
            named = order[i]
        elif "days" in off:
            want = conv.dates[ev] + dt.timedelta(days=int(off["days"]))
            on_day = [s for s in order if conv.dates[s] == want]
            if len(on_day) != 1:
                return None, probs + [f"{where}: no single session on {want} ({off} from {ev})"]
            named = on_day[0]
        else:
            probs.append(f"{where}: offset {off}: use 'days' or 'sessions'")
    return named, probs


def check_session_line(rec: dict[str, Any], conv: Conversation, where: str) -> list[str]:
    """A session-level request: its claim gives the named session, the intent the target."""
    claim = rec.get("claim")
    if not isinstance(claim, dict):
        return [f"{where}: no 'claim' object"]
    named, probs = _named_session(claim, conv, where)
    if named is None:
        return probs
    intent = rec.get("intent", "restore_to")
    order = sorted(conv.dates)
    want = named if intent == "restore_to" else ([0] + order)[order.index(named)]
    if rec.get("target_session") != want:
        probs.append(
            f"{where}: target_session {rec.get('target_session')} but the claim names session "
            f"{named} ({intent}: {want})"
        )
    if rec.get("style") == "knowledge" and not (claim.get("first") and intent == "undo"):
        probs.append(f"{where}: a knowledge-state request undoes the first mention (first, undo)")
    return probs


def check_turn_line(rec: dict[str, Any], conv: Conversation, where: str) -> list[str]:
    """A turn-level request: evidence turns in one session, no whole-conversation word."""
    probs: list[str] = []
    ev = rec.get("evidence") or []
    claim = rec.get("claim") or {}
    if not ev or any(d not in conv.turns for d in ev):
        return [f"{where}: evidence {ev} missing or not in {conv.sample_id}"]
    if _NAMES_CONVERSATION.search(rec["query"]):
        probs.append(f"{where}: names a whole conversation; the turn gold would not apply")
    if sorted(claim.get("event") or []) != sorted(ev):
        probs.append(f"{where}: claim event {claim.get('event')} differs from evidence {ev}")
    named, more = _named_session(claim, conv, where)
    probs += more
    if claim.get("first") and claim.get("topic"):
        first = conv.turns_matching(claim["topic"])
        if first and first[0] != ev[0]:
            probs.append(f"{where}: first turn matching the topic is {first[0]}, not {ev[0]}")
    if "unique" in claim:
        hits = conv.turns_matching(claim["unique"])
        if not set(hits) <= set(ev):
            probs.append(f"{where}: unique {claim['unique']!r} matches turns {hits} beyond {ev}")
    if named is not None:
        order = sorted(conv.dates)
        intent = rec.get("intent", "restore_to")
        want = named if intent == "restore_to" else ([0] + order)[order.index(named)]
        if rec.get("target_session") != want:
            probs.append(f"{where}: target_session {rec.get('target_session')}, expected {want}")
    return probs


def check_forget_line(rec: dict[str, Any], conv: Conversation, where: str) -> list[str]:
    """A selective request: its anchor observation exists and its turns are the gold."""
    m = re.fullmatch(r"observation (o\d+\.\d+)", str(rec.get("anchor", "")))
    if not m or m.group(1) not in conv.observations:
        return [f"{where}: anchor {rec.get('anchor')!r} is not an observation of {conv.sample_id}"]
    probs = []
    if sorted(rec.get("dialog_ids") or []) != sorted(conv.observations[m.group(1)]):
        probs.append(
            f"{where}: dialog_ids {rec.get('dialog_ids')} but {m.group(1)} cites "
            f"{conv.observations[m.group(1)]}"
        )
    run = longest_shared_run(rec["request"], [conv.observation_text[m.group(1)]])
    if run > MAX_SHARED_WORDS:
        probs.append(f"{where}: shares {run} words in a row with its observation")
    return probs


def check_refuse_line(rec: dict[str, Any], conv: Conversation, where: str) -> list[str]:
    """A request to refuse: no target, and its absent content matches no turn."""
    probs = []
    if rec.get("expect") != "refuse":
        probs.append(f"{where}: expect must be 'refuse'")
    if "target_session" in rec or "target_version" in rec:
        probs.append(f"{where}: a request to refuse has no target")
    absent = (rec.get("claim") or {}).get("absent")
    if absent:
        hits = conv.turns_matching(absent)
        if hits:
            probs.append(f"{where}: 'absent' content {absent!r} is in turns {hits[:5]}")
    return probs


_CHECKS = {
    "session": check_session_line,
    "turn": check_turn_line,
    "forget": check_forget_line,
    "refuse": check_refuse_line,
}


def check_set(
    role: str,
    path: str | Path,
    convs: dict[str, Conversation],
    styles: tuple[str, ...] = SESSION_STYLES,
) -> list[str]:
    """Every problem found in one set (empty: all its claims hold); ``styles``: the
    session-level styles the set may use."""
    path = Path(path)
    if not path.exists():
        return [f"{path.name}: missing"]
    recs = read_set(path)
    probs: list[str] = []
    text_key = "request" if role == "forget" else "query"
    seen: set[tuple[str, str]] = set()
    for i, rec in enumerate(recs, start=1):
        where = f"{path.name}: line {i}"
        conv = convs.get(rec.get("sample_id", ""))
        if conv is None:
            probs.append(f"{where}: unknown sample_id {rec.get('sample_id')!r}")
            continue
        text = str(rec.get(text_key, ""))
        if not text.strip():
            probs.append(f"{where}: empty {text_key!r}")
            continue
        if (conv.sample_id, text) in seen:
            probs.append(f"{where}: repeats an earlier request")
        seen.add((conv.sample_id, text))
        if not isinstance(rec.get("style"), str) or not rec["style"].strip():
            probs.append(f"{where}: no 'style'")
        if conv.copies_a_turn(text):
            probs.append(
                f"{where}: shares more than {MAX_SHARED_WORDS} words in a row with a turn "
                "(paraphrase it)"
            )
        probs += _CHECKS[role](rec, conv, where)
    if len(recs) < MIN_SIZE[role]:
        probs.append(f"{path.name}: {len(recs)} requests, fewer than {MIN_SIZE[role]}")
    covered = {r.get("sample_id") for r in recs}
    if role != "refuse" and covered != set(convs):
        probs.append(f"{path.name}: conversations not covered: {sorted(set(convs) - covered)}")
    if role == "session":
        used = Counter(r.get("style") for r in recs)
        unknown = sorted(set(used) - set(styles), key=str)
        if unknown:
            probs.append(f"{path.name}: unknown styles {unknown}; use {styles}")
        counts = [used.get(s, 0) for s in styles]
        if min(counts) * 2 < max(counts) or min(counts) < 8:
            probs.append(f"{path.name}: styles unbalanced: {dict(used)}")
    return probs


def check_all(locomo: str | Path, qdir: Path = QDIR) -> dict[str, list[str]]:
    """Problems per file of every family in :data:`FAMILIES`, by file name."""
    convs = load_conversations(locomo)
    return {
        name: check_set(role, qdir / name, convs, FAMILY_STYLES[family])
        for family, sets in FAMILIES.items()
        for role, name in sets.items()
    }


def main(argv: list[str] | None = None) -> int:
    from data_builders.locomo.source import resolve_locomo_source

    args = sys.argv[1:] if argv is None else argv
    problems = check_all(resolve_locomo_source(args[0] if args else None))
    for name, probs in problems.items():
        print(f"{name}: {'ok' if not probs else f'{len(probs)} problem(s)'}")
        for p in probs:
            print(f"  {p}")
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
