"""ChronoMemMemoryService as an ADK memory service: the behaviour ADK users rely on."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
import unicodedata

import pytest

if importlib.util.find_spec("google.adk") is None:  # CI installs the adk extra: fail there
    if os.environ.get("CI"):
        raise ImportError("google-adk is not installed; .ci/run installs '.[dev,adk]'")
    pytest.skip("google-adk not installed (pip install -e '.[adk]')", allow_module_level=True)

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from chronomem.adk import ChronoMemMemoryService
from tests._memory_fixtures import LOCATION, shared_location

APP, USER = "app", "user"


def ev(event_id: str, text: str | None, author: str = "user", ts: float = 1_700_000_000.0):
    content = None if text is None else types.Content(role="user", parts=[types.Part(text=text)])
    return Event(id=event_id, author=author, content=content, timestamp=ts)


def session(events, sid="s1", app=APP, user=USER) -> Session:
    return Session(id=sid, app_name=app, user_id=user, events=list(events))


@pytest.fixture
def svc(each_backend):
    """The service on an in-memory SQLite store, then on a PostgreSQL database."""
    s = ChronoMemMemoryService(LOCATION["url"] or ":memory:", embedder="hash")
    yield s
    s.close()


def run(coro):
    return asyncio.run(coro)


def search(s, query, app=APP, user=USER) -> list[str]:
    res = run(s.search_memory(app_name=app, user_id=user, query=query))
    return [m.content.parts[0].text for m in res.memories]


def test_implements_every_base_method():
    abstract = {
        name
        for name in dir(BaseMemoryService)
        if callable(getattr(BaseMemoryService, name)) and not name.startswith("_")
    }
    for name in abstract | {"delete_memories"}:
        assert getattr(ChronoMemMemoryService, name) is not getattr(BaseMemoryService, name, None)
    assert isinstance(ChronoMemMemoryService(embedder="hash"), BaseMemoryService)


def test_skips_events_without_text_and_never_duplicates(svc):
    s = session([ev("e1", "I live in Oslo"), ev("e2", None), ev("e3", "My cat is Tom")])
    run(svc.add_session_to_memory(s))
    run(svc.add_session_to_memory(s))  # same session again
    run(svc.add_events_to_memory(app_name=APP, user_id=USER, events=[ev("e1", "I live in Oslo")]))
    assert sorted(svc.store.snapshot(APP, USER)) == ["e1", "e3"]
    assert len(run(svc.list_versions(app_name=APP, user_id=USER))) == 2  # root + one write


def test_add_events_appends_a_delta_and_accepts_no_session_id(svc):
    run(svc.add_session_to_memory(session([ev("e1", "alpha fact")])))
    run(
        svc.add_events_to_memory(
            app_name=APP, user_id=USER, events=[ev("e2", "beta fact")], session_id=None
        )
    )
    assert search(svc, "fact") == ["alpha fact", "beta fact"]


def test_search_is_case_insensitive_and_scoped(svc):
    run(svc.add_session_to_memory(session([ev("e1", "Python is GREAT")])))
    run(svc.add_session_to_memory(session([ev("x1", "python for another user")], user="bob")))
    assert search(svc, "python great") == ["Python is GREAT"]
    assert search(svc, "python", user="bob") == ["python for another user"]
    assert search(svc, "python", app="other") == []


def test_slash_in_ids_never_aliases_another_scope(svc):
    run(svc.add_session_to_memory(session([ev("e1", "secret plan")], app="app/other-user")))
    assert search(svc, "secret", app="app/other-user", user="user") == ["secret plan"]
    assert search(svc, "secret", app="app", user="other-user/user") == []
    assert search(svc, "secret", app="app", user="other-user") == []


@pytest.mark.parametrize(
    ("text", "query", "found"),
    [
        ("私の名前は太郎です", "太郎", True),
        ("我喜欢机器学习", "机器学习", True),
        ("私はPythonを使う", "Python", True),
        ("저는 서울 에 살아요", "서울", True),
        ("저는 서울에 살아요", "서울", False),  # Korean is written with spaces: by word
        ("Мой кот спит", "кот", True),
        ("Котлета на ужин", "кот", False),  # Cyrillic by word
        ("I love Python", "thon", False),  # no Latin partial words
        ("Ich wohne in der STRASSE", "straße", True),  # case folding
    ],
)
def test_non_latin_and_partial_words(svc, text, query, found):
    run(svc.add_session_to_memory(session([ev("e1", text)])))
    assert (search(svc, query) == [text]) is found


def test_nfc_and_nfd_match_each_other(svc):
    nfd = unicodedata.normalize("NFD", "Café Müller")
    run(svc.add_session_to_memory(session([ev("e1", nfd), ev("e2", "한국어 공부")])))
    assert search(svc, unicodedata.normalize("NFC", "café")) == [nfd]
    assert search(svc, unicodedata.normalize("NFD", "한국어")) == ["한국어 공부"]


def test_rank_by_matched_words_stable_ties_and_max_results():
    s = ChronoMemMemoryService(embedder="hash", max_results=3)
    texts = ["red apple", "green apple pie", "red green apple", "apple tart", "apple juice"]
    run(s.add_session_to_memory(session([ev(f"e{i}", t) for i, t in enumerate(texts)])))
    assert search(s, "red green apple") == ["red green apple", "red apple", "green apple pie"]
    assert search(s, "apple") == ["red apple", "green apple pie", "red green apple"]
    s.close()


def test_entries_carry_id_author_timestamp_content(svc):
    run(svc.add_session_to_memory(session([ev("e1", "hello world", author="alice", ts=0.0)])))
    (m,) = run(svc.search_memory(app_name=APP, user_id=USER, query="hello")).memories
    assert (m.id, m.author, m.timestamp) == ("e1", "alice", "1970-01-01T00:00:00+00:00")
    assert m.content.role == "user" and m.custom_metadata["session_id"] == "s1"


def test_defensive_copies(svc):
    e = ev("e1", "original text")
    s = session([e])
    run(svc.add_session_to_memory(s))
    e.content.parts[0].text = "mutated event"
    s.events.append(ev("e9", "x"))
    (m,) = run(svc.search_memory(app_name=APP, user_id=USER, query="original")).memories
    m.content.parts[0].text = "mutated entry"
    assert search(svc, "original") == ["original text"]


def test_add_memory_updates_and_delete_can_be_rolled_back(svc):
    def entry(mid, text):
        return MemoryEntry(id=mid, content=types.Content(parts=[types.Part(text=text)]))

    run(svc.add_memory(app_name=APP, user_id=USER, memories=[entry("m1", "tea with milk")]))
    run(svc.add_memory(app_name=APP, user_id=USER, memories=[entry("m1", "tea with milk")]))
    run(svc.add_memory(app_name=APP, user_id=USER, memories=[entry("m1", "tea with lemon")]))
    assert search(svc, "tea") == ["tea with lemon"]
    before_delete = run(svc.head(app_name=APP, user_id=USER))
    run(svc.delete_memory(app_name=APP, user_id=USER, memory_id="m1"))
    assert search(svc, "tea") == []
    run(svc.rollback_to_version(app_name=APP, user_id=USER, version=before_delete))
    assert search(svc, "tea") == ["tea with lemon"]
    versions = run(svc.list_versions(app_name=APP, user_id=USER))
    assert [v["op"] for v in versions] == ["root", "add", "update", "delete", "revert"]


def test_deleted_event_is_not_reingested(svc):
    s = session([ev("e1", "old address"), ev("e2", "cat named Tom")])
    run(svc.add_session_to_memory(s))
    run(svc.delete_memories(app_name=APP, user_id=USER, memory_ids=["e1", "nope"]))
    run(svc.add_session_to_memory(s))
    assert sorted(svc.store.snapshot(APP, USER)) == ["e2"]
    with pytest.raises(TypeError, match="memory_ids"):
        run(svc.delete_memories(app_name=APP, user_id=USER, memory_ids="e2"))


def test_bad_arguments_name_the_argument(svc):
    with pytest.raises(ValueError, match="app_name"):
        run(svc.search_memory(app_name="", user_id=USER, query="x"))
    with pytest.raises(ValueError, match="max_results"):
        ChronoMemMemoryService(max_results=0)
    with pytest.raises(ValueError, match="store="):
        ChronoMemMemoryService(store=svc.store, embedder="hash")
    with pytest.raises(ValueError, match="labels"):
        run(
            svc.add_events_to_memory(
                app_name=APP, user_id=USER, events=[], custom_metadata={"labels": "x"}
            )
        )


def test_threads_search_while_others_add(svc):
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(10):
                s = session([ev(f"w{n}-{i}", f"note {n} {i} shared")], sid=f"s{n}-{i}")
                asyncio.run(svc.add_session_to_memory(s))
        except BaseException as exc:  # pragma: no cover - the assertion reports it
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                asyncio.run(svc.search_memory(app_name=APP, user_id=USER, query="shared note"))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(svc.store.snapshot(APP, USER)) == 30


_CHILD = """
import asyncio, json, sys
from chronomem.adk import ChronoMemMemoryService
s = ChronoMemMemoryService(sys.argv[1], embedder="hash")
r = asyncio.run(s.search_memory(app_name="app", user_id="user", query="durable"))
v = asyncio.run(s.list_versions(app_name="app", user_id="user"))
print(json.dumps([[m.id, m.author] for m in r.memories] + [[x["version"] for x in v]]))
"""


@pytest.mark.slow  # a second process
def test_reopened_in_a_new_process(each_backend, tmp_path):
    db = shared_location(tmp_path, "mem")
    s = ChronoMemMemoryService(db, embedder="hash")
    run(s.add_session_to_memory(session([ev("e1", "durable fact", author="ann")])))
    run(s.add_session_to_memory(session([ev("e2", "durable second")], sid="s2")))
    s.close()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, db], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == '[["e1", "ann"], ["e2", "user"], [0, 1, 2]]'


def test_rolled_back_events_stay_out_when_the_session_is_re_added(svc):
    s = session([ev("e1", "favourite colour green")])
    run(svc.add_session_to_memory(s))
    s.events.append(ev("e2", "door code 4512"))
    run(svc.add_session_to_memory(s))
    run(svc.rollback_to_version(app_name=APP, user_id=USER, version=1, mode="truncate"))
    s.events.append(ev("e3", "new fact after the rollback"))
    run(svc.add_session_to_memory(s))  # ADK apps re-add the whole session every turn
    assert sorted(svc.store.snapshot(APP, USER)) == ["e1", "e3"]


def test_session_state_labels_reach_the_commit(svc):
    s = session([ev("e1", "a fact")], sid="chat-7")
    s.state["chronomem_labels"] = {"session_date": "8 May 2023"}
    run(svc.add_session_to_memory(s))
    (rec,) = [v for v in svc.store.versions(APP, USER) if v.seq == 1]
    assert rec.labels == {"session": "chat-7", "session_date": "8 May 2023"}
    s.state["chronomem_labels"] = "not a mapping"
    with pytest.raises(ValueError, match="chronomem_labels"):
        run(svc.add_session_to_memory(s))


def test_closed_service_says_so():
    s = ChronoMemMemoryService(embedder="hash")
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        run(s.search_memory(app_name=APP, user_id=USER, query="x"))
