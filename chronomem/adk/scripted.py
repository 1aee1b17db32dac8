"""A scripted ADK model for offline demos and tests: no network, no weights.

:class:`ScriptedMemoryAssistant` is a ``BaseLlm`` that decides each step from the
conversation the way a tool-calling LLM would with :func:`memory_tools`:

- "remember ..." -> acknowledges (the app saves the session to memory);
- a request containing "forget" or "undo" -> calls ``preview_memory_undo`` with it,
  then shows the user what would be undone and asks to confirm;
- "yes ..." -> calls ``confirm_memory_undo`` with the token of the latest preview
  found in the conversation;
- anything else -> calls ``search_memory`` and answers from what it returns.

It exists so the whole ADK stack (Runner, sessions, tool dispatch, this memory
service) can run end to end without a model provider; use a real model otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def _text(content: Any) -> str:
    return " ".join(p.text for p in content.parts or [] if p.text)


def _call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


class ScriptedMemoryAssistant(BaseLlm):
    """A rule-following stand-in for an LLM that uses the ChronoMem memory tools."""

    model: str = "scripted-memory-assistant"

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One model turn: a tool call or a text reply (never streamed)."""
        contents = llm_request.contents
        last = contents[-1]
        responses = [p.function_response for p in last.parts or [] if p.function_response]
        if responses:
            part = types.Part(text=self._after_tool(responses[0].name, responses[0].response))
        else:
            part = self._on_user(_text(last), contents)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))

    @staticmethod
    def _on_user(text: str, contents: list[Any]) -> types.Part:
        low = text.lower()
        if low.startswith("remember"):
            return types.Part(text="Noted.")
        if "forget" in low or "undo" in low:
            return _call("preview_memory_undo", request=text)
        if low.startswith("yes"):
            token = ""  # the latest preview's token, read back from the conversation
            for content in contents:
                for p in content.parts or []:
                    fr = p.function_response
                    if fr and fr.name == "preview_memory_undo" and (fr.response or {}).get("token"):
                        token = fr.response["token"]
            return _call("confirm_memory_undo", token=token)
        return _call("search_memory", query=text)

    @staticmethod
    def _after_tool(name: str, response: dict[str, Any]) -> str:
        if name == "preview_memory_undo":
            if response.get("status") != "preview":
                reason = response.get("error") or response.get("message", "")
                return f"I could not tell what to undo: {reason}"
            undo = "; ".join(d["summary"] for d in response["will_undo"])
            return f"This will undo: {undo}. Shall I go ahead?"
        if name == "confirm_memory_undo":
            if response.get("status") != "done":
                return f"I did not undo anything: {response.get('error', '')}"
            return f"Done: memory is back to version {response['restored_version']}."
        texts = [m["text"] for m in response.get("memories", [])]
        return "From memory: " + " | ".join(texts) if texts else "I have nothing on that."
