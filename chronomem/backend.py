"""The storage seam: what the store's function modules need from a database.

:class:`~chronomem.ChronoMem` holds one :class:`Backend`; its function
modules (``reads``, ``commit``, ``rollback``, ``resolve``, ``nl``, ``erasure``,
``integrity``) take that backend and a scope explicitly and never touch an engine
directly except through it:

- **SQL on** ``conn`` for the plain tables of :mod:`chronomem.sql` (scopes,
  versions, events, blobs, spans, hidden, answers, audit). The function modules write
  it in a subset both SQLite (>= 3.35) and PostgreSQL accept: qmark ``?`` placeholders
  (a backend whose driver uses another style translates them in its ``conn``),
  ``ON CONFLICT DO NOTHING``, ``TRUE`` rather than ``1``, and ``"user"`` quoted (a
  reserved word in PostgreSQL); the key of a new row comes from :meth:`Backend.insert`
  (SQLite: ``lastrowid``; a ``RETURNING`` clause there would make FTS5 flush its pending
  index data on every insert). ``conn`` has
  ``execute(sql, params)`` returning a cursor (``fetchone``, ``fetchall``, iteration,
  ``rowcount``) and ``executemany(sql, rows)``; it is also what ``on_commit`` hooks get.
- **Connection and transactions**: ``lock`` (held around every use of ``conn``, so
  one store is safe across threads), :meth:`Backend.transaction` (the write
  transaction that serialises writers; SQLite: ``BEGIN IMMEDIATE``),
  :meth:`Backend.read_snapshot` (reads that must see one state),
  :meth:`Backend.copy` (for ``ChronoMem.clone``) and :meth:`Backend.close`.
- **Dialect bits**: :meth:`Backend.insert`, and :meth:`Backend.contains` and
  :meth:`Backend.json_text`, the two SQL fragments that differ between engines.
- **Erasure**: :meth:`Backend.secure_delete` (deleted bytes are overwritten) and
  :meth:`Backend.purge` (deleted data leaves index segments and logs).
- **Lexical search** over item texts (keyed by ``spans.span_id``) and commit
  descriptors (keyed by ``versions.vrow``): a backend indexes the text it is given and
  scores an OR of terms, higher is better (SQLite: FTS5 with the porter tokenizer,
  score = -bm25).
- **Vector storage** of each descriptor's window vectors (keyed by ``versions.vrow``).

:func:`open_backend` picks the backend from the store's location:
:class:`~chronomem.sqlite_backend.SQLiteBackend` for a path,
:class:`~chronomem.pg.backend.PostgresBackend` for a ``postgresql://`` URL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np


class Backend(Protocol):
    """A database holding ChronoMem stores; see the module docstring for the contract."""

    path: str
    lock: Any  # a re-entrant lock (threading.RLock)

    # -- connection and transactions ---------------------------------------------------------

    @property
    def conn(self) -> Any:
        """The open connection (raises RuntimeError once closed)."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """Hold ``lock`` and one write transaction (yields ``conn``); commit on exit,
        roll back on any exception. Writers to one database queue here."""
        ...

    def lock_scope(self, scope_id: int) -> None:
        """Inside :meth:`transaction`: wait for, then hold, the scope's write lock until
        the transaction ends (a backend whose transactions already exclude every other
        writer, as SQLite's ``BEGIN IMMEDIATE`` does, has nothing to do)."""
        ...

    def read_snapshot(self) -> AbstractContextManager[Any]:
        """Hold ``lock`` and one read transaction: every read in the block sees one state
        even while other processes write."""
        ...

    def copy(self, path: str) -> Backend:
        """A full, independent copy of this database at ``path`` (a new database of the
        same kind; SQLite: a file or ``":memory:"``; PostgreSQL: a URL, or ``":memory:"``
        for a temporary schema on the same server)."""
        ...

    def close(self) -> None:
        """Close the connection (idempotent)."""
        ...

    # -- dialect bits ------------------------------------------------------------------------

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run one ``INSERT`` and return the new row's ``key`` column (its integer id)."""
        ...

    def contains(self, column: str) -> str:
        """SQL condition with one placeholder (a text): ``column`` contains it."""
        ...

    def json_text(self, column: str, key: str) -> tuple[str, Any]:
        """SQL expression with one placeholder, and its argument: the value under ``key``
        of the JSON object stored as text in ``column``."""
        ...

    # -- erasure -----------------------------------------------------------------------------

    def secure_delete(self) -> AbstractContextManager[None]:
        """Deleted content is overwritten, not just unlinked, inside the block."""
        ...

    def purge(self) -> bool:
        """Drop deleted content from index segments and write-ahead logs; False if another
        connection kept part of it from completing (it completes on a later purge)."""
        ...

    # -- lexical search ----------------------------------------------------------------------

    def index_item(self, scope_id: int, span_id: int, text: str) -> None:
        """Index one span's text."""
        ...

    def index_items(self, scope_id: int, spans: Sequence[tuple[int, str]]) -> None:
        """Index many spans' texts at once: ``[(span_id, text)]``."""
        ...

    def unindex_items(self, span_ids: Iterable[int]) -> None:
        """Remove spans from the item index."""
        ...

    def match_items(self, scope_id: int, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top-``k`` spans alive at HEAD whose text matches any of ``terms``:
        ``[(span_id, score)]``, best first."""
        ...

    def item_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What :meth:`match_items` scores with: the documents and tokens (every column)
        its BM25 counts, and how many documents hold each of ``tokens`` (indexed tokens,
        as the tokenizer makes them); what an in-memory copy of the item index reads."""
        ...

    def index_descriptor(self, scope_id: int, vrow: int, body: str) -> None:
        """Index one version's lexical descriptor."""
        ...

    def unindex_descriptors(self, vrows: Iterable[int]) -> None:
        """Remove versions from the descriptor index."""
        ...

    def match_descriptors(
        self, scope_id: int, terms: Sequence[str], k: int
    ) -> list[tuple[int, float]]:
        """Top-``k`` visible versions whose descriptor matches any of ``terms``:
        ``[(version_id, score)]``, best first, ties in history order."""
        ...

    def descriptor_scores(
        self, scope_id: int, terms: Sequence[str], version_ids: Iterable[int]
    ) -> dict[int, float | None]:
        """The :meth:`match_descriptors` score of each version (None: no term matches)."""
        ...

    def descriptor_docs(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[str]]:
        """Visible versions with a seq after ``after_seq``: their ids, seqs and indexed
        lexical descriptors, in history order (what an in-memory copy of the index reads)."""
        ...

    def descriptor_lengths(
        self, scope_id: int, after_seq: int = -1
    ) -> tuple[list[int], list[int], list[int], list[float]]:
        """Visible versions with a seq after ``after_seq``: ids, seqs, index document keys
        and document lengths as the lexical score counts them, in history order."""
        ...

    def descriptor_postings(self, scope_id: int, token: str) -> tuple[list[int], list[int]]:
        """Index document keys whose descriptor holds ``token`` (an indexed token), and
        how often; may include documents of other scopes or hidden history."""
        ...

    def descriptor_stats(self, scope_id: int, tokens: Sequence[str]) -> tuple[int, int, list[int]]:
        """What :meth:`match_descriptors` scores with: the documents and tokens (every
        column) its BM25 counts, and how many documents hold each of ``tokens`` (indexed
        tokens, as the tokenizer makes them)."""
        ...

    def descriptor_body(self, vrow: int) -> str | None:
        """The indexed lexical descriptor of a version."""
        ...

    def descriptors_containing(self, scope_id: int, needle: str) -> list[tuple[int, str]]:
        """``[(vrow, body)]`` of the scope's indexed descriptors containing ``needle``."""
        ...

    def indexed_items(self, scope_id: int) -> set[int]:
        """Span ids in the scope's item index."""
        ...

    def indexed_descriptors(self, scope_id: int) -> set[int]:
        """Version rows in the scope's descriptor index."""
        ...

    # -- vector storage ----------------------------------------------------------------------

    def put_vectors(self, vrow: int, vectors: Sequence[np.ndarray] | np.ndarray) -> None:
        """Store a version's window vectors (float32), in window order."""
        ...

    def delete_vectors(self, vrows: Iterable[int]) -> None:
        """Delete versions' vectors."""
        ...

    def scope_vectors(self, scope_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(owner version id per row, float32 matrix) of every visible version's vectors,
        in history then window order; ``(0,)`` and ``(0, 1)`` shaped when there are none."""
        ...

    def vectors_after(
        self, scope_id: int, after_seq: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner version id, owner seq, float32 matrix) of the visible versions with a
        seq after ``after_seq``, in history then window order (what extends an in-memory
        matrix after commits)."""
        ...

    def vector_owners(self, scope_id: int) -> set[int]:
        """Version rows of the scope that have vectors."""
        ...

    def orphan_vectors(self) -> int:
        """How many stored vectors belong to no version."""
        ...


def open_backend(path: str, *, busy_timeout_ms: int = 60_000) -> Backend:
    """The backend for a store location: a ``postgresql://`` (or ``postgres://``) URL
    opens :class:`~chronomem.pg.backend.PostgresBackend`, anything else is a
    SQLite path."""
    from chronomem.pg.locations import is_url

    if is_url(path):
        from chronomem.pg.backend import PostgresBackend

        return PostgresBackend(path, busy_timeout_ms=busy_timeout_ms)
    from chronomem.sqlite_backend import SQLiteBackend

    return SQLiteBackend(path, busy_timeout_ms=busy_timeout_ms)
