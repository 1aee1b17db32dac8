"""TransformersBackbone: offline construction errors and a tiny random local model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from _backbones_fixtures import make_request  # noqa: E402

from chronobench.backbones.transformers_backend import TransformersBackbone  # noqa: E402
from chronobench.protocols import GenerationParams  # noqa: E402


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot load model"):
        TransformersBackbone(str(tmp_path / "no-such-model"), local_files_only=True)
    with pytest.raises(ValueError, match="batch_size"):
        TransformersBackbone("x", batch_size=0)


def test_tiny_local_model_batches_in_order(tiny_lm_dir: Path) -> None:
    bb = TransformersBackbone(str(tiny_lm_dir), device="cpu", batch_size=2, local_files_only=True)
    reqs = [
        make_request("what is a"),
        make_request("what is b c 1 2 3 a b c"),
        make_request("what is 3", params=GenerationParams(max_new_tokens=3)),
    ]
    completions = bb.generate(reqs)
    out = [c.text for c in completions]
    assert len(out) == 3 and all(isinstance(o, str) for o in out)
    # Left padding: each prompt alone gives the same text as inside the batch.
    assert [bb.generate([r])[0].text for r in reqs] == out
    assert len(out[2].split()) <= 3
    # Token usage: the prompt without its padding, at most max_new_tokens generated.
    assert completions[1].prompt_tokens > completions[0].prompt_tokens > 0
    assert all(
        1 <= c.completion_tokens <= r.params.max_new_tokens
        for c, r in zip(completions, reqs, strict=True)
    )
    assert [bb.generate([r])[0] for r in reqs] == completions


def test_loglik_sums_the_continuations_token_log_probabilities(tiny_lm_dir: Path) -> None:
    import torch
    import transformers

    bb = TransformersBackbone(str(tiny_lm_dir), device="cpu", local_files_only=True)
    ctx, cont = "what is a", " b c"
    (got,) = bb.loglik([(ctx, cont)])
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_lm_dir))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_lm_dir)).eval()
    c = tok(ctx, add_special_tokens=False).input_ids
    q = tok(cont, add_special_tokens=False).input_ids
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([c + q])).logits[0].float(), dim=-1)
    want = sum(float(logp[len(c) - 1 + i, t]) for i, t in enumerate(q))
    assert got == pytest.approx(want, abs=1e-4) and got < 0
    two = bb.loglik([(ctx, cont), ("what is 3", cont)])
    assert two[0] == pytest.approx(got, abs=1e-5) and len(two) == 2
    with pytest.raises(ValueError, match="non-empty"):
        bb.loglik([("", cont)])
