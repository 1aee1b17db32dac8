"""The two hashes of a generation request: the call-cache key and the prompt hash.

Both are published or persisted bytes (every cached call is filed under its key; sample
rows hold the prompt hash), so their encodings stay as they were first written: plain
``json.dumps`` with default separators and unescaped unicode. What changes here is only
how often the work is done. A long prompt (the whole history, ~100 KB) used to be
encoded three times per request: its context for the key, its messages for the key, and
its messages again for the prompt hash. Now the messages are encoded once (the prompt
hash is kept on the request, as is its key per backbone, for a request object asked
again), and a context shared by many requests (one packed memory view per stream and
budget) is encoded once while it is in use.
"""

from __future__ import annotations

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
    # The opening quote and the head's escapes, no closing quote (see _string_json).
    return json.dumps(head, ensure_ascii=False)[:-1]


def _string_json(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``. JSON escapes character by character, so
    the encoding of ``head + tail`` is the two encodings joined; a long content's head
    (all before its last blank line: the memory view a stream's questions share) is
    encoded once while in use, its tail (the question) each time."""
    cut = text.rfind("\n\n") if len(text) > _LONG else -1
    if cut <= 0:
        return json.dumps(text, ensure_ascii=False)
    return _head_json(text[:cut]) + json.dumps(text[cut:], ensure_ascii=False)[1:]


def messages_json(request: GenerationRequest) -> str:
    """``request``'s messages as ``[[role, content], ...]`` JSON (default separators,
    unescaped unicode); keeps their sha256 on the request for :func:`prompt_sha256`."""
    pairs = ", ".join(
        f"[{_string_json(m.role)}, {_string_json(m.content)}]" for m in request.messages
    )
    text = f"[{pairs}]"
    request.__dict__[_DIGEST] = sha256_text(text)
    return text


def prompt_sha256(request: GenerationRequest) -> str:
    """Hash of the exact messages sent to the backbone."""
    got = request.__dict__.get(_DIGEST)
    if got is None:
        messages_json(request)
        got = request.__dict__[_DIGEST]
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
    parts = {
        "backbone": _dump(backbone.name),
        "config": config,
        "context": _context_json(tuple(request.context)),
        "messages": messages_json(request),
        "model": _dump(backbone.model),
        "params": _dump(asdict(request.params)),
        "question": _dump(request.question),
        "task": _dump(request.task),
    }
    blob = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in sorted(parts.items())) + "}"
    known[who] = key = sha256_text(blob)
    return key
