"""RQ2/RQ3: expose the system to each stream, roll back, answer the probes, score.

The system sees only what :mod:`chronobench.runner.sealed` hands it (public writes,
request text, question texts); the gold stays here and is joined with the system's
answers when each sample row is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chronobench.backbones.request_hash import prompt_sha256
from chronobench.data.schema import Probe, RollbackQuery
from chronobench.metrics import score_probe
from chronobench.metrics.replies import read_answer
from chronobench.protocols import GenerationRequest, RollbackOutcome, public_writes
from chronobench.results.io import SampleLog
from chronobench.results.records import ProbeRecord
from chronobench.runner.datasets import RunData
from chronobench.runner.progress import task
from chronobench.runner.rows import query_fields
from chronobench.runner.sealed import FINAL_KIND, ask_final, ask_query, stream_questions

# How much of the shown memory a sample row keeps (the prompt hash pins the rest).
_MAX_CONTEXT_IN_ROW = 20


def probe_sample_id(query_id: str, probe_id: str) -> str:
    """Stable id of one probe answered after one rollback."""
    return f"probe/{query_id}/{probe_id}"


@dataclass
class _Pending:
    query: RollbackQuery
    probe: Probe
    outcome: RollbackOutcome
    request: GenerationRequest | None
    direct: str | None


# A probe's JSON form by object: every cell (and every rollback of a stream) records the
# same loaded probes again. The probe is kept with its row, so an id is never reused.
_PROBE_ROWS: dict[int, tuple[Probe, dict[str, Any]]] = {}
_PROBE_ROWS_MAX = 100_000


def _probe_row(probe: Probe) -> dict[str, Any]:
    hit = _PROBE_ROWS.get(id(probe))
    if hit is not None and hit[0] is probe:
        return hit[1]
    if len(_PROBE_ROWS) >= _PROBE_ROWS_MAX:
        _PROBE_ROWS.clear()
    row = probe.model_dump(mode="json")
    _PROBE_ROWS[id(probe)] = (probe, row)
    return row


# A probe's scores by (probe object, prediction): scoring is a function of the two, and
# the cells of one worker score the same loaded probes (the datasets are loaded once per
# process) with the same predictions again and again: ChronoMem, the oracle and the
# restore floors read mostly the same states, and the floors abstain on the same probes.
# The probe is kept with its scores, so an id is never reused.
_SCORES: dict[tuple[int, str], tuple[Probe, dict[str, float]]] = {}
_SCORES_MAX = 100_000


def _scores(probe: Probe, prediction: str) -> dict[str, float]:
    key = (id(probe), prediction)
    hit = _SCORES.get(key)
    if hit is None or hit[0] is not probe:
        if len(_SCORES) >= _SCORES_MAX:
            _SCORES.clear()
        hit = _SCORES[key] = (probe, score_probe(probe, prediction))
    return dict(hit[1])  # the row's own copy


def _record(p: _Pending, prediction: str, *, read: bool = False) -> ProbeRecord:
    q, probe, req = p.query, p.probe, p.request
    context = list(req.context) if req is not None else []
    reply = None
    if read and req is not None and p.direct is None:
        # A language model's reply: score the answer read from it, keep the reply.
        reply, prediction = prediction, read_answer(prediction, req.task)
    note = p.outcome.meta.get("resolver") if read else None
    if read and note is None and "the backbone found none" in str(p.outcome.meta.get("refused")):
        note = {"status": "refused"}
    return ProbeRecord(
        sample_id=probe_sample_id(q.query_id, probe.probe_id),
        probe_kind=probe.kind,
        category=probe.category,
        **query_fields(q),
        selected_version=p.outcome.selected_version,
        candidates=[(v, round(s, 6)) for v, s in p.outcome.candidates[:5]],
        context=context[:_MAX_CONTEXT_IN_ROW],
        context_n=len(context),
        prompt_sha256=prompt_sha256(req) if req is not None else None,
        prediction=prediction,
        probe=_probe_row(probe),
        scores=_scores(probe, prediction),
        reply=reply,
        resolver=dict(note) if note else None,
    )


def run_generation(
    data: RunData,
    system: Any,
    backbone: Any,
    log: SampleLog,
    done: set[str],
    *,
    kinds: set[str],
    chunk_size: int,
    progress: bool,
    oracle: bool = False,
    seed: int = 0,
    read_replies: bool = False,
) -> int:
    """Answer every wanted probe not yet in ``done``; returns rows written.

    ``oracle``: the system is registered as an oracle and gets each query's target
    through the oracle channel; ``seed`` orders each stream's battery and final questions;
    ``read_replies``: the backbone is a language model, whose replies are read
    (:func:`chronobench.metrics.replies.read_answer`) and kept on the rows.
    Prompts go to the backbone in chunks of ``chunk_size`` as soon as a chunk is full
    (0 = one call for the whole run once every prompt is prepared, what vLLM batches
    best); each chunk's rows are appended as soon as it is scored, so a killed run loses
    at most one chunk, and only one chunk of prompts is held at a time (a full history's
    prompt is ~100 KB and a cell asks ~20,000 questions). The calls and the rows come
    out the same whatever the chunk size.
    """
    by_stream = data.queries_by_stream()
    pending: list[_Pending] = []
    written = 0

    def flush(final: bool, bar: Any = None) -> None:
        # Full chunks only, until the last call (final) sends what is left.
        nonlocal pending, written
        size = chunk_size if chunk_size > 0 else max(1, len(pending))
        while pending and (final or (chunk_size > 0 and len(pending) >= size)):
            chunk, pending = pending[:size], pending[size:]
            written += _answer(chunk, backbone, log, read_replies)
            if bar is not None:
                bar.update(len(chunk))

    label = f"{system.name}: rollback"
    with task(len(data.queries), label, enabled=progress) as bar:
        for stream in data.streams:
            todo = [
                q
                for q in by_stream.get(stream.stream_id, [])
                if any(
                    p.kind in kinds and probe_sample_id(q.query_id, p.probe_id) not in done
                    for p in q.probes
                )
            ]
            bar.skip(len(by_stream.get(stream.stream_id, [])) - len(todo))
            if not todo:
                continue
            system.ingest(public_writes(stream))
            questions = stream_questions(stream, seed)
            finals: list[tuple[RollbackQuery, Probe]] = []
            for q in todo:
                wanted = [
                    p
                    for p in q.probes
                    if p.kind in kinds and probe_sample_id(q.query_id, p.probe_id) not in done
                ]
                finals += [(q, p) for p in wanted if p.kind == FINAL_KIND]
                wanted = [p for p in wanted if p.kind != FINAL_KIND]
                outcome, answered = ask_query(system, q, wanted, questions=questions, oracle=oracle)
                pending += [_Pending(q, p, outcome, r.request, r.answer) for p, r in answered]
                flush(final=False)
                bar.update(1)
            if finals:
                # Once per stream, after all of its queries: the agent at its last version.
                owner = {p.probe_id: q for q, p in finals}
                last = RollbackOutcome(selected_version=None)
                for p, r in ask_final(system, stream.stream_id, [p for _, p in finals], seed=seed):
                    pending.append(_Pending(owner[p.probe_id], p, last, r.request, r.answer))
                flush(final=False)
    system.close()
    with task(len(pending), f"{system.name}: answer", enabled=progress) as bar:
        flush(final=True, bar=bar)
    return written


def _answer(chunk: list[_Pending], backbone: Any, log: SampleLog, read_replies: bool) -> int:
    """Send ``chunk``'s prompts to the backbone in one call, append its scored rows."""
    needs = [p.request for p in chunk if p.direct is None]
    outputs = iter(backbone.generate(needs) if needs else [])
    records = [
        _record(p, p.direct if p.direct is not None else next(outputs).text, read=read_replies)
        for p in chunk
    ]
    return log.append(records)
