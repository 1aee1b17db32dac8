"""The ChronoMem MCP server through the SDK's own client: in process, over stdio (a
``python -m chronomem mcp`` subprocess) and over streamable HTTP (a subprocess on a free
loopback port, with bearer tokens)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402  (the SDK's own event-loop layer, installed with it)
import httpx2  # noqa: E402  (the SDK's HTTP client library)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from chronomem import ChronoMem  # noqa: E402
from chronomem.mcp import Scope, ServerConfig, build_server  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

FACTS = ["Ann lives in Oslo", "Ann's sister is called Liv", "Ann works as a nurse"]
ANN_TOKEN = "ann-token-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on a tool error."""
    got = await client.call_tool(tool, args)
    assert not got.is_error, (tool, got.content)
    return got.structured_content or {}


async def error(client: Client, tool: str, **args: Any) -> str:
    """A tool call that must fail: its error text."""
    got = await client.call_tool(tool, args)
    assert got.is_error, (tool, got.structured_content)
    return " ".join(getattr(c, "text", "") for c in got.content)


async def round_trip(client: Client) -> None:
    """Remember three facts, undo "the second one" in plain words, recall."""
    versions = [(await call(client, "remember", ops=[{"text": t}]))["version"] for t in FACTS]
    plan = await call(client, "preview_undo", request="undo the second one")
    assert plan["status"] == "ready" and plan["undo_versions"] == [versions[1]], plan
    assert list(plan["effect"]["removed"].values()) == [FACTS[1]]
    done = await call(client, "undo", token=plan["token"])
    assert done["undone_versions"] == [versions[1]]
    recalled = await call(client, "recall", query="Ann", k=10)
    assert sorted(m["text"] for m in recalled["memories"]) == sorted([FACTS[0], FACTS[2]])
    assert "token" in await error(client, "undo", token=plan["token"])  # single use
    then = await call(client, "recall", query="who is the sister", version=versions[1])
    assert [m["text"] for m in then["memories"]] == [FACTS[1]]  # memory as it was at v2
    history = await call(client, "history")
    assert history["head"] == done["head"] and history["versions"][0]["version"] == done["head"]
    head = await client.read_resource("memory://head")
    assert json.loads(head.contents[0].text)["memories"].keys() == {
        m["item_id"] for m in recalled["memories"]
    }
    old = await client.read_resource(f"memory://version/{versions[1]}")
    assert FACTS[1] in json.loads(old.contents[0].text)["memories"].values()
    assert (await call(client, "check_integrity"))["healthy"]


# ---- in process -----------------------------------------------------------------------


@pytest.fixture
def store():
    with ChronoMem(":memory:", embedder="hash") as mem:
        yield mem


def in_process(store: ChronoMem, user: str = "ann") -> Client:
    return Client(build_server(ServerConfig(store=store, scope=Scope("app", user))))


def test_round_trip_in_process(store):
    async def go() -> None:
        async with in_process(store) as client:
            await round_trip(client)

    anyio.run(go)


def test_tools_are_typed_and_described(store):
    async def go() -> None:
        async with in_process(store) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "remember", "recall", "history", "diff", "preview_undo", "undo", "forget",
            "redact", "check_integrity", "branch", "checkout", "list_branches",
            "compare_branches", "merge",
        }  # fmt: skip
        for tool in tools.values():
            assert tool.description and tool.output_schema, tool.name
            props = set(tool.input_schema.get("properties", {}))
            assert not props & {"app", "user", "scope", "ctx"}, (tool.name, props)

    anyio.run(go)


def test_another_users_scope_cannot_be_named(store):
    store.commit("app", "bob", [{"op": "add", "item_id": "pin", "text": "Bob's PIN is 1234"}],
                 source="t", reason="t")  # fmt: skip

    async def go() -> None:
        async with in_process(store) as client:
            await call(client, "remember", ops=[{"text": "Ann likes tea"}])
            for tool, args in (
                ("recall", {"query": "PIN", "user": "bob"}),
                ("history", {"user": "bob"}),
                ("redact", {"item_or_text": "pin", "reason": "x", "user": "bob"}),
                ("remember", {"ops": [{"text": "x"}], "app": "app", "user": "bob"}),
            ):
                assert "set by the server" in await error(client, tool, **args)
            found = (await call(client, "recall", query="Bob PIN 1234", k=50))["memories"]
            assert [m["text"] for m in found] in ([], ["Ann likes tea"])

    anyio.run(go)
    assert store.snapshot("app", "bob") == {"pin": "Bob's PIN is 1234"}
    assert len(store.versions("app", "bob")) == 2


def test_branch_write_compare_and_merge_with_a_conflict(store):
    async def go() -> None:
        async with in_process(store) as client:
            for t in FACTS:
                await call(client, "remember", ops=[{"item_id": t.split()[-1], "text": t}])
            made = await call(client, "branch", name="trial", before="Ann works as a nurse")
            assert [b["name"] for b in made["branches"]] == ["main", "trial"]
            assert (await call(client, "checkout", name="trial"))["checked_out"] == "trial"
            await call(client, "remember", ops=[{"op": "update", "item_id": "Oslo",
                                                 "text": "Ann lives in Bergen"}])  # fmt: skip
            await call(client, "checkout", name="main")
            await call(client, "remember", ops=[{"op": "update", "item_id": "Oslo",
                                                 "text": "Ann lives in Tromso"}])  # fmt: skip
            d = await call(client, "compare_branches", a="main", b="trial")
            assert set(d["changed"]) == {"Oslo"} and set(d["removed"]) == {"nurse"}
            got = await call(client, "merge", source="trial")
            assert got["status"] == "conflicts" and got["conflicts"][0]["item_id"] == "Oslo"
            got = await call(
                client, "merge", source="trial", resolutions={"Oslo": "Ann lives in Bodo"}
            )
            assert got["status"] == "done" and got["version"]
            recalled = await call(client, "recall", query="where does Ann live", k=5)
            assert "Ann lives in Bodo" in [m["text"] for m in recalled["memories"]]
            assert "no branch" in await error(client, "checkout", name="nope")

    anyio.run(go)


def test_malformed_arguments_get_clear_tool_errors(store):
    async def go() -> None:
        async with in_process(store) as client:
            assert "k" in await error(client, "recall", query="x", k="many")
            assert "op" in await error(client, "remember", ops=[{"op": "explode", "text": "x"}])
            assert "ops is empty" in await error(client, "remember", ops=[])
            assert "item_id" in await error(client, "remember", ops=[{"op": "delete"}])
            assert "exactly one" in await error(client, "preview_undo")
            text = await error(client, "diff", from_version=99)
            assert "version 99" in text and "Traceback" not in text
            assert "unknown or expired" in await error(client, "undo", token="made-up")

    anyio.run(go)


def test_undo_refuses_when_memory_moved_after_the_preview(store):
    async def go() -> None:
        async with in_process(store) as client:
            for text in FACTS:
                await call(client, "remember", ops=[{"text": text}])
            plan = await call(client, "preview_undo", request="the last one", mode="revert")
            assert plan["target_version"] == 2
            await call(client, "remember", ops=[{"text": "Ann has a dog"}])
            assert "HEAD" in await error(client, "undo", token=plan["token"])
            refused = await call(client, "preview_undo", request="undo the fifth one")
            assert refused["status"] == "refused" and refused["token"] is None
            assert refused["refusal_reasons"]
            vague = await call(client, "preview_undo", request="undo that thing from before")
            assert (
                vague["status"] == "refused"
                and "nothing was changed" in vague["refusal_reasons"][0]
            )

    anyio.run(go)
    assert len(store.snapshot("app", "ann")) == 4  # nothing was undone


def test_forget_and_redact(store):
    async def go() -> None:
        async with in_process(store) as client:
            await call(client, "remember", ops=[{"item_id": "city", "text": "Ann lives in Oslo"}])
            await call(client, "remember",
                       ops=[{"op": "update", "item_id": "city", "text": "Ann moved to Bergen"}])  # fmt: skip
            await call(client, "remember", ops=[{"item_id": "door", "text": "Door code is 4512"}])
            gone = await call(client, "forget", request="forget the move to Bergen")
            assert gone["status"] == "done" and gone["restored"] == {"city": "Ann lives in Oslo"}
            red = await call(client, "redact", item_or_text="4512", reason="a secret", by="text")
            assert red["item_ids"] == ["door"]
            for v in (await call(client, "history"))["versions"]:
                snap = await client.read_resource(f"memory://version/{v['version']}")
                assert "4512" not in snap.contents[0].text

    anyio.run(go)


# ---- subprocess servers ---------------------------------------------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_MCP")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env["HOME"] = str(tmp_path)  # the default store lives under it
    return {**env, **extra}


def _stdio(store: Path, tmp_path: Path) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chronomem", "mcp", "--store", str(store), "--app", "app", "--user", "ann"],
        env=_env(tmp_path),
        cwd=str(tmp_path),
    )
    return Client(params)


@pytest.mark.slow
def test_round_trip_over_stdio(tmp_path):
    async def go() -> None:
        async with _stdio(tmp_path / "m.db", tmp_path) as client:
            await round_trip(client)

    anyio.run(go)
    with ChronoMem(tmp_path / "m.db") as mem:  # the server wrote the file it was given
        assert sorted(mem.snapshot("app", "ann").values()) == sorted([FACTS[0], FACTS[2]])


@pytest.mark.slow
def test_two_stdio_servers_on_one_file_lose_no_write(tmp_path):
    n = 12

    async def writer(tag: str) -> None:
        async with _stdio(tmp_path / "m.db", tmp_path) as client:
            for i in range(n):
                await call(client, "remember", ops=[{"item_id": f"{tag}{i}", "text": f"{tag} {i}"}])

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, "a")
            tg.start_soon(writer, "b")

    anyio.run(go)
    with ChronoMem(tmp_path / "m.db") as mem:
        assert len(mem.snapshot("app", "ann")) == 2 * n
        assert len(mem.versions("app", "ann")) == 2 * n + 1
        assert mem.check_integrity("app", "ann") == []


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    """One server on a free loopback port with two users' tokens (started once: the
    tests below write to different scopes); yields its URL."""
    tmp_path = tmp_path_factory.mktemp("http")
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({ANN_TOKEN: {"app": "app", "user": "ann"},
                                  BOB_TOKEN: {"app": "app", "user": "bob"}}))  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "chronomem", "mcp", "--store", str(tmp_path / "m.db"),
         "--http", f"127.0.0.1:{port}", "--tokens", str(tokens)],
        env=_env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _http(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # The SDK's documented way to send headers: pass it an HTTP client that carries them.
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


@pytest.mark.slow
def test_http_round_trip_scopes_and_concurrent_writers(http_server):
    n = 15

    async def writer(tag: str) -> None:
        async with _http(http_server, BOB_TOKEN) as client:
            for i in range(n):
                await call(client, "remember", ops=[{"item_id": f"{tag}{i}", "text": f"{tag} {i}"}])

    async def go() -> None:
        async with _http(http_server, ANN_TOKEN) as ann:
            await round_trip(ann)
        async with anyio.create_task_group() as tg:  # two clients at once, one scope
            tg.start_soon(writer, "x")
            tg.start_soon(writer, "y")
        async with _http(http_server, BOB_TOKEN) as bob:
            seen = await call(bob, "recall", query="Ann Oslo nurse", k=50)
            assert all("Ann" not in m["text"] for m in seen["memories"])
            assert "set by the server" in await error(bob, "recall", query="Ann", user="ann")
            history = await call(bob, "history", limit=100)
            assert len(history["versions"]) == 2 * n

    anyio.run(go)


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, "wrong-token-0123456789"])
def test_http_refuses_a_missing_or_wrong_token(http_server, token):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    req = urllib.request.Request(
        http_server, data=body, method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                 **({"Authorization": f"Bearer {token}"} if token else {})},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(req, timeout=30)
    assert got.value.code == 401

    async def go() -> None:
        async with _http(http_server, token) as client:
            await client.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK's connect error, whatever its type
        anyio.run(go)


def test_http_without_tokens_binds_only_to_loopback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "chronomem", "mcp", "--store", str(tmp_path / "m.db"),
         "--http", "0.0.0.0:8765"],
        env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "reachable from other machines" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "m.db").exists()
