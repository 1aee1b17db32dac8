"""Shared fixtures: repository paths, the real LoCoMo file, Hydra's compose API, the tiny
built dataset, the packaged MiniLM and cells run by the runner on the tiny fixture.

LoCoMo is never committed; tests read it from ``$CHRONOBENCH_LOCOMO`` or
``../shared/data/locomo10.json``. Locally a missing file skips those tests with the
reason; under CI (``CI`` set) a missing file fails them, because CI must run them.

Session-scoped fixtures hand out shared objects and folders: tests read them and copy
before they change anything.
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = REPO_ROOT / "configs"
TINY_LOCOMO = REPO_ROOT / "tests" / "fixtures" / "locomo_tiny.json"


def find_locomo() -> Path | None:
    """The LoCoMo file for tests, or None."""
    env = os.environ.get("CHRONOBENCH_LOCOMO")
    if env and Path(env).is_file():
        return Path(env)
    shared = REPO_ROOT.parent / "shared" / "data" / "locomo10.json"
    return shared if shared.is_file() else None


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker gets its share of the CPUs for torch and BLAS
    (unless the variables are set), as the runner gives its own workers
    (chronobench.runner.parallel): two workers with every CPU's worth of threads each
    preempt each other's threads mid-operation (the embedding model's matrix products
    spin-wait for their sibling threads). Set before any test imports torch; results do
    not depend on it (tests/test_runner_e2e.py compares two-worker and one-process runs
    byte for byte)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not workers:
        return
    from chronobench.runner.parallel import THREAD_VARIABLES

    share = max(1, (os.cpu_count() or 1) // max(1, int(workers)))
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(share))


# The longest files, longest first (by their time in CI logs and loaded runs, relative).
# Under ``-n 2`` the run ends when the last file taken ends, so these start first; a
# file missing here is only scheduled later, never skipped.
LONGEST_FILES = (
    "test_audit_rq2.py",
    "test_smollm2.py",
    "test_runner_e2e.py",
    "test_protocol3.py",
    "test_request_blind_floors.py",
    "test_audit_rq3.py",
    "test_builders_locomo.py",
    "test_published_specs.py",
    "test_offline_generation.py",
    # Long by docs/setup.md, not measured against the ones above.
    "test_reproducible_numerics.py",
    "test_viewer_browser.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadfile``) whole files go to the workers in
    collection order as each frees up (pyproject sets ``--no-loadscope-reorder``: xdist
    would otherwise sort files by their number of tests, which put the one-test RQ2 audit
    last), so a long file taken last leaves the other core idle: the files of
    :data:`LONGEST_FILES` go first in that order, then the other files holding a ``slow``
    test, then the rest in pytest's order. One process (no ``-n``) keeps pytest's own
    order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}

    def key(item: pytest.Item) -> tuple[int, bool]:
        return rank.get(item.path.name, len(rank)), item.path not in slow_files

    items.sort(key=key)  # stable: files stay whole


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """Path to locomo10.json; skips locally (fails in CI) when it is not there."""
    path = find_locomo()
    if path is None:
        reason = (
            "LoCoMo not found: set CHRONOBENCH_LOCOMO=/path/to/locomo10.json or place it at "
            "../shared/data/locomo10.json"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def smoke_cells() -> list[list[str]]:
    """The cells of ``experiment=smoke`` (one run folder each)."""
    import yaml

    text = (REPO_ROOT / "configs" / "experiment" / "smoke.yaml").read_text()
    return list(yaml.safe_load(text)["suite"])


def config_options(group: str) -> list[str]:
    """The option names of a config group (``configs/<group>/*.yaml``)."""
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


# ---- Hydra -----------------------------------------------------------------------------


@contextmanager
def hydra_context() -> Iterator[None]:
    """Hydra's compose API on ``configs/``; inside an active context it adds nothing."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        yield
        return
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        yield


@pytest.fixture(scope="module")
def hydra_ctx() -> Iterator[None]:
    """An initialised Hydra compose context for a test module's calls into the runner's
    composition functions."""
    with hydra_context():
        yield


_CELLS: dict[tuple[str, ...], list[tuple[dict[str, Any], dict[str, str]]]] = {}

Cells = list[tuple[dict[str, Any], dict[str, str]]]


def _compose_cells(overrides: Sequence[str]) -> Cells:
    key = tuple(overrides)
    if key not in _CELLS:
        from chronobench.runner.experiment import compose, expand_suite

        with hydra_context():
            cfg, _ = compose(list(key))
            _CELLS[key] = expand_suite(cfg, list(key))
    return copy.deepcopy(_CELLS[key])


@pytest.fixture(scope="session")
def compose_cells() -> Callable[[Sequence[str]], Cells]:
    """``compose_cells(overrides)``: ``(resolved config, group choices)`` of every cell that
    ``python -m chronobench run <overrides>`` runs (composed once per session; each call
    returns fresh copies)."""
    return _compose_cells


# ---- the tiny fixture, built and run ----------------------------------------------------


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Session folders of the tiny-fixture runs: results, built data, caches."""
    base = tmp_path_factory.mktemp("tiny")
    return {name: base / name for name in ("results", "data", "cache")}


def _tiny_config(compose: Callable[[Sequence[str]], Cells], dirs: dict[str, Path], *extra: str):
    ((cfg, choices),) = compose(
        ["experiment=single", "dataset=tiny", "progress=false", "leaderboard=false", *extra]
    )
    cfg["paths"] = {
        "results_dir": str(dirs["results"]),
        "data_dir": str(dirs["data"]),
        "cache_dir": str(dirs["cache"]),
    }
    return cfg, choices


@pytest.fixture(scope="session")
def tiny_built_dir(compose_cells, tiny_dirs) -> Path:
    """The tiny LoCoMo fixture built exactly as ``dataset=tiny`` builds it for a run (the
    runner's folder: cells run by :func:`tiny_run` reuse it)."""
    from chronobench.runner.datasets import load_run_data
    from chronobench.spec import spec_from_config

    cfg, choices = _tiny_config(compose_cells, tiny_dirs)
    spec = spec_from_config(cfg, choices=choices)
    return load_run_data(spec.dataset, spec.paths.data_dir).folder


@pytest.fixture(scope="session")
def tiny_built(tiny_built_dir: Path) -> Any:
    """The tiny built dataset (a :class:`~chronobench.data.io.BuiltDataset`; read only)."""
    from chronobench.data.io import load_built

    return load_built(tiny_built_dir)


@pytest.fixture(scope="session")
def tiny_run(compose_cells, tiny_dirs, tiny_built_dir) -> Callable[..., Path]:
    """``tiny_run(*overrides)``: the folder of a cell the runner ran on ``dataset=tiny``
    with those overrides (run once per session; copy the folder before changing it)."""
    from chronobench.runner.cell import run_cell

    done: dict[tuple[str, ...], Path] = {}

    def run(*overrides: str) -> Path:
        if overrides not in done:
            cfg, _ = _tiny_config(compose_cells, tiny_dirs, *overrides)
            done[overrides] = run_cell(cfg)
        return done[overrides]

    return run


# The built folder of each shared dataset, per test process (see across_workers).
SHARED_BUILDS: dict[str, Path] = {}


@contextmanager
def across_workers(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """A folder ``name`` shared by every pytest-xdist worker of this run (the run's own
    temp root), held under an exclusive lock: the first worker builds into it, the others
    wait and then find it built. Without xdist it is one process's folder."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/, above each worker's popen-gwK/
    folder = base / f"shared-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def locomo_session_data(
    compose_cells, tmp_path_factory: pytest.TempPathFactory, locomo_path: Path
) -> Path:
    """A data folder holding the real LoCoMo built as ``dataset=locomo_session`` builds it
    for a run (the RQ2/RQ3 audits' data). Building it takes about 15 s of CPU, so it is
    built once per test run and shared by the workers: pass it as a run's or an audit's
    data folder (the runner finds it built and only reads it) or read
    :func:`locomo_session_built`; copy before changing anything."""
    from chronobench.runner.components import normalised_dataset
    from chronobench.runner.datasets import ensure_built
    from chronobench.spec import spec_from_config

    ((cfg, choices),) = compose_cells(["experiment=single", "dataset=locomo_session"])
    with across_workers(tmp_path_factory, "locomo-session") as data_dir:
        cfg["paths"] = {"results_dir": str(data_dir / "unused"), "data_dir": str(data_dir)}
        # Normalised as a cell normalises it (the builder's defaults filled in): the
        # build folder's key hashes the params, so the cells given this folder find
        # this build instead of building the same files again under another key.
        spec = normalised_dataset(spec_from_config(cfg, choices=choices), choices)
        # Runs given this folder may build other variants beside it: remember which
        # build is this one.
        SHARED_BUILDS["locomo-session"] = Path(ensure_built(spec.dataset, spec.paths.data_dir))
    return data_dir


@pytest.fixture(scope="session")
def locomo_session_built(locomo_session_data: Path) -> Any:
    """The real LoCoMo at session granularity (a loaded
    :class:`~chronobench.data.io.BuiltDataset`; read only)."""
    from chronobench.data.io import load_built

    folder = SHARED_BUILDS["locomo-session"]
    assert folder.is_relative_to(locomo_session_data), folder
    return load_built(folder)


@pytest.fixture
def copy_run() -> Callable[[Path, Path], Path]:
    """``copy_run(folder, results_dir)``: a copy of a run folder under ``results_dir/runs``."""

    def copy_to(folder: Path, results_dir: Path) -> Path:
        dest = Path(results_dir) / "runs" / folder.name
        shutil.copytree(folder, dest, dirs_exist_ok=True)
        return dest

    return copy_to


# ---- models ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The packaged all-MiniLM-L6-v2 embedder, loaded once per session (the same shared
    object ``embedder: minilm`` gives a run in this process)."""
    from chronomem import resolve_embedder

    emb = resolve_embedder("minilm")
    emb.encode(["warm up"])
    return emb


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer random GPT-2 with a word-level tokenizer saved locally (no downloads)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from _backbones_fixtures import save_tiny_causal_lm

    return save_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


# ---- PostgreSQL (see tests/pg_server.py) ------------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server ($CHRONOBENCH_PG_URL, else a throwaway cluster)."""
    from tests.pg_server import Server

    server = Server()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """URL of a fresh, empty database for this test (dropped afterwards)."""
    from tests.pg_server import fresh_database

    with fresh_database(pg_server.admin_url()) as url:
        yield url


@pytest.fixture(scope="module")
def pg_cluster():
    """A private throwaway cluster for tests that restart it or read its data files."""
    from tests.pg_server import private_cluster

    cluster = private_cluster()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def each_backend(request):
    """Run the test on SQLite, then on PostgreSQL (see tests/_memory_fixtures.py)."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    from tests import _memory_fixtures as mf
    from tests.pg_server import fresh_database

    with fresh_database(request.getfixturevalue("pg_server").admin_url()) as url:
        mf.LOCATION.update(backend="postgres", url=url)
        try:
            yield "postgres"
        finally:
            mf.LOCATION.update(backend="sqlite", url=None)
            _detach_server_caches()


@pytest.fixture
def on_postgres(request):
    """Run the test on PostgreSQL only (e.g. a unittest-style class)."""
    from tests import _memory_fixtures as mf
    from tests.pg_server import fresh_database

    with fresh_database(request.getfixturevalue("pg_server").admin_url()) as url:
        mf.LOCATION.update(backend="postgres", url=url)
        try:
            yield url
        finally:
            mf.LOCATION.update(backend="sqlite", url=None)
            _detach_server_caches()


def _detach_server_caches() -> None:
    """Stores a test left open keep their embedder's cache on the test database; it is
    dropped now, so no later test may read through it."""
    from chronomem import embedders
    from chronomem.pg.vectors import PgVectors

    for cache in embedders.shared_caches():
        if isinstance(cache.persistent, PgVectors):
            cache.persistent.close()
            cache.persistent = None
