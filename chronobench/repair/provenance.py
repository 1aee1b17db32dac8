"""Provenance tables in ChronoMem's SQLite file, written in the commit's transaction.

Two tables sit next to the store's own: ``prov_nodes`` and ``prov_edges``, keyed by
scope and by the version whose commit wrote them. A :class:`Recorder` collects the
nodes and edges of what the agent does; :func:`commit_with_provenance` hands them to
``ChronoMem.commit(on_commit=...)``, so a memory write and the provenance explaining it
land atomically (both or neither). Steps that write no memory (backbone and tool calls
of the task trace) wait in the recorder and ride along with the next commit.

Rows written by commits that a truncate rollback later removed are ignored on load
(their version is gone), so the graph always describes the current history.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from chronobench.repair.graph import Edge, Node, ProvGraph

_DDL = (
    "CREATE TABLE IF NOT EXISTS prov_nodes (scope_id INTEGER NOT NULL, version_id INTEGER "
    "NOT NULL, node_id TEXT NOT NULL, kind TEXT NOT NULL, ord INTEGER NOT NULL, attrs TEXT "
    "NOT NULL, PRIMARY KEY (scope_id, node_id))",
    "CREATE TABLE IF NOT EXISTS prov_edges (scope_id INTEGER NOT NULL, version_id INTEGER "
    "NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, etype TEXT NOT NULL, grp TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS prov_edges_scope ON prov_edges (scope_id, version_id)",
)


def ensure_tables(conn: sqlite3.Connection) -> None:
    """Create the provenance tables if missing (idempotent; safe inside a transaction)."""
    for stmt in _DDL:
        conn.execute(stmt)


class Recorder:
    """Pending provenance for one (app, user) scope; ``order`` continues from ``start``."""

    def __init__(self, start: int = 0) -> None:
        self.order = int(start)
        self._nodes: dict[str, Node] = {}
        self._edges: list[Edge] = []
        self.known: set[str] = set()  # node ids already written or pending

    def node(self, node_id: str, kind: str, **attrs: Any) -> str:
        """Queue a node (time-ordered by call order); returns its id."""
        self._nodes[node_id] = Node(node_id, kind, self.order, dict(attrs))
        self.order += 1
        self.known.add(node_id)
        return node_id

    def set_attrs(self, node_id: str, **attrs: Any) -> None:
        """Add fields to a node that waits for the next commit."""
        n = self._nodes[node_id]
        self._nodes[node_id] = Node(n.node_id, n.kind, n.order, {**n.attrs, **attrs})

    def edge(self, src: str, dst: str, etype: str, group: str = "") -> None:
        """Queue an edge between two recorded nodes."""
        for end in (src, dst):
            if end not in self.known:
                raise KeyError(f"provenance edge {src}->{dst} ({etype}): node {end!r} unrecorded")
        self._edges.append(Edge(src, dst, etype, group))

    @property
    def pending(self) -> int:
        """How many rows wait for the next commit."""
        return len(self._nodes) + len(self._edges)

    def write(self, conn: sqlite3.Connection, scope_id: int, version_id: int) -> None:
        """Write the pending rows on ``conn`` (the ``on_commit`` hook) and clear them.

        Runs inside the caller's transaction; a failure propagates, so the commit is
        rolled back with it."""
        ensure_tables(conn)
        conn.executemany(
            "INSERT OR REPLACE INTO prov_nodes (scope_id, version_id, node_id, kind, ord, attrs) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (scope_id, version_id, n.node_id, n.kind, n.order, json.dumps(n.attrs))
                for n in self._nodes.values()
            ],
        )
        conn.executemany(
            "INSERT INTO prov_edges (scope_id, version_id, src, dst, etype, grp) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(scope_id, version_id, e.src, e.dst, e.etype, e.group) for e in self._edges],
        )
        self._nodes.clear()
        self._edges.clear()

    @classmethod
    def resume(cls, mem: Any, app: str, user: str) -> Recorder:
        """A recorder that continues the scope's stored graph (order and known ids)."""
        graph = load_graph(mem, app, user)
        rec = cls(start=1 + max((n.order for n in graph.nodes.values()), default=-1))
        rec.known = set(graph.nodes)
        return rec


def commit_with_provenance(
    mem: Any,
    app: str,
    user: str,
    ops: Sequence[Mapping[str, Any]],
    recorder: Recorder,
    *,
    source: str,
    reason: str,
    labels: Mapping[str, Any] | None = None,
) -> int:
    """Commit ``ops`` to ChronoMem and the recorder's pending provenance in one
    transaction; returns the new version id."""
    return mem.commit(
        app, user, list(ops), source=source, reason=reason, labels=labels,
        on_commit=recorder.write,
    )  # fmt: skip


def load_graph(mem: Any, app: str, user: str) -> ProvGraph:
    """The scope's provenance graph on its current history, with every memory node's
    ``active`` flag set from S(HEAD) (the record's text is what its item holds now)."""
    graph = ProvGraph()
    row = mem.conn.execute("SELECT scope_id FROM scopes WHERE app = ? AND user = ?", (app, user))
    got = row.fetchone()
    if got is None:
        return graph
    sid = int(got[0])
    ensure_tables(mem.conn)
    live = "(version_id IN (SELECT version_id FROM versions WHERE scope_id = ?))"
    nodes = mem.conn.execute(
        f"SELECT node_id, kind, ord, attrs, version_id FROM prov_nodes WHERE scope_id = ? AND {live} "
        "ORDER BY ord",
        (sid, sid),
    ).fetchall()
    head = mem.snapshot(app, user)
    for node_id, kind, order, attrs, vid in nodes:
        data = json.loads(attrs)
        if kind == "memory":
            data["active"] = head.get(data.get("item")) == data.get("text")
            data["version"] = int(vid)  # the commit that wrote the record
        graph.add_node(Node(node_id, kind, int(order), data))
    edges = mem.conn.execute(
        f"SELECT src, dst, etype, grp FROM prov_edges WHERE scope_id = ? AND {live} ORDER BY rowid",
        (sid, sid),
    ).fetchall()
    for src, dst, etype, grp in edges:
        if src in graph.nodes and dst in graph.nodes:
            graph.add_edge(Edge(src, dst, etype, grp))
    return graph
