"""Command line: ``agent-lsp`` serves the protocol; ``agent-lsp ask`` is a terminal client."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from .engine.engine import AgentEngine

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# tools.sandbox.MODES and server.agent.permissions.APPROVAL_MODES (a test keeps them equal),
# spelled out so that building the parser does not import asyncio.
SANDBOX_MODES = ("workspace-write", "read-only", "off")
APPROVAL_MODES = ("on-request", "always", "never")


def _add_folder_options(parser: argparse.ArgumentParser) -> None:
    """``--workspace`` and ``--session-dir``, as every terminal command takes them."""
    parser.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    parser.add_argument(
        "--session-dir",
        type=Path,
        dest="ask_session_dir",
        metavar="DIR",
        help="where conversations are kept (default: $XDG_STATE_HOME/agent-lsp/sessions)",
    )


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
        help="where conversations are kept (default: $XDG_STATE_HOME/agent-lsp/sessions)",
    )
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="keep conversations in memory only (they end with the process)",
    )
    parser.add_argument(
        "--no-warm-up",
        action="store_true",
        help=(
            "prepare nothing for asks at start (the model SDK, the model check, the checkpoint "
            "stores): the terminal's commands that ask nothing start their server so"
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "acp",
        help="serve the Agent Client Protocol over stdio (Zed, JetBrains, CodeCompanion, ...)",
        description=(
            "Run agent-lsp as an Agent Client Protocol agent over stdio: the editor starts "
            "it and gives each session's folder (cwd). The options before `acp` apply "
            "(--session-dir, --memory-only, --log-level)."
        ),
    )
    ask = commands.add_parser(
        "ask",
        help="ask the agent once from the terminal (starts the server as an LSP child process)",
        description=(
            "Start agent-lsp as a child process, drive it over stdio like an editor, print "
            "tool activity to stderr and the answer to stdout."
        ),
    )
    ask.add_argument("prompt", help="what to ask the agent")
    ask.add_argument("--session", help="continue a conversation by its id (printed after each ask)")
    _add_folder_options(ask)
    ask.add_argument("--model", help="model name (overrides MODEL)")
    ask.add_argument("--max-turns", type=int, help="model turns allowed for this ask")
    ask.add_argument(
        "--permission-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a permission request waits for your answer (default 300)",
    )
    ask.add_argument(
        "--approve",
        action="store_true",
        help=(
            "allow every permission request (an escalated command or, with --approval "
            "always, any command or edit) without asking; without a terminal they are "
            "rejected otherwise"
        ),
    )
    _add_sandbox_arguments(ask)
    from .terminal.config_command import add_parser as add_config_parser

    add_config_parser(commands)
    from .terminal.mcp_command import add_parser as add_mcp_parser

    add_mcp_parser(commands)
    _add_checkpoint_commands(commands)
    compact = commands.add_parser(
        "compact",
        help="compact a saved conversation now (old tool outputs elided, older turns summarized)",
        description=(
            "Compact a conversation kept by `agent-lsp ask --session`: old tool outputs are "
            "replaced by notes and older turns by the model's summary (agent/compact)."
        ),
    )
    compact.add_argument("--session", required=True, help="the session id (printed by ask)")
    _add_folder_options(compact)
    return parser


def _add_sandbox_arguments(ask: argparse.ArgumentParser) -> None:
    """The sandbox and approval settings, for this ask only (see docs/protocol.md)."""
    group = ask.add_argument_group("sandbox and permissions (for this ask)")
    group.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        help=(
            "how bash commands are confined: write only in the workspace and a private "
            "$TMPDIR (workspace-write, the default), nowhere but $TMPDIR (read-only), "
            "or not at all (off)"
        ),
    )
    group.add_argument(
        "--writable-root",
        action="append",
        metavar="DIR",
        help="a folder sandboxed commands may write too (repeatable)",
    )
    group.add_argument(
        "--network",
        action="store_true",
        help="let sandboxed commands open network connections (default: none)",
    )
    group.add_argument(
        "--allow-domain",
        action="append",
        metavar="HOST",
        help=(
            "a host sandboxed commands may reach through the sandbox's proxy, e.g. pypi.org "
            "or *.npmjs.org (repeatable; HTTP(S) and SOCKS5 only; the rest stays offline)"
        ),
    )
    for flag, what in (
        ("--max-processes", "processes a command may run at once (default 1024)"),
        ("--max-file-size-mb", "size of a file a command may write, in MB (default 8192)"),
        ("--max-memory-mb", "memory one process of a command may allocate, in MB (default 8192)"),
        ("--max-call-memory-mb", "memory all processes of a command may use, in MB (default 8192)"),
    ):
        group.add_argument(flag, type=int, metavar="N", help=what)
    group.add_argument(
        "--approval",
        choices=APPROVAL_MODES,
        help=(
            "when you are asked: for escalations only (on-request, the default), before "
            "every command and edit too (always), never (escalations are refused)"
        ),
    )
    group.add_argument(
        "--allow-command",
        action="append",
        metavar="PREFIX",
        help=(
            "a command prefix that runs in the sandbox without asking, word by word "
            "(repeatable; a command with shell syntax such as ; | > $ never matches, "
            "an escalation is always asked about)"
        ),
    )


def _add_checkpoint_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    helps = {
        "sessions": (
            "list the folder's conversations (ids for --session; interrupted ones marked); "
            "--delete ID deletes one"
        ),
        "checkpoints": "list a session's asks and the files each one changed",
        "diff": "show what one ask changed, as a unified diff",
        "rewind": "undo the asks from CHECKPOINT on (files the user changed since are kept)",
    }
    for name, text in helps.items():
        command = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        if name != "sessions":
            command.add_argument("--session", required=True, help="the session id (printed by ask)")
        if name not in ("checkpoints", "sessions"):
            command.add_argument("checkpoint", help="a checkpoint id (from agent-lsp checkpoints)")
        if name == "sessions":
            command.add_argument(
                "--delete",
                metavar="ID",
                help="delete this conversation for good: its files and checkpoints (asks first)",
            )
            command.add_argument(
                "--yes", action="store_true", help="with --delete: delete without asking"
            )
        if name == "rewind":
            command.add_argument(
                "--dry-run", action="store_true", help="say what would be restored; change nothing"
            )
        _add_folder_options(command)


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


def serve(args: argparse.Namespace, *, acp: bool = False) -> int:
    """The language server (default) or the ACP agent (``acp``) over stdio."""
    from .stdio import claim_stdout

    # First, before anything heavy is imported: from here on a stray print (ours, a
    # library's, a child's) lands on stderr, never in the protocol stream.
    protocol_out = claim_stdout()
    from .config.own_secrets import take_key_from_environment
    from .config.paths import default_session_dir

    # Before any command runs: the key leaves os.environ and /proc/self/environ, and
    # lives on in the engine's copy of the environment only.
    environ = take_key_from_environment()
    session_dir = None if args.memory_only else (args.session_dir or default_session_dir())

    def make_engine() -> AgentEngine:
        from .engine.engine import AgentEngine

        return AgentEngine(environ=environ, session_dir=session_dir, warm=not args.no_warm_up)

    if acp:
        from .acp.serve import serve_stdio as serve_acp

        # The engine is built once initialize is answered (its modules load meanwhile).
        code = serve_acp(make_engine, sys.stdin.buffer, protocol_out)
        sys.stderr.flush()
        os._exit(code)  # as below: worker threads (the warm-up's) must not hold the exit
    from .lsp.server import create_server, serve_stdio

    # initialize is answered before the engine is built (its modules load meanwhile).
    server = create_server(make_engine, environ)
    if args.tcp:
        server.start_tcp(args.host, args.port)
        return 0
    # SIGTERM/SIGHUP (an editor stopping us, a closed terminal) and stdin EOF all
    # cancel every ask, so tools kill their process groups before the process exits.
    profile_to = os.environ.get("AGENT_LSP_PROFILE")
    if profile_to:  # for developers: a cProfile of the event loop's thread, written at exit
        import cProfile

        profiler = cProfile.Profile()
        code = profiler.runcall(serve_stdio, server, sys.stdin.buffer, protocol_out)
        profiler.dump_stats(profile_to)
    else:
        code = serve_stdio(server, sys.stdin.buffer, protocol_out)
    sys.stderr.flush()
    # The stdin reader thread may still sit in a blocking read; the interpreter would
    # wait for it at exit. Asks were cancelled and tool processes killed by now.
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    # The collector is off while the server starts: importing pygls, lsprotocol and the
    # engine allocates hundreds of thousands of objects that live as long as the process,
    # and its passes over them (a full one among them) cost ~50 ms before initialize's
    # answer and free nothing (bench/results/startup.md). The LSP face turns it back on
    # once its engine is loaded (server.lsp.server); every other command at once.
    gc.disable()
    try:
        args = build_parser().parse_args(argv)
    except BaseException:  # --help, --version, a usage error
        gc.enable()
        raise
    if args.command is not None or args.tcp:
        gc.enable()
    configure_logging(args.log_level)
    if args.command == "ask":
        from .terminal.client import run_ask

        return run_ask(args)
    if args.command in ("sessions", "checkpoints", "diff", "rewind"):
        from .terminal.checkpoints import run_checkpoint_command

        return run_checkpoint_command(args)
    if args.command == "config":
        from .terminal.config_command import run_config

        return run_config(args)
    if args.command == "mcp":
        from .terminal.mcp_command import run_mcp

        return run_mcp(args)
    if args.command == "acp":
        return serve(args, acp=True)
    if args.command == "compact":
        from .terminal.client import run_compact

        return run_compact(args)
    return serve(args)
