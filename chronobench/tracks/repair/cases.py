"""Build the repair benchmark: controlled and stress cases with failed and gold runs.

Cases are written under ``<data_dir>/repair/<key>/`` through :mod:`chronobench.fileio`
(atomic writes); ``key`` hashes the parameters and the sources that decide a case."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from chronobench.fileio import atomic_write_json, atomic_write_text
from chronobench.protocols import GenerationParams
from chronobench.tracks.repair.agent import MEMO_ITEM, TaskRunner
from chronobench.tracks.repair.domains import DOMAINS
from chronobench.tracks.repair.generate import (
    DOMAIN_NAMES,
    FAMILIES,
    FAULT_TYPES,
    MAX_ATTEMPTS,
    Redraw,
    draft_case,
)
from chronobench.tracks.repair.generate_earned import EARNED2_SETS, EARNED_SETS, draft_earned
from chronobench.tracks.repair.history import materialize
from chronobench.tracks.repair.lexicon import slot_phrase
from chronobench.tracks.repair.policy import RepairPolicyBackbone
from chronobench.tracks.repair.provenance import Recorder
from chronobench.tracks.repair.retrieval import RETRIEVAL_SETS
from chronobench.tracks.repair.steps import HistoryAgent
from chronomem import ChronoMem

BUILDER_VERSION = "repair-3"  # 3: benign untrusted sessions (the control sets)
# 4: the sets whose diagnosis must be earned (generate_earned.py). Each builder writes its
# own folder and cases sha256, so the repair-3 sets and their published run ids stay.
EARNED_BUILDER = "repair-4"
# 5: the earned sets with a second advisory chain per domain (Domain.side_chain). A new
# builder, not a change to repair-4: published cells rest on the repair-4 cases' sha256.
EARNED2_BUILDER = "repair-5"
# 6: the two-chain histories with retrieval-driven reads (retrieval.py): notes and
# lookups log the search query they issued, and read what retrieval returns for it.
RETRIEVAL_BUILDER = "repair-6"
BUILDERS = {
    BUILDER_VERSION: ("controlled", "stress"),
    EARNED_BUILDER: EARNED_SETS,
    EARNED2_BUILDER: EARNED2_SETS,
    RETRIEVAL_BUILDER: RETRIEVAL_SETS,
}
SET_BUILDER = {name: b for b, names in BUILDERS.items() for name in names}
# What a deployed agent has of a case: the session log, the task. Faults, families,
# gold answers and gold dependencies stay with the scorer.
VISIBLE = ("case_id", "set", "app", "user", "domain", "events", "params", "request", "task_day")
MISS_EVERY = 4  # stress case i misses one fault when i % MISS_EVERY == MISS_EVERY - 1
# The two-chain sets draw with their one-chain namesakes' seeds, so case i of each pair
# starts from the same random stream (and the two-chain histories measured before the
# split, under the repair-4 names, are these ones).
DRAW_AS = {
    **dict(zip(EARNED2_SETS, EARNED_SETS, strict=True)),
    # The retrieval sets draw the two-chain histories the same way; the agent's reads
    # decide which draws change the answer, so a case may redraw where repair-5 did not.
    **dict(zip(RETRIEVAL_SETS, EARNED_SETS, strict=True)),
}


def add_queries(case: dict[str, Any]) -> None:
    """Log the search query each note and advisory lookup of ``case`` issues: the user's
    words, and for a lookup the name of the tool's argument (what the agent searches
    memory for). The records retrieval returns are not logged."""
    derivations = {d.name: d for d in DOMAINS[case["domain"]].derivations()}
    for ev in case["events"]:
        if ev["kind"] == "note":
            ev["query"] = ev["input"]
        elif ev["kind"] == "lookup":
            ev["query"] = f"{ev['input']} (my {slot_phrase(derivations[ev['derivation']].source)})"


def agent_view(case: dict[str, Any]) -> dict[str, Any]:
    """The part of ``case`` the agent and the repair methods may read."""
    return {k: case[k] for k in VISIBLE}


def default_params(seed: int = 0) -> GenerationParams:
    """The track's sampling settings when none are configured (replies are a few lines)."""
    return GenerationParams(max_new_tokens=160, seed=seed)


def run_offline(case: dict[str, Any], *, clean: bool) -> tuple[Any, dict[str, str]]:
    """Run the offline agent on the case's faulty (or fault-free: the fault sessions
    skipped) history; returns the task trace and S(HEAD) before the task's memo."""
    view = agent_view(case)
    policy = RepairPolicyBackbone()
    with ChronoMem(":memory:", embedder="hash") as mem:
        rec = Recorder()
        skip = {f["event"] for f in case["faults"]} if clean else set()
        materialize(mem, view, HistoryAgent(view, policy, rec, default_params()), skip=skip)
        store = {k: v for k, v in mem.snapshot(case["app"], case["user"]).items() if k != MEMO_ITEM}
        trace = TaskRunner(mem, view, policy, rec, default_params()).run("run")
    return trace, store


def make_case(seed: int, subset: str, index: int) -> dict[str, Any]:
    """Case ``index`` of ``subset`` (``controlled``, ``stress``, their earned versions
    ``earned_controlled``, ``earned_stress``, or those with two advisory chains
    ``earned2_controlled``, ``earned2_stress``), deterministic in the seed.

    Controlled: one fault; domain ``index % 3``, family ``(index // 3) % 5``, fault type
    ``(index // 15) % 4``. Stress: 2-4 faults of random types and families; every
    ``MISS_EVERY``-th case's diagnosis leaves one fault out. The earned sets draw the same
    plans through :func:`~chronobench.tracks.repair.generate_earned.draft_earned`. A draw is kept only when
    its families' routes carry the fault (the advice of a tool family changes) and the
    faults change the offline agent's answer; never on how a repair method does."""
    if subset not in SET_BUILDER:
        raise ValueError(f"repair subset {subset!r}: expected one of {', '.join(SET_BUILDER)}")
    domain = DOMAIN_NAMES[index % len(DOMAIN_NAMES)]
    retrieval = subset in RETRIEVAL_SETS
    two_chains = subset in EARNED2_SETS or retrieval
    earned = subset in EARNED_SETS or two_chains
    single = subset in ("controlled", "earned_controlled", "earned2_controlled",
                        "retrieval_controlled")  # fmt: skip
    drawn_as = DRAW_AS.get(subset, subset)
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"{seed}:{drawn_as}:{index}:{attempt}")
        if single:
            plan = [
                (
                    FAULT_TYPES[(index // 15) % len(FAULT_TYPES)],
                    FAMILIES[(index // 3) % len(FAMILIES)],
                )
            ]
        else:
            plan = [
                (rng.choice(FAULT_TYPES), rng.choice(FAMILIES)) for _ in range(rng.randint(2, 4))
            ]
        try:
            if earned:
                case = draft_earned(rng, domain, plan, stress=not single, two_chains=two_chains)
            else:
                case = draft_case(rng, domain, plan, stress=not single)
        except Redraw:
            continue
        if retrieval:
            add_queries(case)
        case.update(case_id=f"{subset}-{index:03d}", set=subset, app="repair", user=f"u{index}")
        diagnosed = [f["record"] for f in case["faults"]]
        missed = not single and index % MISS_EVERY == MISS_EVERY - 1
        if missed:
            diagnosed.remove(rng.choice(diagnosed))
        case["diagnosed"], case["diagnosis"] = diagnosed, "missed" if missed else "complete"
        failed, _ = run_offline(case, clean=False)
        gold, gold_store = run_offline(case, clean=True)
        if failed.answer != gold.answer:
            case["failed"] = failed.to_dict()
            case["gold"] = {**gold.to_dict(), "store": gold_store}
            case["attempt"] = attempt
            return case
    raise RuntimeError(f"{subset} case {index}: no draw changed the answer in {MAX_ATTEMPTS} tries")


def build_cases(
    seed: int = 0, n_controlled: int = 150, n_stress: int = 50, builder: str = BUILDER_VERSION
) -> list[dict[str, Any]]:
    """Every case of ``builder``'s two subsets (:data:`BUILDERS`), the single-fault one first."""
    for name, n in (("n_controlled", n_controlled), ("n_stress", n_stress)):
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    if builder not in BUILDERS:
        raise ValueError(f"repair builder {builder!r}: expected one of {', '.join(BUILDERS)}")
    single, multi = BUILDERS[builder]
    return [make_case(seed, single, i) for i in range(n_controlled)] + [
        make_case(seed, multi, i) for i in range(n_stress)
    ]


def write_cases(
    folder: Path,
    cases: list[dict[str, Any]],
    params: dict[str, Any],
    builder: str = BUILDER_VERSION,
) -> str:
    """Write ``cases.jsonl`` and ``manifest.json`` atomically; returns the cases' sha256."""
    text = "".join(json.dumps(c, sort_keys=True) + "\n" for c in cases)
    sha = hashlib.sha256(text.encode()).hexdigest()
    atomic_write_text(folder / "cases.jsonl", text)
    atomic_write_json(folder / "manifest.json", {"builder": builder, "params": params,
                                                  "n_cases": len(cases), "cases_sha256": sha})  # fmt: skip
    return sha


def _code_sha() -> str:
    """sha256 of the sources that decide a case's content, so an edit rebuilds the cases."""
    here = Path(__file__)
    names = ("generate.py", "generate_earned.py", "cases.py", "domains.py", "lexicon.py",
             "policy.py", "agent.py", "steps.py", "history.py", "provenance.py",
             "retrieval.py")  # fmt: skip
    files = [here.with_name(n) for n in names]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def load_or_build(
    data_dir: Path, seed: int, n_controlled: int, n_stress: int, builder: str = BUILDER_VERSION
) -> tuple[list[dict[str, Any]], str]:
    """``builder``'s cases from ``data_dir/repair/<key>/`` (built on first use); returns
    (cases, sha256)."""
    params = {
        "seed": seed,
        "n_controlled": n_controlled,
        "n_stress": n_stress,
        "builder": builder,
        "code": _code_sha(),
    }
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    folder = Path(data_dir) / "repair" / key
    manifest = folder / "manifest.json"
    if manifest.exists() and (folder / "cases.jsonl").exists():
        lines = (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(x) for x in lines if x.strip()], json.loads(manifest.read_text())[
            "cases_sha256"
        ]
    cases = build_cases(seed, n_controlled, n_stress, builder)
    return cases, write_cases(folder, cases, params, builder)
