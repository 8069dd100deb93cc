"""Keep stdout for JSON-RPC frames only.

A stray ``print`` or a child process that inherits fd 1 would otherwise write
into the protocol stream; unterminated junk glues onto the next
``Content-Length`` header and kills the connection for good.
"""

from __future__ import annotations

import os
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
