"""Full-history prompting: the whole stream in the prompt plus an "answer as of" instruction."""

from __future__ import annotations

from baselines._common import InstructedSystem
from chronobench.systems.base import all_written_texts


class FullHistorySystem(InstructedSystem):
    """Every write in order (the oldest dropped first when over the budget, as a context
    window would), and the instruction to answer as of the point the request describes."""

    name = "full_history"

    def memory_texts(self) -> list[str]:
        """Every text ever written, in stream order."""
        return all_written_texts(self.writes)
