"""``python -m chronobench verify``: re-run a preset's published cells and compare.

Each preset (``--preset NAME``, repeatable; the main job by default; ``all``: every preset
that publishes) is run again in a child process, into a temporary results folder with
empty caches (the call cache and the embedding cache: re-scoring, or vectors read back
from a cache, could not show a drift in the embeddings), then every figure of every
re-run cell is compared with its published copy (:mod:`chronobench.leaderboard.verify`).
Exit 0 when every figure is identical, or within the tolerance the preset states
(``verify_tolerance``); 1 when a figure differs or a re-run cell has no published copy; 2
on a usage or re-run error. A preset whose config sets ``reproducible: false`` is skipped
with a line saying so.

``--cell RUN_ID`` re-runs one published cell (its preset's suite cut to that cell,
found by the spec hash its manifest records) and compares its figures alone.

``--isa LEVEL`` holds the child to an instruction-set level of
:mod:`chronomem.isa` (``native``, ``avx2``, ``baseline``): how the published
figures are checked against another CPU on one machine (docs/reproducibility.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _presets(config_dirs: Sequence[Path]) -> list[str]:
    """Every experiment preset name, the main job (``default``) first."""
    names = {p.stem for d in config_dirs for p in (d / "experiment").glob("*.yaml")}
    return sorted(names, key=lambda n: (n != "default", n))


def _composed(preset: str) -> dict[str, Any]:
    from hydra import initialize_config_dir

    from chronobench.paths import config_dir
    from chronobench.runner.experiment import compose, with_config_path

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg, _ = compose(with_config_path([f"experiment={preset}"]))
    return cfg


def _rerun(preset: str, work: Path, isa: str, extra: Sequence[str]) -> tuple[int, float]:
    """Run ``preset`` in a child process into ``work``; (exit code, seconds)."""
    from chronomem.isa import level_env

    cmd = [
        sys.executable, "-m", "chronobench", "run", f"experiment={preset}",
        f"paths.results_dir={work / 'results'}", f"paths.cache_dir={work / 'cache'}",
        "publish=false", "leaderboard=false", *extra,
    ]  # fmt: skip
    env = level_env(isa)
    env.pop("CHRONOBENCH_RESULTS", None)
    env.pop("CHRONOBENCH_CACHE", None)
    t0 = time.perf_counter()
    code = subprocess.run(cmd, env=env, check=False).returncode
    return code, time.perf_counter() - t0


def suite_override(cell: Sequence[str]) -> str:
    """``suite=[['a=1','b=2']]``: a suite of exactly this cell, as a Hydra override."""

    def quoted(o: str) -> str:
        return "'" + o.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return "suite=[[" + ",".join(quoted(str(o)) for o in cell) + "]]"


def _sketch(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """Fields of a recorded spec that normalising never changes."""

    def at(*keys: str) -> Any:
        node: Any = spec
        for k in keys:
            node = node.get(k) if isinstance(node, Mapping) else None
        return node

    return (at("system", "name"), at("task", "kind"), at("dataset", "name"),
            at("dataset", "granularity"), at("backbone", "name"), at("dataset", "queries_file"))  # fmt: skip


def find_cell(run: str, results: Path, presets: Sequence[str]) -> tuple[str, str, list[str]]:
    """``(run id, preset, the cell's overrides)`` of the published run ``run`` (its id
    or a unique part of it): the preset cell whose spec hashes to the one its manifest
    records, so the re-run is that cell exactly."""
    import json

    from hydra import initialize_config_dir

    from chronobench.errors import ResultsError, is_expected
    from chronobench.paths import config_dir
    from chronobench.runner.components import resolve_cell
    from chronobench.runner.experiment import compose, expand_suite, with_config_path
    from chronobench.spec import spec_from_config, spec_sha256

    published = results / "published"
    ids = sorted(p.name for p in published.glob(f"*{run}*") if (p / "manifest.json").is_file())
    if run in ids:
        ids = [run]
    if len(ids) != 1:
        found = f"is ambiguous: {', '.join(ids[:5])}" if ids else f"is not under {published}"
        raise ResultsError(f"verify --cell: run {run!r} {found}; give its full run id")
    run_id = ids[0]
    manifest = json.loads((published / run_id / "manifest.json").read_text(encoding="utf-8"))
    wanted = manifest.get("spec_sha256")
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        for preset in presets:
            args = with_config_path([f"experiment={preset}"])
            cfg, _ = compose(args)
            if not cfg.get("publish", False):
                continue
            cells = [[str(o) for o in c] for c in (cfg.get("suite") or [])] or [[]]
            for cell, (resolved, choices) in zip(cells, expand_suite(cfg, args), strict=True):
                plain = spec_from_config(resolved, choices=choices)
                if _sketch(plain.recorded()) != _sketch(manifest.get("spec") or {}):
                    continue  # resolving a cell loads its components: only likely ones
                try:  # the spec as a run records it: normalised by its components
                    spec = resolve_cell(plain, choices=choices).spec
                except Exception as exc:  # noqa: BLE001 - a cell this machine cannot run
                    if not is_expected(exc):
                        raise
                    continue
                if spec_sha256(spec) == wanted:
                    return run_id, preset, cell
    raise ResultsError(
        f"verify --cell: no cell of a publishing preset has the spec of {run_id} (a run "
        "published by hand or by a preset that changed since); verify its preset instead"
    )


def verify_preset(
    preset: str,
    results: Path,
    *,
    isa: str,
    keep: Path | None,
    every: bool,
    extra: Sequence[str],
    cell: Sequence[str] | None = None,
) -> int:
    """Re-run and compare one preset (only its cell ``cell``, when given); its exit code
    (0 same, 1 differs, 2 could not run)."""
    from chronobench.leaderboard.verify import compare, report

    if cell is not None:
        extra = [*extra, suite_override(cell)]
    cfg = _composed(preset)
    if not cfg.get("publish", False):
        print(f"verify {preset}: this preset does not publish; nothing to compare")
        return 2
    if not cfg.get("reproducible", True):
        print(f"verify {preset}: skipped (its config sets reproducible: false: volatile figures)")
        return 0
    tolerances = dict(cfg.get("verify_tolerance") or {})
    own = keep / preset if keep is not None else None
    with tempfile.TemporaryDirectory(prefix=f"chronobench-verify-{preset}-") as tmp:
        work = own or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"verify {preset}: re-running into {work} (instruction-set level {isa})", flush=True)
        code, seconds = _rerun(preset, work, isa, extra)
        if code != 0:
            print(f"verify {preset}: the re-run failed (exit code {code}) after {seconds:.0f} s")
            return 2
        result = compare(results, work / "results" / "runs", tolerances)
    for line in report(result, every_figure=every):
        print(line)
    n_bad = len(result.differing) + len(result.unpublished)
    verdict = "identical" if result.ok else f"{n_bad} differ"
    if result.ok and any(f.published != f.now for f in result.figures):
        verdict = "identical within the stated tolerances"
    if not result.runs:
        verdict = "no run finished"
    print(
        f"verify {preset}: {len(result.runs)} runs, {len(result.figures)} figures, {verdict}; "
        f"re-run {seconds:.0f} s at level {isa}",
        flush=True,
    )
    return 0 if result.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry."""
    from chronobench.commands._args import add_results_option
    from chronobench.paths import config_dir, results_dir, user_config_dirs
    from chronomem.isa import LEVELS

    parser = argparse.ArgumentParser(prog="chronobench verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--preset", action="append", default=None,
                        help="preset to re-run (repeatable): default (the main job), adk, "
                        "repair, peers, ...; all: every preset that publishes")  # fmt: skip
    add_results_option(parser, "results folder holding published/")
    parser.add_argument("--isa", choices=list(LEVELS), default="native",
                        help="instruction-set level of the re-run (default: native)")  # fmt: skip
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="re-run into KEEP/<preset> and keep it (default: a temporary folder)",
    )
    parser.add_argument("--cell", metavar="RUN_ID", default=None,
                        help="re-run only the published cell RUN_ID (or a unique part of "
                        "it) and compare its figures")  # fmt: skip
    parser.add_argument("--all-figures", action="store_true",
                        help="print every figure, not only those that differ")  # fmt: skip
    parser.add_argument("overrides", nargs="*",
                        help="extra overrides for the re-run that change no figure (jobs=2)")  # fmt: skip
    args = parser.parse_args(argv)
    dirs = [config_dir(), *user_config_dirs()]
    known = _presets(dirs)
    results = (args.results or results_dir()).resolve()
    if args.cell is not None:
        run_id, preset, cell = find_cell(args.cell, results, known)
        print(f"verify --cell {run_id}: cell [{', '.join(cell)}] of experiment={preset}")
        return verify_preset(preset, results, isa=args.isa, keep=args.keep,
                             every=args.all_figures, extra=args.overrides, cell=cell)  # fmt: skip
    wanted = args.preset or ["default"]
    if "all" in wanted:
        wanted = [p for p in known if _composed(p).get("publish", False)]
    unknown = [p for p in wanted if p not in known]
    if unknown:
        print(f"chronobench verify: unknown preset {unknown[0]!r}; choose from "
              f"{', '.join(known)} or all", file=sys.stderr)  # fmt: skip
        return 2
    worst = 0
    for preset in wanted:
        code = verify_preset(preset, results, isa=args.isa, keep=args.keep,
                             every=args.all_figures, extra=args.overrides)  # fmt: skip
        worst = max(worst, code)
    return worst
