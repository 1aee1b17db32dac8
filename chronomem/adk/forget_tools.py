"""ADK tools for selective undo: forget what the user names, keep everything said after it.

``preview_memory_forget(request, later_changes)`` resolves a plain-words request ("forget
what I said about my door code") to the commits that state it
(:meth:`ChronoMem.plan_selective_undo`) and returns what would go, what would come back,
and the later changes to the same memories, with a token; nothing changes.
``confirm_memory_forget(token)`` reverts exactly those commits
(:meth:`ChronoMem.revert_commits`), and only if memory has not changed since the
preview. Unlike the undo tools, nothing said after the named fact is lost.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from chronomem.adk.planning import UncertainRequestError
from chronomem.adk.previews import Pending

SHOWN = 10  # memories listed in a tool reply


def forget_tools(service: Any, quiet_scope: Any) -> list[Any]:
    """The two selective-undo tool functions bound to ``service`` (wrapped as
    ``FunctionTool`` by :func:`~chronomem.adk.tools.memory_tools`)."""
    from google.adk.tools import ToolContext

    async def preview_memory_forget(
        request: str, tool_context: ToolContext, later_changes: str = "keep", erase: bool = False
    ) -> dict[str, Any]:
        """Preview forgetting what the user names, keeping everything said after it.
        Changes nothing.

        Returns the memories that would be removed or restored, later changes to the
        same memories, and a token. Show the user, ask them to confirm; only then call
        confirm_memory_forget.

        Args:
          request: the user's words, e.g. "forget what I said about the adoption agency".
          later_changes: "keep" (default: later edits of the same memory stay) or "drop"
            (revert those edits too).
          erase: also erase the forgotten texts from history (a secret the user shared
            by mistake); the request is then stored with those words redacted.
        """
        app, user = quiet_scope(tool_context)
        if later_changes not in ("keep", "drop"):
            return {"status": "error", "error": "later_changes must be 'keep' or 'drop'"}
        try:
            plan = await asyncio.to_thread(
                service.store.plan_selective_undo, app, user, request, with_dependents=later_changes
            )
        except UncertainRequestError as exc:
            return {
                "status": "uncertain",
                "error": str(exc),
                "hint": "ask the user what exactly to forget, in their words",
            }
        except (ValueError, LookupError) as exc:
            return {"status": "error", "error": str(exc)}
        pending = Pending(
            app, user, plan.versions[0], plan.head, "selective", request, time.monotonic(),
            versions=tuple(plan.versions), with_dependents=later_changes, redact=bool(erase),
        )  # fmt: skip
        return {
            "status": "preview",
            "token": service.previews.issue(pending),
            "will_revert_versions": plan.reverted,
            "will_remove": plan.removed[:SHOWN],
            "will_restore": dict(list(plan.restored.items())[:SHOWN]),
            "later_changes": plan.conflicts,
            "confidence": plan.confidence,
            "erase_from_history": bool(erase),
            "instruction": "Nothing has changed yet. Tell the user what will be forgotten "
            "and ask them to confirm; if they agree, call confirm_memory_forget with this token.",
        }

    async def confirm_memory_forget(token: str, tool_context: ToolContext) -> dict[str, Any]:
        """Apply a previewed forget after the user confirmed it.

        Args:
          token: the token returned by preview_memory_forget.
        """
        app, user = quiet_scope(tool_context)
        try:
            pending = service.previews.take(app, user, token)
            if pending.mode != "selective":
                raise ValueError("this token is an undo preview's; use confirm_memory_undo")
            done = await asyncio.to_thread(
                service.store.revert_commits, app, user, list(pending.versions),
                with_dependents=pending.with_dependents, expected_head=pending.head,
                redact=pending.redact,
                reason="adk forget: " + pending.request[:200].replace("\x00", "\ufffd"),
            )  # fmt: skip
        except (ValueError, RuntimeError) as exc:
            return {"status": "error", "error": str(exc)}
        except Exception as exc:  # HeadMovedError and other store refusals
            return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        return {
            "status": "done",
            "head": done.new_head,
            "reverted_versions": done.reverted,
            "removed": done.removed[:SHOWN],
            "restored": list(done.restored)[:SHOWN],
        }

    return [preview_memory_forget, confirm_memory_forget]
