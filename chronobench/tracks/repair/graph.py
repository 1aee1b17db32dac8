"""The typed provenance graph: nodes for user inputs, execution steps, memory records and
claims (step outputs), and the nine edge types of the repair track.

A graph is plain data (two dicts and a list) so the planner can be tested without a
store; :mod:`chronobench.tracks.repair.provenance` persists it next to ChronoMem's tables.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

NODE_KINDS = ("input", "step", "memory", "claim")
EDGE_TYPES = (
    "initiate",  # input -> step: the request that started the step
    "cite",  # memory/claim -> step: shown to / consumed by the step
    "support",  # evidence -> claim/memory: the content rests on it (grouped, see Edge.group)
    "produce",  # step -> claim/memory: the step's output
    "delete",  # step -> memory: the step removed the record
    "update",  # step -> memory: the step rewrote the record's item
    "consolidate",  # memory -> memory: an original folded into a summary
    "supersede",  # memory -> memory: the newer record replaced the older one's item
    "derive",  # memory/claim -> memory: content carried over into a derived record
)
# Edges along which a fault's influence travels downstream (tracing, stage 2).
PROPAGATION = frozenset(
    {"cite", "support", "produce", "update", "consolidate", "supersede", "derive"}
)
# Edges that say what a node's content rests on (independent-support check, stage 3).
EVIDENCE = frozenset({"support", "derive", "consolidate"})


@dataclass(frozen=True)
class Node:
    """One node. ``order`` is its position in time (history, then the task trace);
    ``attrs`` holds kind-specific fields (a memory's ``item``/``text``/``active``, a
    step's ``trace`` ("history" or "task") and ``call`` ("backbone" or "tool"), a
    claim's ``key``/``value``)."""

    node_id: str
    kind: str
    order: int
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"id": self.node_id, "kind": self.kind, "order": self.order, **self.attrs}


@dataclass(frozen=True)
class Edge:
    """``src -> dst`` of ``etype``. Evidence edges into one node that share a ``group``
    are jointly needed; distinct groups are alternatives (any one suffices)."""

    src: str
    dst: str
    etype: str
    group: str = ""


class ProvGraph:
    """Nodes by id and edges by endpoint."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self._out: dict[str, list[Edge]] = defaultdict(list)
        self._in: dict[str, list[Edge]] = defaultdict(list)

    def add_node(self, node: Node) -> None:
        """Add or replace a node (a memory's ``active`` flag changes over time)."""
        if node.kind not in NODE_KINDS:
            raise ValueError(f"node {node.node_id}: kind {node.kind!r} not in {NODE_KINDS}")
        self.nodes[node.node_id] = node

    def add_edge(self, edge: Edge) -> None:
        """Add an edge; both ends must exist."""
        if edge.etype not in EDGE_TYPES:
            raise ValueError(
                f"edge {edge.src}->{edge.dst}: type {edge.etype!r} not in {EDGE_TYPES}"
            )
        for end in (edge.src, edge.dst):
            if end not in self.nodes:
                raise KeyError(f"edge {edge.src}->{edge.dst} ({edge.etype}): no node {end!r}")
        self.edges.append(edge)
        self._out[edge.src].append(edge)
        self._in[edge.dst].append(edge)

    def out_edges(self, node_id: str) -> list[Edge]:
        """Edges leaving ``node_id``."""
        return self._out.get(node_id, [])

    def in_edges(self, node_id: str) -> list[Edge]:
        """Edges entering ``node_id``."""
        return self._in.get(node_id, [])

    def of_kind(self, kind: str) -> list[Node]:
        """Nodes of ``kind`` in time order."""
        return sorted((n for n in self.nodes.values() if n.kind == kind), key=lambda n: n.order)

    def of_order(self) -> list[Node]:
        """Every node in time order."""
        return sorted(self.nodes.values(), key=lambda n: n.order)

    def ancestors(self, targets: set[str], etypes: frozenset[str] = PROPAGATION) -> set[str]:
        """Every node with a path of ``etypes`` edges into ``targets`` (targets included)."""
        seen, stack = set(targets), list(targets)
        while stack:
            for e in self.in_edges(stack.pop()):
                if e.etype in etypes and e.src not in seen:
                    seen.add(e.src)
                    stack.append(e.src)
        return seen

    def descendants(self, sources: set[str], etypes: frozenset[str] = PROPAGATION) -> set[str]:
        """Every node reachable from ``sources`` along ``etypes`` edges (sources excluded)."""
        seen: set[str] = set()
        stack = list(sources)
        while stack:
            for e in self.out_edges(stack.pop()):
                if e.etype in etypes and e.dst not in seen and e.dst not in sources:
                    seen.add(e.dst)
                    stack.append(e.dst)
        return seen

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (nodes in time order)."""
        return {
            "nodes": [n.to_dict() for n in sorted(self.nodes.values(), key=lambda n: n.order)],
            "edges": [
                {"src": e.src, "dst": e.dst, "type": e.etype, "group": e.group} for e in self.edges
            ],
        }
