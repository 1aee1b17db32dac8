"""The MCP tools that write and read memory (remember, recall, history, diff) and the
memory resources (HEAD, and any version)."""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from chronomem.mcp.host import ToolHost, diff_of, iso_time, item_id_for
from chronomem.mcp.schema import Diff, History, Memory, Op, Recalled, Remembered, Version
from chronomem.query import fts_terms
from chronomem.types import ChronoMemError

__all__ = ["register", "register_resources"]


def register(host: ToolHost) -> None:
    """Add remember, recall, history and diff to ``host``'s server."""
    store, pick_scope, run, tool = host.store, host.scope, host.run, host.tool
    written, versions_of = host.written, host.versions_of

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
                    item = item_id_for(o.text, taken)
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
                        date=iso_time(r.created),
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
            return diff_of(
                store.snapshot(scope.app, scope.user, from_version),
                store.snapshot(scope.app, scope.user, b),
                from_version,
                b,
            )

        return await run(compare)


def register_resources(host: ToolHost) -> None:
    """Add the memory resources (``memory://head``, ``memory://version/{version}``)."""
    store, pick_scope = host.store, host.scope

    def snapshot_text(version: int | None) -> str:
        scope = pick_scope()
        with host.lock:
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

    @host.server.resource(
        "memory://head",
        name="memory",
        description="The user's memory now (HEAD): {version, memories: {item_id: text}}",
        mime_type="application/json",
    )
    def memory_at_head() -> str:
        return snapshot_text(None)

    @host.server.resource(
        "memory://version/{version}",
        name="memory_at_version",
        description="The user's memory as it was at a version (see the history tool)",
        mime_type="application/json",
    )
    def memory_at_version(version: str) -> str:
        if not version.isdigit():
            raise ResourceError(f"version must be a version id (a number), got {version!r}")
        return snapshot_text(int(version))
