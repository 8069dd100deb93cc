"""The request the server sends is the request the openai SDK's ``create()`` sends (issue 26):
same body field for field, same headers, for a 500-message conversation, turn after turn,
streamed and plain; only the way the body is built differs (each message encoded once)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.model.endpoint import ModelSettings, create_client
from server.model.request import complete
from server.model.request_body import BodyEncoder, body_fields, dumps
from server.model.stream import StreamSupport
from tests.support.model_server import ScriptedModel

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool ✓",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read_file", "bash", "mcp__db__query")
]
# Headers that say how long this attempt may take: they differ by the time left.
TIMING_HEADERS = {"x-stainless-read-timeout", "x-stainless-timeout"}


def long_conversation(count: int) -> list[dict[str, Any]]:
    """``count`` messages as an agent builds them: prompts, tool calls, results, answers."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are agent-lsp. 🙂"}]
    i = 0
    while len(messages) < count:
        call = f"call_{i:04d}"
        messages += [
            {"role": "user", "content": [{"type": "text", "text": f"ask {i}: naïve café \u2028"}]},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call, "content": 'a.txt\nb.txt\n\t"quoted" \\ \x07'},
            {"role": "assistant", "content": f"Answer {i}: 1e309 is not a number; null ≠ 0"},
        ]
        i += 1
    return messages[:count]


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    settings = ModelSettings(
        api_key="sk-test-body", base_url=model.base_url, model="m", timeout=20, max_retries=0
    )
    sdk_client = create_client(settings)
    yield sdk_client
    await sdk_client.close()


def headers_of(request: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in request["headers"].items() if k not in TIMING_HEADERS}


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "plain"])
async def test_a_500_message_request_is_the_one_create_would_send(
    model: ScriptedModel, client: Any, streamed: bool
) -> None:
    messages = long_conversation(500)
    options = {"tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": True}
    for turn in range(3):  # the later turns reuse the encoded messages
        model.reply(f"turn {turn}")
        model.reply(f"turn {turn}")
        streaming = StreamSupport() if streamed else None
        await complete(client, model="m", messages=messages, options=options, streaming=streaming)
        extra = {"stream": True, "stream_options": {"include_usage": True}} if streamed else {}
        sdk = await client.chat.completions.create(
            model="m",
            messages=list(messages),
            extra_headers={"x-stainless-retry-count": "0"},
            timeout=10,
            **options,
            **extra,
        )
        if streamed:
            async for _ in sdk:
                pass
        ours, theirs = model.requests[-2], model.requests[-1]
        assert ours["path"] == theirs["path"] == "/v1/chat/completions"
        assert ours["body"] == theirs["body"]  # the same JSON, field for field
        assert len(ours["body"]["messages"]) == 500 + turn
        assert headers_of(ours) == headers_of(theirs)
        messages.append({"role": "user", "content": f"and then {turn}"})


def test_the_encoder_encodes_only_new_messages_and_gives_the_whole_body() -> None:
    encoder = BodyEncoder()
    messages = long_conversation(40)
    body = body_fields({"model": "m", "messages": messages, "timeout": 3}, stream=True)
    assert json.loads(encoder.encode(body)) == {"model": "m", "messages": messages, "stream": True}
    # A new system prompt, a new message: the rest is reused, the body is still exact.
    messages[0] = {"role": "system", "content": "changed"}
    messages.append({"role": "user", "content": "new"})
    assert encoder.encode({"messages": messages, "model": "m"}) == dumps(
        {"messages": messages, "model": "m"}
    )
    # Compaction replaced a message in the middle: that one and the later ones anew.
    messages[10] = {"role": "user", "content": "[summary]"}
    del messages[30:]
    assert json.loads(encoder.encode({"messages": messages})) == {"messages": messages}
    assert encoder.encode({"model": "m"}) == b'{"model":"m"}'


def test_extra_body_wins_over_the_fields_as_in_the_sdk() -> None:
    fields = {"model": "m", "messages": [], "extra_body": {"model": "n", "top_k": 3}}
    assert body_fields(fields) == {"model": "n", "messages": [], "top_k": 3}
