"""What the user is looking at, as a note the model reads with the prompt.

``agent/ask`` may carry ``context: {activeDocument?: {uri, selection?}, documents?}``.
The note names the file and the lines, and quotes the selected text from what the
user sees (the editor's buffer, unsaved changes included, else the file on disk),
capped at :data:`SELECTION_CHARS` with the cap said. The files the user points at
(``documents``: an editor's ``@file``) and the active document without a selection (its
file chip) are attached too, their content as the user sees it, within a budget
(:data:`FILE_CHARS` a file, :data:`ATTACHED_CHARS` in all; a cut says so, and a file
past the budget is named for the model to read). It is appended to the user
message after :data:`MARKER`, so the prompt itself can be told apart again
(conversation titles and history show the prompt, not the note). A URI outside
the workspace is refused like any path a tool is given.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from tooling.regular_files import read_regular
from tooling.workspace import Workspace, WorkspaceError

from ..errors import InvalidParamsError
from ..positions import LineIndex, fs_path
from ..protocol import EditorContext

MARKER = "\n\n[Editor context]\n"
SELECTION_CHARS = 20_000
MAX_DOCUMENTS = 20
# What an ask attaches of the files the user points at: each file's first FILE_CHARS, all
# of them together at most ATTACHED_CHARS (about 3,000 and 10,000 tokens).
FILE_CHARS = 12_000
ATTACHED_CHARS = 40_000
_MAX_READ_BYTES = 8 * 1024 * 1024  # a selection in a file larger than this is not quoted


class Buffers(Protocol):
    def buffer_text(self, path: Path) -> str | None: ...

    def position_encoding(self) -> str: ...


def prompt_of(content: str) -> str:
    """The user's prompt without the editor-context note."""
    return content.split(MARKER, 1)[0]


async def with_context(
    prompt: str, context: EditorContext | None, workspace: Workspace, buffers: Buffers | None
) -> str:
    """``prompt`` followed by the note for ``context`` (the prompt alone if it is empty)."""
    if context is None:
        return prompt
    lines: list[str] = []
    attached: list[tuple[Path, str]] = []  # the files whose content follows (path, shown)
    active = context.active_document
    if active is not None:
        path, shown = _resolve(active.uri, workspace, "context.activeDocument.uri")
        text, unsaved = await _text(path, buffers)
        where = f"The user's active editor shows {shown}"
        if unsaved:
            where += " (unsaved changes in the editor)"
        selection = active.selection
        if selection is None or text is None:
            lines.append(where + ".")
            if selection is None:
                attached.append((path, shown))
        else:
            encoding = buffers.position_encoding() if buffers is not None else "utf-16"
            index = LineIndex(text, encoding)
            start = index.offset(selection.start.line, selection.start.character)
            end = index.offset(selection.end.line, selection.end.character)
            start, end = min(start, end), max(start, end)
            first, last = selection.start.line + 1, selection.end.line + 1
            if start == end:
                lines.append(f"{where}, cursor on line {first}.")
            else:
                if selection.end.character == 0 and last > first:
                    last -= 1  # a selection of whole lines ends at the next line's start
                span = f"line {first}" if first == last else f"lines {first}-{last}"
                selected = text[start:end]
                note = ""
                if len(selected) > SELECTION_CHARS:
                    note = (
                        f"\n[selection cut to its first {SELECTION_CHARS:,} of "
                        f"{len(selected):,} characters; read the file for the rest]"
                    )
                    selected = selected[:SELECTION_CHARS]
                fence = _fence(selected)
                lines.append(f"{where}, with {span} selected:")
                lines.append(f"{fence}\n{selected}\n{fence}{note}")
    documents = context.documents or []
    if documents:
        named = []
        for i, uri in enumerate(documents[:MAX_DOCUMENTS]):
            path, shown = _resolve(uri, workspace, f"context.documents[{i}]")
            named.append(shown)
            if all(path != seen for seen, _ in attached):
                attached.append((path, shown))
        more = len(documents) - len(named)
        tail = f" (and {more} more)" if more > 0 else ""
        lines.append("The user also points at: " + ", ".join(named) + tail + ".")
    lines.extend(await _attachments(attached, buffers))
    if not lines:
        return prompt
    return prompt + MARKER + "\n".join(lines)


def with_note(content: str, line: str) -> str:
    """``content`` (a prompt, with or without its note) with ``line`` added to its note."""
    return content + ("\n" if MARKER in content else MARKER) + line


async def _attachments(files: list[tuple[Path, str]], buffers: Buffers | None) -> list[str]:
    """The content of ``files`` as the user sees it (unsaved changes included), each cut
    at :data:`FILE_CHARS`, all within :data:`ATTACHED_CHARS`; what is cut or left out is
    said, so the model knows to read the rest."""
    lines: list[str] = []
    budget = ATTACHED_CHARS
    for path, shown in files:
        text, unsaved = await _text(path, buffers)
        if text is None:
            lines.append(f"{shown} is not attached (unreadable, or too large); read it if needed.")
            continue
        if "\x00" in text:
            lines.append(f"{shown} is not attached (a binary file).")
            continue
        if budget <= 0:
            lines.append(f"{shown} is not attached (the attachments' budget is spent); read it.")
            continue
        cap = min(FILE_CHARS, budget)
        shown_text = text[:cap]
        budget -= len(shown_text)
        note = ""
        if len(text) > cap:
            cut = shown_text.count("\n") + 1
            note = (
                f"\n[cut to its first {cap:,} of {len(text):,} characters (to line {cut}); "
                "read the file for the rest]"
            )
        state = ", unsaved changes included" if unsaved else ""
        fence = _fence(shown_text)
        lines.append(f"Attached: {shown} (as the user sees it{state}):")
        lines.append(f"{fence}\n{shown_text}\n{fence}{note}")
    return lines


def _resolve(uri: str, workspace: Workspace, field: str) -> tuple[Path, str]:
    path = fs_path(uri) if "://" in uri else uri
    if not path:
        raise InvalidParamsError(field, f"not a file URI: {uri}")
    try:
        resolved = workspace.resolve(path)
    except WorkspaceError as exc:
        raise InvalidParamsError(field, str(exc)) from None
    return resolved, workspace.relative(resolved)


async def _text(path: Path, buffers: Buffers | None) -> tuple[str | None, bool]:
    """(what the user sees of ``path``, whether it differs from the disk)."""
    buffer = buffers.buffer_text(path) if buffers is not None else None  # on the loop
    disk = await asyncio.to_thread(_read_disk, path)
    if buffer is not None:
        return buffer, buffer != disk
    return disk, False


def _read_disk(path: Path) -> str | None:
    try:
        found = read_regular(path, _MAX_READ_BYTES)
    except OSError:  # absent, unreadable, or a FIFO or device (which would block)
        return None
    return None if found.cut else found.data.decode("utf-8", "replace")


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in ``text``."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)
