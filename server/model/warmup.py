"""Warming the model SDK off the event loop, so the first ask is as quick as a later one.

Importing ``openai`` is most of it (~1 s), but not all: the SDK and its HTTP stack
load more on their first request (resource modules, the async backend, socket
streams, response parsing), ~60 ms that would otherwise run on the server's event
loop in the user's first ask. :func:`rehearse_sdk` runs one request of each kind
the agent makes (plain, streamed, a model listing) through a throwaway client, on
a private event loop in the calling (worker) thread, against a canned HTTP answer
on a loopback socket it opens itself: nothing leaves the machine and the user's
endpoint and key are not involved.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .messages import Message, ToolCall

log = logging.getLogger(__name__)

WARM_SWITCH_INTERVAL = 0.0005  # seconds (CPython's default is 0.005)

_COMPLETION = {
    "id": "warm-up",
    "object": "chat.completion",
    "created": 0,
    "model": "warm-up",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_warm",
                        "type": "function",
                        "function": {"name": "warm", "arguments": "{}"},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
_CALL: ToolCall = {
    "id": "call_warm",
    "type": "function",
    "function": {"name": "warm", "arguments": "{}"},
}
_MESSAGES: list[Message] = [
    {"role": "system", "content": "warm"},
    {"role": "user", "content": "warm"},
    {"role": "assistant", "content": "", "tool_calls": [_CALL]},
    {"role": "tool", "tool_call_id": "call_warm", "content": "warm"},
]
_OPTIONS = {
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "warm",
                "description": "warm",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
    ],
    "tool_choice": "auto",
}
_MODELS = {"object": "list", "data": [{"id": "warm-up", "object": "model"}]}
_CHUNK = {
    "id": "warm-up",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "warm-up",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "warm"}}],
}
_STREAM = f"data: {json.dumps(_CHUNK)}\n\ndata: [DONE]\n\n".encode()


@contextlib.contextmanager
def responsive_switching() -> Iterator[None]:
    """While a worker thread imports or warms: it and the event loop share the GIL, and a
    shorter switch interval makes it hand the GIL back sooner, so requests keep being
    answered."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, WARM_SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def rehearse_sdk() -> None:
    """A chat completion, a streamed one and a model listing through a throwaway client."""
    with responsive_switching():
        try:
            asyncio.run(_rehearse())
        except Exception:  # warming is an optimisation: never let it break the server
            log.debug("SDK warm-up rehearsal failed", exc_info=True)


async def _rehearse() -> None:
    from openai import AsyncOpenAI

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = await reader.readexactly(length)
                kind, data = b"application/json", json.dumps(_COMPLETION).encode()
                if head.startswith(b"GET"):
                    data = json.dumps(_MODELS).encode()
                elif json.loads(request).get("stream"):
                    kind, data = b"text/event-stream", _STREAM
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: "
                    + kind
                    + b"\r\n"
                    + f"content-length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed the connection (or the private loop is ending)
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = AsyncOpenAI(api_key="warm-up", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    # The agent's own paths (a request with its retries, plain and streamed; the
    # endpoint's model list).
    from .request import complete
    from .served_models import served_models
    from .stream import StreamSupport

    async with server:
        try:
            # Messages of every role and a tool: the SDK inspects each param type the
            # first time it meets it (~7 ms), so the request must look like the agent's.
            await complete(client, model="warm-up", messages=_MESSAGES, options=_OPTIONS)
            await complete(
                client,
                model="warm-up",
                messages=_MESSAGES,
                options=_OPTIONS,
                streaming=StreamSupport(),
            )
            await served_models(client, http_timeout=10)
        finally:
            await client.close()
