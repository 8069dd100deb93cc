"""What ``agent-lsp mcp list`` prints: the servers as the running server has them (live), or,
with ``--no-start`` or when no server could be asked, the definitions as the files write them.

Names, commands, URLs, errors and warnings are data from a file (a workspace's, possibly a
cloned repository's) or from an MCP server: every cell and line is escaped.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from tooling.display import escape_control

from ..config.user_config import config_path, display_path
from ..mcp.approvals import McpApprovals
from ..mcp.config import (
    ORIGIN_WORKSPACE,
    TABLE,
    WORKSPACE_FILES,
    McpDefinitions,
    McpServerEntry,
    load_definitions,
)

NO_SERVERS = f"No MCP servers. Add one: agent-lsp mcp add NAME -- COMMAND ARGS... ([{TABLE}])"
OFFLINE_FOOTER = (
    "Nothing was started (--no-start, or no server could be asked): each server's state, "
    "tools and last error are shown by agent-lsp mcp list without --no-start."
)


def print_live(
    servers: list[dict[str, Any]],
    env: Mapping[str, str],
    folder: Path,
    *,
    waited: float,
    approve_hint: str,
    as_json: bool,
    out: TextIO,
) -> None:
    """``agent/mcpServers``'s entries, as a table or as JSON (the entries verbatim)."""
    path = config_path(env)
    if as_json:
        print(json.dumps(_document(path, folder, True, servers), indent=2), file=out)
        return
    if not servers:
        print(NO_SERVERS, file=out)
    else:
        header = ["NAME", "ORIGIN", "TRANSPORT", "STATE", "TRUST", "TOOLS", "COMMAND OR URL"]
        cells = [
            [
                str(server.get("name", "?")),
                str(server.get("origin", "?")),
                str(server.get("transport") or "?"),
                str(server.get("state", "?")),
                "yes" if server.get("trusted") else "no",
                str(len(server.get("tools") or [])) if server.get("state") == "ready" else "-",
                str(server.get("target", "")),
            ]
            for server in servers
        ]
        lines = iter(_aligned(header, cells))
        print(next(lines), file=out)
        for server, line in zip(servers, lines, strict=True):
            print(line, file=out)
            for detail in _live_details(server, waited, approve_hint):
                print(detail, file=out)
    print(_sources_line(path, folder), file=out)


def _live_details(server: dict[str, Any], waited: float, approve_hint: str) -> Iterator[str]:
    name = str(server.get("name", "?"))
    state = server.get("state")
    if state == "ready" and server.get("tools"):
        yield _line(f"    tools: {', '.join(str(tool) for tool in server['tools'])}")
    elif state == "starting":
        yield _line(f"    still starting after {waited:g} s (--wait SECONDS waits longer)")
    elif state == "awaiting-approval":
        yield _line(
            "    not approved: agent-lsp asks before it starts this server "
            f"(agent-lsp mcp approve {name}{approve_hint})"
        )
    yield from error_lines(server)
    for warning in server.get("warnings") or ():
        yield _line(f"    warning: {warning}")


def error_lines(server: Mapping[str, Any]) -> Iterator[str]:
    """A server's ``error``, every line of it (a stdio server's stderr tail), escaped."""
    error = server.get("error")
    if not error:
        return
    first, *rest = str(error).split("\n")
    yield _line(f"    error: {first}")
    for text in rest:
        yield _line(f"           {text}")


def print_offline(env: Mapping[str, str], folder: Path, as_json: bool, out: TextIO) -> None:
    """The definitions of the user file and the folder's files, nothing started."""
    path = config_path(env)
    definitions = load_definitions(user_file=path, editor_setting=None, folder=folder, environ=env)
    approvals = McpApprovals.in_state_dir(env)
    approved = approvals.approved(folder) if _has_workspace_entries(definitions) else {}
    rows = [_row(entry, approved) for entry in definitions.entries]
    if as_json:
        document = {
            **_document(path, folder, False, rows),
            "warnings": list(definitions.warnings),
        }
        print(json.dumps(document, indent=2), file=out)
        return
    for line in _offline_table(rows):
        print(line, file=out)
    for warning in definitions.warnings:
        print(_line(f"warning: {warning}"), file=out)
    print(_sources_line(path, folder), file=out)
    print(OFFLINE_FOOTER, file=out)


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


def _offline_table(rows: list[dict[str, Any]]) -> Iterator[str]:
    if not rows:
        yield NO_SERVERS
        return
    header = ["NAME", "ORIGIN", "TRANSPORT", "ENABLED", "TRUST", "COMMAND OR URL"]
    cells = [
        [
            row["name"],
            row["origin"],
            row["transport"] or "?",
            ("yes" if row["enabled"] else "no") if row["usable"] else "invalid",
            "yes" if row["trust"] else "no",
            row["command"] or row["url"] or "",
        ]
        for row in rows
    ]
    lines = iter(_aligned(header, cells))
    yield next(lines)
    for row, line in zip(rows, lines, strict=True):
        yield line
        if row["approval"] is not None:
            yield _line(f"    approval: {_approval_text(row['approval'])}")
        for warning in row["warnings"]:
            yield _line(f"    warning: {warning}")


def _aligned(header: list[str], rows: list[list[str]]) -> Iterator[str]:
    """The header and each row, escaped, in columns (the last one as wide as it is)."""
    lines = [[escape_control(cell) for cell in line] for line in [header, *rows]]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header) - 1)]
    for line in lines:
        padded = (cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        yield "  ".join([*padded, line[-1]]).rstrip()


def _approval_text(approval: str) -> str:
    return {
        "approved": "approved for this folder",
        "not approved": "not approved: agent-lsp asks before it starts this server",
        "changed since approved": "changed since it was approved: agent-lsp asks again",
    }[approval]


def _sources_line(path: Path | None, folder: Path) -> str:
    files = ", ".join(name for name, _ in WORKSPACE_FILES)
    source = display_path(path) if path is not None else "no user file (no HOME)"
    return _line(f"From {source} and {display_path(folder)}'s {files}.")


def approve_option(workspace: Path) -> str:
    """`` --workspace DIR`` for a command shown to the user, unless DIR is the current folder."""
    try:
        here: Path | None = Path.cwd().resolve()
    except OSError:  # the current folder was removed
        here = None
    if workspace == here:
        return ""
    return f" --workspace {escape_control(shlex.quote(str(workspace)))}"


def _has_workspace_entries(definitions: McpDefinitions) -> bool:
    return any(entry.origin == ORIGIN_WORKSPACE for entry in definitions.entries)


def _line(text: str) -> str:
    return escape_control(text)


def _document(
    path: Path | None, folder: Path, started: bool, servers: list[dict[str, Any]]
) -> dict[str, Any]:
    """``--json``'s document, live (``started``) or from the files."""
    return {
        "configFile": str(path) if path is not None else None,
        "workspace": str(folder),
        "started": started,
        "servers": servers,
    }
