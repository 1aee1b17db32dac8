"""The MCP tools for branches of memory: branch, checkout, list_branches,
compare_branches and merge."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

import chronomem
from chronomem.mcp.host import ToolHost
from chronomem.mcp.schema import Branch, Branches, Changed, Conflict, Diff, Merged
from chronomem.mcp.session import Scope

__all__ = ["register"]


def register(host: ToolHost) -> None:
    """Add the branch tools to ``host``'s server."""
    store, pick_scope, run, tool = host.store, host.scope, host.run, host.tool

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
