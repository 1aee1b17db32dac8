"""ADK tools over a :class:`ChronoMemMemoryService`: search, history, and a two-step undo.

``memory_tools(service)`` returns eleven ``FunctionTool`` objects for an ``LlmAgent``:

- ``search_memory(query)``: memories at HEAD;
- ``list_memory_versions()``: the recent history, oldest first;
- ``preview_memory_undo(request)``: what a plain-words undo would restore and undo,
  plus a token; nothing changes;
- ``confirm_memory_undo(token)``: applies exactly the previewed rollback, and only if
  memory has not changed since the preview;
- ``preview_memory_forget(request)`` / ``confirm_memory_forget(token)``: the same two
  steps for a selective undo, which forgets only the writes the request names and keeps
  everything said after them (:mod:`~chronomem.adk.forget_tools`);
- ``branch_memory``, ``switch_memory_branch``, ``list_memory_branches``,
  ``compare_memory_branches``, ``merge_memory_branch``: try a change on a branch and
  merge it back, conflicts returned for the user to settle
  (:mod:`~chronomem.adk.branch_tools`).

An agent therefore never discards state on one ambiguous call: the model must show
the user the preview and echo the token after they agree. Tools return dicts with a
``status`` (``ok``, ``preview``, ``done``, ``uncertain``, ``error``) rather than
raising, so the model can explain a refusal instead of the run failing.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from google.adk.tools import FunctionTool, ToolContext

from chronomem.adk.planning import UncertainRequestError
from chronomem.adk.previews import Pending

SHOWN = 10  # versions listed in a tool reply; the count says how many in all


def _scope(tool_context: Any) -> tuple[str, str]:
    session = tool_context.session
    return session.app_name, session.user_id


def _quiet_scope(service: Any, tool_context: Any) -> tuple[str, str]:
    """The scope, after marking this turn as one the service must not memorise."""
    service.previews.quiet(getattr(tool_context, "invocation_id", None))
    return _scope(tool_context)


def memory_tools(service: Any, *, mode: str = "revert", max_versions: int = 20) -> list[Any]:
    """The memory tools bound to ``service``.

    ``mode`` is how a confirmed undo is applied: ``revert`` (default: a new version
    equal to the target, so the undo can itself be undone) or ``truncate``.
    ``max_versions`` bounds how many recent versions ``list_memory_versions`` shows.
    """
    if mode not in ("truncate", "revert"):
        raise ValueError(f"mode must be 'truncate' or 'revert', got {mode!r}")
    if isinstance(max_versions, bool) or not isinstance(max_versions, int) or max_versions < 1:
        raise ValueError(f"max_versions must be a positive integer, got {max_versions!r}")

    async def search_memory(query: str, tool_context: ToolContext) -> dict[str, Any]:
        """Search the user's long-term memory (current state) for a query.

        Args:
          query: words to look for.
        """
        app, user = _scope(tool_context)
        res = await service.search_memory(app_name=app, user_id=user, query=query)
        return {
            "status": "ok",
            "memories": [
                {
                    "id": m.id,
                    "author": m.author,
                    "timestamp": m.timestamp,
                    "text": "\n".join(p.text for p in (m.content.parts or []) if p.text),
                }
                for m in res.memories
            ],
        }

    async def list_memory_versions(tool_context: ToolContext) -> dict[str, Any]:
        """List the recent versions of the user's memory, oldest first, with summaries."""
        app, user = _quiet_scope(service, tool_context)
        versions = await service.list_versions(app_name=app, user_id=user)
        return {"status": "ok", "total": len(versions), "versions": versions[-max_versions:]}

    async def preview_memory_undo(request: str, tool_context: ToolContext) -> dict[str, Any]:
        """Preview undoing part of memory, described in the user's words. Changes nothing.

        Returns what would be restored and undone, and a token. Show the user what
        will be undone and ask them to confirm; only then call confirm_memory_undo.

        Args:
          request: the user's request, e.g. "forget what I said about my door code".
        """
        app, user = _quiet_scope(service, tool_context)
        try:
            report = await asyncio.to_thread(service.rollback_sync, app, user, request, True, mode)
        except UncertainRequestError as exc:
            return {
                "status": "uncertain",
                "error": str(exc),
                "hint": "ask the user which fact or conversation to undo; "
                "list_memory_versions shows the history",
            }
        except (ValueError, LookupError) as exc:
            return {"status": "error", "error": str(exc)}
        if not report.discarded:
            return {
                "status": "nothing_to_undo",
                "restore_version": report.version,
                "message": "memory is already at that version; nothing would change",
            }
        pending = Pending(app, user, report.version, report.head, mode, request, time.monotonic())
        return {
            "status": "preview",
            "token": service.previews.issue(pending),
            "restore_version": report.version,
            "intent": report.intent,
            "matched_version": report.matched_version,
            # The oldest undone versions (the ones the request is about), then a count.
            "will_undo": report.discarded[:SHOWN],
            "will_undo_count": len(report.discarded),
            "confidence": report.to_dict()["confidence"],
            "instruction": "Nothing has changed yet. Tell the user what will be undone and "
            "ask them to confirm; if they agree, call confirm_memory_undo with this token.",
        }

    async def confirm_memory_undo(token: str, tool_context: ToolContext) -> dict[str, Any]:
        """Apply a previewed undo after the user confirmed it.

        Args:
          token: the token returned by preview_memory_undo.
        """
        app, user = _quiet_scope(service, tool_context)
        try:
            pending = service.previews.take(app, user, token)
            if pending.mode == "selective":
                raise ValueError("this token is a forget preview's; use confirm_memory_forget")
            report = await asyncio.to_thread(
                service.restore_sync, app, user, pending.version, pending.mode, pending.head
            )
        except (ValueError, RuntimeError) as exc:
            return {"status": "error", "error": str(exc)}
        return {
            "status": "done",
            "restored_version": report.version,
            "head": report.head,
            "undone": report.discarded[:SHOWN],
            "undone_count": len(report.discarded),
        }

    from chronomem.adk.branch_tools import branch_tools
    from chronomem.adk.forget_tools import forget_tools

    forget = forget_tools(service, lambda ctx: _quiet_scope(service, ctx))
    branches = branch_tools(service, lambda ctx: _quiet_scope(service, ctx))
    return [
        FunctionTool(search_memory),
        FunctionTool(list_memory_versions),
        FunctionTool(preview_memory_undo),
        FunctionTool(confirm_memory_undo),
        *(FunctionTool(f) for f in forget),
        *(FunctionTool(f) for f in branches),
    ]
