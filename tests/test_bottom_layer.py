"""The bottom-layer helpers: atomic writes, canonical JSON and hashes, named stopword lists."""

from __future__ import annotations

import os

import pytest

import chronomem.words
from chronobench import fileio, hashing, text


def test_atomic_write_fsyncs_and_replaces(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = fileio.atomic_write_text(tmp_path / "sub" / "a.txt", "one\ntwo\n")
    assert path.read_bytes() == b"one\ntwo\n"
    assert len(synced) >= 1  # the file (and, where the platform allows, the folder)
    assert [p.name for p in path.parent.iterdir()] == ["a.txt"]


def test_atomic_write_failure_keeps_old_content_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "m.json"
    fileio.atomic_write_json(target, {"v": 1})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        fileio.atomic_write_json(target, {"v": 2})
    assert target.read_text() == '{\n  "v": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_atomic_write_gives_the_mode_a_plain_open_would(tmp_path, monkeypatch, umask):
    # A shared results folder: run files must be as readable as any file the user writes.
    old = os.umask(umask)
    try:
        plain = tmp_path / "plain.txt"
        with open(plain, "w") as fh:
            fh.write("x")
        made = fileio.atomic_write_json(tmp_path / "run" / "metrics.json", {"v": 1})
        assert oct(made.stat().st_mode & 0o777) == oct(plain.stat().st_mode & 0o777)
        assert made.stat().st_mode & 0o777 == 0o666 & ~umask

        # Without /proc (macOS, BSD) the umask is read by setting it and putting it back.
        def no_proc(*args, **kwargs):
            raise OSError("no /proc")

        monkeypatch.setattr(fileio, "open", no_proc, raising=False)
        assert fileio._umask() == umask
        assert os.umask(umask) == umask  # left as it was
        monkeypatch.undo()
        # Replacing a file keeps that file's own mode, as open(path, "w") does.
        os.chmod(made, 0o600)
        fileio.atomic_write_json(made, {"v": 2})
        assert made.stat().st_mode & 0o777 == 0o600 and '"v": 2' in made.read_text()
    finally:
        os.umask(old)


def test_canonical_json_is_order_free_and_unescaped():
    a = hashing.canonical_json({"b": [1, 2], "a": "é"})
    assert a == '{"a":"é","b":[1,2]}'
    assert a == hashing.canonical_json({"a": "é", "b": [1, 2]})
    assert hashing.sha256_json({"b": [1, 2], "a": "é"}) == hashing.sha256_text(a)


def test_file_sha256_matches_bytes(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"x" * (3 << 20))
    assert hashing.file_sha256(p) == hashing.sha256_bytes(b"x" * (3 << 20))


def test_stable_hash_is_pinned():
    # Builders and probe ranking choose by this value: it must not change across runs.
    assert hashing.stable_hash(0, "conv-26", 3, "q1") == 16232061708761350976
    assert hashing.pick(["a", "b", "c"], "k") == ["a", "b", "c"][hashing.stable_hash("k") % 3]


# Each list is part of a definition (docs/metrics.md, the extractive reader, ChronoMem's
# BM25 query, the builders' filters); editing one moves published figures or built bytes.
@pytest.mark.parametrize(
    ("module", "name", "size", "digest"),
    [
        (text, "CONTENT_STOPWORDS", 206, "8dbddf1a7cd9212f"),
        (text, "READER_STOPWORDS", 160, "50eae97ee833f6a3"),
        (chronomem.words, "RETRIEVAL_STOPWORDS", 86, "fd2022f58431e448"),
        (text, "BUILDER_STOPWORDS", 97, "370162163de35bc8"),
    ],
)
def test_stopword_lists_are_pinned(module, name, size, digest):
    words = getattr(module, name)
    assert len(words) == size
    assert hashing.sha256_text(" ".join(sorted(words)))[:16] == digest


def test_normalize_and_phrases():
    assert text.normalize("The cat, and a Dog!") == "cat dog"
    assert text.contains_phrase("went to paris today", "paris")
    assert not text.contains_phrase("went to parisian cafe", "paris")
    assert text.date_like("after May") == "date_words" and text.date_like("session 3") == "digits"
    assert text.date_like("what may happen") is None
    assert text.content_word_set("Ann's trip to the lake") == frozenset({"ann", "trip", "lake"})
