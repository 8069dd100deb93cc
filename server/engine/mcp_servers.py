"""The MCP servers of one open folder: their definitions, connections, states and tools.

A folder's servers are those of ``server.config.mcp_config.load_definitions`` (the user
file, the editor setting ``mcpServers``, the folder's own ``.vscode/mcp.json`` /
``.mcp.json``). A workspace definition starts only once the user approved that exact
digest (``McpApprovals``); until then it is ``awaiting-approval``.

Nothing here waits for a server: :meth:`McpServers.refresh` (the folder's first use, each
ask, each listing) reads the definitions again and starts, in the background, what should
run and does not: a new or changed definition (only that one is restarted; one that is
gone is closed), and at an ask a failed server whose backoff has passed (a listing shows
the failure rather than hiding it behind a restart). A server's tools join the folder's
registry when it is ready and leave it when it stops; each change makes a new tuple of
tools (:attr:`McpServers.tools`), which is what the folder's cached runtime is keyed by.

The SDK is a heavy import (seconds on a busy machine), so it is imported in a worker
thread before the first connection, never on the event loop nor at start-up; the
definitions' parsers come with the first refresh (the engine's ``load``).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tooling.display import escape_control

from .. import protocol as p
from ..agent.permissions import ALLOW_ALWAYS, ALLOW_ONCE, Asker, PermissionPrompt
from ..errors import InvalidParamsError

if TYPE_CHECKING:
    from tooling.contract import ToolDefinition
    from tools.mcp.connection import McpConnection
    from tools.mcp.spec import McpServerSpec

    from ..config.mcp_approvals import McpApprovals
    from ..config.mcp_config import McpDefinitions, McpServerEntry

log = logging.getLogger(__name__)

STARTING: Final = "starting"
READY: Final = "ready"
FAILED: Final = "failed"
DISABLED: Final = "disabled"
AWAITING_APPROVAL: Final = "awaiting-approval"
# Seconds before a failed server is tried again (at the next ask past it): the first retry
# is at once, then the wait doubles up to a minute.
FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 60.0
WORKSPACE: Final = "workspace"  # mcp_config's ORIGIN_WORKSPACE (not imported at start-up)


def backoff(failures: int) -> float:
    """Seconds to wait, after the ``failures``-th failure in a row, before the next start."""
    return 0.0 if failures <= 1 else min(FIRST_BACKOFF * 2 ** (failures - 2), MAX_BACKOFF)


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

    @property
    def spec(self) -> McpServerSpec | None:
        return self.entry.spec


class McpServers:
    """The servers of the folder ``root``; ``load`` reads their definitions now."""

    def __init__(
        self,
        root: Path,
        load: Callable[[], McpDefinitions],
        approvals: Callable[[], McpApprovals],
        *,
        warn: Callable[[str], None] = log.warning,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._load = load
        self._approvals_factory = approvals
        self._approvals_file: McpApprovals | None = None
        self._warn = warn
        self._clock = clock
        self._servers: dict[str, _Server] = {}
        self._warned: set[str] = set()  # each definition problem is shown once
        self._tasks: set[asyncio.Task[None]] = set()  # starts and closes under way
        self._closed = False
        self.in_use = False  # refreshed once: the folder was used
        # The tools of the ready servers, a new tuple at each change (the runtime's key).
        self.tools: tuple[ToolDefinition, ...] = ()

    @property
    def _approvals(self) -> McpApprovals:
        if self._approvals_file is None:
            self._approvals_file = self._approvals_factory()
        return self._approvals_file

    # -- definitions ----------------------------------------------------------------

    def refresh(self, *, retry: bool = False) -> None:
        """Read the definitions again; start what should run, close what is gone or changed;
        ``retry`` (an ask): also failed servers whose backoff has passed. Returns at once."""
        if self._closed:
            return
        self.in_use = True
        try:
            definitions = self._load()
        except Exception:  # a bug of ours must not stop the ask; the servers stay as they are
            log.exception("reading the MCP definitions of %s failed", self.root)
            return
        for warning in definitions.all_warnings():
            if warning not in self._warned:
                self._warned.add(warning)
                self._warn(f"MCP: {warning}")
        names = set()
        for entry in definitions.entries:
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
        if spec is None:
            server.state = FAILED
            server.error = "; ".join(server.entry.warnings) or "its definition cannot be used"
        elif not spec.enabled:
            server.state = DISABLED
        elif spec.origin == WORKSPACE and not self._approvals.is_approved(self.root, spec):
            server.state = AWAITING_APPROVAL
        else:
            self._start(server, spec)

    def _retry_if_due(self, server: _Server, retry: bool) -> None:
        spec = server.spec
        if server.state == AWAITING_APPROVAL and spec is not None:
            self._begin(server)  # approved since (by this server or another one of the user's)
        elif retry and server.state == FAILED and spec and self._clock() >= server.retry_at:
            self._start(server, spec)

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
            log=lambda line: log.info("%s", line),
            roots=[self.root.as_uri()],
        )
        server.connection = connection
        await connection.start()

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
            self._spawn(connection.close(), f"close MCP server {server.entry.name}")

    def _spawn(self, work: object, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _tools_changed(self) -> None:
        """The ready servers' tools as one tuple; a name taken already is refused."""
        tools: list[ToolDefinition] = []
        owners: dict[str, str] = {}
        for server in self._servers.values():
            for tool in server.tools:
                owner = owners.setdefault(tool.name, server.entry.name)
                if len(owners) == len(tools):  # not added: the name was taken
                    warning = (
                        f"MCP server {server.entry.name}: its tool {tool.name} is refused, "
                        f"a tool of that name comes from {owner}"
                    )
                    if warning not in self._warned:
                        self._warned.add(warning)
                        self._warn(warning)
                    continue
                tools.append(tool)
        if len(tools) != len(self.tools) or any(
            a is not b for a, b in zip(tools, self.tools, strict=False)
        ):
            self.tools = tuple(tools)

    # -- approvals, listing, the end --------------------------------------------------------

    def awaiting(self, name: str) -> McpServerSpec | None:
        """The spec of the server ``name`` if it is a workspace one awaiting approval."""
        server = self._servers.get(name)
        if server is None or server.state != AWAITING_APPROVAL:
            return None
        return server.spec

    def approve(self, spec: McpServerSpec) -> None:
        """Record the user's approval of ``spec`` and start it (if it is still defined so)."""
        self._approvals.approve(self.root, spec)
        server = self._servers.get(spec.name)
        if server is not None and server.spec == spec and server.state == AWAITING_APPROVAL:
            self._start(server, spec)

    def state(self, name: str) -> str | None:
        server = self._servers.get(name)
        return server.state if server is not None else None

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


async def approve_with_user(servers: McpServers, name: str, asker: Asker | None) -> str:
    """Ask the user (``agent/requestPermission``, naming the command line or URL exactly)
    whether the workspace server ``name`` may start; records a yes. Returns the state now.
    Raises :class:`InvalidParamsError` when ``name`` awaits no approval."""
    spec = servers.awaiting(name)
    if spec is None:
        state = servers.state(name)
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
        title=escape_control(f"Start MCP server {name} of {servers.root}: {spec.command_line()}"),
        reason=escape_control(
            f"The folder's own MCP definitions name {where} {spec.command_line()}; it runs "
            "outside the sandbox with your rights. Approving remembers this exact definition "
            "for this folder (a changed one asks again)."
        ),
    )
    if await asker.ask(prompt) in (ALLOW_ONCE, ALLOW_ALWAYS):
        servers.approve(spec)
    return servers.state(name) or AWAITING_APPROVAL
