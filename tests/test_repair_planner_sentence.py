"""The board's plain sentence on whether dependency-guided repair beats a graph-free
planner: fewer calls must not count as a win while DGR recovers less."""

from chronobench.tracks.repair.report_standing import planner_sentence

CONDITION = (("stress", "exact", "stress, exact"),)


def _runs(dgr_recovery, planner_recovery, dgr_calls, planner_calls):
    ids = [f"c{i}" for i in range(len(dgr_recovery))]

    def run(recovery, calls):
        return {"per_case": {"case_id": ids, "recovery": recovery, "backbone_calls": calls}}

    return {
        ("stress", "dgr", "exact"): run(dgr_recovery, dgr_calls),
        ("stress", "graph_free_planner", "exact"): run(planner_recovery, planner_calls),
    }


def test_fewer_calls_with_less_recovery_is_not_a_win():
    n = 20
    # One loss in 20: the paired interval reaches 0 from below, the mean is below 0.
    runs = _runs([0.0] + [1.0] * (n - 1), [1.0] * n, [1] * n, [3] * n)
    sentence = planner_sentence(runs, CONDITION)
    assert sentence.startswith("**Dependency-guided repair does not beat")
    assert "without a loss of recovery" in sentence


def test_fewer_calls_at_equal_recovery_is_a_win():
    n = 20
    runs = _runs([1.0] * n, [1.0] * n, [1] * n, [3] * n)
    assert "beats the graph-free planner only in: stress, exact" in planner_sentence(
        runs, CONDITION
    )


def test_higher_recovery_is_a_win():
    n = 20
    runs = _runs([1.0] * n, [0.0] * 5 + [1.0] * (n - 5), [2] * n, [2] * n)
    assert "only in: stress, exact" in planner_sentence(runs, CONDITION)
