"""One MCP server, connected: its session, its tools, its calls, its end.

The SDK (``mcp``, on anyio) is used as it is meant to be: ``stdio_client`` or
``streamable_http_client`` under a ``ClientSession``. Their context managers must be
entered and left in one task, so each connection runs in one long-lived task (``_run``)
that connects, initializes, lists the tools and then waits for :meth:`McpConnection.close`
or for the server to end the connection; everything else is a plain async method that
other tasks call (the session's requests are safe from any task of the loop).

A connection starts once: ``starting`` → ``ready`` | ``failed`` (``error`` says why, with
the tail of a stdio server's stderr) → ``closed`` after :meth:`close`. A ready server that
exits becomes ``failed``. Restarting is making a new connection (the owner's retry policy).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from importlib import metadata
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client  # the SDK's own timeouts
from mcp.shared.exceptions import MCPError

from tooling.contract import ERROR_PREFIX

from .spec import McpServerSpec
from .stdio_process import StderrTail, end_group, find_server_pid, kill_group
from .streams import WatchedReadStream

State = Literal["starting", "ready", "failed", "closed"]
# The SDK's progress callback: (progress, total, message).
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]

_log = logging.getLogger(__name__)
# A paginator that never ends must not hang the start.
_MAX_PAGES = 100


class McpCallError(Exception):
    """A call that failed outside the tool (timeout, server gone, protocol error);
    ``str()`` is the ``Error: ...`` text for the model."""


class McpConnection:
    def __init__(
        self,
        spec: McpServerSpec,
        *,
        on_tools_changed: Callable[[McpConnection], None] | None = None,
        log: Callable[[str], None] | None = None,
        roots: Iterable[str] = (),
        on_state_changed: Callable[[McpConnection], None] | None = None,
    ) -> None:
        """``roots``: the folder(s) a server that asks for roots is told (file URIs); the
        first is also a stdio server's working folder unless ``spec.cwd`` says one.
        ``log``: one line for the user's log (the server's state, its stderr on failure)."""
        self.spec = spec
        self.state: State = "starting"
        self.error: str | None = None
        self.pid: int | None = None  # a stdio server's (its process group's) id
        self.log = log or _log.info
        self._on_tools_changed = on_tools_changed
        self._on_state_changed = on_state_changed
        self._roots = [types.Root(uri=uri, name=_root_name(uri)) for uri in roots]
        self._tools: list[types.Tool] = []
        self._session: ClientSession | None = None
        self._stderr: StderrTail | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()  # ready or failed
        self._wake = asyncio.Event()  # close() was called, or the server ended the connection
        self._closing = False
        self._startup: anyio.CancelScope | None = None
        self._refreshing = asyncio.Lock()

    @property
    def tools(self) -> list[types.Tool]:
        """The server's tools as it listed them, less those the spec does not allow."""
        return list(self._tools)

    @property
    def stderr_tail(self) -> str:
        return self._stderr.text() if self._stderr is not None else ""

    async def start(self) -> State:
        """Connect, initialize and list the tools within ``spec.startup_timeout``; returns
        ``ready`` or ``failed`` (never raises for the server's failures). Once only."""
        if self._task is not None:
            raise RuntimeError("an McpConnection starts once; make a new one to restart")
        if self._closing:
            return self.state
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"mcp server {self.spec.name}"
        )
        await self._settled.wait()
        return self.state

    async def close(self) -> None:
        """End the session and, for stdio, the server's process group; bounded (the SDK
        gives a server 2 s to exit once its stdin closes before it ends the group)."""
        self._closing = True
        self._wake.set()
        if self._startup is not None:
            self._startup.cancel()
        if self._task is None:
            self._set_state("closed")
        elif not self._task.done():
            await asyncio.shield(self._task)

    async def call(
        self, tool: str, arguments: dict[str, Any], *, progress: ProgressFn | None = None
    ) -> types.CallToolResult:
        """Call ``tool`` within ``spec.tool_timeout``. Cancelling the awaiting task cancels
        the request (the server receives ``notifications/cancelled``). Failures outside
        the tool raise :class:`McpCallError`; the tool's own (``isError``) are the result."""
        name, session = self.spec.name, self._session
        if session is None or self.state != "ready":
            why = f": {self.error.splitlines()[0]}" if self.error else ""
            raise McpCallError(
                f"{ERROR_PREFIX} MCP server {name} is not running ({self.state}{why})"
            )
        timeout = self.spec.tool_timeout
        try:
            return await session.call_tool(
                tool, arguments, read_timeout_seconds=timeout, progress_callback=progress
            )
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                message = (
                    f"the MCP tool {tool} of server {name} did not answer within {timeout:g} s "
                    "(its tool_timeout); the call was cancelled"
                )
            elif exc.code == types.CONNECTION_CLOSED:
                message = (
                    f"MCP server {name} was stopped during the call of {tool}"
                    if self._closing
                    else f"MCP server {name} ended the connection during the call of {tool}"
                )
            else:
                message = f"MCP server {name} refused the call of {tool}: {exc} (code {exc.code})"
        except (RuntimeError, ValueError) as exc:
            # A result the SDK rejected: off its output schema, malformed, or a kind
            # (input-required, an extension's) this client does not take.
            message = f"MCP server {name} sent a result for {tool} that cannot be used: {exc}"
        raise McpCallError(f"{ERROR_PREFIX} {message}")

    # -- the connection's task ------------------------------------------------------

    async def _run(self) -> None:
        reason: str | None = None
        try:
            async with AsyncExitStack() as stack:
                session = await self._connect(stack)
                with anyio.CancelScope() as self._startup:
                    if self._closing:  # close() came while the server was being started
                        self._startup.cancel()
                    try:
                        with anyio.fail_after(self.spec.startup_timeout):
                            await session.initialize()
                            tools = await self._list_tools(session)
                    except TimeoutError:
                        raise _StartFailed(
                            f"it did not start within {self.spec.startup_timeout:g} s "
                            "(its startup_timeout)"
                        ) from None
                self._startup = None
                if not self._closing:
                    self._session, self._tools = session, tools
                    where = f", pid {self.pid}" if self.pid else ""
                    self.log(f"MCP server {self.spec.name} is ready: {len(tools)} tools{where}")
                    self._set_state("ready")
                    await self._wake.wait()
                self._session = None
                if not self._closing:
                    reason = "the server ended the connection"
        except asyncio.CancelledError:
            self._closing = True  # the loop is going away: end as close() would
            raise
        except Exception as exc:  # every failure of the server's becomes its state
            if not self._closing:
                reason = self._describe(exc)
        finally:
            self._session = None
            await self._end_process()
            if self._closing:
                self._set_state("closed")
            else:
                self._fail(reason or "the server ended the connection")

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        spec = self.spec
        if spec.transport == "stdio":
            tail = self._stderr = StderrTail()
            parameters = StdioServerParameters(
                command=spec.command or "",
                args=list(spec.args),
                # Over the SDK's default environment (HOME, PATH, USER, ...), never ours:
                # our endpoint's key reaches a server only when the user put it in env.
                env=dict(spec.env),
                cwd=spec.cwd or _root_path(self._roots),
            )
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)  # the stderr pump, once all is closed
            try:
                read, write = await stack.enter_async_context(
                    stdio_client(parameters, errlog=tail.writer)
                )
            finally:
                tail.spawned()
            self.pid = find_server_pid(tail.inode)
            group.start_soon(tail.pump)
        else:
            http = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(spec.headers) or None)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(spec.url or "", http_client=http)
            )
        return await stack.enter_async_context(
            ClientSession(
                WatchedReadStream(read, self._wake.set),
                write,
                # Sampling and elicitation: the SDK's defaults (not offered in the
                # capabilities; a server that asks anyway gets an error, never a hang).
                list_roots_callback=self._list_roots,
                message_handler=self._on_message,
                logging_callback=self._on_server_log,
                client_info=types.Implementation(name="agent-lsp", version=_our_version()),
            )
        )

    async def _list_tools(self, session: ClientSession) -> list[types.Tool]:
        capabilities = session.server_capabilities
        if capabilities is not None and capabilities.tools is None:
            return []  # a server of resources or prompts only
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return [tool for tool in tools if self.spec.allows(tool.name)]

    async def _end_process(self) -> None:
        tail = self._stderr
        if self.pid is not None:
            try:
                await end_group(self.pid)
            except BaseException:
                kill_group(self.pid)  # cancelled meanwhile: no waiting, no orphan
                raise
        if tail is not None:
            tail.text()  # what the pump had not read
            tail.close()

    # -- what the server sends --------------------------------------------------------

    async def _list_roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=self._roots)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            # What the transport could not read: that message is lost, the session goes on.
            self.log(f"MCP server {self.spec.name} sent what cannot be read: {message}")
        elif isinstance(message, types.ToolListChangedNotification):
            await self._refresh_tools()

    async def _on_server_log(self, params: types.LoggingMessageNotificationParams) -> None:
        _log.debug("MCP server %s [%s]: %s", self.spec.name, params.level, params.data)

    async def _refresh_tools(self) -> None:
        async with self._refreshing:  # one listing at a time; the last one wins
            session = self._session
            if session is None:
                return
            try:
                with anyio.fail_after(self.spec.startup_timeout):
                    tools = await self._list_tools(session)
            except (MCPError, TimeoutError, RuntimeError, ValueError) as exc:
                self.log(f"MCP server {self.spec.name}: listing its changed tools failed: {exc}")
                return
            self._tools = tools
        self.log(f"MCP server {self.spec.name} changed its tools: {len(tools)} now")
        _notify(self._on_tools_changed, self)

    # -- state --------------------------------------------------------------------------

    def _describe(self, exc: BaseException) -> str:
        exc = _leaf(exc)
        if isinstance(exc, _StartFailed):
            return str(exc)
        if isinstance(exc, OSError) and self.spec.transport == "stdio" and self.pid is None:
            return f"cannot run {self.spec.command}: {exc.strerror or exc}"
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            return "the server ended the connection before it was ready"
        if isinstance(exc, MCPError):
            return f"it refused to start: {exc} (code {exc.code})"
        if not isinstance(exc, _EXPECTED) and not _is_http_error(exc):
            # Not a failure we expected of a server: perhaps ours; keep its traceback.
            _log.exception("MCP server %s failed", self.spec.name, exc_info=exc)
        return f"{type(exc).__name__}: {exc}"

    def _fail(self, reason: str) -> None:
        tail = self.stderr_tail
        self.error = f"{reason}\nits stderr ended with:\n{tail}" if tail else reason
        self.log(f"MCP server {self.spec.name} failed: {self.error}")
        self._tools = []
        self._set_state("failed")

    def _set_state(self, state: State) -> None:
        if state == self.state:
            return
        self.state = state
        if state != "starting":
            self._settled.set()
        _notify(self._on_state_changed, self)


class _StartFailed(Exception):
    pass


_EXPECTED = (OSError, TimeoutError, RuntimeError, ValueError)


def _is_http_error(exc: BaseException) -> bool:
    """An error of the SDK's HTTP client (a refused connection, a TLS failure): by module,
    as its package (httpx2) is the SDK's dependency, not ours to import."""
    return type(exc).__module__.split(".")[0] in ("httpx2", "httpcore2", "httpx", "httpcore")


def _notify(callback: Callable[[McpConnection], None] | None, connection: McpConnection) -> None:
    if callback is None:
        return
    try:
        callback(connection)
    except Exception:  # the owner's bug must not take the connection down; it is logged
        _log.exception("MCP server %s: a callback failed", connection.spec.name)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error in what the SDK's task groups wrapped."""
    while isinstance(exc, BaseExceptionGroup):
        real = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (real or list(exc.exceptions))[0]
    return exc


def _root_name(uri: str) -> str | None:
    path = unquote(urlparse(uri).path).rstrip("/")
    return path.rsplit("/", 1)[-1] or None


def _root_path(roots: list[types.Root]) -> str | None:
    return unquote(urlparse(str(roots[0].uri)).path) if roots else None


def _our_version() -> str:
    try:
        return metadata.version("agent-lsp")
    except metadata.PackageNotFoundError:
        return "0"
