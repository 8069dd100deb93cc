"""What the agent has seen of each file, per conversation: stale-edit protection.

The engine activates one ledger per conversation around each ask (a context
variable, so the tool contract stays ``dict -> str`` and concurrent asks in other
conversations keep their own). The file tools record a fingerprint of a file's
content when the agent reads or writes it, and refuse to overwrite a file the
agent has not read, or that changed since (the user typed or saved, or another
process wrote), so nothing written after the agent's read is overwritten blind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path


def fingerprint(content: str | bytes) -> str:
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


@dataclass
class ReadLedger:
    seen: dict[Path, str] = field(default_factory=dict)

    def record(self, path: Path, print_: str) -> None:
        self.seen[path] = print_

    def forget(self, path: Path) -> None:
        self.seen.pop(path, None)

    def problem(self, path: Path, current: str, shown: str) -> str | None:
        """Why writing over ``path`` (now ``current``) would be blind, or None."""
        known = self.seen.get(path)
        if known is None:
            return (
                f"Error: {shown} already exists and has not been read in this conversation; "
                "read it with read_file first, then edit it (nothing was written)"
            )
        if known != current:
            return (
                f"Error: {shown} changed since you last read it (edited in the editor, saved, "
                "or written by another process); read it again with read_file before changing "
                "it (nothing was written)"
            )
        return None


_active: ContextVar[ReadLedger | None] = ContextVar("agent_lsp_read_ledger", default=None)


def active_ledger() -> ReadLedger | None:
    """The ledger of the conversation running this tool call (None outside an ask)."""
    return _active.get()


@contextmanager
def use_ledger(ledger: ReadLedger) -> Iterator[ReadLedger]:
    token = _active.set(ledger)
    try:
        yield ledger
    finally:
        _active.reset(token)
