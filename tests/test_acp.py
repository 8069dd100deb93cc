"""``agent-lsp acp``, the Agent Client Protocol face, as a client drives it: the real agent
process over stdio, the ACP SDK's client side (tests/support/acp_client.py) and the scripted
model. Written against the face's contract (what an ACP editor such as Zed relies on)."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.helpers import embedded_text_resource, resource_block, resource_link_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    McpServerStdio,
    PromptResponse,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from tests.support.acp_client import (
    CANCELLED,
    RecordingClient,
    RunningAgent,
    acp_agent,
    agent_shell_like,
    codecompanion_like,
    within,
)
from tests.support.acp_schema import problems as schema_problems
from tests.support.lsp_client import SERVER_COMMAND, agent_session, ask, server_env
from tests.support.mcp_servers import TOOLBOX
from tests.support.mcp_sessions import new_tag
from tests.support.model_server import (
    Reply,
    ScriptedModel,
    instant_responder,
    make_reply,
    tool_call,
)
from tests.support.procs import pids_with, until

MODES = ["read-only", "workspace-write", "full-access"]
PERMISSION_KINDS = {"allow_once", "allow_always", "reject_once", "reject_always"}
UNKNOWN_SESSION = "0" * 32


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    return workspace


@pytest.fixture
def env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    # A state folder of the test's own: list_sessions must not see other tests' sessions.
    return server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))


@pytest.fixture
async def agent(env: dict[str, str]) -> AsyncIterator[RunningAgent]:
    async with acp_agent(env) as running:
        await running.initialize()
        yield running


# -- helpers ----------------------------------------------------------------------------


async def prompt(agent: RunningAgent, session_id: str, *blocks: Any) -> PromptResponse:
    """``session/prompt``; a string is a text block."""
    content = [text_block(b) if isinstance(b, str) else b for b in blocks]
    return await within(agent.conn.prompt(session_id=session_id, prompt=content))


async def expect_error(code: int, request: Any) -> RequestError:
    with pytest.raises(RequestError) as caught:
        await within(request)
    assert caught.value.code == code, (caught.value, caught.value.data)
    return caught.value


def field_of(error: RequestError) -> Any:
    return error.data.get("field") if isinstance(error.data, dict) else None


def text_of(content: Any) -> str:
    """A chat message's content as text (a string, or OpenAI's list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def user_texts(body: dict[str, Any]) -> list[str]:
    return [text_of(m.get("content")) for m in body["messages"] if m["role"] == "user"]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """What the model was told each call returned, by call id."""
    return {
        m["tool_call_id"]: text_of(m["content"]) for m in body["messages"] if m["role"] == "tool"
    }


def offered_tools(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def unanswered_calls(messages: list[dict[str, Any]]) -> list[str]:
    """Ids of assistant tool calls that no tool message answers (a half turn)."""
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    return [
        call["id"]
        for m in messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
        if call["id"] not in answered
    ]


def statuses(agent: RunningAgent, session_id: str, call_id: str, since: int = 0) -> list[str]:
    return [u.status or "" for u in agent.client.tool_updates(session_id, call_id, since)]


def texts_of(update: ToolCallStart | ToolCallProgress) -> list[str]:
    return [
        item.content.text
        for item in update.content or []
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContentBlock)
    ]


def diffs_of(update: ToolCallStart | ToolCallProgress) -> list[FileEditToolCallContent]:
    return [item for item in update.content or [] if isinstance(item, FileEditToolCallContent)]


def final(agent: RunningAgent, session_id: str, call_id: str) -> ToolCallProgress:
    """A call's last update, which must end it (completed or failed)."""
    updates = agent.client.tool_updates(session_id, call_id)
    assert updates, f"no tool_call for {call_id}"
    last = updates[-1]
    assert isinstance(last, ToolCallProgress), [u.session_update for u in updates]
    assert last.status in ("completed", "failed"), [u.status for u in updates]
    return last


def real(path: Path) -> str:
    return str(path.resolve())


# -- initialize and sessions ------------------------------------------------------------


async def test_initialize_advertises_capabilities_agent_info_and_auth(
    env: dict[str, str],
) -> None:
    async with acp_agent(env) as agent:
        result = await agent.initialize(read=True, write=True)
    assert result.protocol_version == 1
    caps = result.agent_capabilities
    assert caps is not None
    assert caps.load_session is True
    assert caps.prompt_capabilities is not None
    prompts = caps.prompt_capabilities
    assert (prompts.embedded_context, prompts.image, prompts.audio) == (True, False, False)
    assert caps.mcp_capabilities is not None
    assert (caps.mcp_capabilities.http, caps.mcp_capabilities.sse) == (True, False)
    sessions = caps.session_capabilities
    assert sessions is not None
    assert sessions.list is not None and sessions.resume is not None
    assert sessions.close is not None
    assert result.agent_info is not None
    assert result.agent_info.name == "agent-lsp" and result.agent_info.version
    (method,) = result.auth_methods or []
    assert method.id == "agent-lsp-config"
    assert "agent-lsp config set-key" in (method.description or "")
    # The agent ended on stdin's EOF by itself: the SDK did not have to kill it.
    assert agent.process.returncode == 0, agent.stderr()


async def test_a_new_session_offers_the_modes_and_the_commands(
    agent: RunningAgent, workspace: Path
) -> None:
    session = await agent.new_session(workspace)
    assert session.session_id
    assert session.modes is not None
    assert session.modes.current_mode_id == "workspace-write"
    assert [mode.id for mode in session.modes.available_modes] == MODES
    assert all(mode.name for mode in session.modes.available_modes)
    assert {"compact", "checkpoints", "undo"} <= set(agent.client.commands(session.session_id))
    # Two sessions of one process are two conversations.
    other = await agent.new_session(workspace)
    assert other.session_id != session.session_id


@pytest.mark.parametrize("cwd", ["relative/folder", "/nonexistent/agent-lsp-acp-test"])
async def test_a_relative_or_missing_cwd_is_invalid_params(agent: RunningAgent, cwd: str) -> None:
    error = await expect_error(-32602, agent.conn.new_session(cwd=cwd, mcp_servers=[]))
    assert field_of(error) == "cwd", error.data


async def test_without_a_model_a_new_session_is_auth_required(
    tmp_path: Path, workspace: Path
) -> None:
    state, config = str(tmp_path / "state"), str(tmp_path / "config")
    env = server_env(None, XDG_STATE_HOME=state, XDG_CONFIG_HOME=config)
    async with acp_agent(env) as agent:
        result = await agent.initialize()
        assert [m.id for m in result.auth_methods or []] == ["agent-lsp-config"]
        error = await expect_error(
            -32000, agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        )
        assert "agent-lsp config" in str(error), (str(error), error.data)
        # Still serving: a client may show the error and go on listing sessions.
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
        assert listed.sessions == []


# -- prompts and tool calls ----------------------------------------------------------------


async def test_a_prompt_streams_thoughts_and_answer_and_reports_its_tool_call(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply(
        reasoning_content="Let me look at the file.",
        tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r1")],
    )
    answer = "The file a.txt holds two lines: alpha, then beta."
    # Paced, so a coalescing agent still has several pieces to send.
    model.reply(answer, chunk_size=4, chunk_delay=0.03)
    start = agent.client.mark()

    result = await prompt(agent, sid, "what is in a.txt?")

    assert result.stop_reason == "end_turn"
    client = agent.client
    chunks = client.of(sid, AgentMessageChunk, start)
    assert client.text(sid, since=start) == answer
    assert len(chunks) > 1, "the answer arrived in one piece, not streamed"
    assert client.text(sid, AgentThoughtChunk, start) == "Let me look at the file."

    (started, *progress) = client.tool_updates(sid, "r1", start)
    assert isinstance(started, ToolCallStart)
    assert started.status == "pending"
    assert "read_file" in started.title and "a.txt" in started.title
    assert started.kind == "read"
    assert started.raw_input == {"path": "a.txt"}
    assert [Path(loc.path).resolve() for loc in started.locations or []] == [
        (workspace / "a.txt").resolve()
    ]
    assert all(Path(loc.path).is_absolute() for loc in started.locations or [])
    assert [u.status for u in progress] == ["in_progress", "completed"]
    (output,) = texts_of(progress[-1])
    assert "alpha" in output and "beta" in output
    # What the client was shown is what the model was told.
    assert "alpha" in tool_results(model.bodies[-1])["r1"]
    # The order a client renders: thought, tool call, answer.
    kinds = client.kinds(sid, start)
    assert kinds.index("agent_thought_chunk") < kinds.index("tool_call")
    assert kinds.index("tool_call") < kinds.index("agent_message_chunk")
    assert client.problems == []


async def test_tool_kinds_and_a_failed_call(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply(
        tool_calls=[
            tool_call("glob", {"pattern": "*.txt"}, id="g"),
            tool_call("bash", {"command": "echo from-bash"}, id="b"),
            tool_call("read_file", {"path": "missing.txt"}, id="m"),
        ]
    )
    model.reply("done")
    start = agent.client.mark()
    assert (await prompt(agent, sid, "look around")).stop_reason == "end_turn"
    started = {u.tool_call_id: u for u in agent.client.of(sid, ToolCallStart, start)}
    assert {call: u.kind for call, u in started.items()} == {
        "g": "search",
        "b": "execute",
        "m": "read",
    }
    assert final(agent, sid, "g").status == "completed"
    assert "a.txt" in "".join(texts_of(final(agent, sid, "g")))
    assert final(agent, sid, "b").status == "completed"
    assert "from-bash" in "".join(texts_of(final(agent, sid, "b")))
    assert agent.client.permissions == []  # a sandboxed command is not asked about
    missing = final(agent, sid, "m")
    assert missing.status == "failed"
    assert "missing.txt" in "".join(texts_of(missing))


async def test_a_write_and_an_edit_carry_their_diffs(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    # An edit needs the file read in the conversation first (tools/filestore.py).
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})])
    model.reply(
        tool_calls=[
            tool_call("write_file", {"path": "notes/new.md", "content": "- one\n"}, id="w"),
            tool_call(
                "edit_file", {"path": "a.txt", "old_text": "beta", "new_text": "gamma"}, id="e"
            ),
        ]
    )
    model.reply("written")
    start = agent.client.mark()
    assert (await prompt(agent, sid, "write and edit")).stop_reason == "end_turn"

    assert (workspace / "notes" / "new.md").read_text() == "- one\n"
    assert (workspace / "a.txt").read_text() == "alpha\ngamma\n"
    for call_id in ("w", "e"):
        started = agent.client.tool_updates(sid, call_id, start)[0]
        assert isinstance(started, ToolCallStart) and started.kind == "edit"
    write = final(agent, sid, "w")
    assert write.status == "completed"
    (diff,) = diffs_of(write)
    assert Path(diff.path).is_absolute()
    assert Path(diff.path).resolve() == (workspace / "notes" / "new.md").resolve()
    assert diff.old_text is None and diff.new_text == "- one\n"
    edit = final(agent, sid, "e")
    (diff,) = diffs_of(edit)
    assert Path(diff.path).resolve() == (workspace / "a.txt").resolve()
    # Whole texts, before and after: what a client's diff view needs.
    assert (diff.old_text, diff.new_text) == ("alpha\nbeta\n", "alpha\ngamma\n")
    assert agent.client.writes == []  # no fs capability: the agent wrote the disk


async def test_stop_reasons_of_an_empty_and_a_cut_answer(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply("")
    assert (await prompt(agent, sid, "say nothing")).stop_reason == "end_turn"
    model.reply("This answer was cut at the tok", finish_reason="length")
    start = agent.client.mark()
    assert (await prompt(agent, sid, "say a lot")).stop_reason == "max_tokens"
    assert agent.client.text(sid, since=start) == "This answer was cut at the tok"


async def test_the_turn_limit_is_max_turn_requests(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    # A model that never stops calling tools; the default limit is 50 model requests.
    model.responder = instant_responder("glob", {"pattern": "*.txt"}, tool_turns=10_000)
    sid = (await agent.new_session(workspace)).session_id
    assert (await prompt(agent, sid, "loop forever")).stop_reason == "max_turn_requests"
    assert len(model.requests) == 50
    model.responder = None
    model.reply("stopped")
    assert (await prompt(agent, sid, "stop")).stop_reason == "end_turn"
    assert unanswered_calls(model.bodies[-1]["messages"]) == []


async def test_prompt_resources_inside_outside_and_embedded(
    agent: RunningAgent, model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("the-outside-secret\n")
    sid = (await agent.new_session(workspace)).session_id
    model.reply("seen")
    result = await prompt(
        agent,
        sid,
        "compare these",
        resource_link_block("a.txt", (workspace / "a.txt").resolve().as_uri()),
        resource_link_block("outside.txt", secret.resolve().as_uri()),
        resource_block(
            embedded_text_resource(
                (workspace / "draft.py").resolve().as_uri(), "print('unsaved draft')\n"
            )
        ),
    )
    assert result.stop_reason == "end_turn"  # the refused link does not stop the prompt
    sent = "\n".join(user_texts(model.bodies[-1]))
    assert "compare these" in sent
    assert "print('unsaved draft')" in sent  # the embedded editor context
    assert "the-outside-secret" not in str(model.bodies[-1])
    assert "outside.txt" in sent  # the model is told which link was refused
    assert "alpha" in sent  # the linked file's text, read for the model


# -- permissions -----------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["allow_once", "reject_once", CANCELLED])
async def test_an_escalated_command_is_asked_about(
    env: dict[str, str], model: ScriptedModel, workspace: Path, answer: str
) -> None:
    command = "echo escalated-ran > escalated.txt"
    arguments = {"command": command, "escalation": "network", "justification": "a test"}
    model.reply(tool_calls=[tool_call("bash", arguments, id="x")])
    model.reply("ok")
    client = RecordingClient()
    client.permission_answers.append(answer)
    async with acp_agent(env, client=client) as agent:
        await agent.initialize()
        sid = (await agent.new_session(workspace)).session_id
        start = client.mark()
        result = await prompt(agent, sid, "run it with network")

    # ACP: a client answers "cancelled" only while it cancels the turn (agent-shell does so
    # before its session/cancel): the turn ends there, with no further model request.
    assert result.stop_reason == ("cancelled" if answer == CANCELLED else "end_turn")
    assert len(model.requests) == (1 if answer == CANCELLED else 2)
    (asked,) = client.permissions
    assert asked.session_id == sid
    assert asked.tool_call.tool_call_id == "x"
    assert {o.kind for o in asked.options} == PERMISSION_KINDS
    assert all(o.option_id == o.kind and o.name for o in asked.options)
    assert statuses(agent, sid, "x", start)[0] == "pending"
    if answer == CANCELLED:
        assert "in_progress" not in statuses(agent, sid, "x", start)
        assert not (workspace / "escalated.txt").exists()
        assert "ok" not in client.text(sid, since=start)
        return
    last = final(agent, sid, "x")
    result = tool_results(model.bodies[-1])["x"]
    if answer == "allow_once":
        assert statuses(agent, sid, "x", start) == ["pending", "in_progress", "completed"]
        assert (workspace / "escalated.txt").read_text() == "escalated-ran\n"
        assert last.status == "completed"
    else:
        assert "in_progress" not in statuses(agent, sid, "x", start)
        assert not (workspace / "escalated.txt").exists()
        assert last.status == "failed"
        assert result.startswith("Error"), result
    # On the wire: the call shown (pending), then the question, then the run (if any): a
    # client draws the question under the call it already shows.
    shown = client.frame_index("session/update", "tool_call")
    asked_at = client.frame_index("session/request_permission")
    assert shown < asked_at, client.frames
    if answer == "allow_once":
        assert asked_at < client.frame_index("session/update", "tool_call_update", asked_at)


@pytest.fixture
def repository(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


async def test_a_write_to_git_configuration_is_asked_about_with_its_content(
    env: dict[str, str], model: ScriptedModel, repository: Path
) -> None:
    # Issue 33: what git obeys is asked about in every mode, the change in the question.
    workspace = repository
    arguments = {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch x\n"}
    model.reply(tool_calls=[tool_call("write_file", arguments, id="w")])
    model.reply("ok")
    client = RecordingClient()
    client.permission_answers.append("reject_once")
    async with acp_agent(env, client=client) as agent:
        await agent.initialize()
        sid = (await agent.new_session(workspace)).session_id
        assert (await prompt(agent, sid, "configure git")).stop_reason == "end_turn"
    (asked,) = client.permissions
    assert asked.tool_call.tool_call_id == "w"
    asked_text = "".join(texts_of(asked.tool_call))  # type: ignore[arg-type]
    assert asked_text.startswith("Write a file git obeys: .git/config\n"), asked_text
    assert "fsmonitor = touch x" in asked_text
    assert asked.tool_call.raw_input == arguments
    assert "fsmonitor" not in (workspace / ".git/config").read_text()


# -- cancel -----------------------------------------------------------------------------


async def test_cancel_stops_the_running_tool_and_leaves_no_half_turn(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    # The sandbox gives bash a pid namespace of its own, so the $$ it writes is not a pid
    # this test can look up; the unique duration in the command line finds both the shell
    # and its sleep from outside (/proc), and the pid file says the command has started.
    tag = f"30.{random.randrange(10**11, 10**12)}"
    command = f"echo $$ > started.pid; sleep {tag}; echo finished > finished.txt"
    sid = (await agent.new_session(workspace)).session_id
    model.reply(tool_calls=[tool_call("bash", {"command": command}, id="slow")])
    running = agent.conn.prompt(session_id=sid, prompt=[text_block("wait a while")])
    pending = asyncio.ensure_future(running)
    try:
        await until(lambda: (workspace / "started.pid").exists() and pids_with(tag), 20)
        await agent.client.wait_for(lambda: "in_progress" in statuses(agent, sid, "slow"))
        cancelled_at = time.monotonic()
        await agent.conn.cancel(session_id=sid)
        result = await within(pending, 10)
    finally:
        pending.cancel()
    assert result.stop_reason == "cancelled"
    assert time.monotonic() - cancelled_at < 5, "cancel took too long to answer"
    await until(lambda: not pids_with(tag), 3)  # no orphan shell or sleep
    assert not (workspace / "finished.txt").exists()
    asked = len(model.requests)

    model.reply("fresh start")
    start = agent.client.mark()
    assert (await prompt(agent, sid, "next question")).stop_reason == "end_turn"
    assert agent.client.text(sid, since=start) == "fresh start"
    assert len(model.requests) == asked + 1
    messages = model.bodies[-1]["messages"]
    assert unanswered_calls(messages) == []
    assert user_texts(model.bodies[-1])[-1] == "next question"


# -- the client's files -----------------------------------------------------------------


async def test_a_client_with_fs_capabilities_reads_and_writes_through_its_buffers(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    path = real(workspace / "a.txt")
    client = RecordingClient(buffers={path: "alpha\nunsaved beta\n"})
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r")])
    model.reply(
        tool_calls=[
            tool_call(
                "edit_file",
                {"path": "a.txt", "old_text": "unsaved beta", "new_text": "edited"},
                id="e",
            ),
        ]
    )
    model.reply("edited it")
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        assert (await prompt(agent, sid, "edit a.txt")).stop_reason == "end_turn"

    assert client.problems == []
    # The model read the user's unsaved text, through the client.
    seen = tool_results(model.bodies[1])["r"]
    assert "unsaved beta" in seen, seen
    assert any(r.path == path and r.session_id == sid and r.from_buffer for r in client.reads)
    # The edit went to the client, which holds it unsaved.
    assert [(w.session_id, w.path, w.content) for w in client.writes] == [
        (sid, path, "alpha\nedited\n")
    ]
    assert (workspace / "a.txt").read_text() == "alpha\nbeta\n"  # the disk is untouched
    (diff,) = diffs_of(final(agent, sid, "e"))
    assert (diff.old_text, diff.new_text) == ("alpha\nunsaved beta\n", "alpha\nedited\n")


async def test_a_new_file_is_written_through_the_client_too(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    made = real(workspace / "made.txt")
    client = RecordingClient()
    model.reply(tool_calls=[tool_call("write_file", {"path": "made.txt", "content": "new\n"})])
    model.reply("made it")
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        assert (await prompt(agent, sid, "make a file")).stop_reason == "end_turn"
    assert client.problems == []
    # The client was asked whether it holds the file (it does not), given it, and asked
    # once what it holds now (no polling).
    assert [r.path for r in client.reads] == [made, made]
    assert [(w.session_id, w.path, w.content) for w in client.writes] == [(sid, made, "new\n")]
    assert not (workspace / "made.txt").exists()


# -- conversations across processes -------------------------------------------------------


async def test_load_replays_a_conversation_the_lsp_face_saved(
    env: dict[str, str], model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    options = ("--session-dir", str(sessions))
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="old")])
    model.reply("It says alpha and beta.")
    lsp = [*SERVER_COMMAND, *options]
    async with agent_session(env, [workspace], command=lsp) as editor:
        asked = await ask(editor, prompt="what does a.txt say?")
    sid = asked["sessionId"]
    assert (sessions / f"{sid}.json").exists()

    async with acp_agent(env, options=options) as agent:
        await agent.initialize()
        loaded = await within(
            agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        )
        client = agent.client
        # The replay came before the answer to session/load.
        assert client.text(sid, UserMessageChunk) == "what does a.txt say?"
        assert client.text(sid) == "It says alpha and beta."
        (replayed,) = client.of(sid, ToolCallStart)
        assert replayed.tool_call_id == "old" and replayed.kind == "read"
        # Replayed as done: a tool_call already completed, or one and its final update.
        assert client.tool_updates(sid, "old")[-1].status == "completed"
        kinds = client.kinds(sid)
        order = ["user_message_chunk", "tool_call", "agent_message_chunk"]
        assert [kinds.index(kind) for kind in order] == sorted(kinds.index(k) for k in order)
        assert loaded is None or loaded.modes is None or loaded.modes.current_mode_id in MODES

        model.reply("Yes, alpha first.")
        start = client.mark()
        assert (await prompt(agent, sid, "which comes first?")).stop_reason == "end_turn"
        assert client.text(sid, since=start) == "Yes, alpha first."
        body = model.bodies[-1]
        assert user_texts(body) == ["what does a.txt say?", "which comes first?"]
        assert "alpha" in tool_results(body)["old"]


async def test_list_resume_and_close(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    async with acp_agent(env) as agent:
        await agent.initialize()
        sid = (await agent.new_session(workspace)).session_id
        model.reply("First answer.")
        assert (await prompt(agent, sid, "first question")).stop_reason == "end_turn"

    # A later process (same state folder) lists it, resumes it without a replay, goes on.
    async with acp_agent(env) as agent:
        await agent.initialize()
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
        (info,) = [s for s in listed.sessions if s.session_id == sid]
        assert Path(info.cwd).resolve() == workspace.resolve()
        assert info.title and "first question" in info.title
        assert info.updated_at is not None
        assert datetime.fromisoformat(info.updated_at.replace("Z", "+00:00")).tzinfo is not None
        elsewhere = await within(agent.conn.list_sessions(cwd=str(workspace.parent)))
        assert sid not in [s.session_id for s in elsewhere.sessions]

        await within(agent.conn.resume_session(cwd=str(workspace), session_id=sid))
        assert agent.client.of(sid, UserMessageChunk) == []
        assert agent.client.of(sid, AgentMessageChunk) == []
        model.reply("Second answer.")
        assert (await prompt(agent, sid, "second question")).stop_reason == "end_turn"
        assert user_texts(model.bodies[-1]) == ["first question", "second question"]

        await within(agent.conn.close_session(session_id=sid))
        error = await expect_error(-32602, agent.conn.prompt(session_id=sid, prompt=[]))
        assert field_of(error) == "sessionId", error.data
        assert agent.process.returncode is None


# -- modes ------------------------------------------------------------------------------


async def test_read_only_mode_offers_no_writes_and_bash_cannot_write(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    start = agent.client.mark()
    await within(agent.conn.set_session_mode(session_id=sid, mode_id="read-only"))
    await agent.client.wait_for(
        lambda: agent.client.current_modes(sid, start) == ["read-only"], what="mode update"
    )
    model.reply(
        tool_calls=[
            tool_call("bash", {"command": "touch touched.txt"}, id="t"),
            tool_call("write_file", {"path": "w.txt", "content": "x"}, id="w"),
        ]
    )
    model.reply("could not")
    assert (await prompt(agent, sid, "try to write")).stop_reason == "end_turn"
    tools = offered_tools(model.bodies[-2])
    assert "write_file" not in tools and "edit_file" not in tools
    assert {"read_file", "bash"} <= tools
    assert final(agent, sid, "t").status == "failed"
    assert not (workspace / "touched.txt").exists() and not (workspace / "w.txt").exists()

    await within(agent.conn.set_session_mode(session_id=sid, mode_id="workspace-write"))
    model.reply("writable again")
    await prompt(agent, sid, "and now?")
    assert {"write_file", "edit_file"} <= offered_tools(model.bodies[-1])
    await expect_error(-32602, agent.conn.set_session_mode(session_id=sid, mode_id="yolo"))
    # Not offered, yet called: refused, and the call ends there (nothing after "failed").
    assert final(agent, sid, "w").status == "failed"


async def test_full_access_asks_about_every_command_unless_allowed_always(
    agent: RunningAgent, model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-the-workspace.txt"
    touch = {"command": f"touch '{outside}'"}
    sid = (await agent.new_session(workspace)).session_id
    await within(agent.conn.set_session_mode(session_id=sid, mode_id="full-access"))
    # "Allow always" is read as the agent offers it: for this exact call, in this
    # conversation. So another command is asked about again; the same one is not.
    agent.client.permission_answers.extend(["allow_always", "reject_once"])
    model.reply(tool_calls=[tool_call("bash", touch, id="one")])
    model.reply(tool_calls=[tool_call("bash", {"command": "echo other"}, id="two")])
    model.reply(tool_calls=[tool_call("bash", touch, id="three")])
    model.reply("done")
    assert (await prompt(agent, sid, "touch outside")).stop_reason == "end_turn"
    asked = [ask.tool_call.tool_call_id for ask in agent.client.permissions]
    assert asked == ["one", "two"]
    # ACP's request has no field for the scope: the "always" labels name it.
    labels = {o.kind: o.name for o in agent.client.permissions[0].options}
    assert labels["allow_always"] == (
        "Allow always: This exact command, for this conversation (a changed command asks again)"
    )
    assert outside.exists()  # outside the sandbox's writable folders: it ran unconfined
    assert final(agent, sid, "one").status == "completed"
    assert final(agent, sid, "two").status == "failed"
    assert final(agent, sid, "three").status == "completed"


# -- the client's MCP servers -------------------------------------------------------------


async def test_a_sessions_mcp_servers_start_offer_their_tools_and_stop_with_it(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    tag = new_tag()
    server = McpServerStdio(
        name="tb", command=sys.executable, args=[str(TOOLBOX), "--tag", tag], env=[]
    )
    sid = (await agent.new_session(workspace, mcp_servers=[server])).session_id

    def respond(body: dict[str, Any]) -> Reply:
        # The server starts in the background (a prompt never waits for it): until its
        # tools are offered the model says so, then it calls the read-only echo once.
        if body["messages"][-1]["role"] == "tool":
            return make_reply("echoed")
        if "mcp__tb__echo" in offered_tools(body):
            return make_reply(tool_calls=[tool_call("mcp__tb__echo", {"text": "hi"}, id="echo")])
        return make_reply("not yet")

    model.responder = respond
    deadline = time.monotonic() + 60
    while "echoed" not in agent.client.text(sid):
        assert time.monotonic() < deadline, "the session's MCP server never offered its tools"
        await prompt(agent, sid, "echo hi")
    assert tool_results(model.bodies[-1])["echo"] == "hi"
    assert final(agent, sid, "echo").status == "completed"
    # Named for people: the tool, then its server (not mcp__tb__echo).
    assert agent.client.tool_updates(sid, "echo")[0].title == "echo — tb (MCP server) hi"
    assert pids_with(tag)  # the toolbox runs, started for this session
    await within(agent.conn.close_session(session_id=sid))
    await until(lambda: not pids_with(tag), 15)  # closed with the last session that gave it


# -- slash commands ---------------------------------------------------------------------


async def test_checkpoints_and_undo_commands(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply(tool_calls=[tool_call("write_file", {"path": "made.txt", "content": "x\n"})])
    model.reply("made it")
    await prompt(agent, sid, "make a file")
    assert (workspace / "made.txt").exists()
    asked = len(model.requests)

    start = agent.client.mark()
    assert (await prompt(agent, sid, "/checkpoints")).stop_reason == "end_turn"
    listing = agent.client.text(sid, since=start)
    # It names the checkpoint by what was asked or by what changed.
    assert "make a file" in listing or "made.txt" in listing, listing
    start = agent.client.mark()
    assert (await prompt(agent, sid, "/undo")).stop_reason == "end_turn"
    assert agent.client.text(sid, since=start)
    assert not (workspace / "made.txt").exists()
    assert len(model.requests) == asked  # commands, not prompts to the model


async def test_a_workspace_prompt_file_is_offered_and_expanded(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    commands = workspace / ".agents" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1 for bugs.\n"
    )
    sid = (await agent.new_session(workspace)).session_id
    assert {"compact", "checkpoints", "undo", "review"} <= set(agent.client.commands(sid))
    model.reply("Reviewed.")
    assert (await prompt(agent, sid, "/review app.py")).stop_reason == "end_turn"
    assert model.bodies[-1]["messages"][-1]["content"] == "Review app.py for bugs."


async def test_compact_command(agent: RunningAgent, model: ScriptedModel, workspace: Path) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})])
    model.reply("read it")
    await prompt(agent, sid, "read a.txt")
    asked = len(model.requests)
    model.reply("Summary: the user had a.txt read.")  # if the compaction asks for one
    start = agent.client.mark()
    assert (await prompt(agent, sid, "/compact")).stop_reason == "end_turn"
    assert agent.client.text(sid, since=start)
    for body in model.bodies[asked:]:  # a summary request at most, never a turn
        assert "tools" not in body
        assert "/compact" not in user_texts(body)


# -- errors -----------------------------------------------------------------------------


async def test_unknown_sessions_and_malformed_requests_leave_the_agent_up(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    conn = agent.conn
    agent.client.own_frames_checked = False  # malformed on purpose below
    for request in (
        conn.prompt(session_id=UNKNOWN_SESSION, prompt=[text_block("hi")]),
        conn.set_session_mode(session_id=UNKNOWN_SESSION, mode_id="read-only"),
        conn.load_session(cwd=str(workspace), session_id=UNKNOWN_SESSION, mcp_servers=[]),
        conn.resume_session(cwd=str(workspace), session_id=UNKNOWN_SESSION),
    ):
        error = await expect_error(-32602, request)
        assert field_of(error) == "sessionId", error.data
    await conn.cancel(session_id=UNKNOWN_SESSION)  # a notification: nothing to answer

    sid = (await agent.new_session(workspace)).session_id
    await expect_error(-32602, agent.request("session/prompt", {"sessionId": sid}))
    await expect_error(-32602, agent.request("session/new", {"cwd": 42, "mcpServers": []}))
    await expect_error(-32601, agent.request("session/frobnicate", {}))
    await agent.send_line(b"{this is not json\n")

    model.reply("still here")
    assert (await prompt(agent, sid, "are you there?")).stop_reason == "end_turn"
    assert agent.client.text(sid) == "still here"
    assert agent.process.returncode is None


async def test_a_second_prompt_while_one_runs_is_refused(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    sid = (await agent.new_session(workspace)).session_id
    model.reply("the first answer", delay=1.5)
    first = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("first")]))
    try:
        await until(lambda: len(model.requests) == 1, 20)
        with pytest.raises(RequestError) as caught:
            await within(agent.conn.prompt(session_id=sid, prompt=[text_block("second")]))
        assert caught.value.code in (-32603, -32004), caught.value
        result = await within(first)
    finally:
        first.cancel()
    assert result.stop_reason == "end_turn"
    assert agent.client.text(sid) == "the first answer"
    assert len(model.requests) == 1  # the refused prompt never reached the model


# -- clients as they really behave (issue 35) ----------------------------------------------
# Fake clients modelled on CodeCompanion.nvim 19.22 and agent-shell 0.48.1
# (tests/support/acp_client.py): each passes the whole flow, and every frame of every test
# here is checked against the ACP schema when its agent stops.


class Chat:
    """A chat view as CodeCompanion keeps one: prompts whose turn was cancelled stay in it
    unanswered and are sent again, as leading blocks, with every later prompt; after a
    load, the replayed user turns are sent with the first prompt."""

    def __init__(self, agent: RunningAgent, session_id: str) -> None:
        self.agent, self.session_id = agent, session_id
        self.unanswered: list[str] = []

    async def send(self, text: str) -> PromptResponse:
        blocks = [*self.unanswered, text]
        result = await prompt(self.agent, self.session_id, *blocks)
        if result.stop_reason == "cancelled":
            self.unanswered.append(text)
        return result

    async def cancelled(self, text: str, model: ScriptedModel) -> PromptResponse:
        """``text`` sent, and cancelled while the model is still answering it."""
        asked = len(model.requests)
        model.reply("an answer nobody waits for", delay=60)
        sending = asyncio.ensure_future(self.send(text))
        try:
            await until(lambda: len(model.requests) == asked + 1, 20)
            await self.agent.conn.cancel(session_id=self.session_id)
            return await within(sending, 15)
        finally:
            sending.cancel()


def checkpoint_of(listing: str, prompt_text: str) -> str:
    """The id of the checkpoint whose line in a /checkpoints listing names ``prompt_text``."""
    (line,) = [line for line in listing.splitlines() if prompt_text in line]
    return line.split("`")[1]


async def test_a_codecompanion_like_client_passes_the_whole_flow(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    client = codecompanion_like()
    todo = workspace / "notes" / "todo.txt"
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        chat = Chat(agent, sid)

        # A new file in a new folder: the client answers empty content for the missing
        # file, which is a new file, not one "not read yet" (finding 1).
        model.reply(
            tool_calls=[
                tool_call("write_file", {"path": "notes/todo.txt", "content": "- a\n"}, id="w")
            ]
        )
        model.reply("created")
        start = client.mark()
        assert (await chat.send("create notes/todo.txt")).stop_reason == "end_turn"
        assert final(agent, sid, "w").status == "completed", texts_of(final(agent, sid, "w"))
        assert todo.read_text() == "- a\n\n"  # the client saved it, with its final newline
        said = tool_results(model.bodies[-1])["w"]
        assert "saved it to disk" in said and "unsaved" not in said, said  # finding 3
        # A title from the first prompt, and the context's size (finding 6, usage_update).
        infos = client.of(sid, SessionInfoUpdate, start)
        assert [i.title for i in infos if i.title] == ["create notes/todo.txt"]
        (usage,) = client.of(sid, UsageUpdate, start)
        assert 0 < usage.used < usage.size
        listing = await command_text(agent, sid, "/checkpoints")
        assert "notes/todo.txt (added)" in listing, listing

        # A permission, then the first edit: what the client holds after the write (its
        # extra newline) is what was recorded, so the edit is no conflict (finding 2).
        check = {"command": "echo checked", "escalation": "network", "justification": "check"}
        client.permission_answers.append("allow_once")
        model.reply(tool_calls=[tool_call("bash", check, id="x")])
        model.reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    {"path": "notes/todo.txt", "old_text": "- a", "new_text": "- b"},
                    id="e1",
                )
            ]
        )
        model.reply("edited")
        assert (await chat.send("check, then a to b")).stop_reason == "end_turn"
        assert [a.tool_call.tool_call_id for a in client.permissions] == ["x"]
        assert final(agent, sid, "x").status == "completed"
        assert final(agent, sid, "e1").status == "completed", texts_of(final(agent, sid, "e1"))

        # A cancelled prompt; the client sends its text again with the next prompts.
        assert (await chat.cancelled("wait a while", model)).stop_reason == "cancelled"
        model.reply(
            tool_calls=[
                tool_call(
                    "edit_file",
                    {"path": "notes/todo.txt", "old_text": "- b", "new_text": "- c"},
                    id="e2",
                )
            ]
        )
        model.reply("edited again")
        assert (await chat.send("b to c")).stop_reason == "end_turn"
        assert final(agent, sid, "e2").status == "completed", texts_of(final(agent, sid, "e2"))
        assert todo.read_text().rstrip("\n") == "- c"
        # The re-sent block is not asked again (finding 5).
        assert user_texts(model.bodies[-1])[-1] == "b to c"
        assert "wait a while" not in "\n".join(user_texts(model.bodies[-1]))
        before_undo = len(model.requests)

        # /undo typed after a cancel: the last block is the command (finding 5); the
        # client's file is restored through the client, not refused (finding 2).
        writes = len(client.writes)
        start = client.mark()
        assert (await chat.send("/undo")).stop_reason == "end_turn"
        answer = client.text(sid, since=start)
        assert "Restored: notes/todo.txt" in answer and "Not restored" not in answer, answer
        assert len(model.requests) == before_undo  # a command, not a model turn
        assert [(w.path, w.content) for w in client.writes[writes:]] == [(real(todo), "- b\n\n\n")]
        assert todo.read_text().rstrip("\n") == "- b"
        assert client.problems == []

    # /resume in a new process: the conversation is listed with its title (the chat's
    # own new session, empty, is not), loaded, and the first prompt after it carries the
    # replayed user turns, which are not asked again (finding 5).
    client = codecompanion_like()
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        empty = (await agent.new_session(workspace)).session_id
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
        titles = {s.session_id: s.title for s in listed.sessions}
        assert titles.get(sid) == "create notes/todo.txt", titles
        assert empty not in titles
        await within(agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[]))
        chat = Chat(agent, sid)
        chat.unanswered = [
            c.content.text for c in client.of(sid, UserMessageChunk) if c.content.text
        ]
        assert "create notes/todo.txt" in chat.unanswered
        model.reply("It holds - b.")
        assert (await chat.send("what does todo.txt hold?")).stop_reason == "end_turn"
        sent = user_texts(model.bodies[-1])
        assert sent[-1] == "what does todo.txt hold?"
        assert sent.count("create notes/todo.txt") == 1, sent
        assert client.problems == []


async def command_text(agent: RunningAgent, session_id: str, text: str) -> str:
    start = agent.client.mark()
    assert (await prompt(agent, session_id, text)).stop_reason == "end_turn"
    return agent.client.text(session_id, since=start)


async def test_an_agent_shell_like_client_passes_the_whole_flow(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    client = agent_shell_like(workspace)
    hello = workspace / "hello.py"
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        # The unstable model choice agent-shell reads (finding 9), beside the stable option.
        (answered,) = [
            m for s, m in client.traffic if s == "agent" and "sessionId" in (m.get("result") or {})
        ]
        models = answered["result"]["models"]
        assert models["currentModelId"] == "scripted"
        assert {"modelId": "scripted", "name": "scripted"} in models["availableModels"]
        await agent.request("session/set_model", {"sessionId": sid, "modelId": "other-model"})

        model.reply(
            tool_calls=[tool_call("write_file", {"path": "hello.py", "content": "hi = 1\n"})]
        )
        model.reply("created")
        assert (await prompt(agent, sid, "create hello.py")).stop_reason == "end_turn"
        assert model.bodies[-1]["model"] == "other-model"
        assert hello.read_text() == "hi = 1\n"
        for old, new in (("hi = 1", "hi = 2"), ("hi = 2", "hi = 3")):
            model.reply(
                tool_calls=[
                    tool_call(
                        "edit_file", {"path": "hello.py", "old_text": old, "new_text": new}, id=new
                    )
                ]
            )
            model.reply("edited")
            assert (await prompt(agent, sid, f"make it {new}")).stop_reason == "end_turn"
            assert final(agent, sid, new).status == "completed"
        assert hello.read_text() == "hi = 3\n"
        assert client.transcript is not None and client.transcript.exists()

        # The user cancels at the permission request: the client answers "cancelled", then
        # sends session/cancel. The turn ends there, no further model request (finding 4).
        net = {"command": "echo net", "escalation": "network", "justification": "to fetch"}
        client.permission_answers.append(CANCELLED)
        model.reply(tool_calls=[tool_call("bash", net, id="n")])
        asked = len(model.requests)
        start = client.mark()
        assert (await prompt(agent, sid, "use the network")).stop_reason == "cancelled"
        assert len(model.requests) == asked + 1
        assert "in_progress" not in statuses(agent, sid, "n", start)
        # The request does not retitle the call; its reason is the call's content, not a
        # second line of its title (finding 10).
        (request,) = client.permissions
        assert request.tool_call.title is None
        reason = "".join(texts_of(request.tool_call))  # type: ignore[arg-type]
        assert "to fetch" in reason, reason

        # The transcript the client wrote is not the agent's change (finding 7), and undo
        # goes through the client's fs/write_text_file (finding 8).
        listing = await command_text(agent, sid, "/checkpoints")
        assert "someone else" in listing and ".agent-shell/transcripts" in listing, listing
        assert "hello.py (modified)" in listing
        writes = len(client.writes)
        answer = await command_text(agent, sid, f"/undo {checkpoint_of(listing, 'hi = 3')}")
        assert "Restored: hello.py" in answer and "Not restored" not in answer, answer
        assert [(w.path, w.content) for w in client.writes[writes:]] == [(real(hello), "hi = 2\n")]
        assert hello.read_text() == "hi = 2\n"
        assert client.transcript.read_text()  # left as the client wrote it

        await within(agent.conn.set_session_mode(session_id=sid, mode_id="read-only"))
        assert client.problems == []

    # Resumed in a new process: the mode it was left in (finding 10), a title.
    client = agent_shell_like(workspace)
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
        assert {s.session_id: s.title for s in listed.sessions}[sid] == "create hello.py"
        resumed = await within(agent.conn.resume_session(cwd=str(workspace), session_id=sid))
        assert resumed.modes is not None and resumed.modes.current_mode_id == "read-only"
        model.reply("It is 2.")
        assert (await prompt(agent, sid, "what is hi?")).stop_reason == "end_turn"
        assert "write_file" not in offered_tools(model.bodies[-1])  # read-only indeed
        assert user_texts(model.bodies[-1])[-1] == "what is hi?"
        assert client.problems == []


async def test_a_read_is_announced_before_the_client_is_asked_for_the_file(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    client = RecordingClient()
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"}, id="r")])
    model.reply("read")
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        assert (await prompt(agent, sid, "read a.txt")).stop_reason == "end_turn"
    announced = client.frame_index("session/update", "tool_call")
    assert announced < client.frame_index("fs/read_text_file"), client.frames


async def test_a_session_open_in_two_processes_is_said(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    async with acp_agent(env) as first:
        await first.initialize()
        sid = (await first.new_session(workspace)).session_id
        model.reply("hello")
        await prompt(first, sid, "hello")
        async with acp_agent(env) as second:
            await second.initialize()
            await within(second.conn.resume_session(cwd=str(workspace), session_id=sid))
            await second.client.wait_for(
                lambda: "open in agent-lsp process" in second.client.text(sid),
                what="the warning that the session is open elsewhere",
            )
            assert str(first.process.pid) in second.client.text(sid)
        assert "open in" not in first.client.text(sid)


async def test_authenticate_without_an_endpoint_names_what_to_set(
    tmp_path: Path, workspace: Path
) -> None:
    state, config = str(tmp_path / "state"), str(tmp_path / "config")
    env = server_env(None, XDG_STATE_HOME=state, XDG_CONFIG_HOME=config)
    async with acp_agent(env) as agent:
        await agent.initialize()
        error = await expect_error(-32000, agent.conn.authenticate(method_id="agent-lsp-config"))
    message = str(error)
    assert not message.startswith("In VS Code") and "VS Code" not in message, message
    assert "agent-lsp config set" in message
    assert isinstance(error.data, dict), error.data
    assert error.data["authMethods"] == ["agent-lsp-config"]
    assert "agent-lsp config set-key" in error.data["run"]
    assert error.data["missing"] and "VS Code" not in error.data["missing"]
    assert error.data["action"] == "setApiKey"


def test_the_schema_check_finds_a_frame_acp_does_not_allow() -> None:
    bad = {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": -1, "size": 1}}
    good = {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 9}}
    frame = {"jsonrpc": "2.0", "method": "session/update"}
    assert schema_problems([("agent", {**frame, "params": good})]) == []
    assert schema_problems([("agent", {**frame, "params": bad})])
    answered = [
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {}}),
        ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}),
    ]
    assert any("stopReason" in p or "done" in p for p in schema_problems(answered))


async def test_edits_through_a_client_that_adds_a_newline_and_saves(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    # Findings 2 and 3: what the client holds after its write is recorded (one read back,
    # no polling), so the next edit is no conflict; the result says the client saved it.
    client = RecordingClient(reads_disk=True, saves=True, adds_newline=True)
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})])
    for i, (old, new) in enumerate((("alpha", "one"), ("one", "two"))):
        edit = {"path": "a.txt", "old_text": old, "new_text": new}
        model.reply(tool_calls=[tool_call("edit_file", edit, id=f"e{i}")])
    model.reply("edited twice")
    async with acp_agent(env, client=client) as agent:
        await agent.initialize(read=True, write=True)
        sid = (await agent.new_session(workspace)).session_id
        assert (await prompt(agent, sid, "edit a.txt twice")).stop_reason == "end_turn"
    for call in ("e0", "e1"):
        assert final(agent, sid, call).status == "completed", texts_of(final(agent, sid, call))
        said = tool_results(model.bodies[-1])[call]
        assert "saved it to disk" in said and "unsaved" not in said, said
    assert (workspace / "a.txt").read_text() == "two\nbeta\n\n\n"
    # Per edit: the text for the edit, the compare-and-swap read, one read back.
    assert len(client.reads) == 1 + 2 * 3, [r.path for r in client.reads]


async def test_resent_prompt_blocks_are_not_asked_again_and_a_command_is_the_last_block(
    agent: RunningAgent, model: ScriptedModel, workspace: Path
) -> None:
    # Finding 5, as CodeCompanion sends them: earlier prompts again as leading blocks.
    sid = (await agent.new_session(workspace)).session_id
    model.reply("first")
    await prompt(agent, sid, "first question")
    model.reply("second")
    await prompt(agent, sid, "first question", "second question")
    assert user_texts(model.bodies[-1]) == ["first question", "second question"]
    asked = len(model.requests)
    listing = await command_text(agent, sid, "/checkpoints")
    assert len(model.requests) == asked
    start = agent.client.mark()
    result = await prompt(agent, sid, "first question", "second question", "/checkpoints")
    assert result.stop_reason == "end_turn"
    assert len(model.requests) == asked  # the command ran; the model was not asked
    assert agent.client.text(sid, since=start) == listing
    # The same text alone, typed again on purpose, is asked again.
    model.reply("again")
    await prompt(agent, sid, "first question")
    assert user_texts(model.bodies[-1])[-1] == "first question"


async def test_titles_and_the_mode_come_back(
    env: dict[str, str], model: ScriptedModel, workspace: Path
) -> None:
    # Finding 6 and the mode of finding 10.
    async with acp_agent(env) as agent:
        await agent.initialize()
        sid = (await agent.new_session(workspace)).session_id
        await within(agent.conn.set_session_mode(session_id=sid, mode_id="read-only"))
        model.reply("answered")
        start = agent.client.mark()
        await prompt(agent, sid, "a question worth a title")
        titles = [u.title for u in agent.client.of(sid, SessionInfoUpdate, start)]
        assert "a question worth a title" in titles
    async with acp_agent(env) as agent:
        await agent.initialize()
        empty = (await agent.new_session(workspace)).session_id
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
        titles = {s.session_id: s.title for s in listed.sessions}
        assert titles == {sid: "a question worth a title"}, (titles, empty)
        loaded = await within(
            agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        )
        assert loaded is not None and loaded.modes is not None
        assert loaded.modes.current_mode_id == "read-only"
