"""A task kind: how a cell of that kind is checked, resolved, built and run.

Each entry of :data:`~chronobench.runner.components.TASKS` is a :class:`TaskKind`;
:func:`~chronobench.runner.components.resolve_cell` looks it up once and every caller
(the runner, ``--dry-run``, the compose-every-config test) goes through it. Its parts are
``"module:attr"`` strings, imported only when used, so listing task kinds imports no track.

- ``run``: ``f(components) -> Path``, the cell runner (writes the run folder);
- ``check``: ``f(spec) -> None``, raises :class:`~chronobench.errors.ConfigError` for a
  dataset, system or option this kind would not read (before any cell runs);
- ``build``: ``f(components, backbone: bool) -> list[str]``, builds every component a
  cell constructs, without loading data or model weights, and names what it built;
- ``resolve``: ``f(spec, entry, choices) -> Components``; the benchmark's resolves the
  dataset, retriever, reranker, selectors and system from their registries, the other
  tracks' (the default) only the backbone: they own their dataset and systems (``check``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["TaskKind", "as_task_kind"]


def _load(target: str) -> Callable[..., Any]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class TaskKind:
    """One task kind (see the module docstring)."""

    run: str | Callable[..., Path]
    check: str | None = None
    build: str | None = None
    resolve: str = "chronobench.runner.components:resolve_track"

    def _part(self, part: str | Callable[..., Any]) -> Callable[..., Any]:
        return _load(part) if isinstance(part, str) else part

    def check_spec(self, spec: Any) -> None:
        """Reject a spec this kind would not read (nothing when it declares no check)."""
        if self.check is not None:
            self._part(self.check)(spec)

    def resolve_cell(self, spec: Any, entry: Any, choices: Mapping[str, str] | None = None) -> Any:
        """The cell's :class:`~chronobench.runner.components.Components`, every part
        checked (``entry``: this kind's registry entry, which the components keep)."""
        self.check_spec(spec)
        return self._part(self.resolve)(spec, entry, choices)

    def run_cell(self, cell: Any) -> Path:
        """Run one resolved cell; returns its run folder."""
        return self._part(self.run)(cell)

    def build_parts(self, cell: Any, *, backbone: bool = True) -> list[str]:
        """Build what a cell of this kind constructs (no data, no weights; the backbone
        only when ``backbone``) and return the names of what was built."""
        built = [getattr(self._part(self.run), "__name__", str(self.run))]
        if self.build is not None:
            built += self._part(self.build)(cell, backbone)
        return built


def as_task_kind(target: Any) -> TaskKind:
    """A registered task target as a :class:`TaskKind` (a plain cell runner, as a plug-in
    may register, is a kind with nothing to check or build)."""
    return target if isinstance(target, TaskKind) else TaskKind(run=target)
