"""A real Emacs (``emacs -nw``) on a pty, for what batch Emacs cannot show: keys typed while
a server's message arrives, and redisplay (what a window shows as an answer streams).

The Lisp script reports by appending JSON lines to a log file (``test-emit``); ``wait_for``
waits for a record. ``type`` is the user's keys, as a terminal sends them.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

F5 = "\x1b[15~"  # xterm's F5: the scripts bind it to a command that reports their state
ESC = "\x1b"
C_G = "\x07"
_TOKENS = "abcdefghijklmnopqrstuvwxyz0123456789"


def _controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class EmacsPty:
    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        log: Path,
        rows: int = 30,
        cols: int = 100,
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self._master = master
        self.log = log
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm"},
            cwd=cwd,
            # A session of its own whose controlling terminal is the pty (Emacs opens
            # /dev/tty).
            start_new_session=True,
            preexec_fn=_controlling_terminal,
        )
        os.close(slave)
        self.screen = ""
        self._presses = 0
        # Emacs blocks once the pty's buffer is full: read all it writes.
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._master, 4096)
            except OSError:
                return
            if not data:
                return
            self.screen += data.decode(errors="replace")

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def find(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float, since: int = 0
    ) -> dict[str, Any] | None:
        """The first record (from the ``since``-th on) for which ``predicate`` holds, once
        Emacs wrote it; None if none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for record in self.records()[since:]:
                if "error" in record:
                    raise AssertionError(f"the script failed: {record['error']}")
                if predicate(record):
                    return record
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        return None

    def wait_for(
        self, what: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        record = self.find(predicate, timeout)
        if record is None:
            raise AssertionError(
                f"waited for {what} in vain; records: {self.records()}\nscreen (tail): "
                + self.screen[-2000:]
            )
        return record

    def state(self, keys: str, timeout: float = 30) -> dict[str, Any]:
        """Type ``keys``, then F5 and a token until Emacs reports its state with that token
        (the scripts bind F5 to a command that reads the token and writes a record ``state:
        TOKEN``): a C-g or ESC that quits discards the keys typed ahead, F5 too, so a press
        may need repeating, and a token tells an answer to this press from a late one."""
        self.type(keys)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._presses += 1
            token = _TOKENS[self._presses % len(_TOKENS)]
            since = len(self.records())
            self.type(F5 + token)
            record = self.find(lambda r, token=token: r.get("state") == token, 2, since)
            if record is not None:
                return record
        return self.wait_for(f"the state after {keys!r}", lambda r: False, 0)

    def state_until(
        self, what: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        """Emacs's state (F5) once ``predicate`` holds for it."""
        deadline = time.monotonic() + timeout
        record = self.state("")
        while not predicate(record):
            if time.monotonic() > deadline:
                raise AssertionError(f"waited for {what} in vain; last state: {record}")
            record = self.state("")
        return record

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._master)
