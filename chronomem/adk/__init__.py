"""ChronoMem as a Google ADK memory service, with rollback an agent can use.

Needs the ``adk`` extra (``pip install "chronomem[adk]"``)::

    from chronomem.adk import ChronoMemMemoryService, memory_tools

    memory = ChronoMemMemoryService("memory.db")
    agent = LlmAgent(name="assistant", model=..., tools=memory_tools(memory))
    runner = Runner(agent=agent, app_name="app", session_service=...,
                    memory_service=memory)
"""

from __future__ import annotations

try:
    import google.adk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chronomem.adk needs Google ADK: pip install 'chronomem[adk]' (or pip install google-adk)"
    ) from exc

from chronomem.adk.planning import RollbackReport, UncertainRequestError
from chronomem.adk.service import ChronoMemMemoryService
from chronomem.adk.tools import memory_tools

__all__ = ["ChronoMemMemoryService", "RollbackReport", "UncertainRequestError", "memory_tools"]
