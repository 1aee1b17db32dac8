"""The sealed protocol on the repair track: a repair method (and the agent it re-runs)
never reads a case's gold."""

from __future__ import annotations

from typing import Any

import pytest


def test_repair_methods_never_read_a_cases_gold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A repair method (and the agent it re-runs) gets the agent's view of a case: the
    session log, the task and the diagnosis; faults, families and gold stay with the scorer."""
    from chronobench.tracks.repair import run as repair_run
    from chronobench.tracks.repair.cases import VISIBLE, make_case
    from chronobench.tracks.repair.methods import METHODS
    from chronobench.tracks.repair.policy import RepairPolicyBackbone

    seen: dict[str, Any] = {}
    for method, fn in list(METHODS.items()):

        def spy(ctx: Any, _fn: Any = fn, _m: str = method) -> Any:
            seen[_m] = (dict(ctx.case), ctx.runner.case)
            return _fn(ctx)

        monkeypatch.setitem(METHODS, method, spy)
    cases = [make_case(0, "controlled", 0), make_case(0, "stress", 1)]
    for case in cases:
        for method in METHODS:
            repair_run.repair_case(case, method, RepairPolicyBackbone(), 0)
            given, runner_case = seen[method]
            assert set(given) == set(VISIBLE) == set(runner_case), method
            for key in ("gold", "failed", "faults", "fault_types", "families", "records"):
                assert key not in given and key not in runner_case


def test_detectors_get_the_agents_view_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A detector sees the session log (the agent's view) and the store, never the
    generator's fault list or the benign sessions' labels."""
    from chronobench.tracks.repair import detect
    from chronobench.tracks.repair import run as repair_run
    from chronobench.tracks.repair.cases import VISIBLE, make_case
    from chronobench.tracks.repair.policy import RepairPolicyBackbone

    seen: dict[str, Any] = {}
    for name, fn in list(detect.DETECTORS.items()):

        def spy(view: Any, *args: Any, _fn: Any = fn, _n: str = name) -> Any:
            seen[_n] = dict(view)
            return _fn(view, *args)

        monkeypatch.setitem(detect.DETECTORS, name, spy)
    case = make_case(0, "stress", 3)
    for name in detect.DETECTORS:
        repair_run.repair_case(case, "dgr", RepairPolicyBackbone(), 0, diagnosis=name)
        assert set(seen[name]) == set(VISIBLE), name
        assert "benign" not in seen[name] and "faults" not in seen[name]
