"""Mean with a 95% cluster-bootstrap confidence interval (fixed seed).

Probes of one conversation are not independent (they share the conversation, the
memory and often the same v*), so the interval resamples *clusters* (streams) with
replacement, not samples. Repeated samples (the same question at the same v*) carry
weights that sum to 1 per distinct sample, so they count once (docs/metrics.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["summarise"]

# Resample in blocks so memory stays bounded for runs with many clusters.
_BLOCK_CELLS = 4_000_000


def summarise(
    values: Sequence[float],
    seed: int = 0,
    n_resamples: int = 1000,
    *,
    clusters: Sequence[object] | None = None,
    weights: Sequence[float] | None = None,
) -> dict[str, float | int | None]:
    """Return ``{n, n_distinct, n_clusters, mean, ci_low, ci_high}`` for ``values``.

    ``mean`` is the weighted mean (``weights`` default to 1). The interval is the 2.5 /
    97.5 percentiles of ``n_resamples`` bootstrap means, each drawing as many clusters
    as there are, with replacement, from ``numpy.random.default_rng(seed)``; with no
    ``clusters`` every value is its own cluster (the plain bootstrap). ``n`` counts
    values, ``n_distinct`` the summed weights (distinct samples), ``n_clusters`` the
    clusters. Empty input gives ``n = 0`` and ``None`` for the rest (JSON-safe).
    """
    if n_resamples < 1:
        raise ValueError(f"summarise: n_resamples must be >= 1, got {n_resamples}")
    arr = np.asarray(values, dtype=float)
    n = int(arr.size)
    if n == 0:
        return {
            "n": 0,
            "n_distinct": 0,
            "n_clusters": 0,
            "mean": None,
            "ci_low": None,
            "ci_high": None,
        }
    if np.isnan(arr).any():
        raise ValueError("summarise: values contain NaN; drop missing scores before summarising")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != arr.shape or (w <= 0).any() or np.isnan(w).any():
        raise ValueError("summarise: weights must be positive, one per value")
    if clusters is None:
        ids = np.arange(n)
    else:
        if len(clusters) != n:
            raise ValueError(f"summarise: {len(clusters)} cluster ids for {n} values")
        _, ids = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    n_clusters = int(ids.max()) + 1
    # Per-cluster weighted sums: a resample's mean is counts @ S / counts @ W.
    sums = np.bincount(ids, weights=w * arr, minlength=n_clusters)
    mass = np.bincount(ids, weights=w, minlength=n_clusters)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    block = max(1, _BLOCK_CELLS // n_clusters)
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        idx = rng.integers(0, n_clusters, size=(stop - start, n_clusters))
        means[start:stop] = sums[idx].sum(axis=1) / mass[idx].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {
        "n": n,
        "n_distinct": int(round(float(w.sum()))),
        "n_clusters": n_clusters,
        "mean": float((w * arr).sum() / w.sum()),
        "ci_low": float(low),
        "ci_high": float(high),
    }
