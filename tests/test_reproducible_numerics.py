"""Published figures do not depend on the CPU's instruction set (issue 28): grid vectors
from a float64 forward pass, exact similarities, no numpy transcendental ufuncs."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chronomem.embedders import (
    GRID_BITS,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    model_id,
    resolve_embedder,
    similarities,
    snap,
)
from chronomem.isa import LEVELS, level_env
from tests.conftest import REPO_ROOT

STEP = 2.0**-GRID_BITS


def test_snapped_rows_lie_on_the_grid_and_are_unit() -> None:
    rng = np.random.default_rng(0)
    rows = snap(rng.normal(size=(50, 384)))
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(rows / STEP, np.rint(rows / STEP))
    assert np.abs(np.linalg.norm(rows.astype(np.float64), axis=1) - 1).max() < 1e-3
    assert not snap(np.zeros((1, 4))).any()  # a zero row stays zero


def test_grid_similarities_are_exact_in_any_summation_order() -> None:
    rng = np.random.default_rng(1)
    mat, q = snap(rng.normal(size=(200, 384))), snap(rng.normal(size=(1, 384)))[0]
    got = similarities(mat, q)
    exact = [math.fsum(float(a) * float(b) for a, b in zip(row, q, strict=True)) for row in mat]
    assert got.tolist() == exact  # every partial sum is a multiple of 2**-30 below 2**53
    perm = rng.permutation(384)
    assert similarities(mat[:, perm], q[perm]).tolist() == exact
    assert (np.asarray(mat, np.float64) @ np.asarray(q, np.float64)).tolist() == exact  # BLAS


def test_the_default_runtime_is_the_reproducible_one() -> None:
    from chronobench.spec import EmbedderSpec

    emb = resolve_embedder("minilm")
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.runtime == "torch_f64"
    assert EmbedderSpec().runtime == "torch_f64"
    assert str(model_id(emb)).endswith(f"/f64-grid{GRID_BITS}")
    assert model_id(emb) != model_id(resolve_embedder("minilm", "torch"))


def test_the_cache_keeps_grid_rows_as_they_are() -> None:
    class Grid:
        on_grid = True
        model_id = "test:grid"

        def encode(self, texts: list[str]) -> np.ndarray:
            return snap(np.arange(1.0, 1.0 + 8 * len(texts)).reshape(len(texts), 8))

    got = EmbeddingCache(Grid()).encode(["a", "b"])
    np.testing.assert_array_equal(got, Grid().encode(["a", "b"]))


_NP_TRANSCENDENTAL = re.compile(
    r"\bnp\.(log|log1p|log2|log10|exp|expm1|exp2|power|float_power|tanh|sinh|cosh|sin|cos|"
    r"tan|arctan|arctan2|arcsin|arccos|hypot|cbrt)\b"
)


def test_no_numpy_transcendental_ufuncs_in_what_publishes() -> None:
    """numpy dispatches log, exp, ... to AVX-512 code whose last bit differs from the C
    library's (measured: np.log on 58 of 240k inputs): math.* is used instead."""
    found = []
    for pkg in ("chronomem", "chronobench", "baselines", "data_builders"):
        for path in sorted((REPO_ROOT / pkg).rglob("*.py")):
            if "build" in path.relative_to(REPO_ROOT).parts:  # a local wheel build's copy
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if _NP_TRANSCENDENTAL.search(code):
                    found.append(f"{path.relative_to(REPO_ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_levels_replace_each_other() -> None:
    env = level_env("native", {"ATEN_CPU_CAPABILITY": "avx2", "HOME": "/x"})
    assert env == {"HOME": "/x"}
    assert level_env("avx2", {})["ATEN_CPU_CAPABILITY"] == "avx2"
    with pytest.raises(ValueError, match="avx2"):
        level_env("sse9")


_PROBE = """
import hashlib, json, sys
from pathlib import Path
import numpy as np
import torch
from chronomem.embedders import resolve_embedder, similarities
from tests.test_embedder_runtimes import fixed_sample
texts = fixed_sample(Path(sys.argv[1]))[::3]
vecs = resolve_embedder("minilm").encode(texts)
queries, docs = vecs[-40:], vecs[:-40]
ranks = [np.lexsort((np.arange(len(docs)), -similarities(docs, q)))[:10].tolist() for q in queries]
print(json.dumps({
    "capability": torch.backends.cpu.get_cpu_capability(),
    "vectors": hashlib.sha256(vecs.tobytes()).hexdigest(),
    "ranks": ranks,
    "n": len(texts),
}))
"""


@pytest.mark.slow
def test_vectors_and_rankings_are_the_same_on_every_instruction_set_level(
    locomo_path: Path, tmp_path: Path
) -> None:
    """The packaged MiniLM on the default runtime, on a fixed sample of LoCoMo texts and
    requests, in fresh processes held to each level: the same bytes, the same top 10."""
    script = tmp_path / "probe.py"
    script.write_text(_PROBE, encoding="utf-8")
    seen = {}
    for level in LEVELS:
        env = level_env(level)
        # The probe imports tests.*: a script's own folder, not the cwd, starts sys.path.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        out = subprocess.run(
            [sys.executable, str(script), str(locomo_path)],
            capture_output=True, text=True, cwd=REPO_ROOT, env=env,
        )  # fmt: skip
        assert out.returncode == 0, f"{level}: {out.stderr[-2000:]}"
        seen[level] = json.loads(out.stdout.strip().splitlines()[-1])
    caps = {level: s.pop("capability") for level, s in seen.items()}
    assert caps["avx2"] == "AVX2" and caps["baseline"] == "DEFAULT", caps
    assert seen["native"]["n"] >= 100
    assert seen["avx2"] == seen["native"] and seen["baseline"] == seen["native"], caps
