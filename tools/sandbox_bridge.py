"""Inside the sandbox: each TCP connection to the proxy port, piped to the proxy's unix socket.

The sandboxed command's network namespace has only loopback; the domain proxy
(``tools/sandbox_proxy.py``) runs outside and listens on a unix socket bind-mounted in.
:func:`serve` accepts on the namespace's 127.0.0.1:3128 (the listener its caller bound)
and pipes each connection, both ways, to a fresh connection to that socket.

The launcher loads this file by path (it runs with ``python -I -S`` inside the sandbox),
so: the standard library only, no import of agent-lsp, and only the modules it needs
(every import is start-up time of every networked call). A thread per direction keeps it
short; a call makes a handful of connections, not thousands.
"""

from __future__ import annotations

import errno
import socket
import threading
import time

# typing would cost ~10 ms of start-up; type checkers read this constant as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

_CHUNK = 64 * 1024
# accept() failures that concern one connection or a moment of exhaustion, not the listener.
_RETRY_NOW = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM}
_RETRY_SOON = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def serve(listener: socket.socket, unix_path: str) -> NoReturn:
    """Accept on ``listener`` forever; raises only if the listener itself fails."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError as error:
            if error.errno in _RETRY_NOW:
                continue
            if error.errno in _RETRY_SOON:
                time.sleep(0.05)  # out of descriptors: let connections finish, don't spin
                continue
            raise
        threading.Thread(target=_bridge, args=(client, unix_path), daemon=True).start()


def _bridge(client: socket.socket, unix_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            upstream.connect(unix_path)
        except OSError:
            return  # no proxy (any more): the client sees its connection closed
        back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
        back.start()
        _copy(client, upstream)
        back.join()
    finally:
        client.close()
        upstream.close()


def _copy(source: socket.socket, sink: socket.socket) -> None:
    """Copy until end of stream, then pass it on (half-close); a failure ends both ways."""
    try:
        while data := source.recv(_CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        # Wake the other direction's recv() too, so the pair of threads ends together.
        for each in (source, sink):
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
