"""Minimal edits: the one buffer edit that turns a text into another."""

from __future__ import annotations

from tooling.documents import BufferEdit


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
