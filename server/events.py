"""Typed events the agent loop reports while it runs.

The loop never prints: front ends pass an :data:`EventSink` (a plain synchronous
callback) and turn these into editor notifications, log lines or test records.
For each run the order is: ``ModelRequestStarted`` before every model request,
``ToolCallStarted``/``ToolCallFinished`` around every tool call (a cancelled call
still gets its ``ToolCallFinished`` with ``ok=False``), ``FinalAnswer`` last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelRequestStarted:
    turn: int  # 1-based: one turn = one chat.completions request


@dataclass(frozen=True)
class ToolCallStarted:
    turn: int
    call_id: str
    name: str
    arguments: str  # raw JSON text as the model sent it


@dataclass(frozen=True)
class ToolCallFinished:
    turn: int
    call_id: str
    name: str
    arguments: str
    ok: bool
    output: str  # preview, at most 2,000 characters (the model gets the full text)
    duration_ms: float


@dataclass(frozen=True)
class PermissionRequested:
    """A call waits for the user's permission (between its start and its end)."""

    call_id: str
    name: str
    arguments: str
    title: str


@dataclass(frozen=True)
class PermissionAnswered:
    call_id: str
    name: str
    arguments: str
    allowed: bool  # False also for a timeout or a dismissed request


@dataclass(frozen=True)
class FinalAnswer:
    text: str
    stop_reason: str  # "end_turn" or "max_turns"


AgentEvent = (
    ModelRequestStarted
    | ToolCallStarted
    | ToolCallFinished
    | PermissionRequested
    | PermissionAnswered
    | FinalAnswer
)
EventSink = Callable[[AgentEvent], None]
