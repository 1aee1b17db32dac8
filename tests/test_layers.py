"""The package's imports point down the layers and form no circle.

Every import in every module is read (function-level imports too); each module belongs to
a package (``chronobench.<sub>``, ``data_builders``, ``baselines``) and each package to a
layer, bottom up. An import may point to the same layer or below, never above, and the
package graph has no circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

ROOTS = ("chronobench", "data_builders", "baselines")

# Bottom up. Same-layer imports are allowed (without a circle).
LAYERS: tuple[tuple[str, ...], ...] = (
    # (1) errors, paths, sqlite helpers, the run spec and its hashing, option checking
    (
        "chronobench",
        "chronobench.errors",
        "chronobench.paths",
        "chronobench.sqlite_retry",
        "chronobench.spec",
        "chronobench.options",
    ),
    # (2) memory, data (schema and I/O), metrics, results, registry (and its plug-ins),
    # protocols
    (
        "chronobench.memory",
        "chronobench.data",
        "chronobench.metrics",
        "chronobench.results",
        "chronobench.registry",
        "chronobench.plugins",
        "chronobench.protocols",
    ),
    # (3) backbones, integrations, systems, selectors, baselines
    (
        "chronobench.backbones",
        "chronobench.integrations",
        "chronobench.systems",
        "chronobench.selectors",
        "baselines",
    ),
    # (4) data builders, the repair track, the runner
    ("data_builders", "chronobench.repair", "chronobench.runner"),
    # (5) leaderboard, benchmarks
    ("chronobench.leaderboard", "chronobench.bench"),
    # (6) the command line
    ("chronobench.commands", "chronobench.__main__"),
)

# Package edges another open item of issue 14 removes (data/ holds the data model only;
# the repair case builder moves into chronobench/repair). Each must still exist: delete
# it here when its item lands.
PENDING = {
    ("chronobench.data", "chronobench.metrics"),
    ("chronobench.repair", "data_builders"),
    ("data_builders", "chronobench.repair"),
    ("data_builders", "chronobench.runner"),
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "chronobench":
        return ".".join(parts[:2])
    return parts[0]


def _imports(path: Path) -> set[str]:
    module = _module(path)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                out.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                out.add(node.module)
    return {m for m in out if m.split(".")[0] in ROOTS}


def _edges() -> set[tuple[str, str]]:
    edges = set()
    for root in ROOTS:
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            a = _package(_module(path))
            edges |= {(a, _package(m)) for m in _imports(path) if _package(m) != a}
    return edges


def _layer(package: str) -> int:
    for i, names in enumerate(LAYERS):
        if package in names:
            return i
    raise AssertionError(f"package {package} is in no layer: add it to LAYERS in {__file__}")


def test_imports_point_down_the_layers() -> None:
    up = sorted(
        f"{a} (layer {_layer(a) + 1}) imports {b} (layer {_layer(b) + 1})"
        for a, b in _edges() - PENDING
        if _layer(b) > _layer(a)
    )
    assert not up, "imports up the layers:\n" + "\n".join(up)


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in _edges() - PENDING:
        graph.setdefault(a, set()).add(b)
    seen: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            raise AssertionError("import circle: " + " -> ".join([*path, node]))
        if node in seen:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, [*path, node])
        seen.add(node)

    for node in sorted(graph):
        visit(node, [])


def test_pending_edges_still_exist() -> None:
    """An allowance for an edge that is gone must go too."""
    assert _edges() >= PENDING, f"remove from PENDING: {sorted(PENDING - _edges())}"
