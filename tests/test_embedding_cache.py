"""Persistent embedding cache: embed once, reuse across caches/processes, forget for real."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

from chronomem.embedders import EmbeddingCache, HashEmbedder, model_id
from chronomem.vector_cache import PersistentVectors, text_key


class Counting(HashEmbedder):
    """A hash embedder that records every text it is asked to embed."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim=dim)
        self.seen: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().encode(texts)


def _file_bytes(path: Path) -> bytes:
    """Everything SQLite keeps for ``path``: the database, its WAL and shared memory."""
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out += p.read_bytes()
    return out


def test_each_text_embedded_once_across_caches(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    first = Counting()
    cache = EmbeddingCache(first)
    cache.attach(path)
    texts = ["alpha beta", "gamma delta", "alpha beta"]
    vecs = cache.encode(texts)
    assert first.seen == ["alpha beta", "gamma delta"]  # duplicates inside a call: once
    cache.encode(["gamma delta"])
    assert len(first.seen) == 2  # memory hit

    # A new process (here: a new cache and embedder object) reads the file instead.
    second = Counting()
    again = EmbeddingCache(second)
    again.attach(path)
    np.testing.assert_array_equal(again.encode(texts), vecs)
    assert second.seen == []
    assert again.stats["disk_hits"] == 2 and again.stats["embedded"] == 0


def test_text_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    cache = EmbeddingCache(Counting())
    cache.attach(path)
    secret = "the vault code is zebra-4471-quokka"
    cache.encode([secret])
    cache.persistent.close()
    blob = _file_bytes(path)
    assert secret.encode() not in blob
    assert text_key(secret).encode() in blob  # the content address is all that is kept


def test_forget_removes_the_vector_bytes(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    emb = Counting()
    cache = EmbeddingCache(emb)
    cache.attach(path)
    keep, drop = "keep this fact", "salary is 91234 per year"
    vecs = cache.encode([keep, drop])
    cache.forget([drop])
    store = PersistentVectors(path)
    assert store.count() == 1
    assert not store.get(cache.model_id, [text_key(drop)])
    store.close()
    cache.persistent.close()
    blob = _file_bytes(path)
    assert vecs[1].tobytes() not in blob  # zeroed (secure_delete) and out of the WAL
    assert vecs[0].tobytes() in blob
    # Forgotten means re-embedded on next use, not served from memory.
    cache.encode([drop])
    assert emb.seen.count(drop) == 2


def test_models_do_not_share_vectors(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    a, b = EmbeddingCache(Counting(dim=16)), EmbeddingCache(Counting(dim=32))
    a.attach(path)
    b.attach(path)
    assert a.model_id != b.model_id
    assert a.encode(["same text"]).shape == (1, 16)
    assert b.encode(["same text"]).shape == (1, 32)
    assert PersistentVectors(path).count() == 2


def test_unkeyable_embedder_is_not_persisted(tmp_path: Path) -> None:
    class Anonymous:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 4), dtype=np.float32)

    assert model_id(Anonymous()) is None
    cache = EmbeddingCache(Anonymous())
    cache.attach(tmp_path / "emb.sqlite")
    cache.encode(["x"])
    assert cache.persistent is None and not (tmp_path / "emb.sqlite").exists()


def test_bad_cache_folder_names_the_setting(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError, match="paths.cache_dir"):
        PersistentVectors(blocker / "sub" / "emb.sqlite")


def _writer(path: str, start: int, n: int) -> int:
    cache = EmbeddingCache(HashEmbedder(dim=32))
    cache.attach(path)
    # Overlapping ranges, many small transactions: both processes write the same keys.
    for i in range(start, start + n, 5):
        cache.encode([f"text number {j}" for j in range(i, i + 5)])
    return cache.stats["embedded"] + cache.stats["disk_hits"]


class Slow(HashEmbedder):
    """A hash embedder that takes its time, so two processes overlap."""

    def encode(self, texts: list[str]) -> np.ndarray:
        import time

        time.sleep(0.05)
        return super().encode(texts)


def _same_texts(path: str, go: float) -> int:
    import time

    cache = EmbeddingCache(Slow(dim=32))
    cache.attach(path)
    time.sleep(max(0.0, go - time.time()))  # both start together
    for i in range(0, 40, 5):
        cache.encode([f"shared text {j}" for j in range(i, i + 5)])
    return cache.stats["embedded"]


@pytest.mark.slow  # worker subprocesses
def test_two_processes_never_embed_the_same_text_twice(tmp_path: Path) -> None:
    """Parallel cells ask for the same texts at the same moment: whoever holds the
    file's compute lock embeds them, the other finds them stored."""
    import time

    path = str(tmp_path / "emb.sqlite")
    with mp.get_context("spawn").Pool(2) as pool:
        go = time.time() + 3.0
        embedded = pool.starmap(_same_texts, [(path, go), (path, go)])
    assert sum(embedded) == 40
    assert PersistentVectors(path).count() == 40


@pytest.mark.slow  # writer subprocesses
def test_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "emb.sqlite")
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_writer, [(path, 0, 300), (path, 150, 300)])
    assert results == [300, 300]
    store = PersistentVectors(path)
    assert store.count() == 450
    want = EmbeddingCache(HashEmbedder(dim=32)).encode(["text number 200"])[0]
    got = store.get(model_id(HashEmbedder(dim=32)) or "", [text_key("text number 200")])
    np.testing.assert_array_equal(next(iter(got.values())), want)


def test_store_provider_persists_beside_the_call_cache(tmp_path: Path) -> None:
    from chronobench.systems.stores import EMBEDDING_CACHE_FILE, StoreProvider
    from chronomem.embedders import shared_cache

    provider = StoreProvider(embedder="hash", cache_dir=tmp_path)
    shared_cache(provider.embedder).encode(["a descriptor"])
    assert (tmp_path / EMBEDDING_CACHE_FILE).exists()
    assert PersistentVectors(tmp_path / EMBEDDING_CACHE_FILE).count() == 1


@pytest.mark.slow
def test_warm_cache_never_loads_the_model(tmp_path: Path) -> None:
    """Token counts for windowing come from tokenizer.json; vectors from the cache."""
    from chronomem.embedders import SentenceTransformerEmbedder

    texts = ["Caroline went to the support group.", "ünïcode café 東京 🙂", "x " * 400]
    filled = SentenceTransformerEmbedder("minilm")
    first = EmbeddingCache(filled)
    first.attach(tmp_path / "emb.sqlite")
    vecs = first.encode(texts)
    assert filled._model is not None

    fresh = SentenceTransformerEmbedder("minilm")
    again = EmbeddingCache(fresh)
    again.attach(tmp_path / "emb.sqlite")
    np.testing.assert_array_equal(again.encode(texts), vecs)
    assert fresh.max_tokens == filled.max_tokens == 254
    assert [fresh.count_tokens(t) for t in texts] == [filled.count_tokens(t) for t in texts]
    assert fresh._model is None  # neither encode nor windowing needed the weights


def _claim_rows(path: Path, owner: str, at: float, keys: list[str]) -> None:
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?)", [("m", k, owner, at) for k in keys]
        )


def test_claims_split_the_missing_texts(tmp_path: Path) -> None:
    """A text another live process is computing is waited for, not computed; a dead
    claimant's text passes to the next claimer; a stored text is read."""
    import os
    import socket
    import time

    path = tmp_path / "emb.sqlite"
    store = PersistentVectors(path)
    store.put("m", [("stored", np.ones(4, np.float32))])
    host = socket.gethostname()
    _claim_rows(path, f"{host}:{os.getpid()}:1", time.time(), ["busy"])  # a live thread
    dead = mp.get_context("spawn").Process(target=int)
    dead.start()
    dead.join()
    _claim_rows(path, f"{host}:{dead.pid}:1", time.time(), ["orphan"])
    _claim_rows(path, "elsewhere:1:1", time.time() - 7200, ["old"])  # another machine, stale
    found, mine, theirs = store.claim("m", ["stored", "busy", "orphan", "old", "new"])
    assert list(found) == ["stored"]
    assert sorted(mine) == ["new", "old", "orphan"] and theirs == ["busy"]
    # Claimed now by this thread: another thread of this process waits for them.
    import threading

    seen: list[tuple[list[str], list[str]]] = []
    t = threading.Thread(target=lambda: seen.append(store.claim("m", ["new"])[1:]))
    t.start()
    t.join()
    assert seen == [([], ["new"])]
    store.release("m", mine)
    assert store.claim("m", ["new"])[1] == ["new"]


class Timed(HashEmbedder):
    """A slow hash embedder that notes when each call ran."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim=dim)
        self.spans: list[tuple[float, float]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        import time

        t0 = time.time()
        time.sleep(0.2)
        self.spans.append((t0, time.time()))
        return super().encode(texts)


def _disjoint(path: str, go: float, prefix: str) -> tuple[int, list[tuple[float, float]]]:
    import time

    embedder = Timed(dim=32)
    cache = EmbeddingCache(embedder)
    cache.attach(path)
    time.sleep(max(0.0, go - time.time()))
    for i in range(0, 40, 5):
        cache.encode([f"{prefix} {j}" for j in range(i, i + 5)])
    return cache.stats["embedded"], embedder.spans


@pytest.mark.slow  # worker subprocesses
def test_two_processes_embed_different_texts_at_once(tmp_path: Path) -> None:
    """Cells indexing different texts do not take turns on the cache: some call of one
    process runs while a call of the other does (a file-wide lock never let them)."""
    import time

    path = str(tmp_path / "emb.sqlite")
    with mp.get_context("spawn").Pool(2) as pool:
        go = time.time() + 3.0
        (n_left, left), (n_right, right) = pool.starmap(
            _disjoint, [(path, go, "left"), (path, go, "right")]
        )
    assert (n_left, n_right) == (40, 40)
    assert any(a0 < b1 and b0 < a1 for a0, a1 in left for b0, b1 in right)
