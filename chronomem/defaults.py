"""Settings the store shares with whoever configures it: the embedder runtimes and the
backbone resolver's budgets.

Standard library only, so a caller's configuration layer (the benchmark's run spec) can
validate against the store's own values without loading the store.
"""

from __future__ import annotations

__all__ = [
    "EMBEDDER_RUNTIMES",
    "RESOLVER_MAX_CHARS",
    "RESOLVER_MIN_CHARS",
    "RESOLVER_TOP_K",
    "embedder_runtime",
]

#: How a named embedding model runs: ``torch_f64`` (sentence-transformers in float64,
#: vectors snapped to a grid: the same on every CPU), ``torch`` (float32), ``onnx_int8``
#: (the int8 ONNX export); ``auto`` is ``torch_f64``.
EMBEDDER_RUNTIMES = ("auto", "torch_f64", "onnx_int8", "torch")


def embedder_runtime(model: str, runtime: str = "auto") -> str:
    """The concrete runtime ``runtime`` means for ``model`` (see :data:`EMBEDDER_RUNTIMES`)."""
    if runtime not in EMBEDDER_RUNTIMES:
        raise ValueError(
            f"embedder runtime must be one of {', '.join(EMBEDDER_RUNTIMES)}, got {runtime!r}"
        )
    if runtime == "auto":
        return "torch_f64"
    return runtime


#: The backbone resolver's defaults: the candidates it is shown, and each one's excerpt
#: budget in characters.
RESOLVER_TOP_K = 5
RESOLVER_MAX_CHARS = 500
#: The smallest excerpt budget that still shows a candidate's words.
RESOLVER_MIN_CHARS = 40
