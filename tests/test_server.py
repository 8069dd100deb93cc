"""The real server process over stdio, driven by pytest-lsp, against a scripted model."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import AgentTestClient, RunningAsk, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import pids_with, unique_tag, until, wait_until


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    return workspace


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        yield client


async def expect_error(code: int, request: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await request
    assert caught.value.code == code, caught.value.message
    return caught.value


# -- initialize and listTools ----------------------------------------------------------


async def test_initialize_advertises_the_agent_extension(client: AgentTestClient) -> None:
    result = client.initialize_result  # type: ignore[attr-defined]
    assert result.server_info.name == "agent-lsp"
    agent = result.capabilities.experimental["agent"]
    assert agent["version"] == 1
    assert "agent/ask" in agent["requests"]
    assert agent["notifications"] == [
        "agent/toolActivity",
        "agent/askProgress",
        "agent/compaction",
        "agent/answerDelta",
    ]
    for method in ("agent/newSession", "agent/sessions", "agent/toolOutput"):
        assert method in agent["requests"]
    assert agent["askContext"] is True
    assert agent["model"] == "scripted"  # the configured model, before any ask


async def test_list_tools_is_mcp_shaped(client: AgentTestClient) -> None:
    result = await client.protocol.send_request_async("agent/listTools", {})
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert list(tools) == ["bash", "read_file", "write_file", "edit_file", "glob"]
    for tool in tools.values():
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"
        assert set(tool["annotations"]) >= {"readOnlyHint", "destructiveHint"}
    assert tools["read_file"]["annotations"]["readOnlyHint"] is True
    assert tools["bash"]["annotations"]["readOnlyHint"] is False
    assert tools["bash"]["annotations"]["destructiveHint"] is True


async def test_the_server_answers_while_its_first_ask_waits_for_the_warm_up(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    # Right after `initialized` the warm-up is still importing the model SDK (about a
    # second); the first ask waits for it without blocking the event loop.
    model.reply("hello")
    started = time.monotonic()
    pending = asyncio.ensure_future(ask(client, prompt="hi"))
    latencies: list[float] = []
    while not pending.done():
        sent = time.monotonic()
        listed = await client.protocol.send_request_async("agent/listTools", {})
        latencies.append(time.monotonic() - sent)
        assert listed["tools"]
    assert (await pending)["answer"] == "hello"
    waited = time.monotonic() - started
    # Generous: a blocked loop would hold one listTools for about the whole wait.
    assert max(latencies) < max(0.25, waited / 2), (latencies, waited)
    assert len(latencies) > 1


async def test_settings_narrow_the_tools(model: ScriptedModel, workspace: Path) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], settings={"enabledTools": ["read_file", "glob"]}
    ) as client:
        result = await client.protocol.send_request_async("agent/listTools", None)
        assert [t["name"] for t in result["tools"]] == ["read_file", "glob"]
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentLsp": {"enabledTools": ["bash"]}})
        )
        result = await client.protocol.send_request_async("agent/listTools", None)
        assert [t["name"] for t in result["tools"]] == ["bash"]


# -- asks ------------------------------------------------------------------------------


async def test_ask_reads_writes_and_edits_with_activity_and_progress(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"}, id="c1")])
    model.reply(
        tool_calls=[
            tool_call("write_file", {"path": "notes/todo.md", "content": "- test\n"}, id="c2"),
            tool_call(
                "edit_file",
                {"path": "app.py", "old_text": "return 1", "new_text": "return 2"},
                id="c3",
            ),
        ]
    )
    model.reply("Done: **app.py** now returns 2.")
    token = "ask-token-1"
    client.progress_reports.setdefault(token, [])

    result = await ask(client, prompt="make main return 2", workDoneToken=token)

    assert result["answer"] == "Done: **app.py** now returns 2."
    assert result["stopReason"] == "end_turn"
    assert (workspace / "app.py").read_text() == "def main():\n    return 2\n"
    assert (workspace / "notes" / "todo.md").read_text() == "- test\n"
    assert [c["id"] for c in result["toolCalls"]] == ["c1", "c2", "c3"]
    assert all(c["ok"] for c in result["toolCalls"])
    assert result["usage"]["total_tokens"] > 0
    assert result["model"] == "scripted"  # the footer under the answer names it

    # Activity: a start and an end for each call, in order, tagged with the session.
    statuses = [(a["callId"], a["status"]) for a in client.activity]
    assert statuses == [
        ("c1", "started"),
        ("c1", "completed"),
        ("c2", "started"),
        ("c2", "completed"),
        ("c3", "started"),
        ("c3", "completed"),
    ]
    assert {a["sessionId"] for a in client.activity} == {result["sessionId"]}
    assert "return 1" in client.activity[1]["output"]
    assert client.activity[1]["durationMs"] >= 0

    kinds = [type(v).__name__ for v in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin"
    assert kinds[-1] == "WorkDoneProgressEnd"
    messages = [getattr(v, "message", "") for v in client.progress_reports[token]]
    assert "turn 1: read_file app.py" in messages
    assert "turn 2: edit_file app.py" in messages

    # The model saw the workspace-specific system prompt and the tool result.
    first = model.bodies[0]
    assert str(workspace.resolve()) in first["messages"][0]["content"]
    assert first["tools"][0]["function"]["name"] == "bash"


async def test_follow_up_sees_earlier_tool_output(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("It returns 1.")
    first = await ask(client, prompt="what does main return?")
    model.reply("Still 1, as the file showed.")
    second = await ask(client, prompt="are you sure?", sessionId=first["sessionId"])
    assert second["sessionId"] == first["sessionId"]
    sent = model.bodies[-1]["messages"]
    tool_messages = [m for m in sent if m["role"] == "tool"]
    assert len(tool_messages) == 1
    assert "return 1" in tool_messages[0]["content"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "what does main return?",
        "are you sure?",
    ]
    # A new ask without a session starts over.
    model.reply("fresh")
    third = await ask(client, prompt="hello")
    assert third["sessionId"] != first["sessionId"]
    assert len(model.bodies[-1]["messages"]) == 2
    # endSession drops it.
    ended = await client.protocol.send_request_async(
        "agent/endSession", {"sessionId": first["sessionId"]}
    )
    assert ended == {"ended": True}
    await expect_error(-32602, ask(client, prompt="again", sessionId=first["sessionId"]))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": "   "}, "prompt"),
        ({"prompt": 42}, "prompt"),
        ({"prompt": "hi", "sessionId": "nope"}, "sessionId"),
        ({"prompt": "hi", "sessionId": 7}, "sessionId"),
        ({"prompt": "hi", "workspaceFolder": "file:///definitely/not/open"}, "workspaceFolder"),
        ({"prompt": "hi", "workDoneToken": {"a": 1}}, "workDoneToken"),
        ({"prompt": "hi", "workDoneToken": True}, "workDoneToken"),
        ({"prompt": "hi", "workspaceFolder": 3}, "workspaceFolder"),
    ],
)
async def test_invalid_params(client: AgentTestClient, params: dict[str, Any], field: str) -> None:
    error = await expect_error(-32602, client.protocol.send_request_async("agent/ask", params))
    assert field in error.message
    assert error.data == {"field": field}


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("agent/endSession", {}, "sessionId"),
        ("agent/endSession", {"sessionId": 3}, "sessionId"),
        ("agent/listTools", {"workspaceFolder": ["x"]}, "workspaceFolder"),
        ("agent/newSession", {"workspaceFolder": "file:///not/open"}, "workspaceFolder"),
        ("agent/sessionHistory", {"sessionId": "0" * 32}, "sessionId"),
        ("agent/toolOutput", {"sessionId": "0" * 32}, "callId"),
        ("agent/sessions", "folder", "params"),
        ("agent/ask", {"prompt": "hi", "disabledTools": ["bash", 3]}, "disabledTools[1]"),
        ("agent/ask", {"prompt": "hi", "disabledTools": [""]}, "disabledTools"),
    ],
)
async def test_every_request_refuses_malformed_params_the_same_way(
    client: AgentTestClient, method: str, params: Any, field: str
) -> None:
    error = await expect_error(-32602, client.protocol.send_request_async(method, params))
    assert error.data == {"field": field}


async def test_a_new_session_pins_its_folder_and_lists_with_its_history(
    model: ScriptedModel, tmp_path: Path
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        folder.mkdir()
    (second / "b.txt").write_text("bravo\n")
    async with agent_session(server_env(model.base_url), [first, second]) as client:
        created = await client.protocol.send_request_async(
            "agent/newSession", {"workspaceFolder": second.as_uri()}
        )
        assert created["workspaceFolder"] == second.resolve().as_uri()
        session = created["sessionId"]
        model.reply(tool_calls=[tool_call("read_file", {"path": "b.txt"}, id="call_b")])
        model.reply("It says bravo.")
        # No folder named: the session's own folder (the second), not the first.
        result = await ask(client, prompt="read b.txt", sessionId=session)
        assert result["answer"] == "It says bravo." and result["sessionId"] == session

        listed = await client.protocol.send_request_async(
            "agent/sessions", {"workspaceFolder": second.as_uri()}
        )
        assert [(s["sessionId"], s["title"], s["turns"]) for s in listed["sessions"]] == [
            (session, "read b.txt", 1)
        ]
        elsewhere = await client.protocol.send_request_async(
            "agent/sessions", {"workspaceFolder": first.as_uri()}
        )
        assert elsewhere["sessions"] == []

        history = await client.protocol.send_request_async(
            "agent/sessionHistory", {"sessionId": session}
        )
        assert [(e["role"], e["content"]) for e in history["entries"]] == [
            ("user", "read b.txt"),
            ("assistant", ""),
            ("assistant", "It says bravo."),
        ]
        (call,) = history["entries"][1]["toolCalls"]
        assert (call["id"], call["name"], call["ok"]) == ("call_b", "read_file", True)
        assert call["output"] == "bravo"
        assert call["title"] == "read_file b.txt"  # the server's words, as toolActivity's
        assert (call["subject"], call["outputHead"]) == ("b.txt", "bravo")

        output = await client.protocol.send_request_async(
            "agent/toolOutput", {"sessionId": session, "callId": "call_b"}
        )
        assert output == {
            "callId": "call_b",
            "name": "read_file",
            "arguments": '{"path": "b.txt"}',
            "ok": True,
            "output": "bravo",
            "truncated": False,
            "title": "read_file b.txt",
        }


async def test_progress_is_structured(client: AgentTestClient, model: ScriptedModel) -> None:
    model.reply(tool_calls=[tool_call("glob", {"pattern": "*.py"})])
    model.reply("One file.")
    result = await ask(client, prompt="list python files")
    await until(lambda: any(p["phase"] == "done" for p in client.progress))
    phases = [(p["turn"], p["phase"]) for p in client.progress]
    assert phases == [(1, "model"), (1, "tools"), (2, "model"), (2, "writing"), (2, "done")]
    assert {p["sessionId"] for p in client.progress} == {result["sessionId"]}
    # "writing" goes out before the turn's first text.
    order = [
        "delta" if method == "agent/answerDelta" else params.get("phase")
        for method, params in client.notifications
        if method in ("agent/answerDelta", "agent/askProgress")
    ]
    assert order[order.index("writing") + 1] == "delta"
    assert "delta" not in order[: order.index("writing")]
    writing = next(p for p in client.progress if p["phase"] == "writing")
    assert writing["message"] == "turn 2: the model is writing"


async def test_params_must_be_an_object(client: AgentTestClient) -> None:
    await expect_error(-32602, client.protocol.send_request_async("agent/ask", ["hi"]))


async def test_tool_errors_go_back_to_the_model(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply(
        tool_calls=[
            tool_call("read_file", {"path": "../outside.txt"}, id="e1"),
            tool_call("no_such_tool", {}, id="e2"),
            tool_call("read_file", "{not json", id="e3"),
        ]
    )
    model.reply("I could not do that.")
    result = await ask(client, prompt="read outside")
    assert [c["ok"] for c in result["toolCalls"]] == [False, False, False]
    failed = [a for a in client.activity if a["status"] == "failed"]
    assert [a["callId"] for a in failed] == ["e1", "e2", "e3"]
    assert failed[1]["output"] == "Error: Unknown tool: no_such_tool"
    # The result's rows carry the same words as the activity (a client that missed it).
    unknown = result["toolCalls"][1]
    assert (unknown["subject"], unknown["outputHead"]) == ("{}", failed[1]["outputHead"])
    assert failed[0]["subject"] == "../outside.txt"
    contents = [m["content"] for m in model.bodies[1]["messages"] if m["role"] == "tool"]
    assert contents[0].startswith("Error:")


async def test_cancel_kills_the_running_bash_tree(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    tag = unique_tag()
    marker = workspace / "marker"
    command = f"(sleep 1.5; touch {marker}) & sleep 60 # {tag}"
    model.reply(tool_calls=[tool_call("bash", {"command": command}, id="long")])
    model.reply("after cancel")

    request = RunningAsk(client, {"prompt": "run the long thing"})
    assert await asyncio.to_thread(wait_until, lambda: len(pids_with(tag)) > 0, 10)
    started = time.monotonic()
    request.cancel()
    await expect_error(-32800, request.result)
    assert await asyncio.to_thread(wait_until, lambda: not pids_with(tag), 3)
    assert time.monotonic() - started < 3
    # Every process of the call is gone (the subshell that would touch it included).
    assert not marker.exists()
    # The server keeps serving.
    result = await client.protocol.send_request_async("agent/listTools", {})
    assert len(result["tools"]) == 5


async def test_cancel_keeps_the_session_usable(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("first answer")
    first = await ask(client, prompt="warm up")
    assert first["answer"] == "first answer"
    model.reply(tool_calls=[tool_call("bash", {"command": "sleep 30"}, id="s2")])
    request = RunningAsk(client, {"prompt": "sleep", "sessionId": first["sessionId"]})
    await until(lambda: any(a["callId"] == "s2" for a in client.activity))
    request.cancel()
    await expect_error(-32800, request.result)
    model.reply("continuing")
    again = await ask(client, prompt="go on", sessionId=first["sessionId"])
    assert again["answer"] == "continuing"
    sent = model.bodies[-1]["messages"]
    cancelled = [m for m in sent if m.get("tool_call_id") == "s2"]
    assert cancelled == [{"role": "tool", "tool_call_id": "s2", "content": "Error: cancelled"}]


async def test_model_http_error(model: ScriptedModel, workspace: Path) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], settings={"maxRetries": 0}
    ) as client:
        model.reply(status=500, error_message="upstream exploded")
        error = await expect_error(-32002, ask(client, prompt="hi"))
    assert "500" in error.message
    assert "upstream exploded" in error.message
    assert "test-key-123" not in error.message


async def test_unconfigured_model(workspace: Path) -> None:
    async with agent_session(server_env(None), [workspace]) as client:
        error = await expect_error(-32001, ask(client, prompt="hi"))
        assert "MODEL_API_KEY" in error.message
        # listTools works without a model.
        result = await client.protocol.send_request_async("agent/listTools", {})
        assert len(result["tools"]) == 5


async def test_no_workspace_folder(model: ScriptedModel) -> None:
    async with agent_session(server_env(model.base_url), []) as client:
        error = await expect_error(-32003, ask(client, prompt="hi"))
        assert "folder" in error.message


async def test_max_turns(model: ScriptedModel, workspace: Path) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], settings={"maxTurns": 2}
    ) as client:
        for _ in range(2):
            model.reply("thinking...", tool_calls=[tool_call("glob", {"pattern": "*.py"})])
        result = await ask(client, prompt="loop forever")
        assert result["stopReason"] == "max_turns"
        assert len(model.bodies) == 2
        assert len(result["toolCalls"]) == 2


async def test_concurrent_asks_overlap_and_list_tools_stays_responsive(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("warm")
    await ask(client, prompt="warm up")  # the first ask pays for importing the SDK
    for _ in range(2):
        model.reply(tool_calls=[tool_call("bash", {"command": "sleep 1"})])
    for _ in range(2):
        model.reply("done")
    started = time.monotonic()
    asks = asyncio.gather(ask(client, prompt="one"), ask(client, prompt="two"))
    await until(lambda: sum(a["status"] == "started" for a in client.activity) == 2)
    probe = time.monotonic()
    await client.protocol.send_request_async("agent/listTools", {})
    assert time.monotonic() - probe < 0.5  # answered while both bash calls sleep
    first, second = await asks
    assert first["sessionId"] != second["sessionId"]
    assert time.monotonic() - started < 1.9  # two 1 s tools ran side by side


async def test_work_done_progress_cancel_cancels_the_ask(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    tag = unique_tag()
    # `; : tag` keeps bash alive (and tagged) instead of exec-ing sleep.
    model.reply(tool_calls=[tool_call("bash", {"command": f"sleep 30; : {tag}"})])
    token = "progress-cancel"
    client.progress_reports.setdefault(token, [])
    request = RunningAsk(client, {"prompt": "sleep", "workDoneToken": token})
    assert await asyncio.to_thread(wait_until, lambda: len(pids_with(tag)) > 0, 10)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await expect_error(-32800, asyncio.wait_for(request.result, 5))
    assert not pids_with(tag)


async def test_server_created_progress(model: ScriptedModel, workspace: Path) -> None:
    capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True)
    )
    async with agent_session(
        server_env(model.base_url), [workspace], capabilities=capabilities
    ) as client:
        model.reply("hi")
        await ask(client, prompt="hello")
        (_token, reports), *rest = client.progress_reports.items()
        assert not rest
        assert type(reports[0]).__name__ == "WorkDoneProgressBegin"
        assert type(reports[-1]).__name__ == "WorkDoneProgressEnd"


async def test_workspace_folder_changes(
    client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("in other")
    uri = other.as_uri()
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=uri, name="other")], removed=[]
            )
        )
    )
    model.reply(tool_calls=[tool_call("read_file", {"path": "x.txt"})])
    model.reply("ok")
    result = await ask(client, prompt="read x", workspaceFolder=uri)
    assert "in other" in result["toolCalls"][0]["output"]
    assert json.loads(result["toolCalls"][0]["arguments"]) == {"path": "x.txt"}


async def test_a_cancelled_first_ask_leaves_a_usable_session(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    tag = unique_tag()
    model.reply(tool_calls=[tool_call("bash", {"command": f"sleep 30; : {tag}"}, id="b1")])
    request = RunningAsk(client, {"prompt": "start something long"})
    assert await asyncio.to_thread(wait_until, lambda: len(pids_with(tag)) > 0, 10)
    request.cancel()
    await expect_error(-32800, request.result)
    session_id = client.activity[0]["sessionId"]  # the editor learned it from the activity
    model.reply("picking up where we left off")
    result = await ask(client, prompt="continue", sessionId=session_id)
    assert result["sessionId"] == session_id
    sent = model.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["content"] == "Error: cancelled"


async def test_a_failed_first_ask_leaves_no_session(model: ScriptedModel, workspace: Path) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], settings={"maxRetries": 0}
    ) as client:
        model.reply(status=503, error_message="overloaded")
        await expect_error(-32002, ask(client, prompt="hi"))
        model.reply("fine now")
        result = await ask(client, prompt="hi again")
        assert [m["role"] for m in model.bodies[-1]["messages"]] == ["system", "user"]
        assert result["answer"] == "fine now"


async def test_bad_settings_are_reported_and_leave_the_tools_alone(
    client: AgentTestClient,
) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"agentLsp": {"enabledTools": ["bash", "rm_rf"], "maxTurns": "many"}}
        )
    )
    result = await client.protocol.send_request_async("agent/listTools", {})
    assert len(result["tools"]) == 5
    await until(
        lambda: any("Unknown tool(s) in enabledTools: rm_rf" in m.message for m in client.messages)
    )
    assert any("maxTurns" in m.message for m in client.messages)


async def test_settings_are_pulled_when_the_client_sends_none(
    model: ScriptedModel, workspace: Path
) -> None:
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True)
    )
    async with agent_session(
        server_env(model.base_url), [workspace], capabilities=capabilities
    ) as client:
        client.set_configuration({"enabledTools": ["glob"]}, section="agentLsp")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        deadline = time.monotonic() + 10
        names: list[str] = []
        while names != ["glob"] and time.monotonic() < deadline:
            result = await client.protocol.send_request_async("agent/listTools", {})
            names = [t["name"] for t in result["tools"]]
        assert names == ["glob"]


async def test_a_conversation_survives_a_server_restart(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    # A window reload restarts the server; the editor reopens and continues the chat.
    env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"}, id="call_app")])
    model.reply("main returns 1.")
    async with agent_session(env, [workspace]) as first:
        result = await ask(first, prompt="what does main return?")
    saved = list((tmp_path / "state" / "agent-lsp" / "sessions").iterdir())
    assert saved and all(f.stat().st_mode & 0o077 == 0 for f in saved)

    async with agent_session(env, [workspace]) as second:
        listed = await second.protocol.send_request_async("agent/sessions", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [result["sessionId"]]
        history = await second.protocol.send_request_async(
            "agent/sessionHistory", {"sessionId": result["sessionId"]}
        )
        assert history["entries"][-1]["content"] == "main returns 1."
        model.reply("Still 1.")
        again = await ask(second, prompt="and now?", sessionId=result["sessionId"])
        assert again["answer"] == "Still 1."
        sent = model.bodies[-1]["messages"]
        assert any(m["role"] == "tool" and "return 1" in m["content"] for m in sent)
        ended = await second.protocol.send_request_async(
            "agent/endSession", {"sessionId": result["sessionId"]}
        )
        assert ended == {"ended": True}
        assert not list((tmp_path / "state" / "agent-lsp" / "sessions").glob("*.json"))
