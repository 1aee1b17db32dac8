"""chronobench plug-in: the ``keyword_undo`` memory system (docs/plugins.md)."""

from pydantic import BaseModel, ConfigDict, PositiveInt

from chronobench.plugins import Plugin


class KeywordUndoOptions(BaseModel):
    """The system's config options: every key in its config file is checked here."""

    model_config = ConfigDict(extra="forbid")

    window: PositiveInt = 20  # memory lines shown in a prompt (the most recent ones)


# What the entry point names. The class is imported only when a run builds the system.
SYSTEM = Plugin(
    target="keyword_undo.system:KeywordUndoSystem",
    label="Keyword undo (plug-in example)",
    order=35,  # leaderboard rows: after RAG-only (30), before ChronoMem (40)
    options=KeywordUndoOptions,
)
