"""Runs and per-query rows as pandas data frames, for notebooks and ad-hoc analysis.

- :func:`runs_df`: one row per figure of every run (run, cell, section, group, metric,
  n, mean and 95% interval), read through the typed loader
  (:func:`chronobench.results.schema.load_run`), so a malformed file is an error naming
  it rather than a silent hole in a chart;
- :func:`queries_df`: one row per scored question of the runs' per-query files
  (``queries.jsonl.gz``): the request, the chosen and the gold version, the question,
  the answer, the gold answer, the score and its label;
- :func:`selections_df`: one row per request and RQ1 selector: chosen against gold.

Runs come from ``<results>/published/`` and ``<results>/runs/``; a local run of the
same id replaces its published copy (as on the board and in the viewer). Figures stay
fractions in [0, 1]: the board prints them x100.

pandas is a dependency of the benchmark, imported only here; ChronoMem itself (the
store, :mod:`chronomem`) never needs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["queries_df", "run_folders", "runs_df", "selections_df"]

_WHERE = (("published", "published"), ("runs", "local"))


def run_folders(results: str | Path, run: str | None = None) -> dict[str, tuple[str, Path]]:
    """``run id -> (where, folder)`` of every finished run under ``results`` whose id
    contains ``run`` (all when None); a local run replaces its published copy."""
    found: dict[str, tuple[str, Path]] = {}
    for sub, where in _WHERE:
        for folder in sorted((Path(results) / sub).glob("*")):
            finished = (folder / "manifest.json").is_file() and (folder / "metrics.json").is_file()
            if finished and (run is None or run in folder.name):
                found[folder.name] = (where, folder)
    return dict(sorted(found.items()))


def _cell_columns(spec: Any) -> dict[str, Any]:
    return {
        "dataset": spec.dataset.name,
        "granularity": spec.dataset.granularity,
        "queries": Path(spec.dataset.queries_file).stem if spec.dataset.queries_file else "built",
        "fixture": bool(spec.dataset.fixture),
        "task_kind": spec.task.kind,
        # A selection-only cell names a system it never runs: its rows are selectors'.
        "system": None if spec.system is None or _selection_only(spec) else spec.system.name,
        "backbone": spec.backbone.name,
    }


def _selection_only(spec: Any) -> bool:
    task = spec.task
    return task.kind == "benchmark" and not (task.qa or task.summary)


def _stat_rows(section: str, breakdown: Any) -> Iterator[dict[str, Any]]:
    groups = [("all", breakdown.all)]
    for name, by in breakdown.groups():
        groups += [(f"{name}:{value}", stats) for value, stats in sorted(by.items())]
    for group, stats in groups:
        for metric, stat in sorted(stats.items()):
            yield {
                "section": section,
                "group": group,
                "metric": metric,
                "n": stat.n,
                "mean": stat.mean,
                "ci_low": stat.ci_low,
                "ci_high": stat.ci_high,
            }


def _plain_rows(section: str, block: Any, group: str = "all") -> Iterator[dict[str, Any]]:
    """The figures inside a plain block (peers, RQ4, repair): every mapping with a
    ``mean`` is one figure, named by its path, and so is every plain number (with no
    interval)."""
    if not isinstance(block, dict):
        return
    for key, value in sorted(block.items()):
        if isinstance(value, dict) and "mean" in value:
            yield {
                "section": section,
                "group": group,
                "metric": str(key),
                "n": value.get("n"),
                "mean": value.get("mean"),
                "ci_low": value.get("ci_low"),
                "ci_high": value.get("ci_high"),
            }
        elif isinstance(value, dict):
            inner = str(key) if group == "all" else f"{group}/{key}"
            yield from _plain_rows(section, value, inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            # A figure without an interval (the peers' restore fidelity, counts).
            yield {"section": section, "group": group, "metric": str(key), "n": None,
                   "mean": value, "ci_low": None, "ci_high": None}  # fmt: skip


def runs_df(results: str | Path = "results", run: str | None = None) -> pd.DataFrame:
    """One row per figure of every run (see the module docstring); ``run`` keeps the
    runs whose id contains it."""
    import pandas as pd

    from chronobench.results.schema import load_run

    rows: list[dict[str, Any]] = []
    for run_id, (where, folder) in run_folders(results, run).items():
        loaded = load_run(folder)
        data = loaded.manifest.dataset
        head = {
            "run_id": run_id,
            "where": where,
            **_cell_columns(loaded.spec),
            # The built dataset (a subset, another build) keeps figures apart, as on the board.
            "data_build": data.manifest_sha256[:10],
            "n_streams": data.n_streams,
            "n_queries": data.n_queries,
        }
        m = loaded.metrics.metrics
        parts: list[dict[str, Any]] = []
        for selector, breakdown in sorted(m.selection.items()):
            parts += _stat_rows(f"selection:{selector}", breakdown)
        if m.probes is not None:
            parts += _stat_rows("probes", m.probes)
        for name in ("peer", "rq4"):
            parts += _plain_rows(name, getattr(m, name))
        if m.all is not None:
            parts += _plain_rows("repair", {k: v.model_dump() for k, v in m.all.items()})
        rows += [{**head, **p} for p in parts]
    columns = ["run_id", "where", "dataset", "granularity", "queries", "fixture", "task_kind",
               "system", "backbone", "data_build", "n_streams", "n_queries", "section",
               "group", "metric", "n", "mean", "ci_low", "ci_high"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _query_files(results: str | Path, run: str | None) -> Iterator[tuple[str, Any]]:
    from chronobench.results.per_query import QUERIES_FILE, QueryFile

    for run_id, (_, folder) in run_folders(results, run).items():
        if (folder / QUERIES_FILE).is_file():
            yield run_id, QueryFile(folder / QUERIES_FILE)


def _head(run_id: str, qf: Any, line: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "system": (qf.header.get("cell") or {}).get("system"),
        "query_id": line["query_id"],
        "stream_id": line["stream_id"],
        "request": line.get("request"),
        "intent": line.get("intent"),
        "source": line.get("source"),
        "gold_version": line.get("gold"),
    }


def queries_df(results: str | Path = "results", run: str | None = None) -> pd.DataFrame:
    """One row per scored question of every run with a per-query file (``run`` keeps
    the runs whose id contains it): request, chosen and gold version, outcome, the
    question, answer, gold answer, score, metric, label, whether it is known, leaks."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for run_id, qf in _query_files(results, run):
        for line in qf.queries:
            if "probes" not in line:
                continue
            head = {
                **_head(run_id, qf, line),
                "chosen_version": line.get("chosen"),
                "outcome": line.get("outcome"),
            }
            stream = str(line["stream_id"])
            for p in line["probes"]:
                rows.append({
                    **head,
                    "label": p.get("label"),
                    "known": p.get("known"),
                    "question": qf.item(stream, str(p.get("item"))).get("question"),
                    "answer": p.get("answer"),
                    "gold": qf.gold(stream, p),
                    "metric": p.get("metric"),
                    "score": p.get("score"),
                    "leak": ",".join(p.get("leak") or []),
                })  # fmt: skip
    columns = ["run_id", "system", "query_id", "stream_id", "request", "intent", "source",
               "gold_version", "chosen_version", "outcome", "label", "known", "question",
               "answer", "gold", "metric", "score", "leak"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def selections_df(results: str | Path = "results", run: str | None = None) -> pd.DataFrame:
    """One row per request and RQ1 selector of every run with a per-query file: the
    version chosen against the gold, the outcome (exact, early, late, none) and the
    request's scores (``r@1``, ``mrr``, ...) as columns."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for run_id, qf in _query_files(results, run):
        for line in qf.queries:
            for selector, v in sorted((line.get("selectors") or {}).items()):
                rows.append({
                    **_head(run_id, qf, line),
                    "selector": selector,
                    "chosen_version": v.get("chosen"),
                    "outcome": v.get("outcome"),
                    **{str(k): x for k, x in (v.get("scores") or {}).items()},
                })  # fmt: skip
    return pd.DataFrame(rows)
