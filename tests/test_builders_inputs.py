"""Bad inputs, evidence-id repair, grammar, paraphrase validation."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from _builders_fixtures import TINY_LOCOMO

from chronobench.commands.build import main
from chronobench.data.io import load_built
from chronobench.protocols import GenerationRequest
from data_builders import (
    LOCOMO,
    DatasetError,
    build_dataset,
    paraphrase_queries,
    resolve_locomo_source,
)
from data_builders.grammar import question_descriptor
from data_builders.locomo.source import parse_evidence


def _tiny() -> list[dict]:
    return json.loads(TINY_LOCOMO.read_text())


def test_missing_file_and_wrong_shape(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        resolve_locomo_source(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sample_id": "x"}))
    with pytest.raises(DatasetError, match="bad.json: top level must be a list"):
        build_dataset(LOCOMO, source=bad, out_dir=tmp_path)
    rec = _tiny()
    del rec[0]["conversation"]["speaker_b"]
    bad.write_text(json.dumps(rec))
    with pytest.raises(
        DatasetError, match=r"bad.json: record tiny-1: field 'conversation.speaker_b'"
    ):
        build_dataset(LOCOMO, source=bad, out_dir=tmp_path)


def test_unknown_evidence(tmp_path: Path) -> None:
    rec = _tiny()
    rec[0]["qa"][1]["evidence"] = ["D9:99"]
    bad = tmp_path / "ev.json"
    bad.write_text(json.dumps(rec))
    with pytest.raises(
        DatasetError, match=r"ev.json: record tiny-1 qa\[1\]: field 'evidence'.*D9:99"
    ):
        build_dataset(LOCOMO, source=bad, out_dir=tmp_path, strict=True)
    ds = load_built(build_dataset(LOCOMO, source=bad, out_dir=tmp_path))
    assert ds.manifest["skipped"] == {"qa:unknown_evidence": 1}


def test_parse_evidence_repairs() -> None:
    assert parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05"]) == (
        ["D8:6", "D9:17", "D11:26", "D30:5"],
        [],
    )
    assert parse_evidence(["D"]) == ([], ["D"])


def test_question_descriptor() -> None:
    assert question_descriptor("When did Caroline go to the LGBTQ support group?") == (
        "clause",
        "Caroline went to the LGBTQ support group",
    )
    assert question_descriptor("What did Melanie and her family do while camping?") == (
        "topic",
        "what Melanie and her family did while camping",
    )
    assert question_descriptor("Would Melanie like the book?") is None


def test_cli_stats_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locomo", "--source", str(TINY_LOCOMO), "--out", str(tmp_path), "--stats"]) == 0
    out = capsys.readouterr().out
    assert "queries by intent" in out and "dropped anchors" in out and "probes by kind" in out
    assert main(["locomo", "--source", str(tmp_path / "missing.json")]) == 2
    assert "not found" in capsys.readouterr().err


class _Scripted:
    name = "scripted"
    model = "echo"

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = outputs
        self.seen: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        self.seen.extend(requests)
        return self.outputs[: len(requests)]


def test_paraphrase_validates_and_falls_back(tmp_path: Path) -> None:
    ds = load_built(build_dataset(LOCOMO, source=TINY_LOCOMO, out_dir=tmp_path))
    qs = copy.deepcopy(ds.queries[:4])
    bb = _Scripted(
        ["Please go back to before Ada got her kitten.", "", "Back to May the 3rd.", "x " * 400]
    )
    out = paraphrase_queries(qs, bb)
    assert all(r.task == "paraphrase" for r in bb.seen)
    assert out[0].source == "paraphrase" and out[0].meta["template_text"] == qs[0].text
    assert [q.meta.get("paraphrase_rejected") for q in out[1:]] == ["empty", "digits", "too_long"]
    assert [q.text for q in out[1:]] == [q.text for q in qs[1:]]
    both = paraphrase_queries(
        qs, _Scripted(["Rewind to just after Ada adopted the cat."] * 4), keep_template=True
    )
    assert len(both) == 8 and both[1].query_id.endswith("/para")


def test_build_command_passes_only_the_flags_given(monkeypatch, tmp_path):
    """The build defaults are the builder's only (issue 29): `build mab` without
    --revision builds the pinned commit, not the hub's moving `main`."""
    import chronobench.commands.build as cmd
    from data_builders import MAB

    calls = []

    def fake_build(dataset, **kwargs):
        calls.append((dataset.name, kwargs))
        return tmp_path

    monkeypatch.setattr(cmd, "build_dataset", fake_build)
    assert cmd.main(["mab", "--split", "Accurate_Retrieval", "--out", str(tmp_path)]) == 0
    assert cmd.main(["locomo", "--max-boundary", "4", "--out", str(tmp_path)]) == 0
    (_, mab), (_, locomo) = calls
    # The rest are MabParams' defaults, the pinned commit among them.
    assert set(mab) == {"split", "granularity", "source", "out_dir", "force"}
    assert "revision" not in mab and len(MAB.defaults()["revision"]) == 40
    assert locomo["max_boundary"] == 4 and "seed" not in locomo and "strict" not in locomo
    parser = cmd._parser(cmd._datasets())
    mab_help = parser._subparsers._group_actions[0].choices["mab"].format_help()
    assert f"(default: {MAB.defaults()['revision']})" in " ".join(mab_help.split())
    # A revision the run's check rejects, the build rejects too (one rule: MabParams).
    with pytest.raises(DatasetError, match="'revision'.*not a commit sha"):
        build_dataset(MAB, split="Accurate_Retrieval", revision="main", out_dir=tmp_path)
