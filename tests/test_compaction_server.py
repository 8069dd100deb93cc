"""Long conversations through the real server process (pytest-lsp over stdio) against
a scripted model with a context window of its own: it answers OpenAI's exact 400
``context_length_exceeded`` to a request over its limit, refuses unpaired tool calls
and out-of-order roles, and records every request it refused."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from server.agent.archive import ACKNOWLEDGEMENT, SUMMARY_PREFIX, Archive
from server.agent.compaction import NOTE_PREFIX
from server.conversations.conversations import Conversation
from server.conversations.session_files import SessionFiles
from server.model.context_limits import DEFAULT_CONTEXT_WINDOW
from tests.support.lsp_client import AgentTestClient, agent_session, ask, run_cli, server_env
from tests.support.model_server import (
    Reply,
    ScriptedModel,
    instant_responder,
    make_reply,
    prompt_tokens,
)

WINDOW = 32_000
TOOL_TURNS = 5  # per ask
ASKS = 60  # 300 tool turns in all
FILE = "".join(f"{n:05d}: a line of the build log, about as long as most\n" for n in range(400))
assert len(FILE) >= 20_480  # each read returns 20 KB


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "build.log").write_text(FILE)
    return workspace


def limited_model(context_limit: int = WINDOW) -> ScriptedModel:
    """A model of ``context_limit`` tokens that reads build.log TOOL_TURNS times per ask; its
    summaries (requests offering no tools) say what happened."""
    reader = instant_responder(
        "read_file", {"path": "build.log"}, tool_turns=TOOL_TURNS, answer="The log is fine."
    )

    def respond(body: dict[str, Any]) -> Reply | None:
        if not body.get("tools"):
            return make_reply("SUMMARY: the user keeps asking about build.log; it is fine.")
        return reader(body)

    return ScriptedModel(respond, context_limit=context_limit, alternation=True)


@pytest.fixture
async def server(
    workspace: Path, tmp_path: Path
) -> AsyncIterator[tuple[AgentTestClient, ScriptedModel]]:
    with limited_model() as model:
        env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))
        async with agent_session(env, [workspace], settings={"contextWindow": WINDOW}) as client:
            yield client, model


async def test_three_hundred_turns_of_20_kb_outputs_never_dead_end(
    server: tuple[AgentTestClient, ScriptedModel],
) -> None:
    client, model = server
    session = None
    results = []
    for number in range(1, ASKS + 1):
        params: dict[str, Any] = {"prompt": f"ask {number}: check the build log"}
        if session:
            params["sessionId"] = session
        result = await ask(client, **params)
        session = result["sessionId"]
        results.append(result)

    assert all(r["answer"] == "The log is fine." for r in results)
    assert sum(len(r["toolCalls"]) for r in results) == ASKS * TOOL_TURNS
    assert model.refused == []  # none over the limit, unpaired, or out of role order
    chats = [b for b in model.bodies if b.get("tools")]
    assert len(chats) == ASKS * (TOOL_TURNS + 1)
    assert max(prompt_tokens(b) for b in chats) <= WINDOW
    # Each ask reports how full the window is.
    for result in results:
        assert result["usage"]["contextWindow"] == WINDOW
        assert 0 < result["usage"]["contextTokens"] <= WINDOW

    # Both steps happened, and clients heard of each compaction.
    assert any(
        m["content"].startswith(NOTE_PREFIX)
        for m in chats[-1]["messages"][1:]
        if m["role"] == "tool"
    )
    summaries = [b for b in model.bodies if not b.get("tools")]
    assert summaries
    assert client.compactions
    assert {c["sessionId"] for c in client.compactions} == {session}
    assert all(c["tokensAfter"] < c["tokensBefore"] for c in client.compactions)
    assert all(c["contextWindow"] == WINDOW for c in client.compactions)
    assert any(p["phase"] == "compacting" for p in client.progress)

    # A follow-up ask in the same session works, and sees the summary.
    model.responder = lambda body: make_reply("It was fine every time.")
    follow_up = await ask(client, prompt="was it ever broken?", sessionId=session)
    assert follow_up["answer"] == "It was fine every time."
    sent = model.bodies[-1]["messages"]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    assert "SUMMARY: the user keeps asking about build.log" in sent[1]["content"]
    assert sent[2] == {"role": "assistant", "content": ACKNOWLEDGEMENT}
    assert sent[-1] == {"role": "user", "content": "was it ever broken?"}

    # The history still shows every ask; elided outputs are served whole.
    history = await client.protocol.send_request_async(
        "agent/sessionHistory", {"sessionId": session}
    )
    prompts = [e["content"] for e in history["entries"] if e["role"] == "user"]
    assert prompts == [f"ask {n}: check the build log" for n in range(1, ASKS + 1)] + [
        "was it ever broken?"
    ]
    # (the archive is bounded: the most recently elided outputs are those it keeps)
    *_, elided = (
        m["tool_call_id"]
        for m in chats[-1]["messages"]
        if m["role"] == "tool" and m["content"].startswith(NOTE_PREFIX)
    )
    output = await client.protocol.send_request_async(
        "agent/toolOutput", {"sessionId": session, "callId": elided}
    )
    assert FILE.splitlines()[0] in output["output"] and len(output["output"]) > 20_000
    assert output["ok"] is True


async def test_compact_on_request_reports_tokens_and_keeps_outputs_retrievable(
    server: tuple[AgentTestClient, ScriptedModel],
) -> None:
    client, model = server
    first = await ask(client, prompt="ask 1: check the build log")
    session = first["sessionId"]
    await ask(client, prompt="ask 2: and again", sessionId=session)
    calls = [c["id"] for c in first["toolCalls"]]
    before_requests = len(model.bodies)

    result = await client.protocol.send_request_async("agent/compact", {"sessionId": session})

    assert result["tokensBefore"] > result["tokensAfter"] > 0
    assert result["contextWindow"] == WINDOW
    assert result["elidedOutputs"] >= 1  # (the asks themselves elided most already)
    assert result["summarizedMessages"] > 0
    (summary_request,) = model.bodies[before_requests:]
    assert "tools" not in summary_request
    assert "User: ask 1: check the build log" in summary_request["messages"][1]["content"]
    # The next ask starts from the compacted history.
    await ask(client, prompt="ask 3: once more", sessionId=session)
    sent = model.bodies[before_requests + 1]["messages"]
    assert sent[1]["content"].startswith(SUMMARY_PREFIX)
    assert prompt_tokens(model.bodies[before_requests + 1]) < result["tokensBefore"]
    # "Open full output" of a call from before the compaction still has all of it.
    output = await client.protocol.send_request_async(
        "agent/toolOutput", {"sessionId": session, "callId": calls[0]}
    )
    assert output["output"].count("a line of the build log, about") == 400
    history = await client.protocol.send_request_async(
        "agent/sessionHistory", {"sessionId": session}
    )
    assert [e["content"] for e in history["entries"] if e["role"] == "user"] == [
        "ask 1: check the build log",
        "ask 2: and again",
        "ask 3: once more",
    ]
    sessions = await client.protocol.send_request_async("agent/sessions", {})
    (listed,) = [s for s in sessions["sessions"] if s["sessionId"] == session]
    assert listed["title"] == "ask 1: check the build log" and listed["turns"] == 3

    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("agent/compact", {"sessionId": "0" * 32})
    assert caught.value.code == -32602 and caught.value.data == {"field": "sessionId"}


async def test_a_request_larger_than_the_window_fails_with_32005_and_the_session_goes_on(
    server: tuple[AgentTestClient, ScriptedModel],
) -> None:
    client, model = server
    first = await ask(client, prompt="ask 1: check the build log")
    session = first["sessionId"]
    huge = "Please review this paste:\n" + "x = 1\n" * 40_000  # ~60,000 tokens

    with pytest.raises(JsonRpcException) as caught:
        await ask(client, prompt=huge, sessionId=session)

    error = caught.value
    assert error.code == -32005
    assert error.data["contextWindow"] == WINDOW
    assert error.data["contextTokens"] > WINDOW
    assert "contextWindow" in error.message and "shorter request" in error.message
    assert [r["error"]["code"] for r in model.refused] == ["context_length_exceeded"]

    follow_up = await ask(client, prompt="ask 2: just the log then", sessionId=session)
    assert follow_up["answer"] == "The log is fine."
    assert not any(huge in str(m.get("content")) for b in model.bodies[-6:] for m in b["messages"])
    assert len(model.refused) == 1


async def test_a_session_file_over_the_limit_loads_and_works(
    workspace: Path, tmp_path: Path
) -> None:
    """A conversation saved before compaction existed (or with a larger window):
    300 turns of 20 KB, far over the model's 32,000 tokens."""
    state = tmp_path / "state"
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    for number in range(60):
        messages.append({"role": "user", "content": f"old ask {number}"})
        for turn in range(5):
            call_id = f"call_old{number}x{turn}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path": "build.log"}'},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": FILE})
        messages.append({"role": "assistant", "content": "Fine."})
    saved = Conversation(
        id="ab" * 16, workspace_root=workspace.resolve(), messages=messages, archive=Archive()
    )
    saved.updated = time.time()
    SessionFiles(state / "agent-lsp" / "sessions").save(saved)
    assert prompt_tokens({"messages": messages}) > 40 * WINDOW

    with limited_model() as model:
        env = server_env(model.base_url, XDG_STATE_HOME=str(state))
        async with agent_session(env, [workspace], settings={"contextWindow": WINDOW}) as client:
            result = await ask(client, prompt="new ask: check the log", sessionId=saved.id)
            assert result["answer"] == "The log is fine."
            assert model.refused == []
            assert all(prompt_tokens(b) <= WINDOW for b in model.bodies)
            history = await client.protocol.send_request_async(
                "agent/sessionHistory", {"sessionId": saved.id}
            )
            prompts = [e["content"] for e in history["entries"] if e["role"] == "user"]
            assert prompts[-1] == "new ask: check the log"
    # What was saved again is the compacted conversation, with its archive.
    reloaded = SessionFiles(state / "agent-lsp" / "sessions").load(saved.id)
    assert reloaded is not None
    assert reloaded.messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert reloaded.archive.removed and reloaded.archive.outputs
    assert reloaded.context.prompt_tokens > 0


def test_the_terminal_client_shows_compactions_and_compacts_a_session(
    workspace: Path, tmp_path: Path
) -> None:
    """`agent-lsp ask` prints each compaction and the context used; `agent-lsp compact`
    compacts a saved session (the model's window here is the default, 32,768)."""
    with limited_model(context_limit=DEFAULT_CONTEXT_WINDOW) as model:
        env = server_env(model.base_url)
        where = ("--workspace", str(workspace), "--session-dir", str(tmp_path / "sessions"))
        first = run_cli("ask", "check the build log", *where, env=env, timeout=120)
        assert first.returncode == 0, first.stderr
        assert first.stdout == "The log is fine.\n"
        lines = first.stderr.splitlines()
        compacted = [line for line in lines if " ⇣ compacted: " in line]
        assert compacted, first.stderr
        assert re.fullmatch(
            r"\d\d:\d\d:\d\d ⇣ compacted: [\d,]+ → [\d,]+ tokens of 32,768 \(\d+ outputs? elided\)",
            compacted[0],
        )
        assert re.search(r"^context: [\d,]+ of 32,768 tokens$", first.stderr, re.M)
        session = first.stderr.split("session: ")[1].split()[0]

        result = run_cli("compact", "--session", session, *where, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        shown = re.fullmatch(
            rf"session {session} compacted: ([\d,]+) → ([\d,]+) tokens of 32,768 "
            r"\((\d+ outputs? elided, )?\d+ messages summarized\)\n",
            result.stdout,
        )
        assert shown, result.stdout
        before, after = (int(shown.group(n).replace(",", "")) for n in (1, 2))
        assert after < before
        assert model.refused == []

        unknown = run_cli("compact", "--session", "0" * 32, *where, env=env, timeout=120)
        assert unknown.returncode == 1 and "sessionId" in unknown.stderr
