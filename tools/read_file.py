"""The ``read_file`` tool: a window of a text file, as the editor's buffer or the disk has it.

Policies (the parts a caller can observe):

- The file's text as is: no line numbers, CRLF shown as LF, so an excerpt can be pasted
  into ``edit_file`` unchanged. Without ``limit`` at most ``DEFAULT_LINES`` lines are
  returned; any call returns at most ``OUTPUT_CHARS`` characters of text (always at
  least one line); a line over 2,000 characters is cut with a ``… [line truncated:
  ...]`` marker.
- When lines follow the window, a trailing note says ``continue with offset=N`` and
  gives the exact number of lines left when the rest of the file is at most 4 MiB;
  beyond that it says "more lines follow" instead, because counting would mean reading
  the whole file (a window costs time and memory proportional to offset + window, not
  to the file size). A window that starts after line 1 and reaches the end says so.
- Binary files (a NUL byte in the first 8 KB, which includes UTF-16) are refused. Text
  that is not valid UTF-8 is shown with U+FFFD for the undecodable bytes and a note
  saying so (the readable majority of a Latin-1 file is more useful than a refusal);
  ``edit_file`` refuses such files because writing them back would lose those bytes.
- A document open in the editor is read from its buffer, unsaved changes included, with
  a note when that differs from the disk. What was shown is fingerprinted for the
  stale-edit rule (see ``tools.filestore``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.workspace import Workspace, WorkspaceError

from .errors import ToolError, human_size, resolve
from .filestore import FileStore
from .textfiles import BinaryFileError, LineWindow, OffsetPastEndError

DEFAULT_LINES = 2000
OUTPUT_CHARS = 100_000

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "File to read, relative to the workspace root.",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "1-based number of the first line to return (default 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Maximum number of lines to return (default {DEFAULT_LINES}).",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


def read_file_tool(workspace: Workspace, also_readable: tuple[Path, ...] = ()) -> ToolDefinition:
    """``also_readable``: folders outside the workspace it may read too (absolute paths
    into them only, never through a symlink out of them)."""
    extra = [Workspace(folder) for folder in also_readable if folder.is_dir()]

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        offset = arguments.get("offset", 1)
        limit = arguments.get("limit", DEFAULT_LINES)
        where = _readable_folder(arguments["path"], workspace, extra)
        store = FileStore(where, context)
        try:
            target = resolve(where, arguments["path"])
            shown = store.shown(target)
            try:
                read = await store.read(target, offset, limit, OUTPUT_CHARS)
            except BinaryFileError:
                raise ToolError(
                    f"{shown} looks like a binary file (it contains NUL bytes); read_file "
                    "only returns text"
                ) from None
            except OffsetPastEndError as exc:
                lines = f"{exc.total_lines:,} line{'s' if exc.total_lines != 1 else ''}"
                raise ToolError(
                    f"offset {offset} is past the end of {shown}, which has {lines}"
                ) from None
        except ToolError as exc:
            return exc.text()
        return render(shown, read.window, offset, read.notes)

    return ToolDefinition(
        name="read_file",
        description=(
            "Read a UTF-8 text file in the workspace. Returns the exact file text (no line "
            f"numbers; CRLF shown as LF), at most {DEFAULT_LINES} lines or "
            f"{OUTPUT_CHARS:,} characters per call; a trailing [bracketed note] tells how "
            "to continue with offset=N when more lines follow. Lines over 2,000 characters "
            "are truncated. Binary files are refused. A file open in the editor is read from "
            "the editor's buffer, unsaved changes included."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=True,
        title="Read file",
        summary_key="path",
        kind="read",
        compaction_keeps="files read (with paths) and what was learned from them",
    )


def render(shown: str, window: LineWindow, offset: int, notes: list[str]) -> str:
    """The lines, then the notes: where they came from, and how to continue."""
    notes = list(notes)
    if not window.lines:
        return "\n".join([f"[{shown} is empty]", *notes])
    if window.invalid_utf8:
        notes.append(
            f"[note: {shown} is not valid UTF-8; undecodable bytes are shown as U+FFFD (�), "
            "and edit_file cannot edit this file]"
        )
    span = f"lines {window.first:,}-{window.last:,}"
    if window.more:
        why = f" (output limit of {OUTPUT_CHARS:,} characters reached)"
        why = why if window.hit_char_limit else ""
        if window.total is not None:
            notes.append(
                f"[{span} of {window.total:,} shown{why}; {window.remaining:,} more "
                f"line{'s' if window.remaining != 1 else ''}: continue with "
                f"offset={window.last + 1}]"
            )
        else:
            notes.append(
                f"[{span} shown{why}; more lines follow (not counted: the file is "
                f"{human_size(window.file_size)}): continue with offset={window.last + 1}]"
            )
    elif window.first > 1:
        notes.append(f"[{span} of {window.last:,} shown; end of file]")
    text = "\n".join(window.lines)
    return text + "\n\n" + "\n".join(notes) if notes else text


def _readable_folder(path: str, workspace: Workspace, extra: list[Workspace]) -> Workspace:
    """The folder an absolute ``path`` is read from: one of ``extra`` it lies in, else the
    workspace (whose boundary then refuses what lies outside it)."""
    if not extra or not path.startswith("/"):
        return workspace
    for folder in extra:
        try:
            folder.resolve(path)
        except WorkspaceError:
            continue
        return folder
    return workspace
