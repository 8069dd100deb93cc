"""What the file tools share: resolving the model's path, and telling the model what
went wrong in words it can act on.

A :class:`ToolError` is a refusal or an environmental failure (a bad path, a missing
file, a permission denied, EIO): the handler returns it as the call's ``Error: ...``
text. Anything else that escapes a handler is a bug and propagates.
"""

from __future__ import annotations

import errno
from pathlib import Path

from tooling.workspace import Workspace, WorkspaceError

from .textfiles import NotRegularFileError


class ToolError(Exception):
    """The message for the model (without the ``Error:`` prefix)."""

    def text(self) -> str:
        return f"Error: {self}"


def resolve(workspace: Workspace, path: str) -> Path:
    """The resolved path inside the workspace; :class:`ToolError` if it is not allowed."""
    try:
        return workspace.resolve(path)
    except WorkspaceError as exc:
        raise ToolError(str(exc)) from None
    except RuntimeError:  # Path.resolve on Python < 3.13 reports a symlink loop this way
        raise ToolError(f"symlink loop: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot resolve {path}: {exc.strerror or exc}") from None


def os_error(exc: OSError, shown: str, action: str) -> ToolError:
    """An environmental failure to ``action`` (read, write, list) ``shown``, in words."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"file not found: {shown}")
    if isinstance(exc, IsADirectoryError):
        hint = " (use glob to list its files)" if action == "read" else ""
        return ToolError(f"{shown} is a folder, not a file{hint}")
    if isinstance(exc, NotADirectoryError):
        return ToolError(f"a parent of {shown} is a file, not a folder")
    if isinstance(exc, PermissionError):
        return ToolError(f"permission denied: cannot {action} {shown}")
    if isinstance(exc, NotRegularFileError):
        return ToolError(f"{shown} is not a regular file (a FIFO, socket or device)")
    if exc.errno == errno.ENOSPC:
        return ToolError(f"no space left on the device; {shown} was not written")
    return ToolError(f"could not {action} {shown}: {exc.strerror or exc}")


def utf8(text: str, field: str) -> bytes:
    """``text`` as UTF-8; :class:`ToolError` for unpaired surrogates (JSON allows them)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"{field} is not valid Unicode text (it has unpaired surrogates)") from None


def human_size(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    if n < 1024**3:
        return f"{n / 1024**2:.1f} MB"
    return f"{n / 1024**3:.1f} GB"
