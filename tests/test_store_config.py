"""The store backend config group: sqlite (default, published) and postgres (a URL)."""

from __future__ import annotations

import pytest

from chronobench.errors import ConfigError
from chronobench.spec import RunSpec, StoreSpec, spec_sha256


def _spec(**store) -> RunSpec:
    return RunSpec.model_validate(
        {
            "dataset": {"name": "locomo", "granularity": "session"},
            "system": {"name": "chronomem"},
            "backbone": {"name": "extractive", "model": "x"},
            "task": {"selection": True},
            "selectors": ["bm25"],
            **({"store": store} if store else {}),
        }
    )


def test_sqlite_is_the_default_and_leaves_run_ids_unchanged() -> None:
    assert _spec().store == StoreSpec()
    assert spec_sha256(_spec()) == spec_sha256(_spec(backend="sqlite"))
    assert "store" not in _spec().identity()


def test_postgres_runs_are_told_apart_and_never_published() -> None:
    pg = _spec(backend="postgres", url="postgresql://u:pw@h:5432/db")
    assert spec_sha256(pg) != spec_sha256(_spec())
    assert pg.identity()["store"] == "postgres" and "url" not in str(pg.identity())
    assert not pg.published and _spec().published
    assert pg.model_dump(mode="json")["store"]["url"] == "postgresql://u:***@h:5432/db"
    assert "store=postgres" in pg.describe()


def test_postgres_without_a_url_is_a_config_error() -> None:
    from chronobench.runner.components import resolve_cell

    with pytest.raises(ConfigError, match="CHRONOBENCH_PG_URL"):
        resolve_cell(_spec(backend="postgres"))
