"""The leaderboard's RQ4 section (selective forgetting): runs of ``task=selective``.

One row per RQ4 row (ChronoMem's policies, the oracle, the floors, the peers with a
delete), the newest published run of each; then the peers without a delete, and why.
"""

from __future__ import annotations

import textwrap
from typing import Any

_LABELS = {
    "chronomem_selective": "ChronoMem selective undo (plan_selective_undo + revert_commits)",
    "chronomem_truncate": "ChronoMem truncate (today's NL rollback)",
    "oracle_gold_turns": "oracle: the required set reverted",
    "floor_no_rollback": "floor: no rollback",
    "floor_truncate_anchor": "floor: truncate at the anchor (oracle position)",
    "floor_top_hit": "floor: delete the top search hit only",
    "floor_random_turns": "floor: random turns, as many as the gold (request-blind; oracle size)",
    "floor_question_turns": "floor: the turns of 60% of the questions (reads the questions, not the request)",
}
_ORDER = list(_LABELS)


def _label(name: str) -> str:
    if name in _LABELS:
        return _LABELS[name]
    from chronobench.systems.peers import peer_spec

    try:
        return f"{peer_spec(name).label or name}: own search, delete its top k hits"
    except KeyError:
        return name


def row_label(name: str) -> str:
    """The board's label of RQ4 row ``name`` (the viewer shows the same)."""
    return _label(name)


def _ci(block: dict[str, Any] | None) -> str:
    if not block or block.get("mean") is None:
        return "–"
    return f"{100 * block['mean']:.1f} [{100 * block['ci_low']:.1f}, {100 * block['ci_high']:.1f}]"


def _pct(block: dict[str, Any] | None) -> str:
    return "–" if not block or block.get("mean") is None else f"{100 * block['mean']:.1f}"


#: The held-out file of the RQ4 headline table (a run that names no other file).
HEADLINE_HELDOUT = "locomo_forget_heldout"


def record_fields(spec: Any) -> dict[str, Any]:
    """An RQ4 run's field of the leaderboard's record: its held-out request file (the
    stem) when the cell names one; None, the default file, is the RQ4 table's headline."""
    from pathlib import Path

    heldout = spec.task.params.get("heldout")
    return {"heldout": Path(str(heldout)).stem if heldout else None}


def selective_section(runs: list[Any]) -> tuple[str, list[str]]:
    """Markdown of the RQ4 table (the headline held-out file), then one table per other
    held-out file a run names, and the run ids they show."""
    of = {id(r): getattr(r, "heldout", None) or HEADLINE_HELDOUT for r in runs}
    text, ids = _headline_section([r for r in runs if of[id(r)] == HEADLINE_HELDOUT])
    for heldout in sorted(set(of.values()) - {HEADLINE_HELDOUT}):
        more, more_ids = _other_heldout(heldout, [r for r in runs if of[id(r)] == heldout])
        text, ids = text + more, ids + more_ids
    return text, ids


def _newest(runs: list[Any]) -> dict[str, Any]:
    newest: dict[str, Any] = {}
    for r in runs:
        name = (r.metrics.rq4 or {}).get("row")  # the row (its run records no system)
        if name and (name not in newest or r.finished_at >= newest[name].finished_at):
            newest[name] = r
    return newest


def _other_heldout(heldout: str, runs: list[Any]) -> tuple[str, list[str]]:
    """A compact table for the rows run on another held-out file."""
    newest = _newest(runs)
    if not newest:
        return "", []
    names = sorted(newest, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))
    header = ["row", "held-out headline", "forget", "keep", "turn P", "turn R", "n"]
    rows = []
    for name in names:
        u = (newest[name].metrics.rq4 or {}).get("user") or {}
        rows.append(
            [
                _label(name),
                _ci(u.get("headline")),
                _pct(u.get("forget")),
                _pct(u.get("keep")),
                _pct(u.get("precision")),
                _pct(u.get("recall")),
                str(u.get("anchors", 0)),
            ]
        )
    dropped = (newest[names[0]].metrics.rq4 or {}).get("dropped") or {}
    intro = (
        f"The same rows and scores on the held-out requests `{heldout}` "
        f"(data_builders/user_queries/{heldout}.jsonl; data_builders/user_queries/README.md), "
        "without template requests. Anchors dropped: "
        + (", ".join(f"{k} {v}" for k, v in dropped.items()) or "none")
        + "."
    )
    lines = [
        f"### RQ4 on `{heldout}`",
        "",
        *textwrap.wrap(intro, width=88, break_on_hyphens=False),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    ids = [newest[n].run_id for n in names]
    lines += ["Runs: " + ", ".join(f"`{i}`" for i in ids), ""]
    return "\n".join(lines), ids


def _headline_section(runs: list[Any]) -> tuple[str, list[str]]:
    from chronobench.systems.forgetting import NOT_RUN

    newest = _newest(runs)
    if not newest:
        return "", []
    names = sorted(newest, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))
    header = [
        "row",
        "held-out headline",
        "forget",
        "keep",
        "keep after",
        "keep other",
        "turn P",
        "turn R",
        "templates headline",
        "n (held-out / templates)",
        "peer's k (sweep: held-out headline)",
    ]
    rows = []
    for name in names:
        q = newest[name].metrics.rq4 or {}
        u, t = q.get("user") or {}, q.get("template") or {}
        rows.append(
            [
                _label(name),
                _ci(u.get("headline")),
                _pct(u.get("forget")),
                _pct(u.get("keep")),
                _pct(u.get("keep_after")),
                _pct(u.get("keep_other")),
                _pct(u.get("precision")),
                _pct(u.get("recall")),
                _ci(t.get("headline")),
                f"{u.get('anchors', 0)} / {t.get('anchors', 0)}",
                _sweep(q),
            ]
        )
    first = newest[names[0]].metrics.rq4 or {}
    dropped = first.get("dropped") or {}
    required = first.get("required") or {}
    routes = ", ".join(f"{k} {v}" for k, v in (required.get("extra_turns") or {}).items())
    intro = (
        '"Forget what I said about X", keep everything else '
        "(`python -m chronobench run experiment=selective`; docs/metrics.md, RQ4). LoCoMo "
        "turn streams, all 10 conversations; an anchor is an observation's evidence turns; "
        "its required set adds the turns LoCoMo's annotations tie to the same fact "
        f"({required.get('grown', 0)} of {required.get('anchors', 0)} anchors grew; extra "
        f"turns by route: {routes or 'none'}). Held-out: the hand-written requests "
        "(data_builders/user_queries/locomo_forget_heldout.jsonl); templates: up to 8 per "
        "conversation. Headline (x100 [95% cluster-bootstrap CI over conversations]) = "
        "per-anchor harmonic mean of forget (1 - leakage: forget questions answered "
        "anyway), keep (every scored question outside the required set, still answered), "
        "turn precision (removed turns inside the required set; 0 when nothing is removed) "
        "and turn recall (required turns removed). Keep after / keep other split keep by "
        "where the evidence lies. Only questions the known set's reference reader answers "
        "at the last version count, and a forget question it still answers once the "
        "required set is gone is left out for every row. A peer runs the delete_hits sweep "
        "and is shown at its best k. Anchors dropped: "
        + ", ".join(f"{k} {v}" for k, v in dropped.items())
        + " (template counts: candidates passed over)."
    )
    lines = [
        "## RQ4: selective forgetting (LoCoMo turn granularity, extractive reader)",
        "",
        *textwrap.wrap(intro, width=88, break_on_hyphens=False),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        "Peers without a row: "
        + "; ".join(f"{_peer(n)}: {why}" for n, why in NOT_RUN.items() if n not in newest)
        + ".",
        "",
    ]
    ids = [newest[n].run_id for n in names]
    lines += ["Runs: " + ", ".join(f"`{i}`" for i in ids), ""]
    return "\n".join(lines), ids


def _sweep(q: dict[str, Any]) -> str:
    """A peer's best k and its sweep (held-out headline per k); blank for other rows."""
    sweep = q.get("sweep") or {}
    if not sweep:
        return ""
    pts = ", ".join(f"{k}: {_pct((sweep[k] or {}).get('user'))}" for k in sorted(sweep, key=int))
    return f"k = {q.get('delete_hits')} ({pts})"


def _peer(name: str) -> str:
    from chronobench.systems.peers import peer_spec

    return peer_spec(name).label or name
