"""The backbone request resolver: its parser, its prompt, its hook into the NL rollback
(scripted backbones: picks, refusals, garbage, numbers out of range; the call cache),
and its config (auto, the spec, the run id); through the runner: test_backbone_resolver_runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronobench.backbones import CachedBackbone
from chronobench.backbones.scripted import ScriptedBackbone
from chronobench.errors import ConfigError
from chronobench.spec import run_id, settle_resolver, spec_from_config
from chronomem import ChronoMem, HashEmbedder, UncertainRequestError
from chronomem.backbone_resolver import (
    RESOLVE_TASK,
    BackboneResolver,
    excerpt,
    parse_choice,
)

FACTS = [
    ("city", "Ann moved to Oslo for a new job at the harbour office"),
    ("pet", "Ann adopted a grey cat called Miso from the shelter"),
    ("hobby", "Ann started a pottery class on Thursday evenings"),
    ("car", "Ann sold her old red bicycle and bought a used car"),
]


# ---- the parser ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "index"),
    [
        ("3", 3),
        (" 3.\n", 3),
        ("[2]", 2),
        ("(4)", 4),
        ("#1", 1),
        ("**2**", 2),
        ("Candidate 5", 5),
        ("version 2:", 2),
        ("The request refers to version 1,", 1),  # SmolLM2-135M's shape (issue 26)
        ("It is candidate [3].", 3),
        ("\n\n1\nbecause it names Oslo", 1),  # only the first non-empty line is read
    ],
)
def test_parser_reads_a_number(reply: str, index: int) -> None:
    got = parse_choice(reply, 5)
    assert (got.status, got.index) == ("picked", index)


@pytest.mark.parametrize("reply", ["NONE", "none", "None.", "`NONE`", "  none!  "])
def test_parser_reads_a_refusal(reply: str) -> None:
    assert parse_choice(reply, 5).status == "refused"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("   \n ** \n", "empty"),
        ("I think it is the second one", "not a number"),
        ("2 or 3", "not a number"),
        ("None of them, but maybe 2", "not a number"),
        ("version 2 of 8 May 2023", "not a number"),  # one named, other numbers: not read
        ("version 2 or version 3", "not a number"),
        ("3.5", "not a number"),
        ("-1", "not a number"),
        ("0", "not in 1..5"),
        ("6", "not in 1..5"),
        ("9999", "not in 1..5"),
        ("�ononon", "not a number"),
    ],
)
def test_parser_falls_back_on_anything_else(reply: str, reason: str) -> None:
    got = parse_choice(reply, 5)
    assert got.status == "fallback" and got.index is None and reason in got.reason


def test_excerpt_keeps_what_the_request_names_within_budget() -> None:
    short = "add: Ann moved to Oslo\nsummary: a move"
    assert excerpt(short, "undo Oslo", 200) == "add: Ann moved to Oslo / summary: a move"
    lines = [f"add: small talk line number {i} about the weather" for i in range(40)]
    lines[25] = "add: Caroline went to the adoption agency meeting"
    text = excerpt("\n".join(lines), "forget the adoption agency talk", 160)
    assert len(text) <= 160
    assert text.startswith("add: small talk line number 0")  # the first line: its header
    assert "adoption agency" in text and "..." in text


# ---- the hook in the NL rollback ---------------------------------------------------------


def _fill(mem: ChronoMem) -> ChronoMem:
    for i, (item, text) in enumerate(FACTS, start=1):
        mem.commit(
            "app",
            "ann",
            [{"op": "add", "item_id": item, "text": text}],
            source="chat",
            reason="said",
            valid_time=f"2023-05-0{i}T10:00:00",
        )
    return mem


def _store(resolver: Any = None) -> ChronoMem:
    return _fill(ChronoMem(":memory:", embedder=HashEmbedder(), resolver=resolver))


def _replying(text: str) -> ScriptedBackbone:
    return ScriptedBackbone(lambda request: text)


REQUEST = "undo the move to Oslo for the harbour job"


def _plain_plan() -> Any:
    with _store() as mem:
        return mem.plan_rollback_by_nl_query("app", "ann", REQUEST)


def test_the_backbone_sees_the_request_and_numbered_descriptors_only() -> None:
    bb = _replying("1")
    with _store(BackboneResolver(bb, top_k=3, max_chars=80)) as mem:
        plan = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
    (req,) = bb.requests
    assert req.task == RESOLVE_TASK and req.question == REQUEST
    assert req.params.temperature == 0.0 and req.params.max_new_tokens == 8
    body = req.messages[-1].content
    assert REQUEST in body and "(1-3) or NONE" in body
    assert len(req.context) == 3 and [c[:3] for c in req.context] == ["[1]", "[2]", "[3]"]
    assert "(2023-05-01T10:00:00) add: Ann moved to Oslo" in body  # date, then descriptor
    assert all(len(c) <= 80 + 30 for c in req.context)
    ev = plan.evidence["resolver"]
    assert ev["status"] == "picked" and ev["choice"] == 1 and len(ev["shown"]) == 3
    assert plan.matched_version == ev["version"] == ev["shown"][0]


def test_a_pick_moves_that_candidate_to_the_top() -> None:
    plain = _plain_plan()
    with _store(BackboneResolver(_replying("2"), top_k=3)) as mem:
        plan = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
        ev = plan.evidence["resolver"]
        assert ev["status"] == "picked" and plan.matched_version == ev["shown"][1]
        assert plan.matched_version != plain.matched_version
        # undo: the target is the picked commit's parent, first among the candidates
        assert plan.target_version == plan.matched_version - 1
        assert plan.candidates[0][0] == plan.target_version
        result = mem.rollback_to_version_by_nl_query("app", "ann", REQUEST)
        assert result.target_version == plan.target_version == mem.head("app", "ann")
        assert result.evidence["resolver"]["status"] == "picked"


def test_a_refusal_refuses_and_changes_nothing() -> None:
    with _store(BackboneResolver(_replying("NONE"))) as mem:
        head = mem.head("app", "ann")
        with pytest.raises(UncertainRequestError, match="backbone found none"):
            mem.rollback_to_version_by_nl_query("app", "ann", REQUEST)
        assert mem.head("app", "ann") == head


@pytest.mark.parametrize("reply", ["the first one, clearly", "", "7", "0"])
def test_bad_output_falls_back_to_the_reranker_top1(reply: str) -> None:
    plain = _plain_plan()
    with _store(BackboneResolver(_replying(reply), top_k=3)) as mem:
        plan = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
    ev = plan.evidence["resolver"]
    assert ev["status"] == "fallback" and ev["reason"] and ev["reply"] == reply
    assert (plan.matched_version, plan.target_version) == (
        plain.matched_version,
        plain.target_version,
    )
    assert plan.candidates == plain.candidates and plan.confidence == plain.confidence


def test_content_free_requests_never_reach_the_backbone() -> None:
    bb = _replying("1")
    with _store(BackboneResolver(bb)) as mem:
        for request in ("undo that", "*", "((("):
            with pytest.raises(UncertainRequestError):
                mem.plan_rollback_by_nl_query("app", "ann", request)
    assert bb.requests == []


def test_resolver_calls_go_through_the_call_cache(tmp_path: Path) -> None:
    inner = _replying("2")
    with CachedBackbone(inner, tmp_path / "llm_cache.sqlite") as cached:
        with _store(BackboneResolver(cached, top_k=3)) as mem:
            first = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
            again = mem.plan_rollback_by_nl_query("app", "ann", REQUEST)
        assert first == again
        assert len(inner.requests) == 1 and cached.stats.hits == 1


def test_bad_resolver_settings_are_errors() -> None:
    with pytest.raises(TypeError, match="generate"):
        BackboneResolver(object())
    for bad in ({"top_k": 0}, {"max_chars": 5}, {"max_new_tokens": 0}, {"top_k": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            BackboneResolver(_replying("1"), **bad)
    with pytest.raises(TypeError, match="resolver"):
        ChronoMem(":memory:", embedder=HashEmbedder(), resolver="backbone")


def test_resolver_candidates_are_read_the_same_on_postgres(pg_url: str) -> None:
    bb = _replying("2")
    mem = ChronoMem(pg_url, embedder=HashEmbedder(), resolver=BackboneResolver(bb, top_k=3))
    try:
        plan = _fill(mem).plan_rollback_by_nl_query("app", "ann", REQUEST)
    finally:
        mem.close()
    with _store(BackboneResolver(_replying("2"), top_k=3)) as lite:
        ref = lite.plan_rollback_by_nl_query("app", "ann", REQUEST)
    assert plan.evidence["resolver"] == ref.evidence["resolver"]
    assert bb.requests[0].messages == lite.resolver.backbone.requests[0].messages


# ---- the system and its config -----------------------------------------------------------


def _system(resolver: str, backbone: Any) -> Any:
    from chronobench.protocols import public_writes  # noqa: F401 (the runner's view)
    from chronobench.systems import SystemContext
    from chronobench.systems.chronomem import ChronoMemSystem
    from chronobench.systems.registry import ChronoMemResolverOptions
    from chronobench.systems.stores import StoreProvider

    stores = StoreProvider(embedder=HashEmbedder())
    ctx = SystemContext(stores=stores, backbone=backbone)
    options = ChronoMemResolverOptions(resolver=resolver, resolver_top_k=3)
    return ChronoMemSystem(ctx, options), stores


def _writes() -> tuple[Any, ...]:
    from chronobench.protocols import ItemChange, StreamWrite

    return tuple(
        StreamWrite(i, f"2023-05-0{i}T10:00:00", (ItemChange("add", item, text),))
        for i, (item, text) in enumerate(FACTS, start=1)
    )


def test_the_system_hands_its_backbone_to_the_resolver() -> None:
    bb = _replying("2")
    system, stores = _system("backbone", bb)
    try:
        system.ingest(_writes())
        session = system.open_session()
        outcome = session.rollback(REQUEST)
        session.close()
    finally:
        stores.close()
    note = outcome.meta["resolver"]
    assert note["status"] == "picked" and note["version"] == note["shown"][1]
    assert outcome.selected_version == note["version"] - 1  # undo: the picked write's parent
    assert set(note["shown"]) <= {1, 2, 3, 4}  # write ids, not store version ids
    assert len(bb.requests) == 1


def test_auto_is_off_with_the_extractive_reader_and_on_with_an_llm() -> None:
    from chronobench.backbones.extractive import ExtractiveBackbone

    assert _system("auto", ExtractiveBackbone())[0].resolver is None
    assert _system("auto", None)[0].resolver is None
    assert isinstance(_system("auto", _replying("1"))[0].resolver, BackboneResolver)
    assert _system("none", _replying("1"))[0].resolver is None
    with pytest.raises(ValueError, match="needs the run's backbone"):
        _system("backbone", None)


def _cfg(
    compose_cells: Any, *overrides: str, task: str = "generation"
) -> tuple[dict[str, Any], dict[str, str]]:
    ((cfg, choices),) = compose_cells(["experiment=single", f"task={task}", *overrides])
    return cfg, choices


def test_the_spec_and_run_id_name_the_resolver(compose_cells: Any, tmp_path: Path) -> None:
    from chronobench.runner.components import resolve_cell

    cfg, ch = _cfg(compose_cells)
    assert cfg["system"]["resolver"] == "auto"  # what configs/system/chronomem.yaml says
    off = spec_from_config(cfg, choices=ch)
    # Extractive: off, and no resolver key is left (run ids as before the resolver).
    assert "resolver" not in off.system.options and off.resolver == "none"
    bare = {**cfg, "system": {k: v for k, v in cfg["system"].items() if "resolver" not in k}}
    assert run_id(spec_from_config(bare), "sha") == run_id(off, "sha")
    assert "__chronomem__" in run_id(off, "sha")

    llm_cfg, llm_ch = _cfg(compose_cells, "backbone=openai")
    on = spec_from_config(llm_cfg, choices=llm_ch)
    assert on.system.options["resolver"] == "backbone" and on.resolver == "backbone"
    # The defaults of the options model enter the spec when the cell is resolved.
    assert "resolver_top_k" not in on.system.options
    on = resolve_cell(on, choices=llm_ch).spec
    assert on.system.options["resolver_top_k"] == 5
    assert on.recorded()["system"]["resolver"] == "backbone"  # config.yaml, manifest
    assert "__chronomem+resolver__" in run_id(on, "sha") and "resolver=backbone" in on.describe()
    none_cfg, _ = _cfg(compose_cells, "backbone=openai", "system.resolver=none")
    none = spec_from_config(none_cfg)
    assert run_id(none, "sha") != run_id(on, "sha") and "+resolver" not in run_id(none, "sha")
    k3_cfg, _ = _cfg(compose_cells, "backbone=openai", "system.resolver_top_k=3")
    assert run_id(spec_from_config(k3_cfg), "sha") != run_id(on, "sha")
    # Settling is idempotent: a recorded spec reads back as itself.
    assert settle_resolver(on.system.options, "openai") == on.system.options

    forced, fch = _cfg(compose_cells, "system.resolver=backbone")
    with pytest.raises(ConfigError, match="system.resolver.*no language model"):
        resolve_cell(spec_from_config(forced, choices=fch), choices=fch)
    typo, tch = _cfg(compose_cells, "backbone=openai", "+system.resolver_topk=3")
    with pytest.raises(ConfigError, match="resolver_topk"):
        resolve_cell(spec_from_config(typo, choices=tch), choices=tch)
    # An excerpt budget the resolver cannot use fails when the cell is resolved, not built.
    tiny, tich = _cfg(compose_cells, "backbone=openai", "system.resolver_max_chars=10")
    with pytest.raises(ConfigError, match="resolver_max_chars.*greater than or equal to 40"):
        resolve_cell(spec_from_config(tiny, choices=tich), choices=tich)
    bad, bch = _cfg(compose_cells, "backbone=openai", "system.resolver=llm")
    with pytest.raises(ConfigError, match="resolver"):
        resolve_cell(spec_from_config(bad, choices=bch), choices=bch)
    oracle, och = _cfg(
        compose_cells, "backbone=openai", "system=chronomem_oracle", "+system.resolver=backbone"
    )
    with pytest.raises(ConfigError, match="resolver"):  # only ChronoMem reads the request
        resolve_cell(spec_from_config(oracle, choices=och), choices=och)
