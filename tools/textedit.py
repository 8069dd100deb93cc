"""The pure text side of the edits: find ``old_text``, replace it, keep line endings;
and the minimal buffer edit between two texts.

Matching happens on the text with every CRLF read as LF (and the model's CRLFs, if it
sends any, read as LF too), so LF text from the model matches a CRLF file. Each
replacement is mapped back onto the original string: everything outside the replaced
spans is kept byte for byte, and the newlines of the inserted text take the style of
the span they replace (CRLF if it had CRLF, LF if it had LF; a span without a newline
takes the file's dominant style). A mixed-ending file therefore stays mixed.

A unique match means exactly one occurrence counting overlapping ones (``"aa"`` is
ambiguous in ``"aaa"``); ``replace_all`` replaces non-overlapping occurrences from
the left, like ``str.replace``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import islice

from tooling.documents import BufferEdit

# Line numbers listed in a message.
_SHOWN_LINES = 10
# Occurrences counted (overlapping) before a count is reported as "N+".
_COUNT_CAP = 1000


class EditError(ValueError):
    """The edit cannot be applied; the message says why and what to do."""


@dataclass(frozen=True)
class EditResult:
    text: str
    count: int
    lines: list[int]  # first line of each replacement, in the new text


def apply_edit(text: str, old_text: str, new_text: str, *, replace_all: bool) -> EditResult:
    old = old_text.replace("\r\n", "\n")
    new = new_text.replace("\r\n", "\n")
    if old == new:
        raise EditError("old_text and new_text are identical (apart from line endings)")

    norm = text.replace("\r\n", "\n")
    # Positions, in ``norm``, of the newlines that were CRLF in ``text``.
    crlf_at = _crlf_positions(text) if "\r\n" in text else []

    starts = _occurrences(norm, old, overlapping=not replace_all)
    if not starts:
        raise EditError(_not_found_message(norm, old))
    if not replace_all and len(starts) > 1:
        count = f"{len(starts)}+" if len(starts) >= _COUNT_CAP else str(len(starts))
        lines = list(dict.fromkeys(_lines_of(norm, starts)))
        where = _lines_phrase(lines[:_SHOWN_LINES], len(lines))
        raise EditError(
            f"old_text occurs {count} times (at {where}); it "
            "must occur exactly once. Include more surrounding lines to make it unique, "
            "or set replace_all to true to replace every occurrence."
        )

    lf_only = norm.count("\n") - len(crlf_at)
    default_newline = "\r\n" if len(crlf_at) > lf_only else "\n"

    def original(i: int) -> int:
        # Each CRLF before norm index i adds one character in the original.
        return i + bisect_left(crlf_at, i)

    pieces: list[str] = []
    line = 1
    lines: list[int] = []
    cursor = 0
    for s in starts:
        begin, end = original(s), original(s + len(old))
        kept = text[cursor:begin]
        pieces.append(kept)
        line += kept.count("\n")
        span = text[begin:end]
        if "\r\n" in span:
            newline = "\r\n"
        elif "\n" in span:
            newline = "\n"
        else:
            newline = default_newline
        inserted = new.replace("\n", newline) if newline != "\n" else new
        lines.append(line)
        pieces.append(inserted)
        line += inserted.count("\n")
        cursor = end
    pieces.append(text[cursor:])
    result = "".join(pieces)
    if result == text:
        raise EditError("the edit would leave the file unchanged")
    return EditResult(text=result, count=len(starts), lines=lines)


def _crlf_positions(text: str) -> list[int]:
    positions = []
    removed = 0
    for m in re.finditer("\r\n", text):
        positions.append(m.start() - removed)  # where its "\n" lands in the normalized text
        removed += 1
    return positions


def _occurrences(haystack: str, needle: str, *, overlapping: bool) -> list[int]:
    found = []
    step = 1 if overlapping else len(needle)
    i = haystack.find(needle)
    while i != -1:
        found.append(i)
        if overlapping and len(found) >= _COUNT_CAP:
            break
        i = haystack.find(needle, i + step)
    return found


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _lines_of(text: str, sorted_indices: list[int]) -> list[int]:
    """Line numbers of ascending indices, counting each stretch of text once."""
    lines, line, previous = [], 1, 0
    for index in sorted_indices:
        line += text.count("\n", previous, index)
        lines.append(line)
        previous = index
    return lines


def _lines_phrase(lines: list[int], total: int) -> str:
    listed = ", ".join(str(n) for n in lines)
    more = ", …" if total > len(lines) else ""
    return f"line {listed}" if total == 1 else f"lines {listed}{more}"


def lines_phrase(lines: list[int], total: int) -> str:
    """``line 12`` / ``lines 3, 17, 42`` / ``lines 1, 2, …`` (for result messages)."""
    return _lines_phrase(lines[:_SHOWN_LINES], total)


def _not_found_message(norm: str, old: str) -> str:
    base = "old_text was not found (0 matches)."
    tokens = old.split()
    if tokens:
        loose = re.search(r"\s+".join(re.escape(t) for t in tokens), norm)
        if loose is not None:
            return (
                f"{base} It matches at line {_line_of(norm, loose.start())} if whitespace is "
                "ignored: indentation, tabs/spaces, blank lines or line breaks differ. Copy "
                "the exact text from read_file."
            )
    folded = re.search(re.escape(old), norm, re.IGNORECASE)
    if folded is not None:
        return (
            f"{base} It matches at line {_line_of(norm, folded.start())} if letter case is "
            "ignored. "
            "Copy the exact text from read_file."
        )
    first = next((ln.strip() for ln in old.split("\n") if ln.strip()), "")
    if len(first) >= 4 and "\n" in old.strip():
        hits = [m.start() for m in islice(re.finditer(re.escape(first), norm), _SHOWN_LINES + 1)]
        if hits:
            where = _lines_phrase(_lines_of(norm, hits[:_SHOWN_LINES]), len(hits))
            return (
                f"{base} Its first line appears at {where}, but the lines after it differ. "
                "Read that part of the file again and copy the exact text."
            )
    return f"{base} Read the file again (read_file) and copy the exact text to replace."


def minimal_edit(old: str, new: str) -> BufferEdit:
    """One buffer edit turning ``old`` into ``new`` that leaves common ends untouched.

    Keeping the untouched prefix and suffix out of the edit keeps the user's cursor,
    folds and marks there, and makes the editor's undo step exact.
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
