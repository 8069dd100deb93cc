"""What the user sees of a real endpoint's ways, through the real server process.

The server runs over stdio (pytest-lsp) against the scripted model, which
enforces llama.cpp's and DeepSeek's rules; the terminal client runs as a process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import (
    AgentTestClient,
    RunningAsk,
    agent_session,
    ask,
    run_cli,
    server_env,
)
from tests.support.model_server import ScriptedModel, tool_call

NOT_SERVED = "does not list the configured model"


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    return workspace


def running(
    model: ScriptedModel, workspace: Path, *, settings: dict[str, Any] | None = None, **env: str
) -> AbstractAsyncContextManager[AgentTestClient]:
    return agent_session(server_env(model.base_url, **env), [workspace], settings=settings)


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with running(model, workspace, settings={"maxRetries": 0}) as client:
        yield client


async def failed(request: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await request
    return caught.value


async def shown(client: AgentTestClient, text: str, within: float = 10) -> list[str]:
    """The window/showMessage texts containing ``text``, once there is one (or time is up)."""
    deadline = time.monotonic() + within
    while True:
        found = [m.message for m in client.messages if text in m.message]
        if found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.02)


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


# --- how an ask ends ------------------------------------------------------------------


async def test_an_empty_answer_ends_with_stop_reason_empty(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply(None)
    result = await ask(client, prompt="hello?")
    assert (result["stopReason"], result["answer"]) == ("empty", "")
    # The conversation goes on (the empty turn went back as "content": "").
    model.reply("Hello!")
    again = await ask(client, prompt="hello??", sessionId=result["sessionId"])
    assert again["stopReason"] == "end_turn"
    assert model.bodies[-1]["messages"][2] == {"role": "assistant", "content": ""}


async def test_a_cut_answer_ends_with_stop_reason_max_tokens(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("The first half of", finish_reason="length")
    result = await ask(client, prompt="explain")
    assert (result["stopReason"], result["answer"]) == ("max_tokens", "The first half of")


async def test_reasoning_is_not_sent_back(client: AgentTestClient, model: ScriptedModel) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})], reasoning_content="hmm")
    model.reply("It returns 1.", reasoning_content="The file says return 1.")
    first = await ask(client, prompt="what does main return?")
    model.reply("Yes.")
    await ask(client, prompt="sure?", sessionId=first["sessionId"])  # DeepSeek: 400 if echoed
    assert not any("reasoning_content" in m for body in model.bodies for m in body["messages"])


# --- a failed request -------------------------------------------------------------------


async def test_a_failure_reports_attempts_and_time_in_message_and_data(
    model: ScriptedModel, workspace: Path
) -> None:
    async with running(model, workspace, settings={"maxRetries": 1}) as client:
        model.reply(status=503, error_message="overloaded", times=2)
        error = await failed(ask(client, prompt="hi"))
    assert error.code == -32002
    assert set(error.data) == {"status", "kind", "attempts", "elapsedMs"}
    assert (error.data["status"], error.data["kind"], error.data["attempts"]) == (503, "status", 2)
    assert 300 <= error.data["elapsedMs"] < 5000  # one backoff wait of 0.375-0.5 s
    assert "HTTP 503" in error.message and "(2 attempts over " in error.message


async def test_request_timeout_bounds_the_ask_with_its_retries(
    model: ScriptedModel, workspace: Path
) -> None:
    async with running(model, workspace, settings={"requestTimeout": 1, "maxRetries": 2}) as client:
        model.reply("warm")
        await ask(client, prompt="warm up")  # the first ask also pays for importing the SDK
        model.reply("too late", delay=30, times=3)
        begun = time.monotonic()
        error = await failed(ask(client, prompt="hi"))
        took = time.monotonic() - begun
    assert took < 3  # before: 3 attempts of 1 s, plus backoff, reported as "timed out"
    assert (error.data["kind"], error.data["attempts"]) == ("timeout", 1)
    assert error.data["status"] is None
    assert "requestTimeout (1 s) covers all attempts" in error.message


async def test_a_failed_ask_leaves_the_conversation_as_it_was(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("Hello.")
    first = await ask(client, prompt="hi")
    model.reply(status=503, error_message="overloaded")
    await failed(ask(client, prompt="what is in app.py?", sessionId=first["sessionId"]))
    model.reply("A main function.")
    await ask(client, prompt="what is in app.py?", sessionId=first["sessionId"])  # the retry
    # The retry is the only trace of the prompt: no duplicate user turn.
    assert roles(model.bodies[-1]) == ["system", "user", "assistant", "user"]
    assert model.bodies[-1]["messages"][-1]["content"] == "what is in app.py?"


async def test_an_ask_that_ran_tools_before_failing_keeps_those_turns(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    model.reply("Hello.")
    first = await ask(client, prompt="hi")
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    edit = {"path": "app.py", "old_text": "return 1", "new_text": "return 2"}
    model.reply(tool_calls=[tool_call("edit_file", edit)])
    model.reply(status=503, error_message="overloaded")
    await failed(ask(client, prompt="make it return 2", sessionId=first["sessionId"]))
    assert "return 2" in (workspace / "app.py").read_text()  # the edit happened
    model.reply("It returns 2 now.")
    await ask(client, prompt="did it work?", sessionId=first["sessionId"])
    # The model goes on knowing what it changed.
    turns = ["assistant", "tool"] * 2
    assert roles(model.bodies[-1]) == ["system", "user", "assistant", "user", *turns, "user"]


async def test_a_cancel_before_the_model_answered_leaves_no_trace(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("Hello.")
    first = await ask(client, prompt="hi")
    model.reply("never seen", delay=30)
    request = RunningAsk(client, {"prompt": "a slow question", "sessionId": first["sessionId"]})
    assert await asyncio.to_thread(model.wait_for_requests, 2)
    request.cancel()
    assert (await failed(request.result)).code == -32800
    model.reply("ok")
    await ask(client, prompt="a quick question", sessionId=first["sessionId"])
    assert [m["content"] for m in model.bodies[-1]["messages"] if m["role"] == "user"] == [
        "hi",
        "a quick question",
    ]


# --- the endpoint's model list ------------------------------------------------------------


async def test_a_model_the_endpoint_does_not_list_is_reported_once(workspace: Path) -> None:
    with ScriptedModel(models=["qwen2.5-coder:7b", "llama3.2:latest"]) as model:
        async with running(model, workspace, MODEL="qwen2.5-coder") as client:
            for answer in ("one", "two", "three"):
                model.reply(answer)
            first = await ask(client, prompt="hi")
            await ask(client, prompt="again", sessionId=first["sessionId"])
            await ask(client, prompt="and a new conversation")
            warnings = await shown(client, NOT_SERVED)
            assert len(warnings) == 1
            assert "'qwen2.5-coder'" in warnings[0]
            assert "llama3.2:latest, qwen2.5-coder:7b" in warnings[0]  # sorted
            assert model.base_url in warnings[0]
            assert model.model_listings == 1  # checked once per endpoint and model


@pytest.mark.parametrize(
    ("models", "configured"),
    [
        (["scripted"], "scripted"),
        (["llama3.2:latest"], "llama3.2"),  # Ollama's implicit tag
        (None, "anything"),  # an endpoint that does not list (HTTP 404)
    ],
)
async def test_no_warning_when_the_model_is_listed_or_nothing_is(
    workspace: Path, models: list[str] | None, configured: str
) -> None:
    with ScriptedModel(models=models) as model:
        async with running(model, workspace, MODEL=configured) as client:
            model.reply("fine")
            assert (await ask(client, prompt="hi"))["answer"] == "fine"
            # The check is done once the ask is (within its short grace).
            assert model.model_listings == 1
            assert await shown(client, NOT_SERVED, within=0.5) == []


# --- the terminal client ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "stdout", "note"),
    [
        (
            {"content": None},
            "",
            "agent-lsp: the model returned nothing (no text and no tool calls)",
        ),
        (
            {"content": "Half an", "finish_reason": "length"},
            "Half an\n",
            "agent-lsp: the answer was cut off at the model's output token limit",
        ),
    ],
)
def test_the_terminal_says_when_the_model_returned_nothing_or_was_cut(
    model: ScriptedModel, tmp_path: Path, reply: dict[str, Any], stdout: str, note: str
) -> None:
    model.reply(**reply)
    env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))
    result = run_cli("ask", "hi", "--workspace", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == stdout
    assert note in result.stderr.splitlines()


def test_the_terminal_shows_the_model_warning_once_unprefixed_twice(
    tmp_path: Path,
) -> None:
    with ScriptedModel(models=["served-model"]) as model:
        model.reply("hello")
        env = server_env(model.base_url, MODEL="typo-model", XDG_STATE_HOME=str(tmp_path / "s"))
        result = run_cli("ask", "hi", "--workspace", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stderr.splitlines() if line.startswith("agent-lsp: ")]
    warnings = [line for line in shown if NOT_SERVED in line]
    assert len(warnings) == 1, result.stderr
    assert "served-model" in warnings[0]
    assert not warnings[0].startswith("agent-lsp: agent-lsp:")
