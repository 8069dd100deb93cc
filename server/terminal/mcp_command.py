"""``agent-lsp mcp``: list, add and remove the MCP servers of the user configuration file.

``add NAME [options] -- COMMAND ARGS...`` (a stdio server) or ``add NAME --url URL`` (Streamable
HTTP) writes a ``[mcp_servers.NAME]`` table and keeps every other line of the file;
``remove NAME`` takes it out; ``list`` shows the servers of the user file and of the current
folder's ``.vscode/mcp.json`` / ``.mcp.json`` with their warnings. Nothing is started here.
Names, commands and URLs are data from a file (a workspace's, possibly a cloned repository's):
everything printed is escaped. Problems are one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from tooling.display import escape_control

from ..config.mcp_approvals import McpApprovals
from ..config.mcp_config import (
    ORIGIN_WORKSPACE,
    TABLE,
    WORKSPACE_FILES,
    McpDefinitions,
    McpServerEntry,
    load_definitions,
    parse_user_table,
)
from ..config.mcp_edit import add_server, remove_server
from ..config.user_config import UserConfigError, config_path, display_path

# TODO(issue 22, engine integration): once the engine runs servers, `list` can ask a server for
# agent/mcpServers and show each one's state, tools and last error instead of this footer.
STATE_FOOTER = (
    "Nothing was started: each server's state, tools and last error are shown by the editor "
    "(its MCP view, agent/mcpServers) once an ask uses the folder."
)


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
    listing = actions.add_parser("list", help="the configured servers and their warnings")
    listing.add_argument("--json", action="store_true", help="as JSON")
    listing.add_argument(
        "--workspace",
        default=".",
        help="the folder whose .vscode/mcp.json and .mcp.json are listed too (default: .)",
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
            workspace = Path(getattr(args, "workspace", "."))
            return _list(env, workspace, getattr(args, "json", False), out)
        if action == "add":
            return _add(env, _rest_parser().parse_args(args.words, namespace=args), out, err)
        if action == "remove":
            written = remove_server(_require_path(env), args.name)
            print(_line(f"Removed MCP server {args.name} from {display_path(written)}."), file=out)
            return 0
    except UserConfigError as exc:
        print(_line(f"agent-lsp mcp {action}: {exc}"), file=err)
        return 1
    raise AssertionError(f"unhandled mcp action {action!r}")


# --- actions -------------------------------------------------------------------------


def _add(env: Mapping[str, str], args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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


def _list(env: Mapping[str, str], workspace: Path, as_json: bool, out: TextIO) -> int:
    path = config_path(env)
    folder = workspace.resolve()
    definitions = load_definitions(user_file=path, editor_setting=None, folder=folder, environ=env)
    approvals = McpApprovals.in_state_dir(env)
    approved = approvals.approved(folder) if _has_workspace_entries(definitions) else {}
    rows = [_row(entry, approved) for entry in definitions.entries]
    if as_json:
        document = {
            "configFile": str(path) if path is not None else None,
            "workspace": str(folder),
            "servers": rows,
            "warnings": list(definitions.warnings),
        }
        print(json.dumps(document, indent=2), file=out)
        return 0
    for line in _table(rows):
        print(line, file=out)
    for warning in definitions.warnings:
        print(_line(f"warning: {warning}"), file=out)
    files = ", ".join(name for name, _ in WORKSPACE_FILES)
    source = display_path(path) if path is not None else "no user file (no HOME)"
    print(_line(f"From {source} and {display_path(folder)}'s {files}."), file=out)
    print(STATE_FOOTER, file=out)
    return 0


def _row(entry: McpServerEntry, approved: Mapping[str, str]) -> dict[str, Any]:
    spec = entry.spec
    approval = None
    if entry.origin == ORIGIN_WORKSPACE and spec is not None:
        digest = approved.get(entry.name)
        if digest == spec.digest():
            approval = "approved"
        else:
            approval = "changed since approved" if digest else "not approved"
    return {
        "name": entry.name,
        "origin": entry.origin,
        "where": entry.where,
        "transport": entry.transport,
        "command": entry.target if entry.transport == "stdio" else None,
        "url": entry.target if entry.transport == "http" else None,
        "usable": spec is not None,
        "enabled": entry.enabled,
        "trust": spec.trust if spec is not None else False,
        "approval": approval,
        "warnings": list(entry.warnings),
    }


def _table(rows: list[dict[str, Any]]) -> Iterator[str]:
    if not rows:
        yield f"No MCP servers. Add one: agent-lsp mcp add NAME -- COMMAND ARGS... ([{TABLE}])"
        return
    header = ["NAME", "ORIGIN", "TRANSPORT", "ENABLED", "TRUST", "COMMAND OR URL"]
    lines = [header]
    for row in rows:
        enabled = ("yes" if row["enabled"] else "no") if row["usable"] else "invalid"
        target = row["command"] or row["url"] or ""
        lines.append(
            [
                row["name"],
                row["origin"],
                row["transport"] or "?",
                enabled,
                "yes" if row["trust"] else "no",
                target,
            ]
        )
    lines = [[escape_control(cell) for cell in line] for line in lines]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header) - 1)]

    def joined(line: list[str]) -> str:
        padded = (cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        return "  ".join([*padded, line[-1]])

    yield joined(header)
    for row, line in zip(rows, lines[1:], strict=True):
        yield joined(line).rstrip()
        if row["approval"] is not None:
            yield _line(f"    approval: {_approval_text(row['approval'])}")
        for warning in row["warnings"]:
            yield _line(f"    warning: {warning}")


def _approval_text(approval: str) -> str:
    return {
        "approved": "approved for this folder",
        "not approved": "not approved: agent-lsp asks before it starts this server",
        "changed since approved": "changed since it was approved: agent-lsp asks again",
    }[approval]


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


def _has_workspace_entries(definitions: McpDefinitions) -> bool:
    return any(entry.origin == ORIGIN_WORKSPACE for entry in definitions.entries)


def _require_path(env: Mapping[str, str]) -> Path:
    path = config_path(env)
    if path is None:
        raise UserConfigError("neither XDG_CONFIG_HOME nor HOME is set: no place for the file")
    return path


def _fail(err: TextIO, message: str) -> int:
    print(_line(f"agent-lsp mcp add: {message}"), file=err)
    return 1


def _line(text: str) -> str:
    return escape_control(text)
