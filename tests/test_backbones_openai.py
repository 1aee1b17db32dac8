"""OpenAIBackbone against a tiny OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("httpx")

from _backbones_fixtures import make_request  # noqa: E402

from chronobench.backbones.openai_backend import OpenAIBackbone  # noqa: E402
from chronobench.protocols import GenerationParams  # noqa: E402


class FakeServer:
    """Answers chat completions with the last user message reversed; scripted failures."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail_first: dict[str, int] = {}  # question -> number of 500s to send first
        self.status_for: dict[str, int] = {}  # question -> permanent status
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                question = body["messages"][-1]["content"].rsplit("Question: ", 1)[-1]
                with server.lock:
                    server.bodies.append(body)
                    server.headers.append(dict(self.headers))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    failures = server.fail_first.get(question, 0)
                    if failures:
                        server.fail_first[question] = failures - 1
                time.sleep(0.02)
                with server.lock:
                    server.in_flight -= 1
                status = server.status_for.get(question, 500 if failures else 200)
                if status != 200:
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b"boom")
                    return
                reply = {
                    "choices": [{"message": {"role": "assistant", "content": question[::-1]}}],
                    "usage": {"prompt_tokens": len(question), "completion_tokens": 2},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    yield srv
    srv.close()


def test_order_payload_auth_and_concurrency_cap(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CB_TEST_KEY", "sk-test")
    bb = OpenAIBackbone(
        model="m", base_url=server.url, api_key_env="CB_TEST_KEY", max_concurrency=2
    )
    questions = [f"question {i}" for i in range(8)]
    params = GenerationParams(max_new_tokens=9, temperature=0.5, top_p=0.8, seed=4, stop=("\n",))
    out = bb.generate([make_request(q, params=params) for q in questions])
    bb.close()
    assert [c.text for c in out] == [q[::-1] for q in questions]
    # The server's reported usage comes back with each completion.
    assert [(c.prompt_tokens, c.completion_tokens) for c in out] == [(len(q), 2) for q in questions]
    assert server.max_in_flight <= 2
    body = server.bodies[0]
    assert body["model"] == "m"
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (
        9,
        0.5,
        0.8,
        4,
    )
    assert body["stop"] == ["\n"]
    assert body["messages"][0] == {"role": "system", "content": "Answer from the memory."}
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_retries_after_500(server: FakeServer) -> None:
    server.fail_first["flaky"] = 2
    bb = OpenAIBackbone(model="m", base_url=server.url, backoff_s=0.01, max_retries=3)
    out = bb.generate([make_request("flaky"), make_request("fine")])
    assert [c.text for c in out] == ["ykalf", "enif"]
    assert sum(1 for b in server.bodies if b["messages"][-1]["content"].endswith("flaky")) == 3


def test_gives_up_after_max_retries(server: FakeServer) -> None:
    server.fail_first["down"] = 10
    bb = OpenAIBackbone(model="m", base_url=server.url, backoff_s=0.0, max_retries=1)
    with pytest.raises(RuntimeError, match="after 2 attempts.*HTTP 500"):
        bb.generate([make_request("down")])


def test_client_error_is_not_retried(server: FakeServer) -> None:
    server.status_for["bad"] = 400
    bb = OpenAIBackbone(model="m", base_url=server.url, backoff_s=0.0)
    with pytest.raises(RuntimeError, match="HTTP 400"):
        bb.generate([make_request("bad")])
    assert len(server.bodies) == 1


def test_unreachable_server_times_out_cleanly() -> None:
    bb = OpenAIBackbone(
        model="m", base_url="http://127.0.0.1:9/v1", timeout_s=0.5, max_retries=1, backoff_s=0.0
    )
    with pytest.raises(RuntimeError, match="failed after 2 attempts"):
        bb.generate([make_request("q")])
