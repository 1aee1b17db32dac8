"""The least work a repair needs, and the figure that charges for more (scorer side).

The repair board's claim is "the same recovery as re-running, with less re-run work".
Recovery alone cannot carry it: under exact replay every method that re-executes
enough recovers 100%, however much more it re-runs. :func:`minimal_repair` folds the
claim into one per-case figure in [0, 1]:

    recovery x (1 - recurrence) x benign preservation x min(1, needed / executed)

``needed`` is the number of steps that must run again because the fault changed what
they compute: the history sessions whose writes differ between the offline agent's
faulty and fault-free histories (each counted with its steps), and the task's args,
tool and answer steps whose outputs differ between the failed and the gold run, with
the tool step of every changed args step (it must run to know its answer is the same;
the task's own ``last_choice`` note is left out, as in benign preservation). ``executed``
is what the repair ran (history and task steps: the numerator of the replay ratio). A
repair that re-runs one step more than needed loses a little; one that drops a benign
record, leaves a fault-derived value or misses the answer loses more. It is defined by
the generator's fault-free run, never by a method's row.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NeededWork", "executed_steps", "minimal_repair", "needed_work"]


@dataclass(frozen=True)
class NeededWork:
    """What a case's repair must re-run (offline agent, exact replay)."""

    sessions: frozenset[str]  # history sessions whose writes the fault changed
    task_steps: frozenset[str]  # args / tool / answer steps whose outputs differ
    steps: int  # the sessions' steps plus the task steps
    session_steps: dict[str, int] = field(default_factory=dict)  # steps per history session


def _history_ops(case: dict[str, Any], *, clean: bool) -> tuple[dict[str, list], Counter]:
    """(session -> ops it applied, session -> its steps) of the offline agent's history,
    faulty or fault-free (the fault sessions skipped)."""
    from chronobench.tracks.repair.cases import agent_view, default_params
    from chronobench.tracks.repair.context import recorded_ops
    from chronobench.tracks.repair.history import history_steps, materialize
    from chronobench.tracks.repair.policy import RepairPolicyBackbone
    from chronobench.tracks.repair.provenance import Recorder, load_graph
    from chronobench.tracks.repair.steps import HistoryAgent
    from chronomem import ChronoMem

    view = agent_view(case)
    skip = {f["event"] for f in case["faults"]} if clean else set()
    with ChronoMem(":memory:", embedder="hash") as mem:
        agent = HistoryAgent(view, RepairPolicyBackbone(), Recorder(), default_params())
        materialize(mem, view, agent, skip=skip)
        graph = load_graph(mem, case["app"], case["user"])
    steps = Counter(s.attrs.get("event") for s in history_steps(graph))
    return recorded_ops(graph), steps


def needed_work(case: dict[str, Any]) -> NeededWork:
    """The sessions and task steps a repair of ``case`` must re-run (see module doc)."""
    faulty, steps = _history_ops(case, clean=False)
    clean, _ = _history_ops(case, clean=True)
    faults = {f["event"] for f in case["faults"]}
    sessions = frozenset(e for e in steps if e and e not in faults
                         and faulty.get(e, []) != clean.get(e, []))  # fmt: skip
    changed = {
        a["step_id"]
        for a, b in zip(case["failed"]["steps"], case["gold"]["steps"], strict=True)
        if a["role"] in ("args", "tool", "answer") and a["outputs"] != b["outputs"]
    }
    # A tool whose arguments changed must run even when it happens to answer the same.
    task = frozenset(changed | {f"tool{s[4:]}" for s in changed if s.startswith("args")})
    per = {e: int(n) for e, n in steps.items() if e}
    return NeededWork(sessions, task, sum(per[e] for e in sessions) + len(task), per)


def executed_steps(row: dict[str, Any]) -> int:
    """Steps a repaired case's method ran (history and task), from its sample row."""
    return round(row["scores"]["replay_ratio"] * row["steps_total"])


def minimal_repair(row: dict[str, Any], needed: NeededWork) -> float:
    """The per-case figure of the module doc, from a sample row of
    :func:`chronobench.tracks.repair.run.repair_case` and the case's :func:`needed_work`."""
    s = row["scores"]
    done = executed_steps(row)
    economy = min(1.0, needed.steps / done) if done else 1.0
    return s["recovery"] * (1.0 - s["recurrence"]) * s["benign_preservation"] * economy
