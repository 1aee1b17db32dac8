"""Instruction-set levels a process can be held to, for checking that published figures
do not depend on the CPU (docs/reproducibility.md).

Each level is a set of environment variables read when the libraries load, so they only
act on a fresh process (:func:`level_env`): torch's own kernels (``ATEN_CPU_CAPABILITY``),
MKL's BLAS (``MKL_ENABLE_INSTRUCTIONS``, or ``MKL_CBWR=COMPATIBLE`` for its SSE path),
oneDNN (``ONEDNN_MAX_CPU_ISA``), numpy's dispatched ufuncs (``NPY_DISABLE_CPU_FEATURES``,
the dispatch targets above the level) and numpy's OpenBLAS (``OPENBLAS_CORETYPE``: its
float32 products, e.g. in Qdrant's local search that the Mem0 peer uses, follow the
kernel). ``native`` sets nothing: what the CPU offers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_NUMPY_ABOVE_AVX2 = "X86_V4 AVX512_ICL AVX512_SPR"

#: level -> environment variables that hold a fresh process to it.
LEVELS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": _NUMPY_ABOVE_AVX2,
        "OPENBLAS_CORETYPE": "Haswell",
    },
    "baseline": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "NPY_DISABLE_CPU_FEATURES": f"X86_V3 {_NUMPY_ABOVE_AVX2}",
        "OPENBLAS_CORETYPE": "Nehalem",
    },
}


def level_env(level: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process held to ``level`` (``base``: os.environ)."""
    if level not in LEVELS:
        raise ValueError(f"unknown instruction-set level {level!r}; use {', '.join(LEVELS)}")
    env = dict(os.environ if base is None else base)
    for key in {k for v in LEVELS.values() for k in v}:
        env.pop(key, None)  # a level set by the parent must not leak into another
    env.update(LEVELS[level])
    return env
