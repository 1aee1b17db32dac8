"""Mean with a 95% percentile-bootstrap confidence interval (fixed seed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["summarise"]

# Resample in blocks so memory stays bounded for runs with many samples.
_BLOCK_CELLS = 4_000_000


def summarise(
    values: Sequence[float], seed: int = 0, n_resamples: int = 1000
) -> dict[str, float | int | None]:
    """Return ``{n, mean, ci_low, ci_high}`` for ``values``.

    The interval is the 2.5 / 97.5 percentiles of ``n_resamples`` bootstrap means drawn
    with ``numpy.random.default_rng(seed)``, so the same values always give the same
    numbers. Empty input gives ``n = 0`` and ``None`` for the rest (JSON-safe).
    """
    if n_resamples < 1:
        raise ValueError(f"summarise: n_resamples must be >= 1, got {n_resamples}")
    arr = np.asarray(values, dtype=float)
    n = int(arr.size)
    if n == 0:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None}
    if np.isnan(arr).any():
        raise ValueError("summarise: values contain NaN; drop missing scores before summarising")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = arr[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"n": n, "mean": float(arr.mean()), "ci_low": float(low), "ci_high": float(high)}
