"""A strict LSP framing reader: any byte outside a well-formed frame is an error.

pygls's own reader skips newline-terminated junk between frames, so it cannot
tell whether stdout was polluted; this one can.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable
from typing import IO, Any

HEADER = re.compile(rb"Content-Length: (\d+)\r\n(?:Content-Type: [^\r\n]*\r\n)?\r\n")


class FramingError(AssertionError):
    pass


class StrictReader:
    """Reads frames from a byte stream on a thread; records any framing violation."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.messages: list[dict[str, Any]] = []
        self.error: str | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _read_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._stream.read(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _run(self) -> None:
        try:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    byte = self._stream.read(1)
                    if not byte:
                        if head:
                            raise FramingError(f"stream ended inside a header: {head!r}")
                        return
                    head += byte
                    if len(head) > 200:
                        raise FramingError(f"garbage where a header belongs: {head[:80]!r}")
                match = HEADER.fullmatch(head)
                if match is None:
                    raise FramingError(f"malformed header: {head!r}")
                body = self._read_exact(int(match.group(1)))
                message = json.loads(body)
                with self._cond:
                    self.messages.append(message)
                    self._cond.notify_all()
        except (FramingError, json.JSONDecodeError, EOFError) as exc:
            with self._cond:
                self.error = f"{type(exc).__name__}: {exc}"
                self._cond.notify_all()

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15) -> dict:
        with self._cond:
            found: list[dict[str, Any]] = []

            def ready() -> bool:
                found[:] = [m for m in self.messages if predicate(m)]
                return bool(found) or self.error is not None

            self._cond.wait_for(ready, timeout)
            if self.error is not None:
                raise FramingError(self.error)
            if not found:
                raise TimeoutError("no matching message")
            return found[0]


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
