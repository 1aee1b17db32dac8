"""Checking a component's config options before it is built.

Two ways: a typed pydantic model (``extra="forbid"``), or the callable's own signature
(names and annotated types). Either way a mistyped or unknown key is a
:class:`~chronobench.errors.ConfigError` naming the group, the key and where it was set.
A registry entry (:class:`chronobench.registry.Entry`) carries its options model, or
none (then its target's signature is checked): :meth:`~chronobench.registry.Entry.check_options`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from chronobench.errors import ConfigError, valid_keys_hint

_UNKNOWN = "unknown option: nothing reads it"


def _errors(errors: list[Any], *, group: str, where: str, valid: Sequence[str] = ()) -> ConfigError:
    """One message for a validation's errors; an unknown key lists the ``valid`` ones."""
    lines = []
    for err in errors:
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            hint = valid_keys_hint(key, valid, of=group)
            why = f"{_UNKNOWN}; {hint}" if hint else f"{_UNKNOWN} (remove it)"
        else:
            why = f"{err['msg']} (got {err.get('input')!r})"
        lines.append(f"config key '{group}.{key}': {why} [{where}]")
    return ConfigError("; ".join(lines))


def parse_model_options(
    model: type[BaseModel], options: Mapping[str, Any], *, where: str, group: str
) -> BaseModel:
    """``options`` validated into ``model`` (its defaults filled in)."""
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        raise _errors(
            exc.errors(), group=group, where=where, valid=list(model.model_fields)
        ) from None


def model_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The fields of ``model`` that have a default, with it."""
    return {
        k: f.get_default(call_default_factory=True)
        for k, f in model.model_fields.items()
        if not f.is_required()
    }


def recorded_options(
    given: Mapping[str, Any], defaults: Mapping[str, Any], recorded: Iterable[str]
) -> dict[str, Any]:
    """What a run's spec records of a component's options: the ``given`` keys, plus each
    ``recorded`` key left out, at its default. ``recorded`` names the keys the shipped
    configs always stated, which published run ids hash; any other key is recorded only
    when given. So a config that leaves a default out and one that restates it are the
    same run (datasets, backbones and task kinds carry such a list)."""
    filled = {k: defaults[k] for k in recorded if k not in given and k in defaults}
    return {**filled, **given}


def whole_options(
    target: Any,
    model: type[BaseModel] | None,
    options: Mapping[str, Any],
    *,
    skip: int,
    where: str,
    group: str,
) -> BaseModel | None:
    """``options`` validated into the model ``target`` takes whole, or None when it takes
    them as keywords. A target takes them whole when its parameter after the first
    ``skip`` is ``options`` annotated with a pydantic model (the built-in systems:
    ``cls(ctx, options: ChronoMemOptions)``); they are validated with the registered
    ``model``, else with that annotation (a subclass of a built-in needs no model of its
    own). The model then holds every default, and a constructor restates none."""
    target_func = target.__init__ if inspect.isclass(target) else target
    params = list(inspect.signature(target).parameters.values())
    if len(params) <= skip or params[skip].name != "options":
        return None
    try:
        hint = typing.get_type_hints(target_func).get("options")
    except Exception:  # unresolvable annotations: not a model it takes whole
        return None
    if not (inspect.isclass(hint) and issubclass(hint, BaseModel)):
        return None
    return parse_model_options(model or hint, options, where=where, group=group)


def check_model_options(
    model: type[BaseModel], options: Mapping[str, Any], *, where: str, group: str
) -> dict[str, Any]:
    """Validate ``options`` with ``model``; returns the given keys, coerced."""
    parsed = parse_model_options(model, options, where=where, group=group)
    return parsed.model_dump(exclude_unset=True)


def signature_model(func: Callable[..., Any], *, skip: int = 0) -> type[BaseModel]:
    """A pydantic model of ``func``'s keyword-usable parameters (after the first ``skip``
    positional ones); ``**kwargs`` is ignored, so only named parameters are accepted."""
    target = func.__init__ if inspect.isclass(func) else func  # type: ignore[misc]
    sig = inspect.signature(func)
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable annotations: check names only
        hints = {}
    fields: dict[str, Any] = {}
    params = list(sig.parameters.values())[skip:]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            continue
        ann = hints.get(p.name, Any)
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (ann, default)
    name = getattr(func, "__name__", "Options") + "Options"
    return create_model(  # type: ignore[call-overload, no-any-return]
        name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields
    )


def check_call_options(
    func: Callable[..., Any],
    options: Mapping[str, Any],
    *,
    where: str,
    group: str,
    skip: int = 0,
    provided: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Validate ``options`` against ``func``'s signature. ``provided`` names parameters
    the harness passes itself (their absence from ``options`` is fine)."""
    model = signature_model(func, skip=skip)
    values = dict(options)
    # Required parameters the harness fills in are not the user's to give.
    for name in provided:
        if name in model.model_fields and name not in values:
            values[name] = None
    try:
        model.model_validate(values)
    except ValidationError as exc:
        real = [e for e in exc.errors() if not (e["loc"] and e["loc"][0] in provided)]
        if real:
            valid = [k for k in model.model_fields if k not in provided]
            raise _errors(real, group=group, where=where, valid=valid) from None
    return dict(options)
