"""How ``agent-lsp ask`` answers ``agent/requestPermission``: on the terminal, if any.

- stdin is a terminal: the request is shown on stderr and the user types the key of one of
  the request's own options, named as the server names them: ``y`` (allow once), ``a``
  (allow always), ``n`` (reject, the default) or ``r`` (reject always), each only when
  offered (an MCP server's approval offers ``y`` Approve and start and ``n`` Reject);
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

from tooling.display import escape_consent

from ..protocol import CLIENT_CAN_ANSWER_PERMISSION

KEYS = {"y": "allow_once", "a": "allow_always", "n": "reject_once", "r": "reject_always"}
NAMES = {
    "allow_once": "allow once",
    "allow_always": "allow always",
    "reject_once": "reject",
    "reject_always": "reject always",
}


def offered(options: object) -> dict[str, tuple[str, str]]:
    """The keys of a request's options: key -> (option id, its name as shown). The kinds
    are ACP's; an option of another kind is not offered on the terminal."""
    keys: dict[str, tuple[str, str]] = {}
    by_kind = {kind: key for key, kind in KEYS.items()}
    for option in options if isinstance(options, list) else []:
        if not isinstance(option, dict):
            continue
        key = by_kind.get(str(option.get("kind")))
        if key is not None and key not in keys:
            name = escape_consent(str(option.get("name") or NAMES[KEYS[key]]))
            keys[key] = (str(option.get("optionId") or KEYS[key]), name)
    return keys or {key: (kind, NAMES[kind]) for key, kind in KEYS.items()}


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
        title = escape_consent(str(params.get("title") or params.get("toolName", "?")))
        reason = escape_consent(str(params.get("reason") or ""))
        print(f"agent-lsp: permission needed: {title}", file=self._err, flush=True)
        if reason:
            print(f"  reason: {reason}", file=self._err, flush=True)
        scope = escape_consent(str(params.get("alwaysScope") or ""))
        if scope and self._interactive:  # what [a] allows: the server's words, never ours
            print(f'  "always" allows: {scope}', file=self._err, flush=True)
        if not self._interactive:
            allowed = self._approve_all
            verdict = (
                "allowed (--approve)" if allowed else "rejected (no terminal; --approve allows)"
            )
            print(f"  {verdict}", file=self._err, flush=True)
            return selected("allow_once" if allowed else "reject_once")
        keys = offered(params.get("options"))
        choices = "  ".join(f"[{key}] {name}" for key, (_, name) in keys.items())
        try:
            while True:
                print(f"  {choices} > ", end="", file=self._err, flush=True)
                line = await read_line(self._stdin)
                if line is None:
                    return selected(None)
                key = line.strip().lower()[:1] or "n"
                if key in keys:
                    return selected(keys[key][0])
        except asyncio.CancelledError:
            print("\n  (withdrawn by the agent)", file=self._err, flush=True)
            raise


def is_terminal(stream: TextIO) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False


async def read_line(stream: TextIO) -> str | None:
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
