"""What the terminal client prints: trace lines for tool activity and compactions, the note
for an ask that ended without an answer, and the streamed answer itself.

The words come from the server, ready to show (``server/agent/activity.py``: a call's
``title``, ``durationText`` and ``outputHead``, a compaction's ``summary``, a result's
``stopNote``); this module adds the layout (the time, a mark). Everything from the server or
the model is escaped (``tooling.display``) before it is printed.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from tooling.display import escape_control

from ..protocol import REASONING_CHANNEL


def _text(value: Any) -> str:
    return escape_control(value) if isinstance(value, str) else ""


def format_activity(params: dict[str, Any]) -> str:
    """One trace line, e.g. ``12:00:01 ✓ read_file src/app.py (3 ms)`` (an MCP tool by its
    ``displayName``: ``✓ get_current_time — time (MCP server) UTC (4 ms)``); a call waiting
    for the user's permission: ``12:00:01 ⏸ bash npm ci (waiting for permission)``."""
    stamp = time.strftime("%H:%M:%S")
    title = _text(params.get("title"))
    status = params.get("status")
    if status == "started":
        return f"{stamp} → {title}"
    if status == "waiting":
        return f"{stamp} ⏸ {title} (waiting for permission)"
    mark = "✓" if status == "completed" else "✗"
    line = f"{stamp} {mark} {title} ({_text(params.get('durationText'))})"
    if status == "failed" and (head := _text(params.get("outputHead"))):
        line += f": {head}"
    return line


PROBLEM_LINES = 12  # lines of a call's Problems block under its trace line


def problem_lines(params: dict[str, Any]) -> list[str]:
    """Under a finished call's trace line: the problems its change introduced, as the tool
    told the model (write_file, edit_file, bash: a block from the line "Problems: ..." on,
    docs/language.md), indented; cut at ``PROBLEM_LINES``."""
    if params.get("status") not in ("completed", "failed"):
        return []
    output = params.get("output")
    if not isinstance(output, str):
        return []
    lines = escape_control(output, keep_newlines=True).split("\n")
    first = next((n for n, line in enumerate(lines) if line.startswith("Problems: ")), None)
    if first is None:
        return []
    block = lines[first:]
    if len(block) > PROBLEM_LINES:
        block = [*block[: PROBLEM_LINES - 1], f"... ({len(block) - PROBLEM_LINES + 1} more lines)"]
    return [f"  {line}" for line in block]


class ProgressLines:
    """``agent/askProgress`` lines worth a terminal line: a running call's progress (at most
    one a second per call, and its last) and MCP servers the ask goes without."""

    INTERVAL_S = 1.0

    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def line(self, params: dict[str, Any]) -> str | None:
        message = escape_control(str(params.get("message") or ""))
        if params.get("phase") == "starting":
            return f"{time.strftime('%H:%M:%S')} … {message}"
        call = params.get("callId")
        if not isinstance(call, str) or "progress" not in params:
            return None  # the trace lines say the rest
        now = time.monotonic()
        total, progress = params.get("total"), params.get("progress")
        last = total is not None and progress == total
        if not last and now - self._last.get(call, -self.INTERVAL_S) < self.INTERVAL_S:
            return None
        self._last[call] = now
        return f"{time.strftime('%H:%M:%S')} ⋯ {_text(params.get('text'))}"


def format_compaction(params: dict[str, Any]) -> str:
    """One trace line for an ``agent/compaction`` notification, e.g.
    ``12:00:01 ⇣ compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)``."""
    return f"{time.strftime('%H:%M:%S')} ⇣ {_text(params.get('summary'))}"


class StreamedOutput:
    """The answer on ``out`` as it streams, reasoning and trace lines on ``err``.

    Both usually end up on one terminal, so a line begun on one stream is ended
    before the other writes. Every turn's text is shown (what the model says
    before it calls tools, too); :meth:`finish` prints the answer only when it was
    not streamed (an older server, or text that the result corrects), so it
    appears exactly once. All of it is escaped, our own dimming applied after.
    """

    DIM, RESET = "\x1b[2m", "\x1b[0m"

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out = out
        self.err = self._err = err
        self._open: TextIO | None = None  # the stream whose last line is unfinished
        self._key: tuple[int, str] | None = None  # (turn, channel) written last
        self._turns: dict[int, list[str]] = {}  # answer text streamed, by turn
        self._dim = err.isatty()

    def delta(self, params: dict[str, Any]) -> None:
        text = params.get("delta")
        turn = params.get("turn")
        if not isinstance(text, str) or not text or not isinstance(turn, int):
            return
        channel = str(params.get("channel"))
        reasoning = channel == REASONING_CHANNEL
        stream = self._err if reasoning else self._out
        if self._key is not None and self._key != (turn, channel):
            self.end_line()
        self._key = (turn, channel)
        if self._open is not None and self._open is not stream:
            self.end_line()
        shown = escape_control(text, keep_newlines=True)
        self._write(stream, f"{self.DIM}{shown}{self.RESET}" if reasoning and self._dim else shown)
        self._open = None if text.endswith("\n") else stream
        if not reasoning:
            self._turns.setdefault(turn, []).append(text)

    def line(self, text: str) -> None:
        """A whole line on stderr (trace, notes), after any unfinished streamed line."""
        self.end_line()
        self._write(self._err, escape_control(text, keep_newlines=True) + "\n")

    def end_line(self) -> None:
        if self._open is not None:
            self._write(self._open, "\n")
            self._open = None

    def finish(self, answer: str, turns: int) -> None:
        """The ask's result: print ``answer`` unless it was streamed as it is."""
        streamed = "".join(self._turns.get(turns, ()))
        if streamed != answer:
            self.end_line()
            if answer:
                self._write(self._out, escape_control(answer, keep_newlines=True) + "\n")
        self.end_line()

    @staticmethod
    def _write(stream: TextIO, text: str) -> None:
        stream.write(text)
        stream.flush()
