"""The MCP tools that take writes back: preview_undo and undo (two steps, so an agent
acts only on a plan it saw), forget (selective, keeps later writes), redact (a secret out
of all history) and check_integrity."""

from __future__ import annotations

import time
from typing import Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from chronomem.mcp.host import ToolHost, copy_model, diff_of
from chronomem.mcp.ordinals import ordinal_index
from chronomem.mcp.schema import Forgotten, Integrity, Redacted, UndoDone, UndoPreview
from chronomem.mcp.session import Plan
from chronomem.types import ChronoMemError

__all__ = ["register"]


def register(host: ToolHost) -> None:
    """Add preview_undo, undo, forget, redact and check_integrity to ``host``'s server."""
    store, pick_scope, run, tool = host.store, host.scope, host.run, host.tool
    written, previews, versions_of = host.written, host.previews, host.versions_of

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
                return copy_model(
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
                    return copy_model(
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
                    return copy_model(refused, resolved_by=how, refusal_reasons=[str(exc)])
            now = store.snapshot(app, user)
            later: list[dict[str, Any]] = []
            if mode == "selective":
                try:
                    sp = store.revert_commits(
                        app, user, undo, with_dependents=with_dependents, preview=True
                    )
                except ChronoMemError as exc:
                    conflicts = getattr(exc, "conflicts", [])
                    return copy_model(
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
                effect=diff_of(now, after, head, None),
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
