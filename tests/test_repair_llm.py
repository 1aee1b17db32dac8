"""The repair track with an LLM backbone: the agent, dependency-guided repair and the
backbone-judged baseline run unchanged against an OpenAI-compatible server. The server
is scripted: it answers from the prompt text alone (the offline policy's reading) the
way a chatty LLM that never cites would."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("httpx")

from chronobench.protocols import ChatMessage, GenerationRequest  # noqa: E402
from chronobench.tracks.repair.policy import RepairPolicyBackbone  # noqa: E402


def llm_reply(messages: list[dict[str, str]]) -> str:
    """What the scripted model says: the policy's lines, bulleted, with chatter and no
    citations (so the agent must fall back to prompt-level provenance)."""
    req = GenerationRequest(messages=tuple(ChatMessage(m["role"], m["content"]) for m in messages))
    text = RepairPolicyBackbone().answer(req)
    if text in ("drop", "keep"):
        return f"After checking the faults, I would {text} this memory."
    lines = [re.sub(r"\s*\[[^\]]*\]$", "", x) for x in text.splitlines()]
    return "Sure, here is what I found:\n" + "\n".join(f"- {x}" for x in lines)


class ScriptedServer:
    """A tiny OpenAI-compatible chat-completions server answering with :func:`llm_reply`."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                content = llm_reply(body["messages"])
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    yield srv
    srv.close()


@pytest.mark.slow
def test_llm_backbone_runs_the_agent_and_the_judge(server, tmp_path):
    from chronobench.commands.run import main

    cells = [
        ["dataset.granularity=controlled", f"system.name={m}"] for m in ("dgr", "backbone_judged")
    ]
    suite = "suite=[" + ",".join("[" + ",".join(f"'{x}'" for x in c) + "]" for c in cells) + "]"
    args = ["experiment=repair", "leaderboard=false", "backbone=openai", "backbone.model=scripted",
            f"backbone.params.base_url={server.url}", "dataset.params.n_controlled=5",
            "dataset.params.n_stress=1", suite, f"paths.results_dir={tmp_path}/results",
            f"paths.data_dir={tmp_path}/data", f"paths.cache_dir={tmp_path}/cache"]  # fmt: skip
    assert main(args) == 0
    rows = {}
    for run in (tmp_path / "results" / "runs").iterdir():
        for line in (run / "samples.jsonl").read_text().splitlines():
            r = json.loads(line)
            rows.setdefault(r["method"], []).append(r)
    assert sorted(rows) == ["backbone_judged", "dgr"] and all(len(v) == 5 for v in rows.values())
    asked = [b["messages"][-1]["content"] for b in server.bodies]
    assert any(
        "Which facts about the user should be stored" in q for q in asked
    )  # history sessions
    assert any("CANDIDATE: " in q for q in asked)  # the judge went through the server
    for r in rows["dgr"]:
        s = r["scores"]
        # No citations: prompt-level evidence, so recall stays full and precision drops;
        # the repair still recovers, at more calls than with citations.
        assert s["recovery"] == 1.0 and s["prov_recall"] == 1.0 and s["prov_precision"] < 0.8
    assert {r["answer"] for r in rows["backbone_judged"]} != {""}
    # A second run reads every call from the persistent cache.
    n = len(server.bodies)
    assert main([*args, "overwrite=true"]) == 0 and len(server.bodies) == n
