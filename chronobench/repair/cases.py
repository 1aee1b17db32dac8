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
from chronobench.memory import ChronoMem
from chronobench.repair.agent import MEMO_ITEM, TaskRunner
from chronobench.repair.generate import DOMAIN_NAMES, FAULT_TYPES, MAX_ATTEMPTS, draft_case
from chronobench.repair.history import materialize
from chronobench.repair.policy import RepairPolicyBackbone
from chronobench.repair.provenance import Recorder

BUILDER_VERSION = "repair-1"


def run_offline(case: dict[str, Any], *, clean: bool) -> tuple[Any, dict[str, str]]:
    """Run the offline agent on the case's faulty (or fault-free) history; returns the
    trace and S(HEAD) before the task's memo."""
    with ChronoMem(":memory:", embedder="hash") as mem:
        rec = Recorder()
        materialize(mem, case, rec, clean=clean)
        store = {k: v for k, v in mem.snapshot(case["app"], case["user"]).items() if k != MEMO_ITEM}
        trace = TaskRunner(mem, case, RepairPolicyBackbone(), rec).run("run")
    return trace, store


def make_case(seed: int, subset: str, index: int) -> dict[str, Any]:
    """Case ``index`` of ``subset`` ("controlled" or "stress"), deterministic in the seed."""
    domain = DOMAIN_NAMES[index % len(DOMAIN_NAMES)]
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"{seed}:{subset}:{index}:{attempt}")
        if subset == "controlled":
            ftypes = [FAULT_TYPES[(index // len(DOMAIN_NAMES)) % len(FAULT_TYPES)]]
        else:
            ftypes = [rng.choice(FAULT_TYPES) for _ in range(rng.randint(2, 4))]
        case = draft_case(rng, domain, ftypes, stress=subset == "stress")
        case.update(case_id=f"{subset}-{index:03d}", set=subset, app="repair", user=f"u{index}")
        failed, _ = run_offline(case, clean=False)
        gold, gold_store = run_offline(case, clean=True)
        if failed.answer != gold.answer:
            case["failed"] = failed.to_dict()
            case["gold"] = {**gold.to_dict(), "store": gold_store}
            case["attempt"] = attempt
            return case
    raise RuntimeError(f"{subset} case {index}: no draw changed the answer in {MAX_ATTEMPTS} tries")


def build_cases(seed: int = 0, n_controlled: int = 150, n_stress: int = 50) -> list[dict[str, Any]]:
    """Every case of both subsets, controlled first."""
    for name, n in (("n_controlled", n_controlled), ("n_stress", n_stress)):
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return [make_case(seed, "controlled", i) for i in range(n_controlled)] + [
        make_case(seed, "stress", i) for i in range(n_stress)
    ]


def write_cases(folder: Path, cases: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """Write ``cases.jsonl`` and ``manifest.json`` atomically; returns the cases' sha256."""
    text = "".join(json.dumps(c, sort_keys=True) + "\n" for c in cases)
    sha = hashlib.sha256(text.encode()).hexdigest()
    atomic_write_text(folder / "cases.jsonl", text)
    atomic_write_json(folder / "manifest.json", {"builder": BUILDER_VERSION, "params": params,
                                                  "n_cases": len(cases), "cases_sha256": sha})  # fmt: skip
    return sha


def _code_sha() -> str:
    """sha256 of the sources that decide a case's content, so an edit rebuilds the cases."""
    here = Path(__file__)
    names = ("generate.py", "cases.py", "domains.py", "policy.py", "agent.py", "history.py",
             "provenance.py")  # fmt: skip
    files = [here.with_name(n) for n in names]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def load_or_build(
    data_dir: Path, seed: int, n_controlled: int, n_stress: int
) -> tuple[list[dict[str, Any]], str]:
    """Cases from ``data_dir/repair/<key>/`` (built on first use); returns (cases, sha256)."""
    params = {
        "seed": seed,
        "n_controlled": n_controlled,
        "n_stress": n_stress,
        "builder": BUILDER_VERSION,
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
    cases = build_cases(seed, n_controlled, n_stress)
    return cases, write_cases(folder, cases, params)
