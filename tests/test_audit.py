"""The validity contract's verdict, the audit command, and RQ1's audit on small data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronobench.audit import ATTACK_FAMILIES, AUDITS, Attack, AuditOptions, Curve, HeadlineAudit
from chronobench.audit.contract import Baseline, Interval
from chronobench.audit.report import audit_table, load_audits, write_audits
from tests.conftest import REPO_ROOT


def headline(**change: object) -> HeadlineAudit:
    fields: dict[str, object] = {
        "track": "toy",
        "headline": "toy score",
        "system": "System",
        "interval": Interval(mean=0.6, lo=0.5, hi=0.7, n=10),
        "oracle_name": "gold",
        "oracle_why": "it is the gold",
        "oracle": 0.9,
        "curves": [Curve(name="extra", action="one extra", points=[(0, 0.9), (1, 0.8), (2, 0.7)])],
        "attacks": [Attack(family=f, name=f"{f} attack", score=0.2) for f in ATTACK_FAMILIES],
        "data": "toy",
    }
    fields.update(change)
    return HeadlineAudit(**fields)  # type: ignore[arg-type]


def test_a_sound_headline_passes() -> None:
    assert headline().failures() == []


def test_a_flat_or_rising_curve_fails() -> None:
    flat = Curve(name="flat", action="x", points=[(0, 0.9), (1, 0.9), (2, 0.8)])
    assert "does not fall strictly" in headline(curves=[flat]).failures()[0]
    assert not headline(curves=[]).passes


def test_an_attack_reaching_the_interval_or_the_oracle_fails() -> None:
    attacks = [Attack(family=f, name="a", score=0.2) for f in ATTACK_FAMILIES]
    attacks[0] = Attack(family="request_blind", name="blind", score=0.55)
    failures = headline(attacks=attacks).failures()
    assert any("reaches System's interval" in f for f in failures)
    attacks[0] = Attack(family="request_blind", name="blind", score=0.95)
    assert any("reaches the oracle" in f for f in headline(attacks=attacks).failures())


def test_every_family_is_run_or_declared_not_applicable() -> None:
    some = [Attack(family="request_blind", name="a", score=0.1)]
    failures = headline(attacks=some).failures()
    assert len(failures) == len(ATTACK_FAMILIES) - 1
    declared = {f: "no text" for f in ATTACK_FAMILIES if f != "request_blind"}
    assert headline(attacks=some, not_applicable=declared).passes


def test_a_system_above_its_oracle_means_the_oracle_is_no_ceiling() -> None:
    high = Interval(mean=0.95, lo=0.92, hi=0.97)
    assert any("not a ceiling" in f for f in headline(interval=high).failures())


def test_a_baseline_is_compared_beside_the_verdict_not_inside_it() -> None:
    tie = Baseline(name="planner", score=0.6, margin=Interval(mean=0.0, lo=0.0, hi=0.0))
    audit = headline(baselines=[tie])
    # A competitor inside the system's interval leaves the metric's verdict alone ...
    assert audit.passes
    # ... and the comparison and the verdict cell say plainly that it is not beaten.
    assert audit.comparison().startswith("System does not beat planner (60.0 against 60.0)")
    assert audit.verdict() == "passes; does not beat planner (60.0)"
    ahead = Baseline(name="planner", score=0.55, margin=Interval(mean=0.05, lo=0.01, hi=0.09))
    assert headline(baselines=[ahead]).verdict() == "passes; beats every baseline"
    # Unpaired, beating means lying below the system's interval.
    assert Baseline(name="b", score=0.49).beaten(Interval(mean=0.6, lo=0.5, hi=0.7))
    assert not Baseline(name="b", score=0.5).beaten(Interval(mean=0.6, lo=0.5, hi=0.7))


def test_a_baseline_above_the_oracle_breaks_the_ceiling() -> None:
    above = Baseline(name="planner", score=0.95)
    assert any("not a ceiling" in f for f in headline(baselines=[above]).failures())


def test_a_control_row_keeps_its_measured_verdict() -> None:
    attacks = [Attack(family=f, name="a", score=0.2) for f in ATTACK_FAMILIES]
    attacks[0] = Attack(family="surface_rule", name="detector", score=0.8)
    control = headline(attacks=attacks, control="its generator gives the diagnosis away")
    assert not control.passes  # labelling a control does not excuse the attack
    assert control.verdict() == "FAILS (control set, not a headline)"
    table = audit_table([control])
    assert "Control set, not a headline: its generator" in table and "A *control* row" in table


def test_the_audit_command_exits_1_on_a_failing_headline_not_on_a_control(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from chronobench.commands import audit as command

    attacks = [Attack(family="request_blind", name="blind", score=0.55)]
    rest = {f: "n/a" for f in ATTACK_FAMILIES if f != "request_blind"}
    bad = headline(attacks=attacks, not_applicable=rest)
    monkeypatch.setattr(
        "chronobench.audit.report.run_audits", lambda *_: [bad.model_copy(update={"control": "c"})]
    )
    assert command.main(["--fast", "--results", str(tmp_path)]) == 0
    monkeypatch.setattr("chronobench.audit.report.run_audits", lambda *_: [bad])
    assert command.main(["--fast", "--results", str(tmp_path)]) == 1


def test_curve_slope_is_points_per_action() -> None:
    assert Curve(name="c", action="a", points=[(0, 1.0), (2, 0.8)]).slope() == pytest.approx(-0.1)


def test_audit_files_round_trip_and_the_table_names_the_verdict(tmp_path: Path) -> None:
    good, bad = headline(), headline(track="worse", oracle=0.1)
    write_audits([good, bad], tmp_path / "audit")
    assert load_audits(tmp_path / "audit") == [good, bad]
    table = (tmp_path / "AUDIT.md").read_text()
    assert "| toy | toy score |" in table and "FAILS" in table
    assert audit_table([good]).count("passes") == 2  # the row and the verdict


def test_a_damaged_audit_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "rq9.json").write_text(json.dumps([{"track": "rq9"}]))
    with pytest.raises(ValueError, match="rq9.json"):
        load_audits(tmp_path)


def test_every_track_has_an_audit() -> None:
    assert {"rq1", "rq2", "rq3", "rq4", "repair"} <= set(AUDITS.names())


@pytest.mark.slow
def test_rq1_contract_holds_on_small_data(locomo_path: Path) -> None:
    (audit,) = AUDITS.entry("rq1").load()(AuditOptions(fast=True, results=REPO_ROOT / "results"))
    assert audit.passes, audit.failures()
    assert audit.oracle == 1.0
    assert {a.family for a in audit.attacks} == {"request_blind"}


def test_the_board_lists_each_baseline_comparison_under_the_audit_table(tmp_path: Path) -> None:
    from chronobench.leaderboard.audit import audit_section

    tie = Baseline(name="planner", score=0.6, margin=Interval(mean=0.0, lo=0.0, hi=0.0))
    write_audits([headline(), headline(track="rq9", baselines=[tie])], tmp_path / "audit")
    board = audit_section(tmp_path / "audit")
    assert "| passes; does not beat planner (60.0) |" in board
    assert "- rq9, toy score: System does not beat planner" in board
    # Tracks without baselines or controls keep the board's text as it was.
    write_audits([headline()], tmp_path / "plain")
    assert "baseline" not in audit_section(tmp_path / "plain")


def test_each_headline_section_carries_its_audit_line(tmp_path: Path) -> None:
    from chronobench.leaderboard.audit import HEADLINE_SECTIONS, with_audit_lines

    control = headline(track="rq2", headline="control score", control="a control set")
    write_audits([headline(track="rq2"), control, headline(track="rq9")], tmp_path / "audit")
    board = f"# board\n\n{HEADLINE_SECTIONS['rq2']} (x100)\n\n| a |\n\n## next\n"
    out = with_audit_lines(board, tmp_path / "audit")
    line = (
        "Audit of toy score ([AUDIT.md](AUDIT.md#rq2-toy-score)): oracle 90.0; curves fall "
        "(slope per wrong action: extra -10.00); best attack per family: request-blind 20.0 "
        "(request_blind attack), over-action 20.0 (over_action attack), fixed-text 20.0 "
        "(fixed_text attack), surface-rule 20.0 (surface_rule attack), against System 60.0 "
        "[50.0, 70.0]; verdict passes."
    )
    assert out == board.replace("(x100)\n\n", f"(x100)\n\n{line}\n\n")
    # A control is no headline, a track without a section keeps the table only, and a
    # board without the heading is left as it was.
    assert "control score" not in out and "rq9" not in out
    assert with_audit_lines("# board\n", tmp_path / "audit") == "# board\n"


def test_audit_anchors_follow_the_audit_file_headings() -> None:
    from chronobench.leaderboard.audit import audit_anchor

    same = [headline(track="rq1", headline="R@1, held-out (v3, session)")] * 2
    assert audit_anchor(same, 0) == "rq1-r1-held-out-v3-session"
    assert audit_anchor(same, 1) == "rq1-r1-held-out-v3-session-1"
    falls = headline(curves=[Curve(name="up", action="x", points=[(0, 0.5), (1, 0.6)])])
    from chronobench.leaderboard.audit import audit_line

    assert "curves do NOT all fall (up;" in audit_line(falls, "a")


def test_the_committed_board_shows_each_headline_audit_in_its_section() -> None:
    """A renamed heading would drop its audit line silently; this names it."""
    from chronobench.leaderboard.audit import HEADLINE_SECTIONS, audit_anchor, audit_line

    results = REPO_ROOT / "results"
    audits = load_audits(results / "audit")
    lines = (results / "LEADERBOARD.md").read_text(encoding="utf-8").split("\n")
    for i, audit in enumerate(audits):
        if audit.control or audit.track not in HEADLINE_SECTIONS:
            continue
        at = next(
            (j for j, x in enumerate(lines) if x.startswith(HEADLINE_SECTIONS[audit.track])), None
        )
        assert at is not None, f"no board heading {HEADLINE_SECTIONS[audit.track]!r}"
        section = lines[at + 1 : at + 8]
        assert audit_line(audit, audit_anchor(audits, i)) in section, audit.headline
