"""The Python BM25 (:mod:`chronomem.bm25`) and the backends' agree on one corpus:
PostgreSQL's formula in SQL (:mod:`chronomem.pg.lexical`) and SQLite FTS5's
``bm25()``. The Python side is computed here from the raw texts (FTS5's tokenizer, the
corpus's own statistics), not through the store's in-memory indexes, so it checks the
module itself. Stated rounding: scores equal to 12 decimal places; rankings (span ids,
ties to the lower span id) equal."""

from __future__ import annotations

import random

import numpy as np
import pytest

from chronomem import bm25, reads
from chronomem.fts5_tokenizer import tokenizer
from chronomem.query import fts_terms
from tests._memory_fixtures import APP, USER, add, hash_store

pytestmark = pytest.mark.usefixtures("each_backend")

WORDS = "oslo lisbon nurse hospital beagle puppy sushi kite museum jazz cooking cooked".split()
QUERIES = [
    "oslo",
    "kite jazz",
    "sushi cooking cooked",  # "cooking" and "cooked" stem alike: two phrases, one token
    "beagle puppy museum hospital",
    "oslo oslo lisbon",
    "zzz oslo",
]
PLACES = 12


def _corpus(n: int = 80, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 10))) for _ in range(n)]


def _python_top(texts: list[str], tokens: list[str], k: int) -> list[tuple[int, float]]:
    """(document row, score) best first, from the module alone."""
    rows, lengths = tokenizer().counts(texts)
    postings: dict[str, tuple[list[int], list[float]]] = {}
    for term, doc, count in rows:
        docs, tfs = postings.setdefault(term, ([], []))
        docs.append(doc)
        tfs.append(float(count))
    dlen = np.asarray(lengths, dtype=np.float64) + 1.0  # the scope-tag column's token
    n_docs, n_tokens = len(texts), int(dlen.sum())
    present, hits = [], []
    for tok in tokens:
        got = postings.get(tok)
        present.append(None if got is None else (np.asarray(got[0]), np.asarray(got[1])))
        hits.append(0 if got is None else len(got[0]))
    norm = bm25.length_norm(dlen, n_tokens / n_docs)
    found, scores = bm25.score(n_docs, present, hits, n_docs, norm)
    order = bm25.best_order(found, scores, k)
    return [(int(found[i]), float(scores[i])) for i in order]


def test_python_bm25_agrees_with_the_backend() -> None:
    texts = _corpus()
    mem = hash_store()
    mem.commit_many(
        APP,
        USER,
        [{"ops": [add(f"d{i}", t)], "source": "t", "reason": "r"} for i, t in enumerate(texts)],
    )
    db = mem.backend
    sc = reads.require_scope(db, APP, USER)
    span_of = {
        item: int(span)
        for span, item in db.conn.execute(
            "SELECT span_id, item_id FROM spans WHERE scope_id = ?", (sc.scope_id,)
        ).fetchall()
    }
    spans = [span_of[f"d{i}"] for i in range(len(texts))]
    assert spans == sorted(spans)  # row order is span order: ties break alike
    compared = 0
    for query in QUERIES:
        terms = fts_terms(query)
        tokens = [p[0] for p in tokenizer().phrases(terms)]
        for k in (1, 3, 10, 1000):
            want = db.match_items(sc.scope_id, terms, k)
            got = [(spans[row], s) for row, s in _python_top(texts, tokens, k)]
            assert [s for s, _ in got] == [s for s, _ in want], (query, k)
            assert [round(x, PLACES) for _, x in got] == [round(x, PLACES) for _, x in want]
            compared += bool(want)
    assert compared >= 4 * (len(QUERIES) - 1)  # every query but none matched something
    mem.close()
