"""The editor's open documents, as tools see them (an interface, no protocol here).

A language server knows the text of every document open in the editor, unsaved
changes included, and can ask the editor to change a buffer
(``workspace/applyEdit``) so the change is visible and undoable there. Tools depend
only on this small interface; ``server.lsp.documents`` implements it over LSP,
``server.acp.documents`` over ACP's ``fs/*`` requests, and without it (``None`` in the
tool context) tools work on disk alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class BufferEdit:
    """Replace ``[start, end)`` (offsets into the buffer's text) with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class EditOutcome:
    applied: bool
    # Why not, in words for the model (e.g. "the user rejected this edit").
    reason: str = ""
    # The editor's text of the file after it applied the change, when it says so at once
    # (ACP: read back once after fs/write_text_file); None: it reports its text later
    # (LSP: didChange), so the tools wait briefly for it.
    held: str | None = None
    # Whether the editor saved the change to disk (None: not known, or not saved).
    saved: bool | None = None


class EditorDocuments(Protocol):
    def buffer_text(self, path: Path) -> str | None:
        """The text of ``path`` if it is open in the editor (unsaved changes included)."""
        ...

    def open_paths(self) -> list[Path]:
        """The files open in the editor now (resolved paths); empty when the editor does
        not say (ACP)."""
        ...

    async def read_text(self, path: Path) -> str | None:
        """What the file tools read of ``path``: the editor's text of it (an open buffer,
        unsaved changes included), None to read the disk. An editor whose files are
        reached by request (ACP's ``fs/read_text_file``) answers for any file it can."""
        ...

    def position_encoding(self) -> str:
        """How the editor counts a line's characters: "utf-16" (LSP's default), "utf-8"
        or "utf-32" (a selection's columns are read in it)."""
        ...

    def can_edit(self) -> bool:
        """Whether buffers can be changed through the editor (``workspace/applyEdit``)."""
        ...

    async def apply_edits(
        self, path: Path, base_text: str, edits: list[BufferEdit], *, label: str
    ) -> EditOutcome:
        """Ask the editor to apply ``edits`` (computed on ``base_text``) to the buffer."""
        ...

    async def create_text(self, path: Path, text: str, *, label: str) -> EditOutcome | None:
        """Create the file ``path`` (absent) with ``text`` through the editor; None when this
        editor does not create files (the disk is written instead)."""
        ...
