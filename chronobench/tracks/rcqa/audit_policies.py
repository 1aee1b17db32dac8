"""Answer policies the RQ2 audit scores: each turns the scored probe rows of a real run
into new predictions, which the real scorer (:func:`chronobench.metrics.score_probe`,
:func:`chronobench.metrics.runlevel.run_units`) scores again.

Why replay answers instead of running each policy as a system: every policy below
either answers a battery item or abstains on it. When it answers, it gives what a reader
with the whole stream gives (the run's own last-version answer to that item: a policy
that never rolls back reads exactly that memory); when it abstains, it gives the
harness's abstention. That is the strongest form of each policy for this backbone (a
real system would also have to find which session an item is about from its words), so
a policy that stays below ChronoMem here stays below it as a system.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chronobench.data.schema import Probe, Stream
from chronobench.metrics.content import content_stems
from chronobench.systems.prompts import ABSTAIN_REPLY

__all__ = [
    "ProbeView",
    "StreamFacts",
    "answer_when",
    "grammar_says_false",
    "headline",
    "stream_facts",
    "surface_says_false",
]

#: What a policy gives back for one probe: its prediction text.
Policy = Callable[["ProbeView"], str]


@dataclass(frozen=True)
class StreamFacts:
    """What the policies may read of a stream: its session starts (first version of
    each session), the content stems each speaker's turns (or turns naming them) use,
    and the content stems of the whole conversation (all from the public writes)."""

    starts: tuple[int, ...]
    n_versions: int
    speakers: tuple[str, ...]
    person_stems: Mapping[str, frozenset[str]]
    all_stems: frozenset[str]

    def session(self, version: int) -> int:
        """Index of the session holding ``version``."""
        return max(bisect_right(self.starts, version) - 1, 0)

    def session_end(self, index: int) -> int:
        """Last version of session ``index`` (clamped to the stream)."""
        if index < 0:
            return 0
        if index + 1 < len(self.starts):
            return self.starts[index + 1] - 1
        return self.n_versions


@dataclass(frozen=True)
class ProbeView:
    """One scored probe row, as a policy sees it."""

    row: Mapping[str, Any]
    facts: StreamFacts
    final: str | None  # the run's last-version answer to the item (None: not asked)

    @property
    def meta(self) -> Mapping[str, Any]:
        return (self.row.get("probe") or {}).get("meta") or {}

    @property
    def question(self) -> str:
        return str((self.row.get("probe") or {}).get("question") or "")

    @property
    def item_version(self) -> int:
        """The version by which all of the item's evidence is committed."""
        ev = (self.row.get("probe") or {}).get("evidence_versions") or [0]
        return int(max(ev))

    @property
    def item_session(self) -> int:
        return self.facts.session(self.item_version)

    @property
    def first_version(self) -> int:
        ev = (self.row.get("probe") or {}).get("evidence_versions") or [0]
        return int(min(ev))

    @property
    def gold_session(self) -> int:
        return self.facts.session(int(self.row.get("gold_version") or 0))


def stream_facts(stream: Stream, starts: Sequence[int], speakers: Sequence[str]) -> StreamFacts:
    """Read a stream's public text once: per speaker, the stems of the turns they speak
    or that name them; and the stems of every turn."""
    names = tuple(speakers)
    person: dict[str, set[str]] = {n: set() for n in names}
    every: set[str] = set()
    for w in stream.writes:
        for op in w.ops:
            text = op.text or ""
            stems = content_stems(text, list(names))
            every |= stems
            head = text.split("] ", 1)[-1]
            speaker = head.split(":", 1)[0].strip()
            for n in names:
                if speaker == n or n.lower() in text.lower():
                    person[n] |= stems
    return StreamFacts(
        starts=tuple(starts),
        n_versions=stream.n_versions,
        speakers=names,
        person_stems={n: frozenset(v) for n, v in person.items()},
        all_stems=frozenset(every),
    )


def surface_says_false(statement: str, subject: str | None, facts: StreamFacts) -> bool:
    """The falsifier's own construction rule read backwards: a statement is false when
    one of its content words occurs in the conversation but never in a turn its subject
    speaks or that names them. ``subject``: the statement's subject (else any speaker
    named in it)."""
    names = [subject] if subject else [n for n in facts.speakers if n in statement]
    if not names:
        return False
    stems = content_stems(statement, list(facts.speakers)) & facts.all_stems
    return any(bool(stems - facts.person_stems.get(n, frozenset())) for n in names)


_TOKEN = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|\d+")


def grammar_says_false(statement: str) -> bool:
    """A grammar check a word swap could fail: "a" before a vowel or "an" before a
    consonant (by spelling), or "a"/"an" before a plural-looking word ("a dogs")."""
    toks = [t.lower() for t in _TOKEN.findall(statement)]
    for art, word in zip(toks, toks[1:], strict=False):
        if art == "a" and word[:1] in "aeiou":
            return True
        if art == "an" and word[:1] not in "aeiou":
            return True
        if art in ("a", "an") and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            return True
    return False


def answer_when(test: Callable[[ProbeView], bool]) -> Policy:
    """Answer as the whole-stream reader does where ``test`` holds, abstain elsewhere."""

    def policy(view: ProbeView) -> str:
        if test(view) and view.final is not None:
            return view.final
        return ABSTAIN_REPLY

    return policy


def headline(
    rows: Iterable[Mapping[str, Any]],
    views: Mapping[str, ProbeView],
    known: Mapping[str, Iterable[str]],
    policy: Policy | None,
    *,
    seed: int = 0,
) -> dict[str, Any]:
    """RC-QA (mean, interval, n) of ``rows`` with ``policy``'s predictions (None: the
    rows' own), through the real scorer and bootstrap."""
    from chronobench.metrics import aggregate, score_probe
    from chronobench.metrics.runlevel import dedupe_weights, run_units

    scored = []
    for r in rows:
        if r.get("probe_kind") not in ("qa", "future_qa"):
            continue
        if policy is not None:
            text = policy(views[str(r["sample_id"])])
            probe = Probe.model_validate(r["probe"])
            r = {**r, "prediction": text, "scores": score_probe(probe, text)}
        scored.append(r)
    units = [u for u in run_units(scored, known) if "rc_qa" in u["scores"]]
    if not units:
        return {"mean": 0.0, "lo": 0.0, "hi": 0.0, "n": 0, "a": 0.0, "b": 0.0}
    # Only the headline's fields: each field is bootstrapped on its own with the same
    # seed, so leaving the others out changes no figure and skips most of the resampling.
    fields = ("rc_qa", "rc_qa_a", "rc_qa_b")
    stats = aggregate(
        [{k: u["scores"][k] for k in fields if k in u["scores"]} for u in units],
        seed=seed,
        clusters=[u["cluster"] for u in units],
        weights=dedupe_weights(units),
    )
    stat = stats["rc_qa"]
    return {
        "mean": float(stat["mean"] or 0.0),
        "lo": float(stat["ci_low"] if stat["ci_low"] is not None else stat["mean"] or 0.0),
        "hi": float(stat["ci_high"] if stat["ci_high"] is not None else stat["mean"] or 0.0),
        "n": int(stat["n"] or 0),
        "a": float(stats["rc_qa_a"]["mean"] or 0.0),
        "b": float(stats["rc_qa_b"]["mean"] or 0.0),
    }
