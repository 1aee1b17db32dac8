"""The dense stage's float32 prefilter returns exactly what the float64 pass returns."""

from __future__ import annotations

import numpy as np
import pytest

from chronomem import dense as dn
from chronomem.embedders import snap


def _matrix(seed: int, n_versions: int, dim: int, windows: bool) -> dn.DenseMatrix:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 4, n_versions) if windows else np.ones(n_versions, dtype=int)
    rows = rng.standard_normal((int(counts.sum()), dim))
    # Near-ties on purpose: copies of a few rows, and rows a hair apart.
    rows[5:40] = rows[0]
    rows[40:80] = rows[1] + 1e-7 * rng.standard_normal((40, dim))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    m32 = snap(rows).astype(np.float32)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    vids = np.arange(100, 100 + n_versions, dtype=np.int64)
    return dn.DenseMatrix(1, vids, starts, m32.astype(np.float64), matrix32=m32)


@pytest.mark.parametrize("windows", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prefilter_matches_the_exact_pass(seed: int, windows: bool, monkeypatch) -> None:
    dm = _matrix(seed, 3000, 32, windows)
    rng = np.random.default_rng(100 + seed)
    queries = [dm.matrix[0], dm.matrix[41], *rng.standard_normal((6, 32))]
    for q in queries:
        q = snap(q / np.linalg.norm(q))
        for k in (1, 5, 40, 3000):
            monkeypatch.setattr(dn, "PREFILTER_ROWS", 10**9)
            exact = dn.dense(dm, q, k)
            monkeypatch.setattr(dn, "PREFILTER_ROWS", 1)
            fast = dn.dense(dm, q, k)
            assert fast == exact


def test_prefilter_keeps_few_rows() -> None:
    dm = _matrix(3, 5000, 32, False)
    q = dm.matrix[2000]
    keep, _ = dn.prefilter(dm, q, 5)
    assert 5 <= keep.size < 100  # the exact pass rescored a handful, not the matrix
