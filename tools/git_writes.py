"""The file tools' question before a write: does git obey this file?

``write_file`` and ``edit_file`` write where bash's sandbox would not: a file tool runs in
the server, so the read-only mounts over ``.git/config`` and the hooks do not apply to it.
Git runs what those files name (``core.fsmonitor``, a hook, a filter) whenever the user
runs git, outside any sandbox; so a write to anything :func:`tools.sandbox.git_guard.obeys` names
is a permission request, ``required``: asked whatever the approval setting says (and
refused when nobody can be asked, or with ``approval: "never"``), with the exact file and
the new content, or the edit, in its reason, where every client shows it whole (escaped).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tooling.permissions import CallPermission
from tooling.workspace import Workspace

from .sandbox import git_guard


class GitWrites:
    """One tool's check, keeping the last discovery so the next one only lists what moved."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._last: git_guard.GitDirs | None = None

    async def permission(self, path: str, verb: str, change: str) -> CallPermission | None:
        """The request for writing ``change`` (words and text) to ``path``, or None."""
        why = await asyncio.to_thread(self.obeys, path)
        if why is None:
            return None
        return CallPermission(
            f"{verb} a file git obeys: {path}",
            required=True,
            reason=(
                f"{why}. Git runs what such a file names (a hook, core.fsmonitor, a filter) "
                f"whenever you run git, outside the sandbox, with your rights. {change}"
            ),
        )

    def obeys(self, path: str) -> str | None:
        """Why git would obey a write to ``path`` (``git_guard.obeys``), or None (not so,
        or outside the workspace). Blocking: a discovery lists folders."""
        root = self._workspace.root
        try:
            self._workspace.resolve(path)
        except (ValueError, OSError, RuntimeError):
            return None  # outside the workspace, or unresolvable: the tool says so itself
        self._last = git_guard.git_dirs(root, since=self._last)
        # As given (``meta/config`` with ``meta`` a link to ``.git``) and resolved: obeys
        # looks at both.
        return git_guard.obeys(Path(path), root, found=self._last)
