"""A minimal LSP client over a child process's pipes: JSON-RPC 2.0 with LSP's framing.

Not pygls: nothing below the faces imports a wire library (the contract
``no-lsp-below-the-faces``), and what agent-lsp needs of a language server is a few
requests and one notification it listens to (``textDocument/publishDiagnostics``): plain
dicts in, plain dicts out, each request bounded by its caller. Requests the server sends
us (``workspace/configuration``, ``client/registerCapability``, ...) get a null answer,
which every server takes as "nothing configured".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 * 1024 * 1024  # a length header beyond this is garbage, not a message
STDERR_LINES = 20


class ClientError(Exception):
    """The server answered with an error, sent garbage or ended; the message says which."""


NotificationSink = Callable[[str, Any], None]


class JsonRpcClient:
    """One running language server and the requests waiting for its answers."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_notification: NotificationSink,
        on_end: Callable[[], None] | None = None,
    ):
        self.process = process
        self._on_notification = on_notification
        self._on_end = on_end  # told once when the connection ends (whoever waits wakes)
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._ended: str | None = None
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._reader = asyncio.create_task(self._read(), name="language server reader")
        self._err_reader = asyncio.create_task(self._read_stderr(), name="language server stderr")

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        on_notification: NotificationSink,
        on_end: Callable[[], None] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> JsonRpcClient:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
        )
        return cls(process, on_notification, on_end)

    @property
    def ended(self) -> str | None:
        """Why the connection ended (None: it runs)."""
        return self._ended

    async def request(self, method: str, params: Any, *, within: float) -> Any:
        if self._ended is not None:
            raise ClientError(self._ended)
        self._next_id += 1
        ident = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return await asyncio.wait_for(future, within)
        except TimeoutError:
            with contextlib.suppress(ClientError):
                await self.notify("$/cancelRequest", {"id": ident})
            raise
        finally:
            self._waiting.pop(ident, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: Mapping[str, Any]) -> None:
        if self._ended is not None:
            raise ClientError(self._ended)
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._end(f"its input closed ({exc})")
            raise ClientError(self._ended or "ended") from None

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                length = None
                while True:
                    line = await stdout.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length is None or not 0 <= length <= MAX_MESSAGE:
                    raise ClientError("it sent a message without a valid Content-Length")
                message = json.loads(await stdout.readexactly(length))
                if not isinstance(message, dict):
                    raise ClientError("it sent a message that is not a JSON object")
                await self._dispatch(message)
        except (EOFError, asyncio.IncompleteReadError):
            self._end(await self._exit_words())
        except (ClientError, ValueError) as exc:
            self._end(f"it answered garbage: {exc}")
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        except asyncio.CancelledError:
            self._end("closed")
            raise

    async def _exit_words(self) -> str:
        try:
            code = await asyncio.wait_for(self.process.wait(), 2.0)
        except TimeoutError:
            return "it closed its output"
        with contextlib.suppress(TimeoutError):  # its last words, read to their end
            await asyncio.wait_for(asyncio.shield(self._err_reader), 1.0)
        tail = " | ".join(list(self.stderr)[-3:])
        return f"it exited with code {code}" + (f" ({tail})" if tail else "")

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        # In chunks: readline() gives up on a line over its 64 KiB limit, and a reader gone
        # would leave the pipe to fill and the server to block writing to it.
        pending = b""
        while chunk := await stderr.read(65536):
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-4096:]
            for line in lines:
                self.stderr.append(line.decode("utf-8", "replace").rstrip()[:300])
        if pending:
            self.stderr.append(pending.decode("utf-8", "replace").rstrip()[:300])

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:  # a request to us: nothing configured, nothing registered
                await self._send(
                    {"jsonrpc": "2.0", "id": message["id"], "result": _answer(message)}
                )
            else:
                try:
                    self._on_notification(str(message["method"]), message.get("params"))
                except Exception:
                    log.exception("language server notification %s", message.get("method"))
            return
        future = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(ClientError(str(error.get("message") or "an error")))
        else:
            future.set_result(message.get("result"))

    def _end(self, why: str) -> None:
        first = self._ended is None
        if first:
            self._ended = why
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ClientError(why))
        if first and self._on_end is not None:
            self._on_end()

    async def close(self, *, within: float = 2.0) -> None:
        """``shutdown`` and ``exit`` when it still runs, then the process ended for sure."""
        if self._ended is None:
            with contextlib.suppress(ClientError, TimeoutError):
                await self.request("shutdown", None, within=within)
                await self.notify("exit", None)
        with contextlib.suppress(ProcessLookupError):
            try:
                await asyncio.wait_for(self.process.wait(), within)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._end("closed")
        for task in (self._reader, self._err_reader):
            task.cancel()
        await asyncio.gather(self._reader, self._err_reader, return_exceptions=True)


def _answer(message: Mapping[str, Any]) -> Any:
    if message.get("method") == "workspace/configuration":
        items = (message.get("params") or {}).get("items") or []
        return [None for _ in items]
    return None
