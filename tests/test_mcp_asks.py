"""MCP tools in asks of the real server: progress, large outputs, a changed tool list,
Streamable HTTP, a client that cannot ask, the model's key, and a published server.

The server runs over stdio (pytest-lsp), the model is the scripted one; the MCP servers
are the SDK's test toolbox (over stdio and over HTTP) and ``mcp-server-time`` from PyPI
(a dev dependency, so ``.ci/run`` installs it with the others).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.lsp_client import ask, server_env
from tests.support.mcp_servers import toolbox_over_http
from tests.support.mcp_sessions import (
    mcp_servers,
    mcp_session,
    new_tag,
    tool_results,
    toolbox_server,
    until_state,
)
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import pids_with, wait_until


async def test_progress_of_a_call_reaches_the_client_as_ask_progress(
    model: ScriptedModel, workspace: Path
) -> None:
    async with mcp_session(model, workspace, {"tb": toolbox_server(new_tag(), trust=True)}) as c:
        await until_state(c, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__progress", {"steps": 40}, id="p")])
        model.reply("done")
        await ask(c, prompt="report progress")
        updates = [u for u in c.progress if u.get("callId") == "p"]
        # Throttled (the server sends 40 at once): the first and the last, not all 40.
        assert 2 <= len(updates) < 40, updates
        assert updates[0]["progress"] == 1 and updates[-1]["progress"] == 40
        assert all(u["total"] == 40 and u["phase"] == "tools" for u in updates)
        assert updates[-1]["message"] == "turn 1: mcp__tb__progress 40/40 step 40"
        assert tool_results(model)["p"] == "done"


async def test_the_first_ask_waits_for_a_server_still_starting_and_has_its_tools(
    model: ScriptedModel, workspace: Path
) -> None:
    # Issue 34: the first ask after a start went without the MCP tools, and nobody said so.
    slow = toolbox_server(new_tag(), trust=True)
    slow["args"] += ["--slow-start", "2"]
    async with mcp_session(model, workspace, {"slow": slow}) as client:
        await until_state(client, "slow", "starting")
        model.reply("answered with it")
        result = await ask(client, prompt="hello")
        assert result["answer"] == "answered with it"
        [starting] = [u for u in client.progress if u["phase"] == "starting"]
        assert starting["servers"] == ["slow"]
        assert starting["message"] == "starting MCP servers (waiting up to 10 s): slow"
        tools = {t["function"]["name"] for t in model.bodies[-1].get("tools", [])}
        assert "mcp__slow__echo" in tools
        assert "MCP servers whose tools" not in str(model.bodies[-1]["messages"][-1])


async def test_an_ask_goes_on_without_a_server_that_fails_to_start_and_says_so(
    model: ScriptedModel, workspace: Path
) -> None:
    slow = toolbox_server(new_tag(), trust=True, startup_timeout=2)
    slow["args"] += ["--slow-start", "60"]
    async with mcp_session(model, workspace, {"slow": slow}) as client:
        await until_state(client, "slow", "starting")
        model.reply("answered without it")
        result = await ask(client, prompt="hello")
        assert result["answer"] == "answered without it"
        waiting, missing = [u for u in client.progress if u["phase"] == "starting"]
        assert waiting["servers"] == missing["servers"] == ["slow"]
        assert missing["message"].startswith(
            "this ask goes without the tools of MCP servers not ready: slow (failed: "
        )
        tools = {t["function"]["name"] for t in model.bodies[-1].get("tools", [])}
        assert "read_file" in tools and not any(name.startswith("mcp__") for name in tools)
        # The model is told which are missing, after the prompt.
        prompt = model.bodies[-1]["messages"][-1]["content"]
        assert prompt.startswith("hello\n\n[Editor context]\n")
        assert "MCP servers whose tools are missing from this ask: slow (failed: " in prompt
        # The conversation's title is the prompt alone.
        sessions = (await client.protocol.send_request_async("agent/sessions", {}))["sessions"]
        [session] = [s for s in sessions if s["sessionId"] == result["sessionId"]]
        assert session["title"] == "hello"


async def test_a_large_output_reaches_the_model_cut_and_the_user_whole(
    model: ScriptedModel, workspace: Path
) -> None:
    text = "".join(f"line {n:06}\n" for n in range(8_000))  # 96,000 characters
    async with mcp_session(model, workspace, {"tb": toolbox_server(new_tag())}) as client:
        await until_state(client, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__echo", {"text": text}, id="big")])
        model.reply("read it")
        result = await ask(client, prompt="echo a lot")
        seen = tool_results(model)["big"]
        assert len(seen) < 51_000 and "characters of the MCP tool's output omitted" in seen
        assert seen.startswith("line 000000\n") and seen.endswith("line 007999\n")
        whole = await client.protocol.send_request_async(
            "agent/toolOutput", {"sessionId": result["sessionId"], "callId": "big"}
        )
        assert whole["output"] == text and whole["ok"] is True


async def test_a_changed_tool_list_is_in_the_next_ask(
    model: ScriptedModel, workspace: Path
) -> None:
    async with mcp_session(model, workspace, {"tb": toolbox_server(new_tag(), trust=True)}) as c:
        await until_state(c, "tb", "ready")
        model.reply(tool_calls=[tool_call("mcp__tb__add_tool", {}, id="add")])
        model.reply("added")
        await ask(c, prompt="add a tool")
        await until_state(c, "tb", "ready", also=lambda s: "mcp__tb__added" in s["tools"])
        model.reply(tool_calls=[tool_call("mcp__tb__added", {"text": "new"}, id="new")])
        model.reply("used it")
        await ask(c, prompt="use the new tool")
        assert tool_results(model)["new"] == "new"
        offered = {t["function"]["name"] for t in model.bodies[0]["tools"]}
        assert "mcp__tb__added" not in offered  # the first ask's list was the old one
        assert "mcp__tb__added" in {t["function"]["name"] for t in model.bodies[-1]["tools"]}


async def test_a_server_over_streamable_http_through_an_ask(
    model: ScriptedModel, workspace: Path
) -> None:
    with toolbox_over_http() as url:
        servers = {"web": {"type": "http", "url": url, "headers": {"X-Toolbox": "from-setting"}}}
        async with mcp_session(model, workspace, servers) as client:
            ready = await until_state(client, "web", "ready")
            assert ready["transport"] == "http" and ready["target"] == url
            model.reply(
                tool_calls=[
                    tool_call("mcp__web__echo", {"text": "over http"}, id="e"),
                    tool_call("mcp__web__headers", {}, id="h"),
                ]
            )
            model.reply("ok")
            await ask(client, prompt="over http")
            results = tool_results(model)
            assert results["e"] == "over http" and results["h"] == "from-setting"
            assert client.requests == []  # both read-only


async def test_a_client_that_cannot_ask_gets_the_refusal_bash_gets(
    model: ScriptedModel, workspace: Path
) -> None:
    servers = {"tb": toolbox_server(new_tag())}
    async with mcp_session(model, workspace, servers, can_ask=False) as client:
        await until_state(client, "tb", "ready")
        model.reply(
            tool_calls=[
                tool_call("mcp__tb__write_note", {"text": "x"}, id="note"),
                tool_call("mcp__tb__echo", {"text": "still"}, id="echo"),
            ]
        )
        model.reply("ok")
        await ask(client, prompt="write")
        results = tool_results(model)
        assert results["echo"] == "still"  # read-only: runs
        assert results["note"].startswith("Error: ") and "cannot ask" in results["note"]


async def test_the_model_key_never_reaches_an_mcp_server(
    model: ScriptedModel, workspace: Path
) -> None:
    env = server_env(model.base_url, OPENAI_API_KEY="sk-openai-secret")
    names = ["MODEL_API_KEY", "OPENAI_API_KEY", "BASE_URL", "MODEL", "MINE"]
    servers = {
        "tb": toolbox_server(new_tag(), env={"MINE": "given"}),
        # The user may hand the key on, by name, in the definition's env.
        "keyed": toolbox_server(new_tag(), env={"MODEL_API_KEY": "${MODEL_API_KEY}"}),
    }
    async with mcp_session(model, workspace, servers, env=env) as client:
        await until_state(client, "tb", "ready")
        await until_state(client, "keyed", "ready")
        model.reply(
            tool_calls=[
                tool_call("mcp__tb__env", {"names": names}, id="plain"),
                tool_call("mcp__keyed__env", {"names": ["MODEL_API_KEY"]}, id="keyed"),
            ]
        )
        model.reply("ok")
        await ask(client, prompt="env")
        results = tool_results(model)
        assert results["plain"] == (
            '{"MODEL_API_KEY": null, "OPENAI_API_KEY": null, "BASE_URL": null, '
            '"MODEL": null, "MINE": "given"}'
        )
        assert results["keyed"] == '{"MODEL_API_KEY": "test-key-123"}'


@pytest.mark.skipif(
    shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) is None,
    reason="mcp-server-time is a dev dependency: uv sync installs it",
)
async def test_a_published_server_mcp_server_time(model: ScriptedModel, workspace: Path) -> None:
    program = str(Path(sys.executable).parent / "mcp-server-time")
    servers = {"time": {"type": "stdio", "command": program, "args": ["--local-timezone=UTC"]}}
    async with mcp_session(model, workspace, servers) as client:
        ready = await until_state(client, "time", "ready")
        assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(ready["tools"])
        model.reply(
            tool_calls=[tool_call("mcp__time__get_current_time", {"timezone": "UTC"}, id="now")]
        )
        model.reply("it is now")
        await ask(client, prompt="what time is it in UTC?")
        now = tool_results(model)["now"]
        assert '"timezone": "UTC"' in now and '"datetime"' in now, now
        # Bad arguments are refused against the server's own schema, before any call.
        model.reply(tool_calls=[tool_call("mcp__time__get_current_time", {}, id="bad")])
        model.reply("ok")
        await ask(client, prompt="again")
        assert tool_results(model)["bad"].startswith("Error: Invalid arguments")
        pid = (await mcp_servers(client))["time"]
        assert pid["state"] == "ready"
    assert wait_until(lambda: not pids_with(program), 5), "mcp-server-time outlived the session"
