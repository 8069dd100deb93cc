"""Typed events the agent loop reports while it runs.

The loop never prints: front ends pass an :data:`EventSink` (a plain synchronous
callback) and turn these into editor notifications, log lines or test records.
For each run the order is: ``ModelRequestStarted`` before every model request,
then that turn's ``TextDelta``s as the response streams in, then
``ToolCallStarted``/``ToolCallFinished`` around every tool call (a cancelled call
still gets its ``ToolCallFinished`` with ``ok=False``), ``FinalAnswer`` last.
``CompactionStarted``/``CompactionFinished`` come before a turn's request when the
history had to be compacted (``server.agent.compaction``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelRequestStarted:
    turn: int  # 1-based: one turn = one chat.completions request


@dataclass(frozen=True)
class TextDelta:
    """Text of the model's response as it arrives, in order.

    ``channel`` is ``"answer"`` (the message's text; a turn's deltas add up to it)
    or ``"reasoning"`` (thinking some providers send beside it: shown, never sent
    back). Not coalesced here: one event per streamed chunk.
    """

    turn: int
    channel: str
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    turn: int
    call_id: str
    name: str
    arguments: str  # raw JSON text as the model sent it
    # The argument a one-line summary shows (ToolDefinition.summary_argument; None: unknown).
    summary_key: str | None = None
    kind: str = "other"  # the tool's kind (tooling.contract.ToolDefinition.kind)
    # How clients name the call (ToolDefinition.display_name; None: the name itself).
    display_name: str | None = None


@dataclass(frozen=True)
class ToolCallFinished:
    turn: int
    call_id: str
    name: str
    arguments: str
    ok: bool
    output: str  # preview, at most 2,000 characters (the model gets the full text)
    duration_ms: float  # the time its permission request waited for the user excluded
    summary_key: str | None = None  # as in ToolCallStarted
    waited_ms: float = 0.0  # that time (0: nobody was asked)
    display_name: str | None = None  # as in ToolCallStarted


@dataclass(frozen=True)
class ToolCallProgress:
    """A running call's progress (an MCP server's ``notifications/progress``), between
    its start and its end; at most a few per second per call (the loop throttles)."""

    turn: int
    call_id: str
    name: str
    progress: float
    total: float | None
    message: str | None  # the tool's words: escape them to show them


@dataclass(frozen=True)
class PermissionRequested:
    """A call waits for the user's permission (between its start and its end)."""

    call_id: str
    name: str
    arguments: str
    title: str
    summary_key: str | None = None  # as in ToolCallStarted
    display_name: str | None = None  # as in ToolCallStarted


@dataclass(frozen=True)
class PermissionAnswered:
    call_id: str
    name: str
    arguments: str
    allowed: bool  # False also for a timeout or a dismissed request
    summary_key: str | None = None  # as in ToolCallStarted
    display_name: str | None = None  # as in ToolCallStarted


@dataclass(frozen=True)
class FinalAnswer:
    text: str
    stop_reason: str  # "end_turn", "empty", "max_tokens" or "max_turns"


@dataclass(frozen=True)
class CompactionStarted:
    """The history is being compacted before the turn's model request."""

    turn: int
    trigger: str  # "threshold", "overflow" (the provider said it is too long) or "request"
    tokens: int  # estimated context size before
    window: int  # the model's context window


@dataclass(frozen=True)
class CompactionFinished:
    turn: int
    trigger: str
    tokens_before: int
    tokens_after: int
    window: int
    elided: int  # tool outputs replaced by a note
    summarized: int  # messages replaced by a summary
    duration_ms: float  # the summary's model requests included


@dataclass(frozen=True)
class ToolSourcesStarting:
    """Sent by the engine before an ask's first model request: tool sources (MCP servers)
    still starting, which the ask waits for (a bounded time) so that it has their tools."""

    servers: tuple[str, ...]
    wait_s: float  # the longest the ask waits for them


@dataclass(frozen=True)
class ToolSourcesMissing:
    """Sent by the engine after that wait: the servers that did not become ready (failed, or
    still starting), whose tools this ask goes without; the model is told so too."""

    servers: tuple[str, ...]
    reasons: tuple[str, ...]  # one a server: "failed: ...", "still starting after 10 s"


AgentEvent = (
    ModelRequestStarted
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | ToolCallProgress
    | PermissionRequested
    | PermissionAnswered
    | FinalAnswer
    | CompactionStarted
    | CompactionFinished
    | ToolSourcesStarting
    | ToolSourcesMissing
)
EventSink = Callable[[AgentEvent], None]


@dataclass(frozen=True)
class EngineWarning:
    """Something the user should know that is not an ask's result or error.

    Not tied to one ask's run (it may arrive after the ask that caused it ended),
    so the engine reports it to its own sink, which a front end shows the user.
    """

    kind: str  # "model_not_served": the endpoint's model list lacks the configured model
    message: str


WarningSink = Callable[[EngineWarning], None]
