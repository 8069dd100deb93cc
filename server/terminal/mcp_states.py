"""Waiting for a folder's MCP servers to settle, as the terminal's commands need it.

The server starts MCP servers in the background after ``initialized`` and an ask has the
tools of the servers ready when it starts. An editor's server lives long, so its servers
are ready by the second ask; the terminal starts a server per command, so ``agent-lsp ask``
and ``agent-lsp mcp list`` wait here (``agent/mcpServers``, polled) until no server is
``starting``, for a bounded time. Nothing is re-derived: the states are the server's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from tooling.display import escape_control

from ..protocol import AGENT_MCP_SERVERS
from .mcp_listing import approve_option

# How long an ask waits for servers still starting: the default ``startup_timeout``, after
# which a server that is not ready has failed (a longer own timeout is not waited for).
ASK_WAIT_S = 30.0
# Between two listings while one is starting: each listing reads the definitions again
# (cheap while they are unchanged), and a server is usually up within a second or two.
POLL_S = 0.1

STARTING = "starting"
AWAITING_APPROVAL = "awaiting-approval"

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def settled(request: Request, within: float) -> list[dict[str, Any]]:
    """The folder's servers once none is ``starting``, or as they are after ``within``
    seconds. A server that does not know the request (an older one) has none."""
    deadline = time.monotonic() + max(within, 0.0)
    while True:
        try:
            result = await request(AGENT_MCP_SERVERS, {})
        except JsonRpcException:
            return []
        servers: list[dict[str, Any]] = list(result.get("servers") or [])
        if not any(server.get("state") == STARTING for server in servers):
            return servers
        if time.monotonic() >= deadline:
            return servers
        await asyncio.sleep(POLL_S)


def ask_notes(servers: list[dict[str, Any]], waited: float, workspace: Path) -> list[str]:
    """What an ask says before it starts about servers whose tools it will not have.

    A failure is not repeated: the server says it once (``window/showMessage``)."""
    notes = []
    where = approve_option(workspace)
    for server in servers:
        name = escape_control(str(server.get("name", "?")))
        state = server.get("state")
        if state == STARTING:
            notes.append(
                f"agent-lsp: MCP server {name} is still starting after {waited:.0f} s: "
                "its tools are not in this ask"
            )
        elif state == AWAITING_APPROVAL:
            notes.append(
                f"agent-lsp: MCP server {name} of this folder is not approved: its tools are "
                f"not in this ask (approve it with: agent-lsp mcp approve {name}{where})"
            )
    return notes
