"""The import graph of chronomem/, chronobench/, data_builders/ and baselines/ points down
the layers and has no circle; chronomem (its own distribution) imports none of the others.

Every ``import`` counts wherever it is written (module level, function bodies,
``TYPE_CHECKING`` blocks): a lazy import is still a dependency. The lazy ``"module:attr"``
targets registries name count for the layer order too (not for circles: a registry
naming its implementations is how plug-ins are found).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = ("chronomem", "chronobench", "data_builders", "baselines")

_TRACKS_DIR = REPO_ROOT / "chronobench" / "tracks"
# A track's folder holds parts of two layers: its cell runner (and everything else it
# owns, such as the repair track's generators) sits with the runner; what reads finished
# runs (its board section, viewer section, audit) sits with the board, viewer and audits.
_TRACKS = ["chronobench.tracks"] + sorted(
    f"chronobench.tracks.{d.name}" for d in _TRACKS_DIR.iterdir() if (d / "__init__.py").exists()
)
_TRACK_PARTS = sorted(
    f"chronobench.tracks.{p.parent.name}.{p.stem}"
    for prefix in ("board", "viewer", "audit")
    for p in _TRACKS_DIR.glob(f"*/{prefix}*.py")
)

# Bottom up. A module belongs to the longest entry that is it or one of its packages;
# it may import its own layer and the layers below.
LAYERS: list[tuple[str, list[str]]] = [
    ("the ChronoMem store (its own distribution, installed without the harness)", ["chronomem"]),
    (
        "errors, paths, text utilities, the run spec and its hashing",
        [
            "chronobench",  # the package's __init__ (a version string)
            "chronobench.errors",
            "chronobench.paths",
            "chronobench.text",
            "chronobench.hashing",
            "chronobench.fileio",
            "chronobench.spec",  # the run spec and its hashing
            "chronobench.published_ids",  # what keeps published run ids as they were
            "chronobench.resolver_options",  # settling the resolver in a spec's options
            "chronobench.options",  # option checking the registry entries carry
        ],
    ),
    (
        "data (schema and I/O), metrics, results, registry, protocols",
        [
            "chronobench.data",
            "chronobench.metrics",
            "chronobench.results",
            "chronobench.registry",
            "chronobench.plugins",  # entry-point plug-ins feeding the registries
            "chronobench.protocols",
        ],
    ),
    (
        "backbones, systems, selectors, baselines",
        [
            "chronobench.backbones",
            "chronobench.systems",
            "chronobench.selectors",
            "baselines",
        ],
    ),
    (
        "data builders, runner, the tracks' cell runners",
        ["data_builders", "chronobench.runner", *_TRACKS],
    ),
    (
        "leaderboard, bench, viewer, audit, the tracks' board sections and audits",
        [
            "chronobench.leaderboard",
            "chronobench.bench",
            "chronobench.viewer",
            "chronobench.audit",
            *_TRACK_PARTS,
        ],
    ),
    ("commands and __main__", ["chronobench.commands", "chronobench.__main__"]),
]

# Known violations waiting for their fix (none today); listing one is a visible debt.
ALLOWED_UPWARD: set[tuple[str, str]] = set()
ALLOWED_MODULE_CYCLES: list[set[str]] = []
ALLOWED_PACKAGE_CYCLES: list[set[str]] = [
    # The board imports the small-LLM section by name (the other sections are registry
    # targets) and that section renders with the board's table helpers: the section
    # module, and the two of its parts that format cells with them (the sentences
    # comparing systems, the speed file). Its provenance lines use no board helper.
    {
        "chronobench.leaderboard",
        "chronobench.tracks.small_llm.board",
        "chronobench.tracks.small_llm.board_separation",
        "chronobench.tracks.small_llm.board_speed",
    },
]

_TARGET = re.compile(r"^((?:chronomem|chronobench|data_builders|baselines)(?:\.\w+)*):\w+$")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((REPO_ROOT / pkg).rglob("*.py")):
            if "build" in path.relative_to(REPO_ROOT).parts:  # a local wheel build's copy
                continue
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module ``name`` imports: itself, else the closest package that exists."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """``({imported module: line}, {registry target module: line})`` of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found: dict[str, int] = {}
    targets: dict[str, int] = {}

    def add(into: dict[str, int], name: str | None, line: int) -> None:
        if name and name != module:
            into.setdefault(name, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    add(found, _resolve(alias.name), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                add(found, full if full in MODULES else _resolve(source), node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _TARGET.match(node.value)
            if m:
                add(targets, _resolve(m.group(1)), node.lineno)
    return found, targets


GRAPH: dict[str, dict[str, int]] = {}
TARGETS: dict[str, dict[str, int]] = {}
for _m, _p in MODULES.items():
    GRAPH[_m], TARGETS[_m] = _imports(_m, _p)


def _unit(module: str) -> tuple[int, str] | None:
    """``(layer number, the LAYERS entry)`` a module belongs to."""
    best: tuple[int, str] | None = None
    for number, (_, entries) in enumerate(LAYERS, start=1):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and (
                best is None or len(entry) > len(best[1])
            ):
                best = (number, entry)
    return best


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.add(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _package_graph() -> dict[str, set[str]]:
    """LAYERS entry -> the entries of the same layer its modules import."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, deps in GRAPH.items():
        here = _unit(module)
        for dep in deps:
            there = _unit(dep)
            if here and there and here[0] == there[0] and here[1] != there[1]:
                graph[here[1]].add(there[1])
    return dict(graph)


def _own_room(module: str, dep: str) -> bool:
    """A track's declaration (``chronobench/tracks/<name>/__init__.py``) names the parts of
    its own folder, whatever their layer: a track is one folder. Only the parts it names
    lazily (its ``TRACK``'s targets) are exempt; an import still counts."""
    return (
        module.count(".") == 2
        and module.startswith("chronobench.tracks.")
        and (dep.startswith(module + "."))
    )


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if _unit(m) is None)
    assert not missing, f"modules with no layer (add them to LAYERS): {missing}"


def test_imports_point_down_the_layers():
    upward = []
    for module, deps in sorted(GRAPH.items()):
        here = _unit(module)
        for kind, edges in (("imports", deps), ("registers", TARGETS[module])):
            for dep, line in sorted(edges.items()):
                there = _unit(dep)
                if kind == "registers" and _own_room(module, dep):
                    continue
                if here and there and there[0] > here[0] and (module, dep) not in ALLOWED_UPWARD:
                    upward.append(
                        f"{MODULES[module].relative_to(REPO_ROOT)}:{line} (layer {here[0]}) "
                        f"{kind} {dep} (layer {there[0]}: {LAYERS[there[0] - 1][0]})"
                    )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_no_import_circle_between_modules():
    graph = {m: set(deps) for m, deps in GRAPH.items()}
    bad = [sorted(c) for c in _cycles(graph) if c not in ALLOWED_MODULE_CYCLES]
    assert not bad, f"import circles: {bad}"


def test_no_circle_between_packages_of_a_layer():
    """Within a layer, packages (LAYERS entries) use each other one way only (across
    layers the order test already rules circles out)."""
    bad = [sorted(c) for c in _cycles(_package_graph()) if c not in ALLOWED_PACKAGE_CYCLES]
    assert not bad, f"packages that import each other: {bad}"


def test_allowed_violations_are_still_needed():
    """An ALLOWED entry the code no longer needs must go (so the lists only shrink)."""
    for module, dep in ALLOWED_UPWARD:
        assert dep in GRAPH.get(module, {}), f"ALLOWED_UPWARD ({module}, {dep}) is stale"
    graph = {m: set(deps) for m, deps in GRAPH.items()}
    cycles = _cycles(graph)
    for allowed in ALLOWED_MODULE_CYCLES:
        assert allowed in cycles, (
            f"ALLOWED_MODULE_CYCLES {sorted(allowed)} is gone (or merged into a bigger circle)"
        )
    packages = _cycles(_package_graph())
    for allowed in ALLOWED_PACKAGE_CYCLES:
        assert allowed in packages, (
            f"ALLOWED_PACKAGE_CYCLES {sorted(allowed)} is gone (or merged into a bigger circle)"
        )


def test_bottom_layer_helpers_import_nothing_above_errors():
    """The shared helpers sit at the very bottom: they import no chronobench module but
    the errors."""
    for module in ("chronobench.text", "chronobench.hashing", "chronobench.fileio"):
        assert set(GRAPH[module]) <= {"chronobench.errors"}, (module, GRAPH[module])


def test_the_checker_sees_lazy_and_relative_imports():
    """The walk finds imports inside functions (data_builders.user_query_file loads the
    probes) and resolves ``from x import module`` to the module."""
    assert "chronobench.metrics.qa" in GRAPH["data_builders.pools"]
    assert "data_builders.user_query_file" in GRAPH["chronobench.runner.datasets"]
    assert "chronobench.tracks.repair" in TARGETS["chronobench.runner.components"]
    assert "chronobench.tracks.repair.run" in TARGETS["chronobench.tracks.repair"]


def test_chronomem_imports_nothing_of_the_harness():
    """``pip install chronomem`` has no chronobench, data_builders or baselines: no
    chronomem module may import one, even lazily, or name one as a registry target."""
    bad = sorted(
        f"{MODULES[m].relative_to(REPO_ROOT)}:{line} {dep}"
        for m in GRAPH
        if m == "chronomem" or m.startswith("chronomem.")
        for dep, line in {**GRAPH[m], **TARGETS[m]}.items()
        if not (dep == "chronomem" or dep.startswith("chronomem."))
    )
    assert not bad, "chronomem imports the harness:\n" + "\n".join(bad)
