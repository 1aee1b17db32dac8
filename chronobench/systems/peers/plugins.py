"""The peers' registrations, named by chronobench's own entry points (pyproject.toml,
``[project.entry-points."chronobench.systems"]``): the same mechanism a third party
uses (docs/plugins.md), so nothing registers them in :mod:`chronobench.systems.registry`
(a name registered both ways with different targets is a collision).

Each value is a :class:`chronobench.plugins.Plugin` carrying the row label and table
order (after the built-ins' 10 ... 110); importing this module imports no peer package.
"""

from __future__ import annotations

from chronobench.plugins import Plugin
from chronobench.systems.peers import PEERS, install_hint
from chronobench.systems.peers.system import PeerSystemOptions

# Table order of the "memory systems" section: the peers in PEERS order from 200.
ORDER_BASE = 200


def _plugin(name: str, i: int) -> Plugin:
    spec = PEERS[name]
    return Plugin(
        target=f"chronobench.systems.peers.system:{name}",
        label=spec.label,
        order=ORDER_BASE + 10 * i,
        options=PeerSystemOptions,
        requires=tuple((m, install_hint(name)) for m in spec.requires),
    )


langgraph_checkpointer = _plugin("langgraph_checkpointer", 0)
langgraph_store = _plugin("langgraph_store", 1)
mem0 = _plugin("mem0", 2)
openai_agents_session = _plugin("openai_agents_session", 3)
adk_rewind = _plugin("adk_rewind", 4)
adk_rewind_user_state = _plugin("adk_rewind_user_state", 5)
graphiti = _plugin("graphiti", 6)

__all__ = [*PEERS]
