"""The RQ2 audit (RC-QA, docs/metrics.md): its oracle, error curves and attacks.

- **Oracle**: ``chronomem_oracle`` run through the harness (ChronoMem restoring the gold
  v*). Why it is the ceiling: the gold restore keeps the evidence of every kept item and
  holds none of the forgotten ones, so with the same reader any other restore loses kept
  items or exposes forgotten ones (the error curves measure both).
- **Error curves**, from the oracle's own answers: restore ``k`` sessions too early
  (kept items of the last ``k`` sessions up to v* are lost: abstained on) and ``k``
  sessions too late (forgotten items of the next ``k`` sessions are exposed: answered
  as the whole-stream reader answers them).
- **Attacks** (:mod:`chronobench.tracks.rcqa.audit_policies`): request-blind answer/abstain
  splits (session parity, a hash of the item, a fixed fraction or prefix of the stream,
  version 1, the question-density boundary, never rolling back), over-action (truncate
  everything, restore one or two sessions early), fixed texts ("2023", "Yes", "No") and
  the falsifier's surface rule on recall statements.

``fast``: four streams, their first 12 queries each (the test suite's version; on two
streams, one session early already zeroes nearly every query's near keep part, so the
early curve is flat after k = 1; the queries beyond 12 add time, not streams, and each
stream's battery is embedded whatever the number of queries). Otherwise every stream, and the
headline interval is ChronoMem's, computed from its cell the way the board computes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from chronobench.audit.contract import Attack, Curve, HeadlineAudit, Interval
from chronobench.audit.registry import AuditOptions
from chronobench.hashing import stable_hash
from chronobench.systems.prompts import ABSTAIN_REPLY
from chronobench.tracks.rcqa.audit_policies import (
    ProbeView,
    StreamFacts,
    answer_when,
    grammar_says_false,
    headline,
    stream_facts,
    surface_says_false,
)

__all__ = ["audit"]

SYSTEM = "chronomem"
ORACLE = "chronomem_oracle"
FAST_STREAMS = 4
FAST_QUERIES = 12
CURVE_KS = (0, 1, 2, 3, 4)
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _run_cell(system: str, options: AuditOptions) -> Path:
    """The generation cell of ``system`` on LoCoMo sessions (reused when it exists)."""
    from chronobench.runner.experiment import run_overrides

    overrides = [
        "experiment=single",
        "dataset=locomo_session",
        "task=generation",
        f"system={system}",
        f"paths.results_dir={Path(options.results).resolve()}",
        "publish=false",
        "leaderboard=false",
        "progress=false",
    ]
    if options.data is not None:
        overrides.append(f"paths.data_dir={Path(options.data).resolve()}")
    if options.cache is not None:
        overrides.append(f"paths.cache_dir={Path(options.cache).resolve()}")
    if options.fast:
        overrides.append(f"dataset.limit_streams={FAST_STREAMS}")
        overrides.append(f"dataset.limit_queries={FAST_QUERIES}")
    _, runs = run_overrides(overrides)
    if len(runs) != 1:
        raise RuntimeError(f"audit rq2: expected one run folder for {system}, got {runs}")
    return Path(runs[0])


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "samples.jsonl"
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _data_dir(options: AuditOptions) -> Path:
    if options.data is not None:
        return Path(options.data)
    return Path(os.environ.get("CHRONOBENCH_DATA", "data/built"))


def _streams(
    run_dir: Path, options: AuditOptions, ids: set[str]
) -> dict[str, tuple[Any, StreamFacts]]:
    """Per stream id in ``ids``: the stream and what the policies may read of it."""
    from chronobench.data.io import load_built

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    folder = _data_dir(options) / manifest["dataset"]["folder"]
    data = load_built(folder)
    out = {}
    for stream in data.streams:
        if stream.stream_id not in ids:
            continue
        pool = data.pools.get(stream.stream_id) or {}
        sessions = pool.get("sessions") or []
        starts = sorted(int(s["first_version"]) for s in sessions) or list(
            range(1, stream.n_versions + 1)
        )
        out[stream.stream_id] = (stream, stream_facts(stream, starts, pool.get("speakers") or []))
    return out


def _finals(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    # The last-version answer to each battery item: what a system that never rolls back
    # answers (ChronoMem's final session reads the whole stream).
    out = {}
    for r in rows:
        if r.get("probe_kind") == "final_qa":
            meta = (r.get("probe") or {}).get("meta") or {}
            out[(str(r["stream_id"]), str(meta.get("qa_id")))] = str(r.get("prediction") or "")
    return out


def _views(
    rows: list[dict[str, Any]],
    streams: Mapping[str, tuple[Any, StreamFacts]],
    finals: Mapping[tuple[str, str], str],
) -> dict[str, ProbeView]:
    out = {}
    for r in rows:
        if r.get("probe_kind") not in ("qa", "future_qa"):
            continue
        sid = str(r["stream_id"])
        qa_id = str(((r.get("probe") or {}).get("meta") or {}).get("qa_id"))
        out[str(r["sample_id"])] = ProbeView(r, streams[sid][1], finals.get((sid, qa_id)))
    return out


def _own(view: ProbeView) -> str:
    return str(view.row.get("prediction") or "")


def _early(k: int) -> Callable[[ProbeView], str]:
    # Restored the end of session (gold - k): kept items of later sessions are gone.
    def policy(view: ProbeView) -> str:
        lost = view.item_session > view.gold_session - k
        if view.row.get("probe_kind") == "qa" and k > 0 and lost:
            return ABSTAIN_REPLY
        return _own(view)

    return policy


def _late(k: int) -> Callable[[ProbeView], str]:
    # Restored the end of session (gold + k): forgotten items up to there are exposed.
    def policy(view: ProbeView) -> str:
        end = view.facts.session_end(view.gold_session + k)
        if view.row.get("probe_kind") == "future_qa" and view.item_version <= end:
            return view.final if view.final is not None else _own(view)
        return _own(view)

    return policy


def _restore_at(version_of: Callable[[ProbeView], int]) -> Callable[[ProbeView], str]:
    return answer_when(lambda v: v.item_version <= version_of(v))


def _question_density(streams: Mapping[str, tuple[Any, StreamFacts]]) -> dict[str, int]:
    """Per stream, the boundary the question-density floor infers from the battery."""
    from baselines.question_floors import densest_boundary
    from chronobench.protocols import public_writes

    out = {}
    for sid, (stream, _) in streams.items():
        questions = [str(b["question"]) for b in (stream.meta or {}).get("battery") or []]
        out[sid] = densest_boundary(public_writes(stream), questions)
    return out


def _surface(
    qa: Callable[[ProbeView], str], rule: Callable[[str, ProbeView], bool] | None = None
) -> Callable[[ProbeView], str]:
    def policy(view: ProbeView) -> str:
        if view.meta.get("format") != "recall":
            return qa(view)
        statement = view.question.removeprefix("Is it true that").strip().rstrip("?")
        if rule is not None:
            return "No" if rule(statement, view) else "Yes"
        said = surface_says_false(statement, view.meta.get("speaker"), view.facts)
        return "No" if said else "Yes"

    return policy


def _grammar(statement: str, view: ProbeView) -> bool:
    return grammar_says_false(statement)


def _policies(
    streams: Mapping[str, tuple[Any, StreamFacts]],
) -> list[tuple[str, str, Callable[[ProbeView], str], str]]:
    """``(family, name, policy, note)`` of every attack."""
    density = _question_density(streams)
    out: list[tuple[str, str, Callable[[ProbeView], str], str]] = [
        ("request_blind", "never roll back", answer_when(lambda v: True), "answer everything"),
        ("request_blind", "session parity: even", answer_when(lambda v: v.item_session % 2 == 0),
         "answer items of even sessions, abstain on odd ones, never roll back"),
        ("request_blind", "session parity: odd", answer_when(lambda v: v.item_session % 2 == 1),
         "answer items of odd sessions, abstain on even ones, never roll back"),
        ("request_blind", "item hash split", answer_when(
            lambda v: stable_hash("rq2-audit", v.meta.get("qa_id")) % 2 == 0),
         "answer a fixed half of the battery items"),
        ("request_blind", "restore v1", _restore_at(lambda v: v.facts.session_end(0)),
         "the first session only"),
        ("request_blind", "question density", _restore_at(
            lambda v: density[str(v.row["stream_id"])]),
         "the boundary the battery's questions point to"),
    ]  # fmt: skip
    for f in FRACTIONS:
        out.append((
            "request_blind", f"fixed fraction {f:.1f}",
            _restore_at(lambda v, f=f: int(f * v.facts.n_versions)),
            "answer items whose evidence is in the first fraction of the stream",
        ))  # fmt: skip
    out += [
        ("over_action", "truncate everything", answer_when(lambda v: False), "abstain on all"),
        ("over_action", "restore 1 session early", _early(1), "the oracle, one session short"),
        ("over_action", "restore 2 sessions early", _early(2), "the oracle, two sessions short"),
        ("fixed_text", "constant 2023", lambda v: "2023", "the constant-answer floor"),
        ("fixed_text", "always yes", lambda v: "Yes", ""),
        ("fixed_text", "always no", lambda v: "No", ""),
        ("surface_rule", "falsifier rule, abstain on QA", _surface(lambda v: ABSTAIN_REPLY),
         "recall: No when a content word occurs in the conversation but never with the subject"),
        ("surface_rule", "falsifier rule, never roll back", _surface(answer_when(lambda v: True)),
         "the rule on recall statements, the whole-stream reader on QA"),
        ("surface_rule", "grammar check, abstain on QA",
         _surface(lambda v: ABSTAIN_REPLY, _grammar),
         "recall: No when an article disagrees with the next word"),
        ("surface_rule", "falsifier rule, session parity",
         _surface(answer_when(lambda v: v.item_session % 2 == 0)),
         "the rule on recall statements, even sessions' QA answered"),
    ]  # fmt: skip
    return out


def _flag_rates(rows: list[dict[str, Any]], streams: Mapping[str, tuple[Any, StreamFacts]]) -> str:
    """How often the surface rule and the grammar check call a battery statement false,
    by its truth."""
    flagged = {True: [0, 0], False: [0, 0]}
    grammar = {True: 0, False: 0}
    for r in rows:
        meta = (r.get("probe") or {}).get("meta") or {}
        if r.get("probe_kind") != "final_qa" or "truth" not in meta:
            continue
        q = str((r.get("probe") or {}).get("question") or "")
        statement = q.removeprefix("Is it true that").strip().rstrip("?")
        hit = surface_says_false(statement, meta.get("speaker"), streams[str(r["stream_id"])][1])
        flagged[bool(meta["truth"])][0] += int(hit)
        flagged[bool(meta["truth"])][1] += 1
        grammar[bool(meta["truth"])] += int(grammar_says_false(statement))
    parts = [
        f"{'false' if not t else 'true'} {100 * a / b:.1f}% "
        f"(grammar check {100 * grammar[t] / b:.1f}%) of {b}"
        for t, (a, b) in sorted(flagged.items())
        if b
    ]
    return "falsifier rule flags battery statements: " + ", ".join(parts)


def audit(options: AuditOptions) -> list[HeadlineAudit]:
    """The RC-QA headline's audit (see the module)."""
    from chronobench.runner.known import read_known

    oracle_dir = _run_cell(ORACLE, options)
    system_dir = _run_cell(SYSTEM, options)
    known = read_known(oracle_dir)
    if known is None:
        raise RuntimeError(f"{oracle_dir}: no known.json (a protocol-3 run is needed)")
    oracle_rows = _rows(oracle_dir)
    system_rows = _rows(system_dir)
    streams = _streams(oracle_dir, options, {str(r["stream_id"]) for r in oracle_rows})
    views = _views(oracle_rows, streams, _finals(system_rows))
    oracle = headline(oracle_rows, views, known, None)
    system = headline(system_rows, {}, known, None)
    curves = [
        Curve(
            name=f"restore k sessions {side}",
            action=f"the restored version one session {side} (per k)",
            points=[(k, headline(oracle_rows, views, known, make(k))["mean"]) for k in CURVE_KS],
        )
        for side, make in (("early", _early), ("late", _late))
    ]
    attacks = [
        Attack(
            family=fam, name=name, score=headline(oracle_rows, views, known, pol)["mean"], note=note
        )
        for fam, name, pol, note in _policies(streams)
    ]
    notes = [
        "attacks and curves replay answers: an answered item gets ChronoMem's "
        "last-version answer, an abstained one the harness's abstention "
        "(chronobench/audit/rq2_policies.py); every score goes through score_probe and "
        "run_units with the run's known set",
        _flag_rates(system_rows, streams),
    ]
    n_streams = len(streams)
    return [
        HeadlineAudit(
            track="rq2",
            headline="RC-QA",
            system=SYSTEM,
            interval=Interval(mean=system["mean"], lo=system["lo"], hi=system["hi"], n=system["n"]),
            oracle_name=ORACLE,
            oracle_why="restores the gold v* through the harness: it keeps every kept "
            "item's evidence and holds none of the forgotten evidence, so with ChronoMem's "
            "reader any other restore loses kept items or exposes forgotten ones",
            oracle=oracle["mean"],
            curves=curves,
            attacks=attacks,
            data=f"LoCoMo sessions, {n_streams} streams, extractive backbone"
            + (" (fast)" if options.fast else ""),
            notes=notes,
        )
    ]
