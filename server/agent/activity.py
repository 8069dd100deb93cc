"""Editor-facing views of loop events: activity notifications and progress text."""

from __future__ import annotations

import json
from typing import Any

from tooling.display import NEWLINE_MARK, escape_control

from .events import ToolCallFinished, ToolCallProgress, ToolCallStarted, ToolSourcesMissing

SUMMARY_CHARS = 80


# Tried after the tool's own summary argument, and alone when the tool is not known here
# (the terminal client has only a notification's name and arguments; the editors' clients
# try the same keys in the same order, and tests/support/trace_cases.py holds them to it).
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


def activity_params(session_id: str, event: ToolCallStarted | ToolCallFinished) -> dict[str, Any]:
    """Params of an ``agent/toolActivity`` notification."""
    params: dict[str, Any] = {
        "sessionId": session_id,
        "callId": event.call_id,
        "name": event.name,
        "arguments": event.arguments,
        "turn": event.turn,
    }
    if event.summary_key is not None:
        params["summaryKey"] = event.summary_key
    if event.display_name is not None:
        params["displayName"] = event.display_name
    if isinstance(event, ToolCallStarted):
        params["status"] = "started"
    else:
        params["status"] = "completed" if event.ok else "failed"
        params["output"] = event.output  # already a preview (agent_loop.preview)
        params["durationMs"] = round(event.duration_ms, 1)
        if event.waited_ms:
            params["waitedMs"] = round(event.waited_ms, 1)
    return params


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
