"""Request-blind floors against the RQ2 and RQ3 headlines (issue 15), run offline.

Emulates the floors that never read the rollback request, to check that a headline
separates a correct rollback from them (docs/metrics.md, "Floors"):

- restore floors (RQ2 and RQ3): restore a fixed fraction (0.6 / 0.75 / 0.9) of the
  stream, version 1, or a seeded random version, then read exactly as ChronoMem does
  (same store, retriever, budgets and backbone). They run through the real runner as
  ChronoMem-oracle cells whose rollback picks another version.
- verbatim floors (RQ3): the first N words of session 1, or of the whole stream, as the
  summary; their texts come straight from the built streams.

The systems here are stand-ins for the registered floor systems (baselines/); they are
registered only inside this process and never publish. Usage::

    python scripts/request_blind_floors.py rq2 [overrides...]
    python scripts/request_blind_floors.py rq3 [overrides...]

``rq2`` runs one cell per restore floor (``task=qa``) plus ChronoMem and its oracle and
prints RC-QA with its parts; ``rq3`` runs ChronoMem's summary cell and scores the oracle
and every floor offline (ChronoMem's summary path replayed at their versions, the
verbatim texts cut from the streams). Overrides go to every cell (e.g. ``dataset.limit_queries=5``). Runs land
in ``$CHRONOBENCH_RESULTS/runs`` like any ``experiment=single`` cell.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chronobench.hashing import sha256_text

#: Leaderboard labels of the stand-in floors.
LABELS = {
    "floor_restore_60": "floor: restore 60% of the stream (request-blind)",
    "floor_restore_75": "floor: restore 75% of the stream (request-blind)",
    "floor_restore_90": "floor: restore 90% of the stream (request-blind)",
    "floor_restore_v1": "floor: restore version 1 (request-blind)",
    "floor_restore_random": "floor: restore a random version (request-blind)",
}
#: Restore floors: name -> version chooser ``(n_writes, request, seed) -> write``.
RESTORE_FLOORS: dict[str, Callable[[int, str, str], int]] = {
    "floor_restore_60": lambda n, req, seed: max(1, int(0.6 * n + 0.5)) if n else 0,
    "floor_restore_75": lambda n, req, seed: max(1, int(0.75 * n + 0.5)) if n else 0,
    "floor_restore_90": lambda n, req, seed: max(1, int(0.9 * n + 0.5)) if n else 0,
    "floor_restore_v1": lambda n, req, seed: 1 if n else 0,
    # Hashing the request text only makes the draw stable across resumed runs.
    "floor_restore_random": lambda n, req, seed: (
        random.Random(sha256_text(f"{seed}\n{req}")).randint(1, max(1, n - 1)) if n else 0
    ),
}
#: Verbatim RQ3 floors: the first N words of session 1 / of the stream.
VERBATIM_WORDS = (150,)


def restore_floor_class(name: str) -> type:
    """A ChronoMem reader that restores ``RESTORE_FLOORS[name]``'s version."""
    from chronobench.protocols import RollbackOutcome
    from chronobench.systems.base import APP
    from chronobench.systems.chronomem import ChronoMemOracleSystem

    choose = RESTORE_FLOORS[name]

    class RestoreFloor(ChronoMemOracleSystem):
        def ingest(self, stream: Any) -> None:
            super().ingest(stream)
            self._n = stream.n_versions
            self._sid = stream.stream_id

        def rollback(self, query: Any) -> RollbackOutcome:
            work = self._fresh_copy()
            ing = self._ingested
            j = int(choose(self._n, query.text, f"{self.ctx.params.seed}:{self._sid}"))
            work.rollback_to_version(APP, ing.user, ing.vid_of[j], mode=self.mode)
            return RollbackOutcome(selected_version=j, candidates=[(j, 1.0)], meta={})

    RestoreFloor.name = name
    RestoreFloor.__name__ = f"RestoreFloor_{name}"
    return RestoreFloor


def register_floors() -> None:
    """Register the restore floors in this process (idempotent)."""
    from chronobench.systems import register_system
    from chronobench.systems.registry import SYSTEMS, ChronoMemOptions

    for i, name in enumerate(RESTORE_FLOORS):
        if name not in SYSTEMS:
            register_system(
                name,
                restore_floor_class(name),
                options=ChronoMemOptions,
                label=LABELS[name],
                order=200 + i,
            )


def run_system(system: str, task: str, overrides: Sequence[str] = ()) -> Path:
    """Run one ``experiment=single`` cell; a restore floor runs as the oracle's config
    with its own system name."""
    from chronobench.runner.experiment import run_overrides

    base = ["experiment=single", f"task={task}", "leaderboard=false", "progress=false"]
    if system in RESTORE_FLOORS:
        register_floors()
        sys_args = ["system=chronomem_oracle", f"system.name={system}"]
    else:
        sys_args = [f"system={system}"]
    _, folders = run_overrides([*base, *sys_args, *overrides])
    return folders[0]


def samples(folder: Path) -> list[dict[str, Any]]:
    """The sample rows of a run folder."""
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# ---- RQ3: floors scored offline ------------------------------------------------------


def verbatim_text(stream: Any, n_words: int, *, session_only: bool) -> str:
    """The first ``n_words`` words of session 1 (``session_only``) or of the stream."""
    writes = stream.writes
    if session_only and writes:
        first = writes[0].labels.get("session")
        writes = [w for w in writes if w.labels.get("session") == first] if first else writes[:1]
    text = " ".join(op.text for w in writes for op in w.ops if op.text)
    return " ".join(text.split()[:n_words])


def chronomem_summary(stream: Any, version: int, question: str) -> str:
    """What ChronoMem's summary path answers after restoring ``version`` (truncate mode)
    with the extractive backbone: the restored items in timeline order, spread into the
    6,000-token summary budget, then the reader. A test checks it against the runner."""
    from chronobench.backbones.extractive import ExtractiveBackbone
    from chronobench.protocols import GenerationRequest
    from chronobench.systems.base import pack_spread

    key = (stream.stream_id, len(stream.writes), version, question)
    if key not in _SUMMARIES:
        texts = [op.text for w in stream.writes[:version] for op in w.ops if op.text]
        context = tuple(pack_spread(texts, 6000))
        request = GenerationRequest(messages=(), task="summary", context=context, question=question)
        _SUMMARIES[key] = ExtractiveBackbone().generate([request])[0].text
    return _SUMMARIES[key]


# Replayed summaries by (stream, length, version, question): floors share versions.
_SUMMARIES: dict[tuple[str, int, int, str], str] = {}


def offline_predictors() -> dict[str, Callable[[Any, Any, Any], str]]:
    """Summary predictors ``(query, probe, stream) -> text`` for the oracle and every
    request-blind RQ3 floor (restore floors read as ChronoMem does)."""
    out: dict[str, Callable[[Any, Any, Any], str]] = {
        "chronomem_oracle": lambda q, p, s: chronomem_summary(s, q.target_version, p.question),
    }
    for name, choose in RESTORE_FLOORS.items():

        def restore(q: Any, p: Any, s: Any, choose: Callable[..., int] = choose) -> str:
            j = int(choose(s.n_versions, q.text, f"0:{s.stream_id}"))
            return chronomem_summary(s, j, p.question)

        out[name] = restore
    for n in VERBATIM_WORDS:
        out[f"floor_session1_words_{n}"] = lambda q, p, s, n=n: verbatim_text(
            s, n, session_only=True
        )
        out[f"floor_stream_words_{n}"] = lambda q, p, s, n=n: verbatim_text(
            s, n, session_only=False
        )
    out["floor_session_dates"] = lambda q, p, s: p.meta["floor_texts"]["session_dates"]
    out["floor_generic_words"] = lambda q, p, s: p.meta["floor_texts"]["generic_words"]
    return out


def summary_rows(data: Any, predict: Callable[[Any, Any, Any], str]) -> list[dict[str, Any]]:
    """Scored probe rows (shaped as the runner writes them) of ``predict`` over every
    summary probe of ``data``; one prediction per distinct (stream, v*), reused."""
    from chronobench.metrics import score_probe

    streams = {s.stream_id: s for s in data.streams}
    memo: dict[tuple[str, int, str], str] = {}
    rows = []
    for q in data.queries:
        for p in q.probes:
            if p.kind != "summary":
                continue
            key = (q.stream_id, q.target_version, q.text)
            if key not in memo:
                memo[key] = predict(q, p, streams[q.stream_id])
            pred = memo[key]
            rows.append(
                {
                    "kind": "probe",
                    "sample_id": f"probe/{q.query_id}/{p.probe_id}",
                    "query_id": q.query_id,
                    "stream_id": q.stream_id,
                    "gold_version": q.target_version,
                    "intent": q.intent,
                    "source": q.source,
                    "probe_kind": "summary",
                    "category": None,
                    "selected_version": None,
                    "probe": p.model_dump(mode="json"),
                    "prediction": pred,
                    "scores": score_probe(p, pred),
                }
            )
    return rows


def headline_table(results: dict[str, dict[str, Any]], fields: Sequence[str]) -> str:
    """Mean [95% CI] x100 of ``fields`` per row."""
    lines = ["| row | " + " | ".join(fields) + " |", "|---" * (len(fields) + 1) + "|"]
    for name, stats in results.items():
        cells = []
        for f in fields:
            st = stats.get(f) or {}
            if st.get("mean") is None:
                cells.append("–")
            else:
                cells.append(
                    f"{st['mean'] * 100:.1f} [{st['ci_low'] * 100:.1f}, {st['ci_high'] * 100:.1f}]"
                )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


RQ2_FIELDS = (
    "rc_qa",
    "rc_qa_a",
    "rc_qa_b",
    "rc_qa_a_zero",
    "qa_f1",
    "future_abstain",
    "future_leak",
)
RQ3_FIELDS = ("session_coverage", "rouge1", "specific_rouge1", "summary_leakage")


def main(argv: Sequence[str]) -> int:
    """Entry point (see the module docstring)."""
    from chronobench.runner.metrics_io import compute_metrics

    if not argv or argv[0] not in ("rq2", "rq3"):
        print(__doc__)
        return 2
    what, overrides = argv[0], list(argv[1:])
    results: dict[str, dict[str, Any]] = {}
    if what == "rq2":
        for name in ["chronomem", "chronomem_oracle", *RESTORE_FLOORS]:
            folder = run_system(name, "qa", overrides)
            results[name] = compute_metrics(samples(folder))["probes"]["all"]
        print(headline_table(results, RQ2_FIELDS))
        return 0
    # RQ3: ChronoMem from its run; the oracle and every floor offline (the oracle's
    # offline summaries equal its runner's, tests/test_request_blind_floors.py).
    folder = run_system("chronomem", "summary", overrides)
    results["chronomem"] = compute_metrics(samples(folder))["probes"]["all"]
    data = load_data(overrides)
    for name, predict in offline_predictors().items():
        results[name] = compute_metrics(summary_rows(data, predict))["probes"]["all"]
    print(headline_table(results, RQ3_FIELDS))
    return 0


def load_data(overrides: Sequence[str] = ()) -> Any:
    """The built dataset an ``experiment=single`` cell with ``overrides`` reads."""
    from hydra import initialize_config_dir

    from chronobench.paths import config_dir
    from chronobench.runner.components import resolve_cell
    from chronobench.runner.experiment import compose
    from chronobench.spec import spec_from_config

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(["experiment=single", "task=summary", *overrides])
    return resolve_cell(spec_from_config(cfg)).load_data()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
