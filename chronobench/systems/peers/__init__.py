"""The memory systems agent builders use, each behind :class:`~.base.PeerMemory`.

One file per peer; each is an optional extra (``pip install 'chronobench[peers]'`` for
all). :data:`PEERS` is the one table of them: where the class lives, the extra that
installs it, and the modules it needs (checked without importing). The restore-fidelity
bench reads it, and so do the peers' entry-point registrations (:mod:`.plugins`, named
in pyproject.toml). What each peer does natively and what its adapter emulates:
docs/peers.md.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronobench.systems.peers.base import Memory, PeerMemory, PeerWrite, RollbackInfo


@dataclass(frozen=True)
class PeerSpec:
    """Where a peer lives and what it needs."""

    target: str  # "module:Class"
    extra: str  # the pyproject extra that installs it
    requires: tuple[str, ...]  # importable modules it needs
    options: dict[str, Any] = field(default_factory=dict)  # fixed constructor options
    label: str = ""  # row label in tables


PEERS: dict[str, PeerSpec] = {
    "langgraph_checkpointer": PeerSpec(
        "chronobench.systems.peers.langgraph_checkpointer:LangGraphCheckpointerPeer",
        "peers-langgraph",
        ("langgraph", "langgraph.checkpoint.sqlite"),
        label="LangGraph checkpointer (SqliteSaver)",
    ),
    "langgraph_store": PeerSpec(
        "chronobench.systems.peers.langgraph_store:LangGraphStorePeer",
        "peers-langgraph",
        ("langgraph", "langgraph.store.sqlite", "sqlite_vec"),
        label="LangGraph store (SqliteStore)",
    ),
    "mem0": PeerSpec(
        "chronobench.systems.peers.mem0:Mem0Peer",
        "peers-mem0",
        ("mem0", "qdrant_client", "langchain", "langchain_core"),
        label="Mem0 OSS (infer=False)",
    ),
    "openai_agents_session": PeerSpec(
        "chronobench.systems.peers.openai_agents:OpenAIAgentsSessionPeer",
        "peers-openai-agents",
        ("agents",),
        label="OpenAI Agents SDK session",
    ),
    "adk_rewind": PeerSpec(
        "chronobench.systems.peers.adk_rewind:AdkRewindPeer",
        "peers-adk",
        ("google.adk", "aiosqlite"),
        label="Google ADK session rewind",
    ),
    "adk_rewind_user_state": PeerSpec(
        "chronobench.systems.peers.adk_rewind:AdkRewindPeer",
        "peers-adk",
        ("google.adk", "aiosqlite"),
        options={"state_scope": "user"},
        label="Google ADK rewind, memories in user: state",
    ),
    "graphiti": PeerSpec(
        "chronobench.systems.peers.graphiti:GraphitiPeer",
        "peers-graphiti",
        ("graphiti_core", "kuzu"),
        label="Graphiti (Kuzu, scripted LLM)",
    ),
}

# ChronoMem under the same interface: a row of the fidelity table, not a system to register
# (the runner has its own ChronoMem systems).
CHRONOMEM = PeerSpec(
    "chronobench.systems.peers.chronomem:ChronoMemPeer", "", (), label="ChronoMem (truncate)"
)


def peer_spec(name: str) -> PeerSpec:
    if name == "chronomem":
        return CHRONOMEM
    if name not in PEERS:
        raise KeyError(f"unknown peer {name!r}; known: chronomem, {', '.join(PEERS)}")
    return PEERS[name]


def missing_modules(name: str) -> list[str]:
    """Modules ``name`` needs that are not installed (empty: it can run)."""
    out = []
    for module in peer_spec(name).requires:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a dotted name whose parent is missing
            found = False
        if not found:
            out.append(module)
    return out


def install_hint(name: str) -> str:
    extra = peer_spec(name).extra
    return f"pip install 'chronobench[{extra}]'" if extra else "part of chronobench"


def create_peer(name: str, workdir: str | Path, embedding: Any, **options: Any) -> PeerMemory:
    """Open (or create) peer ``name`` on ``workdir`` with the shared ``embedding``."""
    spec = peer_spec(name)
    missing = missing_modules(name)
    if missing:
        from chronobench.errors import MissingDependencyError

        raise MissingDependencyError(
            f"peer {name!r} needs {', '.join(missing)}, not installed: {install_hint(name)}"
        )
    module, _, attr = spec.target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return cls(workdir, embedding, **{**spec.options, **options})


__all__ = [
    "PEERS",
    "Memory",
    "PeerMemory",
    "PeerSpec",
    "PeerWrite",
    "RollbackInfo",
    "create_peer",
    "missing_modules",
    "peer_spec",
]
