"""The editor's open documents, as the file tools see them.

A language server knows the text of every document open in the editor, unsaved
changes included, and can ask the editor to change a buffer
(``workspace/applyEdit``) so the change is visible and undoable there. The file
tools depend only on this small interface; ``server.documents`` implements it
over LSP, and without it (``None``) the tools work on disk alone.
"""

from __future__ import annotations

import bisect
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


class EditorDocuments(Protocol):
    def buffer_text(self, path: Path) -> str | None:
        """The text of ``path`` if it is open in the editor (unsaved changes included)."""
        ...

    def can_edit(self) -> bool:
        """Whether buffers can be changed through the editor (``workspace/applyEdit``)."""
        ...

    async def apply_edits(
        self, path: Path, base_text: str, edits: list[BufferEdit], *, label: str
    ) -> EditOutcome:
        """Ask the editor to apply ``edits`` (computed on ``base_text``) to the buffer."""
        ...


class LineIndex:
    """Offsets in a text to LSP positions (line, character in the chosen encoding).

    LSP lines end at ``\\n``, ``\\r\\n`` or ``\\r``; characters are counted in UTF-16
    code units unless the client negotiated another position encoding.
    """

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self._text = text
        self._encoding = encoding
        starts = [0]
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch == "\r":
                i += 2 if i + 1 < n and text[i + 1] == "\n" else 1
                starts.append(i)
            elif ch == "\n":
                i += 1
                starts.append(i)
            else:
                i += 1
        self._starts = starts

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset) - 1
        prefix = self._text[self._starts[line] : offset]
        return line, units(prefix, self._encoding)


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def minimal_edit(old: str, new: str) -> BufferEdit:
    """One edit turning ``old`` into ``new`` that leaves common ends untouched.

    Keeping the untouched prefix and suffix out of the edit keeps the user's
    cursor, folds and marks there, and makes the editor's undo step exact.
    """
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return BufferEdit(start, end_old, new[start:end_new])
