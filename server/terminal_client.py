"""``agent-lsp ask``: a real LSP client for the terminal.

It starts the server as a child process and speaks to it over stdio exactly as an
editor does, so the terminal exercises the same protocol path as VS Code.
Tool activity goes to stderr as it happens; the answer goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from . import __version__
from .activity import summarize_arguments
from .lsp_server import AGENT_ASK, AGENT_TOOL_ACTIVITY


def format_activity(params: dict[str, Any]) -> str:
    """One trace line, e.g. ``12:00:01 ✓ read_file src/app.py (3 ms)``."""
    stamp = time.strftime("%H:%M:%S")
    name = params.get("name", "?")
    summary = summarize_arguments(name, params.get("arguments") or "")
    status = params.get("status")
    if status == "started":
        return f"{stamp} → {name} {summary}"
    mark = "✓" if status == "completed" else "✗"
    line = f"{stamp} {mark} {name} {summary} ({params.get('durationMs', 0):.0f} ms)"
    if status == "failed":
        first = (params.get("output") or "").strip().splitlines()
        if first:
            line += f": {first[0][:200]}"
    return line


def run_ask(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).expanduser().resolve()
    if not workspace.is_dir():
        print(f"agent-lsp: workspace is not a directory: {workspace}", file=sys.stderr)
        return 2
    options: dict[str, Any] = {}
    if args.model:
        options["model"] = args.model
    if args.max_turns:
        options["maxTurns"] = args.max_turns
    from .session_files import default_session_dir

    return asyncio.run(
        ask_once(
            args.prompt,
            workspace,
            session_id=args.session,
            settings=options,
            session_dir=args.ask_session_dir or default_session_dir(),
        )
    )


async def ask_once(
    prompt: str,
    workspace: Path,
    *,
    session_id: str | None = None,
    settings: dict[str, Any] | None = None,
    session_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    client = LanguageClient("agent-lsp-terminal", __version__, converter_factory=get_converter)

    @client.feature(AGENT_TOOL_ACTIVITY)
    def on_activity(params: Any) -> None:
        print(format_activity(params), file=err, flush=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def on_message(params: types.ShowMessageParams) -> None:
        print(f"agent-lsp: {params.message}", file=err, flush=True)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def on_log(params: types.LogMessageParams) -> None:
        # Errors of the ask itself arrive as its error response; print those once.
        if params.type == types.MessageType.Warning:
            print(f"agent-lsp: {params.message}", file=err, flush=True)

    command = ["-m", "server", "--stdio"]
    if session_dir is not None:
        command += ["--session-dir", str(session_dir)]
    await client.start_io(sys.executable, *command)
    server = client._server
    assert server is not None
    forward = asyncio.create_task(_forward_stderr(server, err))
    uri = workspace.as_uri()
    try:
        await client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                capabilities=types.ClientCapabilities(),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
                initialization_options=settings or {},
            )
        )
        client.initialized(types.InitializedParams())
        params: dict[str, Any] = {"prompt": prompt}
        if session_id:
            params["sessionId"] = session_id
        try:
            result = await client.protocol.send_request_async(AGENT_ASK, params)
        except JsonRpcException as exc:
            print(f"agent-lsp: {exc.message}", file=err, flush=True)
            return 1
        print(result["answer"], file=out, flush=True)
        if result.get("stopReason") == "max_turns":
            print("agent-lsp: stopped at the turn limit (maxTurns)", file=err, flush=True)
        if session_dir is not None:
            print(f"session: {result['sessionId']} (continue with --session)", file=err, flush=True)
        return 0
    finally:
        try:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
            await asyncio.wait_for(server.wait(), 10)
        except (TimeoutError, JsonRpcException, ConnectionError):
            server.kill()
        await client.stop()
        forward.cancel()


async def _forward_stderr(server: asyncio.subprocess.Process, err: TextIO) -> None:
    # The server's stderr is a pipe: drain it so a chatty server can never block.
    if server.stderr is None:
        return
    while line := await server.stderr.readline():
        err.write(line.decode(errors="replace"))
        err.flush()
