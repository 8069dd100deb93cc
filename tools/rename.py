"""The ``rename`` tool: a language server's rename, applied like any edit.

The server computes the workspace edit; it is applied through the file store as
``edit_file`` applies its change (``tools.filestore``): checkpointed, each file under the
stale-edit rule (it must have been read in this conversation and not changed since), an
open document changed in its buffer, atomic on disk. All or nothing before the first
write: when a file cannot be changed (not read yet, outside the folder, changed since),
nothing is, and the result says which files to read first. File creations, renames and
deletions in the server's edit are never applied (said). A call asks the user where an
edit would (the tool is ``destructive``, like ``edit_file``).
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.language import LanguageError, TextChange
from tooling.workspace import Workspace

from .diagnostics import shown_path
from .errors import ToolError
from .filestore import Current, FileStore
from .git_writes import GitWrites
from .navigation import NO_SOURCE, POSITION, position_of

MAX_EDIT_BYTES = 64 * 1024 * 1024

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        **POSITION,
        "new_name": {"type": "string", "minLength": 1, "description": "The new name."},
    },
    "required": ["path", "line", "new_name"],
    "additionalProperties": False,
}


def apply_changes(text: str, changes: Sequence[TextChange]) -> str:
    """``text`` with ``changes`` (positions in characters, 1-based) applied, last first."""
    starts = [0]
    for index, ch in enumerate(text):
        if ch == "\n":
            starts.append(index + 1)

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(starts):
            return len(text)
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(text)
        return min(start + column - 1, end)

    def bounds(change: TextChange) -> tuple[int, int, str]:
        start, end = change.span.start, change.span.end
        return offset(start.line, start.column), offset(end.line, end.column), change.text

    # In one pass (not a copy of the whole text per edit): LSP's edits do not overlap.
    pieces, at = [], 0
    for start, end, new in sorted(bounds(c) for c in changes):
        start = max(start, at)
        pieces += [text[at:start], new]
        at = max(at, end)
    pieces.append(text[at:])
    return "".join(pieces)


def _obeyed(workspace: Workspace, paths: list[Path]) -> list[str]:
    """The files among ``paths`` git obeys, each with why (the file tools' own check)."""
    check = GitWrites(workspace)
    return [
        f"{shown_path(workspace, path)}: {why}" for path in paths if (why := check.obeys(str(path)))
    ]


def rename_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        language = context.language
        if language is None:
            return NO_SOURCE
        if any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in arguments["new_name"]):
            return "Error: new_name must be one name: no spaces, line breaks or control characters"
        try:
            target, position = await position_of(workspace, arguments, context)
            edit = await language.rename(target, position, arguments["new_name"])
        except ToolError as exc:
            return exc.text()
        except LanguageError as exc:
            return f"Error: {exc}"
        if not edit.changes:
            return "Error: the language server proposes no change for a rename there"
        # Git runs what such a file names, outside the sandbox: edit_file asks the user for
        # each; a rename, whose files only the server's answer names, does not write them.
        obeyed = await asyncio.to_thread(_obeyed, workspace, list(edit.changes))
        if obeyed:
            return (
                "Error: the rename was not applied (nothing was changed): it would change "
                "files git obeys, which only edit_file changes (the user is asked):\n"
                + "\n".join(obeyed)
            )
        store = FileStore(workspace, context)
        loaded: list[tuple[Current, Sequence[TextChange]]] = []
        refused: list[str] = []
        for path, changes in sorted(edit.changes.items()):
            shown = shown_path(workspace, path)
            if not workspace.contains(path):
                refused.append(f"{shown}: outside the workspace folder")
                continue
            try:
                loaded.append((await store.current(path, max_bytes=MAX_EDIT_BYTES), changes))
            except ToolError as exc:
                refused.append(f"{shown}: {exc}")
            except ValueError:  # a name no file can have (a NUL the server's URI held)
                refused.append(f"{shown}: not a file name")
        if refused:
            return (
                "Error: the rename was not applied (nothing was changed); it would change "
                f"{len(edit.changes)} file(s), and these cannot be changed now:\n"
                + "\n".join(refused)
            )
        changed: list[str] = []
        for current, changes in loaded:
            shown = shown_path(workspace, current.target)
            try:
                await store.replace(
                    current, apply_changes(current.text, changes), label="agent-lsp: rename"
                )
            except ToolError as exc:
                done = ", ".join(changed) or "none"
                return f"Error: {shown}: {exc.text()} (already renamed in: {done})"
            count = len(changes)
            changed.append(f"{shown} ({count} change{'s' if count != 1 else ''})")
        lines = [f"Renamed to {arguments['new_name']} in {len(changed)} file(s):", *changed]
        lines += [f"Not applied: {what}" for what in edit.unsupported]
        return "\n".join(lines)

    return ToolDefinition(
        name="rename",
        description=(
            "Rename the symbol at a position everywhere, as the language server computes it, "
            "and apply the change to every file it touches (each must have been read in "
            "this conversation). Name the position by line and column, or line and symbol."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=False,
        destructive=True,
        title="Rename symbol",
        summary_key="new_name",
        kind="edit",
        compaction_keeps="files changed (with paths)",
    )
