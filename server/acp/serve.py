"""``agent-lsp acp``: the ACP agent over stdio (newline-delimited JSON-RPC).

The streams are the process's stdin and the private descriptor the command line kept for
the protocol (``server.stdio.claim_stdout``: fd 1 points at stderr, so a stray print or a
child process never writes into the protocol). SIGTERM/SIGHUP and the end of stdin end
every running prompt (its tool processes killed) and every MCP server before the exit.

``initialize`` is answered before the engine's modules are loaded (:class:`DeferredAgent`):
they load in a worker thread right after, and the client's next request waits for them,
so spawn → ``initialize`` costs what a bare agent on the SDK costs (bench/results/startup.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from acp import AgentSideConnection
from acp.router import MessageRouter, Route

from ..stdio import EXIT_DEADLINE_S, cancel_on_signals, exit_within
from .handshake import initialize_response

if TYPE_CHECKING:
    from ..engine.engine import AgentEngine
    from .agent import AcpAgent

log = logging.getLogger(__name__)

ANSWER_TURNS = 10  # turns of the event loop before the engine's modules load
STREAM_LIMIT = 50 * 1024 * 1024  # one frame (a file's text in fs/read_text_file) at most
EXIT_GRACE_S = 5.0


def _load_agent_modules() -> None:
    """The engine, the tools and the agent (call from a worker thread)."""
    from . import agent  # noqa: F401


class DeferredAgent:
    """The SDK's ``Agent``: answers ``initialize`` at once, then loads the engine's modules
    off the event loop; every other method waits for them and goes to the
    :class:`~server.acp.agent.AcpAgent` over the engine ``make_engine`` builds."""

    def __init__(self, make_engine: Callable[[], AgentEngine]) -> None:
        self._make_engine = make_engine
        self._conn: Any = None
        self._initialized: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self._loading: asyncio.Future[AcpAgent] | None = None
        self._engine: AgentEngine | None = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, *args: Any, **kwargs: Any) -> Any:
        self._initialized = (args, kwargs)
        response = initialize_response(kwargs.get("protocol_version", args[0] if args else 1))
        self._load()
        return response

    def _load(self) -> asyncio.Future[AcpAgent]:
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._build())
        return self._loading

    async def _build(self) -> AcpAgent:
        # After initialize's answer is written: the SDK queues it for its sender task, a
        # few turns of the loop away; the import thread would otherwise share the GIL
        # with that write.
        for _ in range(ANSWER_TURNS):
            await asyncio.sleep(0)
        await asyncio.to_thread(_load_agent_modules)
        from .agent import AcpAgent

        engine = self._engine = self._make_engine()
        engine.attach_warnings(lambda warning: log.warning("%s", warning.message))
        agent = AcpAgent(engine)
        agent.on_connect(self._conn)
        if self._initialized is not None:  # the client's capabilities; starts the warm-up
            args, kwargs = self._initialized
            await agent.initialize(*args, **kwargs)
        return agent

    async def agent(self) -> AcpAgent:
        return await asyncio.shield(self._load())

    async def aclose(self) -> None:
        """End every running prompt and every MCP server (the client is gone)."""
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        elif self._loading is not None and not self._loading.cancelled():
            if self._loading.exception() is None:
                await self._loading.result().aclose()
        if self._engine is not None:
            await self._engine.close_mcp_servers()  # no MCP server outlives us

    # The methods AcpAgent implements (the SDK routes the ones an agent has).
    async def authenticate(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).authenticate(*args, **kwargs)

    async def new_session(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).new_session(*args, **kwargs)

    async def load_session(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).load_session(*args, **kwargs)

    async def resume_session(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).resume_session(*args, **kwargs)

    async def list_sessions(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).list_sessions(*args, **kwargs)

    async def close_session(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).close_session(*args, **kwargs)

    async def set_session_mode(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).set_session_mode(*args, **kwargs)

    async def set_config_option(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).set_config_option(*args, **kwargs)

    async def set_model(self, params: Any) -> Any:
        return await (await self.agent()).set_model(params)

    async def prompt(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).prompt(*args, **kwargs)

    async def cancel(self, *args: Any, **kwargs: Any) -> None:
        await (await self.agent()).cancel(*args, **kwargs)

    async def ext_method(self, *args: Any, **kwargs: Any) -> Any:
        return await (await self.agent()).ext_method(*args, **kwargs)

    async def ext_notification(self, *args: Any, **kwargs: Any) -> None:
        await (await self.agent()).ext_notification(*args, **kwargs)


async def serve(make_engine: Callable[[], AgentEngine], stdin: BinaryIO, stdout: BinaryIO) -> int:
    loop = asyncio.get_running_loop()
    received = cancel_on_signals()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)  # type: ignore[arg-type]
    agent = DeferredAgent(make_engine)
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
        await conn.close()
    return 128 + received[0] if received else 0


def add_set_model(conn: AgentSideConnection, agent: DeferredAgent) -> None:
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


def serve_stdio(make_engine: Callable[[], AgentEngine], stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Run :func:`serve`; the exit code. Not ``asyncio.run``, whose clean-up waits without
    limit for every cancelled task (see ``server.lsp.server.serve_stdio``)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(serve(make_engine, stdin, stdout))
    finally:
        exit_within(EXIT_DEADLINE_S, 1)  # the client is gone: end, whatever still runs
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=EXIT_GRACE_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
