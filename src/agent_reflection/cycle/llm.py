"""A small client for any OpenAI-compatible chat-completions endpoint (stdlib ``urllib``).

Timeouts and retries: each socket read waits at most ``timeout_seconds``; a timeout, a
connection error, a 429 or a 5xx is retried up to ``max_retries`` times with exponential backoff
(``backoff_seconds`` × 2^attempt); any other HTTP error or a malformed answer fails at once.

Bounds (a slow or hostile endpoint cannot hold a pass or fill memory): the body is streamed and
the call is cut once it passes ``max_response_bytes`` (not retried); a watchdog cuts an attempt
``max_call_seconds`` after it started, whatever the server drips (the socket timeout alone is per
read), and no attempt or backoff runs past the pass's budget (``max_pass_seconds``, or the
``deadline`` the caller gives). Every cut says which bound it hit.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_reflection.cycle.config import LLMConfig
from agent_reflection.errors import ReflectionError

#: Bytes asked of the socket per read while streaming an answer.
READ_CHUNK = 65_536


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
    config: LLMConfig,
    prompt: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> ChatAnswer:
    """Send ``prompt`` as one user message; the assistant's text, or :class:`LLMCallFailed`.

    ``deadline`` (a :func:`time.monotonic` value) is when the pass's LLM budget ends; default:
    ``max_pass_seconds`` from now.
    """
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
    pass_end = deadline if deadline is not None else time.monotonic() + config.max_pass_seconds
    pass_cut = (
        f"cut: the pass's LLM time budget is spent (max_pass_seconds = "
        f"{config.max_pass_seconds:g} s)"
    )
    last = ""
    attempts = 0
    for attempt in range(config.max_retries + 1):
        if attempt:
            wait = config.backoff_seconds * 2 ** (attempt - 1)
            if time.monotonic() + wait >= pass_end:
                raise LLMCallFailed(f"{last}; {pass_cut} after {attempts} attempt(s)")
            sleep(wait)
        remaining = pass_end - time.monotonic()
        if remaining <= 0:
            raise LLMCallFailed(f"{last + '; ' if last else ''}{pass_cut}")
        by_pass = remaining < config.max_call_seconds
        limit = (
            f"max_pass_seconds = {config.max_pass_seconds:g} s, the pass's budget"
            if by_pass
            else f"max_call_seconds = {config.max_call_seconds:g} s"
        )
        attempts += 1
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            raw = _bounded_post(
                request,
                read_timeout=min(config.timeout_seconds, remaining),
                seconds=min(config.max_call_seconds, remaining),
                max_bytes=config.max_response_bytes,
            )
        except _TooLarge as exc:
            raise LLMCallFailed(
                f"answer from {url} cut at max_response_bytes = {config.max_response_bytes:,} "
                f"bytes ({exc}); not retried"
            ) from exc
        except _OutOfTime as exc:
            last = f"answer from {url} cut at the total time limit ({limit}; {exc})"
            if by_pass:
                raise LLMCallFailed(f"{last}; gave up after {attempts} attempt(s)") from exc
            continue
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
        except (OSError, http.client.HTTPException) as exc:
            last = f"connection to {url} broke ({exc!r})"
            continue
        return ChatAnswer(_content(raw, url), config.model, attempt + 1)
    raise LLMCallFailed(f"{last}; gave up after {config.max_retries + 1} attempts")


class _TooLarge(Exception):
    """The answer passed ``max_response_bytes``."""


class _OutOfTime(Exception):
    """The watchdog cut the attempt at its total time limit."""


class _Watchdog:
    """Shuts down every socket of one attempt when its time is up (wakes a blocked read)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _opener(dog: _Watchdog) -> urllib.request.OpenerDirector:
    """An opener like urllib's default whose connections register their socket with ``dog``."""

    class Http(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            dog.track(self.sock)

    class Https(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            dog.track(self.sock)

    class HttpHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Http, req)

    class HttpsHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Https, req, context=self._context)  # type: ignore[attr-defined]

    return urllib.request.build_opener(HttpHandler(), HttpsHandler())


def _bounded_post(
    request: urllib.request.Request, *, read_timeout: float, seconds: float, max_bytes: int
) -> bytes:
    """The body of ``request``'s answer, read in chunks: :class:`_TooLarge` past ``max_bytes``,
    :class:`_OutOfTime` when the whole attempt takes more than ``seconds``."""
    with _Watchdog(seconds) as dog:
        try:
            with _opener(dog).open(request, timeout=read_timeout) as response:
                announced = response.headers.get("Content-Length", "")
                if announced.isdigit() and int(announced) > max_bytes:
                    raise _TooLarge(f"the server announced {int(announced):,} bytes")
                body = bytearray()
                while chunk := response.read1(READ_CHUNK):
                    if len(body) + len(chunk) > max_bytes:
                        raise _TooLarge(f"more than {max_bytes:,} bytes arrived")
                    body += chunk
        except (OSError, http.client.HTTPException) as exc:
            if dog.fired:
                raise _OutOfTime("the answer was not complete") from exc
            raise
        if dog.fired:
            raise _OutOfTime(f"{len(body):,} bytes had arrived")
    return bytes(body)


def _content(raw: bytes, url: str) -> str:
    try:
        doc = json.loads(raw)
        text = doc["choices"][0]["message"]["content"]
    except RecursionError as exc:  # [[[[...]]]] under the byte cap
        raise LLMCallFailed(f"{url} answered JSON nested too deeply to read") from exc
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMCallFailed(
            f"{url} answered but not as a chat completion (choices[0].message.content): "
            f"{raw[:200]!r}"
        ) from exc
    if not isinstance(text, str):
        raise LLMCallFailed(f"{url}: choices[0].message.content is not text: {text!r}")
    return text
