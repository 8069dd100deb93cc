"""Waiting for a folder's MCP servers to settle, as the terminal's ``mcp`` commands need it.

The server starts MCP servers in the background after ``initialized``; an ask waits (a
bounded time, on the server, for every face) for those still starting. ``agent-lsp mcp
list`` and ``approve`` list the states, so they wait here (``agent/mcpServers``, polled)
until no server is ``starting``, for a bounded time. Nothing is re-derived: the states are
the server's.
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


def ask_notes(servers: list[dict[str, Any]], workspace: Path) -> list[str]:
    """What an ask says before it starts about the folder's servers awaiting approval: their
    tools are not in it. (Those still starting the server waits for and says so itself;
    a failure is said once by the server, ``window/showMessage``.)"""
    notes = []
    where = approve_option(workspace)
    for server in servers:
        name = escape_control(str(server.get("name", "?")))
        if server.get("state") == AWAITING_APPROVAL:
            notes.append(
                f"agent-lsp: MCP server {name} of this folder is new or changed and waits for "
                "your approval: its tools are not in this ask (approve it with: "
                f"agent-lsp mcp approve {name}{where})"
            )
    return notes
