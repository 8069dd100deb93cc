"""``agent-lsp ask`` and ``agent-lsp compact``: a real LSP client for the terminal.

It starts the server as a child process and speaks to it over stdio exactly as an
editor does, so the terminal exercises the same protocol path as VS Code.
Tool activity and compactions go to stderr as they happen; the answer goes to
stdout as the model writes it (``agent/answerDelta``), and reasoning, dimmed on a
terminal, to stderr. Everything from the server or the model is escaped before it is
printed (``tooling.display``): no text of theirs can steer the user's terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading
import uuid
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TextIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient

from tooling.display import escape_control

from .. import __version__
from ..config.own_secrets import hide_from_proc_environ
from ..config.paths import default_session_dir
from ..protocol import (
    AGENT_ANSWER_DELTA,
    AGENT_ASK,
    AGENT_ASK_PROGRESS,
    AGENT_COMPACT,
    AGENT_COMPACTION,
    AGENT_INSTRUCTIONS,
    AGENT_REQUEST_PERMISSION,
    AGENT_TOOL_ACTIVITY,
)
from .mcp_states import ask_notes, settled
from .output import (
    ProgressLines,
    StreamedOutput,
    format_activity,
    format_compaction,
    problem_lines,
)
from .permissions import TerminalPermissions, capabilities

__all__ = ["format_activity", "format_compaction", "run_ask", "run_compact"]

# The server runs in isolated mode: ``-m`` would otherwise put the current folder
# first on sys.path, and a repository that holds a ``server/`` (or ``tools/``)
# package would run its own code as agent-lsp. ``-I`` also ignores PYTHON* variables.
SERVER_ARGV = (sys.executable, "-I", "-m", "server", "--stdio")
# After Ctrl-C, how long a withdrawn request's answer (-32800 for an ask) is awaited.
CANCEL_WAIT_S = 10.0
REQUEST_CANCELLED = -32800


def run_ask(args: argparse.Namespace) -> int:
    # A key exported for this command is passed on to the server, but a command the agent
    # runs must not find it in this process's /proc/PID/environ.
    hide_from_proc_environ()
    workspace = workspace_of(args)
    if workspace is None:
        return 2
    options: dict[str, Any] = {}
    if args.model:
        options["model"] = args.model
    if args.max_turns:
        options["maxTurns"] = args.max_turns
    if args.permission_timeout:
        options["permissionTimeout"] = args.permission_timeout
    try:
        options |= sandbox_settings(args)
    except ValueError as exc:
        print(f"agent-lsp: {exc}", file=sys.stderr)
        return 2
    if hint := builtin_hint(args.prompt):
        print(f"agent-lsp: {hint}", file=sys.stderr)
        return 2
    return _run(
        ask_once(
            args.prompt,
            workspace,
            session_id=args.session,
            settings=options,
            session_dir=args.ask_session_dir or default_session_dir(),
            approve_all=args.approve,
        )
    )


# The built-in commands an editor runs itself (agent/listCommands lists them), and the
# terminal's way to do each; a prompt file's /NAME is expanded by the server.
BUILTINS = {
    "compact": "agent-lsp compact --session ID",
    "new": "agent-lsp ask without --session",
    "checkpoints": "agent-lsp checkpoints --session ID",
    "undo": "agent-lsp rewind --session ID CHECKPOINT",
}


def builtin_hint(prompt: str) -> str | None:
    """What to run instead, when ``prompt`` is one of the built-in commands."""
    name = prompt.strip()[1:].split(" ", 1)[0] if prompt.strip().startswith("/") else ""
    if name not in BUILTINS:
        return None
    return f"/{name} is a command, not a prompt; from the terminal: {BUILTINS[name]}"


def sandbox_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings ``--sandbox``, ``--writable-root``, ``--network``, ``--allow-domain``,
    the ``--max-*`` limits, ``--approval`` and ``--allow-command`` give (only those passed:
    the server's defaults stand otherwise).

    A writable root is taken relative to the current folder, as a shell user means it.
    """
    settings: dict[str, Any] = {}
    if args.sandbox:
        settings["sandbox"] = args.sandbox
    roots = []
    for entry in args.writable_root or ():
        root = Path(entry).expanduser().resolve()
        if not root.is_dir():
            raise ValueError(f"--writable-root is not a directory: {root}")
        roots.append(str(root))
    if roots:
        settings["writableRoots"] = roots
    if args.network:
        settings["network"] = True
    if args.allow_domain:
        settings["allowedDomains"] = args.allow_domain
    for flag, key in (
        ("max_processes", "maxProcesses"),
        ("max_file_size_mb", "maxFileSizeMB"),
        ("max_memory_mb", "maxMemoryMB"),
        ("max_call_memory_mb", "maxCallMemoryMB"),
    ):
        value = getattr(args, flag)
        if value is not None:
            if value <= 0:
                raise ValueError(f"--{flag.replace('_', '-')} must be a positive number")
            settings[key] = value
    if args.approval:
        settings["approval"] = args.approval
    if args.allow_command:
        settings["allowedCommands"] = args.allow_command
    return settings


def workspace_of(args: argparse.Namespace) -> Path | None:
    """``--workspace`` resolved, or None (said on stderr) when it is not a folder."""
    workspace = Path(args.workspace).expanduser().resolve()
    if not workspace.is_dir():
        print(f"agent-lsp: workspace is not a directory: {workspace}", file=sys.stderr)
        return None
    return workspace


def run_compact(args: argparse.Namespace) -> int:
    workspace = workspace_of(args)
    if workspace is None:
        return 2
    session_dir = args.ask_session_dir or default_session_dir()
    return _run(compact_once(args.session, workspace, session_dir=session_dir))


def _run(work: Coroutine[Any, Any, int]) -> int:
    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        print("agent-lsp: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line for the user, never a traceback
        print(f"agent-lsp: {escape_control(_describe_failure(exc))}", file=sys.stderr)
        return 1


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, JsonRpcException):
        return exc.message or str(exc)
    if isinstance(exc, OSError) and exc.filename:
        return f"could not start the server ({exc.strerror or exc}: {exc.filename})"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"the server stopped unexpectedly ({text})"


async def ask_once(
    prompt: str,
    workspace: Path,
    *,
    session_id: str | None = None,
    settings: dict[str, Any] | None = None,
    session_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    approve_all: bool = False,
) -> int:
    shown = StreamedOutput(out or sys.stdout, err or sys.stderr)
    async with connected(
        workspace, settings=settings, session_dir=session_dir, shown=shown, approve_all=approve_all
    ) as request:
        # A server per ask: its MCP servers are starting now; the ask waits for them (on
        # the server, which says so as progress). The listing waits for the definitions'
        # read, so a folder's server awaiting approval is named here, with how to approve it.
        for note in ask_notes(await settled(request, 0), workspace):
            shown.line(note)
        params: dict[str, Any] = {"prompt": prompt}
        if session_id:
            params["sessionId"] = session_id
        if line := await instructions_line(request, session_id):
            shown.line(line)
        try:
            result = await request(AGENT_ASK, params)
        except JsonRpcException as exc:
            if exc.code == REQUEST_CANCELLED:  # Ctrl-C: the server confirmed the cancel
                shown.line("agent-lsp: cancelled")
                return 130
            shown.line(f"agent-lsp: {exc.message}")
            return 1
        shown.finish(result["answer"], result.get("turns", 0))
        note = result.get("stopNote")
        if isinstance(note, str) and note:
            shown.line(f"agent-lsp: {note}")
        usage = result.get("usage") or {}
        if usage.get("contextWindow"):
            used = f"{usage.get('contextTokens', 0):,} of {usage['contextWindow']:,} tokens"
            shown.line(f"context: {used}")
        if session_dir is not None:
            shown.line(f"session: {result['sessionId']} (continue with --session)")
        if session_dir is not None and result.get("checkpointId"):
            undo = f"agent-lsp rewind --session {result['sessionId']} {result['checkpointId']}"
            shown.line(f"checkpoint: {result['checkpointId']} (undo with: {undo})")
        return 0


async def instructions_line(request: Any, session_id: str | None) -> str | None:
    """``instructions: AGENTS.md, …`` for the files this ask is given (None: none)."""
    params = {"sessionId": session_id} if session_id else {}
    try:
        found = await request(AGENT_INSTRUCTIONS, params)
    except JsonRpcException:
        return None  # an unknown session: the ask itself says so
    names = [escape_control(one["name"]) for one in found.get("instructions", [])]
    skills = [escape_control(one["name"]) for one in found.get("skills", [])]
    parts = [f"instructions: {', '.join(names)}"] if names else []
    if skills:
        parts.append(f"skills: {', '.join(skills)}")
    return "; ".join(parts) or None


async def compact_once(
    session_id: str,
    workspace: Path,
    *,
    session_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``agent-lsp compact --session ID``: compact a saved conversation now."""
    out = out or sys.stdout
    err = err or sys.stderr
    async with connected(
        workspace, session_dir=session_dir, shown=StreamedOutput(out, err)
    ) as request:
        try:
            result = await request(AGENT_COMPACT, {"sessionId": session_id})
        except JsonRpcException as exc:
            print(f"agent-lsp: {escape_control(exc.message)}", file=err, flush=True)
            return 1
        summary = escape_control(str(result.get("summary") or ""))
        print(f"session {session_id} {summary}", file=out, flush=True)
        return 0


Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


@contextlib.asynccontextmanager
async def connected(
    workspace: Path,
    *,
    settings: dict[str, Any] | None = None,
    session_dir: Path | None = None,
    shown: StreamedOutput,
    approve_all: bool = False,
    asks: bool = True,
) -> AsyncIterator[Request]:
    """The server as a child process, initialized for ``workspace``, shut down after;
    yields a function sending one request (which fails at once if the server dies).
    What the server reports goes to ``shown``; permission requests are answered on the
    terminal (all allowed with ``approve_all``). Without ``asks`` (a command that asks
    nothing) the server prepares nothing for asks (``--no-warm-up``)."""
    err = shown.err
    client = LanguageClient("agent-lsp-terminal", __version__, converter_factory=get_converter)
    permissions = TerminalPermissions(sys.stdin, err, approve_all=approve_all)
    progress_lines = ProgressLines()

    @client.feature(AGENT_REQUEST_PERMISSION)
    async def on_permission(params: Any) -> dict[str, Any]:
        shown.end_line()  # the question starts on a line of its own
        return await permissions.answer(params)

    @client.feature(AGENT_ASK_PROGRESS)
    def on_progress(params: Any) -> None:
        # Most of it the trace lines say; without a handler pygls warns on stderr for each.
        line = progress_lines.line(params) if isinstance(params, dict) else None
        if line is not None:
            shown.line(line)

    started: set[str] = set()  # the calls whose start line is printed

    @client.feature(AGENT_TOOL_ACTIVITY)
    def on_activity(params: Any) -> None:
        # A call allowed after a permission wait is "started" again (an editor's row goes
        # from waiting to running); the terminal printed its start line already.
        if params.get("status") == "started":
            if params.get("callId") in started:
                return
            started.add(str(params.get("callId")))
        shown.line(format_activity(params))
        for line in problem_lines(params):
            shown.line(line)

    @client.feature(AGENT_COMPACTION)
    def on_compaction(params: Any) -> None:
        shown.line(format_compaction(params))

    @client.feature(AGENT_ANSWER_DELTA)
    def on_delta(params: Any) -> None:
        shown.delta(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_message(params: types.ShowMessageParams) -> None:
        shown.line(_prefixed(params.message))

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        # Errors of the ask itself arrive as its error response; print those once.
        if params.type == types.MessageType.Warning:
            shown.line(_prefixed(params.message))

    command = [*SERVER_ARGV]
    if not asks:
        command.append("--no-warm-up")
    if session_dir is not None:
        command += ["--session-dir", str(session_dir.resolve())]
    server, connection = await _start_server(client, command)
    forward = asyncio.create_task(_forward_stderr(server, err))
    uri = workspace.as_uri()
    try:
        await _request(
            connection,
            server,
            client.initialize_async(
                types.InitializeParams(
                    process_id=os.getpid(),
                    capabilities=types.ClientCapabilities(experimental=capabilities()),
                    root_uri=uri,
                    workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
                    initialization_options=settings or {},
                )
            ),
        )
        client.initialized(types.InitializedParams())

        async def request(method: str, params: dict[str, Any]) -> Any:
            msg_id = uuid.uuid4().hex
            pending = client.protocol.send_request_async(method, params, msg_id=msg_id)
            try:
                return await _request(connection, server, pending)
            except asyncio.CancelledError:
                # Ctrl-C: withdraw the request (an ask stops, its open permission prompt
                # is withdrawn) and take the server's answer, -32800, if it comes soon.
                client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
                try:
                    async with asyncio.timeout(CANCEL_WAIT_S):
                        return await _request(connection, server, pending)
                except TimeoutError:
                    raise asyncio.CancelledError from None

        yield request
    finally:
        try:
            await asyncio.wait_for(_request(connection, server, client.shutdown_async(None)), 10)
            client.exit(None)
            await asyncio.wait_for(server.wait(), 10)
        except (TimeoutError, JsonRpcException, OSError, RuntimeError):
            if server.returncode is None:
                server.kill()
        await server.wait()
        await asyncio.wait({connection}, timeout=5)
        forward.cancel()


async def _start_server(
    client: LanguageClient, command: list[str]
) -> tuple[asyncio.subprocess.Process, asyncio.Task[None]]:
    """Spawn the server and connect ``client`` to its stdio (what pygls's ``start_io``
    does, keeping the process so its stderr is forwarded and its exit is noticed)."""
    # Its own session: the terminal's Ctrl-C (SIGINT to the foreground process group)
    # reaches this client only, which withdraws the ask; the server ends with our stdin.
    server = await asyncio.create_subprocess_exec(
        *command, stdin=PIPE, stdout=PIPE, stderr=PIPE, start_new_session=True
    )
    assert server.stdin is not None and server.stdout is not None
    client.protocol.set_writer(server.stdin)
    stop = threading.Event()

    async def connect() -> None:
        try:
            await run_async(stop_event=stop, reader=server.stdout, protocol=client.protocol)
        finally:
            stop.set()

    return server, asyncio.create_task(connect())


async def _request(
    connection: asyncio.Task[None], server: asyncio.subprocess.Process, pending: Any
) -> Any:
    """Await a request's answer, or fail at once if the server goes away first."""
    answer = asyncio.ensure_future(pending)
    await asyncio.wait({answer, connection}, return_when=asyncio.FIRST_COMPLETED)
    if answer.done():
        return answer.result()
    answer.cancel()
    code = await server.wait()
    raise ConnectionError(f"exited with code {code} before answering")


def _prefixed(message: str) -> str:
    # The server's own messages already start with "agent-lsp: ".
    return message if message.startswith("agent-lsp: ") else f"agent-lsp: {message}"


async def _forward_stderr(server: asyncio.subprocess.Process, err: TextIO) -> None:
    # The server's stderr is a pipe: drain it so a chatty server can never block. A
    # process the agent started may have inherited it: escaped, as the model's text.
    if server.stderr is None:
        return
    while line := await server.stderr.readline():
        err.write(escape_control(line.decode(errors="replace"), keep_newlines=True))
        err.flush()
