"""Scenarios of MCP servers in the editors: their list, approving a folder's own, their tools.

The MCP server is the SDK's test toolbox (tests/support/mcp_servers/toolbox.py), run over
stdio with this interpreter; each run tags it (``--tag``) so that its process can be found
in /proc, and checks that none outlives the editor. Each editor shows the list in its own
buffer and approves with its own key; the lines of a server are the same in both
(``McpServerViews``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support.mcp_servers import toolbox
from tests.support.model_server import tool_call
from tests.support.procs import pids_with, unique_tag, wait_until

from .base import Records, Run, Scenario

TOOLBOX = str(Path(toolbox.__file__))
HINT = "    not started: a approves it (agent-lsp asks you first)"

# An agent/mcpServers result's servers with every field shown, and text that would hide
# or reorder something on screen (a repository writes the command, a server the error).
VIEW_CASES: list[list[dict[str, Any]]] = [
    [
        {
            "name": "time",
            "origin": "user",
            "transport": "stdio",
            "target": "uvx mcp-server-time",
            "state": "ready",
            "tools": ["mcp__time__get_current_time", "mcp__time__convert_time"],
            "trusted": True,
            "warnings": [],
        },
        {
            "name": "repo",
            "origin": "workspace",
            "transport": "stdio",
            "target": "node tools/mcp.js #\x1b[8m --steal",
            "state": "awaiting-approval",
            "tools": [],
            "trusted": False,
            "warnings": ['repo: unknown key "colour" ignored\u202e'],
        },
        {
            "name": "web",
            "origin": "editor",
            "transport": "http",
            "target": "http://127.0.0.1:8931/mcp",
            "state": "failed",
            "tools": [],
            "error": "could not connect\r\nTraceback:\n  \x1b[31mboom\n",
            "trusted": False,
            "warnings": [],
        },
        {
            "name": "odd",
            "origin": "user",
            "transport": "",
            "target": "",
            "state": "disabled",
            "tools": [],
            "error": None,
            "trusted": False,
            "warnings": ["odd: neither command nor url\nsecond line"],
        },
        # Declined with "Reject, don't ask again", and stopped by the user: worded, like
        # awaiting-approval, on a line of their own.
        {
            "name": "notes",
            "origin": "workspace",
            "transport": "stdio",
            "target": "node notes.js",
            "state": "rejected",
            "tools": [],
            "trusted": False,
            "warnings": [],
        },
        {
            "name": "idx",
            "origin": "user",
            "transport": "stdio",
            "target": "idx-mcp",
            "state": "stopped",
            "tools": [],
            "error": None,
            "trusted": False,
            "warnings": [],
        },
    ],
    [],
]
VIEW_LINES = [
    [
        "time: ready (user, stdio, trusted)",
        "    command: uvx mcp-server-time",
        "    tools: mcp__time__get_current_time, mcp__time__convert_time",
        "",
        "repo: awaiting-approval (workspace, stdio)",
        "    command: node tools/mcp.js #\\e[8m --steal",
        HINT,
        '    warning: repo: unknown key "colour" ignored\\u202e',
        "",
        "web: failed (editor, http)",
        "    url: http://127.0.0.1:8931/mcp",
        "    error: could not connect",
        "      Traceback:",
        "        \\e[31mboom",
        "",
        "odd: disabled (user)",
        "    warning: odd: neither command nor url⏎second line",
        "",
        "notes: rejected (workspace, stdio)",
        "    command: node notes.js",
        "    not started: you rejected it (don't ask again); a approves it after all",
        "",
        "idx: stopped (user, stdio)",
        "    command: idx-mcp",
        "    stopped by the user: an ask does not start it until the agent-lsp server restarts",
    ],
    [
        "No MCP servers for this folder. Define them in the user file"
        " (~/.config/agent-lsp/config.toml, [mcp_servers.NAME]), the mcpServers setting,"
        " or the folder's .vscode/mcp.json or .mcp.json."
    ],
]


class McpServerViews(Scenario):
    """records: views, the client's lines for each case's servers."""

    name = "mcp_server_lines_are_those_of_every_client"
    data = VIEW_CASES

    def check(self, run: Run, records: Records) -> None:
        assert records["views"] == VIEW_LINES


def user_file(run: Run, servers: dict[str, dict[str, Any]]) -> Path:
    """The user configuration file with these ``[mcp_servers.NAME]`` tables."""
    path = run.config_home / "agent-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tables = []
    for name, keys in servers.items():
        body = "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())
        tables.append(f"[mcp_servers.{name}]\n{body}")
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def no_orphan(tag: str) -> None:
    assert wait_until(lambda: not pids_with(tag), 10), "the MCP server outlived the editor"


class McpToolThroughAnAsk(Scenario):
    """The toolbox in the user file as "tb"; the MCP list (until tb is ready), the tools list,
    then "use the toolbox": echo (read-only: not asked) and write_note (asked: the user allows
    it once). records: servers (the list's lines), tools (the tools buffer's text), prompts
    (each permission prompt's text), trace, conversation."""

    name = "an_mcp_tool_is_listed_with_its_server_and_asked_about_in_an_ask"

    def arrange(self, run: Run) -> None:
        tag = run.state["tag"] = unique_tag()
        user_file(run, {"tb": {"command": sys.executable, "args": [TOOLBOX, "--tag", tag]}})
        run.model.reply(
            tool_calls=[
                tool_call("mcp__tb__echo", {"text": "hello"}, id="echo"),
                tool_call("mcp__tb__write_note", {"text": "n1"}, id="note"),
            ]
        )
        run.model.reply("done")

    def check(self, run: Run, records: Records) -> None:
        tag = run.state["tag"]
        servers = records["servers"]
        assert servers[servers.index("tb: ready (user, stdio)") + 1] == (
            f"    command: {sys.executable} {TOOLBOX} --tag {tag}"
        )
        [tools_line] = [line for line in servers if line.startswith("    tools: ")]
        assert "mcp__tb__echo, mcp__tb__write_note" in tools_line
        tools = records["tools"]
        assert "- **mcp__tb__echo** (read-only, MCP server tb): [tb] The toolbox's echo.\n" in tools
        assert "- **mcp__tb__write_note** (destructive, MCP server tb): " in tools
        assert "- **read_file** (read-only): " in tools  # a built-in names no server
        [prompt] = records["prompts"]  # echo is read-only: only write_note asked
        assert "on MCP server tb" in prompt
        results = {
            m["tool_call_id"]: m["content"]
            for m in run.model.bodies[-1]["messages"]
            if m["role"] == "tool"
        }
        assert results == {"echo": "hello", "note": "noted: n1"}
        trace = "\n".join(records["trace"])
        # Each call named as the server names it (displayName), summarized by its argument.
        assert "✓ echo — tb (MCP server) hello (" in trace
        assert "⏸ write_note — tb (MCP server) n1 (waiting for permission)" in trace
        assert "✓ write_note — tb (MCP server) n1 (" in trace
        assert "mcp__tb__" not in trace
        assert "done" in records["conversation"]
        no_orphan(tag)


class McpServersListingAndApproval(Scenario):
    """The folder's .vscode/mcp.json defines "repo" (the toolbox, a tag with an escape
    sequence, an unknown key), the user file "gone" (a program that does not exist). The
    list shows repo awaiting approval and gone failed; the user approves repo at its line
    (the permission prompt: allowed once) and the list shows it ready; at the sync point
    "edited" gone leaves the user file, and the list's refresh key shows it gone.
    records: before, after, refreshed (the list's lines), prompts (the prompts' text)."""

    name = "the_mcp_list_shows_each_server_and_approves_a_folder_s_own"

    def arrange(self, run: Run) -> None:
        tag = run.state["tag"] = unique_tag()
        mcp_json = run.workspace / ".vscode" / "mcp.json"
        mcp_json.parent.mkdir()
        repo = {"command": sys.executable, "args": [TOOLBOX, "--tag", tag + "\x1b[8m"]}
        mcp_json.write_text(json.dumps({"servers": {"repo": {**repo, "colour": "blue"}}}))
        user_file(run, {"gone": {"command": str(run.tmp_path / "no-such-program")}})
        run.on_sync["edited"] = lambda: user_file(run, {})

    def check(self, run: Run, records: Records) -> None:
        tag = run.state["tag"]
        before = records["before"]
        at = before.index("repo: awaiting-approval (workspace, stdio)")
        assert before[at + 1 : at + 3] == [
            # The command line as a shell would read it, the escape sequence escaped.
            f"    command: {sys.executable} {TOOLBOX} --tag '{tag}\\e[8m'",
            HINT,
        ], before
        warnings = [line for line in before[at + 3 :] if line.startswith("    warning: ")]
        assert any("colour" in line for line in warnings), before
        gone = before.index("gone: failed (user, stdio)")
        assert before[gone + 2].startswith("    error: "), before
        assert "no-such-program" in "\n".join(before[gone:])
        shown = "\n".join(before + records["after"] + records["refreshed"])
        assert "\x1b" not in shown

        # The server asked before it started the folder's own server, naming what runs.
        [prompt] = records["prompts"]
        assert "Start MCP server repo of " in prompt
        # Quoted as a shell would need it (the escape sequence is data, shown escaped).
        assert f"{TOOLBOX} --tag '{tag}\\e[8m'" in prompt and "\x1b" not in prompt, repr(prompt)

        after = records["after"]
        ready = after.index("repo: ready (workspace, stdio)")
        assert after[ready + 2].startswith("    tools: mcp__repo__echo, ")
        assert HINT not in after
        refreshed = records["refreshed"]
        assert "repo: ready (workspace, stdio)" in refreshed
        assert not [line for line in refreshed if line.startswith("gone:")]
        no_orphan(tag)


class McpServerMissingFromAnAsk(Scenario):
    """The toolbox in the user file as "slow", which takes 60 s to start and has 3 s
    (startup_timeout); asks "hello" at once. records: trace, shown (the conversation, its
    notes included)."""

    name = "an_ask_waits_for_a_starting_mcp_server_and_says_it_goes_without_it"

    def arrange(self, run: Run) -> None:
        args = [TOOLBOX, "--tag", unique_tag(), "--slow-start", "60"]
        user_file(run, {"slow": {"command": sys.executable, "args": args, "startup_timeout": 3}})
        run.model.reply("answered without it")

    def check(self, run: Run, records: Records) -> None:
        # Issue 34: the first ask waits for the servers still starting, and says so; the
        # one that did not start is named in the conversation, and to the model.
        trace = "\n".join(records["trace"])
        assert " … starting MCP servers (waiting up to 10 s): slow" in trace
        missing = (
            "this ask goes without the tools of MCP servers not ready: slow (failed: "
            "it did not start within 3 s (its startup_timeout))"
        )
        assert f" … {missing}" in trace
        assert f"_{missing}_" in records["shown"]
        assert "answered without it" in records["shown"]
        prompt = run.model.bodies[0]["messages"][-1]["content"]
        assert "MCP servers whose tools are missing from this ask: slow (failed: " in prompt


class McpServerAwaitingApprovalSaid(Scenario):
    """The folder's .mcp.json defines "repo" (the toolbox), never approved; two asks.
    records: shown (the conversation)."""

    name = "an_ask_says_once_that_a_folder_s_own_mcp_server_waits_for_approval"

    def arrange(self, run: Run) -> None:
        tag = run.state["tag"] = unique_tag()
        mcp_json = run.workspace / ".mcp.json"
        repo = {"command": sys.executable, "args": [TOOLBOX, "--tag", tag]}
        mcp_json.write_text(json.dumps({"mcpServers": {"repo": repo}}))
        run.model.reply("first answer")
        run.model.reply("second answer")

    def check(self, run: Run, records: Records) -> None:
        # Issue 34 item 7 (second walk-through): a folder's own server that is new, or changed
        # since it was approved, was left out of asks with nothing said; VS Code says it once.
        tag = run.state["tag"]
        shown = records["shown"]
        note = (
            "_MCP server repo of this folder is new or changed and waits for your approval "
            f"({sys.executable} {TOOLBOX} --tag {tag}): its tools are not in this ask; "
        )
        assert shown.count(note) == 1, shown
        assert shown.index("one") < shown.index(note) < shown.index("first answer"), shown
        assert "second answer" in shown
        assert not pids_with(tag), "the server was started without approval"
