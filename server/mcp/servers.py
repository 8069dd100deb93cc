"""The MCP servers of one open folder: their definitions, connections, states and tools.

A folder's servers are those of ``server.mcp.config.load_definitions`` (the user
file, the editor setting ``mcpServers``, the folder's own ``.vscode/mcp.json`` /
``.mcp.json``). A workspace definition starts only once the user approved that exact
digest (``McpApprovals``); until then it is ``awaiting-approval``.

Nothing here waits for a server, nor for a file, but an ask (:func:`wait_for_starting`:
before its first model request it waits, a bounded time, for the servers in their first
start, so that the first ask after a start has their tools): :meth:`McpServers.refresh` (the
folder's first use, each ask, each listing) returns at once; in a background task the definitions
are read again in a worker thread (:class:`FolderDefinitions`: re-parsed only when a file
or the setting changed) and, back on the loop, what should run and does not is started:
a new or changed definition (only that one is restarted; one that is gone is closed), and
at an ask a failed server whose backoff has passed (a listing shows the failure rather
than hiding it behind a restart). A server's tools join the folder's registry when it is
ready and leave it when it stops; each change makes a new tuple of tools
(:attr:`McpServers.tools`), which is what the folder's cached runtime is keyed by.

The SDK is a heavy import (seconds on a busy machine) and the definitions' parsers cost
~20 ms, so both are imported in worker threads when first needed, never on the event
loop nor at start-up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tooling.display import escape_consent
from tools.mcp.naming import server_prefix

from .. import protocol as p
from ..agent.events import EventSink, ToolSourcesMissing, ToolSourcesStarting
from ..agent.permissions import (
    ALLOW_ALWAYS,
    ALLOW_ONCE,
    REJECT_ALWAYS,
    REJECT_ONCE,
    Asker,
    PermissionPrompt,
)
from ..config.user_config import UserConfigError
from ..errors import InvalidParamsError
from .definitions import WORKSPACE, FolderDefinitions, Loaded

if TYPE_CHECKING:
    from tooling.contract import ToolDefinition
    from tools.mcp.connection import McpConnection
    from tools.mcp.spec import McpServerSpec

    from .config import McpServerEntry

log = logging.getLogger(__name__)

STARTING: Final = "starting"
READY: Final = "ready"
FAILED: Final = "failed"
DISABLED: Final = "disabled"
AWAITING_APPROVAL: Final = "awaiting-approval"
# A folder's own server the user declined with "don't ask again" (as defined now): not
# started, and clients do not offer its approval unprompted; it can still be approved.
REJECTED: Final = "rejected"
# Stopped by the user (agent/controlMcpServer) until started again, or this server restarts.
STOPPED: Final = "stopped"
LOG_LINES: Final = 200  # what agent/mcpServerLog keeps of a server's state lines
# Seconds before a failed server is tried again (at the next ask past it): the first retry
# is at once, then the wait doubles up to a minute.
FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 60.0
# The longest an ask waits for servers in their first start (a server's own
# ``startup_timeout``, 30 s by default, may end its start sooner, as failed): long enough for
# the usual few seconds of an npx or uvx server, short enough for an ask not to look hung.
ASK_WAIT_S: Final = 10.0


def backoff(failures: int) -> float:
    """Seconds to wait, after the ``failures``-th failure in a row, before the next start."""
    return 0.0 if failures <= 1 else min(FIRST_BACKOFF * 2 ** (failures - 2), MAX_BACKOFF)


def folder_servers(
    environ: Mapping[str, str],
    editor_servers: Callable[[], Mapping[str, Any] | None],
    warn: Callable[[str], None],
) -> Callable[[Path], McpServers]:
    """The factory of a folder's MCP servers: the user file's, the editor's
    (``editor_servers``: the editor settings' ``mcpServers`` now), the folder's own
    (approved); ``warn`` shows a problem."""

    def servers(root: Path) -> McpServers:
        definitions = FolderDefinitions(root, environ)
        return McpServers(root, definitions, editor_servers, warn=warn)

    return servers


class _Server:
    """One defined server and its current connection (a restart is a new connection)."""

    def __init__(self, entry: McpServerEntry) -> None:
        self.entry = entry
        self.state: str = STARTING
        self.error: str | None = None
        self.connection: McpConnection | None = None
        self.tools: tuple[ToolDefinition, ...] = ()
        self.failures = 0
        self.retry_at = 0.0
        self.log: collections.deque[str] = collections.deque(maxlen=LOG_LINES)
        self.stderr = ""  # the last connection's stderr tail, once it ended

    @property
    def spec(self) -> McpServerSpec | None:
        return self.entry.spec


class McpServers:
    """The servers of the folder ``root``; ``definitions`` reads them, with ``setting()``
    (the editor's ``mcpServers`` now) as the editor's."""

    def __init__(
        self,
        root: Path,
        definitions: FolderDefinitions,
        setting: Callable[[], Any],
        *,
        warn: Callable[[str], None] = log.warning,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._definitions = definitions
        self._setting = setting
        self._warn = warn
        self._clock = clock
        self._servers: dict[str, _Server] = {}
        self._loaded: Loaded | None = None  # the definitions applied last
        self._loading: asyncio.Task[None] | None = None  # the one read in flight
        self._again = False  # refreshed while reading: one more read after it
        self._retry = False  # an ask's refresh is among those the next read serves
        self._warned: set[str] = set()  # each definition problem is shown once
        self._tasks: set[asyncio.Task[None]] = set()  # reads, starts and closes under way
        self._waiters: set[asyncio.Future[None]] = set()  # asks waiting for a state change
        self._closed = False
        self.in_use = False  # refreshed once: the folder was used
        # The tools of the ready servers, a new tuple at each change (the runtime's key).
        self.tools: tuple[ToolDefinition, ...] = ()

    # -- definitions ----------------------------------------------------------------

    def refresh(self, *, retry: bool = False) -> None:
        """Read the definitions again; start what should run, close what is gone or changed;
        ``retry`` (an ask): also failed servers whose backoff has passed. Returns at once:
        the reading is a background task, and refreshes while it runs share one more."""
        if self._closed:
            return
        self.in_use = True
        self._retry = self._retry or retry
        if self._loading is None:
            self._loading = self._spawn(self._refreshing(), f"read MCP definitions {self.root}")
        else:
            self._again = True

    async def current(self) -> None:
        """Refresh and wait until the definitions as they are now are applied."""
        self.refresh()
        if self._loading is not None:
            await asyncio.shield(self._loading)  # a cancelled request leaves the read be

    async def _refreshing(self) -> None:
        try:
            while not self._closed:
                retry, self._retry, self._again = self._retry, False, False
                try:
                    loaded = await asyncio.to_thread(self._definitions.read, self._setting())
                except (OSError, UserConfigError) as exc:  # the servers stay as they are
                    self._warn_once(f"MCP: the definitions of {self.root} cannot be read: {exc}")
                else:
                    if not self._closed:
                        self._apply(loaded, retry)
                if not self._again:
                    return
        finally:
            self._loading = None

    def _apply(self, loaded: Loaded, retry: bool) -> None:
        if loaded is self._loaded and not retry:
            return  # nothing changed (approvals included: their file is part of the key)
        self._loaded = loaded
        for warning in loaded.definitions.all_warnings():
            self._warn_once(f"MCP: {warning}")
        names = set()
        for entry in loaded.definitions.entries:
            names.add(entry.name)
            server = self._servers.get(entry.name)
            if server is not None and server.spec == entry.spec:
                server.entry = entry
                self._retry_if_due(server, retry)
                continue
            if server is not None:
                self._stop(server)
            self._servers[entry.name] = server = _Server(entry)
            self._begin(server)
        for name in set(self._servers) - names:
            self._stop(self._servers.pop(name))
        self._tools_changed()

    def _begin(self, server: _Server) -> None:
        spec = server.spec
        approved = self._loaded.approved if self._loaded is not None else frozenset()
        if spec is None:
            server.state = FAILED
            server.error = "; ".join(server.entry.warnings) or "its definition cannot be used"
        elif not spec.enabled:
            server.state = DISABLED
        elif spec.origin == WORKSPACE and spec.name not in approved:
            rejected = self._loaded.rejected if self._loaded is not None else frozenset()
            server.state = REJECTED if spec.name in rejected else AWAITING_APPROVAL
        else:
            self._start(server, spec)

    def _retry_if_due(self, server: _Server, retry: bool) -> None:
        spec = server.spec
        if server.state in (AWAITING_APPROVAL, REJECTED) and spec is not None:
            self._begin(server)  # approved since (by this server or another one of the user's)
        elif retry and server.state == FAILED and spec and self._clock() >= server.retry_at:
            self._start(server, spec)

    def _warn_once(self, warning: str) -> None:
        if warning not in self._warned:
            self._warned.add(warning)
            self._warn(warning)

    # -- one server's connection -------------------------------------------------------

    def _start(self, server: _Server, spec: McpServerSpec) -> None:
        server.state, server.tools = STARTING, ()
        self._spawn(self._connect(server, spec), f"start MCP server {spec.name}")

    async def _connect(self, server: _Server, spec: McpServerSpec) -> None:
        # The SDK's first import, off the loop (see the module's docstring).
        module = await asyncio.to_thread(importlib.import_module, "tools.mcp.connection")
        await asyncio.to_thread(importlib.import_module, "tools.mcp.tools")
        if self._closed or self._servers.get(spec.name) is not server or server.state != STARTING:
            return  # stopped or replaced meanwhile
        connection: McpConnection = module.McpConnection(
            spec,
            on_tools_changed=lambda c: self._on_tools(server, c),
            on_state_changed=lambda c: self._on_state(server, c),
            log=lambda line: self._logged(server, line),
            roots=[self.root.as_uri()],
        )
        server.connection = connection
        await connection.start()

    def _logged(self, server: _Server, line: str) -> None:
        log.info("%s", line)
        server.log.append(f"{time.strftime('%H:%M:%S')} {line}")

    def _on_state(self, server: _Server, connection: McpConnection) -> None:
        if server.connection is not connection:
            return  # an older connection, closed
        if connection.state == READY:
            server.state, server.error, server.failures = READY, None, 0
            self._on_tools(server, connection)
        elif connection.state == FAILED:
            server.connection = None
            server.state, server.error, server.tools = FAILED, connection.error, ()
            server.failures += 1
            server.retry_at = self._clock() + backoff(server.failures)
            if server.failures == 1:  # once per run of failures; the log has each one
                first = (connection.error or "").splitlines()[0:1]
                why = f": {first[0]}" if first else ""
                self._warn(f"MCP server {server.entry.name} failed{why}")
            self._tools_changed()

    def _on_tools(self, server: _Server, connection: McpConnection) -> None:
        from tools.mcp.tools import definitions  # loaded by _connect already

        if server.connection is connection and connection.state == READY:
            server.tools = tuple(definitions(connection))
            self._tools_changed()

    def _stop(self, server: _Server) -> None:
        connection, server.connection = server.connection, None
        server.tools = ()
        if connection is not None:
            server.stderr = connection.stderr_tail
            self._spawn(connection.close(), f"close MCP server {server.entry.name}")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            # Only a bug of ours gets here (the environment's problems are warnings or a
            # server's state where they happen): shown as one, not left to the collector.
            task.get_loop().call_exception_handler(
                {"message": f"{task.get_name()}: a bug", "exception": exc, "task": task}
            )

    def _tools_changed(self) -> None:
        """The ready servers' tools as one tuple; a name taken already is refused. Every
        state change ends here: the asks waiting for one look again."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        tools: list[ToolDefinition] = []
        owners: dict[str, str] = {}
        for server in self._servers.values():
            for tool in server.tools:
                owner = owners.setdefault(tool.name, server.entry.name)
                if len(owners) == len(tools):  # not added: the name was taken
                    self._warn_once(
                        f"MCP server {server.entry.name}: its tool {tool.name} is refused, "
                        f"a tool of that name comes from {owner}"
                    )
                    continue
                tools.append(tool)
        if len(tools) != len(self.tools) or any(
            a is not b for a, b in zip(tools, self.tools, strict=False)
        ):
            self.tools = tuple(tools)

    # -- approvals, listing, the end --------------------------------------------------------

    def awaiting(self, name: str) -> McpServerSpec | None:
        """The spec of the server ``name`` if it is a workspace one awaiting approval (or
        declined for good: the user may still approve it)."""
        server = self._servers.get(name)
        if server is None or server.state not in (AWAITING_APPROVAL, REJECTED):
            return None
        return server.spec

    async def reject(self, spec: McpServerSpec) -> None:
        """Record that the user declined ``spec`` for good ("don't ask again")."""
        await asyncio.to_thread(self._definitions.reject, spec)  # a file written under a lock
        server = self._servers.get(spec.name)
        if not self._closed and server is not None and server.spec == spec:
            if server.state == AWAITING_APPROVAL:
                server.state = REJECTED

    def control(self, name: str, action: str) -> p.McpServerInfo:
        """``agent/controlMcpServer``: the user starts, stops or restarts ``name``. Raises
        :class:`InvalidParamsError` when it is not defined or cannot (awaits approval, is
        disabled, has a broken definition)."""
        if action not in p.MCP_SERVER_ACTIONS:
            raise InvalidParamsError("action", f"must be one of {', '.join(p.MCP_SERVER_ACTIONS)}")
        server = self._servers.get(name)
        if server is None:
            raise InvalidParamsError("name", f"the MCP server {name} is not defined here")
        spec = server.spec
        if action == "stop":
            if server.state in (READY, STARTING, FAILED):
                self._stop(server)
                server.state, server.error = STOPPED, None
                self._logged(server, f"MCP server {name} stopped by the user")
                self._tools_changed()
        elif spec is None or server.state in (DISABLED, AWAITING_APPROVAL, REJECTED):
            state = "its definition cannot be used" if spec is None else server.state
            raise InvalidParamsError("name", f"the MCP server {name} cannot start ({state})")
        elif action == "restart" or server.state in (STOPPED, FAILED):
            self._stop(server)
            server.failures, server.error = 0, None
            self._logged(server, f"MCP server {name} {action}ed by the user")
            self._start(server, spec)
            self._tools_changed()
        return _info(server)

    def output(self, name: str) -> str | None:
        """``agent/mcpServerLog``: the server's state lines, then its stderr's last lines."""
        server = self._servers.get(name)
        if server is None:
            return None
        connection = server.connection
        stderr = connection.stderr_tail if connection is not None else server.stderr
        parts = ["\n".join(server.log) or "(nothing logged yet)"]
        if stderr:
            parts.append(f"--- its stderr, the last lines ---\n{stderr}")
        return "\n\n".join(parts)

    def unavailable(self, tool: str) -> str | None:
        """Why the tool name ``tool`` (``mcp__SERVER__TOOL``) of one of these servers is not
        offered: the server waits for the user's approval, was declined, is starting or
        failed (None: no server of that name is defined, or it is ready)."""
        for name, server in self._servers.items():
            if not tool.startswith(server_prefix(name)) or server.state == READY:
                continue
            if server.state == AWAITING_APPROVAL:
                return (
                    f"the MCP server {name} waits for the user's approval (it is this folder's "
                    "own server, new or changed since it was approved), so its tools are not "
                    "available yet. Tell the user to approve it if it is needed."
                )
            if server.state == REJECTED:
                return (
                    f"the user declined to start the MCP server {name} (as it is defined now), "
                    "so its tools are not available. Do without them, or ask the user."
                )
            if server.state == STARTING:
                return (
                    f"the MCP server {name} is still starting; its tools are offered once it "
                    "is ready (the next ask)."
                )
            if server.state == DISABLED:
                return f"the MCP server {name} is disabled in its definition."
            if server.state == STOPPED:
                return f"the user stopped the MCP server {name}; its tools are not available."
            first = (server.error or "").splitlines()[:1]
            return f"the MCP server {name} failed" + (f": {first[0]}" if first else ".")
        return None

    async def approve(self, spec: McpServerSpec) -> None:
        """Record the user's approval of ``spec`` and start it (if it is still defined so)."""
        await asyncio.to_thread(self._definitions.approve, spec)  # a file written under a lock
        server = self._servers.get(spec.name)
        if self._closed or server is None or server.spec != spec:
            return
        if server.state in (AWAITING_APPROVAL, REJECTED):
            self._start(server, spec)

    async def applied(self, within: float) -> None:
        """Wait, at most ``within`` seconds, for the definitions' read under way (if any)."""
        if self._loading is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._loading), max(within, 0.0))

    async def settle(self, within: float) -> None:
        """Wait, at most ``within`` seconds, until no server is in its first start (a failed
        one being tried again is not waited for: asks would stall on it again and again)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while self.first_starts() and (left := deadline - loop.time()) > 0:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.add(waiter)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter, left)
            finally:
                self._waiters.discard(waiter)

    def first_starts(self) -> tuple[str, ...]:
        """The servers in their first start: neither ready nor failed yet."""
        return tuple(
            name
            for name, server in self._servers.items()
            if server.state == STARTING and server.failures == 0
        )

    def starting(self) -> tuple[str, ...]:
        """The servers being started: their tools are not in the registry yet."""
        return tuple(name for name, server in self._servers.items() if server.state == STARTING)

    def state(self, name: str) -> str | None:
        server = self._servers.get(name)
        return server.state if server is not None else None

    def error(self, name: str) -> str | None:
        server = self._servers.get(name)
        return server.error if server is not None else None

    def describe(self) -> list[p.McpServerInfo]:
        """Each defined server as ``agent/mcpServers`` shows it."""
        return [_info(server) for server in self._servers.values()]

    async def aclose(self) -> None:
        """Close every server (their process groups ended) and start no more."""
        self._closed = True
        for server in self._servers.values():
            self._stop(server)
            if server.state in (STARTING, READY):
                server.state = DISABLED  # stopped for good: this folder is closed
        self._tools_changed()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


async def wait_for_starting(
    servers: McpServers | None, on_event: EventSink | None, within: float = ASK_WAIT_S
) -> str | None:
    """Before an ask's first model request: wait for the servers in their first start (at
    most ``within`` seconds), said as progress (:class:`ToolSourcesStarting`); those that did
    not become ready are said too (:class:`ToolSourcesMissing`), and returned as a note for
    the model (None: nothing is missing). The ask goes on either way."""
    if servers is None:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    await servers.applied(within)  # the first ask after a start: the servers are being read
    waited = servers.first_starts()
    if not waited:
        return None
    if on_event is not None:
        on_event(ToolSourcesStarting(waited, within))
    await servers.settle(deadline - loop.time())
    missing = [name for name in waited if servers.state(name) != READY]
    if not missing:
        return None
    reasons: list[str | None] = []
    for name in missing:
        if servers.state(name) == STARTING:
            reasons.append(f"still starting after {within:.0f} s")
        else:
            first = (servers.error(name) or "").splitlines()[0:1]
            reasons.append(f"{servers.state(name)}: {first[0]}" if first else servers.state(name))
    if on_event is not None:
        on_event(ToolSourcesMissing(tuple(missing), tuple(r or "" for r in reasons)))
    listed = "; ".join(
        f"{escape_consent(name)} ({escape_consent(reason or '')})"
        for name, reason in zip(missing, reasons, strict=True)
    )
    return f"MCP servers whose tools are missing from this ask: {listed}."


def _info(server: _Server) -> p.McpServerInfo:
    entry, spec = server.entry, server.spec
    tools = [tool.name for tool in server.tools]
    return p.McpServerInfo(
        name=entry.name,
        origin=entry.origin,
        transport=entry.transport or "",
        target=entry.target,
        state=server.state,
        tools=tools,
        error=server.error,
        trusted=bool(spec and spec.trust),
        warnings=list(entry.warnings),
    )


async def listing(servers: McpServers | None) -> p.McpServersResult:
    """``agent/mcpServers``: the folder's servers (None: it has none), as defined now."""
    if servers is None:
        return p.McpServersResult([])
    await servers.current()
    return p.McpServersResult(servers.describe())


async def control(servers: McpServers | None, name: str, action: str) -> p.McpServerInfo:
    """``agent/controlMcpServer`` (see :meth:`McpServers.control`)."""
    if servers is None:
        raise InvalidParamsError("name", f"the MCP server {name} is not defined here")
    await servers.current()
    return servers.control(name, action)


async def server_log(servers: McpServers | None, name: str) -> p.McpServerLogResult:
    """``agent/mcpServerLog`` (see :meth:`McpServers.output`)."""
    if servers is not None:
        await servers.current()
    text = servers.output(name) if servers is not None else None
    if text is None:
        raise InvalidParamsError("name", f"the MCP server {name} is not defined here")
    return p.McpServerLogResult(name=name, text=text)


async def approve_with_user(
    servers: McpServers | None, name: str, asker: Asker | None
) -> p.ApproveMcpServerResult:
    """``agent/approveMcpServer``: ask the user (``agent/requestPermission``, naming the
    command line or URL exactly) whether the workspace server ``name`` may start; records a
    yes. Raises :class:`InvalidParamsError` when ``name`` awaits no approval."""
    if servers is not None:
        await servers.current()
    spec = servers.awaiting(name) if servers is not None else None
    if servers is None or spec is None:
        state = servers.state(name) if servers is not None else None
        why = "is not defined here" if state is None else f"awaits no approval ({state})"
        raise InvalidParamsError("name", f"the MCP server {name} {why}")
    if asker is None or not asker.can_ask():
        raise InvalidParamsError(
            "name", "this client cannot answer permission requests, so it cannot approve"
        )
    where = "the command" if spec.transport == "stdio" else "the server at"
    prompt = PermissionPrompt(
        session_id="",
        call_id=f"mcp-approval-{uuid.uuid4().hex[:12]}",
        tool_name="mcp_server",
        arguments={"name": name, "folder": str(servers.root), **spec.runs()},
        title=escape_consent(f"Start MCP server {name} of {servers.root}: {spec.command_line()}"),
        reason=escape_consent(
            f"The folder's own MCP definitions name {where} {spec.command_line()}; it runs "
            "outside the sandbox with your rights. Approving remembers this exact definition "
            "for this folder (a changed one asks again)."
        ),
        # Once or always would both record it: one yes; a no for now, or for good.
        options=(
            (ALLOW_ONCE, "Approve and start"),
            (REJECT_ONCE, "Reject"),
            (REJECT_ALWAYS, "Reject, don't ask again"),
        ),
    )
    choice = await asker.ask(prompt)
    if choice in (ALLOW_ONCE, ALLOW_ALWAYS):
        await servers.approve(spec)
    elif choice == REJECT_ALWAYS:
        await servers.reject(spec)
    state = servers.state(name) or AWAITING_APPROVAL
    return p.ApproveMcpServerResult(
        approved=state not in (AWAITING_APPROVAL, REJECTED), state=state
    )
