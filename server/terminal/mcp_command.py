"""``agent-lsp mcp``: list, approve, add and remove MCP servers (tool sources).

``add NAME [options] -- COMMAND ARGS...`` (a stdio server) or ``add NAME --url URL`` (Streamable
HTTP) writes a ``[mcp_servers.NAME]`` table and keeps every other line of the file;
``remove NAME`` takes it out. ``list`` starts the server for the folder, as the editor would,
and shows each MCP server's state, tools and last error (``mcp_live``; with ``--no-start``, or
when no server can be asked, the definitions as written, nothing started); ``approve NAME``
asks the user on the terminal whether the folder's own server may start. Names, commands and
URLs are data from a file (a workspace's, possibly a cloned repository's): everything printed
is escaped. Problems are one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from ..config.user_config import UserConfigError, config_path, display_path

# What runs the actions is imported by them, not here: ``agent-lsp``'s parser (built by
# every start of the server) imports this module for add_parser.

# How long ``list`` and ``approve`` wait for servers still starting (the default
# ``startup_timeout``: a server not ready by then has failed); they stop waiting as soon as none is.
DEFAULT_WAIT_S = 30.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="list, add or remove MCP servers (tool sources) in the user configuration file",
        description=(
            "The MCP servers whose tools the agent may use: [mcp_servers.NAME] tables of the "
            "user configuration file ($XDG_CONFIG_HOME/agent-lsp/config.toml), the editor's "
            "agentLsp.mcpServers setting, and a folder's .vscode/mcp.json and .mcp.json "
            "(started only once you approve them)."
        ),
    )
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION")
    listing = actions.add_parser(
        "list",
        help="the servers' states, tools and last errors (starts them for the folder, then stops)",
        description=(
            "Start agent-lsp for the folder as an editor would, wait until no MCP server is "
            "starting, show each one's state, tools and last error, and stop them all again."
        ),
    )
    listing.add_argument("--json", action="store_true", help="as JSON")
    _add_folder_option(listing, "whose .vscode/mcp.json and .mcp.json are listed too")
    listing.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help=f"how long to wait for servers still starting (default {DEFAULT_WAIT_S:g})",
    )
    listing.add_argument(
        "--no-start",
        action="store_true",
        help="start nothing: the definitions as written, with their warnings",
    )
    approve = actions.add_parser(
        "approve",
        help="let the folder's own server NAME (.vscode/mcp.json, .mcp.json) start: asks you",
        description=(
            "Show the definition of a server of the folder's own files and ask whether it may "
            "start (on this terminal). A yes is kept for that exact definition and folder: the "
            "editor and agent-lsp ask start it from then on, until the definition changes."
        ),
    )
    approve.add_argument("name")
    _add_folder_option(approve, "whose server it is")
    approve.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT_S,
        metavar="SECONDS",
        help=f"how long to wait for it to start once approved (default {DEFAULT_WAIT_S:g})",
    )
    add = actions.add_parser(
        "add",
        help="add a server: NAME -- COMMAND ARGS... (stdio) or NAME --url URL (http)",
        usage=(
            "agent-lsp mcp add NAME [--env K=V] [--trust] [--disabled] [--replace] "
            "-- COMMAND [ARGS ...]\n"
            "       agent-lsp mcp add NAME --url URL [--header K=V] [--trust] [--disabled] "
            "[--replace]"
        ),
        description=(
            "Write [mcp_servers.NAME] to the user configuration file. Options come before the "
            "command: everything from COMMAND on is the server's command line. ${VAR} in "
            "arguments, the URL, --env and --header values is read from the environment when "
            "the server starts (quote it so your shell leaves it); $$ is a literal $."
        ),
    )
    add.add_argument("name", help="the server's name: letters, digits, '-' and '_'")
    _add_add_options(add)
    add.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    remove = actions.add_parser("remove", help="remove a server from the user configuration file")
    remove.add_argument("name")


def _add_folder_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--workspace", default=".", help=f"the folder {what} (default: .)")


def _add_add_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``add``, both before NAME and between NAME and the command."""
    parser.add_argument("--url", help="a Streamable HTTP server's endpoint (instead of a command)")
    parser.add_argument(
        "--header", action="append", metavar="K=V", help="an HTTP request header (repeatable)"
    )
    parser.add_argument(
        "--env", action="append", metavar="K=V", help="a variable for the command (repeatable)"
    )
    parser.add_argument(
        "--trust", action="store_true", help="its tools run without asking (you vouch for it)"
    )
    parser.add_argument("--disabled", action="store_true", help="defined but not started")
    parser.add_argument("--replace", action="store_true", help="replace a server of that name")


def _rest_parser() -> argparse.ArgumentParser:
    # argparse gives everything after NAME to one REMAINDER: options and command are told
    # apart here, the command's own options (npx -y) never taken for ours.
    parser = argparse.ArgumentParser(prog="agent-lsp mcp add NAME", add_help=False)
    _add_add_options(parser)
    parser.add_argument("server_command", nargs=argparse.REMAINDER)
    return parser


def run_mcp(
    args: argparse.Namespace,
    *,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    env = os.environ if environ is None else environ
    out, err = out or sys.stdout, err or sys.stderr
    action = args.mcp_command or "list"
    try:
        if action == "list":
            return _list(env, args, out, err)
        if action == "approve":
            return _approve(args, out, err)
        if action == "add":
            return _add(env, _rest_parser().parse_args(args.words, namespace=args), out, err)
        if action == "remove":
            from ..mcp.edit import remove_server

            written = remove_server(_require_path(env), args.name)
            print(_line(f"Removed MCP server {args.name} from {display_path(written)}."), file=out)
            return 0
    except UserConfigError as exc:
        print(_line(f"agent-lsp mcp {action}: {exc}"), file=err)
        return 1
    except KeyboardInterrupt:
        print("agent-lsp: interrupted", file=err)
        return 130
    raise AssertionError(f"unhandled mcp action {action!r}")


# --- actions -------------------------------------------------------------------------


def _add(env: Mapping[str, str], args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..mcp.config import parse_user_table
    from ..mcp.edit import add_server

    command = list(args.server_command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    table: dict[str, Any] = {}
    if args.url is not None and command:
        return _fail(err, "give either --url or a command after --, not both")
    if args.url is not None:
        if args.env:
            return _fail(err, "--env is for a command's environment; an http server takes --header")
        table["url"] = args.url
        if args.header:
            table["headers"] = _pairs("--header", args.header)
    elif command:
        if args.header:
            return _fail(err, "--header is for an http server (--url)")
        table["command"] = command[0]
        if command[1:]:
            table["args"] = command[1:]
        if args.env:
            table["env"] = _pairs("--env", args.env)
    else:
        return _fail(err, "give the server's command after --, or --url URL")
    if args.disabled:
        table["enabled"] = False
    if args.trust:
        table["trust"] = True

    # Checked as the server will read it, every variable taken as set: only what is wrong in
    # the definition itself stops it. An unset variable is a note (it may be set later).
    checked = parse_user_table({args.name: table}, "the new definition", _EveryVariable())
    problems = [*checked.warnings, *(w for entry in checked.entries for w in entry.warnings)]
    if problems or not checked.specs():
        return _fail(err, "; ".join(problems) or "not a valid definition")
    path = _require_path(env)
    written = add_server(path, args.name, table, replace=args.replace)
    spec = checked.specs()[0]
    what = f"{spec.transport}: {checked.entries[0].target}"
    print(_line(f"Added MCP server {args.name} ({what}) to {display_path(written)}."), file=out)
    for entry in parse_user_table({args.name: table}, "", env).entries:
        for warning in entry.warnings:
            print(_line(f"Note: {warning}"), file=out)
    return 0


def _list(env: Mapping[str, str], args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .mcp_listing import approve_option, print_live, print_offline

    # `mcp` with no action is `list` of the current folder, with its defaults.
    folder = Path(getattr(args, "workspace", ".")).expanduser().resolve()
    as_json = getattr(args, "json", False)
    if not getattr(args, "no_start", False):
        if not folder.is_dir():
            raise UserConfigError(f"the workspace is not a directory: {display_path(folder)}")
        # Imported here: the client's LSP stack (pygls, lsprotocol) took 3.6 s to import on a
        # loaded two-core machine (this module: 0.1 s); the parser, the other actions and
        # --no-start need none of it.
        from .mcp_live import list_servers

        wait = getattr(args, "wait", DEFAULT_WAIT_S)
        servers = list_servers(folder, wait, err)
        if servers is not None:
            hint = approve_option(folder)
            print_live(
                servers, env, folder, waited=wait, approve_hint=hint, as_json=as_json, out=out
            )
            return 0
    print_offline(env, folder, as_json, out)
    return 0


def _approve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    folder = Path(args.workspace).expanduser().resolve()
    if not folder.is_dir():
        raise UserConfigError(f"the workspace is not a directory: {display_path(folder)}")
    from .mcp_live import approve  # imported here: see _list

    return approve(folder, args.name, args.wait, out, err)


# --- helpers -------------------------------------------------------------------------


class _EveryVariable(Mapping[str, str]):
    """An environment in which every variable is set: to check a definition's shape only."""

    def __getitem__(self, key: str) -> str:
        return "set"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _pairs(option: str, values: list[str]) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise UserConfigError(f"{option} takes KEY=VALUE, got {value!r}")
        pairs[key.strip()] = text
    return pairs


def _require_path(env: Mapping[str, str]) -> Path:
    path = config_path(env)
    if path is None:
        raise UserConfigError("neither XDG_CONFIG_HOME nor HOME is set: no place for the file")
    return path


def _fail(err: TextIO, message: str) -> int:
    print(_line(f"agent-lsp mcp add: {message}"), file=err)
    return 1


def _line(text: str) -> str:
    from tooling.display import escape_control

    return escape_control(text)
