"""The items alive at an old version, read through an interval index (what a branch forks).

Why: ``S(v)`` at an old version is "the spans whose interval ``[from_seq, to_seq)``
contains seq(v)". With the B-tree on ``from_seq`` alone that is a range scan over every
span opened before v, which grows with the history (a branch at the middle of 100,000
writes read 50,000 spans to keep 1,000). Here it costs O(log(history)) index probes
plus the spans it returns, whatever the history's length.

How (a relational interval tree, after Kriegel, Pötke and Seidl, VLDB 2000): picture
the seqs as the nodes of a binary tree, where node ``n`` with ``t`` trailing zero bits
covers the seqs ``n - 2**t + 1 .. n + 2**t - 1``. Each closed span is filed under its
*fork node*, the highest node it contains (:func:`fork_sql`, a pure expression of
``from_seq`` and ``to_seq``, so the two B-tree indexes on it need no column, no write
path change, and hold every closed span whichever code closed it). The spans that
contain seq ``p`` are filed under nodes on the path from the root to ``p`` (62 of them):
under a node right of ``p`` they are exactly those with ``from_seq <= p`` (they all
reach that node), under a node left of ``p`` exactly those with ``to_seq > p``, so each
index probe returns only hits. Open spans (``to_seq`` NULL) come from the existing
index on ``to_seq``: the items at HEAD.

One extra read for a scope with truncated history: a span closed inside a discarded
range is open again, so the spans closed in discarded ranges before ``p`` are read too
(O(discarded history not yet compacted), never the whole history).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from chronomem.sql import ALWAYS, visible

LEVELS = 62  # levels 0..61 hold every seq below 2**62 (a store writes far fewer)

# The seqs a closed span holds are [from_seq, to_seq - 1]; lo = from_seq - 1 is one below
# them, so the highest bit where lo and hi differ picks the node (hi's bits above and at
# that bit, zeros below), which lies in the span and whose subtree holds all of the span.
_LO, _HI = "(from_seq - 1)", "(to_seq - 1)"


def fork_sql(sqlite: bool) -> str:
    """SQL (over the ``spans`` columns, unqualified): a closed span's fork node, ``hi``
    with the bits below the highest bit where ``lo`` and ``hi`` differ cleared. The text
    is the indexes' expression, so queries repeat it verbatim for the planner to match.
    PostgreSQL: that bit from the length of their XOR. SQLite has neither XOR nor a bit
    length: one comparison of shifted values per level (a text too long for a
    PostgreSQL index, whose catalog row must fit a page)."""
    if not sqlite:
        level = f"(length(ltrim((({_LO} # {_HI})::bit(64))::text, '0')) - 1)"
        return f"(({_HI} >> {level}) << {level})"
    whens = " ".join(
        f"WHEN ({_LO} >> {t + 1}) = ({_HI} >> {t + 1}) THEN (({_HI} >> {t}) << {t})"
        for t in range(LEVELS)
    )
    return f"(CASE {whens} ELSE 0 END)"


def index_ddl(sqlite: bool) -> list[str]:
    """The two indexes, one per side of a node: the spans under a node right of p are
    picked by from_seq, under a node left of p by to_seq (only closed spans have a
    node)."""
    fork = fork_sql(sqlite)
    return [
        f"CREATE INDEX IF NOT EXISTS spans_fork_{col} ON spans (scope_id, {fork}, {col}_seq) "
        "WHERE to_seq IS NOT NULL"
        for col in ("from", "to")
    ]


def fork_node(from_seq: int, to_seq: int) -> int:
    """:func:`fork_sql` in Python (for tests): the fork node of ``[from_seq, to_seq)``."""
    lo, hi = from_seq - 1, to_seq - 1
    level = (lo ^ hi).bit_length() - 1
    return (hi >> level) << level


def path(p: int) -> tuple[list[int], list[int]]:
    """The nodes on the way from the root to seq ``p``: (nodes at or right of ``p``,
    nodes left of ``p``). A span containing ``p`` is filed under one of them."""
    right, left = [], []
    for t in range(LEVELS):
        node = ((p >> t) | 1) << t  # p's bits above t, bit t set, zeros below
        (right if node >= p else left).append(node)
    return right, left


def is_sqlite(conn: Any) -> bool:
    """Whether ``conn`` is a SQLite connection (else the PostgreSQL backend's)."""
    return isinstance(conn, sqlite3.Connection)


def ensure(conn: Any) -> None:
    """Create the two indexes if this database lacks them (inside the caller's write
    transaction; on an existing store this is a one-off build over its spans)."""
    for ddl in index_ddl(is_sqlite(conn)):
        conn.execute(ddl)


def alive_at_sql(conn: Any, scope_id: int, seq: int, cols: str) -> tuple[str, list[Any]]:
    """(SQL, params) selecting ``cols`` (over ``spans s``) of the spans alive at ``seq``
    in the scope, the same rows as :func:`chronomem.sql.alive_at`, through the indexes
    of :func:`index_ddl` (the caller has run :func:`ensure`)."""
    sid, p = int(scope_id), int(seq)
    right, left = path(p)
    vis_from = visible(conn, sid, "s.from_seq")
    keep = "" if vis_from == ALWAYS else f" AND {vis_from}"
    # SQLite's planner, not knowing the expression's spread, preferred the plain
    # from_seq index (a scan of the history before p): name the index there (on
    # PostgreSQL, see below)
    sqlite = is_sqlite(conn)
    fork = fork_sql(sqlite)

    def on(index: str) -> str:
        return f"spans s INDEXED BY {index}" if sqlite else "spans s"

    # open at HEAD (+: from_seq only filters, the to_seq index finds them)
    parts = [
        f"SELECT {cols} FROM {on('spans_to')} WHERE s.scope_id = ? AND s.to_seq IS NULL "
        f"AND +s.from_seq <= ?{keep}"
    ]
    params: list[Any] = [sid, p]
    for index, nodes, cond in (
        ("spans_fork_from", right, "s.from_seq <= ?"),  # under a node at or right of p
        ("spans_fork_to", left, "s.to_seq > ?"),  # under a node left of p
    ):
        if not nodes:  # (an empty IN list leaves SQLite's planner without a plan for it)
            continue
        if sqlite:
            parts.append(
                f"SELECT {cols} FROM {on(index)} WHERE s.scope_id = ? AND s.to_seq IS NOT "
                f"NULL AND {fork} IN ({', '.join('?' * len(nodes))}) AND {cond}{keep}"
            )
            params += [sid, *nodes, p]
        else:
            # one index probe per node, by equality: given the nodes as one IN list
            # (or the "to_seq IS NOT NULL" that the node implies), PostgreSQL's
            # planner, its estimates off, scanned the spans before p on the from_seq
            # or to_seq columns of an index instead (O(history), measured at 10,000
            # writes); OFFSET 0 keeps the probe a subquery run per node
            parts.append(
                f"SELECT {cols} FROM unnest(?::bigint[]) AS n(node) CROSS JOIN LATERAL "
                f"(SELECT * FROM spans s WHERE s.scope_id = ? AND {fork} = n.node AND "
                f"{cond}{keep} OFFSET 0) s"
            )
            params += [nodes, sid, p]
    if vis_from != ALWAYS:
        # closed at or before p, but inside a discarded range: open again
        parts.append(
            f"SELECT {cols} FROM hidden h JOIN spans s ON s.scope_id = h.scope_id "
            "AND s.to_seq > h.lo AND s.to_seq <= h.hi WHERE h.scope_id = ? AND h.lo < ? "
            f"AND s.to_seq <= ? AND s.from_seq <= ?{keep}"
        )
        params += [sid, p, p, p]
    return " UNION ALL ".join(parts), params
