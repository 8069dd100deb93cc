"""Which workspace MCP definitions the user approved, per folder, on disk.

A workspace's ``.vscode/mcp.json`` or ``.mcp.json`` can name any command, so its servers start
only once the user approved that exact definition. An approval is bound to
:meth:`McpServerSpec.digest` (what would run: command line, environment, folder / URL, headers):
a definition changed since, by a commit or a pull, has another digest and is asked about again.

One JSON file under the state folder, ``$XDG_STATE_HOME/agent-lsp/mcp/approvals.json``::

    {"version": 1, "folders": {"/home/me/project": {"fs": "<sha256>"}},
     "rejected": {"/home/me/project": {"web": "<sha256>"}}}

keyed by the folder's real path. ``rejected`` holds the definitions the user declined with
"don't ask again": such a server is not started nor offered for approval unprompted, until
its definition changes (another digest) or the user approves it after all.

Private (0600 in a 0700 folder), written atomically under a lock (two servers of one user may
approve at once). A file that cannot be read or parsed counts as no approvals, with a warning
in the log: the worst it costs is a question asked again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from tooling.regular_files import read_text_file
from tools.mcp.spec import McpServerSpec

from ..config.paths import state_dir

MAX_APPROVALS_BYTES = 4 * 1024 * 1024

log = logging.getLogger(__name__)

FILE_NAME: Final = "approvals.json"
VERSION: Final = 1
APPROVED: Final = "folders"  # the file's sections
REJECTED: Final = "rejected"


class McpApprovals:
    """The approvals file in ``directory`` (see :meth:`in_state_dir` for the usual one)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME

    @classmethod
    def in_state_dir(cls, environ: Mapping[str, str]) -> McpApprovals:
        return cls(state_dir(environ) / "mcp")

    def approved(self, folder: Path | str) -> dict[str, str]:
        """The folder's approvals: server name -> the digest approved."""
        return dict(self._read().get(_key(folder), {}))

    def approve(self, folder: Path | str, spec: McpServerSpec) -> None:
        """Remember ``spec`` as approved for ``folder`` (replacing an older approval, and
        forgetting a rejection of it)."""
        with self._locked():
            folders, rejected = self._read(), self._read(REJECTED)
            folders.setdefault(_key(folder), {})[spec.name] = spec.digest()
            _drop(rejected, _key(folder), spec.name)
            self._write(folders, rejected)

    def is_rejected(self, folder: Path | str, spec: McpServerSpec) -> bool:
        """Whether the user declined this definition for good ("don't ask again")."""
        return self.rejected(folder).get(spec.name) == spec.digest()

    def rejected(self, folder: Path | str) -> dict[str, str]:
        """The folder's rejections: server name -> the digest declined for good."""
        return dict(self._read(REJECTED).get(_key(folder), {}))

    def reject(self, folder: Path | str, spec: McpServerSpec) -> None:
        """Remember that the user declined ``spec`` for ``folder`` and does not want to be
        asked again (a changed definition asks again: another digest)."""
        with self._locked():
            folders, rejected = self._read(), self._read(REJECTED)
            rejected.setdefault(_key(folder), {})[spec.name] = spec.digest()
            _drop(folders, _key(folder), spec.name)
            self._write(folders, rejected)

    def revoke(self, folder: Path | str, name: str) -> bool:
        """Forget the approval of the folder's server ``name``; False when there was none."""
        with self._locked():
            folders, rejected = self._read(), self._read(REJECTED)
            if not _drop(folders, _key(folder), name):
                return False
            self._write(folders, rejected)
            return True

    # --- the file ----------------------------------------------------------------------

    def _read(self, section: str = APPROVED) -> dict[str, dict[str, str]]:
        try:
            text = read_text_file(self.path, MAX_APPROVALS_BYTES)
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("%s: cannot read the MCP approvals (%s): none are used", self.path, exc)
            return {}
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            log.warning("%s: not valid JSON (%s): no MCP approvals are used", self.path, exc)
            return {}
        folders = data.get(APPROVED) if isinstance(data, dict) else None
        if not isinstance(folders, dict) or data.get("version") != VERSION:
            log.warning("%s: not an approvals file of this version: none are used", self.path)
            return {}
        folders = data.get(section, {})
        if not isinstance(folders, dict):
            return {}
        # Keep only well-formed entries: a hand-edited or damaged part approves nothing.
        return {
            folder: {name: digest for name, digest in servers.items() if isinstance(digest, str)}
            for folder, servers in folders.items()
            if isinstance(folder, str) and isinstance(servers, dict)
        }

    def _write(
        self, folders: dict[str, dict[str, str]], rejected: dict[str, dict[str, str]]
    ) -> None:
        data: dict[str, Any] = {"version": VERSION, APPROVED: folders}
        if rejected:
            data[REJECTED] = rejected
        text = json.dumps(data, indent=1, sort_keys=True)
        fd, name = tempfile.mkstemp(dir=self.directory, prefix=f".{FILE_NAME}.", suffix=".tmp")
        temp = Path(name)
        try:  # mkstemp's file is 0600; replacing is atomic, so a reader sees old or new
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Read-modify-write under an exclusive lock, so two approvals never lose one."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        # mkdir's mode is masked by the umask and skipped when the folder exists.
        os.chmod(self.directory, 0o700)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _key(folder: Path | str) -> str:
    """The folder as the file names it: its real path, so a symlinked checkout is one folder."""
    return os.path.realpath(folder)


def _drop(sections: dict[str, dict[str, str]], folder: str, name: str) -> bool:
    """Remove the folder's entry ``name`` (and the folder once empty); whether there was one."""
    servers = sections.get(folder, {})
    if name not in servers:
        return False
    del servers[name]
    if not servers:
        del sections[folder]
    return True
