"""Optional paraphrase step: a backbone rewrites template queries in its own words.

Off by default. Outputs are validated (non-empty, one line, not too long, no digits or
month names) and a rejected paraphrase falls back to the template text. Caching model
calls is the backbone wrapper's job.
"""

from __future__ import annotations

from collections.abc import Sequence

from chronobench.data.schema import Probe, RollbackQuery
from chronobench.metrics.summary import last_session_words
from chronobench.protocols import (
    Backbone,
    ChatMessage,
    GenerationParams,
    GenerationRequest,
    as_completion,
)
from chronobench.text import date_like

SYSTEM_PROMPT = (
    "You rewrite requests that a user sends to an AI assistant with long-term memory. "
    "Rewrite the request in natural, varied words, keeping its exact meaning: which "
    "conversation or passage it points to, and whether memory should go back to just "
    "after it or to just before it. Do not add dates, numbers or new details. "
    "Reply with the rewritten request only, on one line."
)


def validate_paraphrase(text: str, original: str, *, max_chars: int = 300) -> str | None:
    """Return why a paraphrase is rejected, or None when it is usable."""
    t = text.strip()
    if not t:
        return "empty"
    if "\n" in t:
        return "multiline"
    if len(t) > max_chars or len(t) > 3 * len(original):
        return "too_long"
    why = date_like(t)
    if why:
        return why
    if t.strip(" .").lower() == original.strip(" .").lower():
        return "unchanged"
    return None


def paraphrase_queries(
    queries: Sequence[RollbackQuery],
    backbone: Backbone,
    *,
    params: GenerationParams | None = None,
    max_chars: int = 300,
    keep_template: bool = False,
) -> list[RollbackQuery]:
    """Paraphrase template queries with one batched ``backbone.generate`` call.

    Accepted rewrites get ``source="paraphrase"`` and keep the template text in
    ``meta["template_text"]``; rejected ones keep the template with the reason in
    ``meta["paraphrase_rejected"]``. With ``keep_template`` the template queries are kept
    too and paraphrases get the id suffix ``/para``.
    """
    params = params or GenerationParams(max_new_tokens=96)
    todo = [q for q in queries if q.source == "template"]
    requests = [
        GenerationRequest(
            messages=(ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", q.text)),
            params=params,
            task="paraphrase",
            question=q.text,
        )
        for q in todo
    ]
    outputs = [as_completion(c).text for c in backbone.generate(requests)] if requests else []
    if len(outputs) != len(requests):
        raise RuntimeError(
            f"backbone {backbone.name!r} returned {len(outputs)} outputs for {len(requests)} requests"
        )
    rewritten: dict[str, RollbackQuery] = {}
    for q, out in zip(todo, outputs, strict=True):
        why = validate_paraphrase(out, q.text, max_chars=max_chars)
        meta = {**q.meta, "paraphrase_backbone": f"{backbone.name}:{backbone.model}"}
        if why is None:
            qid = f"{q.query_id}/para" if keep_template else q.query_id
            rewritten[q.query_id] = q.model_copy(
                update={
                    "query_id": qid,
                    "text": out.strip(),
                    "source": "paraphrase",
                    "meta": {**meta, "template_text": q.text},
                    "probes": [_reworded(p, q.query_id, qid, out.strip()) for p in q.probes],
                },
                deep=True,
            )
        elif not keep_template:
            rewritten[q.query_id] = q.model_copy(
                update={"meta": {**meta, "paraphrase_rejected": why}}, deep=True
            )
    result: list[RollbackQuery] = []
    for q in queries:
        new = rewritten.get(q.query_id)
        if keep_template:
            result.append(q)
            if new is not None:
                result.append(new)
        else:
            result.append(new if new is not None else q)
    return result


def _reworded(probe: Probe, old_id: str, new_id: str, text: str) -> Probe:
    """``probe`` under the paraphrased query's id; a summary probe's headline words also
    lose those the new wording states (as they lost the template's)."""
    update: dict[str, object] = {"probe_id": probe.probe_id.replace(old_id, new_id, 1)}
    words = probe.meta.get("last_session_words")
    if words is not None:
        names = probe.meta.get("speakers") or ()
        update["meta"] = {
            **probe.meta,
            "last_session_words": last_session_words(words, text, names),
        }
    return probe.model_copy(update=update, deep=True)
