"""A small client for any OpenAI-compatible chat-completions endpoint (stdlib ``urllib``).

Timeouts and retries: each attempt has ``timeout_seconds``; a timeout, a connection error, a
429 or a 5xx is retried up to ``max_retries`` times with exponential backoff
(``backoff_seconds`` × 2^attempt); any other HTTP error or a malformed answer fails at once.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from agent_reflection.cycle.config import LLMConfig
from agent_reflection.errors import ReflectionError


class LLMCallFailed(ReflectionError, RuntimeError):
    """The endpoint did not give a usable answer (after the retries, if retryable)."""


@dataclass(frozen=True)
class ChatAnswer:
    text: str
    model: str
    attempts: int


def endpoint(url: str) -> str:
    """``.../v1`` → ``.../v1/chat/completions``; a full completions URL is kept."""
    trimmed = url.rstrip("/")
    return trimmed if trimmed.endswith("/chat/completions") else f"{trimmed}/chat/completions"


def chat(
    config: LLMConfig, prompt: str, *, sleep: Callable[[float], None] = time.sleep
) -> ChatAnswer:
    """Send ``prompt`` as one user message; the assistant's text, or :class:`LLMCallFailed`."""
    if not config.url:
        raise LLMCallFailed(
            "no LLM endpoint configured (set [reflection.llm].url or $REFLECT_LLM_URL)"
        )
    body = json.dumps(
        {
            "model": config.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": config.max_tokens,
            "temperature": 0,
        }
    ).encode()
    headers = {"Content-Type": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    url = endpoint(config.url)
    last = ""
    for attempt in range(config.max_retries + 1):
        if attempt:
            sleep(config.backoff_seconds * 2 ** (attempt - 1))
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=config.timeout_seconds) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code} from {url}"
            if exc.code == 429 or exc.code >= 500:
                continue
            raise LLMCallFailed(f"{last}: check the URL, model and key") from exc
        except TimeoutError as exc:
            last = f"no answer from {url} within {config.timeout_seconds} s ({exc})"
            continue
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                last = f"no answer from {url} within {config.timeout_seconds} s"
            else:
                last = f"cannot reach {url} ({exc.reason})"
            continue
        return ChatAnswer(_content(raw, url), config.model, attempt + 1)
    raise LLMCallFailed(f"{last}; gave up after {config.max_retries + 1} attempts")


def _content(raw: bytes, url: str) -> str:
    try:
        doc = json.loads(raw)
        text = doc["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMCallFailed(
            f"{url} answered but not as a chat completion (choices[0].message.content): "
            f"{raw[:200]!r}"
        ) from exc
    if not isinstance(text, str):
        raise LLMCallFailed(f"{url}: choices[0].message.content is not text: {text!r}")
    return text
