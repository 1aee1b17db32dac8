"""Plug-ins from other packages, found through entry points (docs/plugins.md).

A package adds systems, selectors, backbones or metrics by declaring entry points in these
groups (in its ``pyproject.toml``, ``[project.entry-points."chronobench.systems"]`` and so
on):

- ``chronobench.systems``: memory systems (:class:`chronobench.protocols.MemorySystem`);
- ``chronobench.selectors``: RQ1 selectors (:class:`chronobench.protocols.Selector`);
- ``chronobench.backbones``: backbones (:class:`chronobench.protocols.Backbone`);
- ``chronobench.metrics``: metrics (a probe scorer and how tables show its field:
  :func:`chronobench.metrics.catalog.metric_plugin`).

The entry point's name is the component's name (``system=<name>``); its value names a
:class:`Plugin` (the registration: target, leaderboard label and table order, options
model, required packages) or the component itself. Only the names are read when
chronobench starts; a plug-in's module is imported when its name is used, and its
target when a run builds it. A name that two sources register with different targets
is an error naming both (:class:`chronobench.registry.RegistryCollisionError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from chronobench.errors import ConfigError

__all__ = ["DOCS", "GROUPS", "Found", "Plugin", "PluginError", "discover"]

# config group -> entry-point group.
GROUPS = {
    "system": "chronobench.systems",
    "selector": "chronobench.selectors",
    "backbone": "chronobench.backbones",
    "dataset": "chronobench.datasets",
    "metric": "chronobench.metrics",
}
DOCS = "docs/plugins.md"


class PluginError(ConfigError):
    """An installed plug-in's entry point cannot be loaded, or names something else."""


@dataclass(frozen=True)
class Plugin:
    """What a plug-in's entry point names: one component and how to show it.

    ``target``: the component (a class or factory), or ``"module:attr"`` imported only
    when a run builds it. ``label``: its leaderboard row (backbones: column; default:
    the name, for backbones the model's). ``order``: its table position (the built-in
    systems sit at 10, 20, ... 110; built-in selectors at 10 ... 70; none: after them, by
    name). ``options``: a pydantic model (``extra="forbid"``) of its config options;
    without one the target's signature is checked. ``requires``: ``[(module, pip
    hint), ...]`` checked before a run starts. ``meta``: what its kind reads from its
    entry (a metric's section and direction: see
    :func:`chronobench.metrics.catalog.metric_plugin`).
    """

    target: str | Any
    label: str | None = None
    order: float | None = None
    options: type[BaseModel] | None = None
    requires: tuple[tuple[str, str], ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


def _entry_points(group: str) -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


@dataclass(frozen=True)
class Found:
    """An entry point found in a group, not loaded yet."""

    name: str
    value: str
    source: str
    loader: Callable[[], Any]

    def load(self) -> Plugin:
        """Import the entry point's value; a bare component becomes a :class:`Plugin`."""
        try:
            obj = self.loader()
        except Exception as exc:
            raise PluginError(
                f"{self.source}: cannot be loaded ({type(exc).__name__}: {exc}); reinstall "
                f"or uninstall that package (see {DOCS})"
            ) from exc
        return obj if isinstance(obj, Plugin) else Plugin(target=obj)


def _source(ep: Any, group: str) -> str:
    dist = getattr(ep, "dist", None)
    who = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
    return f"entry point '{ep.name} = {ep.value}' in group {group} of {who}"


def discover(group: str) -> list[Found]:
    """The entry points of ``group`` across installed packages (none is imported)."""
    return [Found(ep.name, ep.value, _source(ep, group), ep.load) for ep in _entry_points(group)]
