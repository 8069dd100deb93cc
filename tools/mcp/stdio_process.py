"""What the SDK's ``stdio_client`` leaves to us about a stdio server's process.

The SDK starts the server in a session of its own (so its process group is its pid) and,
on close, closes its stdin, waits 2 s, then ends the group (SIGTERM, SIGKILL). Two things
it lacks, both here:

- the server's stderr: ``stdio_client`` passes ``errlog`` to the process as it is, so we
  give it a pipe of ours and keep the tail (:class:`StderrTail`) for the error a failed
  server reports;
- the group once the leader is gone: the SDK kills the group only when the server does not
  exit by itself, so what a server started and left behind when it exited (or crashed)
  would live on. :func:`end_group` ends it; the group's id is the server's pid, which the
  SDK does not expose: :func:`find_server_pid` finds our child whose stderr is our pipe
  (Linux ``/proc``; elsewhere it finds nothing and the SDK's own shutdown is all there is).
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import anyio

# Bytes of stderr kept; lines of it shown in an error.
TAIL_BYTES = 8192
TAIL_LINES = 20
# How long what a server left behind has after SIGTERM before SIGKILL.
GROUP_GRACE = 0.5
_POLL = 0.01


class StderrTail:
    """A pipe for a server's stderr, read as it comes; the last ``TAIL_BYTES`` kept."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        # What the SDK hands the process as its stderr; ours is closed once it runs, so
        # the pipe ends when the server (and whatever it started) has closed it.
        self.writer = os.fdopen(write_fd, "w")
        self._tail = bytearray()
        self.inode = os.fstat(read_fd).st_ino

    def spawned(self) -> None:
        self.writer.close()

    async def pump(self) -> None:
        """Read until the pipe ends (run in a task; cancelled when the server is done)."""
        while self._read_fd is not None:
            await anyio.wait_readable(self._read_fd)
            try:
                data = os.read(self._read_fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                return
            self._tail += data
            del self._tail[:-TAIL_BYTES]

    def text(self, lines: int = TAIL_LINES) -> str:
        """The last ``lines`` lines the server wrote to stderr (as it wrote them)."""
        if self._read_fd is not None:
            # What is in the pipe and not read yet (a server that wrote and exited).
            with contextlib.suppress(OSError):
                while data := os.read(self._read_fd, 65536):
                    self._tail += data
                    del self._tail[:-TAIL_BYTES]
        decoded = self._tail.decode(errors="replace").rstrip()
        return "\n".join(decoded.splitlines()[-lines:])

    def close(self) -> None:
        """Close the pipe (after the pump's task has ended)."""
        self.writer.close()
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None


def find_server_pid(stderr_inode: int) -> int | None:
    """The pid of our child process whose stderr is the pipe ``stderr_inode`` (Linux)."""
    wanted = f"pipe:[{stderr_inode}]"
    me = os.getpid()
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            # Fields after the command's closing parenthesis: state, ppid, pgrp, ...
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != me:
                continue
            if os.readlink(entry / "fd" / "2") == wanted:
                return int(entry.name)
        except (OSError, IndexError, ValueError):
            continue
    return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone is there (a member we may not signal)
    return True


async def end_group(pgid: int, grace: float = GROUP_GRACE) -> None:
    """End what is left of process group ``pgid``: SIGTERM, then SIGKILL after ``grace``."""
    if pgid == os.getpgrp() or not group_alive(pgid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    # Polled: the members are not our children (the leader was), nothing signals their end.
    for _ in range(max(1, round(grace / _POLL))):
        if not group_alive(pgid):
            return
        await anyio.sleep(_POLL)
    kill_group(pgid)


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` now (the path that cannot wait)."""
    if pgid == os.getpgrp():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
