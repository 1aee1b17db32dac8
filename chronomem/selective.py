"""Selective undo: revert chosen commits, keep every later independent write.

:func:`plan` works out, without writing, what reverting a set of commits does; :func:`apply`
re-plans under the scope's write lock and appends one ``revert`` version with exactly that
change (revert-forward: no history is dropped, the reverted commits stay auditable).

The rule. ``R`` starts as the requested commits. Walking the history after the first of
them, a commit that touches an item (its op's item, or an item a ``consolidate`` op
``replaces``) whose value comes from ``R`` is

- a **derived** dependent when it is a ``consolidate`` that replaces such an item (the merged
  record copies the reverted text): it joins ``R`` whatever the caller chose;
- a **later change** otherwise: ``with_dependents="keep"`` keeps its text (the item leaves the
  set of values coming from ``R``), ``"drop"`` reverts it too (it joins ``R``), ``"refuse"``
  raises :class:`~chronomem.types.DependentChangesError` naming it.

Every item a commit of ``R`` touched then holds the value the last commit *outside* ``R``
gave it (absent when none did): the state a history without ``R`` would have, for those
items; items no commit of ``R`` touched do not change. ``redact=True`` then erases every
text a commit of ``R`` wrote that the new HEAD no longer holds, as
:meth:`ChronoMem.redact` does by text (content, index rows, descriptors, free text,
embedding caches); it refuses when a text kept at HEAD contains one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from chronomem import erasure
from chronomem.backend import Backend
from chronomem.reads import locked_scope, require_scope, seq_of
from chronomem.rollback import append_revert, audit
from chronomem.sql import alive, alive_at, visible
from chronomem.types import DependentChangesError, HeadMovedError, Scope, SelectivePlan

DEPENDENT_MODES = ("refuse", "keep", "drop")


def _commits(db: Backend, sc: Scope, from_seq: int) -> list[tuple[int, int, set[str], set[str]]]:
    """(version id, seq, items touched, items a consolidate replaces) of every visible
    commit from ``from_seq`` on, in history order."""
    conn = db.conn
    rows = conn.execute(
        "SELECT v.version_id, v.seq, e.op, e.item_id, e.meta FROM versions v JOIN events e ON "
        "e.scope_id = v.scope_id AND e.version_id = v.version_id WHERE v.scope_id = ? AND "
        f"v.seq >= ? AND {visible(conn, sc.scope_id, 'v.seq')} ORDER BY v.seq",
        (sc.scope_id, from_seq),
    ).fetchall()
    out: dict[int, tuple[int, int, set[str], set[str]]] = {}
    for vid, seq, op, item, meta in rows:
        got = out.setdefault(int(vid), (int(vid), int(seq), set(), set()))
        got[2].add(str(item))
        if op == "consolidate":
            try:
                replaces = (json.loads(meta or "{}") or {}).get("replaces") or []
            except (TypeError, ValueError):
                replaces = []
            got[3].update(str(x) for x in replaces)
            got[2].update(str(x) for x in replaces)
    return sorted(out.values(), key=lambda c: c[1])


def _values_at(db: Backend, sc: Scope, seq: int | None, items: Sequence[str]) -> dict[str, str]:
    """``{item: text}`` of ``items`` in the state at ``seq`` (None: at HEAD; absent items
    left out)."""
    if not items:
        return {}
    marks = ",".join("?" * len(items))
    live = alive(db.conn, sc.scope_id) if seq is None else alive_at(db.conn, sc.scope_id)
    args = () if seq is None else (seq, seq)
    rows = db.conn.execute(
        "SELECT s.item_id, b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id AND "
        f"b.hash = s.hash WHERE s.scope_id = ? AND s.item_id IN ({marks}) AND {live}",
        (sc.scope_id, *items, *args),
    ).fetchall()
    return {str(i): t for i, t in rows}


def plan(db: Backend, sc: Scope, versions: Sequence[int], with_dependents: str) -> SelectivePlan:
    """What reverting ``versions`` would do in scope ``sc`` (see the module docstring);
    writes nothing. Raises :class:`UnknownVersionError` for a version not on the history
    (or the root), :class:`DependentChangesError` for a later change under ``"refuse"``."""
    with db.lock:
        seqs = {int(v): seq_of(db, sc, int(v)) for v in versions}
        if 0 in seqs.values():
            raise ValueError(
                "versions: version 0 is the empty root, there is nothing to revert; "
                "name commits from versions(app, user)"
            )
        first = min(seqs.values())
        commits = _commits(db, sc, first)
        order = {c[0]: c[1] for c in commits}
        reverted = set(seqs)
        tainted: set[str] = set()
        dependents: list[dict[str, Any]] = []
        conflicts: list[dict[str, Any]] = []
        touched: set[str] = set()
        last_outside: dict[str, int] = {}
        for vid, seq, items, replaces in commits:
            if vid in reverted:
                tainted |= items
                touched |= items
                continue
            derived = sorted(replaces & tainted)
            overlap = sorted(items & tainted)
            if derived:
                dependents.append({"version": vid, "why": "derived", "items": derived})
            elif overlap:
                kept = with_dependents != "drop"
                conflicts.append(
                    {"version": vid, "items": overlap, "resolution": "kept" if kept else "dropped"}
                )
                if kept:
                    tainted -= set(overlap)
                    for item in items:
                        last_outside[item] = seq
                    continue
                dependents.append({"version": vid, "why": "later change", "items": overlap})
            else:
                for item in items:
                    last_outside[item] = seq
                continue
            reverted.add(vid)
            tainted |= items
            touched |= items
        if with_dependents == "refuse" and conflicts:
            shown = "; ".join(f"v{c['version']} changed {', '.join(c['items'])}" for c in conflicts)
            raise DependentChangesError(
                f"later commits changed what the reverted commits wrote ({shown}); choose "
                "with_dependents='keep' (keep the later text) or 'drop' (revert those "
                "commits too); nothing was changed",
                conflicts,
            )
        parent = db.conn.execute(
            "SELECT MAX(v.seq) FROM versions v WHERE v.scope_id = ? AND v.seq < ? AND "
            + visible(db.conn, sc.scope_id, "v.seq"),
            (sc.scope_id, first),
        ).fetchone()[0]
        items = sorted(touched)
        # The value each item gets: the state right after the last commit outside R that
        # touched it (the state before the first reverted commit when none did since).
        by_seq: dict[int, list[str]] = {}
        for item in items:
            by_seq.setdefault(last_outside.get(item, int(parent or 0)), []).append(item)
        target: dict[str, str] = {}
        for seq, group in by_seq.items():
            target.update(_values_at(db, sc, seq, group))
        now = _values_at(db, sc, None, items)
        written = _texts_written(db, sc, sorted(reverted))
    diff = {i: target.get(i) for i in items if target.get(i) != now.get(i)}
    kept_items = sorted(i for c in conflicts if c["resolution"] == "kept" for i in c["items"])
    return SelectivePlan(
        versions=sorted(seqs),
        reverted=sorted(reverted, key=lambda v: (order.get(v, 0), v)),
        dependents=dependents,
        conflicts=conflicts,
        removed=sorted(i for i, t in diff.items() if t is None),
        restored={i: t for i, t in sorted(diff.items()) if t is not None},
        kept=kept_items,
        with_dependents=with_dependents,
        head=int(sc.head_vid),
        erased_texts=sorted(set(written) - set(target.values()) - _kept_texts(now, diff)),
    )


def _kept_texts(now: dict[str, str], diff: dict[str, str | None]) -> set[str]:
    return {t for i, t in now.items() if i not in diff}


def _texts_written(db: Backend, sc: Scope, versions: Sequence[int]) -> list[str]:
    """The item texts the commits ``versions`` wrote (their events' content hashes)."""
    marks = ",".join("?" * len(versions))
    rows = db.conn.execute(
        "SELECT DISTINCT b.text FROM events e JOIN blobs b ON b.scope_id = e.scope_id AND "
        f"b.hash = e.hash WHERE e.scope_id = ? AND e.version_id IN ({marks})",
        (sc.scope_id, *versions),
    ).fetchall()
    return [r[0] for r in rows]


def apply(
    db: Backend,
    app: str,
    user: str,
    versions: Sequence[int],
    with_dependents: str,
    *,
    reason: str,
    embed: Callable[[str], np.ndarray],
    expected_head: int | None,
    redact: bool,
    encoder: Any,
) -> tuple[SelectivePlan, list[str]]:
    """Revert ``versions`` as :func:`plan` says, in one write transaction (under
    ``secure_delete`` and a purge with ``redact``); returns the applied plan (``new_head``
    set) and the stale texts the embedding caches must forget."""
    stale: list[str] = []
    with db.lock, erasure.erasing(db, redact), db.transaction():
        locked_scope(db, app, user)
        sc = require_scope(db, app, user)
        if expected_head is not None and sc.head_vid != expected_head:
            raise HeadMovedError(
                f"HEAD of scope (app={app!r}, user={user!r}) moved from {expected_head} to "
                f"{sc.head_vid} since the revert was planned; nothing was changed; plan again"
            )
        p = plan(db, sc, versions, with_dependents)
        if redact:
            # The reason (often the user's own request) must not keep what is erased.
            reason = erasure.scrubbed_reason(reason, p.erased_texts)
            kept = [t for t in _head_after(db, sc, p) if any(e in t for e in p.erased_texts)]
            if kept:
                raise ValueError(
                    "redact=True: a text kept at HEAD contains a reverted text (it would be "
                    f"erased with it): {kept[0][:60]!r}...; revert the commit that wrote it "
                    "too (with_dependents='drop'), or revert without redact; nothing was changed"
                )
        meta = {"reverts": p.reverted, "requested": p.versions}
        diff: dict[str, str | None] = {i: None for i in p.removed} | dict(p.restored)
        shown = ", ".join(f"v{v}" for v in p.reverted)
        new = append_revert(
            db,
            sc.scope_id,
            diff,
            meta,
            summary=f"selective revert of {shown}",
            labels={"reverted": p.reverted, "requested": p.versions},
            dense=f"revert: commits {shown} undone, later commits kept",
            reason=reason,
            embed=embed,
        )
        audit(db, sc.scope_id, "revert_commits", {**meta, "new": new}, reason)
        if redact:
            for text in p.erased_texts:
                _, got = erasure.redact_in_txn(
                    db, sc.scope_id, text, by="text", reason=reason, source="chronomem",
                    encoder=encoder,
                )  # fmt: skip
                stale.extend(got)
            stale.extend(p.erased_texts)
    return p.applied(new), stale


def _head_after(db: Backend, sc: Scope, p: SelectivePlan) -> list[str]:
    """Texts HEAD holds after the plan (what redaction must leave intact)."""
    rows = db.conn.execute(
        "SELECT s.item_id, b.text FROM spans s JOIN blobs b ON b.scope_id = s.scope_id AND "
        f"b.hash = s.hash WHERE s.scope_id = ? AND {alive(db.conn, sc.scope_id)}",
        (sc.scope_id,),
    ).fetchall()
    gone = set(p.removed) | set(p.restored)
    return [t for i, t in rows if i not in gone] + list(p.restored.values())
