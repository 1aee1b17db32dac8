"""RQ4's validity audit: the selective-forgetting headline against its oracle, error
curves and attacks, every one scored by the RQ4 runner (:mod:`chronobench.tracks.selective.run`).

The data is the ``experiment=selective`` cell's (LoCoMo turn streams, the held-out and
template requests, the required sets, the known set, the forget questions whose fact
survives left out). Each policy below is run as a ChronoMem row through
:func:`chronobench.tracks.selective.run.run_rows` and scored by the same code as a published
row. The audited figure is the held-out headline (``user``); the fast version (two
conversations, the test suite's) uses every anchor (``all``) so that a handful of
held-out requests does not decide it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from chronobench.audit.contract import Attack, Curve, HeadlineAudit, Interval
from chronobench.audit.registry import AuditOptions

__all__ = ["audit", "published_note"]

_ORACLE_WHY = (
    "it removes exactly the anchor's required set (its own turns plus every turn LoCoMo's "
    "annotations tie to the same fact), so its precision is 1, it keeps every question "
    "whose evidence lies outside the set, and no forget question it could leak is scored "
    "(a question the reference reader still answers without the set is left out for every "
    "row); any other removal either misses a required turn (forget or recall falls) or "
    "removes one outside the set (precision falls, keep can only fall)"
)
_FIXED_TEXT = (
    "an RQ4 row outputs no text: what is scored is which turns its memory still holds, "
    "read by the harness's one reader for every row, so there is no output a fixed text "
    "could replace (its counterpart, a fixed deletion built from the public writes, is "
    "the request-blind family)"
)


class _Harness:
    """One built RQ4 bench and the means of running a policy through the runner."""

    def __init__(self, fast: bool, data: Path | None, cache: Path | None) -> None:
        from hydra import initialize_config_dir

        from chronobench.paths import config_dir
        from chronobench.runner.components import resolve_cell
        from chronobench.runner.experiment import compose, expand_suite
        from chronobench.spec import spec_from_config
        from chronobench.tracks.selective.run import load_bench, reference_survivors
        from data_builders import selective as rq4

        overrides = ["experiment=selective", "suite=[]", "system.name=chronomem_selective"]
        if fast:
            overrides += ["task.params.streams=2", "task.params.anchors_per_stream=4"]
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            cfg, _ = compose(overrides)
            ((cfg, choices),) = expand_suite(cfg, overrides)
        if data is not None:
            cfg["paths"]["data_dir"] = str(data)
        if cache is not None:
            cfg["paths"]["cache_dir"] = str(cache)
        cell = resolve_cell(spec_from_config(cfg, choices=choices), choices=choices)
        self.spec, self.params = cell.spec, cell.params
        self.backbone = cell.build_backbone()
        _, self.bench, _, _ = load_bench(self.spec, self.params, self.backbone)
        rq4.apply_survivors(self.bench, reference_survivors(self.spec, self.bench, self.backbone))
        self.source = "all" if fast else "user"
        self.runs = 0
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def run(self, jobs: dict[str, tuple[Any, bool]]) -> dict[str, float]:
        """Each job (name -> (policy, takes the required set)) through the runner's
        per-anchor scorer on one ChronoMem copy per stream (written once); the mean
        headline of each over the audited anchors."""
        from chronobench.protocols import Question, public_writes
        from chronobench.runner.params import generation_params
        from chronobench.systems import SystemContext
        from chronobench.systems.forgetting import ChronoMemForgetSystem
        from chronobench.systems.registry import ChronoMemOptions
        from chronobench.systems.stores import StoreProvider
        from chronobench.tracks.selective.run import score_anchor
        from data_builders import selective as rq4

        spec = self.spec
        stores = StoreProvider(embedder=spec.embedder.model_dump(), cache_dir=spec.paths.cache_dir)
        ctx = SystemContext(params=generation_params(spec), stores=stores)
        system = ChronoMemForgetSystem(ctx, None, "audit", ChronoMemOptions())  # type: ignore[arg-type]
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name in jobs}
        try:
            for fs in self.bench:
                questions = [Question(f"q{i + 1}", q.question) for i, q in enumerate(fs.probes)]
                writes = public_writes(fs.stream)
                every = {int(w.write_id) for w in writes}
                system.ingest(writes)
                system.see_questions([q.text for q in questions])
                for a in fs.anchors:
                    if self.source != "all" and a.source != self.source:
                        continue
                    lab = rq4.label(fs.probes, a)
                    for name, (policy, gold) in jobs.items():
                        system.policy = policy
                        rows[name].append(score_anchor(
                            system, gold, a, lab, fs.probes, questions, every, self.backbone
                        ))  # fmt: skip
        finally:
            system.close()
            stores.close()
        self.runs += len(jobs)
        self.rows = rows
        out = {}
        for name, got in rows.items():
            heads = [r["headline"] for r in got if r["headline"] is not None]
            out[name] = sum(heads) / len(heads) if heads else 0.0
        return out

    def kept_order(self) -> dict[str, list[int]]:
        """Per request, the required turns ordered by how many forget questions cite them
        (fewest first, later first): a missed turn that no question tests still costs."""
        from data_builders import selective as rq4

        out: dict[str, list[int]] = {}
        for fs in self.bench:
            for a in fs.anchors:
                cites = dict.fromkeys(a.gold, 0)
                for p in rq4.label(fs.probes, a)["forget"]:
                    for j in p.evidence_versions:
                        if j in cites:
                            cites[j] += 1
                out[a.request] = sorted(a.gold, key=lambda j: (cites[j], -j))
        return out

    def n_anchors(self) -> int:
        return sum(
            1
            for fs in self.bench
            for a in fs.anchors
            if self.source == "all" or a.source == self.source
        )


def _cell_data(spec: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What a selective cell's held-out headline is measured on: the dataset, its
    granularity and the held-out request file (a spec as dumped to JSON)."""
    dataset = spec.get("dataset") or {}
    params = (spec.get("task") or {}).get("params") or {}
    return dataset.get("name"), dataset.get("granularity"), params.get("heldout")


def published_note(results: Path, interval: Interval, fast: bool, spec: dict[str, Any]) -> str:
    """Whether the published ChronoMem cell of the audited data (``spec``: the audited
    cell's spec, dumped to JSON) has the held-out headline computed here. Other
    selective cells (another held-out request file) are not compared: their headline
    is of other anchors."""
    import json

    if fast:
        return ""
    want = _cell_data(spec)
    found = []
    for path in sorted(Path(results, "published").glob("*/metrics.json")):
        try:
            block = json.loads(path.read_text(encoding="utf-8"))["metrics"]["rq4"]
            manifest = json.loads((path.parent / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if block.get("row") != "chronomem_selective" or not isinstance(manifest, dict):
            continue
        if _cell_data(manifest.get("spec") or {}) != want:
            continue
        vol = path.parent / "volatile.json"
        when = json.loads(vol.read_text(encoding="utf-8")).get("finished_at", "")
        found.append((str(when), path.parent.name, block["user"]["headline"]))
    if not found:
        return f" (no published cell of {want[2]} found to compare with)"
    _, name, stat = max(found)
    same = (
        abs((stat.get("mean") or 0.0) - interval.mean) < 1e-9
        and abs((stat.get("ci_low") or 0.0) - interval.lo) < 1e-9
    )
    return f" ({'the same as' if same else 'DIFFERENT from'} the published {name})"


def audit(options: AuditOptions) -> list[HeadlineAudit]:
    """The RQ4 headline's audit (module docstring)."""
    from chronobench.metrics.bootstrap import summarise
    from chronobench.systems.forgetting import POLICIES
    from chronobench.tracks.selective import audit_policies as pol

    t0 = time.perf_counter()
    h = _Harness(options.fast, options.data, options.cache)
    fast = options.fast
    extra = (1, 3) if fast else (1, 2, 4, 8)
    kept = (1, 2) if fast else (1, 2, 3)
    ks = (1, 10, 80) if fast else (1, 2, 3, 5, 10, 20, 40, 80)
    modes = (("lexical", "BM25"), ("dense", "dense"), ("hybrid", "hybrid"))
    order = h.kept_order()
    jobs: dict[str, tuple[Any, bool]] = {
        "system": (POLICIES["chronomem_selective"][0], False),
        "oracle": (POLICIES["oracle_gold_turns"][0], True),
    }
    for k in extra:
        jobs[f"random:{k}"] = (pol.gold_plus_random(k), True)
        jobs[f"similar:{k}"] = (pol.gold_plus_similar(k), True)
    for k in kept:
        jobs[f"kept:{k}"] = (pol.gold_kept(k, order), True)
    for mode, _ in modes:
        for k in ks:
            jobs[f"top:{mode}:{k}"] = (pol.top_k(k, mode), False)
    blind: list[tuple[str, Any, bool, str]] = [
        ("random turns, gold size", POLICIES["floor_random_turns"][0], True,
         "as many seeded random turns as the required set holds (its size through the "
         "oracle channel)"),
        ("question turns (60%)", POLICIES["floor_question_turns"][0], False,
         "the top hit of each of a seeded 60% of the stream's questions; never reads the "
         "request"),
        ("top hit and everything before it", pol.prefix_to_top_hit, False,
         "prefix deletion up to the request's top hybrid hit"),
        ("first 10% of the stream", pol.prefix_of_stream(0.1), False, "a fixed prefix"),
        ("fixed 10% of the stream", pol.fraction(0.1), False, "a seeded fraction, the "
         "same for every request of the stream"),
    ]  # fmt: skip
    if not fast:
        blind.append(("fixed 50% of the stream", pol.fraction(0.5), False, "a seeded half"))
    for name, policy, gold, _ in blind:
        jobs[f"blind:{name}"] = (policy, gold)
    jobs["surface"] = (pol.hit_and_neighbours, False)
    got = h.run(jobs)

    # Fast (two conversations): a property test of the metric, so attacks are held
    # against the oracle's own interval; ChronoMem's standing on two conversations is
    # noise (its interval there is wide and an attack can land inside it by chance),
    # and the full audit holds them against ChronoMem's held-out interval.
    held = "oracle" if fast else "system"
    system_rows = [r for r in h.rows[held] if r["headline"] is not None]
    stat = summarise([r["headline"] for r in system_rows], int(h.spec.seed),
                     clusters=[r["stream"] for r in system_rows])  # fmt: skip
    interval = Interval(mean=stat["mean"] or 0.0, lo=stat["ci_low"] or 0.0,
                        hi=stat["ci_high"] or 0.0, n=int(stat["n"] or 0))  # fmt: skip
    oracle = got["oracle"]
    curves = [
        Curve(name="gold + k random turns", action="one more turn, drawn at random outside "
              "the required set, removed",
              points=[(0, oracle)] + [(k, got[f"random:{k}"]) for k in extra]),
        Curve(name="gold + k similar turns", action="the next turn outside the required set "
              "that ChronoMem's hybrid search ranks for the request, removed",
              points=[(0, oracle)] + [(k, got[f"similar:{k}"]) for k in extra]),
        Curve(name="gold less k turns", action="one more required turn kept (those the "
              "forget questions cite least first)",
              points=[(0, oracle)] + [(k, got[f"kept:{k}"]) for k in kept]),
    ]  # fmt: skip
    attacks = [
        Attack(family="over_action", name=f"delete top {k} ({label})",
               score=got[f"top:{mode}:{k}"], note=f"the top {k} hits of ChronoMem's {label} search")
        for mode, label in modes for k in ks
    ]  # fmt: skip
    attacks += [Attack(family="request_blind", name=name, score=got[f"blind:{name}"], note=note)
                for name, _, _, note in blind]  # fmt: skip
    attacks.append(Attack(family="surface_rule", name="top BM25 hit and its neighbours",
                          score=got["surface"],
                          note="the required set adds the turn that echoes the anchor "
                          "(often the reply right after it): guess it by position"))  # fmt: skip
    streams = len(h.bench)
    data = (f"LoCoMo turn streams, {streams} conversations, {h.n_anchors()} "
            f"{'anchors (held-out and template; fast)' if fast else 'held-out anchors'}, "
            "extractive reader")  # fmt: skip
    notes = [
        f"The headline interval is {'this run' if fast else 'the held-out set'}'s 95% "
        f"cluster bootstrap over conversations of "
        f"{'the oracle (fast: a property test)' if fast else 'ChronoMem selective undo'}, "
        f"computed as the published cell computes it"
        f"{published_note(options.results, interval, fast, h.spec.model_dump(mode='json'))}. "
        f"{h.runs} policy runs in {time.perf_counter() - t0:.0f} s."
    ]
    return [
        HeadlineAudit(
            track="rq4",
            headline="held-out headline (HM of forget, keep, turn precision, recall)",
            system="oracle_gold_turns (fast)" if fast else "chronomem_selective",
            interval=interval,
            oracle_name="oracle_gold_turns (the required set reverted)",
            oracle_why=_ORACLE_WHY,
            oracle=oracle,
            curves=curves,
            attacks=attacks,
            not_applicable={"fixed_text": _FIXED_TEXT},
            data=data,
            notes=notes,
        )
    ]
