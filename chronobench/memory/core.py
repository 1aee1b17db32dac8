"""Connection, transactions, embeddings and the commit path of :class:`ChronoMem`."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from chronobench.memory import commit as cm
from chronobench.memory import integrity as integ
from chronobench.memory import validate as val
from chronobench.memory.embedders import (
    resolve_embedder,
    shared_cache,
    split_windows,
    window_budget,
)
from chronobench.memory.erasure import item_known, optimise_indexes, redact_in_txn, secure_delete
from chronobench.memory.resolve import DenseCache
from chronobench.memory.sql import connect
from chronobench.memory.types import InvalidOpError

_WRITE_KEYS = {"ops", "source", "reason", "labels", "summary", "valid_time", "version"}
STAGES = ("lexical", "dense", "hybrid")
BATCH_TXN = 200  # writes per transaction in commit_many: bounds how long others wait


def check_stage(stage: object, name: str) -> str:
    """Validate a retrieval stage name ("lexical", "dense" or "hybrid")."""
    if stage not in STAGES:
        raise ValueError(f"{name} must be one of {', '.join(STAGES)}, got {stage!r}")
    return str(stage)


class StoreCore:
    """Shared plumbing; the public API lives on :class:`chronobench.memory.ChronoMem`."""

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        embedder: Any = "minilm",
        reranker: Any = None,
        rrf_k0: int = 60,
        depth: int = 100,
        rerank_depth: int = 20,
        busy_timeout_ms: int = 60_000,
        episode_label: str | None = "session",
        window_tokens: int | None = None,
        stage: str = "hybrid",
    ) -> None:
        self.path = os.fspath(path)
        self.stage = check_stage(stage, "stage")
        self.embedder = resolve_embedder(embedder)
        self.reranker = reranker
        if reranker is not None and getattr(reranker, "embedder", False) is None:
            reranker.embedder = self.embedder  # share one model between stages
        if rrf_k0 < 0:
            raise ValueError(f"rrf_k0 must be >= 0, got {rrf_k0}")
        self.rrf_k0, self.depth, self.rerank_depth = int(rrf_k0), int(depth), int(rerank_depth)
        self.busy_timeout_ms = busy_timeout_ms
        # Commit label naming the episode (conversation/session) a commit belongs to;
        # None disables episode-scoped targets (see chronobench.memory.query).
        self.episode_label = episode_label
        # Dense windows shorter than the embedder's limit make a long descriptor's
        # max-over-windows score sharper (one window ~ one topic); None = the limit.
        self.window_tokens = window_tokens
        self._conn: sqlite3.Connection | None = connect(self.path, busy_timeout_ms=busy_timeout_ms)
        self._lock = threading.RLock()
        self._dense = DenseCache()
        self._budget: tuple[int, Any] | None = None

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (raises once the store is closed)."""
        if self._conn is None:
            raise RuntimeError("this ChronoMem store is closed")
        return self._conn

    @contextmanager
    def _txn(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception."""
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _scope(self, app: str, user: str) -> tuple[int, int, int, int] | None:
        """(scope_id, head_vid, head_seq, gen) or None when the scope has no data."""
        for name, value in (("app", app), ("user", user)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string, got {type(value).__name__}")
            if not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        with self._lock:
            row = self.conn.execute(
                "SELECT scope_id, head_vid, head_seq, gen FROM scopes WHERE app = ? AND user = ?",
                (app, user),
            ).fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def _windows(self, text: str) -> list[str]:
        if self._budget is None:
            self._budget = window_budget(self.embedder)
        max_units, count = self._budget
        if self.window_tokens:
            max_units = min(max_units, int(self.window_tokens))
        if len(text) <= max_units and text.isascii():
            return [text]  # fast path: an ASCII text never has more tokens than characters
        return split_windows(text, max_units, count)

    def _embed_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Window every text and embed all windows in one encoder call."""
        windows = [self._windows(t) for t in texts]
        flat = [w for ws in windows for w in ws]
        vecs = shared_cache(self.embedder).encode(flat) if flat else np.zeros((0, 1), np.float32)
        out, pos = [], 0
        for ws in windows:
            out.append(vecs[pos : pos + len(ws)])
            pos += len(ws)
        return out

    def _embed(self, text: str) -> np.ndarray:
        return self._embed_many([text])[0]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> StoreCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def clone(self, path: str | os.PathLike[str] = ":memory:") -> Any:
        """A full, independent copy of this store (sqlite3 backup API)."""
        target = os.fspath(path)
        if target != ":memory:" and os.path.exists(target) and os.path.getsize(target) > 0:
            raise FileExistsError(f"clone target {target} exists; pass a new path or ':memory:'")
        other = type(self)(
            target,
            embedder=self.embedder,
            reranker=self.reranker,
            rrf_k0=self.rrf_k0,
            depth=self.depth,
            rerank_depth=self.rerank_depth,
            busy_timeout_ms=self.busy_timeout_ms,
            episode_label=self.episode_label,
            window_tokens=self.window_tokens,
            stage=self.stage,
        )
        with self._lock:
            self.conn.backup(other.conn)
        if target != ":memory:":  # fold the copied pages out of the WAL now, not on first write
            other.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        other._dense = self._dense.copy()  # same gens, same rows: the matrices stay valid
        other._budget = self._budget
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
        on_commit: Callable[[sqlite3.Connection, int, int], None] | None = None,
    ) -> int:
        """Commit one write as a new version and move HEAD to it; returns its version id.

        ``ops`` are :class:`~chronobench.data.schema.MemoryOp` objects or mappings
        ``{op, item_id, text, meta}``. Events, snapshot manifest, descriptor index
        (FTS5 + vectors) and HEAD change in one SQLite transaction. ``on_commit(conn,
        scope_id, version_id)`` (extension point, e.g. the repair track's provenance
        writer) runs inside that transaction; if it raises, the commit is rolled back.
        """
        val.text(source, "source", empty=True)
        val.text(reason, "reason", empty=True)
        val.optional_text(summary, "summary")
        val.optional_text(valid_time, "valid_time")
        if labels is not None and not isinstance(labels, Mapping):
            raise TypeError(f"labels must be a mapping or None, got {type(labels).__name__}")
        write = {
            "ops": ops,
            "source": source,
            "reason": reason,
            "labels": labels,
            "summary": summary,
            "valid_time": valid_time,
        }
        return self.commit_many(app, user, [write], on_commit=on_commit)[0]

    def commit_many(
        self,
        app: str,
        user: str,
        writes: Sequence[Any],
        *,
        on_commit: Callable[[sqlite3.Connection, int, int], None] | None = None,
    ) -> list[int]:
        """Commit several writes, one version each, embedding all descriptors in one call.

        Each write is a mapping with the keyword arguments of :meth:`commit` (or a
        :class:`~chronobench.data.schema.Write`; its ``version`` field is ignored).
        """
        self._scope(app, user)  # validates app/user
        if isinstance(writes, (str, bytes, Mapping)) or not isinstance(writes, Sequence):
            raise TypeError(f"writes must be a list of writes, got {type(writes).__name__}")
        if on_commit is not None and not callable(on_commit):
            raise TypeError("on_commit must be callable(conn, scope_id, version_id) or None")
        prepared = [self._prepare(i, w) for i, w in enumerate(writes)]
        if not prepared:
            return []
        overlay: dict[str, str | None] = {}
        sid0 = self._scope(app, user)

        def lookup(item: str) -> str | None:
            if item in overlay:
                return overlay[item]
            return cm.open_text(self.conn, sid0[0], item) if sid0 else None

        dense_texts = []
        for p in prepared:
            dense_texts.append(cm.describe(p["ops"], p["summary"], p["labels"], lookup)[0])
            for o in p["ops"]:
                overlay[o.item_id] = None if o.op in ("delete", "redact") else o.text
        vectors = self._embed_many(dense_texts)
        out: list[int] = []
        for start in range(0, len(prepared), BATCH_TXN):
            chunk = range(start, min(start + BATCH_TXN, len(prepared)))
            redacts = any(o.op == "redact" for i in chunk for o in prepared[i]["ops"])
            erased: list[str] = []
            with self._lock, secure_delete(self.conn) if redacts else nullcontext():
                with self._txn() as conn:
                    sid = cm.ensure_scope(conn, app, user)
                    for i in chunk:
                        out.append(
                            self._apply(conn, sid, prepared[i], dense_texts[i], vectors[i], erased)
                        )
                        if on_commit is not None:
                            on_commit(conn, sid, out[-1])
                if redacts:
                    optimise_indexes(self.conn)
            if erased:
                shared_cache(self.embedder).forget(erased)
        return out

    def _prepare(self, index: int, write: Any) -> dict[str, Any]:
        data = write.model_dump() if hasattr(write, "model_dump") else write
        if not isinstance(data, Mapping):
            raise InvalidOpError(f"writes[{index}] must be a mapping of commit() arguments")
        unknown = set(data) - _WRITE_KEYS
        if unknown:
            raise InvalidOpError(f"writes[{index}] has unknown keys {sorted(unknown)}")
        for key in ("source", "reason"):
            if not isinstance(data.get(key), str):
                raise InvalidOpError(f"writes[{index}].{key} must be a string")
        for key in ("summary", "valid_time"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise InvalidOpError(f"writes[{index}].{key} must be a string or None")
        labels = data.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise InvalidOpError(f"writes[{index}].labels must be a mapping")
        return {
            "ops": cm.normalise_ops(data.get("ops") or []),
            "source": data["source"],
            "reason": data["reason"],
            "labels": dict(labels),
            "summary": data.get("summary"),
            "valid_time": data.get("valid_time"),
        }

    def _apply(
        self,
        conn: sqlite3.Connection,
        sid: int,
        p: dict[str, Any],
        dense_pre: str,
        vecs: np.ndarray,
        erased: list[str],
    ) -> int:
        dense, lexical = cm.describe(
            p["ops"], p["summary"], p["labels"], lambda item: cm.open_text(conn, sid, item)
        )
        if dense != dense_pre:  # another writer changed a deleted item meanwhile: re-embed
            vecs = self._embed(dense)

        def redact_item(item_id: str) -> None:
            if not item_known(conn, sid, item_id):
                return
            _, texts = redact_in_txn(
                conn,
                sid,
                item_id,
                by="id",
                reason=p["reason"],
                source=p["source"],
                embed=self._embed,
                windows=self._windows,
            )
            erased.extend(texts)

        return cm.apply_commit(
            conn,
            sid,
            p["ops"],
            source=p["source"],
            reason=p["reason"],
            labels=p["labels"],
            summary=p["summary"],
            valid_time=p["valid_time"],
            dense_text=dense,
            lexical_text=lexical,
            vectors=vecs,
            redact_item=redact_item,
        )

    # -- answer provenance ------------------------------------------------------------------

    def record_answer(self, app: str, user: str, text: str, used_items: Iterable[str]) -> int:
        """Store a sent answer and the item contents it relied on; returns its id.

        ``used_items`` must be a list of item ids: a bare string is a TypeError (it
        would otherwise be read as one id per character).
        """
        val.text(text, "text", empty=True)
        used = val.item_ids(used_items, "used_items")
        self._scope(app, user)  # validates app/user
        with self._txn() as conn:
            return integ.record_answer(conn, cm.ensure_scope(conn, app, user), text, used)

    def answers_relying_on_changed(self, app: str, user: str) -> list[dict[str, Any]]:
        """Sent answers that used an item whose current content differs (or is gone)."""
        sc = self._scope(app, user)
        if sc is None:
            return []
        with self._lock:
            return integ.answers_relying_on_changed(self.conn, sc[0])

    def scopes(self) -> Sequence[tuple[str, str]]:
        """All (app, user) pairs stored."""
        with self._lock:
            return [tuple(r) for r in self.conn.execute("SELECT app, user FROM scopes")]
