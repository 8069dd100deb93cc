"""Keep stdout for JSON-RPC frames only; end a face's serving task on SIGTERM/SIGHUP.

A stray ``print`` or a child process that inherits fd 1 would otherwise write
into the protocol stream; unterminated junk glues onto the next
``Content-Length`` header and kills the connection for good.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import BinaryIO


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
        received.append(signum)
        main.cancel()

    for signum in TERMINATING_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    return received
