"""``agent-lsp ARGS`` on a pty, as a user runs it: stdin and stderr the terminal, stdout a pipe.

``screen`` is what the terminal showed so far (read by a thread); ``type`` is the user's keys.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading

from tests.support.lsp_client import REPO


def _foreground_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class PtyTerminal:
    def __init__(self, args: list[str], env: dict[str, str], timeout: float = 60) -> None:
        master, slave = pty.openpty()
        self._master = master
        self.timeout = timeout
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-m", "server", *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=env,
            cwd=REPO,
            text=True,
            # Its own process group, as a shell gives a job: Ctrl-C (interrupt) reaches
            # the client and the server it started, and nothing else.
            start_new_session=True,
            # As a shell starts a foreground job: Ctrl-C's default disposition, whatever this
            # process inherited (started in the background, CI runners ignore SIGINT, and an
            # ignored signal stays ignored across exec: the client would never see Ctrl-C).
            preexec_fn=_foreground_signals,
        )
        os.close(slave)
        self.screen = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._master, 4096)
            except OSError:  # the pty closed
                return
            if not data:
                return
            self.screen += data.decode(errors="replace")

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def interrupt(self) -> None:
        """Ctrl-C: the terminal sends SIGINT to the whole foreground process group."""
        os.killpg(self.process.pid, signal.SIGINT)

    def finish(self) -> tuple[int, str]:
        """The exit status and stdout, once it ends within ``timeout``."""
        try:
            stdout, _ = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            # What the client had printed says where it stopped (the prompt, the cancel...).
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"agent-lsp did not end within {self.timeout:g} s:\n{self.screen}"
            ) from None
        return self.process.returncode, stdout

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self._master >= 0:
            os.close(self._master)
            self._master = -1
