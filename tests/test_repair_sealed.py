"""The sealed protocol on the repair track: a repair method (and the agent it re-runs)
never reads a case's gold."""

from __future__ import annotations

from typing import Any

import pytest


def test_repair_methods_never_read_a_cases_gold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A repair method (and the agent it re-runs) gets the agent's view of a case: the
    session log, the task and the diagnosis; faults, families and gold stay with the scorer."""
    from chronobench.repair import run as repair_run
    from chronobench.repair.cases import VISIBLE, make_case
    from chronobench.repair.methods import METHODS
    from chronobench.repair.policy import RepairPolicyBackbone

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
