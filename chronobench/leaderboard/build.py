"""Aggregate finished runs into ``LEADERBOARD.md`` / ``.csv``, safely.

- A table is keyed by the runs' full spec (:meth:`RunSpec.table_key`) plus the built
  dataset's and query file's sha256: runs that differ in anything but the system, the
  selector or the backbone (a column) never share a table; a tiny-fixture, smoke or
  debug run (``spec.published`` false) or a run of an older results schema never reaches
  it.
- Each table cell takes the newest finished run of that cell (ties: run id); every run
  used is listed with its samples' sha256.
- The small files of every run the leaderboard names (``manifest.json``,
  ``metrics.json``, ``config.yaml``, and ``volatile.json``, which it copies only when the
  others change) are kept under ``results/published/<run-id>/``, which is committed: the
  leaderboard rebuilds byte-identically from them alone. No file it writes holds a
  volatile field (:data:`~chronobench.results.schema.VOLATILE_FIELDS`), and a rebuild
  that changes nothing rewrites nothing, so rerunning the same code never edits a
  committed file.
- By default the leaderboard is rebuilt from the published runs plus the local
  ``results/runs/*``, so it can only gain or update rows; a rebuild that would name fewer
  runs than the file it replaces is refused without ``force``, which rebuilds from local
  runs only.
- Only runs of the current system protocol (:data:`chronobench.spec.PROTOCOL_VERSION`)
  reach the tables. Published runs of an older protocol move to
  ``results/archive/protocol-<n>/<run-id>/`` and are rendered, apart, in
  ``results/ARCHIVE.md``; they never share a table with current rows (``score`` still
  reads them).

Rebuilding from the same runs gives byte-identical files: no timestamps, sorted output.
Reading the runs (:class:`RunRecord`, :func:`collect_runs`): :mod:`chronobench.leaderboard.runs`.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from chronobench.errors import LeaderboardShrinkError
from chronobench.fileio import atomic_write_bytes, atomic_write_text, dump_json
from chronobench.hashing import canonical_json, sha256_text
from chronobench.leaderboard.runs import (
    ARCHIVE_DIR,
    PUBLISHED_DIR,
    RunRecord,
    archived_runs,
    collect_runs,
)
from chronobench.results.per_query import QUERIES_FILE
from chronobench.results.schema import (
    CONFIG_FILE,
    MANIFEST_FILE,
    METRICS_FILE,
    VOLATILE_FILE,
)
from chronobench.spec import PROTOCOL_VERSION

ARCHIVE_FILE = "ARCHIVE.md"
_RUN_ID_RE = re.compile(r"`([A-Za-z0-9_.+\-]+__[0-9a-f]{10})`")


def _variant_titles(keys: list[str]) -> dict[str, str]:
    """For sections that share dataset/granularity/query set: name what differs."""
    flat = {k: _flatten(__import__("json").loads(k)) for k in keys}
    common = set.intersection(*(set(v.items()) for v in flat.values())) if flat else set()
    out = {}
    for k, items in flat.items():
        diff = sorted(f"{a}={b}" for a, b in items.items() if (a, b) not in common)
        out[k] = ", ".join(diff) + f"; spec {sha256_text(k)[:8]}"
    return out


def _flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): canonical_json(obj)}


def build_tables(
    runs: list[RunRecord], *, protocol: int = PROTOCOL_VERSION
) -> dict[tuple[str, str, str], dict[str, Any]]:
    """``{(dataset, granularity, query set[ + variant]): slot}`` of the published runs of
    one system ``protocol`` (default: the current one); a slot holds
    ``selection`` ``{name: (groups, run_id)}``, ``systems`` ``{(system, backbone): (groups,
    run_ids)}``, ``backbones`` ``{column label: table position}`` and ``provenance``
    ``{run_id: samples sha256}``."""
    by_key: dict[str, list[RunRecord]] = {}
    for r in runs:
        if r.published and r.protocol == protocol:
            by_key.setdefault(r.table_key, []).append(r)
    triples = {k: (v[0].dataset, v[0].granularity, v[0].queries) for k, v in by_key.items()}
    shared = Counter(triples.values())
    titles = _variant_titles([k for k, t in triples.items() if shared[t] > 1])
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for key, group in by_key.items():
        d, g, q = triples[key]
        label = q if key not in titles else f"{q}; {titles[key]}"
        slot: dict[str, Any] = {"selection": {}, "systems": {}, "provenance": {}, "backbones": {}}
        for r in group:  # oldest first: later runs overwrite earlier ones
            for name, groups in r.metrics.selection.items():
                slot["selection"][name] = (groups, r.run_id)
            if r.system and r.metrics.probes is not None:
                k2 = (r.system, r.backbone_label)
                slot["backbones"][k2[1]] = r.backbone_key
                prev = slot["systems"].get(k2)
                # A qa run and a summary run of the same cell fill different fields.
                probes = r.metrics.probes
                merged = prev[0].merged(probes) if prev else probes
                ids = ([*prev[1].split(", ")] if prev else []) + [r.run_id]
                slot["systems"][k2] = (merged, ", ".join(ids))
        used = {rid for _, rid in slot["selection"].values()} | {
            rid for _, rids in slot["systems"].values() for rid in rids.split(", ")
        }
        slot["provenance"] = {r.run_id: r.samples_sha256 for r in group if r.run_id in used}
        slot["turn_gold"] = group[0].turn_gold if g == "turn" and q != "built" else None
        out[(d, g, label)] = slot
    return out


def _provenance_md(provenance: dict[str, str | None]) -> str:
    rows = sorted(provenance.items())
    lines = [
        "## Provenance",
        "",
        "Every run above, with the sha256 of its `samples.jsonl` (per-sample rows stay in",
        "`results/runs/<run-id>/`; the run's manifest, metrics and config are committed under",
        "`results/published/<run-id>/`).",
        "",
        "| run id | samples.jsonl sha256 |",
        "|---|---|",
    ]
    lines += [f"| `{rid}` | `{sha or '-'}` |" for rid, sha in rows]
    return "\n".join(lines) + "\n"


def render(
    runs: list[RunRecord], *, protocol: int = PROTOCOL_VERSION, title: str | None = None
) -> tuple[str, str, set[str]]:
    """Markdown, CSV and the run ids they name, from the published runs of ``protocol``
    (``title`` replaces the Markdown's first line: the archive's)."""
    from chronobench.leaderboard.tables import render_csv, render_markdown

    # Small language models on CPU have their own section, never the tables'.
    small = [r for r in runs if r.small_llm and r.published and r.protocol == protocol]
    runs = [r for r in runs if not r.small_llm]
    tracks = registered_tracks()
    bench = [r for r in runs if r.task_kind in tracks and tracks[r.task_kind].tables]
    tables = build_tables(bench, protocol=protocol)
    md = render_markdown(tables).rstrip("\n") + "\n\n"
    head, rest = md.split("\n", 1)
    if title is None:
        title = (
            f"{head}\n\nEvery row was made under system protocol {protocol} "
            "([docs/protocol.md](../docs/protocol.md)): a system sees the stream's writes, the "
            "rollback request text and the question texts, nothing of the gold. Runs published "
            "under an older protocol are kept apart in [ARCHIVE.md](ARCHIVE.md)."
        )
    md = title.rstrip("\n") + "\n" + rest
    ids = {rid for slot in tables.values() for rid in slot["provenance"]}
    provenance = {rid: sha for slot in tables.values() for rid, sha in slot["provenance"].items()}
    ours = [r for r in runs if r.published and r.protocol == protocol]
    # Each track with a section renders it from its runs (a kind without one, or no
    # longer registered, is not published); sections in the order of the kinds' names.
    for kind in sorted({r.task_kind for r in ours} & set(tracks)):
        mine = [r for r in ours if r.task_kind == kind]
        section, named = tracks[kind].board_section(mine)
        if section:
            md += section.rstrip("\n") + "\n\n"
            ids |= set(named)
            provenance.update({r.run_id: r.samples_sha256 for r in mine if r.run_id in named})
    if small:
        from chronobench.tracks.small_llm.board import small_llm_section

        section, named = small_llm_section(small)
        md += section.rstrip("\n") + "\n\n"
        ids |= set(named)
        provenance.update({r.run_id: r.samples_sha256 for r in small if r.run_id in named})
    md += _provenance_md(provenance)
    return md, render_csv(tables), ids


def registered_tracks() -> dict[str, Any]:
    """task kind -> its track's :class:`~chronobench.runner.task_kind.TaskKind` (plug-in
    tracks included: loading one imports its declaration, not its runner)."""
    from chronobench.runner.components import TASKS
    from chronobench.runner.task_kind import as_task_kind

    return {e.name: as_task_kind(e.load()) for e in TASKS.entries()}


def with_audit(md: str, folder: Path) -> str:
    """``md`` with the audit section (:mod:`chronobench.leaderboard.audit`) before its
    first section, so every headline's audit is read before the headline, and each
    headline's audit line under its own section's heading."""
    from chronobench.leaderboard.audit import audit_section, with_audit_lines

    md = with_audit_lines(md, folder)
    head, sep, rest = md.partition("\n## ")
    if not sep:
        return md.rstrip("\n") + "\n\n" + audit_section(folder)
    return head.rstrip("\n") + "\n\n" + audit_section(folder) + "\n## " + rest


def named_run_ids(md_path: Path) -> set[str]:
    """Run ids an existing leaderboard file names."""
    if not md_path.is_file():
        return set()
    return set(_RUN_ID_RE.findall(md_path.read_text(encoding="utf-8")))


def write_leaderboard(
    results_dir: Path, *, force: bool = False, only: set[str] | None = None
) -> Path:
    """Rebuild ``LEADERBOARD.md`` / ``.csv`` in ``results_dir`` and sync
    ``results_dir/published``; returns the .md path.

    Default: published + local runs (``only``: just these local run ids), refusing
    (LeaderboardShrinkError) to name fewer runs than the current file. ``force``: local
    runs only, shrinking allowed.
    """
    results_dir = Path(results_dir).resolve()
    runs = collect_runs(results_dir, local=True, published=not force, only=only)
    # Runs whose embeddings follow the CPU never reach the board; like the
    # older protocol's below, they do not count as rows the rebuild would lose.
    cpu_bound = {r.run_id for r in runs if not r.machine_independent}
    if cpu_bound:
        print(
            f"leaderboard: {len(cpu_bound)} run(s) embedded on a CPU-dependent runtime "
            "(onnx_int8 or float32 torch) left off the board (docs/reproducibility.md)"
        )
    runs = [r for r in runs if r.run_id not in cpu_bound]
    md, csv_text, ids = render(runs)
    md = with_audit(md, results_dir / "audit")
    md_path = results_dir / "LEADERBOARD.md"
    # Published runs of an older protocol leave the board for the archive: they do not
    # count as rows the rebuild would lose.
    old = [r for r in collect_runs(results_dir, local=False, warn=False) if _archivable(r)]
    before = named_run_ids(md_path) - {r.run_id for r in old} - cpu_bound
    if not ids and not force:
        raise LeaderboardShrinkError(
            f"no finished published runs under {results_dir / 'runs'} or "
            f"{results_dir / PUBLISHED_DIR} (fixture, smoke and debug runs are never "
            "published); nothing was written"
        )
    if not force and len(ids) < len(before):
        where = results_dir / "runs"
        raise LeaderboardShrinkError(
            f"{md_path} names {len(before)} runs; rebuilding from {where} and "
            f"{results_dir / PUBLISHED_DIR} would name {len(ids)}. Nothing was written. Run "
            "the main job (`python -m chronobench run`) first, or pass --force to replace "
            "the file with the local runs only"
        )
    _archive(results_dir, old)
    small = [r for r in runs if r.small_llm and r.run_id in ids]
    if small:
        from chronobench.tracks.small_llm.board import write_speed

        write_speed(results_dir, small)
    _write_if_different(md_path, md)
    _write_if_different(results_dir / "LEADERBOARD.csv", csv_text)
    _sync_published(results_dir, runs, ids)
    return md_path


def _archivable(r: RunRecord) -> bool:
    return r.published and r.protocol != PROTOCOL_VERSION


_ARCHIVE_NOTE = (
    "Runs published under system protocol {p}, kept for reference and re-scorable with\n"
    "`python -m chronobench score`, never mixed with the rows of [LEADERBOARD.md](LEADERBOARD.md).\n"
    "{why}\n"
)
_PROTOCOL_WHY = {
    1: "Under protocol 1 a system received the whole rollback query, gold target, probe kinds,\n"
    "answers and references included; these figures are not comparable with protocol 2's.",
    2: "Under protocol 2 a query's questions were drawn around its target version (75% from\n"
    "the sessions at v* and after it), the system's own final answers chose which of its\n"
    "probes counted, and every recall statement was true: a policy reading the questions,\n"
    "not the request, scored above the oracle. Not comparable with protocol 3's figures.",
}


def _archive(results_dir: Path, moving: list[RunRecord]) -> None:
    """Copy ``moving`` (published runs of older protocols) into the archive and rewrite
    ``ARCHIVE.md`` from every archived run (``_sync_published`` then drops them from
    ``published/``)."""
    for r in moving:
        dest = results_dir / ARCHIVE_DIR / f"protocol-{r.protocol}" / r.run_id
        for name in (MANIFEST_FILE, METRICS_FILE, CONFIG_FILE):
            src = r.folder / name
            if src.is_file():
                atomic_write_text(dest / name, src.read_text(encoding="utf-8"))
    runs = archived_runs(results_dir)
    if not runs or (not moving and (results_dir / ARCHIVE_FILE).is_file()):
        # Nothing new to archive: the archive keeps the labels and definitions of the
        # board it was cut from (a later metric's title must not relabel old figures).
        return
    parts = []
    for p in sorted({r.protocol for r in runs}):
        why = _PROTOCOL_WHY.get(p, "")
        title = f"# chronobench archive: system protocol {p}\n\n" + _ARCHIVE_NOTE.format(
            p=p, why=why
        )
        md, _, _ = render(runs, protocol=p, title=title)
        parts.append(md.rstrip("\n") + "\n")
    atomic_write_text(results_dir / ARCHIVE_FILE, "\n".join(parts))


#: What ``results/published/<run-id>/`` keeps of a run beside its ``volatile.json`` and its
#: compact per-query file (``queries.jsonl.gz``, the viewer's drill-down): the identity
#: files, byte-stable across reruns of the same code (samples stay local).
PUBLISHED_FILES = (MANIFEST_FILE, METRICS_FILE, CONFIG_FILE)


def _sync_published(results_dir: Path, runs: list[RunRecord], ids: set[str]) -> None:
    """Copy the named runs' small files into ``published/`` and drop superseded ones.

    A file whose bytes are already there is not rewritten, and ``volatile.json`` (when,
    by which commit, how fast) is copied only with a change to the identity files (or
    when there is none yet): rerunning the same code leaves every committed file as it
    was, and the published volatile file names the run that first made these results.
    """
    pub = results_dir / PUBLISHED_DIR
    for r in runs:
        if r.run_id not in ids:
            continue
        dest = pub / r.run_id
        if dest.resolve() == r.folder.resolve():
            continue
        changed = False
        for name in PUBLISHED_FILES:
            src = r.folder / name
            if src.is_file():
                changed |= _copy_if_different(src, dest / name)
        # The drill-down's per-query file (binary: gzip), byte-stable like the others.
        src = r.folder / QUERIES_FILE
        if src.is_file():
            changed |= _copy_bytes_if_different(src, dest / QUERIES_FILE)
        src = r.folder / VOLATILE_FILE
        if src.is_file() and (changed or not (dest / VOLATILE_FILE).is_file()):
            _copy_if_different(src, dest / VOLATILE_FILE)
    if pub.is_dir():
        for folder in pub.iterdir():
            if folder.is_dir() and folder.name not in ids:
                shutil.rmtree(folder)  # superseded by a newer run of the same table cell


def _write_if_different(path: Path, text: str) -> None:
    # An unchanged committed file is left alone (not even its mtime moves).
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        atomic_write_text(path, text)


def _copy_if_different(src: Path, dest: Path) -> bool:
    """Write ``src``'s text to ``dest`` unless it already holds it; True when written."""
    text = src.read_text(encoding="utf-8")
    if dest.is_file() and dest.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(dest, text)
    return True


def _copy_bytes_if_different(src: Path, dest: Path) -> bool:
    data = src.read_bytes()
    if dest.is_file() and dest.read_bytes() == data:
        return False
    atomic_write_bytes(dest, data)
    return True


def publish_after_run(results_dir: Path, run_ids: set[str] | None = None) -> Path | None:
    """The leaderboard step of ``run``: the published runs plus the runs just made
    (``run_ids``; other local folders are left to ``chronobench leaderboard``). Rebuilds,
    or says why not (never an error)."""
    try:
        md = write_leaderboard(results_dir, only=run_ids)
    except LeaderboardShrinkError as exc:
        print(f"leaderboard not rewritten: {exc}")
        return None
    n_local = sum(
        1
        for r in collect_runs(results_dir, published=False, warn=False, only=run_ids)
        if not r.published
    )
    print(f"leaderboard written: {md} and {md.with_suffix('.csv')}")
    print(f"published run files: {md.parent / PUBLISHED_DIR}")
    if n_local:
        print(f"({n_local} fixture/debug run(s) are not published in the leaderboard)")
    return md


__all__ = [
    "ARCHIVE_DIR",
    "PUBLISHED_DIR",
    "RunRecord",
    "archived_runs",
    "build_tables",
    "collect_runs",
    "dump_json",
    "write_leaderboard",
]
