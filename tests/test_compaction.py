"""Context-window management in the agent loop: the real openai SDK against the
scripted model, which enforces a context limit (OpenAI's exact 400) and the role
rules of strict chat templates, and refuses any request with unpaired tool calls."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.agent.archive import ACKNOWLEDGEMENT, SUMMARY_PREFIX, Archive, ContextState, transcript
from server.agent.compaction import NOTE_PREFIX, ContextWindow
from server.agent.events import AgentEvent, CompactionFinished, CompactionStarted
from server.agent.loop import agent_loop
from server.errors import ContextWindowExceededError
from server.model.context_limits import DEFAULT_CONTEXT_WINDOW, Window, window_for
from server.model.endpoint import ModelRequestError, ModelSettings, create_client
from tests.support.model_server import (
    Reply,
    ScriptedModel,
    make_reply,
    prompt_tokens,
    tool_call,
)
from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime

OUTPUT = "".join(f"line {n:04d} of a long listing, the kind a build prints\n" for n in range(400))
assert 20_000 <= len(OUTPUT) <= 24_000  # "each tool returns 20 KB"


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    settings = ModelSettings(
        api_key="sk-test", base_url=model.base_url, model="scripted", timeout=20, max_retries=0
    )
    sdk_client = create_client(settings)
    yield sdk_client
    await sdk_client.close()


def listing_tool() -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        return OUTPUT

    return ToolDefinition("list", "List things.", {"type": "object"}, handler, read_only=True)


def runtime() -> ToolRuntime:
    return ToolRuntime(ToolRegistry([listing_tool()]))


def window(tokens: int, *, threshold: float = 0.8) -> ContextWindow:
    return ContextWindow(
        Window(tokens, "setting"), ContextState(), Archive(), model="scripted", threshold=threshold
    )


def tool_turns(per_ask: int, *, summary: str = "SUMMARY: the user wants listings") -> Any:
    """A model that calls ``list`` ``per_ask`` times per ask, then answers; a request
    offering no tools (compaction's summary request) gets ``summary``."""

    def respond(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return make_reply(summary)
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        calls = [c["id"] for m in messages[last_user:] for c in m.get("tool_calls") or ()]
        done = int(calls[-1].rsplit("-t", 1)[1]) if calls else 0
        if done < per_ask:
            return make_reply(
                tool_calls=[tool_call("list", {}, id=f"c{uuid.uuid4().hex[:8]}-t{done + 1}")]
            )
        return make_reply(f"listed {per_ask} times")

    return respond


def chat(body: dict[str, Any]) -> bool:
    return bool(body.get("tools"))


# -- the budget ---------------------------------------------------------------------------


def test_the_window_comes_from_the_setting_the_model_or_the_default() -> None:
    assert window_for("gpt-4o-mini", 50_000) == Window(50_000, "setting")
    assert window_for("gpt-4o-mini") == Window(128_000, "known model")
    assert window_for("openai/gpt-4.1-mini") == Window(1_047_576, "known model")
    assert window_for("gpt-4") == Window(8_192, "known model")
    assert window_for("gpt-4-turbo-2024-04-09").tokens == 128_000  # the longest prefix wins
    assert window_for("deepseek-chat").tokens == 131_072
    assert window_for("qwen2.5-coder:7b") == Window(DEFAULT_CONTEXT_WINDOW, "default")


async def test_the_estimate_is_the_providers_count_plus_what_was_appended(
    model: ScriptedModel, client: Any
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hi." * 50},
    ]
    budget = window(100_000)
    assert budget.tokens(messages) > 0  # characters / 4 before any response
    model.reply("hi " * 300)
    await agent_loop(messages, runtime(), client=client, model="scripted", window=budget)

    sent = model.bodies[0]
    assert budget.state.prompt_tokens == prompt_tokens(sent)
    # What was appended since (the answer) is estimated at the calibrated rate.
    answer = messages[-1]
    grown = budget.tokens(messages) - prompt_tokens(sent)
    assert grown == pytest.approx(len(answer["content"]) * budget.state.tokens_per_char, abs=10)
    # Against the provider's own count of the same messages, the estimate is close.
    actual = prompt_tokens({"messages": messages})
    assert abs(budget.tokens(messages) - actual) <= 0.05 * actual


# -- compaction in the loop ------------------------------------------------------------


async def test_a_long_ask_stays_within_the_window_with_notes_and_a_summary(
    client: Any,
) -> None:
    """100 tool turns of 20 KB each against a 16,000-token model: without compaction the
    history would pass 500,000 tokens."""
    events: list[AgentEvent] = []
    with ScriptedModel(tool_turns(100), context_limit=16_000, alternation=True) as model:
        settings = ModelSettings(api_key="k", base_url=model.base_url, model="scripted")
        sdk = create_client(settings)
        budget = window(16_000)
        messages = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "List everything a hundred times."},
        ]
        result = await agent_loop(
            messages,
            runtime(),
            client=sdk,
            model="scripted",
            max_turns=110,
            on_event=events.append,
            window=budget,
        )
        await sdk.close()
        bodies = model.bodies
        refused = model.refused

    assert result.stop_reason == "end_turn" and result.text == "listed 100 times"
    assert refused == []  # no request was over the limit, unpaired, or out of role order
    chats = [b for b in bodies if chat(b)]
    assert len(chats) == 101
    sizes = [prompt_tokens(b) for b in chats]
    assert max(sizes) <= 16_000 * 0.8 + 6_000  # the threshold, plus one turn appended

    # Old outputs became notes; the latest turn is always verbatim.
    last = chats[-1]["messages"]
    notes = [m["content"] for m in last if m["role"] == "tool" and m["content"] != OUTPUT]
    assert all(n.startswith(NOTE_PREFIX) for n in notes)
    assert last[-1] == {
        "role": "tool",
        "tool_call_id": last[-2]["tool_calls"][0]["id"],
        "content": OUTPUT,
    }
    assert notes and "list {} returned 400 lines (21,200 characters)" in notes[0]
    # Summaries were needed too: the layout keeps roles alternating and the request.
    summaries = [b for b in bodies if not chat(b)]
    assert summaries
    assert [m["role"] for m in last[:4]] == ["system", "user", "assistant", "user"]
    assert last[1]["content"].startswith(SUMMARY_PREFIX)
    assert "SUMMARY: the user wants listings" in last[1]["content"]
    assert last[2]["content"] == ACKNOWLEDGEMENT
    assert last[3]["content"] == "List everything a hundred times."
    # Every elided output is in the archive; the transcript holds every call again.
    calls = [
        c["id"] for m in transcript(messages, budget.archive) for c in m.get("tool_calls") or ()
    ]
    assert len(calls) == 100
    assert all(budget.archive.outputs.get(c, OUTPUT) == OUTPUT for c in calls)
    assert set(budget.archive.outputs) <= set(calls)

    started = [e for e in events if isinstance(e, CompactionStarted)]
    finished = [e for e in events if isinstance(e, CompactionFinished)]
    assert started and len(started) == len(finished)
    assert all(f.tokens_after < f.tokens_before and f.trigger == "threshold" for f in finished)


async def test_the_summary_request_holds_the_older_turns_and_the_current_request(
    client: Any,
) -> None:
    with ScriptedModel(
        tool_turns(3, summary="They asked for listings twice."), alternation=True
    ) as model:
        sdk = create_client(ModelSettings(api_key="k", base_url=model.base_url, model="scripted"))
        budget = window(100_000)
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
        for prompt in ("First: list the build output.", "Second: list it again."):
            messages.append({"role": "user", "content": prompt})
            await agent_loop(messages, runtime(), client=sdk, model="scripted", window=budget)
        messages.append({"role": "user", "content": "Third: what changed?"})
        # A budget the earlier asks pass even with their outputs elided: a summary.
        budget.threshold = 0.01
        await agent_loop(messages, runtime(), client=sdk, model="scripted", window=budget)
        await sdk.close()
        summary_request = next(b for b in model.bodies if not chat(b))
        after = next(b for b in model.bodies[model.bodies.index(summary_request) :] if chat(b))

    system, user = summary_request["messages"]
    assert system["role"] == "system" and "compact the history" in system["content"]
    text = user["content"]
    assert "User: First: list the build output." in text
    assert "User: Second: list it again." in text
    assert text.count("(called list {})") == 6  # both earlier asks' calls
    assert "Tool result (list): " + NOTE_PREFIX in text  # outputs went in as their notes
    assert OUTPUT not in text
    assert "Assistant: listed 3 times" in text
    assert text.endswith("verbatim after your summary:\nThird: what changed?")
    assert "tools" not in summary_request

    sent = after["messages"]
    assert (
        sent[1]["content"]
        == f"{SUMMARY_PREFIX}\nThey asked for listings twice."
        + sent[1]["content"].split("They asked for listings twice.")[1]
    )
    assert [m["role"] for m in sent[:4]] == ["system", "user", "assistant", "user"]
    assert sent[3]["content"] == "Third: what changed?"
    assert not any("First: list" in str(m.get("content")) for m in sent)
    # The archive keeps what was summarized, in order, for the history view.
    prompts = [m["content"] for m in transcript(messages, budget.archive) if m["role"] == "user"]
    assert prompts == [
        "First: list the build output.",
        "Second: list it again.",
        "Third: what changed?",
    ]


async def test_a_context_length_error_compacts_and_retries_once(client: Any) -> None:
    """The window was set far too large: the provider's 400 says how large it is."""
    with ScriptedModel(tool_turns(6), context_limit=20_000, alternation=True) as model:
        sdk = create_client(ModelSettings(api_key="k", base_url=model.base_url, model="scripted"))
        budget = window(1_000_000)
        messages = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "List six times."},
        ]
        events: list[AgentEvent] = []
        result = await agent_loop(
            messages, runtime(), client=sdk, model="scripted", window=budget, on_event=events.append
        )
        await sdk.close()
        refused = model.refused

    assert result.text == "listed 6 times"
    assert [r["error"]["code"] for r in refused] == ["context_length_exceeded"]
    assert refused[0]["error"]["message"].startswith("This model's maximum context length is 20000")
    assert budget.window == 20_000  # learned from the error, kept for the conversation
    assert budget.state.provider_window == 20_000
    overflow, *later = [e for e in events if isinstance(e, CompactionFinished)]
    assert overflow.trigger == "overflow" and overflow.window == 20_000
    # From then on it compacts before requests, within the learned window.
    assert all(e.trigger == "threshold" and e.window == 20_000 for e in later)


async def test_a_request_that_cannot_fit_fails_with_the_window_and_keeps_the_history(
    client: Any,
) -> None:
    with ScriptedModel(tool_turns(1), context_limit=2_000) as model:
        sdk = create_client(ModelSettings(api_key="k", base_url=model.base_url, model="scripted"))
        budget = window(2_000)
        messages = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "Read this: " + "x" * 40_000},
        ]
        with pytest.raises(ContextWindowExceededError) as caught:
            await agent_loop(messages, runtime(), client=sdk, model="scripted", window=budget)
        await sdk.close()
        requests = len(model.bodies)

    assert caught.value.data == {
        "contextTokens": caught.value.data["contextTokens"],
        "contextWindow": 2_000,
    }
    assert caught.value.data["contextTokens"] > 2_000
    assert "contextWindow" in caught.value.message and "start a new session" in caught.value.message
    assert requests == 1  # nothing could be compacted, so no retry
    assert len(messages) == 2


@pytest.mark.parametrize(
    ("status", "body", "window", "request_tokens"),
    [
        # OpenAI
        (
            400,
            {
                "error": {
                    "message": (
                        "This model's maximum context length is 8192 tokens. However, your "
                        "messages resulted in 8227 tokens. Please reduce the length of the "
                        "messages."
                    ),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            8192,
            8227,
        ),
        # DeepSeek (its code is the generic one: the message decides)
        (
            400,
            {
                "error": {
                    "message": (
                        "This model's maximum context length is 131072 tokens. However, you "
                        "requested 131134 tokens (122942 in the messages, 8192 in the "
                        "completion). Please reduce the length of the messages or completion."
                    ),
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            },
            131072,
            122942,
        ),
        # vLLM (OpenAI-style message, its own error object)
        (
            400,
            {
                "object": "error",
                "message": (
                    "This model's maximum context length is 16384 tokens. However, you requested "
                    "122946 tokens (112946 in the messages, 10000 in the completion). Please "
                    "reduce the length of the messages or completion."
                ),
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            16384,
            112946,
        ),
        # vLLM v1
        (
            400,
            {
                "object": "error",
                "message": (
                    "The decoder prompt (length 17772) is longer than the maximum model length of"
                    " 16384. Make sure that `max_model_len` is no smaller than the number of text"
                    " tokens."
                ),
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            16384,
            17772,
        ),
        # llama.cpp's server, with its numbers beside the message (400 now, 500 before)
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 14429,
                    "n_ctx": 8192,
                }
            },
            8192,
            14429,
        ),
        (
            500,
            {
                "error": {
                    "code": 500,
                    "message": (
                        "the request exceeds the available context size. try increasing the "
                        "context size or enable context shift"
                    ),
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 1407,
                    "n_ctx": 256,
                }
            },
            256,
            1407,
        ),
        # llama-cpp-python
        (
            400,
            {
                "error": {
                    "message": "Requested tokens (2285) exceed context window of 2048",
                    "type": "internal_server_error",
                    "param": None,
                    "code": None,
                }
            },
            2048,
            2285,
        ),
        # Ollama
        (400, {"error": "the input length exceeds the context length"}, None, None),
        # LM Studio
        (400, {"error": "Input length 6491 exceeds context length 1500"}, 1500, 6491),
    ],
)
async def test_each_providers_context_length_error_is_recognised(
    model: ScriptedModel,
    client: Any,
    status: int,
    body: dict[str, Any],
    window: int | None,
    request_tokens: int | None,
) -> None:
    model.reply(status=status, body=body)
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop([{"role": "user", "content": "hi"}], runtime(), client=client, model="m")
    overflow = caught.value.overflow
    assert overflow is not None
    assert (overflow.window, overflow.request_tokens) == (window, request_tokens)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (
            400,
            {
                "error": {
                    "message": "Invalid model name",
                    "type": "invalid_request_error",
                    "code": None,
                }
            },
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached for tokens per min (TPM)",
                    "type": "tokens",
                    "code": "rate_limit_exceeded",
                }
            },
        ),
        (500, {"error": {"message": "The server had an error", "type": "server_error"}}),
    ],
)
async def test_other_errors_are_not_taken_for_a_full_window(
    model: ScriptedModel, client: Any, status: int, body: dict[str, Any]
) -> None:
    model.reply(status=status, body=body, times=3)
    with pytest.raises(ModelRequestError) as caught:
        await agent_loop([{"role": "user", "content": "hi"}], runtime(), client=client, model="m")
    assert caught.value.overflow is None


def test_the_archive_is_bounded_oldest_first() -> None:
    archive = Archive(limit=50_000)
    for n in range(10):
        archive.keep_output(f"call{n}", OUTPUT)
    assert list(archive.outputs) == ["call8", "call9"]
    restored = Archive.from_json(json.loads(json.dumps(archive.to_json())))
    assert restored.outputs == archive.outputs
