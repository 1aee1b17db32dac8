"""Repair track, issue 30: benign untrusted sessions (the diagnosis must be earned), the
pluggable detectors and their scores."""

from __future__ import annotations

from collections import Counter

from chronobench.repair.cases import make_case
from chronobench.repair.generate import SOURCES


def _untrusted(case: dict) -> list[tuple[str, str, bool]]:
    """(kind, source phrase, is a fault) of every untrusted session of a case."""
    faults = {f["event"] for f in case["faults"]}
    out = []
    for ev in case["events"]:
        text = ev.get("input") or ""
        kind = "forwarded" if text.startswith("Forwarded from") else ev["kind"]
        if kind not in ("paste", "sync", "forwarded", "summary_job"):
            continue
        src = next((s for s in SOURCES.get(kind, ()) if s in text), "")
        out.append((kind, src, ev["event"] in faults))
    return out


def test_most_untrusted_sessions_are_benign_and_kind_or_source_alone_is_chance():
    cases = [make_case(0, "controlled", i) for i in range(45)]
    cases += [make_case(0, "stress", i) for i in range(10)]
    rows = [r for c in cases for r in _untrusted(c)]
    total, bad = Counter(), Counter()
    for kind, src, fault in rows:
        for key in (kind, (kind, src)):
            total[key] += 1
            bad[key] += fault
    share = sum(f for *_, f in rows) / len(rows)
    assert share <= 0.30  # at least 70% benign
    for key, n in total.items():
        # Every kind and every (kind, source) group holds faults at the overall rate
        # (within sampling error), so a rule on the template or the source alone does no
        # better than flagging nothing: what it flags is benign at the base rate.
        sigma = (share * (1 - share) / n) ** 0.5
        assert abs(bad[key] / n - share) < 3 * sigma + 0.02, (key, bad[key], n)
    assert {k for k, *_ in rows} == {"paste", "sync", "forwarded", "summary_job"}
