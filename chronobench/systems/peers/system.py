"""A peer as a runner system (the current :class:`~chronobench.protocols.MemorySystem`).

Thin on purpose (the protocol is about to change): exposure adds every write to the
peer once per stream; each rollback query reopens a copy of that post-exposure folder,
targets with the peer's own search (``target: own``) or the gold version (``target:
oracle``), rolls back the peer's own way, and the probes read the peer's search (QA) or
its whole state (summaries). ``final_qa`` reads the post-exposure peer.

Registered names resolve through this module's ``__getattr__``: ``system:mem0`` is a
:class:`PeerSystem` bound to peer ``mem0`` (the registry calls a class with the context
and options only, so the peer name travels in the class).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PositiveInt


class PeerSystemOptions(BaseModel):
    """Options of every peer system (``configs/system/<peer>.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: Literal["own", "oracle"] = "own"
    top_k_items: PositiveInt = 8
    context_budget_tokens: PositiveInt = 2000
    summary_budget_tokens: PositiveInt = 6000


class PeerSystem:
    """Runs one peer under the runner's protocol."""

    peer = ""  # set by the bound subclass
    name = ""

    def __init__(
        self,
        ctx: Any,
        *,
        target: str = "own",
        top_k_items: int = 8,
        context_budget_tokens: int = 2000,
        summary_budget_tokens: int = 6000,
    ) -> None:
        from chronobench.systems.peers.embedding import PeerEmbedding

        self.ctx = ctx
        self.target = target
        self.top_k = top_k_items
        self.budget = context_budget_tokens
        self.summary_budget = summary_budget_tokens
        stores = getattr(ctx, "stores", None)
        # The run's embedder object, so peers share its vector cache with ChronoMem's rows.
        self.embedding = PeerEmbedding(stores.embedder if stores is not None else "minilm")
        self._root = Path(tempfile.mkdtemp(prefix=f"chronobench-{self.peer}-"))
        self._base: Any = None  # the post-exposure peer (kept open for final_qa)
        self._base_dir: Path | None = None
        self._work: Any = None
        self._n = 0

    def _open(self, folder: Path) -> Any:
        from chronobench.systems.peers import create_peer

        return create_peer(self.peer, folder, self.embedding)

    def ingest(self, stream: Any) -> None:
        """Exposure: every write added once; queries work on copies of the folder."""
        from chronobench.systems.peers.base import peer_writes

        self._drop_work()
        if self._base is not None:
            self._base.close()
        self._base_dir = self._root / f"base-{self._n}"
        self._n += 1
        peer = self._open(self._base_dir)
        for write in peer_writes(stream):
            peer.add(write)
        peer.close()  # flushed; copies start from what is on disk
        self._base = self._open(self._base_dir)

    def rollback(self, query: Any) -> Any:
        from chronobench.protocols import RollbackOutcome
        from chronobench.systems.peers.targeting import own_target

        assert self._base_dir is not None, "ingest() must come first"
        self._drop_work()
        folder = self._root / "work"
        shutil.copytree(self._base_dir, folder)
        self._work = self._open(folder)
        if self.target == "oracle":
            version, candidates, meta = query.target_version, [], {"oracle": True}
        else:
            t = own_target(self._work, query.text)
            version, candidates, meta = t.version, t.candidates, {"intent": t.intent}
        if version is None:
            return RollbackOutcome(selected_version=None, meta={**meta, "refused": "no hit"})
        info = self._work.rollback_to(version)
        meta.update(native=info.native, method=info.method)
        return RollbackOutcome(selected_version=version, candidates=candidates, meta=meta)

    def prepare(self, query: Any, probe: Any) -> Any:
        from chronobench.systems.base import pack_ranked, pack_spread
        from chronobench.systems.prompts import qa_request, summary_request

        peer = self._base if probe.kind == "final_qa" or self._work is None else self._work
        if probe.kind == "summary":
            texts = [m.text for m in peer.state()]
            return summary_request(
                probe.question, pack_spread(texts, self.summary_budget), self.ctx.params
            )
        hits = peer.search(probe.question, self.top_k)
        return qa_request(
            probe.question, pack_ranked([h.text for h in hits], self.budget), self.ctx.params
        )

    def answer_directly(self, query: Any, probe: Any) -> str | None:
        return None

    def _drop_work(self) -> None:
        if self._work is not None:
            self._work.close()
            self._work = None
        shutil.rmtree(self._root / "work", ignore_errors=True)

    def close(self) -> None:
        self._drop_work()
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
