"""Generation anywhere: export a run's prompts, answer them elsewhere, replay the answers.

``backbone=export backbone.params.prompts=F`` runs a preset without a model: every
prompt it would send is written to ``F`` (JSON lines, one per distinct prompt, under a
stable prompt id) and answered with the abstain text, so the run completes; its rows mean
nothing and it never publishes. ``chronobench generate F G`` (or the standalone
``chronobench/backbones/standalone_generate.py``, which imports nothing of chronobench, on
a GPU machine with only torch and transformers or vLLM) writes the completions ``G``;
``backbone=replay backbone.model=M backbone.params.completions=G`` re-runs the preset
answering every prompt from ``G``, and a prompt not there is an error naming its id.

This works for prompts that do not depend on earlier replies: RQ2/RQ3 with rule-based
selection. A backbone's reply that shapes a later prompt (ChronoMem's backbone request
resolver, the repair agent's steps, paraphrased queries) cannot be exported in one pass,
so the export backbone refuses such a request by its task. Such cells run live once with
``backbone=record`` (a live backbone whose every answer is added to the completions
file), after which ``backbone=replay`` over that file reproduces them without a model:
the same replies make the same next prompts.

The prompt id hashes the messages and the sampling parameters only (not the backbone):
the same prompt exported by any run has one id.

A replayed run's id names the replies it answers with, not where their file sits: when a
cell is resolved, :meth:`ReplayBackbone.pin_content` reads the file once and sets
``backbone.params.completions_sha256`` to the sha256 of the replies it serves
(:func:`completions_sha256`), and the spec's identity keeps that digest instead of the
path. The backbone then answers from that very read (:func:`read_completions`), so a file
rewritten or grown between the two never gives a run whose id names other replies.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chronobench.backbones.request_hash import messages_json
from chronobench.fileio import atomic_write_text, file_lock
from chronobench.hashing import canonical_json, sha256_text
from chronobench.metrics.text import ABSTAIN_TEXT
from chronobench.protocols import (
    ChatMessage,
    Completion,
    GenerationParams,
    GenerationRequest,
    as_completion,
)

__all__ = [
    "EXPORTABLE_TASKS",
    "Completions",
    "ExportBackbone",
    "RecordBackbone",
    "ReplayBackbone",
    "completions_sha256",
    "prompt_id",
    "prompt_record",
    "read_completions",
    "read_jsonl",
    "request_of",
]

#: Request tasks whose prompts never depend on an earlier reply.
EXPORTABLE_TASKS = frozenset({"qa", "summary"})


def prompt_id(request: GenerationRequest) -> str:
    """The request's stable id: sha256 of its messages and sampling parameters."""
    params = json.dumps(asdict(request.params), sort_keys=True, default=list)
    return sha256_text(f"{messages_json(request)}\n{params}")


def prompt_record(request: GenerationRequest) -> dict[str, Any]:
    """What the prompts file holds for one request (and what ``generate`` reads)."""
    return {
        "id": prompt_id(request),
        "task": request.task,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "params": {**asdict(request.params), "stop": list(request.params.stop)},
    }


def request_of(record: dict[str, Any], *, where: str) -> GenerationRequest:
    """A prompts-file record as a request (its id checked: an edited prompt is refused)."""
    try:
        params = dict(record["params"])
        params["stop"] = tuple(params.get("stop") or ())
        request = GenerationRequest(
            messages=tuple(ChatMessage(m["role"], m["content"]) for m in record["messages"]),
            params=GenerationParams(**params),
            task=str(record.get("task", "qa")),
        )
        given = str(record["id"])
    except (KeyError, TypeError) as err:
        raise ValueError(
            f"{where}: not a prompt record ({err}); expected id, messages, params as "
            "`run ... backbone=export` writes them"
        ) from None
    if prompt_id(request) != given:
        raise ValueError(f"{where}: prompt {given} does not hash to its id (edited?)")
    return request


def read_jsonl(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for each non-empty line of ``path``; a bad line is an error
    naming the file and line."""
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        yield from _records(path, fh)


def _records(path: Path, lines: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where}: not JSON ({err.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object per line")
        yield where, record


def completions_sha256(answers: Mapping[str, Completion]) -> str:
    """sha256 of the replies a completions file serves: canonical JSON of ``{prompt id:
    [text, prompt_tokens, completion_tokens]}``. What a replay can return and nothing
    else: the lines' order, their other fields (model, engine, runtime) and the file's
    path do not enter it; any reply's text or token counts do."""
    body = {pid: [c.text, c.prompt_tokens, c.completion_tokens] for pid, c in answers.items()}
    return sha256_text(canonical_json(body))


@dataclass(frozen=True)
class Completions:
    """One read of a completions file: the replies it serves (by prompt id; a prompt
    answered twice keeps its last line), the models its lines name, and their sha256."""

    path: Path
    answers: Mapping[str, Completion]
    models: frozenset[str]
    sha256: str


# resolved path -> (the file's stat signature when read, {sha256: Completions}); a few
# reads per path, newest last, so a cell pinned to an earlier read still finds it.
_READS: dict[str, tuple[tuple[int, ...] | None, dict[str, Completions]]] = {}
_READS_LOCK = threading.Lock()
_READS_KEPT = 4


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _parse(path: Path, data: bytes) -> Completions:
    answers: dict[str, Completion] = {}
    models: set[str] = set()
    # Split on newlines only: a reply may hold U+2028 and the like, which splitlines cuts.
    for where, rec in _records(path, data.decode("utf-8").split("\n")):
        if "id" not in rec or "text" not in rec:
            raise ValueError(f"{where}: a completion needs `id` and `text`")
        if rec.get("model"):
            models.add(str(rec["model"]))
        answers[str(rec["id"])] = Completion(
            str(rec["text"]), rec.get("prompt_tokens"), rec.get("completion_tokens")
        )
    return Completions(path, answers, frozenset(models), completions_sha256(answers))


def read_completions(path: str | Path, sha256: str | None = None) -> Completions:
    """The completions file at ``path``, read once per content in this process.

    The file's bytes are read through one open file (one snapshot: the writers replace
    it by a rename, so a reader holds either the old file or the new one whole), parsed
    and hashed; that read is kept and served again while the file's stat is unchanged.
    ``sha256``: the replies the caller's run id names (``completions_sha256``): served
    from the kept read with that digest even if the file has changed since, else the
    file is read and must hash to it (a ValueError naming both digests otherwise).
    """
    path = Path(path)
    key = str(path.resolve())
    with _READS_LOCK:
        signature, kept = _READS.get(key, (None, {}))
        if sha256 is not None and sha256 in kept:
            return kept[sha256]
    if not path.is_file():
        raise FileNotFoundError(
            f"backbone=replay: no completions file {path}; write it with "
            "`python -m chronobench generate PROMPTS OUT --engine ...`"
        )
    with path.open("rb") as fh:
        before = _signature(os.fstat(fh.fileno()))
        latest = next(reversed(kept.values()), None) if kept else None
        if latest is not None and before == signature:
            read = latest
        else:
            data = fh.read()
            read = _parse(path, data)
            after = _signature(os.fstat(fh.fileno()))
            # Written to while read (an appending writer): keep the read, not the stat.
            stable = after == before and after[2] == len(data)
            with _READS_LOCK:
                _, kept = _READS.get(key, (None, {}))
                kept = {k: v for k, v in kept.items() if k != read.sha256}
                kept[read.sha256] = read
                kept = dict(list(kept.items())[-_READS_KEPT:])
                _READS[key] = (after if stable else None, kept)
    if sha256 is not None and read.sha256 != sha256:
        raise ValueError(
            f"backbone=replay: {path} serves replies with sha256 {read.sha256}, not the "
            f"{sha256} that backbone.params.completions_sha256 names (set when the cell was "
            "resolved, or by its config): the file changed since, or holds other replies. "
            "Resolve the cell again (rerun it) to name the file as it is now, leave the key "
            "out of the config, or restore the replies it names"
        )
    return read


class ExportBackbone:
    """Writes every prompt to ``prompts`` instead of generating; answers the abstain text.

    Parallel cells share the file: each call merges its new prompts under a file lock and
    rewrites the file atomically, so it is always whole and holds each prompt once.
    Not cached (``cacheable``): a rerun exports again.
    """

    name = "export"
    cacheable = False

    def __init__(self, prompts: str, model: str = "export") -> None:
        self.model = model
        self.path = Path(prompts)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Record ``requests``; refuse one whose prompt depends on earlier replies."""
        for r in requests:
            if r.task not in EXPORTABLE_TASKS:
                raise ValueError(
                    f"backbone=export: a {r.task!r} prompt depends on earlier replies "
                    "(the backbone request resolver, the repair agent, paraphrased "
                    "queries), so this run cannot be exported in one pass. Export cells "
                    "with ChronoMem's request rules alone (system.resolver=none), without "
                    "task=repair, and run the others with a live backbone"
                )
        records = [prompt_record(r) for r in requests]
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            lines = self.path.read_text(encoding="utf-8").splitlines() if self.path.exists() else []
            seen = {json.loads(x)["id"] for x in lines if x.strip()}
            for rec in records:
                if rec["id"] not in seen:
                    seen.add(rec["id"])
                    lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True))
            atomic_write_text(self.path, "".join(f"{x}\n" for x in lines))
        return [Completion(ABSTAIN_TEXT, 0, 0) for _ in requests]


class ReplayBackbone:
    """Answers every prompt from ``completions`` (``chronobench generate``'s output).

    ``model``: the model that wrote them (the run's column; checked against the file's
    ``model`` fields when they name one). ``completions_sha256``: the replies the run
    serves (:func:`completions_sha256`); resolving a cell fills it in from the file
    (:meth:`pin_content`), and the run id names it instead of the file's path. Not cached: the
    file already is. A prompt with no completion is an error naming its id and the file:
    a replayed run is the exported run, or nothing.
    """

    name = "replay"
    cacheable = False  # the file is the cache

    def __init__(
        self, completions: str, model: str = "replay", completions_sha256: str | None = None
    ) -> None:
        self.model = model
        self.path = Path(completions)
        read = read_completions(self.path, completions_sha256)
        self.completions_sha256 = read.sha256
        self._answers: Mapping[str, Completion] = read.answers
        if read.models and model != "replay" and model not in read.models:
            raise ValueError(
                f"backbone=replay: backbone.model={model!r}, but {self.path} was written by "
                f"{', '.join(sorted(read.models))}: set backbone.model to the model that wrote it"
            )

    @classmethod
    def pin_content(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with ``completions_sha256`` set to the replies the file serves now
        (a digest already given must match them): what the run id names."""
        read = read_completions(params["completions"], params.get("completions_sha256"))
        return {**params, "completions_sha256": read.sha256}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """The recorded completion of each request, in order."""
        out = []
        for r in requests:
            pid = prompt_id(r)
            if pid not in self._answers:
                raise KeyError(
                    f"backbone=replay: no completion for prompt {pid} ({r.task}: "
                    f"{r.question[:60]!r}) in {self.path}. Export this run's prompts "
                    "(backbone=export) and generate them again"
                )
            out.append(self._answers[pid])
        return out


class RecordBackbone:
    """A live backbone whose answers are kept in a completions file, for replay.

    Every request is answered from ``completions`` when its prompt id is there, else by
    the live backbone ``live`` (a registered backbone name, built with ``live_params``),
    and the new answer is added to the file (merged under a file lock, rewritten
    atomically, in ``chronobench generate``'s format). A run through it is a live run; a
    later ``backbone=replay`` over the file answers the same prompts alike, including
    those that depend on earlier replies (the resolver's, the repair agent's). Not cached
    (``cacheable``): the call cache would hide prompts from the file.
    """

    name = "record"
    cacheable = False
    uses_cache_dir = True  # passed on to a live backbone that converts a model

    def __init__(
        self,
        completions: str,
        live: str,
        live_params: dict[str, Any] | None = None,
        model: str = "record",
        cache_dir: str | None = None,
    ) -> None:
        self.model = model
        self.path = Path(completions)
        self.live_name = live
        self.live_params = dict(live_params or {})
        self.cache_dir = cache_dir
        self._live: Any = None
        self._answers: dict[str, Completion] = {}
        if self.path.is_file():
            self._answers = dict(ReplayBackbone(str(self.path), model)._answers)

    def _backbone(self) -> Any:
        # Built on the first prompt the file lacks: a run the file answers whole loads no model.
        if self._live is None:
            from chronobench.backbones.registry import BACKBONES

            if self.live_name not in BACKBONES or self.live_name in ("record", "replay", "export"):
                raise ValueError(
                    f"backbone=record: backbone.params.live={self.live_name!r} is not a live "
                    "backbone; name a registered one that generates (e.g. qwen-1b5)"
                )
            entry = BACKBONES.entry(self.live_name)
            entry.check_available()
            target = entry.load()
            extra = {}
            if getattr(target, "uses_cache_dir", False) and self.cache_dir is not None:
                extra = {"cache_dir": self.cache_dir}
            self._live = target(**self.live_params, **extra)
        return self._live

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """The file's completion of each request, the live backbone's for the others."""
        ids = [prompt_id(r) for r in requests]
        todo = {pid: r for pid, r in zip(ids, requests, strict=True) if pid not in self._answers}
        # One prompt at a time, each reply saved as it comes: a killed run keeps what it
        # paid for, and the next run through the file resumes there.
        for pid, request in todo.items():
            outputs = self._backbone().generate([request])
            if len(outputs) != 1:
                raise RuntimeError(
                    f"backbone=record: {self.live_name} returned {len(outputs)} outputs for 1"
                )
            c = as_completion(outputs[0])
            self._answers[pid] = c
            self._append(
                {
                    "completion_tokens": c.completion_tokens,
                    "engine": self.live_name,
                    "id": pid,
                    "model": self.model,
                    "prompt_tokens": c.prompt_tokens,
                    "text": c.text,
                }
            )
        return [self._answers[pid] for pid in ids]

    def _append(self, record: dict[str, Any]) -> None:
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            lines = self.path.read_text(encoding="utf-8").splitlines() if self.path.exists() else []
            seen = {json.loads(x)["id"] for x in lines if x.strip()}
            if record["id"] not in seen:
                lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
            atomic_write_text(self.path, "".join(f"{x}\n" for x in lines))
