"""Shared helpers for tests that run systems as the runner runs them (the sealed protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ALL_KINDS = frozenset({"qa", "future_qa", "final_qa", "summary"})


def build_tiny(out_dir: Path, repo_root: Path | None = None) -> Any:
    """The tiny LoCoMo-shaped fixture, built as experiment=smoke builds it."""
    from chronobench.data.io import load_built
    from data_builders import LOCOMO, build_dataset

    root = repo_root or Path(__file__).resolve().parents[1]
    folder = build_dataset(
        LOCOMO,
        granularity="session",
        source=root / "tests" / "fixtures" / "locomo_tiny.json",
        out_dir=out_dir,
        max_queries_per_stream=6,
        max_answerable=2,
        max_future=2,
    )
    return load_built(folder)


def run_data(built: Any) -> Any:
    """A :class:`chronobench.runner.datasets.RunData` over a loaded built dataset."""
    from chronobench.runner.datasets import RunData

    return RunData(
        name="locomo",
        granularity="session",
        folder=Path(built.path),
        streams=list(built.streams),
        queries=list(built.queries),
        manifest_sha256="test",
        manifest=dict(built.manifest),
    )


def run_system(
    built: Any,
    system: Any,
    log_path: Path,
    *,
    oracle: bool = False,
    kinds: frozenset[str] = ALL_KINDS,
    seed: int = 0,
    backbone: Any = None,
) -> list[Any]:
    """Run ``system`` through the runner's generation loop (extractive backbone); returns
    the typed sample records it wrote."""
    from chronobench.backbones.extractive import ExtractiveBackbone
    from chronobench.results.io import SampleLog
    from chronobench.runner.generation import run_generation

    log = SampleLog(log_path)
    run_generation(
        run_data(built),
        system,
        backbone or ExtractiveBackbone(),
        log,
        set(),
        kinds=set(kinds),
        chunk_size=0,
        progress=False,
        oracle=oracle,
        seed=seed,
    )
    return log.read_records()


def make_system(name: str, stores: Any, **options: Any) -> Any:
    """A registered system with the default generation parameters."""
    from chronobench.protocols import GenerationParams
    from chronobench.systems import SystemContext, create_system

    return create_system(name, SystemContext(params=GenerationParams(), stores=stores), **options)
