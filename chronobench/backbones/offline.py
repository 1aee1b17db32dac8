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
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chronobench.backbones.request_hash import messages_json
from chronobench.fileio import atomic_write_text, file_lock
from chronobench.hashing import sha256_text
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
    "ExportBackbone",
    "RecordBackbone",
    "ReplayBackbone",
    "prompt_id",
    "prompt_record",
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
        for n, line in enumerate(fh, start=1):
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
    ``model`` fields when they name one). Not cached: the file already is. A prompt with no completion is an error naming
    its id and the file: a replayed run is the exported run, or nothing.
    """

    name = "replay"
    cacheable = False  # the file is the cache

    def __init__(self, completions: str, model: str = "replay") -> None:
        self.model = model
        self.path = Path(completions)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"backbone=replay: no completions file {self.path}; write it with "
                "`python -m chronobench generate PROMPTS OUT --engine ...`"
            )
        self._answers: dict[str, Completion] = {}
        models: set[str] = set()
        for where, rec in read_jsonl(self.path):
            if "id" not in rec or "text" not in rec:
                raise ValueError(f"{where}: a completion needs `id` and `text`")
            if rec.get("model"):
                models.add(str(rec["model"]))
            self._answers[str(rec["id"])] = Completion(
                str(rec["text"]), rec.get("prompt_tokens"), rec.get("completion_tokens")
            )
        if models and model != "replay" and model not in models:
            raise ValueError(
                f"backbone=replay: backbone.model={model!r}, but {self.path} was written by "
                f"{', '.join(sorted(models))}: set backbone.model to the model that wrote it"
            )

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
            self._answers = ReplayBackbone(str(self.path), model)._answers

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
