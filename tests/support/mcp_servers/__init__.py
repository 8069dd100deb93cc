"""MCP servers written with the SDK for the MCP client tests."""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOOLBOX = Path(__file__).with_name("toolbox.py")


@contextmanager
def toolbox_over_http(*options: str) -> Iterator[str]:
    """The toolbox over Streamable HTTP on 127.0.0.1: its URL, for as long as the block runs."""
    server = subprocess.Popen(
        [sys.executable, str(TOOLBOX), "--http", *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 30)
        line = server.stdout.readline() if ready else ""
        assert line.startswith("listening on "), f"the HTTP toolbox did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[-1])}/mcp"
    finally:
        server.kill()
        server.wait()
        assert server.stdout is not None
        server.stdout.close()
