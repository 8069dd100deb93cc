"""Keep stdout for JSON-RPC frames only; end a face's serving task on SIGTERM/SIGHUP;
and once the client is gone, end the process within a deadline, whatever still runs.

A stray ``print`` or a child process that inherits fd 1 would otherwise write
into the protocol stream; unterminated junk glues onto the next
``Content-Length`` header and kills the connection for good.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from typing import BinaryIO

log = logging.getLogger(__name__)

# Seconds the process has to end once its client is gone (end of input, exit, a signal):
# the faces cancel every ask and close MCP servers well within it.
EXIT_DEADLINE_S = 10.0


def claim_stdout() -> BinaryIO:
    """Return a private writer on the original stdout; point fd 1 at stderr.

    The private descriptor is not inheritable, so child processes never see it.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)  # os.dup makes non-inheritable descriptors
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol_fd, "wb")


TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def cancel_on_signals() -> list[int]:
    """SIGTERM and SIGHUP (an editor stopping us, a closed terminal) cancel the running task,
    through the event loop (not an exception raised inside whatever code the signal
    interrupts); the returned list gets the signal, so the exit code can be 128 + it."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if received:  # a second signal: the user means it
            os._exit(128 + signum)
        received.append(signum)
        exit_within(EXIT_DEADLINE_S, 128 + signum)
        main.cancel()

    for signum in TERMINATING_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    return received


def exit_within(seconds: float, code: int) -> None:
    """End the process with ``code`` if it is still alive ``seconds`` from now.

    The client is gone (stdin closed, ``exit``, a signal): nothing may keep a server
    running without an editor -- not a task deaf to cancellation, not a worker thread
    blocked in a system call that the interpreter's exit would wait for. A daemon
    thread, so a process that ends sooner does not wait for it.
    """

    def deadline() -> None:
        time.sleep(seconds)
        log.warning("still running %g s after the client went away: exiting", seconds)
        logging.shutdown()
        os._exit(code)

    threading.Thread(target=deadline, name="agent-lsp-exit-deadline", daemon=True).start()
