"""MCP servers in the real server process: listed, called through agent/ask, approved.

The server runs over stdio (pytest-lsp), the model is the scripted one, and the MCP
server is the SDK's test toolbox (tests/support/mcp_servers/toolbox.py) over real stdio.
Each toolbox gets a unique ``--tag`` so its process can be found in /proc. The last tests
drive a folder's definitions in process: read off the loop, once per change, errors seen.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from server.mcp.definitions import FolderDefinitions, Loaded
from server.mcp.servers import McpServers
from tests.support.lsp_client import ask
from tests.support.mcp_sessions import (
    TOOLBOX,
    mcp_servers,
    mcp_session,
    new_tag,
    tool_results,
    toolbox_server,
    until_state,
)
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import pids_with, until, wait_until


async def test_an_mcp_tool_is_listed_with_its_source_and_called_through_an_ask(
    model: ScriptedModel, workspace: Path
) -> None:
    tag = new_tag()
    async with mcp_session(model, workspace, {"tb": toolbox_server(tag)}) as client:
        ready = await until_state(client, "tb", "ready")
        assert ready["origin"] == "editor" and ready["transport"] == "stdio"
        assert TOOLBOX in ready["target"] and "error" not in ready  # absent: none
        assert "mcp__tb__echo" in ready["tools"]

        listed = await client.protocol.send_request_async("agent/listTools", {})
        tools = {tool["name"]: tool for tool in listed["tools"]}
        assert tools["bash"]["source"] == {"kind": "builtin"}
        assert tools["mcp__tb__echo"]["source"] == {"kind": "mcp", "server": "tb"}
        assert tools["mcp__tb__echo"]["annotations"]["readOnlyHint"] is True

        # A read-only tool runs without asking; one that is not asks first.
        model.reply(
            tool_calls=[
                tool_call("mcp__tb__echo", {"text": "hello"}, id="echo"),
                tool_call("mcp__tb__write_note", {"text": "n1"}, id="note"),
            ]
        )
        model.reply("done")
        client.answers = ["allow_once"]
        result = await ask(client, prompt="use the toolbox")

        assert result["answer"] == "done"
        assert tool_results(model) == {"echo": "hello", "note": "noted: n1"}
        [request] = client.requests
        assert request["toolName"] == "mcp__tb__write_note"
        assert request["arguments"] == {"text": "n1"}
        assert "on MCP server tb" in request["title"]
        # "Always" covers the tool, and the request says so (not "this exact call").
        assert request["alwaysScope"] == (
            "Any call of write_note on MCP server tb, with any arguments, for this conversation"
        )
        # Every activity of a call names it for people: the tool, then its server.
        notes = [n for m, n in client.notifications if m == "agent/toolActivity"]
        shown = {(n["name"], n["status"]): n.get("displayName") for n in notes}
        assert shown[("mcp__tb__echo", "completed")] == "echo — tb (MCP server)"
        for status in ("started", "waiting", "completed"):
            assert shown[("mcp__tb__write_note", status)] == "write_note — tb (MCP server)"
        # A reopened conversation names its calls the same way.
        history = await client.protocol.send_request_async(
            "agent/sessionHistory", {"sessionId": result["sessionId"]}
        )
        calls = [c for e in history["entries"] for c in e.get("toolCalls", [])]
        assert {c["name"]: c.get("displayName") for c in calls} == {
            "mcp__tb__echo": "echo — tb (MCP server)",
            "mcp__tb__write_note": "write_note — tb (MCP server)",
        }

        # A refused one is declined, and the server never sees the call.
        model.reply(tool_calls=[tool_call("mcp__tb__write_note", {"text": "n2"}, id="no")])
        model.reply("ok")
        client.answers = ["reject_once"]
        await ask(client, prompt="again")
        assert tool_results(model)["no"].startswith("Error: the user declined this call")
        assert pids_with(tag)
    assert wait_until(lambda: not pids_with(tag), 5), "the MCP server outlived the session"


async def test_tools_the_user_turned_off_are_not_offered_and_a_call_to_one_is_refused(
    model: ScriptedModel, workspace: Path
) -> None:
    def offered(body: dict[str, Any]) -> set[str]:
        return {t["function"]["name"] for t in body.get("tools", [])}

    async with mcp_session(model, workspace, {"tb": toolbox_server(new_tag())}) as client:
        await until_state(client, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__echo", {"text": "hi"}, id="echo")])
        model.reply("done without it")
        off = ["mcp__tb__*", "bash"]
        first = await ask(client, prompt="use the toolbox", disabledTools=off)
        assert first["answer"] == "done without it"
        sent = offered(model.bodies[-2])
        assert "read_file" in sent
        assert "bash" not in sent and not any(n.startswith("mcp__tb__") for n in sent)
        assert tool_results(model)["echo"] == (
            "Error: mcp__tb__echo is turned off by the user for this conversation; do without it."
        )
        # The next ask without the list (the user turned them on again) offers them all.
        model.reply("all there")
        await ask(client, prompt="again", sessionId=first["sessionId"])
        assert {"bash", "mcp__tb__echo", "mcp__tb__write_note"} <= offered(model.bodies[-1])


async def test_a_crashed_server_is_failed_and_restarts_at_the_next_ask(
    model: ScriptedModel, workspace: Path
) -> None:
    tag = new_tag()
    servers = {"tb": toolbox_server(tag, trust=True)}
    async with mcp_session(model, workspace, servers) as client:
        await until_state(client, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__crash", {}, id="crash")])
        model.reply("it crashed")
        await ask(client, prompt="crash it")
        assert tool_results(model)["crash"].startswith("Error: MCP server tb")
        assert client.requests == []  # trust = true: no question

        failed = await until_state(client, "tb", "failed")
        assert "crashed on purpose" in failed["error"] and failed["tools"] == []
        listed = await client.protocol.send_request_async("agent/listTools", {})
        assert not [t for t in listed["tools"] if t["name"].startswith("mcp__")]

        model.reply("no tools needed")
        await ask(client, prompt="anything")  # the next ask starts it again
        await until_state(client, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__echo", {"text": "back"}, id="again")])
        model.reply("ok")
        await ask(client, prompt="echo")
        assert tool_results(model)["again"] == "back"
    assert wait_until(lambda: not pids_with(tag), 5)


async def test_the_user_stops_restarts_and_reads_the_output_of_one_server(
    model: ScriptedModel, workspace: Path
) -> None:
    tag = new_tag()
    async with mcp_session(model, workspace, {"tb": toolbox_server(tag)}) as client:
        await until_state(client, "tb", "ready")
        first = set(pids_with(tag))
        control = client.protocol.send_request_async
        stopped = await control("agent/controlMcpServer", {"name": "tb", "action": "stop"})
        assert stopped["state"] == "stopped" and stopped["tools"] == []
        assert wait_until(lambda: not pids_with(tag), 5), "the stopped server still runs"
        # An ask neither starts it again nor fails on its tool as an unknown one.
        model.reply(tool_calls=[tool_call("mcp__tb__echo", {"text": "x"}, id="off")])
        model.reply("ok")
        await ask(client, prompt="echo")
        assert tool_results(model)["off"] == (
            "Error: the user stopped the MCP server tb; its tools are not available."
        )
        assert (await mcp_servers(client))["tb"]["state"] == "stopped"

        started = await control("agent/controlMcpServer", {"name": "tb", "action": "restart"})
        assert started["state"] == "starting"
        await until_state(client, "tb", "ready")
        assert pids_with(tag) and not set(pids_with(tag)) & first  # a new process
        output = await control("agent/mcpServerLog", {"name": "tb"})
        lines = output["text"].splitlines()
        assert any(line.endswith("MCP server tb stopped by the user") for line in lines)
        assert any(line.endswith("MCP server tb restarted by the user") for line in lines)
        assert sum("MCP server tb is ready" in line for line in lines) == 2

        for params in ({"name": "nope", "action": "stop"}, {"name": "tb", "action": "explode"}):
            with pytest.raises(JsonRpcException) as caught:
                await control("agent/controlMcpServer", params)
            assert caught.value.code == -32602
    assert wait_until(lambda: not pids_with(tag), 5)


async def test_a_workspace_server_starts_only_once_approved_and_asks_again_when_changed(
    model: ScriptedModel, workspace: Path
) -> None:
    tag = new_tag()
    definitions = workspace / ".vscode" / "mcp.json"
    definitions.parent.mkdir()
    definitions.write_text(json.dumps({"servers": {"repo": toolbox_server(tag)}}))
    async with mcp_session(model, workspace) as client:
        waiting = await until_state(client, "repo", "awaiting-approval")
        assert waiting["origin"] == "workspace" and waiting["tools"] == []
        # An ask does not start it either; a call of its tool says why it is not there.
        model.reply(tool_calls=[tool_call("mcp__repo__echo", {"text": "x"}, id="early")])
        model.reply("nothing")
        await ask(client, prompt="hello")
        assert (await mcp_servers(client))["repo"]["state"] == "awaiting-approval"
        assert not pids_with(tag)
        assert tool_results(model)["early"].startswith(
            "Error: the MCP server repo waits for the user's approval"
        )

        client.answers = ["reject_once"]
        refused = await client.protocol.send_request_async(
            "agent/approveMcpServer", {"name": "repo"}
        )
        assert refused == {"approved": False, "state": "awaiting-approval"}
        [request] = client.requests
        assert f"{sys.executable} {TOOLBOX} --tag {tag}" in request["title"]
        assert request["arguments"]["command"] == sys.executable
        # Once or always would record the same approval: a yes, a no, a no for good.
        assert [o["kind"] for o in request["options"]] == [
            "allow_once",
            "reject_once",
            "reject_always",
        ]
        assert request["options"][2]["name"] == "Reject, don't ask again"
        assert "alwaysScope" not in request

        # "Don't ask again": remembered (the approvals file; test_mcp_config), and the
        # user may still approve it.
        client.answers = ["reject_always"]
        declined = await client.protocol.send_request_async(
            "agent/approveMcpServer", {"name": "repo"}
        )
        assert declined == {"approved": False, "state": "rejected"}
        model.reply(tool_calls=[tool_call("mcp__repo__echo", {"text": "x"}, id="declined")])
        model.reply("nothing")
        await ask(client, prompt="hello again")
        assert tool_results(model)["declined"].startswith(
            "Error: the user declined to start the MCP server repo"
        )

        client.answers = ["allow_once"]
        approved = await client.protocol.send_request_async(
            "agent/approveMcpServer", {"name": "repo"}
        )
        assert approved["approved"] is True
        await until_state(client, "repo", "ready")
        assert pids_with(tag)

        # A changed definition (another command line) is not the approved one.
        other = new_tag()
        definitions.write_text(json.dumps({"servers": {"repo": toolbox_server(other)}}))
        await until_state(client, "repo", "awaiting-approval")
        assert wait_until(lambda: not pids_with(tag), 5), "the old definition's server runs on"
        assert not pids_with(other)


async def test_an_unapproved_name_is_refused(model: ScriptedModel, workspace: Path) -> None:
    async with mcp_session(model, workspace) as client:
        try:
            await client.protocol.send_request_async("agent/approveMcpServer", {"name": "nope"})
        except Exception as exc:  # pygls's JsonRpcException
            assert "nope is not defined here" in str(exc)
        else:
            raise AssertionError("approving an undefined server succeeded")


# -- a folder's definitions, in process ---------------------------------------------------


def own_environ(tmp_path: Path) -> dict[str, str]:
    """A user file and state folder of the test's own (none of them exist yet)."""
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }


def dated_back(path: Path, seconds: float) -> None:
    """Past the reader's window for coarse timestamps, so what it parsed may be kept."""
    when = time.time() - seconds
    os.utime(path, (when, when))


def names(loaded: Loaded) -> set[str]:
    return {entry.name for entry in loaded.definitions.entries}


def test_unchanged_definitions_are_not_parsed_again(workspace: Path, tmp_path: Path) -> None:
    reader = FolderDefinitions(workspace, own_environ(tmp_path))
    nothing = reader.read(None)
    assert names(nothing) == set() and reader.read(None) is nothing  # no files: kept

    own = workspace / ".mcp.json"
    own.write_text(json.dumps({"mcpServers": {"aa": {"command": "true"}}}))
    fresh = reader.read(None)
    assert names(fresh) == {"aa"}
    assert reader.read(None) is not fresh  # written just now: it may change unseen, read again
    dated_back(own, 60)
    kept = reader.read(None)
    assert reader.read(None) is kept

    setting = {"ed": {"type": "stdio", "command": "true"}}
    with_setting = reader.read(setting)
    assert names(with_setting) == {"aa", "ed"}
    assert reader.read(json.loads(json.dumps(setting))) is with_setting  # an equal value

    own.write_text(json.dumps({"mcpServers": {"bb": {"command": "true"}}}))  # same size
    dated_back(own, 120)
    assert names(reader.read(setting)) == {"bb", "ed"}


class HeldDefinitions(FolderDefinitions):
    """Counts its reads and holds each until ``go`` is set (a slow disk)."""

    def __init__(self, root: Path, environ: dict[str, str]) -> None:
        super().__init__(root, environ)
        self.go = threading.Event()
        self.reads = 0

    def read(self, setting: Any) -> Loaded:
        self.reads += 1
        assert self.go.wait(30), "never let go"
        return super().read(setting)


async def test_refresh_returns_at_once_and_overlapping_ones_share_one_more_read(
    workspace: Path, tmp_path: Path
) -> None:
    definitions = HeldDefinitions(workspace, own_environ(tmp_path))
    servers = McpServers(workspace, definitions, lambda: None)
    began = time.monotonic()
    for _ in range(5):
        servers.refresh(retry=True)  # each would wait for `go` if it read on the loop
    await until(lambda: definitions.reads == 1)
    for _ in range(5):
        servers.refresh()
    assert time.monotonic() - began < 10
    definitions.go.set()
    await until(lambda: definitions.reads == 2)
    await servers.aclose()  # waits for the reads under way
    assert definitions.reads == 2


class BrokenDefinitions(FolderDefinitions):
    def __init__(self, root: Path, environ: dict[str, str], error: Exception) -> None:
        super().__init__(root, environ)
        self.error = error

    def read(self, setting: Any) -> Loaded:
        raise self.error


async def test_an_unreadable_definition_is_a_warning_and_a_bug_of_ours_is_seen(
    workspace: Path, tmp_path: Path
) -> None:
    loop = asyncio.get_running_loop()
    bugs: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: bugs.append(context))
    try:
        warnings: list[str] = []
        definitions = BrokenDefinitions(
            workspace, own_environ(tmp_path), PermissionError("denied here")
        )
        servers = McpServers(workspace, definitions, lambda: None, warn=warnings.append)
        await servers.current()
        assert warnings == [f"MCP: the definitions of {workspace} cannot be read: denied here"]

        definitions.error = KeyError("a bug")
        with pytest.raises(KeyError):
            await servers.current()
        await until(lambda: bugs)
        assert isinstance(bugs[0]["exception"], KeyError) and len(warnings) == 1
        await servers.aclose()
    finally:
        loop.set_exception_handler(None)
