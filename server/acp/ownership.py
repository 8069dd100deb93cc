"""Which agent process has a session open: one claim file per session, held with a lock.

Two ``agent-lsp acp`` processes (two editors, or one editor's two chats) may open the same
saved conversation; both would append to it, and neither sees the other's turns. ACP has
no way to refuse that politely, so the second is told (``agent_message_chunk`` after it
opens the session) which process has it. A claim is an ``flock`` on
``$XDG_STATE_HOME/agent-lsp/acp-sessions/ID.lock``, holding the owner's pid: it ends with
the process however it ends (no stale claim after a crash).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Mapping

from ..config.paths import state_dir

log = logging.getLogger(__name__)


class SessionClaims:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self._folder = state_dir(environ) / "acp-sessions"
        self._held: dict[str, int] = {}  # session id -> the locked descriptor

    def claim(self, session_id: str) -> int | None:
        """Claim ``session_id`` for this process; the pid of another process that holds
        it (None: claimed here, or claims cannot be kept)."""
        if session_id in self._held:
            return None
        path = self._folder / f"{session_id}.lock"
        try:
            self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            log.info("session claim %s not kept: %s", session_id, exc)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = _pid_in(fd)
            os.close(fd)
            return owner or -1
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._held[session_id] = fd
        return None

    def release(self, session_id: str) -> None:
        fd = self._held.pop(session_id, None)
        if fd is not None:
            # Removed while still locked, so no claim files pile up (a process that opened
            # it just before would lock a file nobody else finds: harmless, it ends with it).
            with contextlib.suppress(OSError):
                (self._folder / f"{session_id}.lock").unlink()
            with contextlib.suppress(OSError):
                os.close(fd)  # the lock goes with the descriptor

    def release_all(self) -> None:
        for session_id in list(self._held):
            self.release(session_id)


def _pid_in(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip() or "0") or None
    return None
