"""Print the repair plan of one benchmark case: what happens to every node, and why.

``python -m chronobench.tracks.repair.explain controlled-007 [--json] [--seed 0]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def explain(case_id: str, *, seed: int = 0, as_json: bool = False) -> str:
    """The plan for ``case_id`` ("controlled-N", "stress-N", "earned_controlled-N" or
    "earned_stress-N") on the offline agent."""
    from chronobench.tracks.repair.cases import SET_BUILDER, agent_view, default_params, make_case
    from chronobench.tracks.repair.context import resolve_faults, run_failed
    from chronobench.tracks.repair.planner import plan_repair
    from chronobench.tracks.repair.policy import RepairPolicyBackbone
    from chronobench.tracks.repair.provenance import load_graph
    from chronomem import ChronoMem

    subset, _, index = case_id.partition("-")
    if subset not in SET_BUILDER or not index.isdigit():
        raise ValueError(
            f"case id {case_id!r}: expected " + " or ".join(f"{name}-<n>" for name in SET_BUILDER)
        )
    case = make_case(seed, subset, int(index))
    with ChronoMem(":memory:", embedder="hash") as mem:
        run_failed(mem, agent_view(case), RepairPolicyBackbone(), default_params(seed))
        graph = load_graph(mem, case["app"], case["user"])
        plan = plan_repair(graph, resolve_faults(graph, case["diagnosed"]))
    if as_json:
        return plan.to_json()
    faults = ", ".join(
        f"{f['record']} ({f['type']}, {f['family']}, {f['slot']})" for f in case["faults"]
    )
    head = [f"case {case_id}: {case['domain']}; faults {faults}; diagnosed {case['diagnosed']}",
            f"failed answer: {case['failed']['answer']}", f"gold answer:   {case['gold']['answer']}",
            "(the plan; at execution the value check keeps the recorded output of a planned session "
            "or step whose read values are unchanged: the run's notes list them)"]  # fmt: skip
    return "\n".join([*head, str(plan)])


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(
        prog="python -m chronobench.tracks.repair.explain", description=__doc__
    )
    ap.add_argument("case_id")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = ap.parse_args(argv)
    try:
        print(explain(args.case_id, seed=args.seed, as_json=args.json))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
