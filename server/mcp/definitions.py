"""One folder's MCP definitions, read in a worker thread and kept while nothing changed.

Reading them (``server.mcp.config.load_definitions``: the user file, the editor
setting ``mcpServers``, the folder's ``.vscode/mcp.json`` / ``.mcp.json``) and the approvals
of the folder's own is file I/O and TOML/JSON parsing, and the parsers' first import costs
~20 ms: so it is never done on the event loop (``McpServers.refresh`` runs it in a worker
thread), and done again only when a file's identity (inode, device, mtime, size) or the
setting's value changed. A folder with no definitions at all costs four ``stat`` calls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ..config.user_config import config_path

if TYPE_CHECKING:
    from tools.mcp.spec import McpServerSpec

    from .config import McpDefinitions

WORKSPACE: Final = "workspace"  # mcp_config's ORIGIN_WORKSPACE (not imported at start-up)

# A file changed this little before it was read may change again within its timestamp's
# granularity (a coarse clock) with nothing to show for it: it is read again next time.
RACY_NS: Final = 2_000_000_000


@dataclass(frozen=True)
class Loaded:
    """A folder's definitions as read, and its workspace servers approved as defined now
    (and those the user declined for good as defined now: "don't ask again")."""

    definitions: McpDefinitions
    approved: frozenset[str] = frozenset()
    rejected: frozenset[str] = frozenset()


class FolderDefinitions:
    """The definitions of the folder ``root``; one read at a time, from a worker thread."""

    def __init__(self, root: Path, environ: Mapping[str, str]) -> None:
        self.root = root
        self._environ = environ
        self._key: tuple[Any, ...] | None = None
        self._loaded: Loaded | None = None

    def read(self, setting: Any) -> Loaded:
        """The definitions now, with ``setting`` as the editor's ``mcpServers`` (a worker
        thread's call). Raises OSError or UserConfigError when they cannot be read."""
        # Imported here, off the loop, at the first read: see the module's docstring.
        from . import config as mcp_config
        from .approvals import McpApprovals

        approvals = McpApprovals.in_state_dir(self._environ)
        user_file = config_path(self._environ)
        own = [self.root / relative for relative, _ in mcp_config.WORKSPACE_FILES]
        read_at = time.time_ns()
        stats = [_identity(path) for path in (user_file, *own, approvals.path)]
        key = (tuple(stats), setting)
        if self._loaded is not None and key == self._key:
            return self._loaded
        definitions = mcp_config.load_definitions(
            user_file=user_file, editor_setting=setting, folder=self.root, environ=self._environ
        )
        specs = [e.spec for e in definitions.entries if e.spec and e.origin == WORKSPACE]
        digests = approvals.approved(self.root) if specs else {}
        approved = frozenset(s.name for s in specs if digests.get(s.name) == s.digest())
        declined = approvals.rejected(self.root) if specs else {}
        rejected = frozenset(s.name for s in specs if declined.get(s.name) == s.digest())
        self._loaded = Loaded(definitions, approved, rejected)
        racy = any(
            stat is not None and (not isinstance(stat, tuple) or read_at - stat[2] < RACY_NS)
            for stat in stats
        )
        self._key = None if racy else key
        return self._loaded

    def approve(self, spec: McpServerSpec) -> None:
        """Record the user's approval of ``spec`` for this folder (a worker thread's call)."""
        from .approvals import McpApprovals

        McpApprovals.in_state_dir(self._environ).approve(self.root, spec)

    def reject(self, spec: McpServerSpec) -> None:
        """Record that the user declined ``spec`` for good (a worker thread's call)."""
        from .approvals import McpApprovals

        McpApprovals.in_state_dir(self._environ).reject(self.root, spec)


def _identity(path: Path | None) -> tuple[int, int, int, int] | object | None:
    """What tells a file's change: (inode, device, mtime, size); None when it is absent."""
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return object()  # equal to nothing: read every time (the parser names the problem)
    return (stat.st_ino, stat.st_dev, stat.st_mtime_ns, stat.st_size)
