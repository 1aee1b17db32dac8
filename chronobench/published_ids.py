"""What keeps the run ids of published runs as they were: every rule in one place.

A run id hashes the cell's spec (:meth:`chronobench.spec.RunSpec.identity`). Options added
after runs were published, and defaults the shipped configs always stated, would change
that hash; the rules below keep it, so the rest of the spec code states plainly what a
cell computes and asks this module what an older id expects.

- recorded keys: the params a kind's configs always gave, recorded (and hashed) at their
  default even when a config leaves them out; any other key is recorded only when given
  (:func:`chronobench.options.recorded_options`);
- identity defaults: fields added later, left out of the identity while at the value every
  earlier run had (:func:`drop_identity_defaults`);
- the built-data folder key keeps its first JSON encoding (:func:`legacy_json_key`);
- ``system.resolver``: a resolver that is off leaves no key in the spec
  (:func:`chronobench.resolver_options.settle_resolver`), so runs from before the resolver
  existed keep their ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chronobench.hashing import sha256_text

__all__ = [
    "BACKBONE_RECORDED",
    "DATASET_RECORDED",
    "IDENTITY_DEFAULTS",
    "TASK_RECORDED",
    "drop_identity_defaults",
    "legacy_json_key",
]

#: task kind -> the ``task.params`` keys its shipped configs always stated.
TASK_RECORDED: Mapping[str, tuple[str, ...]] = {
    "repair": ("diagnosis", "noise", "noise_key", "retention"),
    "peers": ("streams", "targets", "rq2_queries_per_stream"),
    "selective": ("streams", "anchors_per_stream", "heldout", "delete_hits"),
}

#: backbone -> the ``backbone.params`` keys its shipped configs always stated.
BACKBONE_RECORDED: Mapping[str, tuple[str, ...]] = {
    "vllm": ("tensor_parallel_size", "dtype", "max_model_len", "gpu_memory_utilization", "seed"),
    "openai": ("base_url", "api_key_env", "max_concurrency", "timeout_s", "max_retries"),
    "transformers": ("device", "batch_size"),
    "smollm2": ("threads", "batch_size"),
    # Qwen's packaged models record the dtype: bfloat16 and float32 answers may differ.
    "qwen": ("threads", "batch_size", "dtype"),
    "qwen-1b5-ct2": ("threads", "compute_type"),
}

#: dataset -> the ``dataset.params`` keys its shipped configs always stated.
DATASET_RECORDED: Mapping[str, tuple[str, ...]] = {
    "locomo": ("max_queries_per_stream", "max_answerable", "max_future", "max_boundary"),
    "mab": ("split", "revision", "chunk_size", "chunk_unit", "max_queries_per_stream"),
    "repair": ("n_controlled", "n_stress"),
}

#: identity section -> {field: the value every run had before the field existed}. A
#: field at that value is left out of the identity; ``None`` as the value: left out when
#: unset.
IDENTITY_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "dataset": {"turn_gold": "session", "subset": None},
}


def drop_identity_defaults(section: str, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` of an identity ``section`` without the later fields at their old value."""
    old = IDENTITY_DEFAULTS.get(section, {})
    return {k: v for k, v in fields.items() if not (k in old and v == old[k])}


def legacy_json_key(ident: Mapping[str, Any]) -> str:
    """An 8-hex key of ``ident`` in its first encoding (``json.dumps`` with default
    separators and ASCII escapes, not :func:`~chronobench.hashing.canonical_json`):
    published manifests name built-data folders by it."""
    return sha256_text(json.dumps(ident, sort_keys=True, default=str))[:8]
