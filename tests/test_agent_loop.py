"""The agent loop against the real openai SDK and the scripted model server."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.agent.events import (
    AgentEvent,
    FinalAnswer,
    ModelRequestStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from server.agent.loop import PREVIEW_LIMIT, LoopResult, agent_loop, preview
from server.model.endpoint import ModelRequestError, ModelSettings, create_client
from tests.support.model_server import OMIT_USAGE, ScriptedModel, tool_call
from tests.support.procs import pids_with
from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace

REPO_ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-loop-0123456789"
OBJECT = {"type": "object"}


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    settings = ModelSettings(
        api_key=KEY, base_url=model.base_url, model="test-model", timeout=20, max_retries=0
    )
    sdk_client = create_client(settings)
    yield sdk_client
    await sdk_client.close()


class Recorder:
    """Tools that log (name, arguments, start, end) so tests can check order and overlap."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any], float, float]] = []

    def tool(
        self, name: str, *, read_only: bool = False, delay: float = 0.0, output: str | None = None
    ) -> ToolDefinition:
        async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
            start = time.perf_counter()
            if delay:
                await asyncio.sleep(delay)
            self.log.append((name, arguments, start, time.perf_counter()))
            return output if output is not None else f"{name} ran with {json.dumps(arguments)}"

        return ToolDefinition(name, f"The {name} tool.", OBJECT, handler, read_only=read_only)

    def names(self) -> list[str]:
        return [entry[0] for entry in self.log]

    def span(self, name: str) -> tuple[float, float]:
        (entry,) = [e for e in self.log if e[0] == name]
        return entry[2], entry[3]


def runtime_of(*tools: ToolDefinition) -> ToolRuntime:
    return ToolRuntime(ToolRegistry(tools))


def echo_tool() -> ToolDefinition:
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        return f"echo: {arguments['text']}"

    return ToolDefinition("echo", "Echo text.", schema, handler)


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by the tool messages right after it."""
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            following = messages[index + 1 : index + 1 + len(ids)]
            assert [m["role"] for m in following] == ["tool"] * len(ids)
            assert [m["tool_call_id"] for m in following] == ids


async def test_runs_calls_in_order_pairs_results_and_returns_final_text(
    model: ScriptedModel, client: Any
) -> None:
    recorder = Recorder()
    runtime = runtime_of(recorder.tool("first"), recorder.tool("second"))
    model.reply(
        "Let me look.",
        tool_calls=[tool_call("second", {"n": 1}, id="c1"), tool_call("first", {}, id="c2")],
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )
    model.reply(
        "All done.", usage={"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]

    result = await agent_loop(messages, runtime, client=client, model="test-model")

    assert isinstance(result, LoopResult)
    assert result.text == "All done."
    assert result.stop_reason == "end_turn"
    assert result.turns == 2
    assert recorder.names() == ["second", "first"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert messages[1]["content"] == "Let me look."
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["c1", "c2"]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": 'second ran with {"n": 1}',
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c2", "content": "first ran with {}"}
    assert messages[4] == {"role": "assistant", "content": "All done."}
    assert [(r.id, r.name, r.ok) for r in result.tool_calls] == [
        ("c1", "second", True),
        ("c2", "first", True),
    ]
    assert result.tool_calls[0].arguments == '{"n": 1}'
    assert result.usage.as_dict() == {
        "prompt_tokens": 40,
        "completion_tokens": 12,
        "total_tokens": 52,
    }
    # The model saw both results on its second turn, with the declared tool schemas.
    second = model.requests[1]["body"]
    assert second["messages"][-2:] == messages[2:4]
    assert second["tools"] == runtime.schemas()
    assert second["tool_choice"] == "auto"
    assert second["model"] == "test-model"
    assert model.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


async def test_bad_calls_become_error_tool_messages_and_the_loop_continues(
    model: ScriptedModel, client: Any
) -> None:
    failing = Recorder().tool("failing", output="Error: the thing is broken")
    runtime = runtime_of(echo_tool(), failing)
    model.reply(
        tool_calls=[
            tool_call("nonexistent", {}, id="unknown"),
            tool_call("echo", '{"text": "unterminated', id="badjson"),
            tool_call("echo", {"wrong": 1}, id="schema"),
            tool_call("echo", "[1, 2]", id="notobject"),
            tool_call("failing", {}, id="failing"),
            tool_call("echo", {"text": "hi"}, id="good"),
        ]
    )
    model.reply("Recovered.")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "try things"}]

    result = await agent_loop(messages, runtime, client=client, model="m")

    assert result.text == "Recovered."
    assert_paired(messages)
    outputs = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert outputs["unknown"] == "Error: Unknown tool: nonexistent"
    assert outputs["badjson"].startswith("Error: Invalid arguments:")
    assert outputs["schema"].startswith("Error: Invalid arguments for echo:")
    assert "text" in outputs["schema"]
    assert outputs["notobject"] == "Error: arguments must be an object"
    assert outputs["failing"] == "Error: the thing is broken"
    assert outputs["good"] == "echo: hi"
    assert [r.ok for r in result.tool_calls] == [False, False, False, False, False, True]
    # The model received every error text as a tool message.
    sent = [m for m in model.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in sent] == list(outputs.values())


async def test_unsupported_call_type_gets_an_error_message(
    model: ScriptedModel, client: Any
) -> None:
    runtime = runtime_of(echo_tool())
    model.reply(
        tool_calls=[
            {"type": "custom", "name": "grammar_tool", "input": "x", "id": "custom1"},
            tool_call("echo", {"text": "still works"}, id="fn1"),
        ]
    )
    model.reply("ok")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]

    result = await agent_loop(messages, runtime, client=client, model="m")

    assert result.text == "ok"
    assert_paired(messages)
    assert messages[2]["content"] == "Error: unsupported tool call type custom"
    assert messages[3]["content"] == "echo: still works"


async def test_empty_registry_sends_no_tools(model: ScriptedModel, client: Any) -> None:
    model.reply("Just text.")
    result = await agent_loop(
        [{"role": "user", "content": "hi"}], runtime_of(), client=client, model="m"
    )
    assert result.text == "Just text."
    body = model.requests[0]["body"]
    assert "tools" not in body
    assert "tool_choice" not in body


async def test_max_turns_stops_a_model_that_keeps_calling_tools(
    client: Any,
) -> None:
    recorder = Recorder()
    runtime = runtime_of(recorder.tool("again"))

    def forever(body: dict[str, Any]) -> Any:
        from tests.support.model_server import make_reply

        turn = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
        return make_reply(f"working {turn}", tool_calls=[tool_call("again", {"turn": turn})])

    with ScriptedModel(forever) as looping:
        settings = ModelSettings(api_key=KEY, base_url=looping.base_url, model="m", max_retries=0)
        looping_client = create_client(settings)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "loop"}]
        events: list[AgentEvent] = []
        try:
            result = await agent_loop(
                messages,
                runtime,
                client=looping_client,
                model="m",
                max_turns=3,
                on_event=events.append,
            )
        finally:
            await looping_client.close()
        assert len(looping.requests) == 3

    assert result.stop_reason == "max_turns"
    assert result.turns == 3
    assert result.text == "working 3"
    # The last turn's call ran and was paired: the history stays valid to continue.
    assert len(recorder.log) == 3
    assert messages[-1]["role"] == "tool"
    assert_paired(messages)
    assert events[-1] == FinalAnswer(text="working 3", stop_reason="max_turns")
    with pytest.raises(ValueError):
        await agent_loop(messages, runtime, client=client, model="m", max_turns=0)


async def test_read_only_calls_overlap_and_a_write_is_a_barrier(
    model: ScriptedModel, client: Any
) -> None:
    recorder = Recorder()
    runtime = runtime_of(
        recorder.tool("ro_slow", read_only=True, delay=0.3),
        recorder.tool("ro_fast", read_only=True, delay=0.1),
        recorder.tool("write", delay=0.1),
        recorder.tool("ro_a", read_only=True, delay=0.2),
        recorder.tool("ro_b", read_only=True, delay=0.2),
    )
    names = ["ro_slow", "ro_fast", "write", "ro_a", "ro_b"]
    model.reply(tool_calls=[tool_call(name, {}, id=f"id_{name}") for name in names])
    model.reply("done")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read"}]

    result = await agent_loop(messages, runtime, client=client, model="m")

    slow, fast, write = recorder.span("ro_slow"), recorder.span("ro_fast"), recorder.span("write")
    a, b = recorder.span("ro_a"), recorder.span("ro_b")
    assert fast[0] < slow[1] and slow[0] < fast[1], "read-only calls did not overlap"
    assert write[0] >= max(slow[1], fast[1]), "the write started before the reads finished"
    assert min(a[0], b[0]) >= write[1], "reads after the write started before it finished"
    assert a[0] < b[1] and b[0] < a[1], "the second read-only group did not overlap"
    # Results are appended in call order even though ro_fast finished first.
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
        f"id_{name}" for name in names
    ]
    assert [r.name for r in result.tool_calls] == names


async def test_events_are_emitted_in_order(model: ScriptedModel, client: Any) -> None:
    runtime = runtime_of(echo_tool())
    model.reply(
        tool_calls=[tool_call("echo", {"text": "a"}, id="e1"), tool_call("nope", {}, id="e2")]
    )
    model.reply("finished")
    events: list[AgentEvent] = []

    await agent_loop(
        [{"role": "user", "content": "x"}],
        runtime,
        client=client,
        model="m",
        on_event=events.append,
    )

    kinds = [type(event).__name__ for event in events]
    assert kinds == [
        "ModelRequestStarted",
        "ToolCallStarted",
        "ToolCallFinished",
        "ToolCallStarted",
        "ToolCallFinished",
        "ModelRequestStarted",
        "TextDelta",
        "TextDelta",
        "FinalAnswer",
    ]
    assert events[0] == ModelRequestStarted(turn=1)
    assert events[1] == ToolCallStarted(
        turn=1, call_id="e1", name="echo", arguments='{"text": "a"}', summary_key="text"
    )
    finished = events[2]
    assert isinstance(finished, ToolCallFinished)
    assert (finished.call_id, finished.ok, finished.output) == ("e1", True, "echo: a")
    assert finished.duration_ms >= 0
    failed = events[4]
    assert isinstance(failed, ToolCallFinished)
    assert (failed.call_id, failed.ok) == ("e2", False)
    assert events[5] == ModelRequestStarted(turn=2)
    # The answer as it streamed in (four characters a chunk), then the whole of it.
    assert events[6:8] == [TextDelta(2, "answer", "fini"), TextDelta(2, "answer", "shed")]
    assert events[8] == FinalAnswer(text="finished", stop_reason="end_turn")


async def test_long_output_goes_to_the_model_whole_and_to_records_as_a_preview(
    model: ScriptedModel, client: Any
) -> None:
    big = "x" * 9000 + "END"
    runtime = runtime_of(Recorder().tool("big", output=big))
    model.reply(tool_calls=[tool_call("big", {}, id="b")])
    model.reply("ok")
    events: list[AgentEvent] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]

    result = await agent_loop(messages, runtime, client=client, model="m", on_event=events.append)

    assert messages[2]["content"] == big
    shown = result.tool_calls[0].output
    assert len(shown) <= PREVIEW_LIMIT
    assert shown.startswith("xxx") and "more characters" in shown
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].output == shown
    assert preview("short") == "short"
    assert len(preview("y" * 123_456)) <= PREVIEW_LIMIT


async def test_missing_usage_is_tolerated(model: ScriptedModel, client: Any) -> None:
    model.reply("no usage here", usage=OMIT_USAGE)
    result = await agent_loop(
        [{"role": "user", "content": "x"}], runtime_of(), client=client, model="m"
    )
    assert result.text == "no usage here"
    assert result.usage.as_dict() == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


async def test_follow_up_in_the_same_conversation_sends_earlier_tool_results(
    model: ScriptedModel, client: Any
) -> None:
    runtime = runtime_of(echo_tool())
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "first question"},
    ]
    model.reply(tool_calls=[tool_call("echo", {"text": "remember me"}, id="mem")])
    model.reply("First answer.")
    await agent_loop(messages, runtime, client=client, model="m")

    messages.append({"role": "user", "content": "second question"})
    model.reply("Second answer.")
    result = await agent_loop(messages, runtime, client=client, model="m")

    assert result.text == "Second answer."
    sent = model.requests[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert sent[2]["tool_calls"][0]["id"] == "mem"
    assert sent[3] == {"role": "tool", "tool_call_id": "mem", "content": "echo: remember me"}
    assert sent[4]["content"] == "First answer."


async def test_model_error_raises_typed_error_and_appends_nothing(
    model: ScriptedModel, client: Any
) -> None:
    model.reply(status=503, error_message="overloaded, try later")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop(messages, runtime_of(), client=client, model="m")
    assert caught.value.status == 503
    assert caught.value.provider_message == "overloaded, try later"
    assert messages == [{"role": "user", "content": "x"}]


@pytest.mark.parametrize(
    "body",
    [
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
        {"unexpected": True},
        "this is not json",
    ],
)
async def test_malformed_responses_raise_typed_errors(
    model: ScriptedModel, client: Any, body: Any
) -> None:
    model.reply(body=body)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop(messages, runtime_of(), client=client, model="m")
    assert caught.value.kind == "malformed"
    assert "Malformed model response" in str(caught.value)
    assert len(messages) == 1


async def test_a_tool_bug_propagates_after_pairing_the_calls(
    model: ScriptedModel, client: Any
) -> None:
    async def broken(arguments: dict[str, Any], context: ToolContext) -> str:
        raise RuntimeError("bug in tool")

    runtime = runtime_of(ToolDefinition("broken", "Broken.", OBJECT, broken), echo_tool())
    model.reply(
        tool_calls=[tool_call("broken", {}, id="b1"), tool_call("echo", {"text": "x"}, id="b2")]
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
    with pytest.raises(RuntimeError, match="bug in tool"):
        await agent_loop(messages, runtime, client=client, model="m")
    assert_paired(messages)
    assert messages[2]["content"].startswith("Error:") and "RuntimeError" in messages[2]["content"]
    assert messages[3]["content"].startswith("Error:")


# --- cancellation -----------------------------------------------------------------


async def _started(events: list[AgentEvent], kind: type) -> None:
    deadline = time.monotonic() + 10
    while not any(isinstance(event, kind) for event in events):
        assert time.monotonic() < deadline, f"no {kind.__name__} event"
        await asyncio.sleep(0.01)


def _bash_tool(root: Path) -> ToolDefinition | None:
    try:
        from tools.shell import bash_tool
    except ImportError:
        return None
    return bash_tool(Workspace(root))


async def test_cancelling_mid_tool_kills_it_and_pairs_every_call(
    model: ScriptedModel, client: Any, tmp_path: Path
) -> None:
    bash = _bash_tool(tmp_path)
    if bash is None:
        pytest.skip("tools.shell is not available")
    recorder = Recorder()
    runtime = runtime_of(bash, recorder.tool("after"))
    # The shell starts a grandchild that would write a marker later; cancelling must kill it.
    tag = str(random.randrange(10**8, 10**9))  # digits: a ``sleep`` argument that tags it
    command = f"echo up > shell.up; (sleep 1.{tag}; echo late > marker.txt) & sleep 30.{tag}"
    model.reply(
        tool_calls=[
            tool_call("bash", {"command": command}, id="sh"),
            tool_call("after", {}, id="never"),
        ]
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "run it"}]
    events: list[AgentEvent] = []
    task = asyncio.create_task(
        agent_loop(messages, runtime, client=client, model="m", on_event=events.append)
    )
    await _started(events, ToolCallStarted)
    # The shell's own pid would be its PID namespace's, meaningless here: its tag tells.
    up_file = tmp_path / "shell.up"
    deadline = time.monotonic() + 10
    while not up_file.exists() or len(pids_with(tag)) < 2:
        assert time.monotonic() < deadline, "the shell never started"
        await asyncio.sleep(0.02)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "sh", "content": "Error: cancelled"},
        {"role": "tool", "tool_call_id": "never", "content": "Error: cancelled"},
    ]
    assert recorder.log == []  # the call after the cancelled one never ran
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.ok, e.output) for e in finished] == [("sh", False, "Error: cancelled")]
    assert not any(isinstance(e, FinalAnswer) for e in events)
    # The shell and the grandchild's subshell carry the tag: with no tagged process left, nothing
    # can write the marker later.
    assert pids_with(tag) == []
    assert not (tmp_path / "marker.txt").exists()

    # The history is valid: the same conversation continues (the server checks pairing).
    messages.append({"role": "user", "content": "never mind"})
    model.reply("Okay.")
    result = await agent_loop(messages, runtime, client=client, model="m")
    assert result.text == "Okay."


async def test_cancelling_concurrent_read_only_calls_pairs_them_all(
    model: ScriptedModel, client: Any
) -> None:
    recorder = Recorder()
    runtime = runtime_of(
        recorder.tool("quick", read_only=True, output="quick result"),
        recorder.tool("slow", read_only=True, delay=30),
    )
    model.reply(tool_calls=[tool_call("slow", {}, id="s"), tool_call("quick", {}, id="q")])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
    events: list[AgentEvent] = []
    task = asyncio.create_task(
        agent_loop(messages, runtime, client=client, model="m", on_event=events.append)
    )
    await _started(events, ToolCallFinished)  # "quick" is done, "slow" still sleeping
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "s", "content": "Error: cancelled"},
        {"role": "tool", "tool_call_id": "q", "content": "quick result"},
    ]


async def test_cancelling_during_the_model_request_appends_nothing(
    model: ScriptedModel, client: Any
) -> None:
    runtime = runtime_of(echo_tool())
    model.reply(tool_calls=[tool_call("echo", {"text": "one"}, id="t1")])
    model.reply("too late", delay=30)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
    task = asyncio.create_task(agent_loop(messages, runtime, client=client, model="m"))
    assert await asyncio.to_thread(model.wait_for_requests, 2)
    snapshot = [dict(m) for m in messages]

    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert time.perf_counter() - started < 5  # the in-flight request was abandoned
    assert messages == snapshot
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert_paired(messages)


# --- import cost ------------------------------------------------------------------


def test_importing_the_loop_does_not_import_openai() -> None:
    code = (
        "import sys; import server.agent.loop, server.model.endpoint, "
        "server.conversations.conversations, server.agent.events, server.project.prompts; "
        "print('openai' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert completed.stdout.strip() == "False"


# --- the scripted model server itself (everyone's tests rely on it) ------------------


async def test_server_fails_loudly_when_the_script_is_exhausted(
    model: ScriptedModel, client: Any
) -> None:
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop(
            [{"role": "user", "content": "hi"}], runtime_of(), client=client, model="m"
        )
    assert caught.value.status == 500
    assert "script exhausted" in caught.value.provider_message


async def test_server_rejects_unpaired_tool_calls_like_a_real_provider(
    model: ScriptedModel, client: Any
) -> None:
    unpaired = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "y"},
    ]
    model.reply("never sent")
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop(unpaired, runtime_of(), client=client, model="m")
    assert caught.value.status == 400
    assert "did not have response messages: a" in caught.value.provider_message
    assert model.pending == 1  # the scripted reply was not consumed


async def test_server_delay_does_not_block_other_requests(
    model: ScriptedModel, client: Any
) -> None:
    # The slow reply takes 5 s; the fast one is answered while it waits (no wall-clock
    # bound on the fast one: a loaded machine may take a second to answer anything).
    model.reply("slow", delay=5.0)
    model.reply("fast")
    slow = asyncio.create_task(
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "1"}])
    )
    assert await asyncio.to_thread(model.wait_for_requests, 1)
    fast = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "2"}]
    )
    assert fast.choices[0].message.content == "fast"
    assert not slow.done()
    assert (await slow).choices[0].message.content == "slow"


def _start_cli(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.model_server", *args],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process


async def test_cli_serves_a_json_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "match": "list the files",
                    "replies": [
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "a.txt"}}]},
                        {"content": "There is a.txt."},
                    ],
                },
                {"match": "^echo:", "echo": True},
            ]
        )
    )
    record = tmp_path / "requests.jsonl"
    process = _start_cli(
        "--script",
        str(script),
        "--instant",
        "--instant-tool",
        "echo",
        "--instant-args",
        '{"text": "instant"}',
        "--record",
        str(record),
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        assert line.startswith("READY http://127.0.0.1:")
        base_url = line.split()[1]
        settings = ModelSettings(api_key=KEY, base_url=base_url, model="m", max_retries=0)
        cli_client = create_client(settings)
        runtime = runtime_of(echo_tool())

        async def ask(prompt: str) -> LoopResult:
            messages = [{"role": "user", "content": prompt}]
            return await agent_loop(messages, runtime, client=cli_client, model="m")

        try:
            first = await ask("please list the files")
            assert first.text == "There is a.txt."
            assert [(c.name, c.output) for c in first.tool_calls] == [("echo", "echo: a.txt")]
            again = await ask("list the files again")  # replies used up: last content, no tools
            assert (again.text, again.tool_calls) == ("There is a.txt.", [])
            assert (await ask("echo: hello there")).text == "echo: hello there"
            instant = await ask("no rule matches this")  # falls through to --instant
            assert instant.text == "done"
            assert [c.output for c in instant.tool_calls] == ["echo: instant"]
        finally:
            await cli_client.close()
        bodies = [json.loads(line) for line in record.read_text().splitlines()]
        assert len(bodies) == 6
        assert bodies[1]["messages"][-1]["content"] == "echo: a.txt"
    finally:
        process.kill()
        process.wait(timeout=10)


async def test_cli_without_a_matching_rule_answers_500(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"rules": [{"match": "only this", "replies": []}], "latency": 0.05})
    )
    process = _start_cli("--script", str(script))
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        base_url = line.split()[1]
        cli_client = create_client(
            ModelSettings(api_key=KEY, base_url=base_url, model="m", max_retries=0)
        )
        try:
            ok = await agent_loop(
                [{"role": "user", "content": "only this"}],
                runtime_of(),
                client=cli_client,
                model="m",
            )
            assert ok.text == "(script exhausted)"
            with pytest.raises(ModelRequestError) as caught:
                await agent_loop(
                    [{"role": "user", "content": "other"}],
                    runtime_of(),
                    client=cli_client,
                    model="m",
                )
        finally:
            await cli_client.close()
        assert caught.value.status == 500
        assert "script exhausted" in caught.value.provider_message
    finally:
        process.kill()
        process.wait(timeout=10)
