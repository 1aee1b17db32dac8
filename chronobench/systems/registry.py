"""Name -> system class, imported lazily so listing systems imports nothing heavy.

Each system's config options are checked before it is built: against a typed options
model when one is registered (the built-ins: their constructors take ``**kwargs``, so a
signature cannot catch a mistyped key), otherwise against the class's constructor
signature (``**kwargs`` in a signature accepts nothing extra: name every option).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, PositiveInt

from chronobench.registry import Registry

SYSTEMS = Registry("system")


class NoOptions(BaseModel):
    """A system without options (the floors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BudgetOptions(NoOptions):
    """Options of systems that put memory in a prompt."""

    context_budget_tokens: PositiveInt = 2000
    summary_budget_tokens: PositiveInt = 6000


class RetrievalOptions(BudgetOptions):
    top_k_items: PositiveInt = 8


class ChronoMemOptions(RetrievalOptions):
    rollback_mode: Literal["truncate", "revert"] = "truncate"


# name -> options model (None: check the constructor signature).
_OPTIONS: dict[str, type[BaseModel] | None] = {}


def register_system(
    name: str,
    target: str | type,
    *,
    options: type[BaseModel] | None = None,
    requires: Iterable[tuple[str, str]] = (),
) -> None:
    """Register a system class (or a lazy ``"module:Class"`` path) under ``name``.

    ``options``: a pydantic model of the system's config options (``extra="forbid"``);
    without it, options are checked against the constructor's signature.
    ``requires``: ``[(module, pip hint), ...]`` checked (without importing) before the
    system is built, so a missing optional package fails in a second.
    """
    SYSTEMS.register(name, target, requires=requires)
    _OPTIONS[name] = options


register_system(
    "chronomem", "chronobench.systems.chronomem:ChronoMemSystem", options=ChronoMemOptions
)
register_system(
    "chronomem_oracle",
    "chronobench.systems.chronomem:ChronoMemOracleSystem",
    options=ChronoMemOptions,
)
register_system(
    "adk_chronomem", "chronobench.systems.adk:AdkChronoMemSystem", options=ChronoMemOptions
)
register_system("prompt_only", "baselines.prompt_only:PromptOnlySystem", options=BudgetOptions)
register_system("full_history", "baselines.full_history:FullHistorySystem", options=BudgetOptions)
register_system("rag_only", "baselines.rag_only:RagOnlySystem", options=RetrievalOptions)
register_system("no_memory", "baselines.floors:NoMemorySystem", options=NoOptions)
register_system("always_abstain", "baselines.floors:AlwaysAbstainSystem", options=NoOptions)
# Issue 9 floors: a constant answer (option `answer`, checked against the constructor) and
# the two content-free RQ3 outputs.
register_system("constant_answer", "baselines.floors:ConstantAnswerSystem")
register_system("floor_session_dates", "baselines.floors:SessionDatesFloor", options=NoOptions)
register_system("floor_generic_words", "baselines.floors:GenericWordsFloor", options=NoOptions)


def _register_peers() -> None:
    # Issue 16: the memory systems agent builders use (optional extras), one table in
    # chronobench.systems.peers; imports no peer package.
    from chronobench.systems.peers import register_peer_systems

    register_peer_systems(register_system)


_register_peers()


def system_names() -> list[str]:
    """Registered system names."""
    return SYSTEMS.names()


def system_options_model(name: str) -> type[BaseModel] | None:
    """The registered options model of ``name`` (None: signature-checked)."""
    SYSTEMS.target(name)  # raises a clear error for unknown names
    return _OPTIONS.get(name)


def check_system_options(name: str, options: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Validate ``options`` for system ``name``; returns them with types coerced.

    Raises :class:`chronobench.errors.ConfigError` naming the key and ``where``.
    """
    from chronobench.runner.options import check_call_options, check_model_options

    model = system_options_model(name)
    if model is not None:
        return check_model_options(model, options, where=where, group="system")
    return check_call_options(SYSTEMS.resolve(name), options, where=where, skip=1, group="system")


def create_system(name: str, ctx: Any, **kwargs: Any) -> Any:
    """Instantiate the system registered as ``name`` with a :class:`SystemContext`."""
    return SYSTEMS.create(name, ctx, **kwargs)
