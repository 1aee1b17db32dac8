"""What the ADK path costs (``python -m chronobench bench adk``).

For each size N it fills a file-backed :class:`ChronoMemMemoryService` with N
memories (sessions of 10 events, one version per session) and a raw
:class:`~chronomem.ChronoMem` with the same writes, then times, at that
size:

- add: one ``add_session_to_memory`` with one new event vs one ``store.commit``;
- search: ``search_memory`` (the service's keyword matching over HEAD) vs the
  store's own ``search`` (hybrid FTS5 + dense, and lexical only);
- rollback preview: ``rollback(preview=True)`` vs ``plan_rollback_by_nl_query``;
- rollback apply: ``rollback_to_version(mode="revert")`` vs ``store.rollback_to_version``.

Service calls go through ``asyncio`` like an ADK app's (each runs in a worker thread),
so the figures include that overhead. Medians and 95th percentiles in milliseconds.

``--rq1`` also replays LoCoMo's session-level rollback requests through the
service's ``rollback(preview=True)`` and the store's plan, and reports R@1 of both
(a refused request counts as a miss) and how often they agree.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_NAMES = ["Ann", "Bob", "Caro", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
_VERBS = ["visited", "talked about", "bought", "planned", "cooked", "read about", "painted"]
_THINGS = ["a red kite", "sushi", "the museum", "a used bike", "tax forms", "jazz records"]
_THINGS += ["a camping trip", "pottery", "a chess set", "the marathon", "a violin", "tomatoes"]
_PLACES = ["Oslo", "Lima", "Kyoto", "Porto", "Austin", "Cairo", "Hanoi", "Quito", "Riga"]
APP, USER = "bench", "user"
PER_SESSION = 10


def _text(rng: random.Random, i: int) -> str:
    return (
        f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.choice(_THINGS)} in "
        f"{rng.choice(_PLACES)} (note {i})"
    )


def _event(event_id: str, text: str) -> Any:
    from google.adk.events import Event
    from google.genai import types

    return Event(
        id=event_id,
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


def _session(sid: str, events: list[Any]) -> Any:
    from google.adk.sessions import Session

    return Session(id=sid, app_name=APP, user_id=USER, events=events)


def _ms(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))]


def _fill(service: Any, store: Any, n: int, rng: random.Random, loop: Any) -> None:
    texts = [_text(rng, i) for i in range(n)]
    for s in range(0, n, PER_SESSION):
        chunk = range(s, min(n, s + PER_SESSION))
        session = _session(f"s{s}", [_event(f"e{i}", texts[i]) for i in chunk])
        loop.run_until_complete(service.add_session_to_memory(session))
        store.commit(
            APP,
            USER,
            [{"op": "add", "item_id": f"e{i}", "text": texts[i]} for i in chunk],
            source="adk",
            reason="bench",
            labels={"session": f"s{s}"},
        )


def _size(n: int, embedder: Any, repeat: int, workdir: Path) -> list[tuple[str, str, str]]:
    from chronomem import ChronoMem
    from chronomem.adk import ChronoMemMemoryService

    rng = random.Random(n)
    loop = asyncio.new_event_loop()
    service = ChronoMemMemoryService(str(workdir / f"svc{n}.db"), embedder=embedder)
    store = ChronoMem(str(workdir / f"raw{n}.db"), embedder=embedder)
    t = time.perf_counter()
    _fill(service, store, n, rng, loop)
    fill_s = time.perf_counter() - t
    rows: list[tuple[str, str, str]] = []

    def fmt(p: tuple[float, float]) -> str:
        return f"{p[0]:.2f} / {p[1]:.2f}"

    # Both sides get the same new memories, so later figures compare equal contents.
    extra = [_text(rng, n + i) for i in range(repeat)]
    svc_i, raw_i = iter(range(repeat)), iter(range(repeat))

    def svc_add() -> None:
        i = next(svc_i)
        session = _session(f"add{i}", [_event(f"a{i}", extra[i])])
        loop.run_until_complete(service.add_session_to_memory(session))

    def raw_add() -> None:
        i = next(raw_i)
        store.commit(
            APP,
            USER,
            [{"op": "add", "item_id": f"a{i}", "text": extra[i]}],
            source="adk",
            reason="bench",
            labels={"session": f"add{i}"},
        )

    rows.append(("add (1 event)", fmt(_ms(svc_add, repeat)), fmt(_ms(raw_add, repeat))))
    queries = [f"{rng.choice(_THINGS)} {rng.choice(_PLACES)}" for _ in range(repeat)]
    qi = iter(queries * 3)

    def svc_search() -> None:
        loop.run_until_complete(service.search_memory(app_name=APP, user_id=USER, query=next(qi)))

    svc = _ms(svc_search, repeat)
    hybrid = _ms(lambda: store.search(APP, USER, next(qi), k=10), repeat)
    lexical = _ms(lambda: store.search(APP, USER, next(qi), k=10, mode="lexical"), repeat)
    rows.append(("search", fmt(svc), f"{fmt(hybrid)} hybrid; {fmt(lexical)} lexical"))
    requests = [f"undo what I said about {q}" for q in queries]
    ri = iter(requests * 2)

    refused = {"service": 0, "store": 0}

    def svc_preview() -> None:
        try:
            loop.run_until_complete(
                service.rollback(app_name=APP, user_id=USER, request=next(ri), preview=True)
            )
        except ValueError:  # an uncertain request: it still cost the planning
            refused["service"] += 1

    def raw_plan() -> None:
        try:
            store.plan_rollback_by_nl_query(APP, USER, next(ri))
        except ValueError:
            refused["store"] += 1

    svc_p, raw_p = fmt(_ms(svc_preview, repeat)), fmt(_ms(raw_plan, repeat))
    note = f" ({refused['service']}/{repeat} refused)", f" ({refused['store']}/{repeat} refused)"
    rows.append(("rollback preview", svc_p + note[0], raw_p + note[1]))
    svc_target = service.store.versions(APP, USER)[1].version_id
    raw_target = store.versions(APP, USER)[1].version_id

    def svc_revert() -> None:
        loop.run_until_complete(
            service.rollback_to_version(app_name=APP, user_id=USER, version=svc_target)
        )

    def raw_revert() -> None:
        store.rollback_to_version(APP, USER, raw_target, mode="revert")

    reps = max(3, repeat // 5)  # each revert rewrites ~N items: fewer repeats
    rows.append(("rollback apply (revert)", fmt(_ms(svc_revert, reps)), fmt(_ms(raw_revert, reps))))
    rows.insert(0, ("fill (N memories)", f"{fill_s:.1f} s (both)", ""))
    service.close()
    store.close()
    loop.close()
    return rows


def run(sizes: Sequence[int], embedder: str = "hash", repeat: int = 30) -> list[dict[str, Any]]:
    """Print the latency table for each size; returns the rows."""
    from chronomem import HashEmbedder, resolve_embedder

    emb = HashEmbedder() if embedder == "hash" else resolve_embedder(embedder)
    out = []
    print(f"bench adk: embedder={embedder}, {repeat} calls per figure, ms p50 / p95\n")
    print("| memories | operation | ADK service | raw store |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="chronobench-adk-") as tmp:
        for n in sizes:
            for op, svc, raw in _size(n, emb, repeat, Path(tmp)):
                print(f"| {n} | {op} | {svc} | {raw} |", flush=True)
                out.append({"memories": n, "operation": op, "service": svc, "store": raw})
    return out


def rq1(data_dir: str = "data/built") -> dict[str, Any]:
    """R@1 on LoCoMo session-level requests: ``adk_chronomem`` vs ``chronomem``.

    Both systems run as in the benchmark (same store settings as the default run:
    MiniLM, hybrid fusion, the offline reranker); a refused request is a miss.
    """
    from chronobench.protocols import public_writes
    from chronobench.systems import SystemContext, create_system
    from chronobench.systems.stores import StoreProvider
    from chronomem import ChronoMemError, DeltaReranker

    built = _locomo_session(data_dir)
    provider = StoreProvider(embedder="minilm", reranker=DeltaReranker(), max_cached=1)
    systems = {
        name: create_system(name, SystemContext(stores=provider))
        for name in ("adk_chronomem", "chronomem")
    }
    by_stream: dict[str, list[Any]] = {}
    for q in built.queries:
        by_stream.setdefault(q.stream_id, []).append(q)
    hits = dict.fromkeys(systems, 0)
    refused = dict.fromkeys(systems, 0)
    agree = n = 0
    t0 = time.perf_counter()
    for stream in built.streams:
        queries = by_stream.get(stream.stream_id, [])
        writes = public_writes(stream)
        for system in systems.values():
            system.ingest(writes)
        for q in queries:
            n += 1
            chosen = {}
            for name, system in systems.items():
                session = system.open_session()
                try:
                    chosen[name] = session.rollback(q.text).selected_version
                except ChronoMemError:
                    chosen[name] = None
                finally:
                    session.close()
                refused[name] += chosen[name] is None
                hits[name] += chosen[name] == q.target_version
            agree += chosen["adk_chronomem"] == chosen["chronomem"]
    for system in systems.values():
        system.close()
    provider.close()
    secs = time.perf_counter() - t0
    res = {
        "n": n,
        "r1": {k: v / max(n, 1) for k, v in hits.items()},
        "refused": refused,
        "agreement": agree / max(n, 1),
        "seconds": round(secs, 1),
    }
    print(
        f"LoCoMo session RQ1, {n} requests: R@1 adk_chronomem "
        f"{100 * res['r1']['adk_chronomem']:.1f}, chronomem {100 * res['r1']['chronomem']:.1f}; "
        f"same version chosen {100 * res['agreement']:.1f}%; refused {refused} ({secs:.0f} s)"
    )
    return res


def _locomo_session(data_dir: str) -> Any:
    """The built LoCoMo session-level benchmark (built on first use), with LoCoMo's
    build parameters: its params model's defaults (data_builders/locomo/params.py)."""
    from chronobench.data.io import load_built
    from data_builders import LOCOMO, build_dataset

    folder = build_dataset(
        LOCOMO, granularity="session", source=None, out_dir=Path(data_dir) / "bench-adk"
    )
    return load_built(folder)


def add_arguments(parser: Any) -> None:
    """The options of ``bench adk``."""
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1000, 10000],
        help="memories in the service (default: 1000 10000)",
    )
    parser.add_argument(
        "--embedder",
        choices=["hash", "minilm"],
        default="hash",
        help="store embedder: hash (fast, default) or minilm (the packaged model)",
    )
    parser.add_argument("--repeat", type=int, default=30, help="calls per figure (default 30)")
    parser.add_argument(
        "--rq1",
        action="store_true",
        help="also replay LoCoMo session-level requests: R@1 adk_chronomem vs chronomem",
    )
    parser.add_argument("--data-dir", default="data/built", help="where LoCoMo is built")


def main(args: Any) -> int:
    """Run ``bench adk`` with parsed ``args``; returns the exit code."""
    if any(n < PER_SESSION for n in args.sizes):
        raise SystemExit(f"--sizes: each size needs at least {PER_SESSION} memories")
    if args.repeat < 3:
        raise SystemExit("--repeat: at least 3 calls per figure")
    try:
        import google.adk  # noqa: F401
    except ImportError:
        raise SystemExit("bench adk needs Google ADK: pip install 'chronobench[adk]'") from None
    run(args.sizes, args.embedder, args.repeat)
    if args.rq1:
        rq1(args.data_dir)
    return 0
