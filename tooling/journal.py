"""What an ask changes, as tools report it (an interface; ``server.checkpoints.service`` has
the implementation).

Before an ask can change anything the server records a checkpoint of the workspace
(a snapshot taken by git, covering every tool, ``bash`` included). Two kinds of change
are invisible to that snapshot: edits that went into an editor's open buffer (not on
disk) and files the snapshot skips (git-ignored files, nested repositories, or every
file when git is not installed). File tools therefore report each change through the
ask's journal: a disk write right before it happens, a buffer edit once the editor
applied it. Any other tool that may change files (``bash``, an MCP tool) says when it
runs (:meth:`ChangeJournal.running`): a file that changed during the ask without a file
tool writing it, and not while one of those ran, is someone else's change (an editor's
own file, say), not the agent's.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol


class ChangeJournal(Protocol):
    async def ready(self) -> None:
        """Wait until the checkpoint of this ask is recorded.

        The runtime awaits this before running any tool that is not read-only, so
        nothing changes before the snapshot is taken. It never raises: when the
        snapshot fails the ask goes on with what the journal records.
        """
        ...

    def will_write(self, path: Path) -> None:
        """The file ``path`` (resolved, inside the workspace) is about to be written on
        disk. Only the first call per path in an ask records anything (its content
        before the ask's first write). Thread-safe: disk writes run in worker threads."""
        ...

    def edited_buffer(self, path: Path, before: str, after: str) -> None:
        """The editor applied the agent's edit of the open buffer of ``path``: its text
        went from ``before`` to ``after`` (not on disk; the editor reports its text
        later, so the journal keeps what the agent made)."""
        ...

    def running(self) -> AbstractContextManager[None]:
        """For the length of a ``with``: a tool whose changes no one reports (a command,
        an MCP tool) runs; what changes meanwhile may be its doing."""
        ...
