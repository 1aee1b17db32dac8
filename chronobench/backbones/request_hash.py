"""The two hashes of a generation request: the call-cache key and the prompt hash.

Both are published or persisted bytes (every cached call is filed under its key; sample
rows hold the prompt hash), so their encodings stay as they were first written: plain
``json.dumps`` with default separators and unescaped unicode. What changes here is only
how often the work is done. A long prompt (the whole history, ~100 KB) used to be
encoded three times per request: its context for the key, its messages for the key, and
its messages again for the prompt hash. Now the messages are encoded once (the prompt
hash is kept on the request, as is its key per backbone, for a request object asked
again), and a context shared by many requests (one packed memory view per stream and
budget) is encoded once while it is in use. Hashing likewise: sha256 reads its input
front to back, so the hash state after the shared front of a key's payload or of a
prompt (everything up to the end of the memory view) is kept while in use and each
request hashes only its own tail (the question, the params).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import lru_cache
from typing import Any

from chronobench.hashing import sha256_text
from chronobench.protocols import Backbone, GenerationRequest

__all__ = ["messages_json", "prompt_sha256", "request_key"]

# Where a request keeps its prompt hash once computed (frozen dataclasses still have a
# __dict__; the hash is a function of the immutable messages, so it can never go stale).
_DIGEST = "_chronobench_prompt_sha256"
_KEYS = "_chronobench_request_keys"  # {(backbone name, model, config): key}
_LONG = 8192  # characters: shorter contents are encoded whole


@lru_cache(maxsize=64)
def _head_json(head: str) -> str:
    # The opening quote and the head's escapes, no closing quote (see _string_json_parts).
    return json.dumps(head, ensure_ascii=False)[:-1]


def _string_json_parts(text: str) -> tuple[str | None, str]:
    """``json.dumps(text, ensure_ascii=False)`` as (head, tail), joined the same bytes.
    JSON escapes character by character, so the encoding of ``head + tail`` is the two
    encodings joined; a long content's head (all before its last blank line: the memory
    view a stream's questions share) is encoded once while in use (None when the text is
    short or has no such line), its tail (the question) each time."""
    cut = text.rfind("\n\n") if len(text) > _LONG else -1
    if cut <= 0:
        return None, json.dumps(text, ensure_ascii=False)
    return _head_json(text[:cut]), json.dumps(text[cut:], ensure_ascii=False)[1:]


def _message_parts(request: GenerationRequest) -> tuple[tuple[str, ...], str]:
    """The messages' JSON (``[[role, content], ...]``, default separators) as (front,
    rest): ``"".join(front) + rest`` is the encoding. ``front`` ends with the last long
    content's head (the shared memory view), so that many requests share it; it is
    empty when no content is long."""
    parts: list[str] = ["["]
    shared = 0
    for i, m in enumerate(request.messages):
        role = json.dumps(m.role, ensure_ascii=False)
        parts.append(f"{', ' if i else ''}[{role}, ")
        head, tail = _string_json_parts(m.content)
        if head is not None:
            parts.append(head)
            shared = len(parts)
        parts.append(tail + "]")
    parts.append("]")
    return tuple(parts[:shared]), "".join(parts[shared:])


@lru_cache(maxsize=64)
def _front_state(front: tuple[str, ...]) -> Any:
    # Keyed by the tuple: its long members are the same objects while in use (from the
    # encoders' caches), whose string hashes are cached, so a lookup does not rehash them.
    state = hashlib.sha256()
    for part in front:
        state.update(part.encode("utf-8"))
    return state


def _sha256_parts(front: tuple[str, ...], rest: str) -> str:
    """``sha256_text("".join(front) + rest)``, from the kept state after ``front``."""
    if not front:
        return sha256_text(rest)
    state = _front_state(front).copy()  # the kept state is never updated itself
    state.update(rest.encode("utf-8"))
    return state.hexdigest()


def messages_json(request: GenerationRequest) -> str:
    """``request``'s messages as ``[[role, content], ...]`` JSON (default separators,
    unescaped unicode); keeps their sha256 on the request for :func:`prompt_sha256`."""
    front, rest = _message_parts(request)
    request.__dict__[_DIGEST] = _sha256_parts(front, rest)
    return "".join(front) + rest


def prompt_sha256(request: GenerationRequest) -> str:
    """Hash of the exact messages sent to the backbone."""
    got = request.__dict__.get(_DIGEST)
    if got is None:
        got = request.__dict__[_DIGEST] = _sha256_parts(*_message_parts(request))
    return got


@lru_cache(maxsize=64)
def _context_json(context: tuple[str, ...]) -> str:
    # Keyed by the tuple itself: its items' string hashes are cached, so a lookup costs
    # a pointer walk, not a re-encode.
    return _dump(list(context))


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=list)


def request_key(backbone: Backbone, request: GenerationRequest) -> str:
    """The cache key of ``request`` for ``backbone`` (hex sha256).

    The key hashes ``json.dumps(payload, sort_keys=True, ensure_ascii=False,
    default=list)`` of the backbone's name, model and ``cache_config``, the messages,
    params, task, context and question. Context and question are usually inside the
    messages; they are keyed too because LLM-free backbones read them directly. The
    payload is assembled here from separately encoded values, in sorted key order, which
    gives the same bytes (tested against the one-call encoding)."""
    config = _dump(getattr(backbone, "cache_config", {}))
    who = (backbone.name, backbone.model, config)
    known = request.__dict__.setdefault(_KEYS, {})
    if who in known:  # one request object asked again (a prompt shared between sessions)
        return known[who]
    front, rest = _message_parts(request)
    if _DIGEST not in request.__dict__:
        request.__dict__[_DIGEST] = _sha256_parts(front, rest)
    parts = {
        "backbone": _dump(backbone.name),
        "config": config,
        "context": _context_json(tuple(request.context)),
        "messages": "",  # its front and rest, below
        "model": _dump(backbone.model),
        "params": _dump(asdict(request.params)),
        "question": _dump(request.question),
        "task": _dump(request.task),
    }
    # The payload's front runs to the end of the messages' front: the same for every
    # question asked over one memory view (sorted keys put the messages fourth).
    front_payload: list[str] = []
    rest_payload: list[str] = []
    for i, (k, v) in enumerate(sorted(parts.items())):
        label = f"{', ' if i else '{'}{json.dumps(k)}: "
        if k < "messages":
            front_payload += [label, v]
        elif k == "messages":
            front_payload += [label, *front]
            rest_payload.append(rest)
        else:
            rest_payload += [label, v]
    rest_payload.append("}")
    known[who] = key = _sha256_parts(tuple(front_payload), "".join(rest_payload))
    return key
