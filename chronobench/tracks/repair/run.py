"""The repair track's cell runner: ``run_repair_cell(components) -> run folder``.

A cell is one (subset, method): ``dataset.granularity`` picks the subset (``controlled``
or ``stress``, or ``earned_controlled`` / ``earned_stress``: the sets whose diagnosis must
be earned, or ``earned2_controlled`` / ``earned2_stress``: those with two advisory chains
per domain), ``system.name`` the method (:data:`chronobench.tracks.repair.methods.METHODS`).
For every case it rebuilds the faulty store with provenance, runs the agent on it (the
failed run), applies the method to the failed state, and scores the result. The
``extractive`` backbone (the offline default) is replaced by the repair track's offline
policy (:mod:`chronobench.tracks.repair.policy`); any other backbone is used as configured, so
with vLLM or an OpenAI-compatible server the agent is an LLM agent.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from chronobench.errors import ConfigError
from chronobench.resolver_options import LLM_FREE_BACKBONES
from chronobench.runner.params import generation_params
from chronobench.tracks.repair.methods import METHODS

# Where the diagnosis comes from: the case's own (complete, or missing one fault in every
# fourth stress case), every fault (oracle), or a detector (chronobench.tracks.repair.detect).
Diagnosis = Literal["given", "oracle", "judge", "untrusted", "surface", "surface_lookup"]


class RepairTaskParams(BaseModel):
    """``task.params`` of a repair cell, with their defaults: the case's own diagnosis,
    exact replay, every session replayable, every case scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    diagnosis: Diagnosis = "given"
    # The rate of each replay-noise event per reply line (chronobench.tracks.repair.noise). An
    # int stays an int: published specs record ``noise: 0`` and run ids hash it so.
    noise: Annotated[int | float, Field(ge=0, le=1)] = 0
    # How noise draws are keyed: per call, or by the prompt alone (a re-run reproduces).
    noise_key: Literal["call", "prompt"] = "call"
    # Days a session's input is kept (pasted documents never are); None: forever.
    retention: NonNegativeInt | None = None
    # A stated subset that publishes (experiment=llm_cpu): the first N cases.
    first_cases: NonNegativeInt | None = None
    # A cut for debugging that never publishes (spec.published): the first N cases.
    limit_cases: NonNegativeInt | None = None


_DEFAULTS = RepairTaskParams()


def check_spec(spec: Any) -> None:
    """Reject a repair cell whose dataset or method this runner would not read (its
    ``task.params`` are validated by :class:`RepairTaskParams`, the dataset's subset and
    params by its registry entry, :data:`chronobench.tracks.repair.dataset.REPAIR`)."""
    d = spec.dataset
    if d.name != "repair":
        raise ConfigError(
            f"task.kind=repair needs dataset=repair_controlled (dataset.name 'repair'), got {d.name!r}"
        )
    if spec.system.name not in METHODS:
        raise ConfigError(
            f"system.name={spec.system.name!r}: repair methods are {', '.join(METHODS)}"
        )
    if spec.system.options:
        raise ConfigError(f"system options {sorted(spec.system.options)}: repair methods take none")


def make_backbone(cell: Any) -> Any:
    """The offline policy for ``extractive``; otherwise the configured (cached) backbone
    (``cell``: the resolved :class:`chronobench.runner.components.Components`)."""
    if cell.spec.backbone.name == "extractive":
        from chronobench.tracks.repair.policy import RepairPolicyBackbone

        return RepairPolicyBackbone()
    return cell.build_backbone()


def repair_case(
    case: dict[str, Any],
    method: str | Callable[[Any], Any],
    backbone: Any,
    params: Any = 0,
    *,
    diagnosis: Diagnosis = _DEFAULTS.diagnosis,
    noise: Any = None,
    retention: int | None = _DEFAULTS.retention,
    read_replies: bool = False,
) -> dict[str, Any]:
    """Run the agent on the case's faulty history and task (the failed run), repair it with
    ``method``, and score the result; returns the sample row. The agent and the method see
    only :func:`~chronobench.tracks.repair.cases.agent_view` of the case and the diagnosis.

    ``diagnosis``: see :data:`Diagnosis` (a detector sees the agent's view and the store);
    ``noise``: a :class:`~chronobench.tracks.repair.noise.NoiseModel` on every backbone call of
    the case (failed run, detector, repair); ``retention``: days a session's input is kept
    (pasted documents are never kept), see :func:`~chronobench.tracks.repair.noise.unreplayable`;
    ``read_replies``: a language-model backbone, whose unparsed replies the row counts
    (``parse_failures``, ``replies``). ``method`` is a registered name, or (the audit's
    scorer-side oracles) a callable taking the :class:`RepairContext`."""
    from chronobench.tracks.repair.agent import MEMO_ITEM
    from chronobench.tracks.repair.cases import agent_view, default_params
    from chronobench.tracks.repair.context import RepairContext, resolve_faults, run_failed
    from chronobench.tracks.repair.detect import DETECTORS, detection_scores
    from chronobench.tracks.repair.history import history_steps
    from chronobench.tracks.repair.metrics import (
        edge_scores,
        gold_dependencies,
        recomputed,
        score_case,
    )
    from chronobench.tracks.repair.noise import CallLayer, unreplayable
    from chronobench.tracks.repair.planner import dependency_edges, prompt_level
    from chronobench.tracks.repair.provenance import load_graph
    from chronomem import ChronoMem

    visible = agent_view(case)
    params = default_params(params) if isinstance(params, int) else params
    app, user = case["app"], case["user"]
    layer = CallLayer(backbone, noise)
    if read_replies:
        layer.parse = Counter()
    with ChronoMem(":memory:", embedder="hash") as mem:
        runner, old = run_failed(mem, visible, layer, params)
        layer.occasion = "repair"
        graph = load_graph(mem, app, user)
        gold = gold_dependencies(case)
        prov = dict(
            zip(
                ("prov_precision", "prov_recall"),
                edge_scores(dependency_edges(graph), gold),
                strict=True,
            )
        )
        prompt = edge_scores(dependency_edges(prompt_level(graph)), gold)
        prov.update(prompt_precision=prompt[0], prompt_recall=prompt[1])
        failed_store = {k: v for k, v in mem.snapshot(app, user).items() if k != MEMO_ITEM}
        det: dict[str, float] = {}
        if diagnosis in DETECTORS:
            found = DETECTORS[diagnosis](visible, mem, layer, params)
            named = [f"mem:{e}:*" for e in found.events]  # every record the session wrote
            det = {**detection_scores(case, found.events), "detector_calls": float(found.calls)}
        else:
            named = (
                case["diagnosed"] if diagnosis == "given" else [f["record"] for f in case["faults"]]
            )
            det = detection_scores(case, sorted({n.split(":")[1] for n in named}))
        diagnosed = resolve_faults(graph, named)
        # Scorer side: a fault session that stored nothing (an LLM agent that did not read
        # the pasted text as a fact) left nothing to repair: the case is not applicable.
        reached = resolve_faults(graph, [f"mem:{f['event']}:*" for f in case["faults"]])
        total = len(history_steps(graph)) + len(old.steps)
        name = getattr(method, "__name__", method)
        ctx = RepairContext(mem, visible, old, runner, layer, name, diagnosed,
                            unavailable=unreplayable(visible, retention), memo=dict(layer.memo))  # fmt: skip
        out = method(ctx) if callable(method) else METHODS[method](ctx)
        head = mem.snapshot(app, user)
        # With an LLM backbone the failed run is this run's, not the builder's offline one.
        failed = {"claims": old.claims, "answer": old.answer}
        scores = score_case(case, out, head, failed=failed, failed_store=failed_store,
                            fault_texts=[graph.nodes[n].attrs["text"] for n in diagnosed],
                            total_steps=total, provenance=prov)  # fmt: skip
        scores.update(det)
    if old.answer == case["gold"]["answer"]:
        scores["failed_run_correct"] = 1.0  # the backbone did not fail: the case is moot
    if not reached:
        scores["not_applicable"] = 1.0  # no fault reached memory: nothing to repair
    counted = {}
    if layer.parse is not None:
        counted = {"parse_failures": dict(sorted(layer.parse.items())),
                   "replies": int(sum(layer.calls.values()))}  # fmt: skip
    return {**counted,
        "sample_id": case["case_id"], "kind": "repair", "case_id": case["case_id"], "set": case["set"],
        "domain": case["domain"], "fault_types": case["fault_types"], "families": case["families"],
        "n_faults": len(case["faults"]), "n_diagnosed": len(diagnosed), "diagnosis": case["diagnosis"],
        "diagnosed_by": diagnosis,
        "method": name, "answer": out.trace.answer, "failed_answer": old.answer,
        "gold_answer": case["gold"]["answer"], "steps_total": total,
        "replayed_steps": [s["step_id"] for s in out.trace.steps if s["executed"]],
        "invalidated_claims": sorted(recomputed(out.trace, old.claims)), "notes": out.notes, "plan": out.plan, "scores": scores,
    }  # fmt: skip


def case_options(params: RepairTaskParams, seed: int) -> dict[str, Any]:
    """repair_case's keyword options from the cell's validated ``task.params``."""
    from chronobench.tracks.repair.noise import NoiseModel

    rate = float(params.noise)
    return {
        "diagnosis": params.diagnosis,
        "noise": NoiseModel.uniform(rate, seed, params.noise_key) if rate else None,
        "retention": params.retention,
    }


def build_parts(cell: Any, backbone: bool = True) -> list[str]:
    """The repair method and (when ``backbone``) its backbone, built without data."""
    if not callable(METHODS[cell.spec.system.name]):
        raise ConfigError(f"repair method {cell.spec.system.name!r} is not callable")
    built = [cell.spec.system.name]
    if backbone:
        built.append(type(make_backbone(cell)).__name__)
    return built


def run_repair_cell(cell: Any) -> Path:
    """Run (or resume) one repair cell; writes config/manifest/samples/metrics atomically.

    ``cell``: the resolved :class:`chronobench.runner.components.Components` (its spec was
    checked by :func:`check_spec` when it was resolved)."""
    from chronobench.results.io import SampleLog
    from chronobench.runner import progress
    from chronobench.runner.cell import prepare_run_dir, write_results
    from chronobench.spec import run_id
    from chronobench.tracks.repair.cases import SET_BUILDER, load_or_build
    from chronobench.tracks.repair.dataset import RepairParams
    from chronobench.tracks.repair.metrics import aggregate

    spec = cell.spec
    task: RepairTaskParams = cell.params
    t0 = time.perf_counter()
    sizes = RepairParams(**spec.dataset.params)
    # Each generator's sets are one build (one sha256), so a control cell's id never moves
    # when the other generator changes.
    builder = SET_BUILDER[spec.dataset.granularity]
    cases, sha = load_or_build(
        Path(spec.paths.data_dir), int(spec.seed), sizes.n_controlled, sizes.n_stress, builder
    )
    cases = [c for c in cases if c["set"] == spec.dataset.granularity]
    # first_cases: a stated subset that publishes (experiment=llm_cpu); limit_cases: a cut
    # for debugging that never does.
    limit = task.limit_cases or task.first_cases
    cases = cases[: int(limit)] if limit else cases
    # The spec identity of a non-benchmark task leaves the backbone out; mix it into the
    # data hash so an LLM run never resumes an offline one.
    backbone_id = json.dumps(spec.backbone.identity(), sort_keys=True)
    rid = run_id(spec, hashlib.sha256(f"{sha}|{backbone_id}|{limit}".encode()).hexdigest())
    run_dir = prepare_run_dir(spec, rid)
    log = SampleLog(run_dir / "samples.jsonl")
    done = log.done_ids()
    backbone = make_backbone(cell)
    params = generation_params(spec)
    opts = case_options(task, int(spec.seed))
    opts["read_replies"] = spec.backbone.name not in LLM_FREE_BACKBONES
    t1 = time.perf_counter()
    label = f"{spec.system.name}: cases"
    with progress.task(len(cases), label, enabled=spec.progress) as bar:
        for case in cases:
            if case["case_id"] in done:
                bar.skip()
                continue
            log.append([repair_case(case, spec.system.name, backbone, params, **opts)])
            bar.update()
    rows = log.read()
    metrics = aggregate(rows, seed=int(spec.seed))
    if any("parse_failures" in r for r in rows):
        from chronobench.metrics.replies import count_failures

        metrics["parse_failures"] = count_failures(rows)
    timings = {"load_data_s": round(t1 - t0, 3), "repair_s": round(time.perf_counter() - t1, 3),
               "total_s": round(time.perf_counter() - t0, 3)}  # fmt: skip
    folder = str(Path(spec.paths.data_dir) / "repair")
    dataset = {
        "folder": folder,
        "manifest_sha256": sha,
        "n_streams": len(cases),
        "n_queries": len(cases),
    }
    stats = dict(getattr(backbone, "stats", {}) or {"calls": getattr(backbone, "calls", None)})
    write_results(run_dir, spec, rid, metrics=metrics, k=1, dataset=dataset, rows=rows, timings=timings,
                  backbone_stats=stats)  # fmt: skip
    m = metrics["all"]
    moot = metrics.get("not_applicable", {}).get("n", 0)
    if m["recovery"]["mean"] is None:
        print(
            f"  {spec.system.name} on {spec.dataset.granularity}: every case ({moot}) not applicable"
        )
    else:
        print(f"  {spec.system.name} on {spec.dataset.granularity}: recovery {m['recovery']['mean']:.3f}, "
              f"replay {m['replay_ratio']['mean']:.3f}, calls {m['backbone_calls']['mean']:.2f}"
              + (f", {moot} not applicable" if moot else ""))  # fmt: skip
    return run_dir
