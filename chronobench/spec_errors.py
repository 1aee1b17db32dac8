"""Config validation errors as one line per bad key, naming the config file it came from
and, for an unknown key, the keys that are valid there (split from :mod:`chronobench.spec`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from chronobench.errors import ConfigError, valid_keys_hint


def _origin(loc: tuple[Any, ...], choices: Mapping[str, str] | None) -> str:
    group = str(loc[0]) if loc else ""
    if choices and group in choices and choices[group]:
        return f"configs/{group}/{choices[group]}.yaml, or an override of {group}.*"
    if group:
        return f"configs/config.yaml (or an experiment / override setting {group})"
    return "configs/config.yaml"


def _fields_at(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The declared keys of the spec node holding ``loc``'s last key ([] when unknown)."""
    model: Any = root
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if isinstance(model, type) else None
        model = getattr(field, "annotation", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return list(model.model_fields)


def _explain(root: type[BaseModel], err: dict[str, Any]) -> str:
    if err["type"] == "extra_forbidden":
        loc = tuple(err["loc"])
        of = ".".join(str(p) for p in loc[:-1]) or "the config"
        hint = valid_keys_hint(str(loc[-1]), _fields_at(root, loc), of=of)
        return f"unknown key: nothing reads it; {hint}" if hint else "unknown key (remove it)"
    if err["type"] == "missing":
        return "required key is missing"
    return f"{err['msg']} (got {err.get('input')!r})"


def config_error(
    exc: ValidationError, root: type[BaseModel], choices: Mapping[str, str] | None
) -> ConfigError:
    """One :class:`ConfigError` for every error of validating a config into ``root``."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        lines.append(f"config key {key!r}: {_explain(root, err)} [{_origin(err['loc'], choices)}]")
    return ConfigError("; ".join(lines))
