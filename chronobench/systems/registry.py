"""Name -> system class, imported lazily so listing systems imports nothing heavy.

Each registration carries the system's options model, its leaderboard row label and
its table order (:class:`chronobench.registry.Entry`). Options are checked before the
system is built: against the typed options model when one is registered (every built-in:
the model holds each option's one default, and the class is built as
``cls(ctx, options)`` with the validated instance), otherwise against the class's
constructor signature after its first parameter, the
:class:`~chronobench.systems.base.SystemContext`, and passed as keywords (a plug-in's
choice; ``**kwargs`` in a signature accepts nothing extra: name every option).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from chronobench.registry import Registry
from chronomem.defaults import RESOLVER_MAX_CHARS, RESOLVER_MIN_CHARS, RESOLVER_TOP_K

SYSTEMS = Registry(
    "system",
    hint="in-process: chronobench.systems.register_system(name, 'module:Class', label=..., "
    "order=...)",
    entry_points="chronobench.systems",
    skip=1,  # the SystemContext
)


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


class ChronoMemResolverOptions(ChronoMemOptions):
    """ChronoMem's own options: the restoring reader's, plus the backbone request resolver
    (``auto`` is decided from the backbone when the spec is built: chronobench.spec)."""

    resolver: Literal["none", "backbone", "auto"] = "none"
    resolver_top_k: PositiveInt = RESOLVER_TOP_K
    resolver_max_chars: int = Field(RESOLVER_MAX_CHARS, ge=RESOLVER_MIN_CHARS)


class LeadingWordsOptions(NoOptions):
    """The verbatim-text RQ3 floors: how many leading words make the "summary"."""

    n_words: PositiveInt = 150


class ConstantAnswerOptions(NoOptions):
    """The constant-answer floor: its answer ("2023", the most frequent year in LoCoMo's
    answers, unless a config says otherwise; never empty)."""

    answer: str = Field("2023", pattern=r"\S")


def register_system(
    name: str,
    target: str | type,
    *,
    options: type[BaseModel] | None = None,
    label: str | None = None,
    order: float | None = None,
    oracle: bool = False,
    floor: bool = False,
    source: str | None = None,
) -> None:
    """Register a system class (or a lazy ``"module:Class"`` path) under ``name``.

    ``options``: a pydantic model of the system's config options (``extra="forbid"``);
    without it, options are checked against the constructor's signature. ``label`` is
    its leaderboard row (default: the name); ``order`` its place in tables (systems
    without one follow the ordered ones, by name). ``oracle``: the system receives each
    query's gold target through :class:`chronobench.protocols.OracleTarget` (its class
    implements :class:`chronobench.protocols.OracleSystem`); no other system ever does.
    ``floor``: a reference policy that ignores the request or the memory (tables mark it
    and judge the other rows against it), never a contender.
    """
    SYSTEMS.register(
        name,
        target,
        options=options,
        label=label,
        order=order,
        skip=1,
        source=source,
        meta={"oracle": bool(oracle), "floor": bool(floor)},
    )


def is_oracle(name: str) -> bool:
    """Whether system ``name`` is registered as an oracle (gets the oracle channel)."""
    return bool(SYSTEMS.entry(name).meta.get("oracle"))


def is_floor(name: str) -> bool:
    """Whether system ``name`` is registered as a floor (False for a name not registered)."""
    return name in SYSTEMS and bool(SYSTEMS.entry(name).meta.get("floor"))


# Table order (10, 20, ...; room between for plug-ins): the baselines, ChronoMem and its
# variants (40-60), then the floors (70-). Oracles are marked by the set below; floors
# are the three policies named here and every ``floor_*``.
_ORACLES = {"chronomem_oracle", "floor_session_dates", "floor_generic_words"}
_FLOORS = {"no_memory", "always_abstain", "constant_answer"}
for _i, (_name, _target, _options, _label) in enumerate(
    (
        ("prompt_only", "baselines.prompt_only:PromptOnlySystem", BudgetOptions, "Prompt-only"),
        ("full_history", "baselines.full_history:FullHistorySystem", BudgetOptions, "Full-history"),
        ("rag_only", "baselines.rag_only:RagOnlySystem", RetrievalOptions, "RAG-only"),
        (
            "chronomem",
            "chronobench.systems.chronomem:ChronoMemSystem",
            ChronoMemResolverOptions,
            "ChronoMem",
        ),
        (
            "chronomem_oracle",
            "chronobench.systems.chronomem:ChronoMemOracleSystem",
            ChronoMemOptions,
            "ChronoMem (oracle v*)",
        ),
        (
            "adk_chronomem",
            "chronobench.systems.adk:AdkChronoMemSystem",
            ChronoMemOptions,
            "ChronoMem via its Google ADK memory service",
        ),
        ("no_memory", "baselines.floors:NoMemorySystem", NoOptions, "floor: no memory"),
        (
            "always_abstain",
            "baselines.floors:AlwaysAbstainSystem",
            NoOptions,
            "floor: always abstain",
        ),
        # Floors: a constant answer and the two content-free RQ3 outputs.
        (
            "constant_answer",
            "baselines.floors:ConstantAnswerSystem",
            ConstantAnswerOptions,
            "floor: constant answer",
        ),
        (
            "floor_session_dates",
            "baselines.floors:SessionDatesFloor",
            NoOptions,
            "floor: session dates up to v*",
        ),
        (
            "floor_generic_words",
            "baselines.floors:GenericWordsFloor",
            NoOptions,
            "floor: names + other conversations' frequent words",
        ),
        # Request-blind floors (never read the rollback request).
        (
            "floor_restore_60",
            "baselines.restore_floors:Fraction60Floor",
            ChronoMemOptions,
            "floor: restore 60% of the stream",
        ),
        (
            "floor_restore_75",
            "baselines.restore_floors:Fraction75Floor",
            ChronoMemOptions,
            "floor: restore 75% of the stream",
        ),
        (
            "floor_restore_90",
            "baselines.restore_floors:Fraction90Floor",
            ChronoMemOptions,
            "floor: restore 90% of the stream",
        ),
        (
            "floor_restore_random",
            "baselines.restore_floors:RandomVersionFloor",
            ChronoMemOptions,
            "floor: restore a random version",
        ),
        (
            "floor_restore_v1",
            "baselines.restore_floors:VersionOneFloor",
            ChronoMemOptions,
            "floor: restore version 1",
        ),
        (
            "floor_session1_words",
            "baselines.restore_floors:Session1WordsFloor",
            LeadingWordsOptions,
            "floor: first N words of session 1",
        ),
        (
            "floor_stream_words",
            "baselines.restore_floors:StreamWordsFloor",
            LeadingWordsOptions,
            "floor: first N words of the stream",
        ),
        # Protocol 3 floors: the recall constants, a surface reading of recall statements,
        # and a boundary inferred from the questions.
        ("floor_always_yes", "baselines.floors:AlwaysYesFloor", NoOptions, "floor: always Yes"),
        ("floor_always_no", "baselines.floors:AlwaysNoFloor", NoOptions, "floor: always No"),
        (
            "floor_recall_surface",
            "baselines.question_floors:RecallSurfaceFloor",
            NoOptions,
            "floor: recall by surface words",
        ),
        (
            "floor_question_density",
            "baselines.question_floors:QuestionDensityFloor",
            ChronoMemOptions,
            "floor: boundary the questions point to",
        ),
        # Splits of the battery by something other than the request (RQ2 audit).
        (
            "floor_session_parity",
            "baselines.split_floors:SessionParityFloor",
            ChronoMemOptions,
            "floor: answer even sessions' questions, never roll back",
        ),
        (
            "floor_falsifier_rule",
            "baselines.split_floors:FalsifierRuleFloor",
            NoOptions,
            "floor: recall by the falsifier's rule",
        ),
    )
):
    register_system(
        _name,
        _target,
        options=_options,
        label=_label,
        order=10 * (_i + 1),
        oracle=_name in _ORACLES,
        floor=_name in _FLOORS or _name.startswith("floor_"),
    )


def system_names() -> list[str]:
    """Registered system names."""
    return SYSTEMS.names()


def check_system_options(name: str, options: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Validate ``options`` for system ``name``; returns them with types coerced.

    Raises :class:`chronobench.errors.ConfigError` naming the key and ``where``.
    """
    return SYSTEMS.entry(name).check_options(options, where=where)


def create_system(name: str, ctx: Any, **kwargs: Any) -> Any:
    """Instantiate the system registered as ``name`` with a :class:`SystemContext` and
    its options ``kwargs`` (validated into its options model when it takes one whole)."""
    from chronobench.options import whole_options

    entry = SYSTEMS.entry(name)
    target = SYSTEMS.resolve(name)
    model = whole_options(
        target, entry.options, kwargs, skip=1, where="create_system", group="system"
    )
    return target(ctx, **kwargs) if model is None else target(ctx, model)
