"""Integrity checks, redaction and compaction of :class:`ChronoMem` (a mixin)."""

from __future__ import annotations

from typing import Any

from chronobench.memory import integrity as integ
from chronobench.memory import validate as val
from chronobench.memory.embedders import shared_cache
from chronobench.memory.erasure import item_known, optimise_indexes, redact_in_txn, secure_delete
from chronobench.memory.rollback import compact


class UpkeepMixin:
    """``check_integrity``, ``redact`` and ``compact``; relies on StoreCore plumbing."""

    # Provided by StoreCore (annotations only: no attribute is defined here).
    _lock: Any
    conn: Any
    embedder: Any
    _scope: Any
    _txn: Any
    _embed: Any
    _windows: Any
    _dense: Any
    reranker: Any

    def check_integrity(self, app: str, user: str) -> list[str]:
        """Problems in the scope's state and indexes (empty when healthy), read from one
        consistent snapshot even while other processes write."""
        sc = self._scope(app, user)
        if sc is None:
            return []
        with self._lock:
            return integ.check_integrity(self.conn, sc[0])

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
        metadata. See :mod:`chronobench.memory.erasure` and the README section
        "What redaction guarantees". A scope that does not exist is not created.
        """
        val.text(item_or_text, "item_or_text")
        val.text(reason, "reason", empty=True)
        val.text(source, "source", empty=True)
        val.choice(by, "by", ("auto", "id", "text"))
        empty = {"by": by, "items": [], "versions": [], "contents": 0, "descriptors": 0}
        if self._scope(app, user) is None:
            return {**empty, "answers": 0, "wal_checkpointed": True}
        with self._lock, secure_delete(self.conn):
            with self._txn() as conn:
                sc = self._scope(app, user)
                assert sc is not None
                mode = by
                if by == "auto":
                    mode = "id" if item_known(conn, sc[0], item_or_text) else "text"
                elif by == "id" and not item_known(conn, sc[0], item_or_text):
                    raise ValueError(
                        f"item_or_text: no item {item_or_text!r} in this scope; pass by='text' "
                        "to erase every content containing it"
                    )
                detail, texts = redact_in_txn(
                    conn,
                    sc[0],
                    item_or_text,
                    by=mode,
                    reason=reason,
                    source=source,
                    embed=self._embed,
                    windows=self._windows,
                )
            # still under secure_delete: merged-away FTS segments are zeroed, then the WAL
            # (which holds the old pages) is checkpointed and truncated.
            detail["wal_checkpointed"] = optimise_indexes(self.conn)
        self._dense.drop(sc[0])  # the old matrix holds vectors of the pre-scrub windows
        self._forget([*texts, item_or_text])
        return detail

    def _forget(self, texts: list[str]) -> None:
        """Drop the vectors of ``texts`` from the embedding caches (memory and disk) of
        the store's embedder and of a reranker that embeds with a model of its own."""
        embedders = [self.embedder]
        other = getattr(self.reranker, "embedder", None)
        if other is not None and other is not self.embedder:
            embedders.append(other)
        for embedder in embedders:
            shared_cache(embedder).forget(texts)

    def compact(self, app: str, user: str) -> dict[str, int]:
        """Delete the history that truncate rollbacks discarded (hidden rows), under
        ``secure_delete``; returns counts of versions, spans and blobs removed."""
        if self._scope(app, user) is None:
            return {"versions": 0, "spans": 0, "blobs": 0}
        with self._lock, secure_delete(self.conn):
            with self._txn() as conn:
                sc = self._scope(app, user)
                assert sc is not None
                counts = compact(conn, sc[0])
            optimise_indexes(self.conn)
        return counts
