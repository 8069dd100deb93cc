"""One chat.completions request as the endpoint sees it: its attempts and its budget.

- **What we send back** is shaped in :mod:`server.model.stream`: the assistant
  turn with the fields the Chat Completions API defines and nothing else
  (``content`` always a string -- llama.cpp's server answers HTTP 500 to a missing
  or null one; never ``reasoning_content``, which DeepSeek refuses, nor the legacy
  ``function_call``, ``refusal``, ``audio`` or any provider extra). That module
  makes one attempt, streamed or not, and hands text on as it arrives.
- **How long a request may take.** :func:`complete` makes the attempts itself
  (the SDK's own retries are switched off for it, so they can be counted) and
  bounds them all by the client's ``timeout``: ``requestTimeout`` is the budget of
  the whole request, retries, the waits between them and the streaming of the
  answer included. A failure says how many attempts were made and over how long.

The retry rules follow the openai SDK's: a timeout, a refused connection, HTTP
408, 409, 429 and 5xx are retried (an ``x-should-retry`` header overrides), after
``Retry-After`` when the endpoint sends one, else 0.5 s doubling up to 8 s, less
up to 25 % jitter. A wait that would pass the deadline is not started. A stream
that fails after some of its text was handed on is not retried: the user has seen
that text, and a new attempt would show it again.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .endpoint import DEFAULT_TIMEOUT, ModelRequestError, timeout_error, translate_model_error
from .stream import DeltaSink, ModelReply, StreamSupport, request_once

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from .messages import Message

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0  # a longer Retry-After is not waited for
RETRIED_STATUSES = frozenset({408, 409, 429})

# Each client's copy that makes one attempt (the retries are ours), made once: a new copy
# per request would also make the SDK look up the platform again, in a thread, before it
# sends anything.
_SINGLE_ATTEMPT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class RequestPolicy:
    """How long one model request may take in all, and how often it is retried."""

    timeout: float  # seconds for the whole request: every attempt and every wait
    max_retries: int  # attempts after the first

    @classmethod
    def of(cls, client: AsyncOpenAI) -> RequestPolicy:
        """The policy the client was built with (``create_client`` sets both)."""
        timeout = getattr(client, "timeout", None)
        if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
            # An httpx.Timeout (a caller's own client): its read timeout, else our default.
            read = getattr(timeout, "read", None)
            timeout = read if isinstance(read, int | float) and read > 0 else DEFAULT_TIMEOUT
        retries = getattr(client, "max_retries", 0)
        return cls(float(timeout), retries if isinstance(retries, int) and retries > 0 else 0)


async def complete(
    client: AsyncOpenAI,
    *,
    model: str,
    messages: Sequence[Message],
    options: dict[str, Any],
    policy: RequestPolicy | None = None,
    streaming: StreamSupport | None = None,
    on_delta: DeltaSink | None = None,
) -> ModelReply:
    """One request, retried within its budget; a ModelReply or a ModelRequestError.

    Streamed when ``streaming`` allows it, its text passed to ``on_delta`` as it
    arrives (see :mod:`server.model.stream`); ``streaming=None`` asks plainly.
    """
    import openai  # already loaded: the caller built ``client`` with it

    policy = policy or RequestPolicy.of(client)
    once = _single_attempt(client)
    secrets = [client.api_key] if isinstance(client.api_key, str) else []
    base_url = str(client.base_url or "").rstrip("/") or None
    shown = _Shown(on_delta)
    started = time.monotonic()
    deadline = started + policy.timeout
    attempts = 0
    while True:
        attempts += 1
        remaining = deadline - time.monotonic()
        error: BaseException | None = None
        fields = {
            "model": model,
            "messages": list(messages),
            "timeout": remaining,
            # The SDK's header for retries (it counts its own); we make them here.
            "extra_headers": {"x-stainless-retry-count": str(attempts - 1)},
            **options,
        }
        try:
            async with asyncio.timeout(remaining):
                return await request_once(once, fields, streaming=streaming, on_delta=shown)
        except TimeoutError:  # our deadline, met mid-request (or mid-stream)
            failure = timeout_error(base_url)
        except (openai.OpenAIError, json.JSONDecodeError) as exc:
            failure = translate_model_error(exc, secrets=secrets, base_url=base_url)
            error = exc
        except ModelRequestError as malformed:  # an answer that is not one: not retried
            raise _counted(malformed, attempts, started, policy, deadline_note=False) from None

        if shown.any:  # part of the answer is on the user's screen: do not repeat it
            broke_off = _with_note(failure, "the answer broke off while streaming")
            raise _counted(broke_off, attempts, started, policy, deadline_note=False) from None
        wait = _retry_delay(error, failure, attempts) if attempts <= policy.max_retries else None
        if wait is not None and time.monotonic() + wait < deadline:
            await asyncio.sleep(wait)
            continue
        # Out of time (a timeout, or no room for the wait) rather than out of retries.
        out_of_time = failure.kind == "timeout" or wait is not None
        raise _counted(failure, attempts, started, policy, deadline_note=out_of_time) from None


def _single_attempt(client: AsyncOpenAI) -> AsyncOpenAI:
    if not client.max_retries:
        return client
    once = _SINGLE_ATTEMPT.get(client)
    if once is None:
        once = _SINGLE_ATTEMPT[client] = client.with_options(max_retries=0)
    return once


class _Shown:
    """``on_delta``, remembering whether any text was handed on."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self.any = False

    def __call__(self, channel: str, text: str) -> None:
        self.any = True
        if self._on_delta is not None:
            self._on_delta(channel, text)


def _retry_delay(
    exc: BaseException | None, failure: ModelRequestError, attempts: int
) -> float | None:
    """Seconds to wait before the next attempt, or None when this failure is final."""
    import openai

    backoff = min(INITIAL_RETRY_DELAY * 2.0 ** (attempts - 1), MAX_RETRY_DELAY)
    backoff *= 1 - 0.25 * random.random()
    if failure.kind in ("timeout", "connection"):
        return backoff
    if not isinstance(exc, openai.APIStatusError):
        return None  # a malformed response is not retried
    headers = exc.response.headers
    retry_after = _retry_after(headers)
    if retry_after is not None and retry_after > MAX_RETRY_AFTER:
        return None
    verdict = headers.get("x-should-retry")
    if verdict == "false" or (
        verdict != "true" and exc.status_code not in RETRIED_STATUSES and exc.status_code < 500
    ):
        return None
    return retry_after if retry_after is not None and retry_after > 0 else backoff


def _retry_after(headers: Any) -> float | None:
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        return seconds if math.isfinite(seconds) else MAX_RETRY_AFTER + 1
    return None


def _with_note(
    failure: ModelRequestError, note: str, *, attempts: int = 1, elapsed_ms: float = 0.0
) -> ModelRequestError:
    return ModelRequestError(
        f"{failure.message} ({note})",
        status=failure.status,
        provider_message=failure.provider_message,
        kind=failure.kind,
        overflow=failure.overflow,
        attempts=attempts,
        elapsed_ms=elapsed_ms,
    )


def _counted(
    failure: ModelRequestError,
    attempts: int,
    started: float,
    policy: RequestPolicy,
    *,
    deadline_note: bool,
) -> ModelRequestError:
    """``failure`` saying how many attempts were made and over how long."""
    elapsed = time.monotonic() - started
    note = f"{attempts} attempt{'' if attempts == 1 else 's'} over {elapsed:.1f} s"
    if deadline_note:
        note += f"; requestTimeout ({policy.timeout:g} s) covers all attempts"
    return _with_note(failure, note, attempts=attempts, elapsed_ms=elapsed * 1000)
