"""No module of chronobench/ or chronomem/ reaches for another module's private names.

A leading underscore says "only this module relies on it": renaming it must not break a
module elsewhere. The walk counts ``from m import _name`` and ``m._name`` on an imported
module ``m`` (wherever written, function bodies included), and ``getattr(m, "_name")``,
which a rename would turn into a silent default.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = ("chronobench", "chronomem")


def _module_name(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_module(dotted: str, root: Path) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _offences(path: Path, root: Path = REPO_ROOT) -> list[str]:
    here = _module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(root)
    modules: dict[str, str] = {}  # local name -> the chronobench/chronomem module it binds
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if path.name == "__init__.py" else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if _private(alias.name):
                    out.append(f"{where}:{node.lineno} from {source} import {alias.name}")
                elif _is_module(f"{source}.{alias.name}", root):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ):
            out.append(f"{where}:{node.lineno} {modules[node.value.id]}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in modules
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            out.append(f"{where}:{node.lineno} getattr({modules[node.args[0].id]}, ...)")
    return out


def test_no_private_name_is_imported_across_modules():
    found = [
        offence
        for pkg in PACKAGES
        for path in sorted((REPO_ROOT / pkg).rglob("*.py"))
        if "build" not in path.relative_to(REPO_ROOT).parts  # a local wheel build's copy
        for offence in _offences(path)
    ]
    assert not found, "private names used outside their module:\n" + "\n".join(found)


def test_the_walk_sees_each_form(tmp_path):
    """The three forms it looks for are found (so an empty answer means none, not blind)."""
    pkg = tmp_path / "chronobench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("_x = 1\n")
    (pkg / "b.py").write_text(
        "from chronobench.a import _x\n"
        "from chronobench import a\n"
        "def f():\n    return a._x, getattr(a, '_x', None)\n"
    )
    found = _offences(pkg / "b.py", tmp_path)
    assert len(found) == 3, found
