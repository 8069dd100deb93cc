"""MCP servers from the terminal, as a user runs the commands: ``agent-lsp mcp list`` asks a
real server (started for the folder, stopped after), ``agent-lsp mcp approve`` asks the user
on a real terminal (a pty), and ``agent-lsp ask`` calls an MCP tool once the user allows it.

The MCP servers are the SDK-written toolbox (tests/support/mcp_servers/toolbox.py) over real
stdio, each with a unique ``--tag`` so its process can be found in /proc.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.mcp.approvals import McpApprovals
from tests.support.lsp_client import REPO, server_env
from tests.support.mcp_servers import toolbox
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import pids_with, wait_until
from tests.support.pty_terminal import PtyTerminal

TOOLBOX = str(Path(toolbox.__file__))
# Under load a toolbox takes seconds to import the SDK: the commands wait up to 30 s for it.
COMMAND_TIMEOUT_S = 120


def new_tag() -> str:
    return f"mcp-term-{uuid.uuid4().hex[:10]}"


def toml_list(items: list[str]) -> str:
    return json.dumps(items)  # a JSON array of strings is a TOML array (\u escapes included)


def user_servers(tmp_path: Path, servers: dict[str, list[str]]) -> None:
    """``[mcp_servers.NAME]`` tables of the test's own user file: the toolbox with ``args``."""
    path = tmp_path / "xdg" / "agent-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tables = [
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {toml_list([TOOLBOX, *args])}\n"
        for name, args in servers.items()
    ]
    path.write_text("\n".join(tables), encoding="utf-8")


def workspace_server(folder: Path, name: str, tag: str) -> None:
    """The folder's own ``.vscode/mcp.json`` naming the toolbox: it waits for approval."""
    (folder / ".vscode").mkdir(exist_ok=True)
    servers = {name: {"command": sys.executable, "args": [TOOLBOX, "--tag", tag]}}
    (folder / ".vscode" / "mcp.json").write_text(json.dumps({"servers": servers}))


def own_env(tmp_path: Path, base_url: str | None = None) -> dict[str, str]:
    return server_env(
        base_url, XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_STATE_HOME=str(tmp_path / "state")
    )


def agent_lsp(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "server", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=COMMAND_TIMEOUT_S,
    )


class OnTerminal(PtyTerminal):
    """``agent-lsp ARGS`` on a pty (what the user sees), stdout a pipe."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        super().__init__(list(args), env, COMMAND_TIMEOUT_S)

    def wait_for_prompt(self) -> str:
        """The permission prompt, once it waits for an answer."""
        asked = wait_until(
            lambda: "permission needed:" in self.screen and self.screen.endswith("> "),
            COMMAND_TIMEOUT_S,
        )
        assert asked, self.screen
        return self.screen.rsplit("permission needed:", 1)[1]


@pytest.fixture
def terminals() -> Iterator[list[OnTerminal]]:
    opened: list[OnTerminal] = []
    yield opened
    for terminal in opened:
        terminal.close()  # the pty too


def test_list_shows_each_servers_state_tools_and_error_and_stops_them(
    tmp_path: Path, workspace: Path
) -> None:
    ready, broken, repo = new_tag(), new_tag(), new_tag()
    # The failing one's command line holds an escape sequence: it is shown, escaped.
    user_servers(
        tmp_path,
        {"tb": ["--tag", ready], "bad": ["--crash-at-start", "--tag", f"{broken}\x1b[8m"]},
    )
    workspace_server(workspace, "repo", repo)
    env = own_env(tmp_path)

    shown = agent_lsp(env, "mcp", "list", "--workspace", str(workspace))
    assert shown.returncode == 0, shown.stderr
    assert wait_until(lambda: not pids_with(ready), 5), "an MCP server outlived mcp list"
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:6] == ["NAME", "ORIGIN", "TRANSPORT", "STATE", "TRUST", "TOOLS"]
    rows = {line.split()[0]: line for line in lines if not line.startswith(" ")}
    assert rows["tb"].split()[:6] == ["tb", "user", "stdio", "ready", "no", "16"]
    assert "mcp__tb__echo, mcp__tb__write_note" in shown.stdout
    assert rows["bad"].split()[:4] == ["bad", "user", "stdio", "failed"]
    assert "error: the server ended the connection before it was ready" in shown.stdout
    assert "toolbox: cannot start: no configuration" in shown.stdout  # its stderr's tail
    assert rows["repo"].split()[:4] == ["repo", "workspace", "stdio", "awaiting-approval"]
    assert f"(agent-lsp mcp approve repo --workspace {workspace})" in shown.stdout
    assert f"{broken}\\e[8m" in shown.stdout and "\x1b" not in shown.stdout
    assert "Nothing was started" not in shown.stdout
    assert not pids_with(repo)  # never approved: never started

    as_json = json.loads(
        agent_lsp(env, "mcp", "list", "--json", "--workspace", str(workspace)).stdout
    )
    assert as_json["started"] is True
    servers = {server["name"]: server for server in as_json["servers"]}
    assert [servers[name]["state"] for name in ("tb", "bad", "repo")] == [
        "ready",
        "failed",
        "awaiting-approval",
    ]
    assert "mcp__tb__write_note" in servers["tb"]["tools"]
    assert "cannot start" in servers["bad"]["error"]
    assert wait_until(lambda: not pids_with(ready), 5)


def test_list_says_nothing_of_the_model(tmp_path: Path, workspace: Path) -> None:
    # Issue 34: `mcp list` printed a warning about the model (its server's warm-up checked
    # the endpoint); a command that asks nothing starts its server without preparing asks.
    user_servers(tmp_path, {"tb": ["--tag", new_tag()]})
    with ScriptedModel(models=["another-model"]) as endpoint:
        env = own_env(tmp_path, endpoint.base_url)  # MODEL=scripted: not served there
        shown = agent_lsp(env, "mcp", "list", "--workspace", str(workspace))
        assert shown.returncode == 0, shown.stderr
        assert "tb " in shown.stdout
        assert shown.stderr == ""
        assert not [e for e in endpoint.http_log if e["method"] == "GET"]  # never asked


def test_list_no_start_shows_the_definitions_and_starts_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    tag = new_tag()
    user_servers(tmp_path, {"tb": ["--tag", tag]})
    shown = agent_lsp(own_env(tmp_path), "mcp", "list", "--no-start", "--workspace", str(workspace))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].split()[:5] == [
        "NAME",
        "ORIGIN",
        "TRANSPORT",
        "ENABLED",
        "TRUST",
    ]
    assert "Nothing was started" in shown.stdout
    assert not pids_with(tag)


def test_approve_on_the_terminal_records_it_and_starts_the_server(
    tmp_path: Path, workspace: Path, terminals: list[OnTerminal]
) -> None:
    tag = new_tag()
    workspace_server(workspace, "repo", tag)
    env = own_env(tmp_path)
    terminal = OnTerminal(env, "mcp", "approve", "repo", "--workspace", str(workspace))
    terminals.append(terminal)
    prompt = terminal.wait_for_prompt()
    assert f"Start MCP server repo of {workspace}: {sys.executable} {TOOLBOX} --tag {tag}" in prompt
    # Issue 34: the request's own answers, not "allow once" (an approval is for good).
    # (the third, a rejection for good, as the editors offer it).
    assert prompt.endswith("[y] Approve and start  [n] Reject  [r] Reject, don't ask again > ")
    assert not pids_with(tag)  # asked before it starts
    terminal.type("y\n")
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert stdout == f"Approved MCP server repo for {workspace}: ready, 16 tools.\n"
    assert "repo" in McpApprovals.in_state_dir(env).approved(workspace)
    assert wait_until(lambda: not pids_with(tag), 5), "the approved server outlived the command"


def test_approve_refused_or_without_a_terminal_approves_nothing(
    tmp_path: Path, workspace: Path, terminals: list[OnTerminal]
) -> None:
    tag = new_tag()
    workspace_server(workspace, "repo", tag)
    env = own_env(tmp_path)
    no_terminal = agent_lsp(env, "mcp", "approve", "repo", "--workspace", str(workspace))
    assert no_terminal.returncode == 1
    assert "stdin is not one" in no_terminal.stderr and "nothing was approved" in no_terminal.stderr

    terminal = OnTerminal(env, "mcp", "approve", "repo", "--workspace", str(workspace))
    terminals.append(terminal)
    terminal.wait_for_prompt()
    terminal.type("n\n")
    code, stdout = terminal.finish()
    assert (code, stdout) == (1, "Not approved: MCP server repo stays awaiting-approval.\n")
    assert McpApprovals.in_state_dir(env).approved(workspace) == {}
    assert not pids_with(tag)

    unknown = OnTerminal(env, "mcp", "approve", "nope", "--workspace", str(workspace))
    terminals.append(unknown)
    code, _ = unknown.finish()
    assert code == 1 and "nope is not defined here" in unknown.screen


def test_the_terminal_chat_calls_an_mcp_tool_once_the_user_allows_it(
    model: ScriptedModel, tmp_path: Path, workspace: Path, terminals: list[OnTerminal]
) -> None:
    tag, repo = new_tag(), new_tag()
    user_servers(tmp_path, {"tb": ["--tag", tag]})
    workspace_server(workspace, "repo", repo)
    model.reply(tool_calls=[tool_call("mcp__tb__write_note", {"text": "n1"}, id="note")])
    model.reply("Noted.")
    terminal = OnTerminal(
        own_env(tmp_path, model.base_url), "ask", "note it", "--workspace", str(workspace)
    )
    terminals.append(terminal)
    prompt = terminal.wait_for_prompt()
    assert "on MCP server tb" in prompt and "n1" in prompt
    terminal.type("y\n")
    code, stdout = terminal.finish()
    assert (code, stdout) == (0, "Noted.\n"), terminal.screen
    results = [m for m in model.bodies[-1]["messages"] if m.get("role") == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [("note", "noted: n1")]
    # The folder's own server is named, with how to approve it; it was not started.
    # Worded as every client words it: a changed definition waits as a new one does.
    assert (
        "MCP server repo of this folder is new or changed and waits for your approval: its "
        "tools are not in this ask" in terminal.screen.replace("\n", "")
    ), terminal.screen
    assert not pids_with(repo)
    assert wait_until(lambda: not pids_with(tag), 5), "the MCP server outlived the ask"


def test_the_terminal_shows_a_calls_progress(model: ScriptedModel, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    tag = new_tag()
    user_servers(tmp_path, {"tb": ["--tag", tag]})
    model.reply(tool_calls=[tool_call("mcp__tb__progress", {"steps": 30}, id="p")])
    model.reply("Done.")
    env = own_env(tmp_path, model.base_url)
    done = agent_lsp(env, "ask", "count", "--workspace", str(workspace), "--approve")
    assert (done.returncode, done.stdout) == (0, "Done.\n"), done.stderr
    lines = [line for line in done.stderr.splitlines() if " ⋯ " in line]
    # At most one a second, and the last: 30 updates sent at once make two lines or so.
    assert lines and len(lines) < 30, done.stderr
    assert lines[-1].endswith("⋯ mcp__tb__progress 30/30 step 30"), lines
    assert wait_until(lambda: not pids_with(tag), 5)
