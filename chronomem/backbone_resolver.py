"""An optional last step of an NL rollback, for users with an LLM: the backbone reads the
request and the top-k candidate versions and names the one the request means, or refuses.

After retrieval and the reranker have ranked the commits a request describes
(:func:`chronomem.resolve.resolve_request`), :func:`apply` shows the backbone
the request and the first ``top_k`` candidates, numbered, each as its date and an
excerpt of its descriptor (what the version is indexed by) of at most ``max_chars``
characters, and parses the reply with :func:`parse_choice`:

- a number ``i`` in ``1..top_k`` (``3``, ``3.``, ``[3]``, ``(3)``, ``#3``, ``candidate 3``;
  markdown emphasis and quotes around it are ignored; or a sentence whose one number
  follows "candidate", "version" or "option": "The request refers to version 3"):
  candidate ``i`` becomes the
  matched commit, its own target the restore target, and the rest keep their order;
- ``NONE``: the request is refused with :class:`UncertainRequestError`, as the
  confidence gate refuses, and nothing is changed;
- anything else (empty, prose, a number out of range, two numbers): the reranker's
  top-1 stands, and the plan's ``evidence["resolver"]`` says why.

Only the reply's first non-empty line is read. The confidence gate
(:mod:`chronomem.nl`) runs on the chosen commit: a request without content words
is refused before the backbone is asked, and a pick of one of two commits with identical
descriptors (a tie) is refused too; the pick itself stands in for the lexical / dense
evidence rule (the backbone read the candidates), so it may choose a paraphrase that
shares no word with the request. A candidate the backbone moved up keeps its own score,
so the plan's confidence (its separation from the runner-up) is low. Requests whose
named date bounds the history ("since 1 July") are planned from the timestamps and never
reach the resolver. The backbone sees what a deployed agent has: the request and the
store's own descriptors. Wrap it in :class:`chronobench.backbones.CachedBackbone` to
cache its calls (the runner does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from chronomem.defaults import RESOLVER_MAX_CHARS, RESOLVER_MIN_CHARS, RESOLVER_TOP_K
from chronomem.generation import ChatMessage, GenerationParams, GenerationRequest, as_completion
from chronomem.types import UncertainRequestError
from chronomem.words import RETRIEVAL_STOPWORDS, stem

if TYPE_CHECKING:
    from chronomem.backend import Backend
    from chronomem.resolve import Described, Targets
    from chronomem.types import Scope

__all__ = [
    "RESOLVE_TASK",
    "BackboneResolver",
    "Candidate",
    "Choice",
    "apply",
    "excerpt",
    "parse_choice",
    "picked",
]

#: ``GenerationRequest.task`` of a resolver prompt (LLM-free readers do not answer it).
RESOLVE_TASK = "resolve"
REPLY_CHARS = 120  # how much of a reply the evidence keeps

SYSTEM_PROMPT = (
    "You help an assistant undo or restore its memory. The user's request refers to one "
    "past memory version (the one to undo, or the one to go back to). You are shown "
    "numbered candidate versions, each with its date and what changed in it. Reply with "
    "the number of the version the request refers to, or NONE if no candidate fits. "
    "Reply with the number or NONE only."
)

_WORD = re.compile(r"[a-z0-9]+")
_DECOR = "*_`\"' \t"
_NUMBER = re.compile(
    r"^(?:(?:candidate|version|option|number|no\.?)\s*)?#?\s*[\[(]?(\d{1,4})[\])]?[.):]?$"
)
_NONE = re.compile(r"^none[.!]?$")
# A sentence naming one candidate ("The request refers to version 1,"): SmolLM2-135M's
# reply shape. Read only when it is the line's one number.
_NAMED = re.compile(r"\b(?:candidate|version|option)\s*#?\s*[\[(]?(\d{1,4})\b")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Candidate:
    """One version shown to the backbone: its id, descriptor and date (None: none)."""

    version_id: int
    descriptor: str
    valid_time: str | None = None


@dataclass(frozen=True)
class Choice:
    """What the backbone's reply means: ``picked`` candidate ``index`` (1-based),
    ``refused`` (no candidate fits) or ``fallback`` (unusable reply: ``reason`` says why;
    the reranker's order stands)."""

    status: Literal["picked", "refused", "fallback"]
    index: int | None = None
    reason: str = ""


def parse_choice(reply: str, k: int) -> Choice:
    """Read a reply to a prompt of ``k`` candidates (see the module docstring)."""
    line = next((ln for ln in (reply or "").splitlines() if ln.strip(_DECOR)), "")
    text = line.strip(_DECOR).lower()
    if not text:
        return Choice("fallback", reason="empty reply")
    if _NONE.match(text):
        return Choice("refused")
    m = _NUMBER.match(text)
    if m is None:
        named = _NAMED.findall(text)
        if len(named) == 1 and len(_DIGITS.findall(text)) == 1:
            m = _NAMED.search(text)
    if m is None:
        return Choice("fallback", reason="not a number or NONE")
    index = int(m.group(1))
    if not 1 <= index <= k:
        return Choice("fallback", reason=f"number {index} is not in 1..{k}")
    return Choice("picked", index=index)


def _terms(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in RETRIEVAL_STOPWORDS}


def excerpt(descriptor: str, query: str, max_chars: int) -> str:
    """``descriptor`` on one line, at most ``max_chars`` characters: whole when it fits,
    else its first line and the lines sharing the most (stemmed) words with ``query``,
    in their own order, ``...`` marking what was left out."""
    lines = [" ".join(ln.split()) for ln in descriptor.splitlines()]
    lines = [ln for ln in lines if ln]
    whole = " / ".join(lines)
    if len(whole) <= max_chars:
        return whole
    wanted = _terms(query)
    overlap = [len(wanted & _terms(ln)) for ln in lines]
    order = [0, *sorted(range(1, len(lines)), key=lambda i: (-overlap[i], i))]
    keep: list[int] = []
    used = 0
    for i in order:
        if i and overlap[i] == 0 and keep:
            break  # nothing the request names is left: stop at the lines that match
        cost = len(lines[i]) + 3
        if used + cost > max_chars and keep:
            continue
        keep.append(i)
        used += cost
    parts: list[str] = []
    last = -1
    for i in sorted(keep):
        if parts and i != last + 1:
            parts.append("...")
        parts.append(lines[i])
        last = i
    if last != len(lines) - 1:
        parts.append("...")
    text = " / ".join(parts)
    return text if len(text) <= max_chars else text[: max(1, max_chars - 3)].rstrip() + "..."


class BackboneResolver:
    """Asks ``backbone`` which of the top ``top_k`` candidates a request means.

    ``max_chars``: the excerpt budget of each candidate; ``max_new_tokens``: the reply's
    length cap (a number or NONE needs a few). Decoding is greedy (temperature 0), so
    with the call cache a rerun reads the same reply.
    """

    name = "backbone"

    def __init__(
        self,
        backbone: Any,
        *,
        top_k: int = RESOLVER_TOP_K,
        max_chars: int = RESOLVER_MAX_CHARS,
        max_new_tokens: int = 8,
    ) -> None:
        if not callable(getattr(backbone, "generate", None)):
            raise TypeError(
                f"BackboneResolver needs a backbone with generate(requests), got "
                f"{type(backbone).__name__}"
            )
        for key, value, low in (
            ("top_k", top_k, 1),
            ("max_chars", max_chars, RESOLVER_MIN_CHARS),
            ("max_new_tokens", max_new_tokens, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"BackboneResolver: {key} must be an integer >= {low}, got {value!r}"
                )
        self.backbone = backbone
        self.top_k = top_k
        self.max_chars = max_chars
        self.max_new_tokens = max_new_tokens

    def request(self, query: str, candidates: Sequence[Candidate]) -> GenerationRequest:
        """The prompt: the request and the numbered candidate excerpts."""
        shown = tuple(
            f"[{i}]{f' ({c.valid_time})' if c.valid_time else ''} "
            f"{excerpt(c.descriptor, query, self.max_chars)}"
            for i, c in enumerate(candidates, start=1)
        )
        body = (
            f"Request: {' '.join(query.split())}\n\nCandidate versions:\n"
            + "\n".join(shown)
            + f"\n\nWhich version does the request refer to? Reply with its number "
            f"(1-{len(shown)}) or NONE."
        )
        return GenerationRequest(
            messages=(ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", body)),
            params=GenerationParams(max_new_tokens=self.max_new_tokens, temperature=0.0),
            task=RESOLVE_TASK,
            context=shown,
            question=query,
        )

    def choose(self, query: str, candidates: Sequence[Candidate]) -> tuple[Choice, str]:
        """The backbone's choice among ``candidates`` and its raw reply."""
        out = self.backbone.generate([self.request(query, candidates)])
        if len(out) != 1:
            raise RuntimeError(f"backbone returned {len(out)} completions for 1 request")
        reply = as_completion(out[0]).text
        return parse_choice(reply, len(candidates)), reply


def _candidates(db: Backend, sc: Scope, vids: list[int]) -> list[Candidate]:
    with db.lock:
        rows = db.conn.execute(
            "SELECT version_id, descriptor, valid_time FROM versions WHERE scope_id = ? AND "
            f"version_id IN ({','.join('?' * len(vids))})",
            (sc.scope_id, *vids),
        ).fetchall()
    got = {int(v): (d or "", t) for v, d, t in rows}
    return [Candidate(v, *got.get(v, ("", None))) for v in vids]


def apply(
    resolver: BackboneResolver | None,
    db: Backend,
    sc: Scope,
    query: str,
    found: Described,
    targets: Targets,
) -> tuple[Described, Targets, dict[str, Any]]:
    """The NL path's hook: ``found`` and ``targets`` with the backbone's pick first, and
    the evidence to record (``{}`` without a resolver or candidates). Raises
    :class:`UncertainRequestError` when the backbone refuses."""
    if resolver is None or not found.ranked or not targets.ranked:
        return found, targets, {}
    shown = [int(v) for v, _ in found.ranked[: resolver.top_k]]
    choice, reply = resolver.choose(query, _candidates(db, sc, shown))
    note: dict[str, Any] = {
        "status": choice.status,
        "shown": shown,
        "choice": choice.index,
        "reply": reply[:REPLY_CHARS],
    }
    if choice.status == "refused":
        raise UncertainRequestError(
            f"request {query[:80]!r}: the backbone found none of the {len(shown)} candidate "
            "versions to match it; rephrase, or preview candidates with resolve(); nothing "
            "was changed"
        )
    picked = shown[choice.index - 1] if choice.index is not None else None
    target = targets.own.get(picked) if picked is not None else None
    if picked is not None and target is None:
        choice = Choice("fallback", reason=f"version {picked} has no restore target")
        note.update(status="fallback")
    if choice.status == "fallback":
        note["reason"] = choice.reason
        return found, targets, {"resolver": note}
    note["version"] = picked
    found = found._replace(ranked=_first(found.ranked, picked, 0.0))
    score = dict(found.ranked).get(picked, 0.0)
    targets = targets._replace(ranked=_first(targets.ranked, target, score))
    return found, targets, {"resolver": note}


def picked(evidence: dict[str, Any]) -> bool:
    """Whether :func:`apply`'s evidence records a backbone's pick."""
    return evidence.get("resolver", {}).get("status") == "picked"


def _first(ranked: list[tuple[int, float]], vid: int, score: float) -> list[tuple[int, float]]:
    """``ranked`` with ``vid`` moved to the front, its score kept (``score`` if absent)."""
    own = [r for r in ranked if r[0] == vid] or [(vid, float(score))]
    return own[:1] + [r for r in ranked if r[0] != vid]
