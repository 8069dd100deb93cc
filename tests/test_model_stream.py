"""Streamed model requests: the real openai SDK against the scripted model's SSE mode.

``complete`` (server/model/request.py) is one request, its attempts and their budget;
each attempt is ``request_once`` (server/model/stream.py); the loop tests run them inside
``agent_loop``. The scripted model streams with delays between chunks, splits tool-call arguments
across chunks, sends reasoning_content, and can refuse streaming in the ways real
endpoints do.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.agent.events import AgentEvent, TextDelta, ToolCallStarted
from server.agent.loop import agent_loop
from server.model.endpoint import ModelRequestError, ModelSettings, create_client
from server.model.request import complete
from server.model.stream import ModelReply, StreamSupport
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import wait_until
from tests.test_agent_loop import Recorder, _start_cli, runtime_of
from tooling.context import ToolContext
from tooling.contract import ToolDefinition

KEY = "sk-test-stream-0123456789"
OBJECT = {"type": "object"}
USER = [{"role": "user", "content": "go"}]


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    settings = ModelSettings(
        api_key=KEY, base_url=model.base_url, model="test-model", timeout=20, max_retries=0
    )
    sdk_client = create_client(settings)
    yield sdk_client
    await sdk_client.close()


class Deltas:
    """An ``on_delta`` that records (channel, text, when)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, float]] = []

    def __call__(self, channel: str, text: str) -> None:
        self.seen.append((channel, text, time.monotonic()))

    def text(self, channel: str = "answer") -> str:
        return "".join(text for kind, text, _ in self.seen if kind == channel)


async def stream(client: Any, deltas: Deltas | None = None, **kwargs: Any) -> ModelReply:
    kwargs.setdefault("streaming", StreamSupport())
    kwargs.setdefault("options", {})
    return await complete(client, model="m", messages=USER, on_delta=deltas, **kwargs)


# -- text ------------------------------------------------------------------------------


async def test_text_arrives_in_order_while_the_model_streams(
    model: ScriptedModel, client: Any
) -> None:
    answer = "The quick brown fox jumps over the lazy dog. " * 3
    model.reply(answer, chunk_size=5, chunk_delay=0.02)
    deltas = Deltas()

    reply = await stream(client, deltas)

    assert reply.streamed is True
    assert reply.text == answer
    assert deltas.text() == answer
    assert [len(text) for _, text, _ in deltas.seen] == [5] * (len(answer) // 5)
    # Each piece was handed on as it arrived, not all at the end.
    (sent,) = model.streams
    first_delta = deltas.seen[0][2]
    assert first_delta < sent.sent[-1] - 0.2  # the stream lasted ~0.6 s
    assert reply.message == {"role": "assistant", "content": answer}
    assert reply.finish_reason == "stop"
    # include_usage was asked for, and the usage chunk was read.
    assert model.bodies[0]["stream"] is True
    assert model.bodies[0]["stream_options"] == {"include_usage": True}
    assert reply.usage is not None and reply.usage.total_tokens > 0


async def test_a_plain_request_passes_its_text_at_once(model: ScriptedModel, client: Any) -> None:
    model.reply("whole", reasoning_content="thought")
    deltas = Deltas()

    reply = await stream(client, deltas, streaming=None)

    assert "stream" not in model.bodies[0]
    assert reply.streamed is False
    assert [(c, t) for c, t, _ in deltas.seen] == [("reasoning", "thought"), ("answer", "whole")]
    assert reply.message == {"role": "assistant", "content": "whole"}
    assert reply.reasoning == "thought"


async def test_reasoning_is_its_own_channel_and_never_in_the_message(
    model: ScriptedModel, client: Any
) -> None:
    model.reply("Answer.", reasoning_content="Let me think about this.", chunk_size=6)
    deltas = Deltas()

    reply = await stream(client, deltas)

    channels = [channel for channel, _, _ in deltas.seen]
    assert channels == ["reasoning"] * 4 + ["answer"] * 2  # the thinking streams first
    assert deltas.text("reasoning") == "Let me think about this."
    assert reply.reasoning == "Let me think about this."
    assert reply.message == {"role": "assistant", "content": "Answer."}


# -- tool calls ----------------------------------------------------------------------------


async def test_tool_calls_are_assembled_from_fragments(model: ScriptedModel, client: Any) -> None:
    edit = {"path": "src/app.py", "old_text": 'print("hé")', "new_text": "x = {'a': [1, 2]}\n"}
    model.reply(
        "Two calls.",
        tool_calls=[
            tool_call("read_file", {"path": "README.md"}, id="call_a"),
            tool_call("edit_file", edit, id="call_b"),
            tool_call("glob", "", id="call_c"),  # no arguments at all
        ],
        chunk_size=3,
    )
    deltas = Deltas()

    reply = await stream(client, deltas)

    assert reply.finish_reason == "tool_calls"
    assert reply.text == "Two calls." == deltas.text()
    assert reply.tool_calls == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "README.md"})},
        },
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "edit_file", "arguments": json.dumps(edit)},
        },
        {"id": "call_c", "type": "function", "function": {"name": "glob", "arguments": ""}},
    ]


async def test_fragments_are_placed_by_index_whatever_order_they_come_in(
    model: ScriptedModel, client: Any
) -> None:
    # Interleaved calls, an index that is not the position, ids and names repeated in
    # every fragment (some endpoints do), and a call whose fragments carry no index.
    model.reply(
        stream_deltas=[
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "second", "arguments": '{"n":'},
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "a",
                        "type": "function",
                        "function": {"name": "first", "arguments": ""},
                    }
                ]
            },
            {
                "tool_calls": [
                    {"index": 1, "id": "b", "function": {"name": "second", "arguments": " 2}"}}
                ]
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"n": 1}'}}]},
        ],
        finish_reason="tool_calls",
    )
    reply = await stream(client)
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in reply.tool_calls
    ] == [
        ("a", "first", '{"n": 1}'),
        ("b", "second", '{"n": 2}'),
    ]

    model.reply(
        stream_deltas=[
            {"tool_calls": [{"id": "x", "function": {"name": "one", "arguments": "{}"}}]},
            {"tool_calls": [{"id": "y", "function": {"name": "two", "arguments": "{"}}]},
            {"tool_calls": [{"function": {"arguments": "}"}}]},
        ]
    )
    reply = await stream(client)
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in reply.tool_calls
    ] == [
        ("x", "one", "{}"),
        ("y", "two", "{}"),
    ]

    # No id at all: one is made up, so the call can still be answered.
    model.reply(
        stream_deltas=[{"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}]
    )
    (call,) = (await stream(client)).tool_calls
    assert call["id"].startswith("call_") and call["function"]["name"] == "f"


async def test_streamed_calls_with_split_arguments_run_in_the_loop(
    model: ScriptedModel, client: Any
) -> None:
    recorder = Recorder()
    runtime = runtime_of(recorder.tool("note", read_only=True), recorder.tool("save"))
    text = 'line one\nline "two" ünïcode ✓\n' * 4
    model.reply(
        "I will note and save.",
        tool_calls=[
            tool_call("note", {"text": text}, id="n1"),
            tool_call("note", {"text": "short"}, id="n2"),
            tool_call("save", {"path": "out.txt", "content": text}, id="s1"),
        ],
        chunk_size=2,
        chunk_delay=0.001,
    )
    model.reply("Saved.")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    events: list[AgentEvent] = []

    result = await agent_loop(messages, runtime, client=client, model="m", on_event=events.append)

    assert result.text == "Saved."
    assert [(name, args) for name, args, *_ in recorder.log][-1] == (
        "save",
        {"path": "out.txt", "content": text},
    )
    assert sorted(args["text"] for name, args, *_ in recorder.log if name == "note") == sorted(
        [text, "short"]
    )
    # The history holds the assembled calls, each answered; the turn's text went first.
    assistant = messages[1]
    assert assistant["content"] == "I will note and save."
    assert [c["id"] for c in assistant["tool_calls"]] == ["n1", "n2", "s1"]
    assert [m.get("tool_call_id") for m in messages[2:5]] == ["n1", "n2", "s1"]
    first_call = next(i for i, e in enumerate(events) if isinstance(e, ToolCallStarted))
    turn_one = [e for e in events[:first_call] if isinstance(e, TextDelta)]
    assert "".join(e.text for e in turn_one) == "I will note and save."
    assert {e.turn for e in turn_one} == {1}


async def test_reasoning_is_not_sent_back_in_the_next_request(
    model: ScriptedModel, client: Any
) -> None:
    model.reply(
        reasoning_content="I should call the tool.",
        tool_calls=[tool_call("note", {"text": "x"}, id="r1")],
    )
    model.reply("Done.", reasoning_content="Now answer.")
    events: list[AgentEvent] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]

    await agent_loop(
        messages,
        runtime_of(Recorder().tool("note")),
        client=client,
        model="m",
        on_event=events.append,
    )

    reasoning = [
        (e.turn, e.text) for e in events if isinstance(e, TextDelta) and e.channel == "reasoning"
    ]
    assert "".join(t for turn, t in reasoning if turn == 1) == "I should call the tool."
    assert "".join(t for turn, t in reasoning if turn == 2) == "Now answer."
    second = model.bodies[1]["messages"]
    assert second[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "r1",
                "type": "function",
                "function": {"name": "note", "arguments": '{"text": "x"}'},
            }
        ],
    }
    assert not any("reasoning" in json.dumps(m) for m in second)
    assert messages[-1] == {"role": "assistant", "content": "Done."}


# -- endpoints that do not stream ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["refuse", "plain"])
async def test_an_endpoint_that_does_not_stream_is_asked_plainly_once(
    client: Any, mode: str
) -> None:
    with ScriptedModel(stream=mode) as refusing:
        settings = ModelSettings(api_key=KEY, base_url=refusing.base_url, model="m", max_retries=0)
        own = create_client(settings)
        try:
            refusing.reply("first answer")
            refusing.reply("second answer")
            support = StreamSupport()
            deltas = Deltas()

            first = await stream(own, deltas, streaming=support)
            second = await stream(own, deltas, streaming=support)
        finally:
            await own.close()

    assert (first.text, second.text) == ("first answer", "second answer")
    assert deltas.text() == "first answersecond answer"  # each once, whole
    assert support.enabled is False
    if mode == "refuse":
        assert "HTTP 400" in support.refusal and "stream" in support.refusal
    else:
        assert "application/json" in support.refusal
    # Refused once, then plain for good; an endpoint that answered plainly anyway
    # is not asked twice (its answer is used).
    asked = [bool(body.get("stream")) for body in refusing.bodies]
    assert asked == ([True, False, False] if mode == "refuse" else [True, False])


async def test_an_endpoint_that_refuses_stream_options_streams_without_them() -> None:
    with ScriptedModel(stream="no-stream-options") as endpoint:
        settings = ModelSettings(api_key=KEY, base_url=endpoint.base_url, model="m", max_retries=0)
        own = create_client(settings)
        try:
            endpoint.reply("streamed anyway", chunk_size=3)
            endpoint.reply("again")
            support = StreamSupport()
            deltas = Deltas()
            reply = await stream(own, deltas, streaming=support)
            await stream(own, streaming=support)
        finally:
            await own.close()

    assert reply.streamed is True and reply.text == "streamed anyway"
    assert len(deltas.seen) == 5
    assert reply.usage is None  # not asked for, not sent
    assert (support.enabled, support.include_usage) == (True, False)
    assert ["stream_options" in body for body in endpoint.bodies] == [True, False, False]


async def test_other_errors_are_not_taken_for_a_refusal(model: ScriptedModel, client: Any) -> None:
    model.reply(status=400, error_message="upstream model is overloaded")
    support = StreamSupport()
    with pytest.raises(ModelRequestError) as caught:
        await stream(client, streaming=support)
    assert caught.value.status == 400
    assert support.enabled is True
    assert len(model.requests) == 1


# -- failures and cancellation --------------------------------------------------------------


def retrying_client(model: ScriptedModel, request_timeout: float = 20) -> Any:
    settings = ModelSettings(
        api_key=KEY, base_url=model.base_url, model="m", timeout=request_timeout, max_retries=2
    )
    return create_client(settings)


async def test_a_stream_that_breaks_off_after_text_is_not_retried(model: ScriptedModel) -> None:
    own = retrying_client(model)
    try:
        model.reply("this answer never finishes", chunk_size=4, break_after=3)
        deltas = Deltas()
        with pytest.raises(ModelRequestError) as caught:
            await stream(own, deltas)
        assert caught.value.kind == "connection"
        assert deltas.text() == "this answer "  # what arrived was shown, once
        assert "the answer broke off while streaming" in str(caught.value)
        assert caught.value.attempts == 1 and len(model.requests) == 1

        # Broken before any text: retried like any dropped connection.
        model.reply("never starts", break_after=0)
        model.reply("the retry answers")
        deltas = Deltas()
        reply = await stream(own, deltas)
        assert reply.text == deltas.text() == "the retry answers"
        assert len(model.requests) == 3
    finally:
        await own.close()


async def test_an_error_event_mid_stream_fails_the_request(model: ScriptedModel) -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}],
    }
    model.reply(body=[chunk, {"error": {"message": "the model crashed", "type": "server_error"}}])
    own = retrying_client(model)
    try:
        with pytest.raises(ModelRequestError) as caught:
            await stream(own)
    finally:
        await own.close()
    assert "the model crashed" in str(caught.value)
    assert len(model.requests) == 1  # "partial" was shown: not asked again


async def test_request_timeout_bounds_the_whole_stream(model: ScriptedModel) -> None:
    model.reply("slow " * 100, chunk_size=5, chunk_delay=0.05)  # ~5 s of streaming
    own = retrying_client(model, request_timeout=1.0)
    deltas = Deltas()
    started = time.monotonic()
    try:
        with pytest.raises(ModelRequestError) as caught:
            await stream(own, deltas)
    finally:
        await own.close()
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 4
    assert deltas.seen and "broke off while streaming" in str(caught.value)
    assert len(model.requests) == 1
    assert await asyncio.to_thread(model.wait_for, lambda: model.streams[0].disconnected, 5)


async def test_cancelling_closes_the_stream_at_once(model: ScriptedModel, client: Any) -> None:
    model.reply("word " * 400, chunk_size=5, chunk_delay=0.01)
    deltas = Deltas()
    task = asyncio.create_task(stream(client, deltas))
    assert await asyncio.to_thread(model.wait_for, lambda: bool(deltas.seen), 10)

    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # The server saw the connection close while it still had most of the answer to send.
    assert await asyncio.to_thread(model.wait_for, lambda: model.streams[0].disconnected, 5)
    (record,) = model.streams
    assert not record.completed
    assert len(record.sent) < 200
    assert time.monotonic() - cancelled_at < 2


async def test_the_loop_streams_through_a_tool_context(
    model: ScriptedModel, client: Any, tmp_path: Path
) -> None:
    # A tool that reads its context still gets it when calls arrive streamed.
    seen: list[str] = []

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        seen.append(context.call_id)
        return "ok"

    tool = ToolDefinition("probe", "Probe.", {"type": "object"}, handler)
    model.reply(tool_calls=[tool_call("probe", {}, id="p1")], chunk_delay=0.005)
    model.reply("end")
    await agent_loop([{"role": "user", "content": "x"}], runtime_of(tool), client=client, model="m")
    assert seen == ["p1"]


async def test_the_cli_streams_paced_and_logs_each_stream(tmp_path: Path) -> None:
    log = tmp_path / "streams.jsonl"
    process = _start_cli(
        "--instant", "--chunk-size", "1", "--chunk-delay", "0.01", "--stream-log", str(log)
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        settings = ModelSettings(api_key=KEY, base_url=line.split()[1], model="m", max_retries=0)
        cli_client = create_client(settings)
        try:
            deltas = Deltas()
            noop = {"type": "function", "function": {"name": "noop", "parameters": OBJECT}}
            reply = await stream(cli_client, deltas, options={"tools": [noop]})
        finally:
            await cli_client.close()
        assert reply.tool_calls and reply.tool_calls[0]["function"]["name"] == "noop"
        # Logged once the server is done with the stream (just after the client is).
        assert await asyncio.to_thread(wait_until, lambda: log.exists() and log.read_text(), 10)
        (record,) = [json.loads(line) for line in log.read_text().splitlines()]
        assert record["completed"] is True and record["disconnected"] is False
        sent = record["sent"]
        # Paced from the start: N events take about N x 10 ms, not less.
        assert sent[-1] - sent[0] >= 0.01 * (len(sent) - 1) * 0.9
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.mark.parametrize("streaming", [StreamSupport(), None], ids=["streamed", "plain"])
async def test_the_body_carries_messages_and_tools_as_given(
    model: ScriptedModel, client: Any, streaming: StreamSupport | None
) -> None:
    # Encoded by server.model.request_body, not the SDK's transform: the same JSON.
    tools = [
        {
            "type": "function",
            "function": {
                "name": "mcp__db__query",
                "description": "Run a query",
                "parameters": {
                    "type": "object",
                    "properties": {"sql": {"type": "string", "maxLength": 10}},
                    "required": ["sql"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi ✓"}]},
    ]
    model.reply("ok")
    options = {"tools": tools, "tool_choice": "auto"}
    reply = await complete(
        client, model="m", messages=messages, options=options, streaming=streaming
    )
    assert reply.text == "ok"
    [body] = model.bodies
    assert body["messages"] == messages and body["tools"] == tools
    assert body["model"] == "m" and body["tool_choice"] == "auto"
