"""What every part of :class:`~chronomem.store.ChronoMem` shares: the store's engine.

ChronoMem is composed of parts, each owning one responsibility and holding one
:class:`StoreEngine` (never each other): the requests part
(:class:`~chronomem.store_requests.Requests`: resolving a request, rolling back), the
selective-undo part (:class:`~chronomem.store_selective.SelectiveUndo`) and the
branches part (:class:`~chronomem.store_branches.Branches`). The engine holds the
backend, the encoder, the in-process caches and the retrieval settings, and it knows
which branch this store handle has checked out for each scope, so every part reads
and writes the checked-out branch by asking :meth:`StoreEngine.route`.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from typing import Any

from chronomem import reads
from chronomem import resolve as rs
from chronomem.branching import MAIN, reserved
from chronomem.types import Scope


class StoreEngine:
    """The state ChronoMem's parts share; see the module docstring."""

    def __init__(
        self,
        db: Any,
        encoder: Any,
        caches: Any,
        *,
        reranker: Any,
        resolver: Any,
        stage: str,
        depth: int,
        rerank_depth: int,
        rrf_k0: int,
        episode_label: str | None,
        meaning: Any = None,
    ) -> None:
        self.db = db
        self.encoder = encoder
        self.caches = caches
        self.reranker = reranker
        self.resolver = resolver
        self.stage = stage
        self.depth = depth
        self.rerank_depth = rerank_depth
        self.rrf_k0 = rrf_k0
        self.episode_label = episode_label
        self.meaning = meaning  # a chronomem.meaning.MeaningStage or None
        self.read_heads = threading.local()
        # (app, user) -> (storage app, storage user, name, number) of the branch this
        # handle has checked out; absent: the main branch, stored under (app, user)
        self.checked_out: dict[tuple[str, str], tuple[str, str, str, int]] = {}

    def copy(self, db: Any) -> StoreEngine:
        """The same settings over another backend (what ``ChronoMem.clone`` holds); the
        caches' values stay valid because the copy has the same rows and generations."""
        other = copy.copy(self)
        other.db = db
        other.caches = self.caches.copy()
        other.encoder = self.encoder.copy()
        other.read_heads = threading.local()
        other.checked_out = dict(self.checked_out)
        return other

    def route(self, app: str, user: str) -> tuple[str, str]:
        """The storage key of the branch checked out for (app, user): (app, user) itself
        for the main branch (no query: a store without branches pays nothing)."""
        if not isinstance(app, str) or not isinstance(user, str):
            return app, user  # the callee's validation names the bad argument
        reserved(user)
        got = self.checked_out.get((app, user))
        return (got[0], got[1]) if got else (app, user)

    def branch_name(self, app: str, user: str) -> str:
        """The name of the branch checked out for (app, user)."""
        got = self.checked_out.get((app, user)) if isinstance(user, str) else None
        return got[2] if got else MAIN

    def branch_number(self, app: str, user: str) -> int:
        """The number of the branch checked out for (app, user) (main: 0)."""
        got = self.checked_out.get((app, user))
        return got[3] if got else 0

    @contextlib.contextmanager
    def reading(self, app: str, user: str, *, require: bool = False) -> Iterator[Scope | None]:
        """One read snapshot around a whole read of the checked-out branch: the scope's
        row (HEAD, ``gen``, which the in-memory indexes are keyed by) and every statistic
        and row read after it come from one committed state, whatever other processes
        commit meanwhile. ``require``: :class:`EmptyScopeError` for a scope without
        commits."""
        key = self.route(app, user)
        with self.db.read_snapshot():
            sc = (reads.require_scope if require else reads.find_scope)(self.db, *key)
            self.read_heads.head = 0 if sc is None else sc.head_vid
            yield sc

    @property
    def last_read_head(self) -> int | None:
        """The HEAD version id this thread's last read saw; None before any read."""
        return getattr(self.read_heads, "head", None)

    def retrieval(self) -> rs.Retrieval:
        """The retrieval settings and caches a resolve reads."""
        return rs.Retrieval(
            self.stage,
            self.depth,
            self.rerank_depth,
            self.rrf_k0,
            self.reranker,
            self.episode_label,
            self.caches.dense,
            self.encoder.query_vector,
            self.caches.lexicon,
            self.caches.episodes,
            self.meaning,
        )
