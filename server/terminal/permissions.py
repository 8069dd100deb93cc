"""How ``agent-lsp ask`` answers ``agent/requestPermission``: on the terminal, if any.

- stdin is a terminal: the request is shown on stderr and the user types ``y`` (allow
  once), ``a`` (allow always), ``n`` (reject, the default) or ``r`` (reject always);
  end of input dismisses it. If the server withdraws the request (the ask was cancelled,
  or nobody answered in time), the prompt says so and stops waiting.
- no terminal: every request is rejected, unless the user passed ``--approve``, which
  allows each one once (for scripts whose author accepts what the agent runs).

The title and reason are escaped again here (``tooling.display``), whatever the server
did: an escape sequence in them would hide part of the command being allowed.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, TextIO

from tooling.display import escape_control

from ..protocol import CLIENT_CAN_ANSWER_PERMISSION

KEYS = {"y": "allow_once", "a": "allow_always", "n": "reject_once", "r": "reject_always"}
CHOICES = "[y] allow once  [a] allow always  [n] reject  [r] reject always"


def capabilities() -> dict[str, Any]:
    """The ``experimental`` client capability: this client always answers."""
    return {"agent": {CLIENT_CAN_ANSWER_PERMISSION: True}}


def selected(option: str | None) -> dict[str, Any]:
    if option is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": option}}


class TerminalPermissions:
    def __init__(self, stdin: TextIO, err: TextIO, *, approve_all: bool = False) -> None:
        self._stdin = stdin
        self._err = err
        self._approve_all = approve_all
        self._interactive = is_terminal(stdin)

    async def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        title = escape_control(str(params.get("title") or params.get("toolName", "?")))
        reason = escape_control(str(params.get("reason") or ""))
        print(f"agent-lsp: permission needed: {title}", file=self._err, flush=True)
        if reason:
            print(f"  reason: {reason}", file=self._err, flush=True)
        scope = escape_control(str(params.get("alwaysScope") or ""))
        if scope and self._interactive:  # what [a] allows: the server's words, never ours
            print(f'  "always" allows: {scope}', file=self._err, flush=True)
        if not self._interactive:
            allowed = self._approve_all
            verdict = (
                "allowed (--approve)" if allowed else "rejected (no terminal; --approve allows)"
            )
            print(f"  {verdict}", file=self._err, flush=True)
            return selected("allow_once" if allowed else "reject_once")
        try:
            while True:
                print(f"  {CHOICES} > ", end="", file=self._err, flush=True)
                line = await _read_line(self._stdin)
                if line is None:
                    return selected(None)
                key = line.strip().lower()[:1] or "n"
                if key in KEYS:
                    return selected(KEYS[key])
        except asyncio.CancelledError:
            print("\n  (withdrawn by the agent)", file=self._err, flush=True)
            raise


def is_terminal(stream: TextIO) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False


async def _read_line(stream: TextIO) -> str | None:
    """One line from ``stream`` without blocking the event loop (None at end of input)."""
    loop = asyncio.get_running_loop()
    fd = stream.fileno()
    done: asyncio.Future[str | None] = loop.create_future()
    buffer = bytearray()

    def readable() -> None:
        chunk = os.read(fd, 4096)
        if not chunk:
            if not done.done():
                done.set_result(buffer.decode(errors="replace") if buffer else None)
            return
        buffer.extend(chunk)
        if b"\n" in buffer and not done.done():
            done.set_result(buffer.split(b"\n", 1)[0].decode(errors="replace"))

    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)
