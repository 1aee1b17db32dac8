"""Lazy ``"module:attr"`` registries, one per config group.

An entry is either an object (a class or function) or a ``"module:attr"`` string that is
imported only when the entry is resolved, so listing names or printing ``--help`` never
imports torch, vllm or transformers.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from chronobench.errors import MissingDependencyError, UnknownNameError

T = TypeVar("T")


class Registry:
    """Names of one config group (``system``, ``backbone``, ...) -> lazy targets.

    ``requires`` lists modules an entry needs at construction time; they are checked with
    :func:`importlib.util.find_spec` (no import) so a missing optional dependency fails in
    a second, before any work starts.
    """

    def __init__(self, group: str, entries: dict[str, str | Any] | None = None) -> None:
        self.group = group
        self._entries: dict[str, str | Any] = dict(entries or {})
        self._requires: dict[str, tuple[tuple[str, str], ...]] = {}

    def register(
        self,
        name: str,
        target: str | Any = None,
        *,
        requires: Iterable[tuple[str, str]] = (),
    ) -> Any:
        """Register ``target`` (an object or ``"module:attr"``) as ``name``.

        ``requires`` is ``[(module, pip hint), ...]``. Without ``target`` this returns a
        decorator that registers the decorated object. Re-registering replaces.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{self.group} registry: name must be a non-empty string, got {name!r}"
            )
        if target is None:

            def decorator(obj: T) -> T:
                self.register(name, obj, requires=requires)
                return obj

            return decorator
        if isinstance(target, str) and ":" not in target:
            raise ValueError(
                f"{self.group} registry: target {target!r} for {name!r} must look like "
                "'package.module:Class' (or :function)"
            )
        self._entries[name] = target
        self._requires[name] = tuple(requires)
        return target

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def target(self, name: str) -> str | Any:
        """The raw entry (a ``"module:attr"`` string or an object)."""
        self._known(name)
        return self._entries[name]

    def _known(self, name: str) -> None:
        if name not in self._entries:
            raise UnknownNameError(
                f"unknown {self.group} {name!r}; registered: {', '.join(self.names())} "
                f"(register one in the {self.group} registry: "
                "REGISTRY.register(name, 'module:attr'), see chronobench.runner.components)"
            )

    def check_available(self, name: str) -> None:
        """Raise :class:`MissingDependencyError` when a required module is not installed."""
        self._known(name)
        for module, hint in self._requires.get(name, ()):
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(
                    f"{self.group} {name!r} needs the {module!r} package, which is not "
                    f"installed: {hint}"
                )

    def resolve(self, name: str) -> Any:
        """Import and return the object registered as ``name``."""
        self.check_available(name)
        target = self._entries[name]
        if not isinstance(target, str):
            return target
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        try:
            return getattr(module, attr)
        except AttributeError:
            raise ImportError(
                f"{self.group} {name!r}: module {module_name} has no attribute {attr!r}"
            ) from None

    def create(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Resolve ``name`` and call it with the given arguments."""
        factory: Callable[..., Any] = self.resolve(name)
        return factory(*args, **kwargs)
