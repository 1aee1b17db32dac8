"""A task kind: how a cell of that kind is checked, resolved, built, run and shown.

A track is one folder, ``chronobench/tracks/<name>/``, whose ``__init__`` declares its
``TRACK``, a :class:`TaskKind`; each entry of :data:`~chronobench.runner.components.TASKS`
names one (a plug-in track: an entry point in the ``chronobench.tracks`` group);
:func:`~chronobench.runner.components.resolve_cell` looks it up once and every caller
(the runner, ``--dry-run``, the compose-every-config test) goes through it. Its parts are
``"module:attr"`` strings, imported only when used, so listing task kinds imports no track.

- ``run``: ``f(components) -> Path``, the cell runner (writes the run folder);
- ``params``: the pydantic model (``extra="forbid"``) of the kind's ``task.params``,
  holding their defaults (the one place they are written: config files carry deviations
  only); the cell's runner reads the validated instance, ``Components.params``;
- ``recorded``: the params a cell's spec records even at their default value. Published
  run ids hash exactly the keys the shipped configs always gave, so these are those keys
  (any other key, such as a debugging cut, is recorded only when it is given);
- ``check``: ``f(spec) -> None``, raises :class:`~chronobench.errors.ConfigError` for a
  dataset, system or option this kind would not read (before any cell runs; ``params``
  are validated first);
- ``build``: ``f(components, backbone: bool) -> list[str]``, builds every component a
  cell constructs, without loading data or model weights, and names what it built;
- ``resolve``: ``f(spec, entry, choices) -> Components``; the benchmark's resolves the
  dataset, retriever, reranker, selectors and system from their registries, the other
  tracks' (the default) only the backbone: they own their dataset and systems (``check``);
- ``board``: ``f(runs) -> (markdown, run ids it names)``, the kind's section of the
  leaderboard, handed the kind's published runs (none: its runs have no section);
- ``tables``: whether the kind's runs are rows of the leaderboard's main tables (the
  benchmark's: RQ1 selection, RQ2 RC-QA, RQ3 summaries);
- ``views``: ``f(build) -> list[Row]``, the kind's lines of the viewer's headline table
  (:mod:`chronobench.viewer.summary`), in the registry's order;
- ``record``: ``f(spec) -> dict``, the kind's own fields of the leaderboard's run
  record (:class:`~chronobench.leaderboard.runs.RunRecord`), read from a run's spec;
- ``plots``: ``f(build) -> list[str]``, the kind's plots (SVG markup) after the
  benchmark's on a build's section of the site, in the registry's order;
- ``details``: ``f(metrics) -> list[(title, block)]``, the kind's own blocks of its
  ``metrics.json`` that a run's page of the site tables (each block: metric -> statistic);
- ``subset``: what the viewer appends to a system's label on this kind's runs, for a
  kind whose runs score only part of the requests (their figures are not comparable with
  the same system's full-set ones, so the drill-down keeps them apart);
- ``cases``: what the viewer calls the data of a kind that builds its own cases rather
  than reading the benchmark's datasets (a build of only such runs is titled by it and
  listed after the benchmark's builds); None: the kind reads the benchmark's datasets.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronobench.options import model_defaults, parse_model_options, recorded_options

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
    params: str | type[BaseModel] | None = None
    recorded: tuple[str, ...] = ()
    board: str | Callable[..., tuple[str, Any]] | None = None
    tables: bool = False
    views: str | Callable[..., list[Any]] | None = None
    record: str | Callable[..., dict[str, Any]] | None = None
    plots: str | Callable[..., list[str]] | None = None
    details: str | Callable[..., list[tuple[str, dict[str, Any]]]] | None = None
    subset: str = ""
    cases: str | None = None

    def _part(self, part: str | Callable[..., Any]) -> Callable[..., Any]:
        return _load(part) if isinstance(part, str) else part

    def params_model(self) -> type[BaseModel] | None:
        """The kind's ``task.params`` model (None: a kind that declares none)."""
        return None if self.params is None else self._part(self.params)  # type: ignore[return-value]

    def check_spec(self, spec: Any, *, where: str = "the task config group") -> BaseModel | None:
        """Reject a spec this kind would not read: its ``task.params`` validated by the
        params model (returned; None without one), then the kind's own check."""
        model = self.params_model()
        params = None
        if model is not None:
            params = parse_model_options(model, spec.task.params, where=where, group="task.params")
        if self.check is not None:
            self._part(self.check)(spec)
        return params

    def recorded_params(self, params: BaseModel) -> dict[str, Any]:
        """What a spec records of validated ``params``: the given keys, coerced, and
        the :attr:`recorded` ones at their default when left out (a config that leaves a
        default out and one that restates it are the same run)."""
        given = params.model_dump(exclude_unset=True)
        return recorded_options(given, model_defaults(type(params)), self.recorded)

    def resolve_cell(
        self,
        spec: Any,
        entry: Any,
        choices: Mapping[str, str] | None = None,
        *,
        where: str = "the task config group",
    ) -> Any:
        """The cell's :class:`~chronobench.runner.components.Components`, every part
        checked (``entry``: this kind's registry entry, which the components keep), its
        spec's ``task.params`` normalised (:meth:`recorded_params`) and their validated
        model in ``Components.params``."""
        params = self.check_spec(spec, where=where)
        if params is None:
            return self._part(self.resolve)(spec, entry, choices)
        task = spec.task.model_copy(update={"params": self.recorded_params(params)})
        spec = spec.model_copy(update={"task": task})
        cell = self._part(self.resolve)(spec, entry, choices)
        return dataclasses.replace(cell, params=params)

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

    def board_section(self, runs: list[Any]) -> tuple[str, set[str]]:
        """The kind's leaderboard section from its published ``runs``: (markdown, the
        run ids it names); ``("", set())`` for a kind without one."""
        if self.board is None:
            return "", set()
        md, named = self._part(self.board)(runs)
        return md, set(named)

    def view_rows(self, build: Any) -> list[Any]:
        """The kind's lines of the viewer's headline table for one build."""
        return [] if self.views is None else list(self._part(self.views)(build))

    def record_fields(self, spec: Any) -> dict[str, Any]:
        """The kind's own fields of the leaderboard's record of a run with ``spec``."""
        return {} if self.record is None else dict(self._part(self.record)(spec))

    def view_details(self, metrics: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The kind's (title, block) sections of a run's page, from its metrics."""
        return [] if self.details is None else list(self._part(self.details)(metrics))

    def view_plots(self, build: Any) -> list[str]:
        """The kind's plots (SVG markup) for one build of the viewer's site."""
        return [] if self.plots is None else list(self._part(self.plots)(build))


def as_task_kind(target: Any) -> TaskKind:
    """A registered task target as a :class:`TaskKind` (a plain cell runner, as a plug-in
    may register, is a kind with nothing to check or build)."""
    return target if isinstance(target, TaskKind) else TaskKind(run=target)
