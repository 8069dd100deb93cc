"""What the user reads of the loop's events, worded once for every client.

A tool call's one-line title (and its subject: the title without the tool), its output's
head, its duration and wait, progress text and the note of a compaction are made here,
escaped and on one line (``tooling.display``), and travel as fields of the notifications
and results (``agent/toolActivity``'s ``title``, ``subject``, ``outputHead``,
``durationText``; ``agent/askProgress``'s ``text``; ``agent/compaction``'s ``summary``).
Clients show them as they are and keep only layout (marks, colours, folding).
"""

from __future__ import annotations

import json
import re

from tooling.display import NEWLINE_MARK, escape_control

from .. import protocol as p
from .events import (
    PermissionAnswered,
    PermissionRequested,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolSourcesMissing,
)

SUMMARY_CHARS = 80


OUTPUT_HEAD_CHARS = 200

# Tried after the tool's own summary argument, and alone when the tool is not known here
# (an MCP server's tool that gave none).
FALLBACK_KEYS = ("path", "command", "pattern")


def summarize_arguments(name: str, arguments: str, key: str | None = None) -> str:
    """One line naming what a call acts on, e.g. ``src/app.py`` or ``pytest -q``; safe to
    show (``tooling.display``), as it is the model's text.

    ``key``: the argument the tool's definition names (``ToolDefinition.summary_argument``),
    tried before :data:`FALLBACK_KEYS`; the first non-empty string wins, else the
    arguments themselves on one line."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        for candidate in dict.fromkeys((key, *FALLBACK_KEYS) if key else FALLBACK_KEYS):
            value = parsed.get(candidate)
            if isinstance(value, str) and value:
                return _one_line(value)
        return _one_line(json.dumps(parsed, ensure_ascii=False))
    return _one_line(arguments)


def _one_line(text: str) -> str:
    # Line breaks show as " ⏎ ": "git fetch #" then "curl ... | sh" on the next line must
    # not read as one comment. Other whitespace runs become one space.
    parts = (" ".join(escape_control(part).split()) for part in text.split("\n"))
    line = f" {NEWLINE_MARK} ".join(part for part in parts if part)
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def call_title(
    name: str, arguments: str, summary_key: str | None = None, display_name: str | None = None
) -> str:
    """A call's one line, e.g. ``read_file src/app.py``: the tool (its display name when it
    has one, an MCP tool's ``get_current_time — time (MCP server)``), then what it acts on.
    Escaped: the name is the model's too (it may call a tool that does not exist)."""
    shown = escape_control(display_name if display_name else name)
    return f"{shown} {summarize_arguments(name, arguments, summary_key)}".strip()


def output_head(output: str) -> str:
    """The first line of a call's output, escaped and cut at 200 characters: what a failed
    call's trace line ends with (``Error: exit status 2``). Cut at CR or LF only."""
    first = re.split(r"[\r\n]", output.strip(), maxsplit=1)[0]
    return escape_control(first)[:OUTPUT_HEAD_CHARS]


def duration_text(duration_ms: float, waited_ms: float | None = None) -> str:
    """How long a finished call took, ``12 ms``; ``12 ms; 8.0 s waiting for permission``
    when the user was asked (their time is kept out of ``duration_ms``)."""
    took = f"{duration_ms:.0f} ms"
    if waited_ms:
        took += f"; {waited_ms / 1000:.1f} s waiting for permission"
    return took


def tool_activity(
    session_id: str,
    event: ToolCallStarted | ToolCallFinished | PermissionRequested | PermissionAnswered,
    turn: int | None = None,
) -> p.ToolActivity:
    """The ``agent/toolActivity`` notification of ``event`` (a permission event has no turn
    of its own: ``turn``, the ask's current one)."""
    if isinstance(event, ToolCallStarted | ToolCallFinished):
        turn = event.turn
    activity = p.ToolActivity(
        session_id=session_id,
        call_id=event.call_id,
        name=event.name,
        arguments=event.arguments,
        turn=turn or 0,
        status="started",
        summary_key=event.summary_key,
        display_name=event.display_name,
        title=call_title(event.name, event.arguments, event.summary_key, event.display_name),
        subject=summarize_arguments(event.name, event.arguments, event.summary_key),
    )
    if isinstance(event, PermissionRequested):
        activity.status = "waiting"
    elif isinstance(event, ToolCallFinished):
        activity.status = "completed" if event.ok else "failed"
        activity.output = event.output  # already a preview (agent/loop.py preview)
        activity.output_head = output_head(event.output)
        activity.duration_ms = round(event.duration_ms, 1)
        activity.waited_ms = round(event.waited_ms, 1) if event.waited_ms else None
        activity.duration_text = duration_text(activity.duration_ms, activity.waited_ms)
    return activity


def compaction_summary(
    tokens_before: int,
    tokens_after: int,
    context_window: int,
    elided_outputs: int = 0,
    summarized_messages: int = 0,
    trigger: str | None = None,
) -> str:
    """What a compaction did, e.g. ``compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs
    elided)`` (an ``agent/compaction`` notification's and an ``agent/compact`` result's)."""
    line = f"compacted: {tokens_before:,} → {tokens_after:,} tokens of {context_window:,}"
    details = []
    if elided_outputs:
        details.append(f"{elided_outputs} output{'' if elided_outputs == 1 else 's'} elided")
    if summarized_messages:
        plural = "" if summarized_messages == 1 else "s"
        details.append(f"{summarized_messages} message{plural} summarized")
    if trigger == "overflow":
        details.append("the model said the conversation was too long")
    return f"{line} ({', '.join(details)})" if details else line


# What the user is told when an ask ended other than with an answer (stopReason).
STOP_NOTES = {
    "max_turns": "stopped at the turn limit (maxTurns)",
    "max_tokens": "the answer was cut off at the model's output token limit",
    "empty": "the model returned nothing (no text and no tool calls)",
}


def stop_note(stop_reason: str | None) -> str | None:
    """The note for an ask's ``stopReason``, or None for an ordinary answer."""
    if stop_reason in (None, "end_turn"):
        return None
    return STOP_NOTES.get(stop_reason) or f"stopped: {escape_control(str(stop_reason))}"


def progress_text(event: ToolCallProgress) -> str:
    """``3/10 indexing`` (``40%`` when the total is 100), safe to show: the tool's words."""

    def number(value: float) -> str:
        return f"{value:g}"

    if event.total == 100:
        done = f"{number(event.progress)}%"
    elif event.total:
        done = f"{number(event.progress)}/{number(event.total)}"
    else:
        done = number(event.progress)
    message = _one_line(event.message) if event.message else ""
    return f"{done} {message}".rstrip()


def missing_text(event: ToolSourcesMissing) -> str:
    """``db (failed: ...), web (still starting after 10 s)``, safe to show."""
    return ", ".join(
        f"{escape_control(name)} ({_one_line(reason)})" if reason else escape_control(name)
        for name, reason in zip(event.servers, event.reasons, strict=True)
    )
