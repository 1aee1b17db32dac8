"""A Google ADK agent whose long-term memory is ChronoMem, with undo in plain words.

Offline demo (a scripted stand-in model, no API key, no network)::

    python examples/adk_agent.py --demo

Chat with any model ADK supports (the agent remembers across sessions in --db)::

    export GOOGLE_API_KEY=...                      # for Gemini
    python examples/adk_agent.py --model gemini-2.5-flash
    python examples/adk_agent.py --model ollama_chat/llama3.1 --litellm   # via LiteLLM

Try: "Remember that my office door code is 4512", then "forget what I told you about
the door code", then "yes". The agent previews what would be undone, and only a
confirmation (the preview's token) changes memory.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

INSTRUCTION = """You are a helpful assistant with long-term memory.
- To recall facts about the user, call search_memory.
- When the user asks you to forget or undo something they told you, call
  preview_memory_undo with their words, tell them exactly what would be undone, and ask
  them to confirm. Only after they clearly agree, call confirm_memory_undo with the token
  from the preview. Never confirm on your own.
- If the preview is uncertain, ask the user which fact or conversation they mean
  (list_memory_versions shows the history)."""

DEMO = [
    ("first chat", "Remember that my favourite colour is green."),
    ("second chat", "Remember that the office door code is 4512."),
    ("third chat", "Please forget what I told you about the office door code."),
    ("third chat", "Yes, go ahead."),
    ("fourth chat", "What is the office door code?"),
    ("fourth chat", "What is my favourite colour?"),
]


async def _save_turn(callback_context: Any) -> None:
    """Memorise the session after every agent turn (ADK's usual pattern)."""
    await callback_context.add_session_to_memory()


def build_runner(model: Any, db: str, embedder: str) -> tuple[Any, Any, Any]:
    """(runner, session service, memory service) for an agent with ChronoMem memory."""
    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    from chronomem.adk import ChronoMemMemoryService, memory_tools

    memory = ChronoMemMemoryService(db, embedder=embedder)
    agent = LlmAgent(
        name="assistant",
        model=model,
        instruction=INSTRUCTION,
        tools=memory_tools(memory),
        after_agent_callback=_save_turn,
    )
    sessions = InMemorySessionService()
    runner = Runner(
        agent=agent, app_name="chronomem-demo", session_service=sessions, memory_service=memory
    )
    return runner, sessions, memory


async def say(runner: Any, user: str, session_id: str, text: str) -> str:
    """Send one user message; returns the agent's final text."""
    from google.genai import types

    reply = ""
    msg = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id=user, session_id=session_id, new_message=msg):
        parts = event.content.parts if event.content else None
        if event.author == "assistant" and parts and any(p.text for p in parts):
            reply = " ".join(p.text for p in parts if p.text)
    return reply


async def demo(db: str, embedder: str) -> None:
    """The scripted conversation: learn, poison, undo with confirmation, recall."""
    from chronomem.adk.scripted import ScriptedMemoryAssistant

    runner, sessions, memory = build_runner(ScriptedMemoryAssistant(), db, embedder)
    current, session_id = None, ""
    for chat, text in DEMO:
        if chat != current:
            current = chat
            session = await sessions.create_session(app_name="chronomem-demo", user_id="ann")
            session_id = session.id
            print(f"--- {chat}")
        print(f"user:      {text}")
        print(f"assistant: {await say(runner, 'ann', session_id, text)}")
    print("--- memory versions")
    for v in await memory.list_versions(app_name="chronomem-demo", user_id="ann"):
        print(f"v{v['version']:<3} {'HEAD ' if v['head'] else '     '}{v['summary']}")
    memory.close()


async def chat(model: Any, db: str, embedder: str, user: str) -> None:
    """An interactive chat on stdin; an empty line starts a new session, Ctrl-D quits."""
    runner, sessions, memory = build_runner(model, db, embedder)
    session = await sessions.create_session(app_name="chronomem-demo", user_id=user)
    print("Chat (empty line: new session; Ctrl-D: quit)")
    for line in sys.stdin:
        text = line.strip()
        if not text:
            session = await sessions.create_session(app_name="chronomem-demo", user_id=user)
            print("(new session)")
            continue
        print(f"assistant: {await say(runner, user, session.id, text)}")
    memory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="scripted offline demo")
    parser.add_argument("--model", help="an ADK model name, e.g. gemini-2.5-flash")
    parser.add_argument("--litellm", action="store_true", help="wrap --model in ADK's LiteLlm")
    parser.add_argument("--db", default=":memory:", help="ChronoMem file (default: in memory)")
    parser.add_argument("--user", default="ann", help="user id for the chat")
    parser.add_argument(
        "--embedder", default="minilm", help="minilm (packaged, default) or hash (fast, tests)"
    )
    args = parser.parse_args(argv)
    if args.demo or not args.model:
        asyncio.run(demo(args.db, args.embedder))
        return 0
    model: Any = args.model
    if args.litellm:
        from google.adk.models.lite_llm import LiteLlm  # needs: pip install litellm

        model = LiteLlm(model=args.model)
    asyncio.run(chat(model, args.db, args.embedder, args.user))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
