"""The memory systems agent builders use, each behind :class:`~.base.PeerMemory`.

One file per peer; each is an optional extra (``pip install 'chronobench[peers]'`` for
all). :data:`PEER_MEMORIES` is the one registry of them: where the class lives, the extra
that installs it, and the modules it needs (checked without importing). The restore-fidelity
bench reads it, and so do the peers' entry-point registrations (:mod:`.plugins`, named
in pyproject.toml). What each peer does natively and what its adapter emulates:
docs/peers.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronobench.registry import Entry, Registry
from chronobench.systems.peers.base import Memory, PeerMemory, PeerWrite, RollbackInfo

# Table order of the "memory systems" section: ChronoMem first, the peers from 200.
ORDER_BASE = 200


def _hint(extra: str) -> str:
    return f"pip install 'chronobench[{extra}]'" if extra else "part of chronobench"


def _requires(extra: str, modules: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((m, _hint(extra)) for m in modules)


#: Every peer memory: its class (``"module:Class"``), the modules it needs with the extra
#: that installs them (``requires``: checked without importing), its row label and table
#: order; ``meta``: ``extra`` and the fixed constructor ``options``. ChronoMem under the
#: same interface is an entry too (a row of the tables, not a system to register: the
#: runner has its own ChronoMem systems).
PEER_MEMORIES = Registry(
    "peer",
    hint="add an entry to chronobench.systems.peers.PEER_MEMORIES (docs/peers.md)",
)
PEER_MEMORIES.register(
    "chronomem",
    "chronobench.systems.peers.chronomem:ChronoMemPeer",
    label="ChronoMem (truncate)",
    order=0,
    meta={"extra": "", "options": {}},
)
for _i, (_name, _target, _extra, _modules, _options, _label) in enumerate(
    (
        (
            "langgraph_checkpointer",
            "chronobench.systems.peers.langgraph_checkpointer:LangGraphCheckpointerPeer",
            "peers-langgraph",
            ("langgraph", "langgraph.checkpoint.sqlite"),
            {},
            "LangGraph checkpointer (SqliteSaver)",
        ),
        (
            "langgraph_store",
            "chronobench.systems.peers.langgraph_store:LangGraphStorePeer",
            "peers-langgraph",
            ("langgraph", "langgraph.store.sqlite", "sqlite_vec"),
            {},
            "LangGraph store (SqliteStore)",
        ),
        (
            "mem0",
            "chronobench.systems.peers.mem0:Mem0Peer",
            "peers-mem0",
            ("mem0", "qdrant_client", "langchain", "langchain_core"),
            {},
            "Mem0 OSS (infer=False)",
        ),
        (
            "openai_agents_session",
            "chronobench.systems.peers.openai_agents:OpenAIAgentsSessionPeer",
            "peers-openai-agents",
            ("agents",),
            {},
            "OpenAI Agents SDK session",
        ),
        (
            "adk_rewind",
            "chronobench.systems.peers.adk_rewind:AdkRewindPeer",
            "peers-adk",
            ("google.adk", "aiosqlite"),
            {},
            "Google ADK session rewind",
        ),
        (
            "adk_rewind_user_state",
            "chronobench.systems.peers.adk_rewind:AdkRewindPeer",
            "peers-adk",
            ("google.adk", "aiosqlite"),
            {"state_scope": "user"},
            "Google ADK rewind, memories in user: state",
        ),
        (
            "graphiti",
            "chronobench.systems.peers.graphiti:GraphitiPeer",
            "peers-graphiti",
            ("graphiti_core", "kuzu"),
            {},
            "Graphiti (Kuzu, scripted LLM)",
        ),
    )
):
    PEER_MEMORIES.register(
        _name,
        _target,
        requires=_requires(_extra, _modules),
        label=_label,
        order=ORDER_BASE + 10 * _i,
        meta={"extra": _extra, "options": _options},
    )

#: The peers (every entry but ChronoMem), in table order.
PEERS: tuple[str, ...] = tuple(e.name for e in PEER_MEMORIES.entries() if e.name != "chronomem")


def peer_spec(name: str) -> Entry:
    """The registry entry of peer ``name`` (``chronomem`` included)."""
    if name not in PEER_MEMORIES:
        raise KeyError(f"unknown peer {name!r}; known: chronomem, {', '.join(PEERS)}")
    return PEER_MEMORIES.entry(name)


def missing_modules(name: str) -> list[str]:
    """Modules ``name`` needs that are not installed (empty: it can run)."""
    return peer_spec(name).missing_modules()


def install_hint(name: str) -> str:
    return _hint(peer_spec(name).meta["extra"])


def create_peer(name: str, workdir: str | Path, embedding: Any, **options: Any) -> PeerMemory:
    """Open (or create) peer ``name`` on ``workdir`` with the shared ``embedding``."""
    spec = peer_spec(name)
    missing = missing_modules(name)
    if missing:
        from chronobench.errors import MissingDependencyError

        raise MissingDependencyError(
            f"peer {name!r} needs {', '.join(missing)}, not installed: {install_hint(name)}"
        )
    cls = spec.load()
    return cls(workdir, embedding, **{**spec.meta["options"], **options})


__all__ = [
    "PEERS",
    "PEER_MEMORIES",
    "Memory",
    "PeerMemory",
    "PeerWrite",
    "RollbackInfo",
    "create_peer",
    "missing_modules",
    "peer_spec",
]
