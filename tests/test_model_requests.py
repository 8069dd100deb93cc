"""What real endpoints demand of a request, against the real SDK and the scripted model.

The scripted model enforces llama.cpp's and DeepSeek's rules by default (see
``tests/support/model_server.py``), so a history these endpoints would refuse
fails here as it would there.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from server.agent.events import AgentEvent, FinalAnswer, ToolCallStarted
from server.agent.loop import CUT_OFF_OUTPUT, agent_loop
from server.model.endpoint import ModelRequestError, ModelSettings, create_client
from tests.support.model_server import (
    ASSISTANT_CONTENT,
    NO_REASONING_CONTENT,
    PROVIDER_RULES,
    ScriptedModel,
    tool_call,
)
from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime

KEY = "sk-test-endpoints-0123456789"
ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


async def echo(arguments: dict[str, Any], context: ToolContext) -> str:
    return f"echo: {arguments.get('text', '')}"


RUNTIME = ToolRuntime(ToolRegistry([ToolDefinition("echo", "Echo text.", ECHO_SCHEMA, echo)]))


def sdk_client(base_url: str, *, timeout: float = 20, max_retries: int = 0) -> Any:
    settings = ModelSettings(
        api_key=KEY, base_url=base_url, model="m", timeout=timeout, max_retries=max_retries
    )
    return create_client(settings)


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    sdk = sdk_client(model.base_url)
    yield sdk
    await sdk.close()


async def run(client: Any, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return await agent_loop(messages, RUNTIME, client=client, model="m", **kwargs)


def assistant_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


# --- the assistant turn we send back ------------------------------------------------


async def test_a_tool_call_without_text_goes_back_with_empty_string_content(
    model: ScriptedModel, client: Any
) -> None:
    # llama.cpp's server sends "content": null with a tool call, and answers HTTP 500
    # to the next request if that assistant message comes back without a string content.
    model.reply(tool_calls=[tool_call("echo", {"text": "hi"}, id="c1")])
    model.reply("It echoed hi.")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "echo hi"}]

    result = await run(client, messages)

    assert result.text == "It echoed hi."
    assert assistant_turns(model.bodies[1]) == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "hi"}'},
                }
            ],
        }
    ]


@pytest.mark.parametrize("transport", ["streamed", "plain"])
async def test_only_the_fields_chat_completions_defines_travel_back(
    model: ScriptedModel, client: Any, transport: str
) -> None:
    # A response with everything a provider may add: DeepSeek's reasoning, the legacy
    # function_call, refusal/audio nulls, an unknown extra.
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    message = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "The user wants an echo. I will call echo.",
        "tool_calls": [call],
        "function_call": {"name": "echo", "arguments": "{}"},
        "refusal": None,
        "audio": None,
        "provider_extra": {"x": 1},
    }
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    if transport == "plain":
        model.stream = "plain"  # the endpoint answers stream: true with a whole completion
        model.reply(body=body)
    else:  # the same message as one chunk of a stream
        delta = {**message, "tool_calls": [{"index": 0, **call}]}
        choice = {"index": 0, "delta": delta, "finish_reason": "tool_calls"}
        model.reply(body=[{**body, "object": "chat.completion.chunk", "choices": [choice]}])
    model.reply("Done.", reasoning_content="Nothing more to do.")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "echo"}]

    result = await run(client, messages)

    assert result.text == "Done."
    assert assistant_turns(model.bodies[1]) == [
        {"role": "assistant", "content": "", "tool_calls": [call]}
    ]
    # The final answer's reasoning is not kept either: a follow-up sends none.
    messages.append({"role": "user", "content": "and now?"})
    model.reply("Still done.")
    await run(client, messages)
    sent = model.bodies[-1]["messages"]
    assert not any("reasoning_content" in m for m in sent)
    assert sent[-2] == {"role": "assistant", "content": "Done."}


# --- how an ask ends ------------------------------------------------------------------


@pytest.mark.parametrize("content", [None, "", " \n"])
async def test_an_empty_answer_is_reported_as_empty(
    model: ScriptedModel, client: Any, content: str | None
) -> None:
    model.reply(content)
    events: list[AgentEvent] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hello?"}]

    result = await run(client, messages, on_event=events.append)

    assert (result.stop_reason, result.text) == ("empty", "")
    assert events[-1] == FinalAnswer(text="", stop_reason="empty")
    # The turn stays in the history (as a string), so the conversation can go on.
    assert messages[-1] == {"role": "assistant", "content": content or ""}
    messages.append({"role": "user", "content": "please answer"})
    model.reply("Sorry: hello!")
    assert (await run(client, messages)).stop_reason == "end_turn"


async def test_a_response_cut_at_the_token_limit_ends_with_max_tokens(
    model: ScriptedModel, client: Any
) -> None:
    model.reply("The answer is a long", finish_reason="length")
    events: list[AgentEvent] = []

    result = await run(client, [{"role": "user", "content": "explain"}], on_event=events.append)

    assert (result.stop_reason, result.text) == ("max_tokens", "The answer is a long")
    assert events[-1] == FinalAnswer(text="The answer is a long", stop_reason="max_tokens")


async def test_tool_calls_of_a_cut_response_are_not_run(model: ScriptedModel, client: Any) -> None:
    model.reply(
        "Writing it now.",
        tool_calls=[
            tool_call("echo", {"text": "a"}, id="c1"),
            tool_call("echo", '{"text": "b', id="c2"),
        ],
        finish_reason="length",
    )
    events: list[AgentEvent] = []
    messages: list[dict[str, Any]] = [{"role": "user", "content": "write"}]

    result = await run(client, messages, on_event=events.append)

    assert result.stop_reason == "max_tokens"
    assert result.tool_calls == []
    assert not any(isinstance(e, ToolCallStarted) for e in events)
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": CUT_OFF_OUTPUT},
        {"role": "tool", "tool_call_id": "c2", "content": CUT_OFF_OUTPUT},
    ]
    # Paired, so the conversation continues (the scripted model checks pairing).
    messages.append({"role": "user", "content": "go on"})
    model.reply("ok")
    assert (await run(client, messages)).text == "ok"


# --- attempts, and what requestTimeout bounds ---------------------------------------------


async def test_a_failure_says_how_many_attempts_over_how_long(model: ScriptedModel) -> None:
    model.reply(status=503, error_message="overloaded", times=3)
    client = sdk_client(model.base_url, max_retries=2)
    try:
        with pytest.raises(ModelRequestError) as caught:
            await run(client, [{"role": "user", "content": "x"}])
    finally:
        await client.close()
    error = caught.value
    assert len(model.requests) == 3
    assert (error.status, error.kind, error.attempts) == (503, "status", 3)
    assert 0.5 < error.elapsed_ms / 1000 < 5  # two backoff waits, 0.4-0.5 s and 0.75-1 s
    assert "HTTP 503" in str(error) and "overloaded" in str(error)
    assert f"(3 attempts over {error.elapsed_ms / 1000:.1f} s)" in str(error)
    # The SDK's retry-count header still tells the endpoint which attempt this is.
    assert [r["headers"]["x-stainless-retry-count"] for r in model.requests] == ["0", "1", "2"]


async def test_request_timeout_bounds_the_whole_request_retries_included(
    model: ScriptedModel,
) -> None:
    model.reply("late", delay=30, times=3)
    client = sdk_client(model.base_url, timeout=1.0, max_retries=2)
    started = time.monotonic()
    try:
        with pytest.raises(ModelRequestError) as caught:
            await run(client, [{"role": "user", "content": "x"}])
    finally:
        await client.close()
    elapsed = time.monotonic() - started
    # The SDK alone takes 3 x 1 s plus backoff and reports one "timed out".
    assert elapsed < 2.5
    error = caught.value
    assert (error.kind, error.attempts, error.status) == ("timeout", 1, None)
    assert "timed out" in str(error)
    assert "1 attempt over 1.0 s; requestTimeout (1 s) covers all attempts" in str(error)


async def test_no_retry_starts_when_its_wait_would_pass_the_deadline(
    model: ScriptedModel,
) -> None:
    # Backoff: 0.375-0.5 s before the 2nd attempt, 0.75-1 s before a 3rd: past 0.8 s.
    model.reply(status=503, error_message="busy", times=3)
    client = sdk_client(model.base_url, timeout=0.8, max_retries=2)
    try:
        with pytest.raises(ModelRequestError) as caught:
            await run(client, [{"role": "user", "content": "x"}])
    finally:
        await client.close()
    assert caught.value.attempts == 2
    assert len(model.requests) == 2
    assert caught.value.elapsed_ms < 800
    assert "requestTimeout (0.8 s) covers all attempts" in str(caught.value)


async def test_a_client_error_is_not_retried(model: ScriptedModel) -> None:
    model.reply(status=400, error_message="bad request", times=3)
    client = sdk_client(model.base_url, max_retries=2)
    try:
        with pytest.raises(ModelRequestError) as caught:
            await run(client, [{"role": "user", "content": "x"}])
    finally:
        await client.close()
    assert (caught.value.status, caught.value.attempts, len(model.requests)) == (400, 1, 1)
    assert "(1 attempt over" in str(caught.value)


async def test_a_refused_connection_is_retried_and_counted() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = sdk_client(f"http://127.0.0.1:{port}/v1", max_retries=1)
    try:
        with pytest.raises(ModelRequestError) as caught:
            await run(client, [{"role": "user", "content": "x"}])
    finally:
        await client.close()
    assert (caught.value.kind, caught.value.attempts) == ("connection", 2)
    assert "(2 attempts over" in str(caught.value)


async def test_a_cancel_during_the_wait_between_attempts_stops_at_once(
    model: ScriptedModel,
) -> None:
    model.reply(status=429, error_message="slow down", times=3)
    client = sdk_client(model.base_url, max_retries=2)
    try:
        task = asyncio.create_task(run(client, [{"role": "user", "content": "x"}]))
        assert await asyncio.to_thread(model.wait_for_requests, 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await client.close()
    assert len(model.requests) == 1


# --- the scripted model enforces the providers' rules (everyone's tests rely on it) ---------


def _history(assistant: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "a"}, assistant, {"role": "user", "content": "b"}]


@pytest.mark.parametrize(
    ("assistant", "rule", "status", "text"),
    [
        ({"role": "assistant"}, ASSISTANT_CONTENT, 500, "'dict object' has no attribute 'content'"),
        ({"role": "assistant", "content": None}, ASSISTANT_CONTENT, 500, "a valid string"),
        (
            {"role": "assistant", "content": "x", "reasoning_content": "thinking"},
            NO_REASONING_CONTENT,
            400,
            "remove the reasoning_content",
        ),
    ],
)
async def test_the_scripted_model_refuses_what_providers_refuse(
    assistant: dict[str, Any], rule: str, status: int, text: str
) -> None:
    fine = {"role": "assistant", "content": "fine"}
    for rules, refused in ((PROVIDER_RULES, True), (PROVIDER_RULES - {rule}, False)):
        with ScriptedModel(rules=rules) as scripted:
            client = openai.AsyncOpenAI(api_key=KEY, base_url=scripted.base_url, max_retries=0)
            try:
                # A well-formed history is accepted under every rule.
                scripted.reply("fine")
                answer = await client.chat.completions.create(model="m", messages=_history(fine))
                assert answer.choices[0].message.content == "fine"
                scripted.reply("accepted")
                request = client.chat.completions.create(model="m", messages=_history(assistant))
                if refused:
                    with pytest.raises(openai.APIStatusError) as caught:
                        await request
                    assert caught.value.status_code == status
                    assert text in caught.value.message
                    assert scripted.pending == 1  # refused before any reply was used
                else:
                    assert (await request).choices[0].message.content == "accepted"
            finally:
                await client.close()


async def test_the_scripted_model_serves_reasoning_and_a_cut_answer(
    model: ScriptedModel, client: Any
) -> None:
    model.reply("partial", reasoning_content="hmm", finish_reason="length")
    response = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}]
    )
    choice = response.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == "partial"
    assert choice.message.model_extra["reasoning_content"] == "hmm"


def test_the_request_modules_do_not_import_openai() -> None:
    code = (
        "import sys; import server.model.request, server.model.served_models, "
        "server.engine.engine; "
        "print('openai' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert completed.stdout.strip() == "False"
