"""The strongest graph-free planner: the value-change replay with three more rules, each
read from the session log and ChronoMem's versions alone (no provenance edge, no
citation).

``value_replay`` re-runs a session whenever a slot it reads has another value on the
repaired state. Three cases where that is more than needed can be told from the log:

1. **A message whose stored facts its own text states is never re-run.** A typed
   message "my budget is 600 EUR" stores ``budget = 600 EUR`` whatever memory held:
   re-running it would store the same record. More generally, a session's recorded
   writes stand when every (slot, value) pair they state is either stated by the
   session's own text or is the value the repaired memory gives a slot the session
   reads (a note or a merge that still says what memory says).
2. **Task claims are checked against the failed run's actual claims**, not against
   what the failed store reads now: an args or answer step is replayed only when a slot
   it reads has another value than the failed run claimed.
3. **What a dropped session's own text supports is kept.** A session that cannot be
   re-run (its input is gone) keeps the records whose every pair is supported as in
   rule 1 and loses the others, as in the value replay; but a failed task claim that
   such a session's own text states (a merge that also brought the user's new value)
   still stands: the args or answer step that made it is not replayed for that slot.

This is the baseline the dependency graph must beat: everything it knows comes from
the log, the versions and the agent's newest-record rule.

**Retrieval-driven sessions** (the ``repair-6`` sets, :mod:`~chronobench.tracks.repair.retrieval`):
a note or a lookup that logged a search query read the newest slot record among what
retrieval returned, which the log does not state. The planner then has to guess what
the session read; ``reads`` picks how (each a registered method):

- ``newest`` (``graph_free_planner``): as if the session read the newest record stating
  its slot, the rule that was exact on the earlier sets;
- ``lexical``: the records sharing the most words with the logged query stand in for
  what retrieval returned (the best guess from the log without the retriever);
- ``slot``: any change to any record stating the slot re-runs the session (every
  session that could have read the fault is re-run);
- ``retriever``: the store's own retriever re-run on each version. Not a log-only
  planner: it needs the exact embedder and index the agent used at the time, which a
  deployed system does not keep once it re-embeds; measured to show what a replayable
  retriever gives a planner.
"""

from __future__ import annotations

from typing import Any

from chronobench.tracks.repair.agent import View, workflow
from chronobench.tracks.repair.baselines import CountingAgent, LogWalk, nothing_to_repair
from chronobench.tracks.repair.context import RepairContext, RepairOutcome
from chronobench.tracks.repair.history import agent_reads, read_value, session_reads
from chronobench.tracks.repair.lexicon import find_pairs, read_pairs
from chronobench.tracks.repair.retrieval import lexical_top, retrieves

__all__ = ["READS", "graph_free_planner", "own_pairs", "reading", "supported_writes"]

READS = ("newest", "lexical", "slot", "retriever")


def own_pairs(ev: dict[str, Any], domain: str) -> set[tuple[str, str]]:
    """The (slot, value) pairs a session's own logged text states (a sync's or a
    summary job's pairs; a message's words read through the lexicon)."""
    pairs = {(s, v) for s, v in ev.get("pairs") or []}
    return pairs | set(find_pairs(ev.get("input") or "", domain))


def reading(
    ev: dict[str, Any], items: dict[str, str], domain: str, reads: str = "newest"
) -> dict[str, Any]:
    """slot -> what the planner takes session ``ev`` to read for it from ``items``: the
    newest record's value, or for a retrieval-driven session under ``reads`` (module
    doc) the newest value among the guessed retrieved records (``lexical``,
    ``retriever``), or every record stating the slot (``slot``)."""
    if reads not in READS:
        raise ValueError(f"graph-free planner reads={reads!r}: expected one of {READS}")
    slots = session_reads(ev, domain)
    if reads == "newest" or not retrieves(ev):
        return {s: read_value(items, s, domain) for s in slots}
    if reads == "slot":
        return {s: tuple((i, t) for i, t in items.items()
                         if s in {x for x, _ in read_pairs(t, domain)}) for s in slots}  # fmt: skip
    if reads == "retriever":
        return agent_reads(ev, items, domain)
    shown = {i: items[i] for i in lexical_top(items, ev["query"])}
    return {s: read_value(shown, s, domain) for s in slots}


def supported_writes(
    ev: dict[str, Any],
    written: dict[str, str],
    repaired: dict[str, str],
    domain: str,
    reads: str = "newest",
) -> dict[str, bool]:
    """item -> whether every pair of the record the session wrote is stated by the
    session's own text or equals what ``repaired`` memory gives a slot the session reads."""
    own, got = own_pairs(ev, domain), reading(ev, repaired, domain, reads)

    def ok(slot: str, value: str) -> bool:
        return (slot, value) in own or got.get(slot, None) == value

    return {
        item: all(ok(s, v) for s, v in read_pairs(text, domain)) for item, text in written.items()
    }


def _apply(view: View, before: dict[str, str], after: dict[str, str], keep: set[str]) -> None:
    """A session's recorded writes (the diff of its version) on ``view``; only the
    written items in ``keep``, and its deletions only when every written item is kept
    (a merge whose summary is dropped leaves its originals)."""
    written = [i for i, t in after.items() if before.get(i) != t]
    if all(i in keep for i in written):
        for item in [i for i in before if i not in after]:
            view.items.pop(item, None)
    for item in written:
        if item in keep:
            view.items.pop(item, None)
            view.items[item] = after[item]


def graph_free_planner(ctx: RepairContext, reads: str = "newest") -> RepairOutcome:
    """Re-walk the log from the first diagnosed session over the state rebuilt from the
    version history; skip the diagnosed sessions; re-run a session only when a slot it
    reads changed value and its recorded writes are not all supported (rule 1); keep the
    supported writes of one that cannot be re-run (rule 3); replay the args / answer
    steps whose slots now read another value than the failed run claimed (rule 2)."""
    walk = LogWalk(ctx)
    if not walk.started:
        return nothing_to_repair(ctx)
    domain, view = walk.domain, walk.view
    agent = ctx.agent(cls=CountingAgent)
    rerun: list[str] = []
    kept: list[str] = []
    dropped: set[tuple[str, str]] = set()  # what the dropped sessions' own texts state
    for ev, before, after in walk.sessions:
        written = {i: t for i, t in after.items() if before.get(i) != t}
        everything = set(written)
        if reading(ev, view.items, domain, reads) == reading(ev, before, domain, reads):
            _apply(view, before, after, everything)
            continue
        ok = supported_writes(ev, written, view.items, domain, reads)
        if all(ok.values()):
            _apply(view, before, after, everything)
            kept.append(ev["event"])
        elif ev["event"] not in ctx.unavailable:
            agent.execute(ev, view, "repair")
            rerun.append(ev["event"])
        else:
            _apply(view, before, after, {i for i, good in ok.items() if good})
            dropped |= own_pairs(ev, domain)
    steps = _changed_steps(ctx, view.items, dropped)
    return walk.finish(ctx, steps, agent, {"rerun": rerun, "kept_by_own_text": kept})


def _changed_steps(
    ctx: RepairContext, items: dict[str, str], dropped: set[tuple[str, str]]
) -> set[str]:
    """The args / answer steps with a slot that now reads another value than the failed
    run claimed (rule 2), unless a dropped session's own text states the claimed value
    (rule 3)."""
    domain, claims = ctx.case["domain"], ctx.old.claims
    out = set()
    for spec in workflow(domain):
        if spec.role not in ("args", "answer"):
            continue
        for slot in spec.slots:
            claimed = claims.get(slot)
            if read_value(items, slot, domain) != claimed and (slot, claimed) not in dropped:
                out.add(spec.step_id)
    return out
