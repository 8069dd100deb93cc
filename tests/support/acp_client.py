"""Drive the real ``agent-lsp acp`` over stdio with the ACP SDK's client side.

:class:`RecordingClient` is the editor: it implements ``acp.interfaces.Client``, records
every call the agent makes to it (``session/update``, ``session/request_permission``,
``fs/read_text_file``, ``fs/write_text_file``) in arrival order, answers permission
requests from a script, and keeps "unsaved buffers" in memory: a read sees the buffer when
there is one (else the disk), a write lands in the buffer only, as an editor that has the
file open would do it.

:func:`acp_agent` starts the agent for the length of an ``async with`` block and always
stops it, also when the block raises: stdin is closed first (an ACP agent ends on EOF),
then the SDK terminates and kills it if it lingers, so no test leaves a process behind.

Waiting is on conditions (:meth:`RecordingClient.wait_for`), never on fixed sleeps: every
recorded call wakes the waiters, which re-check their predicate.

Real clients do not all behave like that editor; the flags of :class:`RecordingClient` make
it behave as one of them (:func:`codecompanion_like`, :func:`agent_shell_like`, modelled on
CodeCompanion.nvim 19.22 and agent-shell 0.48.1 as issue 35 observed them). Every frame
either side sent is kept, and checked against the ACP schema when the agent stops
(``tests.support.acp_schema``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import acp
from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    KillTerminalResponse,
    NewSessionResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.support.acp_schema import problems as schema_problems
from tests.support.lsp_client import REPO

# Isolated mode, as an editor should start it (see docs/protocol.md); global options such
# as --session-dir go between this and "acp".
AGENT_COMMAND = [sys.executable, "-I", "-m", "server"]
# Upper bound for one request or one wait: generous for a loaded CI machine, yet a hung
# agent fails the test in seconds instead of hanging the suite.
REQUEST_TIMEOUT = 30.0
CANCELLED = "cancelled"  # a permission answer: DeniedOutcome, as when the user dismisses it

T = TypeVar("T")


@dataclass
class PermissionAsk:
    """One ``session/request_permission`` the agent sent, and what the client answered."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    answer: str = ""  # the option kind chosen, or CANCELLED


@dataclass
class FileRead:
    session_id: str
    path: str
    line: int | None
    limit: int | None
    from_buffer: bool  # True: the client's unsaved text was returned, not the disk's


@dataclass
class FileWrite:
    session_id: str
    path: str
    content: str


PermissionPolicy = Callable[[PermissionAsk], str]


@dataclass
class RecordingClient:
    """An ACP client that records everything and answers from a script.

    ``buffers``: absolute path -> unsaved text (what ``fs/read_text_file`` returns; where
    ``fs/write_text_file`` writes). ``permission_answers``: option kinds ("allow_once",
    "reject_once", ...) or CANCELLED, used in order; when they run out ``policy`` decides
    (default: reject once, so an unexpected question never grants anything).
    """

    buffers: dict[str, str] = field(default_factory=dict)
    permission_answers: deque[str] = field(default_factory=deque)
    policy: PermissionPolicy = field(default=lambda ask: "reject_once")
    # Every call in arrival order: (method, the parsed request object).
    calls: list[tuple[str, Any]] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)  # (sessionId, update)
    permissions: list[PermissionAsk] = field(default_factory=list)
    reads: list[FileRead] = field(default_factory=list)
    writes: list[FileWrite] = field(default_factory=list)
    # The agent's frames as they came off the wire: (method or "response", sessionUpdate
    # kind or None). The SDK handles each frame in a task of its own, so this, not the
    # order of the handler calls, is what "A arrives before B" is checked against.
    frames: list[tuple[str, str | None]] = field(default_factory=list)
    raw_frames: list[dict[str, Any]] = field(default_factory=list)  # the same, whole
    # Something the agent sent that a strict client would not accept (kept for the asserts:
    # raising inside a handler would only send the agent an error it may swallow).
    problems: list[str] = field(default_factory=list)
    # Every frame on the wire, both ways, in order: ("agent" or "client", the message).
    traffic: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # -- how a real client behaves (all off: the editor described above) --
    # fs/read_text_file of a missing file answers empty content (CodeCompanion: "so the
    # agent can create it"), not an error.
    missing_as_empty: bool = False
    # fs/read_text_file reads the disk, never its buffers (CodeCompanion).
    reads_disk: bool = False
    # fs/write_text_file saves the file (folders made), as well as holding it.
    saves: bool = False
    # Its buffer adds a newline to the end of what it is given (Neovim's buffer lines).
    adds_newline: bool = False
    # After answering a permission request "cancelled", it sends session/cancel
    # (agent-shell: the answer first, then the cancel).
    cancels_after_cancelled: bool = False
    # Appends to this file (in the workspace) at each agent_message_chunk and tool_call
    # (agent-shell's transcript).
    transcript: Path | None = None
    conn: Any = None  # the SDK's ClientSideConnection (on_connect)
    # Whether this client's own frames are checked against the schema too (off for a test
    # that sends malformed requests on purpose; the agent's frames are always checked).
    own_frames_checked: bool = True
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: set[asyncio.Future[None]] = field(default_factory=set)

    # -- recording and waiting ------------------------------------------------------------

    def _record(self, method: str, request: Any) -> None:
        self.calls.append((method, request))
        # Wake every waiter; the next waiters wait on a fresh event.
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(
        self, predicate: Callable[[], bool], within: float = REQUEST_TIMEOUT, what: str = ""
    ) -> None:
        """Return once ``predicate()`` holds, re-checked after every recorded call."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"not within {within} s: {what or predicate}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def mark(self) -> int:
        """The number of updates so far: pass as ``since`` to look only at later ones."""
        return len(self.updates)

    def observe(self, event: StreamEvent) -> None:
        """A ``Connection`` observer: note each frame, in order."""
        incoming = event.direction == StreamDirection.INCOMING
        self.traffic.append(("agent" if incoming else "client", event.message))
        if not incoming:
            return
        message = event.message
        self.raw_frames.append(message)
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        update = params.get("update") if isinstance(params.get("update"), dict) else {}
        self.frames.append((message.get("method") or "response", update.get("sessionUpdate")))

    def frame_index(self, method: str, kind: str | None = None, start: int = 0) -> int:
        """Where the first frame of ``method`` (and ``kind``) at or after ``start`` is."""
        for index, (name, update) in enumerate(self.frames[start:], start):
            if name == method and (kind is None or update == kind):
                return index
        raise AssertionError(f"no {method} {kind or ''} frame in {self.frames[start:]}")

    # -- views of the updates ---------------------------------------------------------------

    def of(self, session_id: str, kind: type[T], since: int = 0) -> list[T]:
        return [
            update
            for sid, update in self.updates[since:]
            if sid == session_id and isinstance(update, kind)
        ]

    def kinds(self, session_id: str, since: int = 0) -> list[str]:
        """The ``sessionUpdate`` names of a session's updates, in order."""
        return [u.session_update for sid, u in self.updates[since:] if sid == session_id]

    def text(
        self,
        session_id: str,
        kind: type[AgentMessageChunk | AgentThoughtChunk | UserMessageChunk] = AgentMessageChunk,
        since: int = 0,
    ) -> str:
        """The text of a session's chunks of one kind, joined."""
        return "".join(
            chunk.content.text
            for chunk in self.of(session_id, kind, since)
            if isinstance(chunk.content, TextContentBlock)
        )

    def tool_updates(
        self, session_id: str, call_id: str, since: int = 0
    ) -> list[ToolCallStart | ToolCallProgress]:
        """A call's ``tool_call`` and ``tool_call_update``s, in order."""
        return [
            update
            for sid, update in self.updates[since:]
            if sid == session_id
            and isinstance(update, ToolCallStart | ToolCallProgress)
            and update.tool_call_id == call_id
        ]

    def commands(self, session_id: str) -> list[str]:
        """The command names of the latest ``available_commands_update``."""
        updates = self.of(session_id, AvailableCommandsUpdate)
        return [command.name for command in updates[-1].available_commands] if updates else []

    def current_modes(self, session_id: str, since: int = 0) -> list[str]:
        return [u.current_mode_id for u in self.of(session_id, CurrentModeUpdate, since)]

    # -- acp.interfaces.Client ----------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # Recorded before any await: the SDK runs each notification as a task, and the
        # order they were sent in is part of what the tests check.
        self.updates.append((session_id, update))
        self._record("session/update", update)
        kind = getattr(update, "session_update", "")
        if self.transcript is not None and kind in ("agent_message_chunk", "tool_call"):
            self.transcript.parent.mkdir(parents=True, exist_ok=True)
            with self.transcript.open("a", encoding="utf-8") as f:
                f.write(f"{kind}\n")

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        ask = PermissionAsk(session_id, tool_call, list(options))
        ask.answer = self.permission_answers.popleft() if self.permission_answers else ""
        ask.answer = ask.answer or self.policy(ask)
        self.permissions.append(ask)
        self._record("session/request_permission", ask)
        if ask.answer == CANCELLED:
            if self.cancels_after_cancelled and self.conn is not None:
                conn = self.conn

                async def cancel() -> None:
                    await asyncio.sleep(0)  # once the answer is on its way
                    await conn.cancel(session_id=session_id)

                task = asyncio.ensure_future(cancel())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        # A real client shows the options and sends back the id of the one picked; it picks
        # by kind here, so a test names what the user chose, not the agent's ids.
        chosen = [option for option in options if option.kind == ask.answer]
        if not chosen:
            self.problems.append(f"no {ask.answer!r} option in {[o.kind for o in options]}")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen[0].option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        from_buffer = path in self.buffers and not self.reads_disk
        self.reads.append(FileRead(session_id, path, line, limit, from_buffer))
        self._record("fs/read_text_file", self.reads[-1])
        if not Path(path).is_absolute():
            self.problems.append(f"fs/read_text_file with a relative path: {path!r}")
            raise RequestError.invalid_params({"field": "path"})
        if from_buffer:
            text = self.buffers[path]
        else:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                if not self.missing_as_empty:
                    raise RequestError.resource_not_found(Path(path).as_uri()) from None
                text = ""
        if line is not None or limit is not None:  # ACP: line is 1-based, limit in lines
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + limit])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append(FileWrite(session_id, path, content))
        self._record("fs/write_text_file", self.writes[-1])
        if not Path(path).is_absolute():
            self.problems.append(f"fs/write_text_file with a relative path: {path!r}")
            raise RequestError.invalid_params({"field": "path"})
        held = content + "\n" if self.adds_newline else content
        self.buffers[path] = held  # the editor's buffer
        if self.saves:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(held, encoding="utf-8")
        return WriteTextFileResponse()

    # The client never advertises a terminal: a call to these is a protocol violation.
    async def create_terminal(self, *args: Any, **kwargs: Any) -> CreateTerminalResponse:
        return self._no_terminal("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> TerminalOutputResponse:
        return self._no_terminal("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> ReleaseTerminalResponse:
        return self._no_terminal("terminal/release")

    async def wait_for_terminal_exit(
        self, *args: Any, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return self._no_terminal("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> KillTerminalResponse:
        return self._no_terminal("terminal/kill")

    def _no_terminal(self, method: str) -> Any:
        self.problems.append(f"{method} although the client has no terminal capability")
        self._record(method, None)
        raise RequestError.method_not_found(method)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._record(f"_{method}", params)
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._record(f"_{method}", params)

    def on_connect(self, conn: Any) -> None:
        self.conn = conn


def codecompanion_like() -> RecordingClient:
    """CodeCompanion.nvim 19.22: reads the disk (a missing file: empty content), and its
    write replaces the whole buffer, which adds a final newline, and saves it."""
    return RecordingClient(missing_as_empty=True, reads_disk=True, saves=True, adds_newline=True)


def agent_shell_like(workspace: Path) -> RecordingClient:
    """agent-shell 0.48.1 (acp.el 0.11.2): reads its buffers or the disk, writes and saves,
    answers a permission request "cancelled" before it sends session/cancel, and writes
    its transcript into the workspace during every turn."""
    return RecordingClient(
        saves=True,
        cancels_after_cancelled=True,
        transcript=workspace / ".agent-shell" / "transcripts" / "2026-12-07.md",
    )


@dataclass
class RunningAgent:
    """A started ``agent-lsp acp``: the connection, its process and the client."""

    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: RecordingClient
    stderr_path: Path

    def stderr(self) -> str:
        """What the agent logged so far (for assertion messages)."""
        return self.stderr_path.read_text(errors="replace")

    async def initialize(self, *, read: bool = False, write: bool = False) -> InitializeResponse:
        fs = FileSystemCapabilities(read_text_file=read, write_text_file=write)
        return await within(
            self.conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(fs=fs, terminal=False),
                client_info=Implementation(name="agent-lsp-tests", version="1"),
            )
        )

    async def new_session(
        self, cwd: Path, mcp_servers: list[Any] | None = None
    ) -> NewSessionResponse:
        """A session in ``cwd``, once its ``available_commands_update`` has arrived."""
        session = await within(self.conn.new_session(cwd=str(cwd), mcp_servers=mcp_servers or []))
        await self.client.wait_for(
            lambda: bool(self.client.commands(session.session_id)),
            what="available_commands_update after session/new",
        )
        return session

    async def request(self, method: str, params: Any) -> Any:
        """A raw JSON-RPC request, for what the SDK's typed methods cannot send (malformed
        params). Uses the SDK's connection so the answer is matched to it by id."""
        return await within(self.conn._conn.send_request(method, params))

    async def send_line(self, line: bytes) -> None:
        """Raw bytes on the agent's stdin (e.g. a frame that is not JSON)."""
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        await self.process.stdin.drain()


async def within(awaitable: Awaitable[T], seconds: float = REQUEST_TIMEOUT) -> T:
    """``awaitable``, failing the test instead of hanging it when the agent never answers."""
    return await asyncio.wait_for(awaitable, seconds)


@asynccontextmanager
async def acp_agent(
    env: Mapping[str, str],
    *,
    client: RecordingClient | None = None,
    options: Iterable[str] = (),
) -> AsyncIterator[RunningAgent]:
    """``agent-lsp [OPTIONS] acp`` for the length of an ``async with`` block.

    ``env`` is the whole environment (``server_env``). stderr goes to a file, not a pipe: a
    pipe nobody reads fills up and would block a chatty agent mid-answer.
    """
    client = client or RecordingClient()
    # The SDK skips a stdout line that is not JSON and only logs it: count that as the
    # agent's fault (its stdout must carry nothing but ACP frames).
    watcher = _NonFrameWatcher(client)
    logging.getLogger().addHandler(watcher)
    try:
        async with _spawn(env, client, options) as agent:
            yield agent
    finally:
        logging.getLogger().removeHandler(watcher)
    # Reached only when the block ended well: every frame of it is what ACP allows.
    invalid = schema_problems(client.traffic) if client.own_frames_checked else _agents_only(client)
    assert not invalid, "ACP frames the schema does not allow:\n" + "\n".join(invalid[:20])


def _agents_only(client: RecordingClient) -> list[str]:
    """The agent's frames' problems (the client's own sent on purpose as they are)."""
    return [p for p in schema_problems(client.traffic) if p.startswith("agent ")]


class _NonFrameWatcher(logging.Handler):
    def __init__(self, client: RecordingClient) -> None:
        super().__init__(logging.ERROR)
        self._client = client

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Error parsing JSON-RPC message"):
            self._client.problems.append("the agent wrote a stdout line that is not JSON")


@asynccontextmanager
async def _spawn(
    env: Mapping[str, str], client: RecordingClient, options: Iterable[str]
) -> AsyncIterator[RunningAgent]:
    with tempfile.NamedTemporaryFile(prefix="acp-stderr-", suffix=".log") as log:
        async with acp.spawn_agent_process(
            client,
            AGENT_COMMAND[0],
            *AGENT_COMMAND[1:],
            *options,
            "acp",
            env=dict(env),
            cwd=REPO,
            transport_kwargs={"stderr": log.fileno()},
            use_unstable_protocol=True,
        ) as (conn, process):
            # The SDK's Connection behind the typed one: the only place frames can be
            # watched in wire order.
            conn._conn.add_observer(client.observe)
            yield RunningAgent(conn, process, client, Path(log.name))
        # Leaving spawn_agent_process closed stdin (an ACP agent ends on EOF), waited, then
        # terminated and killed a lingering agent; make sure, so none outlives the test.
        if process.returncode is None:  # pragma: no cover - the SDK already killed it
            process.kill()
            await process.wait()
