"""The ``edit_file`` tool: replace exact text in a file.

Policies (the parts a caller can observe):

- ``old_text`` must occur exactly once (overlapping occurrences count) unless
  ``replace_all``; zero or several matches are errors that say how many and where, or
  why nothing matched (whitespace, letter case). LF text matches a CRLF file and line
  endings are preserved (see ``tools.textedit``).
- The file must have been read (or written) in this conversation and not changed
  since; the write is compare-and-swap against that version, atomic on disk (see
  ``tools.filestore``). Files over ``MAX_EDIT_BYTES``, binary files and text that is
  not UTF-8 are refused.
- A file git obeys (``tools.git_writes``: its configuration, a hook, whose exec bit an
  edit keeps) is edited only after the user's yes, whatever the approval setting.
- A document open in the editor is edited in its buffer (``workspace/applyEdit``,
  undoable there), keeping the user's unsaved changes.
"""

from __future__ import annotations

from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.permissions import CallPermission
from tooling.workspace import Workspace

from .diagnostics import problems_after, problems_before
from .errors import ToolError, resolve
from .filestore import FileStore, in_editor
from .git_writes import GitWrites
from .textedit import EditError, apply_edit, lines_phrase

MAX_EDIT_BYTES = 64 * 1024 * 1024

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "File to edit, relative to the workspace root.",
        },
        "old_text": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Exact text to replace, copied from read_file (indentation included). It "
                "must occur exactly once unless replace_all is true."
            ),
        },
        "new_text": {"type": "string", "description": "The replacement text."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of exactly one (default false).",
        },
    },
    "required": ["path", "old_text", "new_text"],
    "additionalProperties": False,
}


def edit_file_tool(workspace: Workspace, *, diagnostics_wait: float = 0.0) -> ToolDefinition:
    """``diagnostics_wait``: how long (s) the result waits for a language server's problems
    of the edited text (0: not asked)."""
    git_writes = GitWrites(workspace)

    async def permission_check(arguments: dict[str, Any]) -> CallPermission | None:
        every = " (every occurrence)" if arguments.get("replace_all") else ""
        change = f"Replaces{every}: {arguments['old_text']} With: {arguments['new_text']}"
        return await git_writes.permission(arguments["path"], "Edit", change)

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        old_text, new_text = arguments["old_text"], arguments["new_text"]
        if old_text == new_text:
            return "Error: old_text and new_text are identical; there is nothing to change"
        store = FileStore(workspace, context)
        try:
            target = resolve(workspace, arguments["path"])
            shown = store.shown(target)
            current = await store.current(target, max_bytes=MAX_EDIT_BYTES)
            try:
                edit = apply_edit(
                    current.text,
                    old_text,
                    new_text,
                    replace_all=arguments.get("replace_all", False),
                )
            except EditError as exc:
                raise ToolError(f"{shown}: {exc} Nothing was changed.") from None
            before = await problems_before(context, target, current.text, diagnostics_wait)
            written = await store.replace(current, edit.text, label="agent-lsp: edit_file")
        except ToolError as exc:
            return exc.text()
        problems = await problems_after(
            context, workspace, target, edit.text, before, diagnostics_wait
        )
        noun = "occurrence" if edit.count == 1 else "occurrences"
        where = f"{shown} at {lines_phrase(edit.lines, edit.count)}"
        if written.placed != "disk":
            return f"Replaced {edit.count} {noun} in {where} {in_editor(written)}{problems}"
        return f"Replaced {edit.count} {noun} in {where}{problems}"

    return ToolDefinition(
        name="edit_file",
        description=(
            "Replace old_text with new_text in a UTF-8 text file. old_text must match the "
            "file exactly (copy it from read_file) and occur exactly once, unless "
            "replace_all is true. The file's line endings (LF or CRLF) are preserved. The "
            "result names the line(s) changed. The file must have been read (read_file) in "
            "this conversation and not changed since. A file open in the editor is edited in "
            "its buffer (undoable there), keeping the user's unsaved changes. Where a language "
            "server handles the file, the result lists the problems the edit introduced."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=False,
        destructive=True,
        permission_check=permission_check,
        title="Edit file",
        summary_key="path",
        kind="edit",
        compaction_keeps="files changed (with paths)",
    )
