"""The known set (protocol 3, docs/metrics.md): which battery items count for RC-QA.

A boundary probe tests rollback only when the question is answerable with its evidence
in memory. Whether it is, is decided once per (dataset build, backbone) by one fixed
reference reader, never by the system under test: ChronoMem with its default options
through the cell's backbone, given either the stream's last version (``last_version``:
no rollback, the whole stream) or only the sessions holding each item's evidence
(``evidence_sessions``: a memory no system row reads with, so the set favours no row's
retrieval; the RQ2 cells use it). Why a retrieval reader: a retrieval reader sees the evidence of any question at any history length;
full-history is cut by its context budget, so on long conversations it would call a
question unanswerable because of where its evidence lies. The set is computed once,
cached on disk beside the call cache (a lock, so parallel cells compute it once), copied
into each run folder (``known.json``) and its sha256 is in the manifest; every system
scored with the same backbone on the same build is scored against the same set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronobench.fileio import atomic_write_text, file_lock
from chronobench.hashing import canonical_json, sha256_text

REFERENCE_SYSTEM = "chronomem"
KNOWN_FILE = "known.json"
_VERSION = 1

#: How the reference reader is given the stream (docs/protocol.md, the known set):
#: ``last_version``: the whole stream, ChronoMem retrieving from it (the reader ChronoMem
#: rows answer with themselves); ``evidence_sessions``: only the sessions holding the
#: item's evidence (no system row reads with that memory, so no row's retrieval is
#: favoured by the set).
READERS = ("last_version", "evidence_sessions")
#: The known set of RQ2 cells (generation on a benchmark dataset, and the peers').
RQ2_READER = "evidence_sessions"


def reference_identity(
    spec: Any, data: Any, backbone: Any, reader: str = "last_version"
) -> dict[str, Any]:
    """What the known set depends on: the build, the backbone (with its output-changing
    settings), the embedder the reference reads with, and the reference itself."""
    from chronobench.metrics.replies import READER_VERSION
    from chronobench.runner.params import reads_replies
    from chronobench.spec import PROTOCOL_VERSION

    inner = getattr(backbone, "inner", backbone)
    return {
        "version": _VERSION,
        "protocol": PROTOCOL_VERSION,
        "reference": REFERENCE_SYSTEM,
        # The first reader's identity had no key: its cached sets stay valid.
        **({"reader": reader} if reader != "last_version" else {}),
        "dataset_manifest_sha256": data.manifest_sha256,
        "backbone": {
            "name": spec.backbone.name,
            "model": spec.backbone.model,
            # A replayed file by its replies' sha256, not its path (BackboneSpec.identity).
            "params": spec.backbone.identity()["params"],
            "generation": spec.backbone.generation.model_dump(mode="json"),
            "cache_config": getattr(inner, "cache_config", None),
        },
        "embedder": spec.embedder.model_dump(mode="json"),
        "seed": int(spec.seed),
        # A language model's replies are read (chronobench.metrics.replies): by which rules.
        **({"reader": READER_VERSION} if reads_replies(spec) else {}),
        # A stated subset asks the reference only the items its queries score.
        **({"subset": spec.dataset.subset.model_dump()} if spec.dataset.subset else {}),
    }


def _finals_by_stream(data: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for q in data.queries:
        for p in q.probes:
            if p.kind == "final_qa":
                out.setdefault(q.stream_id, []).append(p)
    return out


def evidence_groups(stream: Any, probes: list[Any]) -> list[tuple[tuple[Any, ...], list[Any]]]:
    """The stream's final probes grouped by the sessions their evidence lies in (each
    write's ``session`` label, else the write itself), in a stable order."""
    label = {w.version: w.labels.get("session", w.version) for w in stream.writes}
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for p in probes:
        key = tuple(sorted({label[v] for v in p.evidence_versions if v in label}, key=str))
        groups.setdefault(key, []).append(p)
    return sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]])


def sessions_only(writes: Any, sessions: tuple[Any, ...]) -> tuple[Any, ...]:
    """The public writes of ``sessions`` alone, renumbered 1..n in stream order."""
    from dataclasses import replace

    keep = set(sessions)
    picked = [w for w in writes if w.labels.get("session", w.write_id) in keep]
    return tuple(replace(w, write_id=i) for i, w in enumerate(picked, start=1))


def _compute(
    spec: Any,
    streams: list[Any],
    finals: dict[str, list[Any]],
    backbone: Any,
    reader: str = "last_version",
) -> dict[str, list[str]]:
    from chronobench.metrics import score_probe
    from chronobench.metrics.replies import read_answer
    from chronobench.protocols import public_writes
    from chronobench.runner import progress
    from chronobench.runner.params import generation_params, reads_replies
    from chronobench.runner.sealed import ask_final
    from chronobench.systems import SystemContext
    from chronobench.systems.registry import create_system
    from chronobench.systems.stores import StoreProvider

    read = reads_replies(spec)
    params = generation_params(spec)
    # Its own in-memory stores: the reference does not depend on the cell's store,
    # retriever or reranker (a session with no rollback reads items, not commits).
    stores = StoreProvider(embedder=spec.embedder.model_dump(), cache_dir=spec.paths.cache_dir)
    # Its options model's defaults.
    system = create_system(REFERENCE_SYSTEM, SystemContext(params=params, stores=stores))
    out: dict[str, list[str]] = {}
    try:
        shown = progress.items(
            streams, label="known set: streams", enabled=bool(getattr(spec, "progress", True))
        )
        for stream in shown:
            probes = finals.get(stream.stream_id, [])
            if not probes:
                out[stream.stream_id] = []
                continue
            if reader == "evidence_sessions":
                writes = public_writes(stream)
                answered = []
                for sessions, group in evidence_groups(stream, probes):
                    part = sessions_only(writes, sessions)
                    if not part:
                        continue  # no evidence in the stream: never known
                    system.ingest(part)
                    answered += ask_final(system, stream.stream_id, group, seed=int(spec.seed))
            else:
                system.ingest(public_writes(stream))
                answered = ask_final(system, stream.stream_id, probes, seed=int(spec.seed))
            needs = [r.request for _, r in answered if r.answer is None]
            outputs = iter(backbone.generate(needs) if needs else [])
            ids = []
            for p, r in answered:
                text = r.answer if r.answer is not None else next(outputs).text
                if read and r.answer is None:  # a model's reply, read as the cells read it
                    text = read_answer(text, r.request.task)
                if score_probe(p, text).get("final_correct") == 1.0:
                    ids.append(str(p.meta.get("qa_id")))
            out[stream.stream_id] = sorted(ids)
    finally:
        system.close()
        stores.close()
    return out


def reference_known(
    spec: Any, data: Any, backbone: Any, reader: str = "last_version"
) -> tuple[dict[str, list[str]], str]:
    """The known set of ``data``'s streams for the cell's backbone, and the sha256 of its
    identity and content; computed once and cached (``<cache_dir>/known/``). ``reader``:
    one of :data:`READERS`."""
    if reader not in READERS:
        raise ValueError(f"known set: reader {reader!r} is not one of {READERS}")
    ident = reference_identity(spec, data, backbone, reader)
    key = sha256_text(canonical_json(ident))[:16]
    path = Path(spec.paths.cache_dir) / "known" / f"{key}.json"
    finals = _finals_by_stream(data)
    with file_lock(path.with_suffix(".lock")):
        cached: dict[str, list[str]] = {}
        if path.is_file():
            try:
                cached = dict(json.loads(path.read_text(encoding="utf-8")).get("known", {}))
            except (OSError, ValueError):
                cached = {}  # a damaged cache file is recomputed
        missing = [s for s in data.streams if s.stream_id not in cached]
        if missing:
            cached.update(_compute(spec, missing, finals, backbone, reader))
            body = {"identity": ident, "known": dict(sorted(cached.items()))}
            atomic_write_text(path, json.dumps(body, sort_keys=True, indent=1) + "\n")
    known = {s.stream_id: cached[s.stream_id] for s in data.streams}
    return known, sha256_text(canonical_json({"identity": ident, "known": known}))


def write_known(
    run_dir: Path, known: dict[str, list[str]], sha: str, reader: str = "last_version"
) -> None:
    """Keep the run's known set beside its samples (``score`` re-reads it)."""
    body = {"sha256": sha, "reference": REFERENCE_SYSTEM, "reader": reader, "known": known}
    atomic_write_text(run_dir / KNOWN_FILE, json.dumps(body, sort_keys=True, indent=1) + "\n")


def read_known(run_dir: Path) -> dict[str, list[str]] | None:
    """The known set a run was scored with, or None (a run of an older protocol)."""
    path = Path(run_dir) / KNOWN_FILE
    if not path.is_file():
        return None
    return dict(json.loads(path.read_text(encoding="utf-8"))["known"])
