"""The ``write_file`` tool: create a file, or replace all of an existing one.

Policies (the parts a caller can observe):

- UTF-8, written atomically (temporary file in the same folder, fsync, rename, fsync of
  the folder); missing parent folders are created; an existing file keeps its
  permission bits, and a file that is not writable is refused.
- Replacing an existing file is compare-and-swap, like ``edit_file``: it must have been
  read (or written) in this conversation and not changed since, or nothing is written
  and the model is told to read it again. A new file needs no read, and a file that
  appears while it is being written is not replaced.
- A file git obeys (``tools.git_writes``: its configuration, hooks, a ``.git`` pointer, what
  would make a repository) is written only after the user's yes, whatever the approval
  setting (a ``required`` permission request showing the content).
- A document open in the editor is changed in its buffer (``workspace/applyEdit``,
  undoable there) instead of on disk; see ``tools.filestore``.
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

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "File to create or overwrite, relative to the workspace root.",
        },
        "content": {"type": "string", "description": "The complete new file content."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def write_file_tool(workspace: Workspace, *, diagnostics_wait: float = 0.0) -> ToolDefinition:
    """``diagnostics_wait``: how long (s) the result waits for a language server's problems
    of the new content (0: not asked)."""
    git_writes = GitWrites(workspace)

    async def permission_check(arguments: dict[str, Any]) -> CallPermission | None:
        content = arguments["content"]
        return await git_writes.permission(
            arguments["path"], "Write", f"New content ({len(content)} characters): {content}"
        )

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        content = arguments["content"]
        store = FileStore(workspace, context)
        try:
            target = resolve(workspace, arguments["path"])
            before = await problems_before(context, target, None, diagnostics_wait)
            written = await store.write(target, content, label="agent-lsp: write_file")
        except ToolError as exc:
            return exc.text()
        shown = store.shown(target)
        problems = await problems_after(
            context, workspace, target, content, before, diagnostics_wait
        )
        if written.placed != "disk":
            return f"Wrote {len(content)} characters to {shown} {in_editor(written)}{problems}"
        return f"Wrote {len(content.encode('utf-8'))} bytes to {shown}{problems}"

    return ToolDefinition(
        name="write_file",
        description=(
            "Create a file or replace its whole content (UTF-8), creating missing parent "
            "folders. The write is atomic and keeps an existing file's permissions. To "
            "change part of an existing file, prefer edit_file. An existing file must have "
            "been read (read_file) in this conversation and not changed since. A file open "
            "in the editor is changed in its buffer (undoable there) instead of on disk. "
            "Where a language server handles the file, the result lists the problems the "
            "new content introduced."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=False,
        destructive=True,
        permission_check=permission_check,
        title="Write file",
        summary_key="path",
        kind="edit",
        compaction_keeps="files changed (with paths)",
    )
