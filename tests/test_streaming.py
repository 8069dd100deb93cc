"""agent/answerDelta: the answer streams to the editor as the model writes it.

The real server process over stdio (pytest-lsp), the real openai SDK inside it,
the scripted model streaming Server-Sent Events with delays between chunks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.agent.delta_coalescing import WINDOW_S
from tests.support.lsp_client import AgentTestClient, RunningAsk, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import until


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    return workspace


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        yield client


def streamed(client: AgentTestClient, channel: str = "answer", turn: int | None = None) -> str:
    return "".join(
        d["delta"]
        for d in client.deltas
        if d["channel"] == channel and (turn is None or d["turn"] == turn)
    )


async def test_the_answer_streams_before_the_response_in_order(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    answer = "".join(f"Sentence number {i} of a long answer. " for i in range(40))
    model.reply(answer, chunk_size=8, chunk_delay=0.01)  # ~200 chunks over ~2 s

    running = RunningAsk(client, {"prompt": "explain"})
    await until(lambda: bool(client.deltas))
    # The first text is in the editor while the model is still writing.
    assert not running.result.done()
    assert not model.streams[0].completed
    result = await running.result

    assert result["answer"] == answer
    assert streamed(client) == answer  # in order, nothing lost or repeated
    assert {d["sessionId"] for d in client.deltas} == {result["sessionId"]}
    assert {(d["turn"], d["channel"]) for d in client.deltas} == {(1, "answer")}
    # Coalesced: far fewer notifications than chunks, at most one per window or so.
    chunks = len(model.streams[0].sent)
    spread = client.deltas[-1]["at"] - client.deltas[0]["at"]
    assert len(client.deltas) < chunks / 3
    assert len(client.deltas) <= spread / WINDOW_S + 3


async def test_the_first_delta_is_not_held_back(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    # A model that writes one token and then thinks for a while: the token is shown
    # at once, not when the next one arrives.
    model.reply(stream_deltas=[{"content": "Hmm"}, {"content": "…"}], chunk_delay=4.0)
    running = RunningAsk(client, {"prompt": "think"})
    await until(lambda: bool(client.deltas), within=30)
    assert client.deltas[0]["delta"] == "Hmm"
    assert len(model.streams[0].sent) == 1  # the next chunk was not even sent yet
    assert (await running.result)["answer"] == "Hmm…"


async def test_streamed_tool_calls_run_and_each_turn_streams(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    new_text = 'def main():\n    """Return the answer."""\n    return 42\n'
    model.reply(
        "Reading first.",
        tool_calls=[
            tool_call("read_file", {"path": "app.py"}, id="r1"),
            tool_call("glob", {"pattern": "*.py"}, id="g1"),
        ],
        chunk_size=3,
        chunk_delay=0.002,
    )
    model.reply(
        tool_calls=[tool_call("write_file", {"path": "app.py", "content": new_text}, id="w1")],
        chunk_size=3,
        chunk_delay=0.002,
    )
    model.reply("Now main returns 42.", chunk_size=3)

    result = await ask(client, prompt="make main return 42")

    assert (workspace / "app.py").read_text() == new_text  # arguments split in 3-char pieces
    assert [c["id"] for c in result["toolCalls"]] == ["r1", "g1", "w1"]
    assert all(c["ok"] for c in result["toolCalls"])
    assert streamed(client, turn=1) == "Reading first."
    assert streamed(client, turn=3) == result["answer"] == "Now main returns 42."
    # Each turn's text reached the editor before that turn's tool calls started.
    order = [(method, params.get("turn")) for method, params in client.notifications]
    kinds = [m for m in order if m[0] in ("agent/answerDelta", "agent/toolActivity")]
    assert kinds.index(("agent/answerDelta", 1)) < kinds.index(("agent/toolActivity", 1))
    assert kinds[-1] == ("agent/answerDelta", 3)


async def test_reasoning_streams_on_its_own_channel_and_is_never_sent_back(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply(
        reasoning_content="The user wants the file. I will read it.",
        tool_calls=[tool_call("read_file", {"path": "app.py"}, id="r1")],
        chunk_delay=0.002,
    )
    model.reply("It returns 1.", reasoning_content="It says return 1.")

    result = await ask(client, prompt="what does main return?")

    assert streamed(client, "reasoning", turn=1) == "The user wants the file. I will read it."
    assert streamed(client, "reasoning", turn=2) == "It says return 1."
    assert streamed(client, "answer", turn=2) == result["answer"] == "It returns 1."
    second = model.bodies[1]["messages"]
    assert second[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "r1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "app.py"}'},
            }
        ],
    }
    model.reply("Still 1.")
    await ask(client, prompt="sure?", sessionId=result["sessionId"])
    third = model.bodies[2]["messages"]
    assert not any("reasoning_content" in m for m in third)
    assert "I will read it" not in str(third) and "It says return 1." not in str(third)


@pytest.mark.parametrize(
    "refusal",
    [
        "refuse",  # an HTTP 400 naming stream
        "empty-with-tools",  # llama-cpp-python: HTTP 200 and an event stream without events
    ],
)
async def test_an_endpoint_that_refuses_streaming_still_answers(
    workspace: Path, refusal: str
) -> None:
    with ScriptedModel(stream=refusal) as model:
        async with agent_session(server_env(model.base_url), [workspace]) as client:
            model.reply("whole answer")
            model.reply("second answer")
            first = await ask(client, prompt="hi")
            second = await ask(client, prompt="again", sessionId=first["sessionId"])
    assert (first["answer"], second["answer"]) == ("whole answer", "second answer")
    # The answer still arrives as a delta (whole), so clients render one way.
    assert [d["delta"] for d in client.deltas] == ["whole answer", "second answer"]
    # Refused once; the server remembered it for the next ask.
    assert [bool(b.get("stream")) for b in model.bodies] == [True, False, False]


async def test_cancelling_mid_stream_closes_the_model_connection(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("first")
    first = await ask(client, prompt="warm up")
    model.reply("never finished " * 300, chunk_size=5, chunk_delay=0.01)
    running = RunningAsk(client, {"prompt": "long", "sessionId": first["sessionId"]})
    await until(lambda: any("never" in d["delta"] for d in client.deltas))

    cancelled_at = time.monotonic()
    running.cancel()
    with pytest.raises(Exception) as caught:
        await running.result
    assert getattr(caught.value, "code", None) == -32800

    # The scripted server sees the disconnect at once, far from the end of the answer.
    assert await asyncio.to_thread(model.wait_for, lambda: model.streams[1].disconnected, 5)
    assert time.monotonic() - cancelled_at < 2
    assert not model.streams[1].completed
    # The cancelled turn left nothing in the conversation: the next ask continues cleanly.
    model.reply("continuing")
    again = await ask(client, prompt="go on", sessionId=first["sessionId"])
    assert again["answer"] == "continuing"
    sent = model.bodies[-1]["messages"]
    assert "never finished" not in str(sent)
    assert sent[-1] == {"role": "user", "content": "go on"}
