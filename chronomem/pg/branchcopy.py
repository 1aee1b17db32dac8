"""A branch's copied items on PostgreSQL in a fixed number of statements.

Why: the generic copy (:func:`chronomem.branching.create`) sends one insert per blob,
span, indexed document and posting, pipelined; with 1,000 items that was about 5,000
statements the server ran one by one (a third of a second and more on a loaded
machine, all of it per item). Here the same rows go in as arrays (``unnest``): span
keys drawn from their sequence first, then blobs, spans, documents, postings and the
per-term counts by :func:`chronomem.pg.fastwrite.write_items` (what a commit opening
those spans writes), and the scope's index totals in one update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronomem.pg import fastwrite
from chronomem.pg import lexical as lex


def copy_items(conn: Any, scope_id: int, items: Sequence[tuple[str, str, str]]) -> None:
    """Inside the caller's transaction: a span from seq 1 in scope ``scope_id`` for
    each ``(item_id, hash, text)``, in order, with its blob and item-index entry."""
    if not items:
        return
    raw = conn.raw
    ids = [
        int(r[0])
        for r in raw.execute(
            f"SELECT nextval({fastwrite.SPAN_SEQ}) FROM generate_series(1, %s)", (len(items),)
        ).fetchall()
    ]
    _, docs, tokens = fastwrite.write_items(
        raw, scope_id, 1, {}, [(item, text) for item, _, text in items], ids
    )
    ix = lex.ITEMS
    raw.execute(
        f"UPDATE scopes SET {ix.n_col} = {ix.n_col} + %s, {ix.tok_col} = {ix.tok_col} + %s "
        "WHERE scope_id = %s",
        (docs, tokens, scope_id),
    )
