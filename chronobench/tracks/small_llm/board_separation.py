"""What the section says in words beside its tables: whether one system's interval
separates from another's, over which known set RC-QA was scored, and whether
prompt-only's row would only repeat full-history's.

On a small subset the intervals are wide, and a reader comparing two rows by eye would
take overlapping intervals for a difference. These sentences decide what the section
lets a reader conclude, from the runs' figures and their per-query files, so they sit
apart from the table layout and can be read (and checked) on their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.leaderboard.tables import stat_cell


def probe_stats(r: Any) -> dict[str, Any]:
    """A run's probe figures over all its queries (empty for a run without probes)."""
    probes = r.metrics.probes
    return dict(probes.all or {}) if probes is not None else {}


def rq3_separation(runs: list[Any], measure: tuple[str, str]) -> list[str]:
    """Whether ChronoMem's RQ3 headline interval separates from the other summary
    cells' (its oracle's aside), said in words. ``measure``: the headline's
    ``(field, name)``, handed in by the table so that its first column is what is
    compared."""
    by = {r.system: r for r in runs}

    def headline(r: Any) -> Any:
        return probe_stats(r).get(measure[0])

    mine = headline(by["chronomem"]) if "chronomem" in by else None
    if mine is None or mine.ci_low is None or mine.ci_high is None:
        return []
    others = tuple(s for s in by if s not in ("chronomem", "chronomem_oracle"))
    said = _versus(mine, by, others, headline)
    if not said:
        return []
    return [f"RQ3 headline ({measure[1]}), ChronoMem {stat_cell(mine)} against "
            + "; ".join(said) + ".", ""]  # fmt: skip


def _same_replies(a: Any, b: Any) -> bool:
    """Whether two runs answered every probe of every query alike (their per-query
    files): on an add-only stream prompt-only's prompts are full-history's, so under
    greedy decoding its replies are too, and its row would repeat full-history's."""
    from chronobench.results.per_query import QUERIES_FILE, QueryFile

    def answers(r: Any) -> dict[str, list[tuple[str, str, str]]] | None:
        path = Path(r.folder) / QUERIES_FILE
        if not path.is_file():
            return None
        out = {}
        for q in QueryFile(path).queries:
            probes = q.get("probes") or []
            out[str(q["query_id"])] = sorted(
                (str(p.get("item")), str(p.get("label")), str(p.get("answer"))) for p in probes
            )
        return out

    left, right = answers(a), answers(b)
    return left is not None and left == right


def without_same_prompts(gen: list[Any]) -> tuple[list[Any], str]:
    """The generation rows less prompt-only where its replies are full-history's, and
    the line that says why it is missing (empty when nothing is left out)."""
    full = next((r for r in gen if r.system == "full_history"), None)
    if full is None:
        return gen, ""
    po = next((r for r in gen if r.system == "prompt_only"), None)
    if po is None:
        return gen, (
            "Prompt-only is not run here: on LoCoMo's add-only streams (nothing is ever "
            "overwritten) its prompts are full-history's."
        )
    if not _same_replies(po, full):
        return gen, ""
    return [r for r in gen if r is not po], (
        "Prompt-only is not shown: every one of its replies is full-history's (on LoCoMo's "
        "add-only streams its prompts are the same), so its row would repeat that one."
    )


def known_lines(gen: list[Any]) -> list[str]:
    """The known set this model's rows were scored with, and its size over the items
    their queries probe (from the per-query files' keep / forget entries)."""
    from chronobench.results.per_query import QUERIES_FILE, QueryFile

    sizes: dict[str, tuple[int, int, int]] = {}
    for r in gen:
        sha = _known_sha(r)
        path = Path(r.folder) / QUERIES_FILE
        if sha is None or sha in sizes or not path.is_file():
            continue
        flags: dict[tuple[str, str], bool] = {}
        streams = set()
        for q in QueryFile(path).queries:
            for p in q.get("probes") or []:
                if "known" in p:
                    flags[(str(q["stream_id"]), str(p["item"]))] = bool(p["known"])
                    streams.add(str(q["stream_id"]))
        sizes[sha] = (sum(flags.values()), len(flags), len(streams))
    if not sizes:
        return []
    parts = [
        f"{k} of the {n} battery items these queries probe, over {s} conversations "
        f"(sha256 `{sha[:12]}...`)"
        for sha, (k, n, s) in sorted(sizes.items())
    ]
    return [
        "Known set (protocol 3: the items the reference reader, ChronoMem with its defaults "
        "through this model, answers; only those count for RC-QA): " + "; ".join(parts) + ".",
        "",
    ]


def _known_sha(r: Any) -> str | None:
    path = Path(r.folder) / "manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("known_sha256")
    except (OSError, ValueError):
        return None


def rcqa_separation(gen: list[Any]) -> list[str]:
    """Whether ChronoMem's RC-QA interval separates from full-history's and
    prompt-only's, and from the request-blind floors' (a method that does not beat
    restoring a version blindly shows nothing about reading the request), said in words
    (overlapping intervals do not)."""
    by = {r.system: r for r in gen}
    ours = next((by[s] for s in ("chronomem", "chronomem+resolver") if s in by), None)
    if ours is None:
        return []
    mine = _rc(ours)
    if mine is None or mine.ci_low is None or mine.ci_high is None:
        return []
    lines = []
    said = _versus(mine, by, ("full_history", "prompt_only"))
    if said:
        lines += [f"RC-QA, {system_label(ours.system)} {stat_cell(mine)} against " + "; ".join(said)
                  + ".", ""]  # fmt: skip
    floors = _versus(mine, by, ("floor_restore_random", "floor_restore_v1"))
    if floors:
        lines += [f"Against the request-blind floors, {system_label(ours.system)}'s RC-QA: "
                  + "; ".join(floors) + ".", ""]  # fmt: skip
    return lines


def _versus(
    mine: Any, by: dict[str | None, Any], others: tuple[str, ...], stat: Any = None
) -> list[str]:
    """``<label> <stat>: whether the intervals overlap`` for each of ``others`` run
    (``stat``: a run's figure; RC-QA unless given)."""
    stat = stat or _rc
    said = []
    for other in others:
        st = stat(by[other]) if other in by else None
        if st is None or st.ci_low is None or st.ci_high is None:
            continue
        apart = mine.ci_low > st.ci_high or st.ci_low > mine.ci_high
        said.append(
            f"{system_label(other)} {stat_cell(st)}: "
            + (
                "the intervals do not overlap"
                if apart
                else "the intervals overlap, so this subset does not separate them"
            )  # fmt: skip
        )
    return said


def _rc(r: Any) -> Any:
    """A run's RC-QA over all its queries, the figure the RQ2 sentences compare."""
    probes = r.metrics.probes
    return (probes.all or {}).get("rc_qa") if probes is not None else None


# The section's tables name systems the same way, so they import this; it lives here
# because the section imports this module, and the reverse import would make a circle.
def system_label(system: str | None) -> str:
    """A system's board label; ``+resolver`` (ChronoMem reading the request through the
    backbone) is spelled out."""
    from chronobench.systems.registry import SYSTEMS

    base = str(system).replace("+resolver", "")
    label = SYSTEMS.label(base) if base in SYSTEMS else base
    return label + (" + backbone resolver" if str(system).endswith("+resolver") else "")
