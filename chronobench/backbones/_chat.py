"""Chat-template rendering shared by the local-model backbones (vllm, transformers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronobench.protocols import ChatMessage

__all__ = ["merge_system", "render_chat", "to_dicts"]


def to_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """Messages in the ``{"role", "content"}`` shape tokenizers and servers expect."""
    return [{"role": m.role, "content": m.content} for m in messages]


def merge_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Fold system messages into the first user message, for templates without a
    system role (some Mistral templates reject one)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system and rest and rest[0]["role"] == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def render_chat(
    tokenizer: Any, messages: Sequence[ChatMessage], chat_template: str | None = None
) -> str:
    """Render ``messages`` with the tokenizer's chat template, generation prompt added.

    If the template rejects the system role, the system text is merged into the first
    user turn and rendering is retried once.
    """
    dicts = to_dicts(messages)
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
    if chat_template is not None:
        kwargs["chat_template"] = chat_template
    try:
        return tokenizer.apply_chat_template(dicts, **kwargs)
    except Exception as err:  # jinja raises its own TemplateError; ValueError when no template
        if not any(m["role"] == "system" for m in dicts):
            raise ValueError(
                f"cannot apply the chat template: {err}. Pass chat_template=... for models "
                "without one (base models)"
            ) from err
        return tokenizer.apply_chat_template(merge_system(dicts), **kwargs)
