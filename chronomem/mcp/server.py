"""The MCP server: ChronoMem's tools and resources on the official Python SDK (``mcp``).

Every tool works on one memory scope (app, user) that the server decides: the one it was
started with, or, over HTTP with per-client tokens, the one the caller's token is bound
to. No tool takes a scope argument, and a call naming one (``"user": "bob"``) is refused
rather than ignored, so a model cannot reach another user's memory by asking.

Undo is two steps: ``preview_undo`` resolves a request (plain words, "the second one",
or a version id) to a plan, with its confidence and the store's refusal reasons, and
returns a token; ``undo`` applies exactly that plan, once, and only while the memory has
not moved since the preview. An agent cannot act on a plan it did not see.

Store errors come back as MCP tool errors carrying the store's message (what was wrong
and how to fix it), never a traceback.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import BaseModel

import chronomem
from chronomem.mcp.ordinals import ordinal_index
from chronomem.mcp.schema import (
    Branch,
    Branches,
    Changed,
    Conflict,
    Diff,
    Forgotten,
    History,
    Integrity,
    Memory,
    Merged,
    Op,
    Recalled,
    Redacted,
    Remembered,
    UndoDone,
    UndoPreview,
    Version,
)
from chronomem.mcp.session import Plan, Previews, Scope, Writes
from chronomem.query import fts_terms
from chronomem.types import ChronoMemError, VersionRecord

__all__ = ["CALLER", "Scope", "ServerConfig", "build_server"]

# ---- configuration ---------------------------------------------------------------------


#: The scope of the HTTP request being served, set by the token gate
#: (:mod:`chronomem.mcp.run`); unset (stdio, in-process) every call gets the config's scope.
CALLER: ContextVar[Scope | None] = ContextVar("chronomem_mcp_caller", default=None)


@dataclass
class ServerConfig:
    """What the server serves. ``scope`` is the memory of every caller, except over HTTP
    with ``tokens``: there each bearer token names its caller's own scope."""

    store: Any  # a ChronoMem
    scope: Scope
    tokens: Mapping[str, Scope] = field(default_factory=dict)
    preview_ttl_s: float = 900.0


# ---- the server ------------------------------------------------------------------------


class _ChronoMemServer(MCPServer):
    """MCPServer that refuses arguments a tool does not declare (a scope above all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.declared: dict[str, set[str]] = {}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = self.declared.get(name)
        extra = sorted(set(arguments or {}) - known) if known is not None else []
        if extra:
            scope_words = {"app", "user", "scope", "user_id", "app_name"} & set(extra)
            why = (
                "; the memory scope (app, user) is set by the server, not by a tool argument"
                if scope_words
                else ""
            )
            raise ToolError(
                f"{name}: unknown argument(s) {', '.join(map(repr, extra))}; it takes "
                f"{', '.join(sorted(known or ())) or 'no arguments'}{why}"
            )
        return await super().call_tool(name, arguments, context)


def _copy(model: BaseModel, **changes: Any) -> Any:
    """A copy of a pydantic ``model`` with ``changes``."""
    return model.model_copy(update=changes)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def _diff(before: Mapping[str, str], after: Mapping[str, str], a: int, b: int | None) -> Diff:
    return Diff(
        from_version=a,
        to_version=b,
        added={k: v for k, v in after.items() if k not in before},
        removed={k: v for k, v in before.items() if k not in after},
        changed={
            k: Changed(before=before[k], after=after[k])
            for k in before
            if k in after and before[k] != after[k]
        },
    )


def _item_id(text: str, taken: set[str]) -> str:
    """A readable id for a memory added without one: its first words, made unique."""
    words = [w for w in fts_terms(text) if len(w) > 1]
    base = "_".join(words[:4])[:40] or "memory"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    return out


def build_server(config: ServerConfig) -> Any:
    """The MCP server for ``config``: every call works on :data:`CALLER`'s scope when an
    HTTP token gate set one, else on ``config.scope``."""
    store = config.store
    lock = threading.Lock()  # one store call at a time; the event loop stays free
    previews = Previews(config.preview_ttl_s)
    written = Writes()

    def pick_scope(ctx: Any = None) -> Scope:
        return CALLER.get() or config.scope

    server = _ChronoMemServer(
        "chronomem",
        version=chronomem.__version__,
        instructions=(
            "Long-term memory for one user, versioned: every write is a version. Use "
            "remember to store facts, recall to look them up, history/diff to see what "
            "changed. To take something back, call preview_undo (plain words such as "
            "'undo the move to Bergen' or 'the second one', or a version id), show the "
            "user the plan, then call undo with its token. forget removes what a request "
            "names and keeps later writes; redact erases a secret from all of history. To "
            "try something on the side, branch, checkout the branch, write, then "
            "compare_branches and merge it back (or checkout main and leave it)."
        ),
    )

    async def run(fn: Callable[[], Any]) -> Any:
        def locked() -> Any:
            with lock:
                return fn()

        try:
            return await anyio.to_thread.run_sync(locked)
        except ToolError:
            raise
        except (ChronoMemError, ValueError, TypeError, LookupError) as exc:
            raise ToolError(str(exc)) from exc

    def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = inspect.signature(fn).parameters
        server.declared[fn.__name__] = {n for n in params if n != "ctx"}
        server.add_tool(fn, structured_output=True)
        return fn

    def versions_of(scope: Scope) -> list[VersionRecord]:
        return store.versions(scope.app, scope.user)

    # -- writes and reads --

    @tool
    async def remember(
        ops: list[Op], ctx: Context, reason: str = "the user said so", source: str = "agent"
    ) -> Remembered:
        """Store facts about the user as one new version of memory. Each op adds,
        updates or deletes one memory; call once per thing the user told you (each call
        is one version: the unit that history, undo and forget name)."""
        scope = pick_scope(ctx)
        if not ops:
            raise ToolError("remember: ops is empty; pass at least one {op, item_id, text}")

        def write() -> Remembered:
            taken = set(store.snapshot(scope.app, scope.user))
            rows = []
            for i, o in enumerate(ops):
                item = o.item_id
                if item is None:
                    if o.op != "add":
                        raise ToolError(f"ops[{i}]: {o.op} needs the item_id of the memory")
                    item = _item_id(o.text, taken)
                taken.add(item)
                rows.append({"op": o.op, "item_id": item, "text": o.text})
            version = store.commit(scope.app, scope.user, rows, source=source, reason=reason)
            return Remembered(version=version, item_ids=[r["item_id"] for r in rows])

        done = await run(write)
        written.add(scope, done.version)
        return done

    @tool
    async def recall(query: str, ctx: Context, k: int = 5, version: int | None = None) -> Recalled:
        """Find the memories relevant to a question. At HEAD (the default) the store's
        search ranks them; at an earlier ``version`` the memories of that version are
        ranked by the words they share with the query (those sharing none are left out)."""
        scope = pick_scope(ctx)

        def find() -> Recalled:
            head = store.head(scope.app, scope.user)
            if version is None or version == head:
                hits = store.search(scope.app, scope.user, query, k)
                return Recalled(
                    version=head,
                    memories=[Memory(item_id=h.item_id, text=h.text, score=h.score) for h in hits],
                )
            snap = store.snapshot(scope.app, scope.user, version)
            words = set(fts_terms(query))
            scored = sorted(
                ((len(words & set(fts_terms(t))), i, t) for i, t in snap.items()),
                key=lambda x: (-x[0], x[1]),
            )
            return Recalled(
                version=version,
                memories=[Memory(item_id=i, text=t, score=float(s)) for s, i, t in scored[:k] if s],
            )

        return await run(find)

    @tool
    async def history(ctx: Context, limit: int = 20) -> History:
        """The versions of memory, newest first, with what each write did and when."""
        scope = pick_scope(ctx)

        def read() -> History:
            rows = versions_of(scope)
            head = rows[-1].version_id if rows else 0
            shown = [r for r in reversed(rows) if r.version_id != 0][: max(0, limit)]
            return History(
                head=head,
                versions=[
                    Version(
                        version=r.version_id,
                        parent=r.parent,
                        date=_iso(r.created),
                        summary=r.summary or r.descriptor or r.op or "",
                        source=r.source or "",
                        reason=r.reason or "",
                    )
                    for r in shown
                ],
            )

        return await run(read)

    @tool
    async def diff(from_version: int, ctx: Context, to_version: int | None = None) -> Diff:
        """What changed between two versions (``to_version`` defaults to HEAD)."""
        scope = pick_scope(ctx)

        def compare() -> Diff:
            b = store.head(scope.app, scope.user) if to_version is None else to_version
            return _diff(
                store.snapshot(scope.app, scope.user, from_version),
                store.snapshot(scope.app, scope.user, b),
                from_version,
                b,
            )

        return await run(compare)

    # -- undo --

    @tool
    async def preview_undo(
        ctx: Context,
        request: str | None = None,
        version: int | None = None,
        mode: Literal["selective", "revert", "truncate"] = "selective",
        with_dependents: Literal["refuse", "keep", "drop"] = "refuse",
    ) -> UndoPreview:
        """Plan taking back a write, without changing anything. Name it in plain words
        (``request``: "undo the move to Bergen", or "the second one": the writes made
        through this server count) or by ``version`` id
        (see history). ``mode``: "selective" (default) reverts only that write and keeps
        everything written after it; "revert" restores the memory as it was before it,
        as a new version; "truncate" does the same and drops the later versions. Returns
        the plan, its confidence and, when the store will not act, the reasons. Show the
        user, then pass the token to undo."""
        scope = pick_scope(ctx)
        if (request is None) == (version is None):
            raise ToolError("preview_undo: give exactly one of request (plain words) or version")
        mine = written.of(scope) if request is not None else []

        def plan() -> UndoPreview:
            app, user = scope.app, scope.user
            head = store.head(app, user)
            refused = UndoPreview(
                status="refused", token=None, mode=mode, resolved_by="", undo_versions=[],
                target_version=None, head=head, confidence=None, refusal_reasons=[], effect=None,
            )  # fmt: skip
            idx = ordinal_index(request) if request is not None else None
            if idx is not None and not -len(mine) <= idx < len(mine):
                return _copy(
                    refused,
                    resolved_by="position among the writes made through this server",
                    refusal_reasons=[
                        f"this server has written {len(mine)} version(s) of this memory, so "
                        "there is no "
                        f"{'such' if idx < 0 else f'number {idx + 1}'} write to undo; name "
                        "what to undo in words, or give its version id (see history)"
                    ],
                )
            confidence: float | None = 1.0
            if idx is not None or version is not None:
                target_write = mine[idx] if idx is not None else int(version or 0)
                how = (
                    f"position: write {idx + 1 if idx >= 0 else len(mine) + idx + 1} of "
                    f"{len(mine)} made through this server (version {target_write})"
                    if idx is not None
                    else f"version id {target_write}"
                )
                parents = {r.version_id: r.parent for r in versions_of(scope)}
                if target_write not in parents or target_write == 0:
                    return _copy(
                        refused,
                        resolved_by=how,
                        refusal_reasons=[f"version {target_write} is not on the current history"],
                    )
                undo = [target_write]
                target = None if mode == "selective" else parents[target_write]
            else:
                how = "plain words (the store's resolver)"
                try:
                    if mode == "selective":
                        sp = store.plan_selective_undo(
                            app, user, request, with_dependents=with_dependents
                        )
                        undo, target, confidence = list(sp.versions), None, sp.confidence
                    else:
                        rp = store.plan_rollback_by_nl_query(app, user, request, mode=mode)
                        undo, target, confidence = (
                            [rp.matched_version],
                            rp.target_version,
                            (rp.confidence),
                        )
                except ChronoMemError as exc:
                    return _copy(refused, resolved_by=how, refusal_reasons=[str(exc)])
            now = store.snapshot(app, user)
            later: list[dict[str, Any]] = []
            if mode == "selective":
                try:
                    sp = store.revert_commits(
                        app, user, undo, with_dependents=with_dependents, preview=True
                    )
                except ChronoMemError as exc:
                    conflicts = getattr(exc, "conflicts", [])
                    return _copy(
                        refused, resolved_by=how, undo_versions=undo, confidence=confidence,
                        refusal_reasons=[str(exc)], later_changes=conflicts,
                    )  # fmt: skip
                after = {k: v for k, v in now.items() if k not in set(sp.removed)}
                after.update(sp.restored)
                later = list(sp.conflicts)
            else:
                assert target is not None
                after = store.snapshot(app, user, target)
            pending = Plan(
                scope, mode, tuple(undo), target, head, with_dependents, time.monotonic()
            )
            return UndoPreview(
                status="ready",
                token=previews.issue(pending),
                mode=mode,
                resolved_by=how,
                undo_versions=undo,
                target_version=target,
                head=head,
                confidence=confidence,
                refusal_reasons=[],
                effect=_diff(now, after, head, None),
                later_changes=later,
            )

        return await run(plan)

    @tool
    async def undo(token: str, ctx: Context) -> UndoDone:
        """Apply a plan from preview_undo, exactly as previewed: pass its token. Refused
        if memory changed since the preview (preview again then)."""
        scope = pick_scope(ctx)
        plan = previews.take(scope, token)

        def apply() -> UndoDone:
            app, user = scope.app, scope.user
            if plan.mode == "selective":
                done = store.revert_commits(
                    app, user, list(plan.versions), with_dependents=plan.with_dependents,
                    reason="undo (mcp)", expected_head=plan.head,
                )  # fmt: skip
                return UndoDone(
                    head=int(done.new_head), mode=plan.mode, undone_versions=list(done.reverted)
                )
            assert plan.target is not None
            head = store.rollback_to_version(
                app, user, plan.target, mode=plan.mode, reason="undo (mcp)",
                expected_head=plan.head,
            )  # fmt: skip
            return UndoDone(head=head, mode=plan.mode, undone_versions=list(plan.versions))

        return await run(apply)

    @tool
    async def forget(
        request: str,
        ctx: Context,
        with_dependents: Literal["refuse", "keep", "drop"] = "refuse",
        redact: bool = False,
        preview: bool = False,
    ) -> Forgotten:
        """Forget what the user names ("forget what I said about my door code"): the
        writes that state it are reverted, everything written after them stays. Later
        edits of the same memories: "refuse" (default: report them, change nothing),
        "keep" their text, or "drop" them too. ``redact`` also erases the forgotten texts
        from all of history (for a secret). ``preview`` only reports."""
        scope = pick_scope(ctx)

        def go() -> Forgotten:
            app, user = scope.app, scope.user
            try:
                sp = store.selective_undo_by_nl_query(
                    app, user, request, with_dependents=with_dependents, redact=redact,
                    preview=preview,
                )  # fmt: skip
            except ChronoMemError as exc:
                return Forgotten(
                    status="refused", head=store.head(app, user), reverted_versions=[],
                    removed=[], restored={}, later_changes=getattr(exc, "conflicts", []),
                    confidence=None, redacted=False, refusal_reasons=[str(exc)],
                )  # fmt: skip
            return Forgotten(
                status="preview" if preview else "done",
                head=sp.head if sp.new_head is None else int(sp.new_head),
                reverted_versions=list(sp.reverted),
                removed=list(sp.removed),
                restored=dict(sp.restored),
                later_changes=list(sp.conflicts),
                confidence=sp.confidence,
                redacted=bool(redact and not preview),
                refusal_reasons=[],
            )

        return await run(go)

    @tool
    async def redact(
        item_or_text: str, reason: str, ctx: Context, by: Literal["auto", "id", "text"] = "auto"
    ) -> Redacted:
        """Erase a memory's content (by its id) or every stored text containing a string
        (by text) from all versions, indexes and caches: for a secret shared by mistake.
        History keeps that something was erased, not what."""
        scope = pick_scope(ctx)

        def erase() -> Redacted:
            rep = store.redact(scope.app, scope.user, item_or_text, reason=reason, by=by)
            return Redacted(
                item_ids=list(rep.get("items", [])),
                versions=[int(v) for v in rep.get("versions", [])],
                contents=int(rep.get("contents", 0)),
            )

        return await run(erase)

    @tool
    async def check_integrity(ctx: Context) -> Integrity:
        """Check that memory's state and indexes agree (read-only)."""
        scope = pick_scope(ctx)
        problems = await run(lambda: store.check_integrity(scope.app, scope.user))
        return Integrity(healthy=not problems, problems=list(problems))

    # -- branches --

    def listed(scope: Scope) -> Branches:
        rows = store.branches(scope.app, scope.user)
        return Branches(
            checked_out=next(r["name"] for r in rows if r["checked_out"]),
            branches=[
                Branch(name=r["name"], head=r["head"], forked_from=r["from"], at=r["at"],
                       checked_out=r["checked_out"])
                for r in rows
            ],
        )  # fmt: skip

    @tool
    async def branch(
        name: str, ctx: Context, version: int | None = None, before: str | None = None
    ) -> Branches:
        """Start a branch: a separate line of memory to try something without touching
        the current one. It starts from HEAD, from ``version``, or from before what
        ``before`` names in plain words ("before we talked about the move"). Nothing is
        checked out: call checkout to work on it."""
        scope = pick_scope(ctx)
        if version is not None and before is not None:
            raise ToolError("branch: pass version or before, not both")

        def make() -> Branches:
            at: int | str | None = version
            if before is not None:  # the request reads as an undo of what it names
                at = before if before.lower().startswith("before ") else f"before {before}"
            store.branch(scope.app, scope.user, name, at=at)
            return listed(scope)

        return await run(make)

    @tool
    async def checkout(name: str, ctx: Context) -> Branches:
        """Switch to branch ``name`` ("main": the original line): every tool then reads
        and writes that branch."""
        scope = pick_scope(ctx)

        def switch() -> Branches:
            store.checkout(scope.app, scope.user, name)
            return listed(scope)

        return await run(switch)

    @tool
    async def list_branches(ctx: Context) -> Branches:
        """The branches of memory, with their HEADs and which one is checked out."""
        scope = pick_scope(ctx)
        return await run(lambda: listed(scope))

    @tool
    async def compare_branches(a: str, b: str, ctx: Context) -> Diff:
        """What differs between the HEADs of branches ``a`` and ``b`` (from a to b)."""
        scope = pick_scope(ctx)

        def compare() -> Diff:
            d = store.diff(scope.app, scope.user, a, b)
            return Diff(
                from_version=d["a"], to_version=d["b"], added=d["added"], removed=d["removed"],
                changed={k: Changed(**v) for k, v in d["changed"].items()},
            )  # fmt: skip

        return await run(compare)

    @tool
    async def merge(
        source: str,
        ctx: Context,
        strategy: Literal["refuse", "ours", "theirs"] = "refuse",
        resolutions: dict[str, str] | None = None,
        preview: bool = False,
    ) -> Merged:
        """Merge branch ``source`` into the checked-out branch. Memories changed on one
        side only are taken; one changed on both is a conflict: resolve each in
        ``resolutions`` ({item_id: "ours" | "theirs" | any other text, kept as the
        memory's text}) or for all with ``strategy``. With conflicts left, nothing is
        written and they are returned (status "conflicts"): show the user, then merge
        again with their choices."""
        scope = pick_scope(ctx)
        res = {
            k: v if v in ("ours", "theirs") else {"text": v} for k, v in (resolutions or {}).items()
        }

        def go() -> Merged:
            try:
                got = store.merge(scope.app, scope.user, source, strategy=strategy,
                                  resolutions=res, preview=preview)  # fmt: skip
            except chronomem.MergeConflictError as exc:
                return Merged(
                    status="conflicts", version=None, base=None, changes={},
                    conflicts=[Conflict(item_id=c["item"], base=c["base"], ours=c["ours"],
                                        theirs=c["theirs"], resolved=None) for c in exc.conflicts],
                )  # fmt: skip
            return Merged(
                status="preview" if preview else "done", version=got["version"],
                base=got["base"], changes=got["changes"],
                conflicts=[Conflict(item_id=c["item"], base=c["base"], ours=c["ours"],
                                    theirs=c["theirs"], resolved=c["resolved"], text=c["text"])
                           for c in got["conflicts"]],
            )  # fmt: skip

        return await run(go)

    # -- resources --

    def snapshot_text(version: int | None) -> str:
        scope = pick_scope()
        with lock:
            try:
                head = store.head(scope.app, scope.user)
                snap = store.snapshot(scope.app, scope.user, version)
            except (ChronoMemError, ValueError, TypeError) as exc:
                raise ResourceError(str(exc)) from exc
        return json.dumps(
            {"version": head if version is None else version, "memories": snap},
            ensure_ascii=False,
            indent=1,
        )

    @server.resource(
        "memory://head",
        name="memory",
        description="The user's memory now (HEAD): {version, memories: {item_id: text}}",
        mime_type="application/json",
    )
    def memory_at_head() -> str:
        return snapshot_text(None)

    @server.resource(
        "memory://version/{version}",
        name="memory_at_version",
        description="The user's memory as it was at a version (see the history tool)",
        mime_type="application/json",
    )
    def memory_at_version(version: str) -> str:
        if not version.isdigit():
            raise ResourceError(f"version must be a version id (a number), got {version!r}")
        return snapshot_text(int(version))

    return server
