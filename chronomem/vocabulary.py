"""A request's words read against the store's own vocabulary, before retrieval.

Two readings, both decided by which words the memory's descriptors hold:

- a **misspelt** content word no descriptor holds is read back to the near spelling the
  most descriptors hold (:func:`respell_unknown`: "runnin" -> "running");
- a word or phrase the memory never used is given the **related words** WordNet lists
  for it that the memory does use (:func:`read_related`: "glasshouse" -> "greenhouse",
  "angling" -> "fishing", "the Eternal City" -> "rome"). A word the memory holds is not
  expanded (retrieval already reads it), nor is a word of many senses (which one is
  meant is not known: its other senses' words would only add noise).

Both are shown in the plan (``respelt``, ``related``), so a preview says which words were
read as which. Without WordNet (:mod:`chronomem.lexicon`) the second reading is skipped.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from chronomem import lexicon
from chronomem import parse as ps
from chronomem.backend import Backend
from chronomem.cues import near_spellings
from chronomem.fts5_tokenizer import tokenizer
from chronomem.nocontent import said_in_passing
from chronomem.query import REQUEST_WORDS
from chronomem.types import Scope
from chronomem.words import RETRIEVAL_STOPWORDS

__all__ = [
    "RELATED_PER_WORD",
    "RESPELL_MAX",
    "RESPELL_MIN",
    "document_counts",
    "read_against",
    "read_related",
    "respell_unknown",
]

RESPELL_MIN = 4  # shorter words have too many near spellings to read one back safely
RESPELL_MAX = 3  # unknown words read back per request (each costs one vocabulary lookup)
RELATED_MIN = 3  # shorter words are abbreviations WordNet reads as something else
MAX_SENSES = 2  # a word with more senses is too ambiguous to expand
RELATED_PER_WORD = 3  # related words kept per word or phrase, in WordNet's sense order
#: A related word held by more than this share of descriptors says nothing about which
#: one is meant ("go", "make", "time"): it is left out.
RELATED_MAX_SHARE = 0.2
_ALPHA_WORD = re.compile(r"(?<![\w'-])[A-Za-z]+(?![\w'-])")
# Related words join the clause after this mark, so no pair of them reads as a compound
# the request wrote.
_JOIN = " | "


def document_counts(
    db: Backend, sc: Scope, words: Sequence[str], *, content_only: bool = False
) -> dict[str, int]:
    """How many descriptors hold each word, as the lexical index tokenizes it (a word it
    makes several tokens of counts 0). ``content_only``: a word whose stem is a stopword
    or a request word counts 0 too (a slip is never read back to one)."""
    toks = tokenizer().tokens(list(words))
    single = {
        w: t[0]
        for w, t in zip(words, toks, strict=True)
        if len(t) == 1
        and not (content_only and (t[0] in RETRIEVAL_STOPWORDS or t[0] in REQUEST_WORDS))
    }
    stems = sorted(set(single.values()))
    if not stems:
        return dict.fromkeys(words, 0)
    with db.lock:
        _, _, hits = db.descriptor_stats(sc.scope_id, stems)
    held = dict(zip(stems, hits, strict=True))
    return {w: int(held.get(single[w], 0)) if w in single else 0 for w in words}


def respell_unknown(db: Backend, sc: Scope, parsed: ps.ParsedRequest) -> ps.ParsedRequest:
    """``parsed`` with each content word that no descriptor holds read back to the
    spelling it may be a slip for (:func:`chronomem.cues.near_spellings`) that the most
    descriptors hold ("runnin" -> "running", "frends" -> "friends", "neighbour" ->
    "neighbor"); a word with no held near spelling stays. The store's own vocabulary
    decides among the near spellings, so a name or term only this memory uses is read
    back too; a word it holds is never touched. The cost is two vocabulary lookups per
    request with an unknown word, whatever the history's length."""
    content = set(parsed.content)
    words = [
        w
        for w in dict.fromkeys(_ALPHA_WORD.findall(parsed.clause))
        if len(w) >= RESPELL_MIN and w.lower() in content
    ]
    if not words:
        return parsed
    lowered = sorted({w.lower() for w in words})
    counts = document_counts(db, sc, lowered)
    unknown = [w for w in lowered if counts[w] == 0][:RESPELL_MAX]
    if not unknown:
        return parsed
    near = {w: [c for c in near_spellings(w) if len(c) >= RESPELL_MIN] for w in unknown}
    held = document_counts(
        db, sc, sorted({c for cs in near.values() for c in cs}), content_only=True
    )
    clause, pairs = parsed.clause, []
    for w in unknown:
        # the most held; ties: the first in alphabetical order (deterministic)
        best = min(near[w], key=lambda c: (-held[c], c), default="")
        if not best or held[best] == 0:
            continue
        clause = re.sub(rf"(?<![\w'-]){w}(?![\w'-])", best, clause, flags=re.IGNORECASE)
        pairs.append((w, best))
    if not pairs:
        return parsed
    return dataclasses.replace(parsed, clause=clause, respelt=(*parsed.respelt, *pairs))


def _sources(parsed: ps.ParsedRequest, counts: dict[str, int], wn: lexicon.WordNet) -> list[str]:
    """What to look up: phrases of two or three words the clause writes together that
    WordNet lists as one lemma, written as a name ("the Windy City": its words may be held
    one by one, the name is not) or with a word the memory does not hold ("fender
    bender"), then each content word the memory does
    not hold; each word at most once, longest first. Only words that count as evidence
    (not a courtesy formula or an aside: "thanks for being so patient") are read."""
    content = set(parsed.evidence)
    written = _ALPHA_WORD.findall(parsed.clause)
    words = [w.lower() for w in written]
    out: list[str] = []
    used: set[int] = set()
    for n in (3, 2):
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            span = set(range(i, i + n))
            if span & used or run[0] not in content or run[-1] not in content:
                continue
            # A phrase of held words ("laid off", "extended family") already matches as
            # written; a capitalised one is a name ("the Windy City") that may not.
            named = all(w[:1].isupper() for w in written[i : i + n])
            if not named and all(counts.get(w, 0) > 0 for w in run):
                continue
            if not wn.knows(" ".join(run)):
                continue
            out.append(" ".join(run))
            used |= span
    for i, w in enumerate(words):
        if i in used or w not in content or len(w) < RELATED_MIN or counts.get(w, 0) > 0:
            continue
        if said_in_passing(w) or w in out:
            continue
        out.append(w)
    return out


def read_related(
    db: Backend, sc: Scope, parsed: ps.ParsedRequest, wordnet: lexicon.WordNet | None = None
) -> ps.ParsedRequest:
    """``parsed`` with the related words (WordNet synonyms and direct hypernyms) the
    memory holds added to its clause, for each content word the memory does not hold and
    each phrase WordNet lists as one lemma (:func:`_sources`), when it has at most
    :data:`MAX_SENSES` senses; at most :data:`RELATED_PER_WORD` per source, none held by
    more than :data:`RELATED_MAX_SHARE` of the descriptors. Unchanged when nothing is
    unknown, nothing related is held, or no WordNet is installed."""
    wn = lexicon.load() if wordnet is None else wordnet
    if wn is None:
        return parsed
    lowered = sorted({w.lower() for w in _ALPHA_WORD.findall(parsed.clause)})
    if not lowered:
        return parsed
    counts = document_counts(db, sc, lowered)
    sources = _sources(parsed, counts, wn)
    if not sources:
        return parsed
    # Synonyms first; a word none of whose synonyms the memory holds is read as what it
    # is a kind of ("angling" -> "fishing"), a wider net, so only then and only for a word
    # of one sense.
    narrow = {s: wn.related(s, max_senses=MAX_SENSES) for s in sources}
    broad = {s: wn.related(s, max_senses=1, broader=True) for s in sources}
    candidates = sorted(
        {
            w
            for table in (narrow, broad)
            for rel in table.values()
            for phrase in rel
            for w in phrase.split()
            if len(w) >= RELATED_MIN and w.isalpha()
        }
    )
    if not candidates:
        return parsed
    held = document_counts(db, sc, candidates, content_only=True)
    with db.lock:
        total, _, _ = db.descriptor_stats(sc.scope_id, [])
    limit = max(1, int(RELATED_MAX_SHARE * max(int(total), 1)))
    asked = set(lowered)
    pairs: list[tuple[str, tuple[str, ...]]] = []
    added: set[str] = set()
    for s in sources:
        keep: list[str] = []
        for table in (narrow, broad):
            for phrase in table[s]:
                words = [w for w in phrase.split() if w in held]
                if words and all(0 < held[w] <= limit for w in words):
                    keep.extend(
                        w for w in words if w not in asked and w not in added and w not in keep
                    )
                if len(keep) >= RELATED_PER_WORD:
                    break
            if keep:
                break
        keep = keep[:RELATED_PER_WORD]
        if keep:
            pairs.append((s, tuple(keep)))
            added.update(keep)
    if not pairs:
        return parsed
    clause = parsed.clause + "".join(_JOIN + " ".join(ws) for _, ws in pairs)
    return dataclasses.replace(parsed, clause=clause, related=(*parsed.related, *pairs))


def read_against(db: Backend, sc: Scope, parsed: ps.ParsedRequest) -> ps.ParsedRequest:
    """``parsed`` read against the store's vocabulary: slips respelt, then related words
    added for what the memory never wrote (this module's two readings, in that order)."""
    return read_related(db, sc, respell_unknown(db, sc, parsed))
