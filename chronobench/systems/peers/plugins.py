"""The peers' registrations, named by chronobench's own entry points (pyproject.toml,
``[project.entry-points."chronobench.systems"]``): the same mechanism a third party
uses (docs/plugins.md), so nothing registers them in :mod:`chronobench.systems.registry`
(a name registered both ways with different targets is a collision).

Each value is a :class:`chronobench.plugins.Plugin` carrying the row label and table
order (after the built-ins' 10 ... 110); importing this module imports no peer package.
"""

from __future__ import annotations

from chronobench.plugins import Plugin
from chronobench.systems.peers import PEERS, peer_spec
from chronobench.systems.registry import RetrievalOptions


def _plugin(name: str) -> Plugin:
    # Label, order and requirements: the peer's entry in PEER_MEMORIES.
    entry = peer_spec(name)
    return Plugin(
        target=f"chronobench.systems.peers.system:{name}",
        label=entry.label,
        order=entry.order,
        # RAG-only's options: a peer reads as it does (its own search, the same packing).
        options=RetrievalOptions,
        requires=entry.requires,
    )


langgraph_checkpointer = _plugin("langgraph_checkpointer")
langgraph_store = _plugin("langgraph_store")
mem0 = _plugin("mem0")
openai_agents_session = _plugin("openai_agents_session")
adk_rewind = _plugin("adk_rewind")
adk_rewind_user_state = _plugin("adk_rewind_user_state")
graphiti = _plugin("graphiti")

__all__ = [*PEERS]
