"""ChronoMem's branches part: fork a line of history, check it out, diff, merge, delete.

:class:`Branches` holds the store's :class:`~chronomem.engine.StoreEngine`; the
storage design (a branch is a scope row of its own, forked with the items of one
version) is in :mod:`chronomem.branching`. A checkout belongs to the store handle:
after ``checkout(app, user, "plan-b")`` every read and write of this handle for (app,
user) goes to that branch, while another handle (another process) stays on its own
checkout, ``main`` when it opens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chronomem import branching as br
from chronomem import nl, reads
from chronomem import validate as val
from chronomem.commit import ensure_scope
from chronomem.engine import StoreEngine
from chronomem.types import HeadMovedError, Scope, UnknownVersionError

Point = int | str  # a version id, or a branch name (its HEAD)


class Branches:
    """Branch operations over one :class:`~chronomem.engine.StoreEngine`."""

    def __init__(self, engine: StoreEngine) -> None:
        self._e = engine

    def _fork(self, name: str) -> tuple[str, str, Any]:
        """The fork version's descriptor texts and vectors (embedded before any lock)."""
        dense = f"branch: {name}"
        return dense, dense + "\nop: branch", self._e.encoder.embed(dense)

    def branch(
        self,
        app: str,
        user: str,
        name: str,
        at: int | str | None = None,
        *,
        reason: str = "branch",
    ) -> dict[str, Any]:
        """Create branch ``name`` from a version of the checked-out branch: ``at`` is a
        version id, None for HEAD, or a request in plain words ("before we talked about
        the move") resolved as an NL rollback would (its target; an unconfident match
        raises :class:`UncertainRequestError` and creates nothing). The branch starts
        with that version's items; nothing is checked out. Returns ``{name, head,
        number, items}`` (and ``plan`` for a request)."""
        br.check_name(name)
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        val.scope_key(app, user)
        key = self._e.route(app, user)
        plan = None
        if isinstance(at, str):
            with self._e.reading(app, user, require=True) as sc:
                assert sc is not None
                plan = nl.plan_rollback(
                    self._e.db, sc, at, None, 5, "truncate", self._e.retrieval(), self._e.resolver
                )
            at = plan.target_version
        elif at is not None:
            val.integer(at, "at", minimum=0)
        br.ensure_tables(self._e.db)
        if at is not None:  # perhaps an older version: read through the interval index
            br.ensure_fork_index(self._e.db)
        dense, lexical, vectors = self._fork(name)
        number = self._e.branch_number(app, user)
        with self._e.db.transaction():
            src = self._source(app, user, key)
            got = br.create(
                self._e.db, app, user, name, src, number,
                src.head_vid if at is None else int(at),
                dense=dense, lexical=lexical, vectors=vectors, reason=reason,
            )  # fmt: skip
        if plan is not None:
            got["plan"] = plan
        return got

    def _source(self, app: str, user: str, key: tuple[str, str]) -> Scope:
        """Inside the write transaction: the checked-out branch's row, locked (an empty
        main scope is created: a branch of nothing is a branch of the empty root)."""
        if key == (app, user):
            ensure_scope(self._e.db, app, user)
        src = reads.locked_scope(self._e.db, *key)
        assert src is not None  # a checked-out branch's row exists: it was forked
        return src

    def keep_hook(self, app: str, user: str, name: str) -> Callable[[Scope], Any]:
        """What a rollback with ``keep_as=name`` runs inside its transaction, before it
        changes anything: fork ``name`` from the HEAD being left (checked first)."""
        br.check_name(name, "keep_as")
        br.ensure_tables(self._e.db)
        dense, lexical, vectors = self._fork(name)
        number = self._e.branch_number(app, user)

        def keep(sc: Scope) -> Any:
            return br.create(
                self._e.db, app, user, name, sc, number, sc.head_vid,
                dense=dense, lexical=lexical, vectors=vectors, reason="kept by rollback",
            )  # fmt: skip

        return keep

    def checkout(self, app: str, user: str, name: str) -> dict[str, Any]:
        """Make ``name`` this handle's branch of (app, user): HEAD, every read and every
        write follow it (one indexed lookup, whatever the history's length). Returns
        ``{name, head}``; :class:`UnknownBranchError` for a name the scope lacks."""
        br.check_name(name)
        val.scope_key(app, user)
        br.reserved(user)
        if name == br.MAIN:
            self._e.checked_out.pop((app, user), None)
        else:
            br.ensure_tables(self._e.db)
            with self._e.db.read_snapshot():
                key, number = br.locate(self._e.db, app, user, name)
            self._e.checked_out[(app, user)] = (*key, name, number)
        with self._e.reading(app, user) as sc:
            return {"name": name, "head": 0 if sc is None else sc.head_vid}

    def branches(self, app: str, user: str) -> list[dict[str, Any]]:
        """The scope's live branches, main first: ``{name, head, number, from, at,
        created, checked_out}`` (``from``/``at``: the branch and version it was forked
        from; ``checked_out``: this handle's)."""
        val.scope_key(app, user)
        br.reserved(user)
        br.ensure_tables(self._e.db)
        current = self._e.branch_name(app, user)
        with self._e.db.read_snapshot():
            rows = br.listing(self._e.db, app, user)
        return [{**r, "checked_out": r["name"] == current} for r in rows]

    def _state(self, app: str, user: str, point: Point, field: str) -> tuple[int, dict[str, str]]:
        """(version id, items) of a branch's HEAD (a name) or a version id: on the
        checked-out branch, else on the branch whose id block holds it."""
        db = self._e.db
        if isinstance(point, str):
            key, _ = br.locate(db, app, user, br.check_name(point, field))
            sc = reads.find_scope(db, *key)
            return (0, {}) if sc is None else (sc.head_vid, reads.snapshot(db, sc))
        vid = val.integer(point, field, minimum=0)
        sc = reads.find_scope(db, *self._e.route(app, user))
        if sc is None and vid == 0:
            return 0, {}
        if sc is not None:
            try:
                return vid, reads.snapshot(db, sc, vid)
            except UnknownVersionError:
                pass  # perhaps a version of another branch
        main = reads.find_scope(db, app, user)
        owner = None if main is None else br.storage_key(app, main.scope_id, vid // br.BLOCK)
        other = None if owner is None or vid < br.BLOCK else reads.find_scope(db, *owner)
        if other is None:
            raise UnknownVersionError(
                f"{field}: version {vid} is on no branch of this scope; list versions with "
                "versions(app, user) after checkout, or pass a branch name"
            )
        return vid, reads.snapshot(db, other, vid)

    def diff(self, app: str, user: str, a: Point, b: Point) -> dict[str, Any]:
        """Items ``added``, ``removed`` and ``changed`` from ``a`` to ``b``, each a
        version id or a branch name (its HEAD): ``{a, b, added: {item: text}, removed:
        {item: text}, changed: {item: {before, after}}}``."""
        val.scope_key(app, user)
        br.reserved(user)
        br.ensure_tables(self._e.db)
        with self._e.db.read_snapshot():
            va, sa = self._state(app, user, a, "a")
            vb, sb = self._state(app, user, b, "b")
        return {"a": va, "b": vb, **br.diff(sa, sb)}

    def merge(
        self,
        app: str,
        user: str,
        source: str,
        into: str | None = None,
        *,
        strategy: str = "refuse",
        resolutions: Any = None,
        reason: str = "merge",
        preview: bool = False,
    ) -> dict[str, Any]:
        """Three-way merge of branch ``source``'s HEAD into branch ``into`` (default: the
        checked-out one) against their common ancestor: an item changed on one side only
        takes that side; one changed differently on both is a conflict, resolved by
        ``resolutions`` ({item: "ours" | "theirs" | {"text": ...}}) or else by
        ``strategy`` ("ours", "theirs"; "refuse", the default, raises
        :class:`MergeConflictError` listing them) before anything is written. Writes one
        ``merge`` version on ``into`` (its labels name the second parent), in one
        transaction; :class:`HeadMovedError` if either HEAD moved while planning.
        ``preview=True`` returns the plan only. Returns ``{source, into, base, version,
        changes, taken, conflicts}``."""
        val.scope_key(app, user)
        br.reserved(user)
        br.check_name(source, "source")
        into = self._e.branch_name(app, user) if into is None else br.check_name(into, "into")
        if source == into:
            raise ValueError(
                f"merge of branch {source!r} into itself: name another branch as source (or into)"
            )
        val.choice(strategy, "strategy", ("refuse", "ours", "theirs"))
        res = br.check_resolutions(resolutions)
        if not isinstance(preview, bool):
            raise TypeError(f"preview must be True or False, got {preview!r}")
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        br.ensure_tables(self._e.db)
        db = self._e.db
        with db.read_snapshot():
            skey, sn = br.locate(db, app, user, source)
            tkey, tn = br.locate(db, app, user, into)
            ssc, tsc = reads.find_scope(db, *skey), reads.find_scope(db, *tkey)
            if ssc is None or tsc is None:  # only main can lack a row: nothing to merge
                raise ValueError("merge: the scope has no commits yet; commit first")
            base_vid, base = br.base_state(db, app, user, ssc, tsc)
            ours, theirs = reads.snapshot(db, tsc), reads.snapshot(db, ssc)
        changes, taken, conflicts = br.three_way(base, ours, theirs, strategy, res)
        plan: dict[str, Any] = {
            "source": source, "into": into, "base": base_vid, "version": None,
            "changes": changes, "taken": taken, "conflicts": conflicts,
        }  # fmt: skip
        if preview:
            return plan
        lines = [f"merge {source} into {into}"]
        lines += [f"{'remove' if t is None else 'set'}: {t or i}" for i, t in changes.items()]
        dense = "\n".join(lines)
        vectors = self._e.encoder.embed(dense)
        labels = {"merged_from": source, "merged_from_number": sn, "merge_parent": ssc.head_vid}
        with db.transaction():
            now_t = reads.locked_scope(db, *tkey)
            now_s = reads.find_scope(db, *skey)
            if (
                now_t is None
                or now_s is None
                or (now_t.head_vid, now_s.head_vid)
                != (
                    tsc.head_vid,
                    ssc.head_vid,
                )
            ):
                raise HeadMovedError(
                    f"merge {source!r} into {into!r}: a HEAD moved while the merge was "
                    "planned; nothing was written; merge again"
                )
            plan["version"] = br.append_merge(
                db, now_t.scope_id, changes, labels=labels, summary=lines[0], dense=dense,
                lexical=dense + "\nop: merge", vectors=vectors, reason=reason,
            )  # fmt: skip
        return plan

    def delete_branch(
        self, app: str, user: str, name: str, *, reason: str = "delete branch"
    ) -> dict[str, Any]:
        """Delete branch ``name``: the name goes (it can be used again); its versions stay
        stored, unreachable, as a truncate's discarded ones do, and a redaction still
        erases from them. ``main`` and this handle's checked-out branch cannot be
        deleted."""
        val.scope_key(app, user)
        br.reserved(user)
        br.check_name(name)
        val.no_nul(val.text(reason, "reason", empty=True), "reason")
        if name == br.MAIN:
            raise ValueError("the main branch cannot be deleted")
        if self._e.branch_name(app, user) == name:
            raise ValueError(
                f"branch {name!r} is checked out on this store handle; checkout another "
                "branch first"
            )
        br.ensure_tables(self._e.db)
        with self._e.db.transaction():
            return br.delete(self._e.db, app, user, name, reason)
