"""Command line: ``agent-lsp`` serves the protocol; ``agent-lsp ask`` is a terminal client."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from . import __version__

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-lsp",
        description=(
            "A coding agent as a language server: serves agent/ask and agent/listTools "
            "over JSON-RPC (stdio by default)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"agent-lsp {__version__}")
    parser.add_argument("--stdio", action="store_true", help="serve over stdio (the default)")
    parser.add_argument("--tcp", action="store_true", help="serve over TCP (for debugging)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=os.environ.get("AGENT_LSP_LOG_LEVEL", "WARNING").upper(),
        help="stderr log level (default WARNING; INFO and below log message bodies)",
    )
    parser.add_argument(
        "--session-dir",
        type=Path,
        help="keep conversations as files in DIR so they survive the process (off by default)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    ask = commands.add_parser(
        "ask",
        help="ask the agent once from the terminal (starts the server as an LSP child process)",
        description=(
            "Start agent-lsp as a child process, drive it over stdio like an editor, print "
            "tool activity to stderr and the answer to stdout."
        ),
    )
    ask.add_argument("prompt", help="what to ask the agent")
    ask.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    ask.add_argument("--session", help="continue a conversation by its id (printed after each ask)")
    ask.add_argument(
        "--session-dir",
        type=Path,
        dest="ask_session_dir",
        help="where conversations are kept (default: $XDG_STATE_HOME/agent-lsp/sessions)",
    )
    ask.add_argument("--model", help="model name (overrides MODEL)")
    ask.add_argument("--max-turns", type=int, help="model turns allowed for this ask")
    return parser


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_drop_reported_request_errors)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _drop_reported_request_errors(record: logging.LogRecord) -> bool:
    """pygls logs a traceback for every error response; ours are expected outcomes."""
    if record.name.startswith("pygls") and record.exc_info and record.exc_info[1] is not None:
        from pygls.exceptions import JsonRpcException

        return not isinstance(record.exc_info[1], JsonRpcException)
    return True


def serve(args: argparse.Namespace) -> int:
    from .engine import AgentEngine
    from .lsp_server import create_server
    from .stdio import claim_stdout

    server = create_server(AgentEngine(session_dir=args.session_dir))
    if args.tcp:
        server.start_tcp(args.host, args.port)
        return 0
    protocol_out = claim_stdout()
    # SIGTERM/SIGHUP (an editor stopping us, a closed terminal) end the loop the same
    # way as stdin EOF: asyncio.run cancels every ask, so tools kill their process
    # groups before the process exits.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    server.start_io(sys.stdin.buffer, protocol_out)
    code = server.exit_code
    sys.stderr.flush()
    # pygls's reader thread may still sit in a blocking stdin read; the interpreter
    # would wait for it at exit. Asks were cancelled and tool processes killed by now.
    os._exit(code)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    if args.command == "ask":
        from .terminal_client import run_ask

        return run_ask(args)
    return serve(args)
