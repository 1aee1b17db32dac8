"""The RQ4 rows: systems that forget what a request names (docs/metrics.md).

A row is written once per stream (``ingest``), then per request a session on a copy:
``forget(request)`` changes the memory the row's way, ``ask(questions)`` answers from
what is left (the same reader for every row), ``remaining()`` is the set of write ids
whose texts the memory still holds (what the scorer compares with the gold; read from the
state, never from the row's own report). Rows whose policy needs the gold (the oracle,
and two floors that take only its position or its size) get it through
``open_oracle_session(gold)``, the RQ4 oracle channel; no other row is handed it.

ChronoMem rows read their store exactly as ChronoMem's benchmark system does
(:class:`~chronobench.systems.chronomem.ChronoMemSession`); peers read through their own
search (:class:`~chronobench.systems.peers.system.PeerSession`) and delete through their
own API: the top k hits of their own search for the request (:func:`peer_forget`; the
runner sweeps k, ``task.params.delete_hits``). A peer without a delete is "not
supported" (no run).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from chronobench.hashing import stable_hash
from chronobench.protocols import RollbackOutcome
from chronobench.systems.base import APP
from chronobench.systems.chronomem import ChronoMemSession, ChronoMemSystem
from chronobench.systems.registry import ChronoMemOptions
from chronomem.types import UncertainRequestError

Policy = Callable[[Any, Any, str, frozenset[int] | None], dict[str, Any]]


class ForgetSession(ChronoMemSession):
    """A ChronoMem session whose one change is a forget (the row's policy)."""

    def __init__(self, system: ChronoMemForgetSystem, gold: frozenset[int] | None) -> None:
        super().__init__(system, self._run)
        self.gold = gold
        self.meta: dict[str, Any] = {}

    def _run(self, work: Any, request: str) -> RollbackOutcome:
        sysm: ChronoMemForgetSystem = self.system  # type: ignore[assignment]
        self.meta = sysm.policy(sysm, work, request, self.gold)
        return RollbackOutcome(selected_version=None, meta=self.meta)

    def forget(self, request: str) -> dict[str, Any]:
        return self.rollback(request).meta

    def remaining(self) -> set[int]:
        ing = self.system.ingested
        store = self._work if self._work is not None else ing.store
        held = store.snapshot(APP, ing.user)
        return {j for item, j in self.system.item_write.items() if item in held}


class ChronoMemForgetSystem(ChronoMemSystem):
    """ChronoMem's store and reader with a forget ``policy`` (see :data:`POLICIES`)."""

    def __init__(self, ctx: Any, policy: Policy, name: str, options: ChronoMemOptions) -> None:
        super().__init__(ctx, options)
        self.policy = policy
        self.name = name
        self.item_write: dict[str, int] = {}
        self.seed = int(getattr(ctx.params, "seed", 0))
        self.questions: list[str] = []

    def ingest(self, writes: Sequence[Any]) -> None:
        super().ingest(writes)
        self.item_write = {c.item_id: int(w.write_id) for w in writes for c in w.changes}
        self.stream_key = self.ingested.digest

    def see_questions(self, texts: Sequence[str]) -> None:
        """The stream's question list, which every session of the stream is asked (a
        deployed agent sees it after its first session); only floor_question_turns
        reads it before forgetting."""
        self.questions = list(texts)

    def open_session(self) -> ForgetSession:  # type: ignore[override]
        return ForgetSession(self, None)

    def open_oracle_session(self, gold: frozenset[int]) -> ForgetSession:  # type: ignore[override]
        return ForgetSession(self, frozenset(gold))

    def revert(self, work: Any, writes: Sequence[int]) -> dict[str, Any]:
        """Revert the commits of write ids ``writes`` (later changes kept)."""
        ing = self.ingested
        vids = sorted({ing.vid_of[j] for j in writes if j in ing.vid_of and j > 0})
        if not vids:
            return {"reverted": []}
        done = work.revert_commits(APP, ing.user, vids, with_dependents="keep")
        return {"reverted": [ing.j_of[v] for v in done.reverted if v in ing.j_of]}


# ---- the ChronoMem-backed policies -------------------------------------------------------


def selective(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """ChronoMem selective undo: the request's commits, reverted (later ones kept)."""
    try:
        plan = work.plan_selective_undo(APP, sysm.ingested.user, request, with_dependents="keep")
    except UncertainRequestError as exc:
        return {"refused": str(exc)[:200]}
    j_of = sysm.ingested.j_of
    return sysm.revert(work, [j_of[v] for v in plan.versions if v in j_of])


def truncate(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Today's behaviour: the NL rollback (truncate) the request resolves to."""
    try:
        res = work.rollback_to_version_by_nl_query(APP, sysm.ingested.user, request)
    except UncertainRequestError as exc:
        return {"refused": str(exc)[:200]}
    return {"restored": sysm.ingested.j_of.get(res.target_version), "intent": res.intent}


def oracle(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """The anchor's required set removed (through the oracle channel): its own turns and
    the turns that restate its fact (:mod:`data_builders.restate`)."""
    return sysm.revert(work, sorted(gold))


def no_rollback(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Floor: nothing changes (keeps all, forgets nothing)."""
    return {}


def truncate_anchor(
    sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any
) -> dict[str, Any]:
    """Floor: truncate right before the anchor's first turn (oracle position): forgets,
    and loses everything said after it."""
    ing = sysm.ingested
    j = min(gold) - 1
    work.rollback_to_version(APP, ing.user, ing.vid_of[j], mode="truncate")
    return {"restored": j}


def top_hit(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Floor: the commit that wrote the top item of ChronoMem's search for the request."""
    hits = work.search(APP, sysm.ingested.user, request, 1)
    writes = [sysm.item_write[h.item_id] for h in hits if h.item_id in sysm.item_write]
    return sysm.revert(work, writes)


def random_turns(sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any) -> dict[str, Any]:
    """Request-blind floor: as many random turns as the gold set holds (its size comes
    through the oracle channel; which turns, from a seed of the run, the stream and the
    request text's hash, never its words)."""
    writes = sorted(set(sysm.item_write.values()))
    rng = random.Random(stable_hash(sysm.seed, sysm.stream_key, "rq4-random", request))
    return sysm.revert(work, rng.sample(writes, min(len(gold), len(writes))))


QUESTION_SHARE = 0.6  # share of questions whose turns floor_question_turns deletes (below)


def question_turns(
    sysm: ChronoMemForgetSystem, work: Any, request: str, gold: Any
) -> dict[str, Any]:
    """Request-blind floor that reads the questions instead: the stream's question list
    (the same for every request; :meth:`ChronoMemForgetSystem.see_questions`) is mapped to
    the turns its search finds first, and the turns of a seeded ``QUESTION_SHARE`` of the
    questions are reverted. It removes many turns, few of them in any anchor's required
    set, so the headline's precision term keeps it near the floor (docs/metrics.md, "Why
    this headline")."""
    ing = sysm.ingested
    rng = random.Random(stable_hash(sysm.seed, sysm.stream_key, "rq4-questions"))
    texts = sorted(sysm.questions)
    chosen = [t for t in texts if rng.random() < QUESTION_SHARE]
    writes = set()
    for text in chosen:
        for h in ing.store.search(APP, ing.user, text, 1):
            if h.item_id in sysm.item_write:
                writes.add(sysm.item_write[h.item_id])
    return sysm.revert(work, sorted(writes))


# name -> (policy, needs the oracle channel)
POLICIES: dict[str, tuple[Policy, bool]] = {
    "chronomem_selective": (selective, False),
    "chronomem_truncate": (truncate, False),
    "oracle_gold_turns": (oracle, True),
    "floor_no_rollback": (no_rollback, False),
    "floor_truncate_anchor": (truncate_anchor, True),
    "floor_top_hit": (top_hit, False),
    "floor_random_turns": (random_turns, True),
    "floor_question_turns": (question_turns, False),
}


# ---- peers ---------------------------------------------------------------------------------


def peer_forget(peer: Any, request: str, delete_hits: int) -> dict[str, Any]:
    """A peer's natural forget: delete the top ``delete_hits`` hits of its own search."""
    hits = peer.search(request, delete_hits)
    peer.delete(hits)
    return {"deleted": len(hits)}


class PeerForgetSession:
    """A peer session (a copy of the post-exposure folder) that forgets by deletion."""

    def __init__(self, system: Any, delete_hits: int) -> None:
        from chronobench.systems.peers.system import PeerSession

        self.inner = PeerSession(system)
        self.delete_hits = delete_hits

    def forget(self, request: str) -> dict[str, Any]:
        import shutil

        inner, sysm = self.inner, self.inner.system
        sysm._n += 1
        inner._folder = sysm._root / f"session-{sysm._n}"
        shutil.copytree(sysm._base_dir, inner._folder)
        inner.peer = sysm._open(inner._folder)
        return peer_forget(inner.peer, request, self.delete_hits)

    def ask(self, questions: Sequence[Any]) -> list[Any]:
        return self.inner.ask(questions)

    def remaining(self) -> set[int]:
        return {int(m.version) for m in self.inner.peer.state() if m.version is not None}

    def close(self) -> None:
        self.inner.close()


def supports_delete(peer_name: str) -> bool:
    """Whether a peer adapter has the optional ``delete`` method (its own API's delete)."""
    import importlib

    from chronobench.systems.peers import peer_spec

    module, _, attr = peer_spec(peer_name).target.partition(":")
    return callable(getattr(getattr(importlib.import_module(module), attr), "delete", None))


# Peers without an RQ4 row, and why (the board shows these lines; docs/peers.md).
NOT_RUN: dict[str, str] = {
    "langgraph_checkpointer": "not supported by the adapter: its memories channel merges "
    "by key and has no delete (LangGraph's way would be a deleting reducer; not built)",
    "openai_agents_session": "not supported: a session has pop_item (the last item) and "
    "clear_session, no delete by id",
    "adk_rewind": "not supported: an ADK session has no per-event delete (rewind only)",
    "adk_rewind_user_state": "not supported: no per-key delete of user: state through "
    "the session service",
    "graphiti": "not run: remove_episode exists, but ingesting every LoCoMo turn through "
    "its extraction pipeline does not fit the preset's time",
}
