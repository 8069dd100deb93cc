"""``agent-lsp mcp list`` and ``approve`` against a running server: what the editor sees.

Both start the server as a child over stdio, as ``agent-lsp ask`` does (``client.connected``),
with the folder as its workspace, ask it (``agent/mcpServers``, ``agent/approveMcpServer``),
wait until no MCP server is ``starting`` (``mcp_states``) and shut it down, which ends every
MCP server it started. The rendering is ``mcp_listing``'s; this module only talks.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, TextIO

from pygls.exceptions import JsonRpcException

from tooling.display import escape_control

from ..protocol import AGENT_APPROVE_MCP_SERVER
from .client import connected
from .mcp_listing import error_lines
from .mcp_states import settled
from .output import StreamedOutput
from .permissions import is_terminal


def list_servers(workspace: Path, wait: float, err: TextIO) -> list[dict[str, Any]] | None:
    """The folder's servers as the server has them once none is starting (at most ``wait``
    seconds), or None when the server could not be asked (said on ``err``)."""
    try:
        return asyncio.run(_list_servers(workspace, wait, err))
    except (OSError, ConnectionError, JsonRpcException) as exc:
        why = exc.message if isinstance(exc, JsonRpcException) else str(exc)
        print(
            escape_control(
                f"agent-lsp mcp list: could not ask the server ({why}); "
                "showing the definitions as written"
            ),
            file=err,
        )
        return None


async def _list_servers(workspace: Path, wait: float, err: TextIO) -> list[dict[str, Any]]:
    # The server's own messages (a server that failed, a file it cannot read) go to err as
    # they come; the table on stdout holds the states and the whole errors.
    async with connected(workspace, shown=StreamedOutput(err, err), asks=False) as request:
        return await settled(request, wait)


def approve(workspace: Path, name: str, wait: float, out: TextIO, err: TextIO) -> int:
    """Ask the user, on this terminal, whether the folder's own server ``name`` may start."""
    if not is_terminal(sys.stdin):
        # The question must be answered by a person: without a terminal nobody can.
        print(
            escape_control(
                f"agent-lsp mcp approve: approving {name} asks you on the terminal, and stdin "
                "is not one; run it in a terminal (nothing was approved)"
            ),
            file=err,
        )
        return 1
    try:
        return asyncio.run(_approve(workspace, name, wait, out, err))
    except (OSError, ConnectionError) as exc:
        print(escape_control(f"agent-lsp mcp approve: the server failed ({exc})"), file=err)
        return 1


async def _approve(workspace: Path, name: str, wait: float, out: TextIO, err: TextIO) -> int:
    shown = name if name.isprintable() else escape_control(name)
    async with connected(workspace, shown=StreamedOutput(out, err), asks=False) as request:
        try:
            result = await request(AGENT_APPROVE_MCP_SERVER, {"name": name})
        except JsonRpcException as exc:
            print(escape_control(f"agent-lsp mcp approve: {exc.message}"), file=err)
            return 1
        if not result.get("approved"):
            state = escape_control(str(result.get("state", "?")))
            print(f"Not approved: MCP server {shown} stays {state}.", file=out, flush=True)
            return 1
        servers = await settled(request, wait)
    entry = next((server for server in servers if server.get("name") == name), {})
    state = escape_control(str(entry.get("state", "?")))
    folder = escape_control(str(workspace))
    line = f"Approved MCP server {shown} for {folder}: {state}"
    if entry.get("state") == "ready":
        count = len(entry.get("tools") or [])
        line += f", {count} tool{'' if count == 1 else 's'}"
    print(f"{line}.", file=out)
    for text in error_lines(entry):
        print(text, file=out)
    return 0
