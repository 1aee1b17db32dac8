"""ADK tools for branches: try a change on the side, compare, merge it back or drop it.

``branch_memory(name, before, version)`` starts a branch (from HEAD, a version, or from
before what the user names); ``switch_memory_branch(name)`` makes every memory tool and
the service read and write that branch; ``list_memory_branches()``;
``compare_memory_branches(a, b)``; ``merge_memory_branch(source, resolutions, strategy)``
merges ``source`` into the branch in use and, when both sides changed a memory, returns
the conflicts without writing anything so the model can ask the user (then merge again
with their choices). Replies are dicts with a ``status``, never exceptions.
"""

from __future__ import annotations

import asyncio
from typing import Any

from chronomem.types import ChronoMemError, MergeConflictError


def branch_tools(service: Any, quiet_scope: Any) -> list[Any]:
    """The branch tool functions bound to ``service`` (wrapped as ``FunctionTool`` by
    :func:`~chronomem.adk.tools.memory_tools`)."""
    from google.adk.tools import ToolContext

    store = service.store

    async def call(fn: Any, *args: Any, **kw: Any) -> dict[str, Any]:
        try:
            return {"status": "ok", **(await asyncio.to_thread(fn, *args, **kw))}
        except MergeConflictError as exc:
            return {
                "status": "conflicts",
                "conflicts": exc.conflicts,
                "instruction": "Nothing was written. Show the user each memory both branches "
                "changed and ask which to keep (ours, theirs, or a new text); then call "
                "merge_memory_branch again with resolutions.",
            }
        except (ChronoMemError, ValueError, TypeError, LookupError) as exc:
            return {"status": "error", "error": str(exc)}

    def listing(app: str, user: str) -> dict[str, Any]:
        rows = store.branches(app, user)
        return {"branches": rows, "in_use": next(r["name"] for r in rows if r["checked_out"])}

    async def branch_memory(
        name: str, tool_context: ToolContext, before: str = "", version: int = -1
    ) -> dict[str, Any]:
        """Start a branch of memory: a separate line to try something without touching
        the memory in use. Nothing switches: call switch_memory_branch to use it.

        Args:
          name: the branch's name.
          before: optional; start from before what this names, in the user's words
            ("the move to Bergen").
          version: optional; start from this version id (see list_memory_versions).
        """
        app, user = quiet_scope(tool_context)
        at: int | str | None = None if version < 0 else version
        if before:
            at = before if before.lower().startswith("before ") else f"before {before}"

        def make() -> dict[str, Any]:
            made = store.branch(app, user, name, at=at)
            return {"created": made["name"], "head": made["head"], **listing(app, user)}

        return await call(make)

    async def switch_memory_branch(name: str, tool_context: ToolContext) -> dict[str, Any]:
        """Use branch ``name`` ("main": the original memory) from now on: every memory
        tool then reads and writes it.

        Args:
          name: the branch to use.
        """
        app, user = quiet_scope(tool_context)
        return await call(lambda: {**store.checkout(app, user, name), **listing(app, user)})

    async def list_memory_branches(tool_context: ToolContext) -> dict[str, Any]:
        """The branches of memory, their latest versions, and which one is in use."""
        app, user = quiet_scope(tool_context)
        return await call(listing, app, user)

    async def compare_memory_branches(a: str, b: str, tool_context: ToolContext) -> dict[str, Any]:
        """What differs between branches ``a`` and ``b``: memories added, removed and
        changed going from a to b.

        Args:
          a: a branch name.
          b: another branch name.
        """
        app, user = quiet_scope(tool_context)
        return await call(store.diff, app, user, a, b)

    async def merge_memory_branch(
        source: str,
        tool_context: ToolContext,
        resolutions: dict[str, str] | None = None,
        strategy: str = "refuse",
    ) -> dict[str, Any]:
        """Merge branch ``source`` into the branch in use. Memories changed on one side
        only are taken; a memory both changed is a conflict, returned without writing
        anything unless resolved.

        Args:
          source: the branch to merge from.
          resolutions: optional {item_id: "ours" | "theirs" | a new text} per conflict.
          strategy: "refuse" (default: ask), "ours" or "theirs" for every conflict.
        """
        app, user = quiet_scope(tool_context)
        res = {
            k: v if v in ("ours", "theirs") else {"text": v} for k, v in (resolutions or {}).items()
        }
        return await call(store.merge, app, user, source, strategy=strategy, resolutions=res)

    return [
        branch_memory,
        switch_memory_branch,
        list_memory_branches,
        compare_memory_branches,
        merge_memory_branch,
    ]
