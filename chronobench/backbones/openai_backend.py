"""Backbone for any OpenAI-compatible chat server (vllm serve, llama.cpp, Ollama, ...)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chronobench.backbones._chat import to_dicts
from chronobench.protocols import Completion, GenerationRequest

__all__ = ["OpenAIBackbone", "server_problem"]

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def server_problem(options: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """Why ``{base_url}/models`` cannot be reached, or None when a server answers (any
    HTTP status: a wrong key or path is the backbone's own clear error later). Checked
    before a run's first cell, so a stopped server is a short error rather than a
    traceback after the models have loaded."""
    import httpx

    base_url = str(options.get("base_url") or _DEFAULT_BASE_URL).rstrip("/")
    try:
        httpx.get(f"{base_url}/models", timeout=timeout_s)
    except httpx.HTTPError as exc:
        return f"no OpenAI-compatible server answers at {base_url} ({type(exc).__name__})"
    return None


_DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


class OpenAIBackbone:
    """POSTs each request to ``{base_url}/chat/completions``.

    At most ``max_concurrency`` requests are in flight; transport errors, timeouts and
    retryable statuses (429, 5xx, ...) are retried ``max_retries`` times with
    exponential backoff (``Retry-After`` is honoured when the server sends one). Other
    HTTP errors fail at once with the server's message. The API key is read from the
    environment variable named by ``api_key_env`` (optional for local servers).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = _DEFAULT_BASE_URL,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        timeout_s: float = 120,  # an int: the value run specs have recorded
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        try:
            import httpx
        except ImportError as err:
            raise ImportError(
                "the 'openai' backbone needs httpx: pip install 'chronobench[openai]'"
            ) from err
        if max_concurrency < 1 or max_retries < 0:
            raise ValueError("max_concurrency must be >= 1 and max_retries >= 0")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.extra_body = dict(extra_body or {})
        headers = {"Content-Type": "application/json"}
        api_key = os.environ.get(api_key_env)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._httpx = httpx
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            headers=headers,
            limits=httpx.Limits(max_connections=max_concurrency),
        )

    @property
    def cache_config(self) -> dict[str, Any]:
        """Settings that can change outputs; part of the cache key."""
        return {"extra_body": self.extra_body}

    def _payload(self, request: GenerationRequest) -> dict[str, Any]:
        p = request.params
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_dicts(request.messages),
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_new_tokens,
            "seed": p.seed,
            **self.extra_body,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        return body

    def _delay(self, attempt: int, response: Any | None) -> float:
        if response is not None:
            retry_after = response.headers.get("retry-after")
            if retry_after is not None:
                try:
                    return min(self.max_backoff_s, max(0.0, float(retry_after)))
                except ValueError:
                    pass  # an HTTP date; fall back to exponential backoff
        return min(self.max_backoff_s, self.backoff_s * (2**attempt))

    def _one(self, request: GenerationRequest) -> Completion:
        url = f"{self.base_url}/chat/completions"
        body = self._payload(request)
        last_error = ""
        for attempt in range(self.max_retries + 1):
            response = None
            try:
                response = self._client.post(url, json=body)
            except (self._httpx.TransportError, self._httpx.TimeoutException) as err:
                last_error = f"{type(err).__name__}: {err}"
            else:
                if response.status_code == 200:
                    return _content(response.json(), url)
                last_error = f"HTTP {response.status_code}: {response.text[:500]}"
                if response.status_code not in _RETRY_STATUS:
                    raise RuntimeError(f"openai backbone: {url} answered {last_error}")
            if attempt < self.max_retries:
                time.sleep(self._delay(attempt, response))
        raise RuntimeError(
            f"openai backbone: {url} failed after {self.max_retries + 1} attempts; last: {last_error}"
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Send all requests, ``max_concurrency`` at a time; outputs in request order,
        with the server's reported token usage."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


def _content(data: Any, url: str) -> Completion:
    try:
        text = (data["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError) as err:
        raise RuntimeError(
            f"openai backbone: {url} returned no choices[0].message.content: {str(data)[:300]}"
        ) from err
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text, _tokens(usage.get("prompt_tokens")), _tokens(usage.get("completion_tokens"))
    )


def _tokens(value: Any) -> int | None:
    # Servers that report no usage (or a malformed one) leave it to the cache's estimate.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
