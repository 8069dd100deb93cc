"""The agent loop shared by every front end.

Ask the model, run the tool calls it makes, feed the results back, repeat until
it answers without tools (or the turn budget runs out). The loop appends to the
message list it is given, so a conversation continues where it stopped.

Invariants the rest of the server relies on:

- Every tool call of an appended assistant message gets exactly one
  ``role="tool"`` message with its ``tool_call_id`` -- errors, unknown tools,
  unsupported call types, cancellation and tool bugs included -- so the history
  is always valid to send again.
- A cancelled (or failed) model request appends nothing.
- An assistant message is appended in the one shape every endpoint accepts
  (:func:`~server.model.messages.assistant_message`: ``content`` a string, reasoning
  text never), never as the SDK parsed it.
- The model's text reaches ``on_event`` as it streams in (``TextDelta``), the whole
  of it, in order, before the turn's tool calls start.
- A response cut at the token limit (``finish_reason: "length"``) ends the run
  with ``stop_reason="max_tokens"``; its tool calls (whose arguments may be cut
  too) are not run but answered with an error, so the history stays valid.
- Consecutive calls to read-only tools in one response run concurrently; their
  results are still appended in call order. Any other call is a barrier.
- With a ``window`` (``server.agent.compaction``), each request goes through it: the
  history may be compacted in place before it, and once after the provider's
  context-length error.

``openai`` is not imported here at module level (it costs ~1 s); the client is
passed in, and :mod:`server.model.request` (one request, its retries and the shape
of what goes back) looks the SDK's types up when it runs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from tooling.context import CallWaits, ProgressSink, ToolContext
from tooling.contract import is_error

from ..model.messages import Message, ToolCall, call_parts, tool_message
from ..model.request import complete
from ..model.stream import StreamSupport
from .events import (
    AgentEvent,
    EventSink,
    FinalAnswer,
    ModelRequestStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from tooling.runtime import ToolRuntime

    from .compaction import ContextWindow

log = logging.getLogger(__name__)

PREVIEW_LIMIT = 2000
CANCELLED_OUTPUT = "Error: cancelled"
CUT_OFF_OUTPUT = (
    "Error: not run: the response was cut off at the model's token limit "
    "(finish_reason: length), so this call may be incomplete"
)

# end_turn: the model answered; empty: it answered nothing (no text, no tool calls);
# max_tokens: its response was cut at the token limit; max_turns: the turn budget ran out.
StopReason = Literal["end_turn", "empty", "max_tokens", "max_turns"]


@dataclass
class ToolCallRecord:
    id: str
    name: str
    arguments: str
    ok: bool
    output: str  # preview, at most PREVIEW_LIMIT characters
    duration_ms: float  # the time the user took to answer its permission request excluded
    waited_ms: float = 0.0  # that time


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    # The last response's prompt_tokens (None if it reported none): the context size.
    last_prompt_tokens: int | None = field(default=None, compare=False)

    def add(self, usage: object) -> None:
        """Add a response's ``usage`` (``None`` on endpoints that do not report it)."""
        self.last_prompt_tokens = getattr(usage, "prompt_tokens", None) or None
        if usage is None:
            return
        self.prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
        self.completion_tokens += getattr(usage, "completion_tokens", 0) or 0
        self.total_tokens += getattr(usage, "total_tokens", 0) or 0

    def as_dict(self) -> dict[str, int]:
        totals = asdict(self)
        del totals["last_prompt_tokens"]
        return totals


@dataclass
class LoopResult:
    text: str
    stop_reason: StopReason
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0


def preview(output: str, limit: int = PREVIEW_LIMIT) -> str:
    """``output`` cut to at most ``limit`` characters, saying how much was left out."""
    if len(output) <= limit:
        return output
    # Sized with len(output) so the real (smaller) count always fits within ``limit``.
    marker = f"\n… [{len(output)} more characters]"
    head = output[: limit - len(marker)]
    return head + f"\n… [{len(output) - len(head)} more characters]"


async def agent_loop(
    messages: list[Message],
    runtime: ToolRuntime,
    *,
    client: AsyncOpenAI,
    model: str,
    max_turns: int = 50,
    on_event: EventSink | None = None,
    context: ToolContext | None = None,
    window: ContextWindow | None = None,
    streaming: StreamSupport | None = None,
) -> LoopResult:
    """Run the loop on ``messages`` (appended to in place) and return the final text.

    One turn is one chat.completions request. The run stops with ``end_turn`` when
    the model answers without tools, ``empty`` when it answers nothing at all (no
    text, no tool calls; the text is ``""``), ``max_tokens`` when its response was
    cut at the token limit, and ``max_turns`` when ``max_turns`` requests have been
    made and the model still wants tools (those calls are run and paired; the text
    is the last assistant text).

    ``context`` is what the tools may use for this run (the conversation's ledger, the
    editor's documents); each call gets its own copy via ``for_call``. Without one,
    the tools get a fresh context for the run.

    ``streaming`` is what the endpoint is known to accept (the engine keeps one per
    endpoint); without one, requests stream and what is learned lasts this run.

    Raises :class:`~server.model.endpoint.ModelRequestError` when a request fails;
    ``CancelledError`` propagates after the history has been made consistent.
    """
    if max_turns < 1:
        raise ValueError("max_turns must be >= 1")
    emit = on_event or _ignore
    context = context if context is not None else ToolContext()
    streaming = streaming if streaming is not None else StreamSupport()
    schemas = runtime.schemas()  # once per run: the registry does not change mid-run
    # An empty registry sends no ``tools`` at all: some endpoints reject ``tools: []``.
    options: dict[str, Any] = {"tools": schemas, "tool_choice": "auto"} if schemas else {}

    usage = Usage()
    records: list[ToolCallRecord] = []
    text = ""

    async def summarize(request: list[Message]) -> str:  # compaction's own requests
        return await complete_text(client, model, request, usage)

    for turn in range(1, max_turns + 1):
        send = functools.partial(
            complete,
            client,
            model=model,
            messages=messages,
            options=options,
            streaming=streaming,
            on_delta=functools.partial(_text_delta, emit, turn),
        )
        if window is None:
            emit(ModelRequestStarted(turn=turn))
            reply = await send()
        else:
            reply = await window.send(messages, send, turn=turn, summarize=summarize, emit=emit)
        usage.add(reply.usage)
        if window is not None:
            window.observe(messages, usage.last_prompt_tokens)
        text = reply.text
        calls = reply.tool_calls
        messages.append(reply.message)
        if reply.finish_reason == "length":
            messages.extend(tool_message(call["id"], CUT_OFF_OUTPUT) for call in calls)
            return _stop(emit, LoopResult(text, "max_tokens", records, usage, turn))
        if not calls:
            if not text.strip():
                return _stop(emit, LoopResult("", "empty", records, usage, turn))
            return _stop(emit, LoopResult(text, "end_turn", records, usage, turn))
        await _run_tool_calls(calls, runtime, context, messages, records, turn, emit)

    return _stop(emit, LoopResult(text, "max_turns", records, usage, max_turns))


def _stop(emit: EventSink, result: LoopResult) -> LoopResult:
    emit(FinalAnswer(text=result.text, stop_reason=result.stop_reason))
    return result


async def complete_text(
    client: AsyncOpenAI, model: str, messages: list[Message], usage: Usage | None = None
) -> str:
    """One plain request offering no tools; the text it answers (compaction's summaries)."""
    reply = await complete(client, model=model, messages=messages, options={})
    if usage is not None:
        usage.add(reply.usage)
    return reply.text


def _text_delta(emit: EventSink, turn: int, channel: str, text: str) -> None:
    emit(TextDelta(turn, channel, text))


# A tool may report progress at any rate; clients need a few updates a second at most.
PROGRESS_INTERVAL = 0.2


def _progress_sink(emit: EventSink, turn: int, call_id: str, name: str) -> ProgressSink:
    """A call's progress as events: the first and the last (progress == total) always,
    others at most one per :data:`PROGRESS_INTERVAL`."""
    last = -PROGRESS_INTERVAL

    def report(progress: float, total: float | None, message: str | None) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < PROGRESS_INTERVAL and (total is None or progress < total):
            return
        last = now
        emit(ToolCallProgress(turn, call_id, name, progress, total, message))

    return report


async def _run_tool_calls(
    calls: Sequence[ToolCall],
    runtime: ToolRuntime,
    context: ToolContext,
    messages: list[Message],
    records: list[ToolCallRecord],
    turn: int,
    emit: EventSink,
) -> None:
    """Run one response's calls, appending one tool message per call in call order."""
    runner = _CallRunner(runtime, context, turn, emit)
    pending = [_Call(call, *call_parts(call)) for call in calls]
    appended = 0
    try:
        for batch in _batches(pending, runtime):
            if len(batch) == 1:
                await runner.run(batch[0])
            else:
                await _run_concurrently(runner.run, batch)
            for call in batch:
                _append(call, messages, records)
                appended += 1
    except BaseException as exc:
        # Pair what is left so the history stays valid; finished results keep their text.
        if isinstance(exc, asyncio.CancelledError):
            reason = CANCELLED_OUTPUT
        else:
            reason = f"Error: the tool failed with an internal error ({type(exc).__name__})"
        for call in pending[appended:]:
            if call.output is None:
                if call.started is not None:
                    _safely(functools.partial(runner.finish, call, reason, ok=False))
                call.output = reason
            _append(call, messages, records)
        raise


@dataclass
class _Call:
    """One tool call of a response, from its start to its tool message."""

    call: ToolCall
    name: str
    arguments: str
    started: float | None = None  # time.perf_counter() when it started
    waits: CallWaits | None = None  # the time its user took to answer it
    output: str | None = None  # what the model is sent
    record: ToolCallRecord | None = None  # what the loop's result lists

    @property
    def id(self) -> str:
        return self.call["id"]


@dataclass
class _CallRunner:
    """Runs one call at a time and reports it (started, finished) as events."""

    runtime: ToolRuntime
    context: ToolContext
    turn: int
    emit: EventSink

    async def run(self, call: _Call) -> None:
        name, runtime = call.name, self.runtime
        call.started = time.perf_counter()
        self.emit(
            ToolCallStarted(
                self.turn,
                call.id,
                name,
                call.arguments,
                summary_key=runtime.summary_key(name),
                kind=runtime.kind(name),
                display_name=runtime.display_name(name),
            )
        )
        kind = call.call.get("type", "function")
        if kind != "function":
            output = f"Error: unsupported tool call type {kind}"
        else:
            sink = _progress_sink(self.emit, self.turn, call.id, name)
            call_context = self.context.for_call(call.id, sink)
            call.waits = call_context.waits
            output = await runtime.execute(name, call.arguments, call_context)
        call.output = output
        self.finish(call, output, ok=not is_error(output))

    def finish(self, call: _Call, output: str, *, ok: bool) -> None:
        """Record ``call`` as finished with ``output``, then report it."""
        assert call.started is not None
        # A call is not slow because its user took time to answer: that time is its own.
        waited_ms = call.waits.seconds * 1000 if call.waits is not None else 0.0
        duration_ms = max(0.0, (time.perf_counter() - call.started) * 1000 - waited_ms)
        shown = preview(output)
        call.record = ToolCallRecord(
            call.id, call.name, call.arguments, ok, shown, duration_ms, waited_ms
        )
        self.emit(
            ToolCallFinished(
                self.turn,
                call.id,
                call.name,
                call.arguments,
                ok,
                shown,
                duration_ms,
                self.runtime.summary_key(call.name),
                waited_ms,
                display_name=self.runtime.display_name(call.name),
            )
        )


def _batches(calls: list[_Call], runtime: ToolRuntime) -> Iterator[list[_Call]]:
    """The calls in the order they run: consecutive read-only calls together, any other
    call alone (a barrier)."""
    index = 0
    while index < len(calls):
        end = index + 1
        if _is_read_only(calls[index], runtime):
            while end < len(calls) and _is_read_only(calls[end], runtime):
                end += 1
        yield calls[index:end]
        index = end


def _append(call: _Call, messages: list[Message], records: list[ToolCallRecord]) -> None:
    """``call``'s tool message (and its record, if it finished)."""
    assert call.output is not None
    if call.record is not None:
        records.append(call.record)
    messages.append(tool_message(call.id, call.output))


async def _run_concurrently(
    run: Callable[[_Call], Awaitable[None]], calls: Sequence[_Call]
) -> None:
    """Run ``run(call)`` for each call together; re-raise the first tool bug afterwards.

    A TaskGroup waits for every child to finish, so on cancellation each tool has
    cleaned up (killed its processes) before the loop's CancelledError goes on.
    """
    failures: list[BaseException] = []

    async def guarded(call: _Call) -> None:
        try:
            await run(call)
        except Exception as exc:  # a tool bug: let its siblings finish, raise it after
            failures.append(exc)

    async with asyncio.TaskGroup() as group:
        for call in calls:
            group.create_task(guarded(call))
    if failures:
        raise failures[0]


def _is_read_only(call: _Call, runtime: ToolRuntime) -> bool:
    return call.call.get("type", "function") == "function" and runtime.is_read_only(call.name)


def _safely(action: Callable[[], object]) -> None:
    try:
        action()
    except Exception:  # an event sink failing while we unwind must not hide the cause
        log.exception("Event sink failed while pairing interrupted tool calls")


def _ignore(event: AgentEvent) -> None:
    pass
