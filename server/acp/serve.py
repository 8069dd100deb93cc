"""``agent-lsp acp``: the ACP agent over stdio (newline-delimited JSON-RPC).

The streams are the process's stdin and the private descriptor the command line kept for
the protocol (``server.stdio.claim_stdout``: fd 1 points at stderr, so a stray print or a
child process never writes into the protocol). SIGTERM/SIGHUP and the end of stdin end
every running prompt (its tool processes killed) and every MCP server before the exit.
"""

from __future__ import annotations

import asyncio
import logging
from typing import BinaryIO

from acp import AgentSideConnection
from acp.router import MessageRouter, Route

from ..engine.engine import AgentEngine
from ..stdio import EXIT_DEADLINE_S, cancel_on_signals, exit_within
from .agent import AcpAgent

log = logging.getLogger(__name__)

STREAM_LIMIT = 50 * 1024 * 1024  # one frame (a file's text in fs/read_text_file) at most
EXIT_GRACE_S = 5.0


async def serve(engine: AgentEngine, stdin: BinaryIO, stdout: BinaryIO) -> int:
    loop = asyncio.get_running_loop()
    received = cancel_on_signals()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)  # type: ignore[arg-type]
    agent = AcpAgent(engine)
    engine.attach_warnings(lambda warning: log.warning("%s", warning.message))
    # session/resume and session/close are stable in ACP v1; SDK 0.12.1 still routes them
    # as "unstable" (its schema lags the protocol), hence the flag.
    conn = AgentSideConnection(agent, writer, reader, listening=False, use_unstable_protocol=True)
    add_set_model(conn, agent)
    try:
        await conn.listen()  # until the client closes stdin
    except asyncio.CancelledError:
        if not received:
            raise
    finally:
        await agent.aclose()
        await engine.close_mcp_servers()  # no MCP server outlives us
        await conn.close()
    return 128 + received[0] if received else 0


def add_set_model(conn: AgentSideConnection, agent: AcpAgent) -> None:
    """Route the unstable ``session/set_model`` (removed from the SDK's schema, still sent
    by some clients: ``server.acp.options``). The SDK builds its router inside the
    connection and offers no hook for a method it does not model, hence the private
    attribute; without it the method stays "method not found" (the ``model`` config
    option still works)."""
    router = getattr(getattr(conn, "_conn", None), "_handler", None)
    if not isinstance(router, MessageRouter):
        log.warning("session/set_model is not routed (the SDK's router was not found)")
        return
    router.add_route(Route(method="session/set_model", func=agent.set_model, kind="request"))


def serve_stdio(engine: AgentEngine, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Run :func:`serve`; the exit code. Not ``asyncio.run``, whose clean-up waits without
    limit for every cancelled task (see ``server.lsp.server.serve_stdio``)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(serve(engine, stdin, stdout))
    finally:
        exit_within(EXIT_DEADLINE_S, 1)  # the client is gone: end, whatever still runs
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=EXIT_GRACE_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
