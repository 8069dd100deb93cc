"""Inside the sandbox: each TCP connection to the proxy port, piped to the proxy's unix socket.

The sandboxed command's network namespace has only loopback; the domain proxy
(``tools/sandbox/proxy.py``) runs outside and listens on a unix socket bind-mounted in.
:func:`serve` accepts on the namespace's 127.0.0.1:3128 (the listener its caller bound)
and pipes each connection, both ways, to a fresh connection to that socket.

The launcher loads this file by path (it runs with ``python -I -S`` inside the sandbox),
so: the standard library only, no import of agent-lsp, and only the modules it needs
(every import is start-up time of every networked call; ``selectors`` comes with
``socket`` anyway). One thread and a selector serve every connection: a thread start
costs about a millisecond here, and plain-http clients open a connection per request.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time

# typing would cost ~10 ms of start-up; type checkers read this constant as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

_CHUNK = 64 * 1024
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
# accept() failures that concern one connection or a moment of exhaustion, not the listener.
_RETRY_NOW = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM}
_RETRY_SOON = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def serve(listener: socket.socket, unix_path: str) -> NoReturn:
    """Accept on ``listener`` forever; raises only if the listener itself fails."""
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, _READ)
    while True:
        for key, events in selector.select():
            if key.data is None:
                _accept(listener, unix_path, selector)
            else:
                link, side = key.data
                link.ready(side, events)


def _accept(listener: socket.socket, unix_path: str, selector: selectors.BaseSelector) -> None:
    try:
        client, _ = listener.accept()
    except BlockingIOError:
        return
    except OSError as error:
        if error.errno in _RETRY_NOW:
            return
        if error.errno in _RETRY_SOON:
            time.sleep(0.05)  # out of descriptors: let connections finish, don't spin
            return
        raise
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(unix_path)  # a local socket: succeeds or fails at once
    except OSError:
        client.close()  # no proxy (any more): the client sees its connection closed
        upstream.close()
        return
    # What arrives from the proxy goes on at once: with Nagle, a response that comes in
    # two pieces would wait for the client's delayed ACK (tens of ms).
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _Link(selector, client, upstream)


class _Link:
    """A client connection and its proxy connection; side 0 is the client, 1 the proxy.

    ``pending[i]`` holds bytes read from side ``i`` not yet written to the other side;
    a side is read only while nothing of its is pending (the other side's buffer bounds
    memory). ``ended[i]``: side ``i`` sent its end of stream; ``passed[i]``: that end was
    passed on (``shutdown(SHUT_WR)`` of the other side). Both passed: the link closes.
    """

    def __init__(self, selector: selectors.BaseSelector, *sockets: socket.socket) -> None:
        self.selector = selector
        self.sockets = sockets
        self.pending = [b"", b""]
        self.ended = [False, False]
        self.passed = [False, False]
        self.masks = [0, 0]
        for each in sockets:
            each.setblocking(False)
        self._update()

    def ready(self, side: int, events: int) -> None:
        try:
            if events & _WRITE:
                self._flush(1 - side)
            if events & _READ:
                self._read(side)
        except OSError:
            self.close()  # a reset on either side ends both
            return
        self._update()

    def _read(self, side: int) -> None:
        try:
            data = self.sockets[side].recv(_CHUNK)
        except BlockingIOError:
            return
        if data:
            self.pending[side] = data
        else:
            self.ended[side] = True
        self._flush(side)

    def _flush(self, side: int) -> None:
        """Write what side ``side`` sent to the other side; pass its end on when due."""
        sink = self.sockets[1 - side]
        if self.pending[side]:
            try:
                sent = sink.send(self.pending[side])
            except BlockingIOError:
                sent = 0
            self.pending[side] = self.pending[side][sent:]
        if self.ended[side] and not self.pending[side] and not self.passed[side]:
            sink.shutdown(socket.SHUT_WR)
            self.passed[side] = True

    def _update(self) -> None:
        if all(self.passed):
            self.close()
            return
        for side, each in enumerate(self.sockets):
            reading = not self.ended[side] and not self.pending[side]
            mask = (_READ if reading else 0) | (_WRITE if self.pending[1 - side] else 0)
            if mask == self.masks[side]:
                continue
            if not self.masks[side]:
                self.selector.register(each, mask, (self, side))
            elif not mask:
                self.selector.unregister(each)
            else:
                self.selector.modify(each, mask, (self, side))
            self.masks[side] = mask

    def close(self) -> None:
        for side, each in enumerate(self.sockets):
            if self.masks[side]:
                self.selector.unregister(each)
                self.masks[side] = 0
            each.close()
