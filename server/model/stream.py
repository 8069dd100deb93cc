"""One attempt at a chat.completions request, streamed or not, and its assistant message.

:func:`request_once` makes one attempt and returns a :class:`ModelReply`:
the assistant message as the Chat Completions API defines it (``role``,
``content`` always a string, ``tool_calls`` with ``id``/``type``/``function``,
nothing else: never ``reasoning_content``, ``refusal`` or ``function_call``), so
it can go back into the history as it is; the ``finish_reason``; the ``usage``.
Text is passed to ``on_delta(channel, text)`` as it arrives: ``"answer"`` for
the message's text, ``"reasoning"`` for the reasoning some providers send beside
it (DeepSeek's ``reasoning_content``, OpenRouter's ``reasoning``), which is shown
and never sent back. A plain request passes its whole text at once, so a caller
sees the same deltas either way.

Streaming (``stream: true``, Server-Sent Events) is what a :class:`StreamSupport`
allows; without one the request is plain (a summary, a check). A streamed
response is assembled exactly: text in order, tool calls from their fragments by
``index`` (the id, type and name from the first fragment that has them, the
arguments concatenated), usage from the final chunk (``stream_options:
{include_usage: true}``). An endpoint that refuses streaming -- an HTTP error
naming ``stream``, an answer that is not an event stream, or an event stream with
no event (llama-cpp-python's, when tools are offered) -- is asked again
plainly, once (or, when it answered plainly anyway, that answer is used), and its
:class:`StreamSupport` remembers it; one that refuses only ``stream_options``
streams without it. Cancelling closes the stream's connection at once (the
endpoint sees it and can stop generating).

Errors are the SDK's, as they are (``server.model.request.complete`` translates
them, counts attempts and retries); an answer that is not one is a
:class:`~server.model.endpoint.ModelRequestError` (``kind="malformed"``).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final, cast

from .endpoint import ModelRequestError, scrub
from .messages import AssistantMessage, ToolCall, assistant_message
from .request_body import BodyEncoder, body_fields

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

ANSWER: Final = "answer"
REASONING: Final = "reasoning"
# Fields providers put reasoning text in, beside ``content`` (never sent back).
REASONING_FIELDS: Final = ("reasoning_content", "reasoning")

DeltaSink = Callable[[str, str], None]
"""``on_delta(channel, text)``: ``channel`` is :data:`ANSWER` or :data:`REASONING`."""

# An error naming these is the endpoint refusing streaming (or only its usage option);
# ``\b`` keeps "upstream" out.
_OPTIONS_REFUSED = re.compile(r"stream_options|include_usage", re.IGNORECASE)
_STREAM_REFUSED = re.compile(r"\bstream(ing|ed)?\b", re.IGNORECASE)
# Statuses that say nothing about the request's shape (auth, rate, missing model).
_NOT_A_REFUSAL = frozenset({401, 403, 404, 408, 409, 429})


@dataclass
class StreamSupport:
    """What one endpoint accepts; it learns from refusals and keeps what it learned.

    The engine keeps one per endpoint for the server's lifetime, so an endpoint
    that refuses streaming costs one extra request, once.
    """

    enabled: bool = True
    include_usage: bool = True  # send stream_options.include_usage
    refusal: str = ""  # the endpoint's words when it refused (for the log)

    def switch_off(self, refusal: str) -> None:
        self.enabled = False
        self.refusal = refusal


@dataclass(frozen=True)
class ModelReply:
    """The first choice of one response."""

    message: AssistantMessage  # API-shaped (server.model.messages.assistant_message)
    finish_reason: str | None
    usage: Any  # openai.types.CompletionUsage, or None when the endpoint sent none
    reasoning: str = ""  # shown to the user, never sent back
    streamed: bool = False

    @property
    def text(self) -> str:
        return str(self.message["content"])

    @property
    def tool_calls(self) -> list[ToolCall]:
        return list(self.message.get("tool_calls") or ())


class _StreamRefused(Exception):
    """The endpoint did not stream this request; nothing was passed to ``on_delta``.

    ``completion`` is its plain answer when it sent one instead (it ignored
    ``stream``): used as it is, not asked for again.
    """

    def __init__(self, reason: str, completion: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.completion = completion


async def request_once(
    client: AsyncOpenAI,
    fields: dict[str, Any],
    *,
    streaming: StreamSupport | None = None,
    on_delta: DeltaSink | None = None,
) -> ModelReply:
    """One attempt (see the module docstring): ``fields`` go to ``create`` as they are
    (``model``, ``messages``, ``tools``, ``timeout``, ...). ``streaming=None`` asks
    plainly. ``CancelledError`` propagates, the connection closed.
    """
    sink = on_delta or _ignore
    if streaming is not None and streaming.enabled:
        try:
            return await _streamed(client, fields, streaming, sink)
        except _StreamRefused as refused:
            streaming.switch_off(str(refused))
            log.info(  # expected of some endpoints: nothing for the user to do
                "The model endpoint %s does not stream (%s); its answers arrive whole.",
                _endpoint(client) or "",
                refused,
            )
            if refused.completion is not None:
                return _reply_of(client, _namespace(refused.completion), sink)
    return await _plain(client, fields, sink)


async def _streamed(
    client: AsyncOpenAI, fields: dict[str, Any], streaming: StreamSupport, on_delta: DeltaSink
) -> ModelReply:
    import openai  # already loaded: the caller built ``client`` with it
    from openai import AsyncStream

    extra = {"stream_options": {"include_usage": True}} if streaming.include_usage else {}
    try:
        # Chunks as plain dicts (``object``): the SDK's model for each chunk costs more
        # than reading it; read here through attribute namespaces, as its objects were.
        stream = await _post(client, fields, stream_cls=AsyncStream[object], stream=True, **extra)
    except openai.APIStatusError as exc:
        refused = _refused(exc)
        if refused == "stream_options" and streaming.include_usage:
            streaming.include_usage = False
            log.info("The model endpoint refuses stream_options; streaming without usage.")
            return await _streamed(client, fields, streaming, on_delta)
        if refused is not None:
            reason = _scrubbed(client, f"HTTP {exc.status_code}: {exc.message}")
            raise _StreamRefused(reason) from None
        raise

    assembler = _Assembler(on_delta)
    try:
        kind = stream.response.headers.get("content-type", "")
        if "json" in kind or "html" in kind:
            refusal = f"it answered a streamed request with {kind.split(';')[0]}"
            raise _StreamRefused(refusal, _completion_in(await stream.response.aread()))
        async for chunk in stream:
            assembler.add(_namespace(chunk))
    finally:
        await stream.close()  # at once on cancel: the endpoint sees the connection close
    if not assembler.chunks:
        # Nothing was shown, so asking plainly loses nothing. llama-cpp-python answers a
        # streamed request with tools this way (HTTP 200, an empty event stream).
        what = "an empty event stream" if "event-stream" in kind else kind or "no content type"
        raise _StreamRefused(f"it answered a streamed request with {what}")
    if not assembler.choices:
        raise _malformed(client, "no choices in the stream")
    return assembler.reply()


async def _plain(client: AsyncOpenAI, fields: dict[str, Any], on_delta: DeltaSink) -> ModelReply:
    response = await _post(client, fields)
    return _reply_of(client, _namespace(response), on_delta)


# Each conversation's messages encoded once (server.model.request_body).
_ENCODER = BodyEncoder()


async def _post(
    client: AsyncOpenAI, fields: dict[str, Any], *, stream_cls: Any = None, **more: Any
) -> Any:
    """What ``client.chat.completions.create(**fields, **more)`` does, the body already
    JSON: the SDK's transport, retries, headers, auth and error types, without its
    per-field transform and its second encoding of every message."""
    from openai import not_given
    from openai._base_client import make_request_options

    options = make_request_options(
        extra_headers={"Content-Type": "application/json", **(fields.get("extra_headers") or {})},
        extra_query=fields.get("extra_query"),
        timeout=fields["timeout"] if "timeout" in fields else not_given,
        security={"bearer_auth": True},
    )
    content = _ENCODER.encode(body_fields(fields, **more))
    return await client.post(
        "/chat/completions",
        content=content,
        options=options,
        cast_to=object,
        stream=stream_cls is not None,
        stream_cls=stream_cls,
    )


def _reply_of(client: AsyncOpenAI, response: Any, on_delta: DeltaSink) -> ModelReply:
    """The reply in a whole (not streamed) response; its text passed on at once."""
    choices = getattr(response, "choices", None)
    first = choices[0] if choices else None
    message = getattr(first, "message", None)
    if message is None:
        raise _malformed(client, "no choices" if not choices else "no message in the first choice")
    reasoning = _reasoning_of(message)
    text = getattr(message, "content", None) or getattr(message, "refusal", None) or ""
    if reasoning:
        on_delta(REASONING, reasoning)
    if text:
        on_delta(ANSWER, text)
    calls = [_plain_call(call) for call in getattr(message, "tool_calls", None) or ()]
    return ModelReply(
        assistant_message(text, calls),
        getattr(first, "finish_reason", None),
        getattr(response, "usage", None),
        reasoning,
    )


# -- assembling a stream -------------------------------------------------------------


@dataclass
class _PartialCall:
    index: int
    id: str = ""
    type: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, fragment: Any) -> None:
        self.id = self.id or (getattr(fragment, "id", None) or "")
        self.type = self.type or (getattr(fragment, "type", None) or "")
        name, arguments = _fragment_parts(fragment, self.type or "function")
        # The name comes whole in one fragment; some endpoints repeat it in every one.
        if name and name != self.name:
            self.name += name
        if arguments:
            self.arguments.append(arguments)

    def as_call(self) -> ToolCall:
        return _call(self.id, self.type or "function", self.name, "".join(self.arguments))


class _Assembler:
    """The first choice of a stream of ``ChatCompletionChunk``s, put together."""

    def __init__(self, on_delta: DeltaSink) -> None:
        self._on_delta = on_delta
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._last: _PartialCall | None = None
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.chunks = 0
        self.choices = 0  # chunks that carried the first choice

    def add(self, chunk: Any) -> None:
        self.chunks += 1
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        for choice in getattr(chunk, "choices", None) or ():
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # n > 1 is never asked for
            self.choices += 1
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._delta(delta)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason

    def _delta(self, delta: Any) -> None:
        reasoning = _reasoning_of(delta)
        if reasoning:
            self._reasoning.append(reasoning)
            self._on_delta(REASONING, reasoning)
        content, refusal = getattr(delta, "content", None), getattr(delta, "refusal", None)
        for text, parts in ((content, self._content), (refusal, self._refusal)):
            if isinstance(text, str) and text:
                parts.append(text)
                self._on_delta(ANSWER, text)
        for fragment in getattr(delta, "tool_calls", None) or ():
            self._fragment(fragment)

    def _fragment(self, fragment: Any) -> None:
        index = getattr(fragment, "index", None)
        if not isinstance(index, int):
            # Some endpoints leave the index out: a new id starts a new call.
            last, new_id = self._last, getattr(fragment, "id", None)
            if last is not None and (not new_id or last.id in ("", new_id)):
                index = last.index
            else:
                index = max(self._calls, default=-1) + 1
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PartialCall(index)
        call.add(fragment)
        self._last = call

    def reply(self) -> ModelReply:
        text = "".join(self._content) or "".join(self._refusal)
        calls = [self._calls[index].as_call() for index in sorted(self._calls)]
        message = assistant_message(text, calls)
        return ModelReply(message, self.finish_reason, self.usage, "".join(self._reasoning), True)


# -- helpers ----------------------------------------------------------------------------


def _call(call_id: str, kind: str, name: str, arguments: str) -> ToolCall:
    # An endpoint that sends no id still needs one: each call is answered by its id.
    call_id = call_id or f"call_{uuid.uuid4().hex[:24]}"
    if kind == "function":
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
    # Another type (e.g. "custom") is answered with an error, but kept as the model sent it.
    other = {"id": call_id, "type": kind, kind: {"name": name, "input": arguments}}
    return cast(ToolCall, other)  # the body under its type's name (ToolCall says so)


def _plain_call(call: Any) -> ToolCall:
    kind = getattr(call, "type", None) or "function"
    name, arguments = _fragment_parts(call, kind)
    return _call(getattr(call, "id", None) or "", kind, name, arguments)


def _fragment_parts(call: Any, kind: str) -> tuple[str, str]:
    """(name, arguments) of a call or fragment of type ``kind``."""
    if kind == "function":
        function = getattr(call, "function", None)
        return (
            getattr(function, "name", None) or "",
            getattr(function, "arguments", None) or "",
        )
    body = getattr(call, kind, None)
    if isinstance(body, dict):
        return str(body.get("name") or ""), str(body.get("input") or "")
    return getattr(body, "name", None) or "", getattr(body, "input", None) or ""


def _completion_in(body: bytes) -> dict[str, Any] | None:
    """The completion in a plain answer to a streamed request, if it is one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("choices"), list) else None


def _namespace(value: Any) -> Any:
    """JSON as attributes, the way the SDK's objects are read here."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(k): _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(item) for item in value]
    return value


def _reasoning_of(delta: Any) -> str:
    for name in REASONING_FIELDS:
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _refused(exc: Any) -> str | None:
    """ "stream_options" or "stream" when the error refuses that part of the request."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status in _NOT_A_REFUSAL or status > 501:
        return None
    text = f"{getattr(exc, 'message', '')} {json.dumps(getattr(exc, 'body', None), default=str)}"
    if _OPTIONS_REFUSED.search(text):
        return "stream_options"
    if _STREAM_REFUSED.search(text):
        return "stream"
    return None


def _secrets(client: AsyncOpenAI) -> list[str]:
    api_key = getattr(client, "api_key", None)
    return [api_key] if isinstance(api_key, str) else []


def _endpoint(client: AsyncOpenAI) -> str | None:
    return str(getattr(client, "base_url", "") or "").rstrip("/") or None


def _scrubbed(client: AsyncOpenAI, text: str) -> str:
    return scrub(text, _secrets(client))


def _malformed(client: AsyncOpenAI, what: str) -> ModelRequestError:
    base_url = _endpoint(client)
    where = f" from {base_url}" if base_url else ""
    message = _scrubbed(client, f"Malformed model response{where}: {what}")
    return ModelRequestError(message, kind="malformed")


def _ignore(channel: str, text: str) -> None:
    pass
