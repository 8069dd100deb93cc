"""A conversation's messages: their four roles as types, and the helpers that read them.

The history is the Chat Completions ``messages`` list, kept in the shape it is sent in
(``server.model.request``) and saved in (``server.conversations.session_files``): plain dicts,
typed here so that the loop (``server.agent.loop``), compaction
(``server.agent.compaction``, ``summary_text``) and the archive (``server.agent.archive``)
agree on what each role carries. A history read back from a session file is trusted to
have this shape (the server wrote it); the readers below still tolerate a missing field.

The model's replies are built here too (:func:`assistant_message`): every endpoint
accepts that one shape, never the SDK's parsed object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, cast

MESSAGE_OVERHEAD_CHARS = 16  # role markers and separators a chat template adds


class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text, as the model wrote it (possibly invalid)


class CustomCall(TypedDict):
    name: str
    input: str  # free text (the Responses-style custom tools some endpoints send)


class ToolCall(TypedDict):
    """One call of an assistant message: ``type`` names the key holding its body
    (another type than these two is kept as the endpoint sent it, under its name, and
    answered with an error)."""

    id: str
    type: str  # "function", else what the endpoint sent ("custom")
    function: NotRequired[FunctionCall]
    custom: NotRequired[CustomCall]


class TextPart(TypedDict):
    type: str  # "text"
    text: str


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[TextPart]  # parts: a client may send them; read with content_text


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str
    tool_calls: NotRequired[list[ToolCall]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


# -- building -------------------------------------------------------------------------


def system_message(text: str) -> SystemMessage:
    return {"role": "system", "content": text}


def user_message(text: str) -> UserMessage:
    return {"role": "user", "content": text}


def assistant_message(text: str, calls: Sequence[ToolCall] = ()) -> AssistantMessage:
    """The assistant turn as it goes back to the endpoint (API fields only)."""
    message: AssistantMessage = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool_message(call_id: str, output: str) -> ToolMessage:
    return {"role": "tool", "tool_call_id": call_id, "content": output}


# -- reading --------------------------------------------------------------------------


def tool_calls(message: Message) -> Sequence[ToolCall]:
    """An assistant message's calls (none for the other roles)."""
    if message.get("role") != "assistant":
        return ()
    return cast(AssistantMessage, message).get("tool_calls") or ()


def call_parts(call: ToolCall) -> tuple[str, str]:
    """(name, raw arguments) of a call of any type (as ``server.model.stream`` shapes it)."""
    fields: Mapping[str, object] = call  # the body is under the type's name, whatever it is
    body = fields.get(call.get("type") or "function")
    if not isinstance(body, dict):
        return "", ""
    return str(body.get("name") or ""), str(body.get("arguments", body.get("input")) or "")


def calls_by_id(messages: Iterable[Message]) -> dict[str, tuple[str, str]]:
    """Every call of ``messages``: its id -> (name, raw arguments)."""
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        for call in tool_calls(message):
            calls[str(call.get("id"))] = call_parts(call)
    return calls


def content_text(content: object) -> str:
    """A message's text (its content, or its text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def message_chars(message: Message) -> int:
    """A message's size by our count: its text, its tool calls, a fixed overhead."""
    size = MESSAGE_OVERHEAD_CHARS + len(content_text(message.get("content")))
    # tool_calls() and call_parts() inlined, the message read as a plain mapping: this runs
    # for every message of every estimate (a call, a cast or an isinstance per message shows).
    fields: Mapping[str, Any] = message
    for call in fields.get("tool_calls") or ():
        body = call.get("function") or call.get("custom") or {}
        size += len(str(body.get("name") or ""))
        size += len(str(body.get("arguments") or body.get("input") or ""))
        size += MESSAGE_OVERHEAD_CHARS
    return size


def last_user(messages: Sequence[Message]) -> int | None:
    """The index of the last user message after the system prompt (None: there is none)."""
    for index in range(len(messages) - 1, 0, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def turn_starts(messages: Sequence[Message], start: int) -> list[int]:
    """Indices of the assistant messages from ``start`` (each begins a turn: the
    message and the tool messages answering it)."""
    return [i for i in range(start, len(messages)) if messages[i].get("role") == "assistant"]
