"""Transitional: the file tools still reach their ledger through a context variable,
set from the explicit ``ToolContext`` by each handler (see ``with_context``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.ledger import FileLedger, Fingerprint


def fingerprint(content: str | bytes) -> str:
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


class ReadLedger:
    """The old string-print view over a conversation's :class:`FileLedger`."""

    def __init__(self, ledger: FileLedger) -> None:
        self._ledger = ledger

    def record(self, path: Path, print_: str) -> None:
        self._ledger.record(path, Fingerprint("any", print_))

    def forget(self, path: Path) -> None:
        self._ledger.forget(path)

    def problem(self, path: Path, current: str, shown: str) -> str | None:
        """Why writing over ``path`` (now ``current``) would be blind, or None."""
        known = self._ledger.recorded(path)
        if known is None:
            return (
                f"Error: {shown} already exists and has not been read in this conversation; "
                "read it with read_file first, then edit it (nothing was written)"
            )
        if known.digest != current:
            return (
                f"Error: {shown} changed since you last read it (edited in the editor, saved, "
                "or written by another process); read it again with read_file before changing "
                "it (nothing was written)"
            )
        return None


_active: ContextVar[ReadLedger | None] = ContextVar("agent_lsp_read_ledger", default=None)


def active_ledger() -> ReadLedger | None:
    return _active.get()


@contextmanager
def use_ledger(ledger: FileLedger) -> Iterator[None]:
    token = _active.set(ReadLedger(ledger))
    try:
        yield
    finally:
        _active.reset(token)


def with_context(
    handler: Callable[[dict[str, Any], Any], Awaitable[str]],
) -> Callable[[dict[str, Any], ToolContext], Awaitable[str]]:
    async def run(arguments: dict[str, Any], context: ToolContext) -> str:
        with use_ledger(context.ledger):
            return await handler(arguments, context.documents)

    return run
