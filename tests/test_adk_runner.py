"""End to end: a real ADK Runner, this memory service, and an agent that undoes a poisoned fact.

The model is the scripted ``BaseLlm`` shipped for offline demos
(``chronomem.adk.scripted``, no network): it reacts to the conversation the
way a tool-using LLM would (calls the preview tool on an undo request, echoes the
token it got back after the user agrees, answers questions from search results), so
everything else - Runner, sessions, tool dispatch, memory service - is the real thing.
The store uses the packaged MiniLM embedder, because resolving the undo request is
what is under test.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from types import SimpleNamespace
from typing import Any

import pytest

if importlib.util.find_spec("google.adk") is None:  # CI installs the adk extra: fail there
    if os.environ.get("CI"):
        raise ImportError("google-adk is not installed; .ci/run installs '.[dev,adk]'")
    pytest.skip("google-adk not installed (pip install -e '.[adk]')", allow_module_level=True)

from google.adk.agents import LlmAgent
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from chronomem.adk import (
    ChronoMemMemoryService,
    UncertainRequestError,
    memory_tools,
)
from chronomem.adk.scripted import ScriptedMemoryAssistant

pytestmark = pytest.mark.slow  # loads MiniLM (a few seconds on 2 cores)

APP, USER = "assistant", "ann"


def _text(content: types.Content) -> str:
    return " ".join(p.text for p in content.parts or [] if p.text)


async def _save_turn(callback_context: Any) -> None:
    # The common ADK pattern: memorise the session after every turn.
    await callback_context.add_session_to_memory()


class Chat:
    """A Runner with the scripted agent, this memory service and in-memory sessions."""

    def __init__(self, memory: ChronoMemMemoryService) -> None:
        agent = LlmAgent(
            name="assistant",
            model=ScriptedMemoryAssistant(),
            instruction="Use the memory tools. Never undo memory without the user's confirmation.",
            tools=memory_tools(memory),
            after_agent_callback=_save_turn,
        )
        self.sessions = InMemorySessionService()
        self.runner = Runner(
            agent=agent, app_name=APP, session_service=self.sessions, memory_service=memory
        )

    async def new_session(self) -> str:
        return (await self.sessions.create_session(app_name=APP, user_id=USER)).id

    async def say(self, session_id: str, text: str) -> str:
        msg = types.Content(role="user", parts=[types.Part(text=text)])
        final = ""
        async for event in self.runner.run_async(
            user_id=USER, session_id=session_id, new_message=msg
        ):
            if event.content and event.author == "assistant" and _text(event.content):
                final = _text(event.content)
        return final


def test_agent_previews_confirms_and_forgets_the_poisoned_fact(minilm):
    memory = ChronoMemMemoryService(embedder=minilm)

    async def scenario() -> dict[str, Any]:
        chat = Chat(memory)
        s1 = await chat.new_session()
        await chat.say(s1, "Remember that my favourite colour is green.")
        s2 = await chat.new_session()
        await chat.say(s2, "Remember that the office door code is 4512.")  # the poison
        poisoned_head = await memory.head(app_name=APP, user_id=USER)
        s3 = await chat.new_session()
        preview = await chat.say(s3, "Please forget what I told you about the office door code.")
        head_after_preview = await memory.head(app_name=APP, user_id=USER)
        done = await chat.say(s3, "Yes, go ahead.")
        s4 = await chat.new_session()
        answer = await chat.say(s4, "What is the office door code?")
        colour = await chat.say(s4, "What is my favourite colour?")
        hits = await memory.search_memory(app_name=APP, user_id=USER, query="office door code")
        return {
            "poisoned_head": poisoned_head,
            "preview": preview,
            "head_after_preview": head_after_preview,
            "done": done,
            "answer": answer,
            "colour": colour,
            "hits": [m.content.parts[0].text for m in hits.memories],
        }

    out = asyncio.run(scenario())
    memory.close()
    assert "office door code is 4512" in out["preview"] and "go ahead" in out["preview"]
    assert out["head_after_preview"] == out["poisoned_head"]  # the preview wrote nothing
    assert out["done"].startswith("Done: memory is back to version")
    assert "4512" not in out["answer"]
    assert all("4512" not in h for h in out["hits"])
    assert "green" in out["colour"]


def _ctx(app: str = APP, user: str = USER, invocation: str = "inv-1") -> Any:
    return SimpleNamespace(
        session=SimpleNamespace(app_name=app, user_id=user), invocation_id=invocation
    )


def _tools(memory: ChronoMemMemoryService, **kw: Any) -> dict[str, Any]:
    return {t.name: t.func for t in memory_tools(memory, **kw)}


def _seed(memory: ChronoMemMemoryService) -> None:
    """Three versions, one memory each."""
    texts = ["Ann adopted a dog called Rex", "Ann moved to Lisbon for work", "Ann started pottery"]
    for i, text in enumerate(texts):
        entry = MemoryEntry(id=f"m{i}", content=types.Content(parts=[types.Part(text=text)]))
        asyncio.run(memory.add_memory(app_name=APP, user_id=USER, memories=[entry]))


def test_confirm_needs_the_token_its_scope_and_an_unmoved_head(minilm):
    memory = ChronoMemMemoryService(embedder=minilm)
    _seed(memory)
    tools = _tools(memory)
    preview = asyncio.run(tools["preview_memory_undo"]("undo the move to Lisbon", _ctx()))
    assert preview["status"] == "preview" and preview["restore_version"] == 1
    # Wrong user, made-up token: refused, nothing changes.
    other = asyncio.run(tools["confirm_memory_undo"](preview["token"], _ctx(user="bob")))
    assert other["status"] == "error"
    assert asyncio.run(tools["confirm_memory_undo"]("made-up", _ctx()))["status"] == "error"
    # Memory moves on after the preview: the old token no longer applies.
    asyncio.run(memory.delete_memory(app_name=APP, user_id=USER, memory_id="m2"))
    moved = asyncio.run(tools["confirm_memory_undo"](preview["token"], _ctx()))
    assert moved["status"] == "error" and "changed since the preview" in moved["error"]
    again = asyncio.run(tools["preview_memory_undo"]("undo the move to Lisbon", _ctx()))
    done = asyncio.run(tools["confirm_memory_undo"](again["token"], _ctx()))
    assert done["status"] == "done"
    assert asyncio.run(tools["confirm_memory_undo"](again["token"], _ctx()))["status"] == "error"
    texts = asyncio.run(tools["search_memory"]("Ann", _ctx()))["memories"]
    assert [m["text"] for m in texts] == ["Ann adopted a dog called Rex"]
    versions = asyncio.run(tools["list_memory_versions"](_ctx()))
    assert versions["versions"][-1]["op"] == "revert" and versions["versions"][-1]["head"]
    memory.close()


@pytest.mark.parametrize("request_text", ["*", "(((", "\x00", "🙂🙂", "   ", "undo that"])
def test_meaningless_requests_change_nothing(minilm, request_text):
    memory = ChronoMemMemoryService(embedder=minilm)
    _seed(memory)
    before = memory.versions_sync(APP, USER)
    with pytest.raises(UncertainRequestError):
        asyncio.run(memory.rollback(app_name=APP, user_id=USER, request=request_text))
    out = asyncio.run(_tools(memory)["preview_memory_undo"](request_text, _ctx()))
    assert out["status"] == "uncertain" and out["error"]
    assert memory.versions_sync(APP, USER) == before
    memory.close()


def test_rollback_api_preview_then_apply(minilm):
    memory = ChronoMemMemoryService(embedder=minilm)
    _seed(memory)

    async def go() -> tuple[Any, Any, list[dict[str, Any]]]:
        p = await memory.rollback(
            app_name=APP, user_id=USER, request="forget that Ann moved to Lisbon", preview=True
        )
        assert await memory.head(app_name=APP, user_id=USER) == 3
        r = await memory.rollback(
            app_name=APP, user_id=USER, request="forget that Ann moved to Lisbon"
        )
        return p, r, await memory.list_versions(app_name=APP, user_id=USER)

    preview, applied, versions = asyncio.run(go())
    assert (preview.intent, preview.matched_version, preview.version) == ("undo", 2, 1)
    assert preview.discarded_versions == [2, 3] and not preview.applied
    assert "Lisbon" in preview.discarded[0]["summary"]
    assert applied.applied and applied.head == 1 and applied.version == preview.version
    assert [v["version"] for v in versions] == [0, 1]
    assert set(versions[0]) >= {"version", "time", "summary"}
    memory.close()


def test_example_demo_runs_offline(repo_root):
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            str(repo_root / "examples" / "adk_agent.py"),
            "--demo",
            "--embedder",
            "hash",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert "Shall I go ahead?" in out and "Done: memory is back to version 1." in out
    recall = out.split("--- fourth chat", 1)[1].split("--- memory versions", 1)[0]
    assert "4512" not in recall and "green" in recall


def test_forget_tools_remove_the_named_fact_and_keep_the_later_ones(minilm):
    memory = ChronoMemMemoryService(embedder=minilm)
    _seed(memory)
    tools = _tools(memory)
    before = memory.versions_sync(APP, USER)
    preview = asyncio.run(tools["preview_memory_forget"]("forget that Ann moved to Lisbon", _ctx()))
    assert preview["status"] == "preview" and preview["will_revert_versions"] == [2]
    assert memory.versions_sync(APP, USER) == before  # the preview wrote nothing
    wrong = asyncio.run(tools["confirm_memory_undo"](preview["token"], _ctx()))
    assert wrong["status"] == "error"  # a forget token is not an undo token (and is spent)
    again = asyncio.run(tools["preview_memory_forget"]("forget that Ann moved to Lisbon", _ctx()))
    done = asyncio.run(tools["confirm_memory_forget"](again["token"], _ctx()))
    assert done["status"] == "done" and done["reverted_versions"] == [2]
    texts = sorted(
        m["text"] for m in asyncio.run(tools["search_memory"]("Ann", _ctx()))["memories"]
    )
    assert texts == ["Ann adopted a dog called Rex", "Ann started pottery"]
    vague = asyncio.run(tools["preview_memory_forget"]("forget that", _ctx()))
    assert vague["status"] == "uncertain"
    memory.close()


def test_forget_tool_can_erase_and_then_keeps_no_copy_of_the_request(minilm):
    """erase=True reverts and redacts; the stored request has the erased words redacted."""
    memory = ChronoMemMemoryService(embedder=minilm)
    _seed(memory)
    tools = _tools(memory)
    preview = asyncio.run(
        tools["preview_memory_forget"]("forget that Ann moved to Lisbon", _ctx(), erase=True)
    )
    assert preview["status"] == "preview" and preview["erase_from_history"] is True
    done = asyncio.run(tools["confirm_memory_forget"](preview["token"], _ctx()))
    assert done["status"] == "done" and done["reverted_versions"] == [2]
    store = memory.store
    tables = [r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for table in tables:
        for row in store.conn.execute(f'SELECT * FROM "{table}"'):
            assert "lisbon" not in " ".join(map(str, row)).lower(), (table, row)
    memory.close()


def test_branch_tools_try_a_change_on_the_side_and_merge_it():
    memory = ChronoMemMemoryService(embedder="hash")
    _seed(memory)
    tools = _tools(memory)
    made = asyncio.run(tools["branch_memory"]("trial", _ctx(), before="Ann started pottery"))
    assert made["status"] == "ok" and made["in_use"] == "main", made
    assert asyncio.run(tools["switch_memory_branch"]("trial", _ctx()))["in_use"] == "trial"
    entry = MemoryEntry(id="t", content=types.Content(parts=[types.Part(text="Ann plays chess")]))
    asyncio.run(memory.add_memory(app_name=APP, user_id=USER, memories=[entry]))
    asyncio.run(tools["switch_memory_branch"]("main", _ctx()))
    d = asyncio.run(tools["compare_memory_branches"]("main", "trial", _ctx()))
    assert d["status"] == "ok" and "Ann plays chess" in d["added"].values(), d
    merged = asyncio.run(tools["merge_memory_branch"]("trial", _ctx()))
    assert merged["status"] == "ok" and merged["conflicts"] == [], merged
    texts = [m["text"] for m in asyncio.run(tools["search_memory"]("chess", _ctx()))["memories"]]
    assert any("chess" in t for t in texts)
    bad = asyncio.run(tools["switch_memory_branch"]("nope", _ctx()))
    assert bad["status"] == "error" and "no branch" in bad["error"]
    memory.close()
