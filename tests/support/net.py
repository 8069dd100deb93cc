"""A TCP listener on 127.0.0.1 for tests of what may connect to it."""

from __future__ import annotations

import select
import socket


def pending_connections(server: socket.socket) -> int:
    """Connections the kernel completed for ``server`` (nothing waits: it is after the fact)."""
    count = 0
    while select.select([server], [], [], 0)[0]:
        connection, _ = server.accept()
        connection.close()
        count += 1
    return count
