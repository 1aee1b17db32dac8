"""The RQ2 audit on four LoCoMo conversations, 12 queries each (``fast``): oracle and
ChronoMem through the harness, curves that fall, every attack family below ChronoMem's
interval."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chronobench.audit.contract import ATTACK_FAMILIES
from chronobench.audit.registry import AuditOptions


@pytest.mark.slow  # real LoCoMo, four conversations, two cells (180 CPU-s on a loaded machine)
def test_rq2_audit_fast_passes(locomo_session_data, tmp_path):
    from chronobench.tracks.rcqa.audit import audit

    # The call cache is content-addressed: sharing the session's (when one is set) only
    # saves time, the scores are the same.
    cache = os.environ.get("CHRONOBENCH_CACHE")
    options = AuditOptions(
        fast=True,
        results=tmp_path / "results",
        data=locomo_session_data,  # built once per test run; the audit only reads it
        cache=Path(cache) if cache else tmp_path / "cache",
    )
    (result,) = audit(options)
    assert result.track == "rq2" and result.headline == "RC-QA"
    assert result.failures() == []
    best = result.best_attacks()
    assert set(best) == set(ATTACK_FAMILIES)
    names = {a.name for a in result.attacks}
    assert {"session parity: even", "session parity: odd"} <= names
    assert any(n.startswith("falsifier rule") for n in names)
    for curve in result.curves:
        assert curve.points[0] == (0, result.oracle)
        assert curve.slope() < 0
    assert result.oracle >= result.interval.mean
