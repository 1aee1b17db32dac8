"""The MCP tools' typed inputs and outputs: what an agent sends and gets back.

Kept apart from the server's behaviour (:mod:`chronomem.mcp.server`) because these
models are the wire contract: their field names and descriptions are what a client's
model reads when it decides how to call a tool.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "Op",
    "Remembered",
    "Memory",
    "Recalled",
    "Version",
    "History",
    "Changed",
    "Diff",
    "UndoPreview",
    "UndoDone",
    "Forgotten",
    "Redacted",
    "Integrity",
]


class Op(BaseModel):
    """One change to memory."""

    op: Literal["add", "update", "delete"] = Field(
        "add", description="add a new memory, update an existing one, or delete one"
    )
    item_id: str | None = Field(
        None,
        description="the memory's id (a short name such as 'home_city'); required for "
        "update and delete; for add, left out it is derived from the text",
    )
    text: str = Field("", description="the memory's text (empty for delete)")


class Remembered(BaseModel):
    version: int = Field(description="the new version of memory (its id for history/undo)")
    item_ids: list[str] = Field(description="the ids of the memories written")


class Memory(BaseModel):
    item_id: str
    text: str
    score: float | None = None


class Recalled(BaseModel):
    version: int = Field(description="the version searched (HEAD unless one was asked for)")
    memories: list[Memory]


class Version(BaseModel):
    version: int
    parent: int | None
    date: str = Field(description="when it was written, UTC, ISO 8601")
    summary: str = Field(description="what the write did")
    source: str
    reason: str


class History(BaseModel):
    head: int
    versions: list[Version] = Field(description="newest first")


class Changed(BaseModel):
    before: str
    after: str


class Diff(BaseModel):
    from_version: int
    to_version: int | None = Field(description="None: the memory a previewed undo would leave")
    added: dict[str, str] = Field(description="memories only in to_version")
    removed: dict[str, str] = Field(description="memories only in from_version")
    changed: dict[str, Changed] = Field(description="memories whose text differs")


class UndoPreview(BaseModel):
    status: Literal["ready", "refused"]
    token: str | None = Field(description="pass to undo to apply exactly this plan")
    mode: str
    resolved_by: str = Field(description="how the request was read")
    undo_versions: list[int] = Field(description="the writes whose changes would go")
    target_version: int | None = Field(
        description="revert/truncate: the earlier version whose state comes back"
    )
    head: int
    confidence: float | None
    refusal_reasons: list[str]
    effect: Diff | None = Field(description="memory now (from) against memory after (to)")
    later_changes: list[dict[str, Any]] = Field(
        default_factory=list, description="later writes touching the same memories"
    )


class UndoDone(BaseModel):
    head: int = Field(description="the new HEAD version")
    mode: str
    undone_versions: list[int]


class Forgotten(BaseModel):
    status: Literal["done", "preview", "refused"]
    head: int
    reverted_versions: list[int]
    removed: list[str] = Field(description="memories that went")
    restored: dict[str, str] = Field(description="memories that got an earlier text back")
    later_changes: list[dict[str, Any]]
    confidence: float | None
    redacted: bool
    refusal_reasons: list[str]


class Redacted(BaseModel):
    item_ids: list[str]
    versions: list[int] = Field(description="versions whose content was erased")
    contents: int = Field(description="stored texts erased")


class Integrity(BaseModel):
    healthy: bool
    problems: list[str]


class Branch(BaseModel):
    name: str
    head: int = Field(description="the branch's HEAD version")
    forked_from: str | None = Field(description="the branch it was forked from (None: main)")
    at: int | None = Field(description="the version it was forked at")
    checked_out: bool


class Branches(BaseModel):
    checked_out: str = Field(description="the branch every tool reads and writes")
    branches: list[Branch]


class Conflict(BaseModel):
    item_id: str
    base: str | None = Field(description="the text both branches started from")
    ours: str | None = Field(description="the text on the branch merged into")
    theirs: str | None = Field(description="the text on the branch merged from")
    resolved: str | None = Field(description="ours, theirs or text; None: unresolved")
    text: str | None = Field(default=None, description="the text the merge keeps")


class Merged(BaseModel):
    status: Literal["done", "preview", "conflicts"]
    version: int | None = Field(description="the merge version written (None: nothing yet)")
    base: int | None = Field(description="the common ancestor's version")
    changes: dict[str, str | None] = Field(description="memories set (None: removed)")
    conflicts: list[Conflict]
