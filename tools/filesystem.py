"""File tools: ``read_file``, ``write_file``, ``edit_file`` and ``glob``.

Each factory binds a tool to one :class:`Workspace`. Every path goes through
``Workspace.resolve`` (symlinks resolved, then checked to be inside the root), so a
``..``, an absolute path or a symlink leading outside is refused, never touched. File
I/O runs in a worker thread (``asyncio.to_thread``); git runs as an asyncio
subprocess. Recoverable problems come back as ``Error: ...`` text, and results name
paths relative to the workspace root (a symlink is named by its resolved target).

Policies (the parts a caller can observe):

- **read_file** returns the file's text as is: no line numbers, CRLF shown as LF, so
  an excerpt can be pasted into ``edit_file`` unchanged. Without ``limit`` at most
  ``DEFAULT_LINES`` lines are returned; any call returns at most ``OUTPUT_CHARS``
  characters of text (always at least one line); a line over 2,000 characters is cut
  with a ``… [line truncated: ...]`` marker. When lines follow the window, a trailing
  note says ``continue with offset=N`` and gives the exact number of lines left when
  the rest of the file is at most 4 MiB; beyond that it says "more lines follow"
  instead, because counting would mean reading the whole file (a window costs time
  and memory proportional to offset + window, not to the file size). A window that
  starts after line 1 and reaches the end says so. Binary files (a NUL byte in the
  first 8 KB, which includes UTF-16) are refused. Text that is not valid UTF-8 is
  shown with U+FFFD for the undecodable bytes and a note saying so (the readable
  majority of a Latin-1 file is more useful than a refusal); ``edit_file`` refuses
  such files because writing them back would lose those bytes.
- **write_file** writes UTF-8 atomically (temporary file in the same folder, fsync,
  ``os.replace``, fsync of the folder), creates missing parent folders, keeps an
  existing file's permission bits and refuses a file that is not writable.
- **edit_file** replaces ``old_text`` that must occur exactly once (overlapping
  occurrences count) unless ``replace_all``; zero or several matches are errors that
  say how many and where, or why nothing matched (whitespace, letter case). LF text
  matches a CRLF file and line endings are preserved (see ``tools.textedit``). The
  write is atomic and is abandoned if the file changed on disk since it was read.
  Files over ``MAX_EDIT_BYTES`` are refused.
- **glob** lists matching files sorted by path (code-point order, so ``B`` before
  ``a``), at most ``MAX_GLOB_RESULTS`` with the number of the rest. Pattern semantics,
  ignore rules and the symlink policy are described in ``tools.globbing``.
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import threading
from pathlib import Path
from typing import Any

from tooling.contract import ToolDefinition
from tooling.documents import EditorDocuments
from tooling.workspace import Workspace, WorkspaceError

from .documents import minimal_edit
from .globbing import (
    Matcher,
    PatternError,
    git_ignores,
    git_list,
    is_listable_file,
    split_pattern,
    walk,
)
from .ledger import active_ledger, fingerprint, with_context
from .textedit import EditError, apply_edit, lines_phrase
from .textfiles import (
    BinaryFileError,
    FileChangedError,
    NotRegularFileError,
    OffsetPastEndError,
    atomic_write,
    looks_binary,
    open_regular,
    read_window,
    window_of,
)

DEFAULT_LINES = 2000
OUTPUT_CHARS = 100_000
MAX_EDIT_BYTES = 64 * 1024 * 1024
MAX_GLOB_RESULTS = 200


# --- read_file ----------------------------------------------------------------------

READ_FILE_PARAMETERS: dict[str, Any] = {
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


def read_file_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], documents: EditorDocuments | None) -> str:
        path, offset, limit = arguments["path"], arguments.get("offset", 1), arguments.get("limit")
        target = _resolve(workspace, path)
        if isinstance(target, str):
            return target
        buffer = documents.buffer_text(target) if documents is not None else None
        if buffer is not None:
            return await asyncio.to_thread(_read_buffer, workspace, target, buffer, offset, limit)
        return await asyncio.to_thread(_read_file, workspace, path, offset, limit)

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
        parameters=READ_FILE_PARAMETERS,
        handler=with_context(handler),
        read_only=True,
        title="Read file",
    )


def _read_file(workspace: Workspace, path: str, offset: int, limit: int | None) -> str:
    target = _resolve(workspace, path)
    if isinstance(target, str):
        return target
    shown = workspace.relative(target)
    try:
        window = read_window(
            target, offset, DEFAULT_LINES if limit is None else limit, OUTPUT_CHARS
        )
    except BinaryFileError:
        return (
            f"Error: {shown} looks like a binary file (it contains NUL bytes); read_file "
            "only returns text"
        )
    except OffsetPastEndError as exc:
        return (
            f"Error: offset {offset} is past the end of {shown}, which has "
            f"{exc.total_lines:,} line{'s' if exc.total_lines != 1 else ''}"
        )
    except OSError as exc:
        return _os_error(exc, shown, "read")

    _remember_disk(target)
    return _format_window(shown, window, offset, [])


def _read_buffer(
    workspace: Workspace, target: Path, buffer: str, offset: int, limit: int | None
) -> str:
    """read_file of a document open in the editor: its buffer, not the disk."""
    shown = workspace.relative(target)
    data = buffer.encode("utf-8", "surrogatepass")
    try:
        window = window_of(
            io.BytesIO(data),
            len(data),
            offset,
            DEFAULT_LINES if limit is None else limit,
            OUTPUT_CHARS,
        )
    except BinaryFileError:
        return f"Error: {shown} looks like binary content (it contains NUL characters)"
    except OffsetPastEndError as exc:
        return (
            f"Error: offset {offset} is past the end of {shown}, which has "
            f"{exc.total_lines:,} line{'s' if exc.total_lines != 1 else ''}"
        )
    ledger = active_ledger()
    if ledger is not None:
        ledger.record(target, fingerprint(data))
    on_disk = _disk_bytes(target)
    if on_disk is None:
        source = "[read from the editor's buffer: this file is not saved to disk yet]"
    elif on_disk != data:
        source = (
            "[read from the editor's buffer: it has unsaved changes; commands run with bash "
            "see the saved file on disk]"
        )
    else:
        source = ""
    return _format_window(shown, window, offset, [source] if source else [])


def _format_window(shown: str, window: Any, offset: int, notes: list[str]) -> str:
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
                f"{_size(window.file_size)}): continue with offset={window.last + 1}]"
            )
    elif window.first > 1:
        notes.append(f"[{span} of {window.last:,} shown; end of file]")
    text = "\n".join(window.lines)
    return text + "\n\n" + "\n".join(notes) if notes else text


def _disk_bytes(target: Path) -> bytes | None:
    try:
        with open_regular(target) as f:
            if os.fstat(f.fileno()).st_size > MAX_EDIT_BYTES:
                return b""
            return f.read()
    except OSError:
        return None


def _disk_print(target: Path) -> str | None:
    """The fingerprint of a file on disk, or None if there is no file.

    Content hash up to ``MAX_EDIT_BYTES`` (the largest file edit_file takes); for
    bigger files size, mtime and inode stand in, since hashing would read it all.
    """
    try:
        st = target.stat()
        if st.st_size > MAX_EDIT_BYTES:
            return f"stat:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        with open_regular(target) as f:
            return fingerprint(f.read())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None  # nothing to overwrite blind (the write itself refuses a folder)
    except OSError:
        return "unreadable"


def _remember_disk(target: Path) -> None:
    ledger = active_ledger()
    if ledger is not None and (print_ := _disk_print(target)) is not None:
        ledger.record(target, print_)


def _remember_written(target: Path, data: bytes) -> None:
    """Record what the agent just wrote without reading it back (same print as
    :func:`_disk_print`: the content hash, or the stat for files over the edit limit)."""
    ledger = active_ledger()
    if ledger is None:
        return
    if len(data) > MAX_EDIT_BYTES:
        _remember_disk(target)
    else:
        ledger.record(target, fingerprint(data))


def _stale(target: Path, shown: str, current: str | None) -> str | None:
    """Stale-edit protection: an ``Error:`` if writing over ``target`` would be blind."""
    ledger = active_ledger()
    if ledger is None or current is None:  # outside an ask, or a new file
        return None
    return ledger.problem(target, current, shown)


async def _apply_in_editor(
    documents: EditorDocuments, target: Path, shown: str, base: str, new: str, label: str
) -> str | None:
    """Change an open buffer through the editor; None on success, else ``Error:`` text."""
    outcome = await documents.apply_edits(target, base, [minimal_edit(base, new)], label=label)
    if not outcome.applied:
        return f"Error: {shown} was not changed: {outcome.reason}"
    # The editor reports its new text with didChange, usually just before or after
    # answering; wait briefly so the next read sees the agent's own edit.
    for _ in range(100):
        if documents.buffer_text(target) == new:
            break
        await asyncio.sleep(0.01)
    ledger = active_ledger()
    if ledger is not None:
        ledger.record(target, fingerprint(new))
    return None


# --- write_file ---------------------------------------------------------------------

WRITE_FILE_PARAMETERS: dict[str, Any] = {
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


def write_file_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], documents: EditorDocuments | None) -> str:
        path, content = arguments["path"], arguments["content"]
        target = _resolve(workspace, path)
        if isinstance(target, str):
            return target
        buffer = documents.buffer_text(target) if documents is not None else None
        if documents is not None and buffer is not None and documents.can_edit():
            shown = workspace.relative(target)
            problem = _stale(target, shown, fingerprint(buffer)) or _unicode_problem(content)
            if problem:
                return problem
            failed = await _apply_in_editor(
                documents, target, shown, buffer, content, "agent-lsp: write_file"
            )
            return failed or (
                f"Wrote {len(content)} characters to {shown} in the editor (the change is in "
                "its buffer, unsaved; the user saves it)"
            )
        return await asyncio.to_thread(_write_file, workspace, path, content, buffer)

    return ToolDefinition(
        name="write_file",
        description=(
            "Create a file or replace its whole content (UTF-8), creating missing parent "
            "folders. The write is atomic and keeps an existing file's permissions. To "
            "change part of an existing file, prefer edit_file. An existing file must have "
            "been read (read_file) in this conversation and not changed since. A file open "
            "in the editor is changed in its buffer (undoable there) instead of on disk."
        ),
        parameters=WRITE_FILE_PARAMETERS,
        handler=with_context(handler),
        read_only=False,
        destructive=True,
        title="Write file",
    )


def _write_file(workspace: Workspace, path: str, content: str, buffer: str | None = None) -> str:
    target = _resolve(workspace, path)
    if isinstance(target, str):
        return target
    shown = workspace.relative(target)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        return "Error: content is not valid Unicode text (it has unpaired surrogates)"
    on_disk = _disk_bytes(target) if buffer is not None else None
    # Hashing the old file is only needed when a ledger will compare it.
    current = _disk_print(target) if active_ledger() is not None else None
    if problem := _unsaved_problem(shown, buffer, on_disk) or _stale(target, shown, current):
        return problem
    try:
        if target.exists() and not os.access(target, os.W_OK):
            return f"Error: permission denied: {shown} is not writable"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            return (
                f"Error: cannot create the folder for {shown}: a file is in the way "
                f"({_blocking_file(workspace, target.parent)})"
            )
        atomic_write(target, data)
    except OSError as exc:
        return _write_error(exc, workspace, target)
    _remember_written(target, data)
    return f"Wrote {len(data)} bytes to {shown}"


def _unsaved_problem(shown: str, buffer: str | None, on_disk: bytes | None) -> str | None:
    """A buffer with unsaved changes that the editor cannot change for us.

    Writing the disk under it would be overwritten by the user's next save (or
    overwrite their changes), so refuse; a clean buffer simply reloads.
    """
    if buffer is None or on_disk is None or buffer.encode("utf-8", "surrogatepass") == on_disk:
        return None
    return (
        f"Error: {shown} has unsaved changes in the editor, and this editor does not accept "
        "edits from agent-lsp (workspace/applyEdit); ask the user to save or close it first "
        "(nothing was written)"
    )


def _unicode_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Error: the text is not valid Unicode (it has unpaired surrogates)"
    return None


def _blocking_file(workspace: Workspace, folder: Path) -> str:
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return f"{workspace.relative(candidate)} is a file"
    return "unknown"


# --- edit_file ----------------------------------------------------------------------

EDIT_FILE_PARAMETERS: dict[str, Any] = {
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


def edit_file_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], documents: EditorDocuments | None) -> str:
        path, old_text, new_text = arguments["path"], arguments["old_text"], arguments["new_text"]
        replace_all = arguments.get("replace_all", False)
        target = _resolve(workspace, path)
        if isinstance(target, str):
            return target
        buffer = documents.buffer_text(target) if documents is not None else None
        if documents is not None and buffer is not None and documents.can_edit():
            return await _edit_buffer(
                workspace, documents, target, buffer, old_text, new_text, replace_all
            )
        return await asyncio.to_thread(
            _edit_file, workspace, path, old_text, new_text, replace_all, buffer
        )

    return ToolDefinition(
        name="edit_file",
        description=(
            "Replace old_text with new_text in a UTF-8 text file. old_text must match the "
            "file exactly (copy it from read_file) and occur exactly once, unless "
            "replace_all is true. The file's line endings (LF or CRLF) are preserved. The "
            "result names the line(s) changed. The file must have been read (read_file) in "
            "this conversation and not changed since. A file open in the editor is edited in "
            "its buffer (undoable there), keeping the user's unsaved changes."
        ),
        parameters=EDIT_FILE_PARAMETERS,
        handler=with_context(handler),
        read_only=False,
        destructive=True,
        title="Edit file",
    )


async def _edit_buffer(
    workspace: Workspace,
    documents: EditorDocuments,
    target: Path,
    buffer: str,
    old_text: str,
    new_text: str,
    replace_all: bool,
) -> str:
    """edit_file on a document open in the editor: edit its buffer via the editor."""
    shown = workspace.relative(target)
    if old_text == new_text:
        return "Error: old_text and new_text are identical; there is nothing to change"
    if problem := _stale(target, shown, fingerprint(buffer)) or _unicode_problem(new_text):
        return problem
    try:
        edit = apply_edit(buffer, old_text, new_text, replace_all=replace_all)
    except EditError as exc:
        return f"Error: {shown}: {exc} Nothing was changed."
    failed = await _apply_in_editor(
        documents, target, shown, buffer, edit.text, "agent-lsp: edit_file"
    )
    if failed:
        return failed
    noun = "occurrence" if edit.count == 1 else "occurrences"
    return (
        f"Replaced {edit.count} {noun} in {shown} at {lines_phrase(edit.lines, edit.count)} "
        "in the editor (the change is in its buffer, unsaved; the user saves it)"
    )


def _edit_file(
    workspace: Workspace,
    path: str,
    old_text: str,
    new_text: str,
    replace_all: bool,
    buffer: str | None = None,
) -> str:
    if old_text == new_text:
        return "Error: old_text and new_text are identical; there is nothing to change"
    target = _resolve(workspace, path)
    if isinstance(target, str):
        return target
    shown = workspace.relative(target)
    try:
        with open_regular(target) as f:
            before = os.fstat(f.fileno())
            if before.st_size > MAX_EDIT_BYTES:
                return (
                    f"Error: {shown} is too large to edit ({_size(before.st_size)}; the "
                    f"limit is {_size(MAX_EDIT_BYTES)})"
                )
            data = f.read()
    except FileNotFoundError:
        return f"Error: file not found: {shown} (use write_file to create a file)"
    except OSError as exc:
        return _os_error(exc, shown, "read")
    if looks_binary(data):
        return f"Error: {shown} looks like a binary file (it contains NUL bytes); not edited"
    if problem := _unsaved_problem(shown, buffer, data) or _stale(target, shown, fingerprint(data)):
        return problem
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (
            f"Error: {shown} is not valid UTF-8 (first bad byte on line {line}); edit_file "
            "only edits UTF-8 text, so nothing was changed"
        )
    try:
        edit = apply_edit(text, old_text, new_text, replace_all=replace_all)
    except EditError as exc:
        return f"Error: {shown}: {exc} Nothing was changed."
    try:
        new_data = edit.text.encode("utf-8")
    except UnicodeEncodeError:
        return "Error: new_text is not valid Unicode text (it has unpaired surrogates)"
    try:
        if not os.access(target, os.W_OK):
            return f"Error: permission denied: {shown} is not writable"
        atomic_write(target, new_data, expected=before)
    except FileChangedError:
        return (
            f"Error: {shown} changed on disk while it was being edited; nothing was "
            "written. Read it again and retry."
        )
    except OSError as exc:
        return _write_error(exc, workspace, target)
    _remember_written(target, new_data)
    noun = "occurrence" if edit.count == 1 else "occurrences"
    return f"Replaced {edit.count} {noun} in {shown} at {lines_phrase(edit.lines, edit.count)}"


# --- glob ---------------------------------------------------------------------------

GLOB_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Glob relative to path: * and ? stay within one folder level, ** spans "
                "folders, {a,b} gives alternatives. '*.py' = top level only; '**/*.py' = "
                "any depth."
            ),
        },
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "Folder to search, relative to the workspace root (default '.').",
        },
        "include_ignored": {
            "type": "boolean",
            "description": "Also list .git and files ignored by git (default false).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def glob_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], documents: EditorDocuments | None) -> str:
        return await _glob(
            workspace,
            arguments["pattern"],
            arguments.get("path", "."),
            arguments.get("include_ignored", False),
        )

    return ToolDefinition(
        name="glob",
        description=(
            "Find files by glob pattern inside the workspace, e.g. '**/*.py' or "
            "'src/**/*.{ts,tsx}'. Returns matching file paths (relative to the workspace "
            f"root), sorted, at most {MAX_GLOB_RESULTS}. Skips .git and git-ignored files "
            "unless include_ignored is true."
        ),
        parameters=GLOB_PARAMETERS,
        handler=with_context(handler),
        read_only=True,
        title="Find files",
    )


async def _glob(workspace: Workspace, pattern: str, path: str, include_ignored: bool) -> str:
    prepared = await asyncio.to_thread(_prepare_glob, workspace, pattern, path)
    if isinstance(prepared, str):
        return prepared
    start, base, matcher = prepared
    hint = "" if include_ignored else " (.git and git-ignored files were not searched)"
    if base is None:  # a literal folder named by the pattern does not exist
        return f"No files match {pattern!r} in {workspace.relative(start)}{hint}"
    where = workspace.relative(base)

    root = workspace.root
    found: list[str] | None = None
    if not include_ignored:
        found = await git_list(base, matcher)
        if found == [] and await git_ignores(root):
            found = None  # the workspace sits in an ignored folder of an enclosing repo
    if found is None:
        stop = threading.Event()
        try:
            found = await asyncio.to_thread(
                walk, root, base, matcher, respect_ignores=not include_ignored, stop=stop
            )
        except asyncio.CancelledError:
            stop.set()  # the walk thread checks this between folders
            raise
    return await asyncio.to_thread(_format_glob, workspace, base, where, pattern, found, hint)


def _prepare_glob(
    workspace: Workspace, pattern: str, path: str
) -> tuple[Path, Path | None, Matcher] | str:
    """(search folder from ``path``, folder to list or None if it does not exist,
    matcher), or an error."""
    start = _resolve(workspace, path)
    if isinstance(start, str):
        return start
    if not start.exists():
        return f"Error: folder not found: {workspace.relative(start)}"
    if not start.is_dir():
        return f"Error: not a folder: {workspace.relative(start)} (path must name a folder)"
    try:
        split = split_pattern(pattern)
        base = start
        if split.prefix:
            folded = _resolve(workspace, str(start.joinpath(*split.prefix)))
            if isinstance(folded, str):
                if "escapes workspace" in folded:
                    return f"Error: pattern {pattern!r} reaches outside the workspace"
                return folded
            base = folded
        matcher = Matcher(split.rest)
    except PatternError as exc:
        return f"Error: {exc}: {pattern!r}"
    return start, (base if base.is_dir() else None), matcher


def _format_glob(
    workspace: Workspace, base: Path, where: str, pattern: str, found: list[str], hint: str
) -> str:
    found.sort()
    root = workspace.root
    prefix = "" if where == "." else where + "/"
    shown: list[str] = []
    chars = 0
    examined = 0
    for relpath in found:
        if len(shown) >= MAX_GLOB_RESULTS or chars >= OUTPUT_CHARS:
            break
        examined += 1
        # git lists deleted-but-tracked files and symlinks to folders too; check what is
        # shown (checking all of a 100k-file listing would cost more than git did).
        if not is_listable_file(base / relpath, root):
            continue
        line = _printable(prefix + relpath)
        shown.append(line)
        chars += len(line) + 1
    if not shown:
        return f"No files match {pattern!r} in {where}{hint}"
    rest = len(found) - examined
    if rest:
        shown.append(
            f"[{len(shown)} files shown, sorted by path; {rest:,} more matches not shown: "
            "narrow the pattern or path]"
        )
    return "\n".join(shown)


def _printable(name: str) -> str:
    # Names that are not UTF-8 (kept as surrogates by the listing) cannot be JSON text.
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --- shared -------------------------------------------------------------------------


def _resolve(workspace: Workspace, path: str) -> Path | str:
    """The resolved path inside the workspace, or ``Error: ...`` text."""
    try:
        return workspace.resolve(path)
    except WorkspaceError as exc:
        return f"Error: {exc}"
    except RuntimeError:  # Path.resolve on Python < 3.13 reports a symlink loop this way
        return f"Error: symlink loop: {path}"
    except OSError as exc:
        return f"Error: cannot resolve {path}: {exc.strerror or exc}"


def _os_error(exc: OSError, shown: str, action: str) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"Error: file not found: {shown}"
    if isinstance(exc, IsADirectoryError):
        return f"Error: {shown} is a folder, not a file" + (
            " (use glob to list its files)" if action == "read" else ""
        )
    if isinstance(exc, NotADirectoryError):
        return f"Error: a parent of {shown} is a file, not a folder"
    if isinstance(exc, PermissionError):
        return f"Error: permission denied: cannot {action} {shown}"
    if isinstance(exc, NotRegularFileError):
        return f"Error: {shown} is not a regular file (a FIFO, socket or device)"
    if exc.errno == errno.ENOSPC:
        return f"Error: no space left on the device; {shown} was not written"
    reason = exc.strerror or str(exc)
    return f"Error: could not {action} {shown}: {reason}"


def _write_error(exc: OSError, workspace: Workspace, target: Path) -> str:
    shown = workspace.relative(target)
    if isinstance(exc, PermissionError) and os.access(target, os.W_OK):
        # The file is writable but its folder is not: the temporary file for the atomic
        # replace cannot be created there.
        return (
            f"Error: permission denied: cannot write {shown}: its folder "
            f"{workspace.relative(target.parent)} is not writable (an atomic write creates "
            "a temporary file next to the file)"
        )
    return _os_error(exc, shown, "write")


def _size(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    if n < 1024**3:
        return f"{n / 1024**2:.1f} MB"
    return f"{n / 1024**3:.1f} GB"
