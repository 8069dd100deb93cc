"""The transport's read stream, watched for its end.

``ClientSession`` does not tell its owner that the server went away: its dispatcher sees
the read stream end and fails the requests in flight, nothing more. This wrapper is that
stream (the SDK's ``ReadStream`` protocol) with one addition, a callback at its end, so a
stdio server that exits (or an HTTP server that closes the session) turns the connection
``failed`` at once instead of at the next call.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
from mcp.client._transport import ReadStream
from mcp.shared.message import SessionMessage

Item = SessionMessage | Exception


class WatchedReadStream:
    def __init__(self, inner: ReadStream[Item], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        # The dispatcher runs each message in its sender's context when the stream has one
        # (the HTTP transport's); the wrapper must not hide it.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
