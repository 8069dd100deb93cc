"""The baseline for ``bench_server.py``: a bare pygls 2 server with one custom method.

It is built the way agent-lsp's server is (``LanguageServer`` with lsprotocol's
converter, so custom params stay plain JSON) but does nothing else: ``bench/echo``
answers with its params. Start-up and round-trip figures of agent-lsp are reported
as ratios to this server.

Run: ``python bench/bare_pygls_server.py`` (serves on stdio).
"""

from __future__ import annotations

from typing import Any

from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer

ECHO = "bench/echo"

server = LanguageServer("bare-pygls", "1.0", converter_factory=get_converter)


@server.feature(ECHO)
def echo(ls: LanguageServer, params: Any) -> Any:
    return params


if __name__ == "__main__":
    server.start_io()
