"""The workspace boundary as a value: one root folder, paths resolved inside it."""

from __future__ import annotations

import os
from pathlib import Path


class WorkspaceError(ValueError):
    """A path that is not allowed (it leaves the workspace or is malformed)."""


class Workspace:
    """A workspace root. Tools are built for one, so two folders never share state.

    ``resolve`` follows symlinks before checking containment, so a link that
    points outside is refused like ``..``. This is a path check, not an OS
    sandbox: it does not confine ``bash``.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(root).expanduser().resolve()
        if not resolved.is_dir():
            raise WorkspaceError(f"Workspace root is not a directory: {root}")
        self._root = resolved

    @property
    def root(self) -> Path:
        return self._root

    def resolve(self, path: str) -> Path:
        """Absolute, symlink-resolved path for ``path`` if it stays inside the root."""
        if not isinstance(path, str) or not path:
            raise WorkspaceError("path must be a non-empty string")
        if "\x00" in path:
            raise WorkspaceError("path must not contain NUL characters")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self._root / candidate
        try:
            resolved = candidate.resolve()
        except (RuntimeError, OSError) as exc:  # 3.11 reports symlink loops as RuntimeError
            raise WorkspaceError(f"Cannot resolve {path}: {exc}") from None
        if not self.contains(resolved):
            raise WorkspaceError(f"Path escapes workspace: {path}")
        return resolved

    def contains(self, resolved: Path) -> bool:
        return resolved == self._root or resolved.is_relative_to(self._root)

    def relative(self, resolved: Path) -> str:
        """Display form of a resolved path: relative to the root, POSIX separators."""
        try:
            rel = resolved.relative_to(self._root)
        except ValueError:
            return str(resolved)
        return rel.as_posix() or "."

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and other._root == self._root

    def __hash__(self) -> int:
        return hash(self._root)
