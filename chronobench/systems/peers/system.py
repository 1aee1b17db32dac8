"""A peer as a runner system under the sealed protocol (:class:`~chronobench.protocols.MemorySystem`).

Exposure (``ingest``) adds every public write to the peer once per stream. Each session
works on a copy of that post-exposure folder: ``rollback(request)`` locates the described
write with the peer's own search (:func:`~.targeting.own_target`: the request text is all
it reads) and rolls back the peer's own way; ``ask`` answers from the peer's search
(questions) or its whole state (summary requests). A session without a rollback (the
``final_qa`` questions) reads the post-exposure peer. The memory-systems track
(:mod:`chronobench.tracks.peers.run`) also opens sessions through the oracle channel
(``open_oracle_session``) to measure restore fidelity at the gold v*; the peers are not
registered as oracles, so no benchmark cell hands them the target.

Registered names resolve through this module's ``__getattr__``: ``system:mem0`` is a
:class:`PeerSystem` bound to peer ``mem0`` (the registry calls a class with the context
and options only, so the peer name travels in the class).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronobench.systems.registry import RetrievalOptions


class PeerSession:
    """One session: a copy of the post-exposure folder (opened on the first rollback),
    or the post-exposure peer itself when the session never rolls back."""

    def __init__(self, system: PeerSystem, target: int | None = None) -> None:
        self.system = system
        self.target = target  # the oracle channel's v* (None: own targeting)
        self.peer: Any = None  # the rolled-back copy
        self._folder: Path | None = None

    def rollback(self, request: str) -> Any:
        from chronobench.protocols import RollbackOutcome
        from chronobench.systems.peers.targeting import own_target

        sysm = self.system
        assert sysm._base_dir is not None, "ingest() must come first"
        sysm._n += 1
        self._folder = sysm._root / f"session-{sysm._n}"
        shutil.copytree(sysm._base_dir, self._folder)
        self.peer = sysm._open(self._folder)
        if self.target is not None:
            version, candidates, meta = self.target, [], {"oracle": True}
        else:
            t = own_target(self.peer, request)
            version, candidates, meta = t.version, t.candidates, {"intent": t.intent}
        if version is None:
            return RollbackOutcome(selected_version=None, meta={**meta, "refused": "no hit"})
        info = self.peer.rollback_to(version)
        meta.update(native=info.native, method=info.method)
        return RollbackOutcome(selected_version=version, candidates=candidates, meta=meta)

    def ask(self, questions: Sequence[Any]) -> list[Any]:
        from chronobench.protocols import Reply
        from chronobench.systems.base import pack_ranked, pack_spread
        from chronobench.systems.prompts import is_summary_request, qa_request, summary_request

        sysm = self.system
        peer = self.peer if self.peer is not None else sysm._base
        out = []
        for q in questions:
            if is_summary_request(q.text):
                texts = [m.text for m in peer.state()]
                req = summary_request(
                    q.text, pack_spread(texts, sysm.summary_budget), sysm.ctx.params
                )
            else:
                hits = peer.search(q.text, sysm.top_k)
                req = qa_request(
                    q.text, pack_ranked([h.text for h in hits], sysm.budget), sysm.ctx.params
                )
            out.append(Reply(q.question_id, request=req))
        return out

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
            self.peer = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class PeerSystem:
    """Runs one peer under the sealed protocol."""

    peer = ""  # set by the bound subclass
    name = ""

    def __init__(self, ctx: Any, options: RetrievalOptions) -> None:
        from chronobench.systems.peers.embedding import PeerEmbedding

        self.ctx = ctx
        self.top_k = options.top_k_items
        self.budget = options.context_budget_tokens
        self.summary_budget = options.summary_budget_tokens
        stores = getattr(ctx, "stores", None)
        # The run's embedder object, so peers share its vector cache with ChronoMem's rows.
        self.embedding = PeerEmbedding(stores.embedder if stores is not None else "minilm")
        self._root = Path(tempfile.mkdtemp(prefix=f"chronobench-{self.peer}-"))
        self._base: Any = None  # the post-exposure peer (kept open for sessions without rollback)
        self._base_dir: Path | None = None
        self._n = 0

    def _open(self, folder: Path) -> Any:
        from chronobench.systems.peers import create_peer

        return create_peer(self.peer, folder, self.embedding)

    def ingest(self, writes: Sequence[Any]) -> None:
        """Exposure: every public write added once; sessions work on copies of the folder."""
        from chronobench.systems.peers.base import peer_writes

        if self._base is not None:
            self._base.close()
        self._n += 1
        self._base_dir = self._root / f"base-{self._n}"
        peer = self._open(self._base_dir)
        for write in peer_writes(writes):
            peer.add(write)
        peer.close()  # flushed; copies start from what is on disk
        self._base = self._open(self._base_dir)

    def open_session(self) -> PeerSession:
        """A session that locates the target with the peer's own search."""
        return PeerSession(self)

    def open_oracle_session(self, target: Any) -> PeerSession:
        """A session rolled back to ``target.target_version`` (the oracle channel; only
        the memory-systems track opens one: the peers are not registered as oracles)."""
        return PeerSession(self, int(target.target_version))

    def close(self) -> None:
        if self._base is not None:
            self._base.close()
            self._base = None
        shutil.rmtree(self._root, ignore_errors=True)


_BOUND: dict[str, type[PeerSystem]] = {}


def __getattr__(name: str) -> type[PeerSystem]:
    from chronobench.systems.peers import PEERS

    if name not in PEERS:
        raise AttributeError(name)
    if name not in _BOUND:
        _BOUND[name] = type(f"PeerSystem[{name}]", (PeerSystem,), {"peer": name, "name": name})
    return _BOUND[name]
