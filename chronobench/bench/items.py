"""The in-memory item index against the backend's ``match_items``
(``python -m chronobench bench items``): agreement and speed on LoCoMo.

Each LoCoMo conversation becomes one store (one commit per session, one item per
turn, ``"[date] speaker: text"``). Each state a generation cell reads is made as a
cell makes it: a copy of the full store rolled back (truncate to 3/4, 1/2 and 1/4 of
the sessions, revert to 1/2), beside the full store itself. At every state every
question of the conversation goes through both the index and ``match_items`` (depth
100, the store's default); the lists (span ids, order, scores) must be identical. Then
the speed of one search: ``match_items`` alone, the index alone, and the store's
lexical and hybrid ``search`` with the backend's ranking (before) and the index
(after), all in this one run; and what a state costs: copy + rollback, and building
its index from the process-wide token memo.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEPTH = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's arguments."""
    parser.add_argument(
        "--locomo",
        type=Path,
        default=None,
        help="locomo10.json (default: $CHRONOBENCH_LOCOMO)",
    )
    parser.add_argument(
        "--conversations", type=int, default=None, help="first N conversations (default: all)"
    )
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=["sqlite", "postgres"],
        default=["sqlite"],
        help="store backends, one after the other (default: sqlite)",
    )
    parser.add_argument(
        "--pg-conversations",
        type=int,
        default=1,
        help="conversations checked on PostgreSQL (default: 1)",
    )
    parser.add_argument(
        "--pg-url",
        default=None,
        help="PostgreSQL server (default: $CHRONOBENCH_PG_URL, else a throwaway cluster)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timing passes (default: 3)")


def _conversations(path: Path, limit: int | None) -> list[tuple[list[dict], list[str]]]:
    """Per conversation: one write per session, and its questions."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for conv in data[:limit]:
        turns = conv["conversation"]
        writes, n = [], 0
        sessions = sorted(
            (int(k.split("_")[1]), k)
            for k in turns
            if k.startswith("session_") and k.count("_") == 1 and turns[k]
        )
        for s, key in sessions:
            date = turns.get(f"{key}_date_time", "")
            ops = []
            for t in turns[key]:
                n += 1
                text = f"[{date}] {t['speaker']}: {t['text']}"
                ops.append({"op": "add", "item_id": f"t{n}", "text": text})
            writes.append({"ops": ops, "summary": f"session {s}", "source": "d", "reason": "r"})
        out.append((writes, [q["question"] for q in conv["qa"]]))
    return out


@contextmanager
def _backend_ranking() -> Iterator[None]:
    """The store's item search with the backend's ranking (what it did before the index)."""
    from chronomem import reads

    kept = reads.match_items
    reads.match_items = lambda db, sc, terms, k, cache, items: db.match_items(  # type: ignore[assignment]
        sc.scope_id, terms, k
    )
    try:
        yield
    finally:
        reads.match_items = kept  # type: ignore[assignment]


def _per_call(fn: Callable[[str], Any], queries: list[str], repeat: int) -> float:
    """Best-of-``repeat`` mean milliseconds per query."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for q in queries:
            fn(q)
        best = min(best, (time.perf_counter() - t) / max(len(queries), 1))
    return 1000 * best


def _states(mem: Any, n_sessions: int, vids: list[int]) -> Iterator[tuple[str, Any, float]]:
    """(name, store, seconds to copy and roll back) per state; copies are closed after."""
    yield "head", mem, 0.0
    states = (("t3/4", 0.75, "truncate"), ("t1/2", 0.5, "truncate"))
    for _name, frac, mode in (*states, ("t1/4", 0.25, "truncate"), ("r1/2", 0.5, "revert")):
        t = time.perf_counter()
        work = mem.clone()
        work.rollback_to_version("a", "u", vids[max(int(n_sessions * frac) - 1, 0)], mode=mode)
        took = time.perf_counter() - t
        try:
            yield _name, work, took
        finally:
            work.close()


def _state(store: Any, questions: list[str], repeat: int, out: dict, times: dict) -> None:
    """Agreement and timings at one state (``out`` counts, ``times`` lists gain)."""
    from chronomem import itemindex as ii
    from chronomem import reads
    from chronomem.query import fts_terms

    db = store.backend
    sc = reads.find_scope(db, "a", "u")
    items = store._caches.items.rows(db, sc)
    t = time.perf_counter()
    ii.build(items)  # as a state's first search builds it (the token memo is warm)
    times["build"].append(1000 * (time.perf_counter() - t))
    terms = {q: fts_terms(q) for q in questions}
    out["states"] += 1
    for tm in terms.values():
        want = db.match_items(sc.scope_id, tm, DEPTH)
        got = reads.match_items(db, sc, tm, DEPTH, store._caches.items, items)
        out["lists"] += 1
        out["identical"] += got == want
        out["fallback"] += bool(tm) and ii.single_tokens(tm) is None

    def backend(q: str) -> Any:
        return db.match_items(sc.scope_id, terms[q], DEPTH)

    def index(q: str) -> Any:
        return reads.match_items(db, sc, terms[q], DEPTH, store._caches.items, items)

    times["backend"].append(_per_call(backend, questions, repeat))
    times["index"].append(_per_call(index, questions, repeat))
    for mode, before, after in (("lexical", "lex0", "lex1"), ("hybrid", "hyb0", "hyb1")):

        def search(q: str, mode: str = mode) -> Any:
            return store.search("a", "u", q, k=8, mode=mode)

        with _backend_ranking():
            times[before].append(_per_call(search, questions, repeat))
        times[after].append(_per_call(search, questions, repeat))


def _conversation(
    mem: Any, writes: list[dict], questions: list[str], repeat: int
) -> dict[str, Any]:
    """Agreement and timings over the states of one conversation's store."""
    vids = mem.commit_many("a", "u", writes)
    out: dict[str, Any] = {"lists": 0, "identical": 0, "fallback": 0, "states": 0}
    keys = ("backend", "index", "lex0", "lex1", "hyb0", "hyb1", "copy", "build")
    times: dict[str, list[float]] = {k: [] for k in keys}
    for _, store, took in _states(mem, len(writes), vids):
        if took:
            times["copy"].append(1000 * took)
        _state(store, questions, repeat, out, times)
    cold = times["build"].pop(0)  # the first state tokenizes the conversation's texts
    out.update({k: statistics.mean(v) for k, v in times.items() if v}, cold=cold)
    return out


def _open(backend: str, pg_url: str | None) -> Callable[[], Any]:
    from chronomem import ChronoMem, HashEmbedder

    if backend == "postgres":
        from chronomem.pg.temporary import temporary_store

        return lambda: temporary_store(pg_url, embedder=HashEmbedder())
    return lambda: ChronoMem(":memory:", embedder=HashEmbedder())


def run(
    locomo: Path,
    conversations: int | None,
    backends: tuple[str, ...],
    pg_conversations: int,
    pg_url: str | None,
    repeat: int,
) -> int:
    """Print agreement and speed per backend and conversation; 1 when a list differed."""
    convs = _conversations(locomo, conversations)
    cluster = None
    if "postgres" in backends and not pg_url:
        from chronomem.pg.cluster import Cluster

        cluster = Cluster().start()
        pg_url = cluster.url
        print(f"PostgreSQL: a throwaway local cluster at {pg_url}")
    failed = False
    try:
        for backend in backends:
            rows = []
            todo = convs[:pg_conversations] if backend == "postgres" else convs
            print(f"\n{backend}: {len(todo)} conversation(s), 5 states each, depth {DEPTH}")
            head = (
                "conv  lists  identical  fallback  match_items  index  | lexical search "
                "before after | hybrid before after | copy+rollback  build  cold (ms)"
            )
            print(head)
            for i, (writes, questions) in enumerate(todo):
                mem = _open(backend, pg_url)()
                try:
                    r = _conversation(mem, writes, questions, repeat)
                finally:
                    mem.close()
                rows.append(r)
                print(
                    f"{i:>4} {r['lists']:>6} {r['identical']:>10} {r['fallback']:>9} "
                    f"{r['backend']:>10.3f} {r['index']:>8.3f}  | {r['lex0']:>13.3f} "
                    f"{r['lex1']:>5.3f} | {r['hyb0']:>13.3f} {r['hyb1']:>5.3f} | "
                    f"{r['copy']:>13.2f} {r['build']:>6.2f} {r['cold']:>5.2f}"
                )
            lists = sum(r["lists"] for r in rows)
            same = sum(r["identical"] for r in rows)
            failed |= same != lists

            def mean(key: str, rows: list[dict] = rows) -> float:
                return statistics.mean(r[key] for r in rows)

            print(
                f"{backend}: {same}/{lists} lists identical ({100 * same / max(lists, 1):.1f}%), "
                f"{sum(r['fallback'] for r in rows)} answered by the backend (phrase terms); "
                f"ms per search: match_items {mean('backend'):.3f} -> index {mean('index'):.3f} "
                f"({mean('backend') / mean('index'):.1f}x); store.search lexical "
                f"{mean('lex0'):.3f} -> {mean('lex1'):.3f}, hybrid {mean('hyb0'):.3f} -> "
                f"{mean('hyb1'):.3f}; per state: copy+rollback {mean('copy'):.2f} ms, index "
                f"build {mean('build'):.2f} ms ({mean('cold'):.2f} ms at a conversation's first "
                "state, which tokenizes its texts)"
            )
    finally:
        if cluster is not None:
            cluster.stop()
    return 1 if failed else 0


def main(args: argparse.Namespace) -> int:
    """Entry point of ``bench items``."""
    locomo = args.locomo or os.environ.get("CHRONOBENCH_LOCOMO")
    if not locomo or not Path(locomo).is_file():
        raise SystemExit(
            "bench items: pass --locomo PATH to locomo10.json or set $CHRONOBENCH_LOCOMO"
        )
    if args.repeat < 1 or args.pg_conversations < 0:
        raise SystemExit("--repeat: at least 1; --pg-conversations: at least 0")
    backends = tuple(dict.fromkeys(args.backend))
    pg_url = args.pg_url or os.environ.get("CHRONOBENCH_PG_URL") or None
    return run(
        Path(locomo), args.conversations, backends, args.pg_conversations, pg_url, args.repeat
    )
