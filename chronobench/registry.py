"""Lazy registries, one per config group, whose entries carry everything about a component.

An :class:`Entry` holds the target (an object, or a ``"module:attr"`` string imported
only when the entry is resolved, so listing names or printing ``--help`` never imports
torch, vllm or transformers), the optional packages it needs, its options model (or
none: its signature is checked), the row label and table order the leaderboard uses,
and where it was registered. There is no side table: what a table, an option check or
an error message needs about a component is on its entry.

A name registered twice with different targets is an error naming both sources.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from chronobench.errors import ConfigError, MissingDependencyError, UnknownNameError
from chronobench.options import check_call_options, check_model_options

T = TypeVar("T")

BUILTIN = "chronobench (built in)"

# Modules that register on a caller's behalf: a registration's source is the first
# caller outside them.
_WRAPPERS = {
    "chronobench.registry",
    "chronobench.systems.registry",
    "chronobench.backbones.registry",
    "chronobench.selectors",
}


class RegistryCollisionError(ConfigError):
    """Two registrations claim one name with different targets."""


def _describe(target: Any) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", "?")
    return f"{module}:{getattr(target, '__qualname__', repr(target))}"


def _caller() -> str:
    """Who is registering: the built-ins (any chronobench module), else the calling module."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in _WRAPPERS:
        frame = frame.f_back  # type: ignore[assignment]
    name = str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"
    if name.split(".")[0] in ("chronobench", "baselines", "data_builders"):
        return BUILTIN
    return f"a register call in {name}"


@dataclass(frozen=True)
class Entry:
    """One registered component of a config group.

    ``options``: a pydantic model (``extra="forbid"``) of its config options; None
    checks them against the target's signature instead (after the first ``skip``
    positional parameters, which the harness passes itself). ``label`` and ``order``
    place it in leaderboard tables (no order: after the ordered entries, by name).
    ``source`` says who registered it (the built-ins, a call in some module, or an
    installed plug-in), for error messages.
    """

    group: str
    name: str
    target: str | Any
    requires: tuple[tuple[str, str], ...] = ()
    options: type[BaseModel] | None = None
    label: str | None = None
    order: float | None = None
    source: str = BUILTIN
    skip: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def row_label(self) -> str:
        """The label of its leaderboard row (its name when it has none)."""
        return self.label or self.name

    def sort_key(self) -> tuple[bool, float, str]:
        """Table order: entries with an ``order`` first, by order; the rest by name."""
        return (self.order is None, self.order if self.order is not None else 0.0, self.name)

    def describe(self) -> str:
        """``module:attr`` of the target and who registered it."""
        return f"{_describe(self.target)} (from {self.source})"

    def missing_modules(self) -> list[str]:
        """The required modules that are not installed (found with
        :func:`importlib.util.find_spec`: nothing is imported)."""
        out = []
        for module, _ in self.requires:
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:  # a dotted name whose parent is missing
                found = False
            if not found:
                out.append(module)
        return out

    def check_available(self) -> None:
        """Raise :class:`MissingDependencyError` when a required module is not installed."""
        missing = self.missing_modules()
        if missing:
            hint = dict(self.requires)[missing[0]]
            raise MissingDependencyError(
                f"{self.group} {self.name!r} needs the {missing[0]!r} package, which is not "
                f"installed: {hint}"
            )

    def load(self) -> Any:
        """Import and return the target (no availability check: see :meth:`check_available`)."""
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        try:
            return getattr(module, attr)
        except AttributeError:
            raise ImportError(
                f"{self.group} {self.name!r}: module {module_name} has no attribute {attr!r} "
                f"(registered by {self.source})"
            ) from None

    def check_options(
        self, options: Mapping[str, Any], *, where: str, provided: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Validate config ``options``: against the options model (returns the given keys,
        coerced) or the target's signature (returns them as given; imports the target's
        module, which never imports a heavy dependency at module level). Raises
        :class:`ConfigError` naming the key and ``where``."""
        if self.options is not None:
            return check_model_options(self.options, options, where=where, group=self.group)
        return check_call_options(
            self.load(), options, where=where, group=self.group, skip=self.skip, provided=provided
        )


class Registry:
    """Names of one config group (``system``, ``backbone``, ...) -> :class:`Entry`.

    ``hint`` ends the "unknown name" error: how to add one. ``entry_points``: the
    entry-point group whose plug-ins (:mod:`chronobench.plugins`) join this registry;
    they are discovered on the first lookup (names only) and loaded when used. ``skip``:
    the leading positional parameters the harness passes to every target (a system's
    context), which its signature check skips.
    """

    def __init__(
        self,
        group: str,
        entries: dict[str, str | Any] | None = None,
        *,
        hint: str = "",
        entry_points: str | None = None,
        skip: int = 0,
    ) -> None:
        self.group = group
        self.entry_points = entry_points
        self.skip = skip
        self.hint = hint or (
            f"register one with {group.upper()}S.register(name, 'module:attr'), as the "
            "built-ins in chronobench.runner.components are"
        )
        self._entries: dict[str, Entry] = {}
        self._found: dict[str, Any] = {}  # name -> chronobench.plugins.Found, not loaded
        self._discovered = entry_points is None
        self._collision: str | None = None
        for name, target in (entries or {}).items():
            self.register(name, target)

    def register(
        self,
        name: str,
        target: str | Any = None,
        *,
        requires: Iterable[tuple[str, str]] = (),
        options: type[BaseModel] | None = None,
        label: str | None = None,
        order: float | None = None,
        skip: int | None = None,
        source: str | None = None,
        replace: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> Any:
        """Register ``target`` (an object or ``"module:attr"``) as ``name``.

        Without ``target`` this returns a decorator that registers the decorated object.
        Registering a name again with the same target updates its entry; with another
        target it raises :class:`RegistryCollisionError` naming both sources, unless
        ``replace``. ``meta``: flags a group reads from its entries (e.g. a system's
        ``oracle``).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{self.group} registry: name must be a non-empty string, got {name!r}"
            )
        kwargs = {
            "requires": requires,
            "options": options,
            "label": label,
            "order": order,
            "meta": meta,
        }
        if target is None:
            src = source or _caller()

            def decorator(obj: T) -> T:
                self.register(name, obj, skip=skip, source=src, replace=replace, **kwargs)
                return obj

            return decorator
        entry = self._make(
            name,
            target,
            source=source or _caller(),
            skip=skip,
            **kwargs,  # type: ignore[arg-type]
        )
        self._add(entry, replace=replace)
        return target

    def _make(
        self,
        name: str,
        target: str | Any,
        *,
        source: str,
        skip: int | None = None,
        requires: Iterable[tuple[str, str]] = (),
        options: type[BaseModel] | None = None,
        label: str | None = None,
        order: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Entry:
        if isinstance(target, str) and ":" not in target:
            raise ValueError(
                f"{self.group} registry: target {target!r} for {name!r} (from {source}) must "
                "look like 'package.module:Class' (or :function)"
            )
        return Entry(
            group=self.group,
            name=name,
            target=target,
            requires=tuple(requires),
            options=options,
            label=label,
            order=order,
            source=source,
            skip=self.skip if skip is None else skip,
            meta=dict(meta or {}),
        )

    def _add(self, entry: Entry, *, replace: bool = False) -> None:
        old = self._entries.get(entry.name)
        if old is not None and not replace and _describe(old.target) != _describe(entry.target):
            raise RegistryCollisionError(_collision(self.group, entry.name, old, entry))
        plugin = self._found.get(entry.name)
        if plugin is not None and not replace and plugin.value != _describe(entry.target):
            raise RegistryCollisionError(_collision(self.group, entry.name, plugin, entry))
        self._found.pop(entry.name, None)
        self._entries[entry.name] = entry

    # ---- plug-ins ----------------------------------------------------------------------
    def _discover(self) -> None:
        """Find this group's entry points (once); a name claimed twice is an error."""
        if not self._discovered:
            self._discovered = True
            from chronobench.plugins import discover

            for found in discover(str(self.entry_points)):
                other = self._found.get(found.name) or self._entries.get(found.name)
                if other is None:
                    self._found[found.name] = found
                    continue
                same = getattr(other, "value", None) or _describe(getattr(other, "target", ""))
                if same != found.value and self._collision is None:
                    self._collision = _collision(self.group, found.name, other, found)
        if self._collision is not None:
            raise RegistryCollisionError(self._collision)

    def _load(self, name: str) -> Entry | None:
        """The entry of ``name``, loading its plug-in on first use."""
        self._discover()
        entry = self._entries.get(name)
        found = self._found.get(name) if entry is None else None
        if found is None:
            return entry
        from chronobench.plugins import PluginError

        plugin = found.load()
        try:
            entry = self._make(
                name,
                plugin.target,
                source=found.source,
                requires=plugin.requires,
                options=plugin.options,
                label=plugin.label,
                order=plugin.order,
                meta=plugin.meta,
            )
        except ValueError as exc:
            raise PluginError(str(exc)) from None
        self._found.pop(name)
        self._entries[name] = entry
        return entry

    # ---- lookup ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Registered names (plug-ins included, none imported), sorted."""
        self._discover()
        return sorted({*self._entries, *self._found})

    def entries(self) -> list[Entry]:
        """Every entry (plug-ins loaded), in table order (:meth:`Entry.sort_key`)."""
        return sorted((self.entry(n) for n in self.names()), key=Entry.sort_key)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries or name in self._found

    def entry(self, name: str) -> Entry:
        """The entry of ``name``; :class:`UnknownNameError` (listing the names) if none."""
        found = self._load(name)
        if found is None:
            how = f" ({self.hint})"
            if self.entry_points:
                from chronobench.plugins import DOCS

                how = (
                    f"; a plug-in adds one under the entry-point group {self.entry_points!r}, "
                    f"see {DOCS} ({self.hint})"
                )
            raise UnknownNameError(
                f"unknown {self.group} {name!r}; registered: {', '.join(self.names())}{how}"
            )
        return found

    def target(self, name: str) -> str | Any:
        """The raw target (a ``"module:attr"`` string or an object)."""
        return self.entry(name).target

    def check_available(self, name: str) -> None:
        """Raise :class:`MissingDependencyError` when a required module is not installed."""
        self.entry(name).check_available()

    def resolve(self, name: str) -> Any:
        """Check availability, import and return the object registered as ``name``."""
        entry = self.entry(name)
        entry.check_available()
        return entry.load()

    def create(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Resolve ``name`` and call it with the given arguments."""
        factory: Callable[..., Any] = self.resolve(name)
        return factory(*args, **kwargs)

    # ---- what tables need --------------------------------------------------------------
    def label(self, name: str) -> str:
        """Row label of ``name`` (the name itself when it is not registered here, e.g. a
        published run of a plug-in that is not installed)."""
        found = self._load(name)
        return found.row_label if found is not None else name

    def sort_key(self, name: str) -> tuple[bool, float, str]:
        """Table position of ``name`` (unregistered names sort with the unordered ones)."""
        found = self._load(name)
        return found.sort_key() if found is not None else (True, 0.0, name)

    def ordered(self, names: Iterable[str]) -> list[str]:
        """``names`` in table order."""
        return sorted(set(names), key=self.sort_key)


def _collision(group: str, name: str, first: Any, second: Any) -> str:
    def who(x: Any) -> str:
        return x.describe() if isinstance(x, Entry) else str(x.source)

    return (
        f"{group} {name!r} is registered twice: by {who(first)} and by {who(second)}; "
        "rename one of them (or uninstall the plug-in you do not want)"
    )
