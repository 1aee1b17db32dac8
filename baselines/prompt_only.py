"""Prompt-only rollback: memory is unchanged, the request is only an instruction."""

from __future__ import annotations

from baselines._common import InstructedSystem
from chronobench.systems.base import final_state


class PromptOnlySystem(InstructedSystem):
    """The agent's default view of memory (the most recent items of the final state that
    fit the budget) plus an instruction to ignore everything after the described point."""

    name = "prompt_only"

    def memory_texts(self) -> list[str]:
        """Items alive after the last write, least recently written first."""
        return [text for _, text in final_state(self.writes)]
