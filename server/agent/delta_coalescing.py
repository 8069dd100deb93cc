"""Streamed text gathered into a few notifications a second, in order.

A model can stream hundreds of chunks a second; an editor that re-renders on every
notification should get a few dozen at most. :class:`DeltaCoalescer` sends the
first chunk after a quiet spell at once (the user sees the answer start as soon as
the model does), then opens a window of :data:`WINDOW_S`: what arrives meanwhile
is sent together when the window closes, which opens the next one. Text is never
reordered or dropped: consecutive chunks of one (turn, channel) are joined, and a
change of turn or channel starts a new notification within the same send.
``flush`` sends what is waiting now, before something that must follow it (a tool
call's activity, the ask's response).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

WINDOW_S: Final = 0.04  # at most ~25 sends a second

DeltaSend = Callable[[int, str, str], None]
"""``send(turn, channel, text)``: one notification."""


@dataclass
class _Run:
    """Consecutive text of one turn and channel, waiting to be sent."""

    turn: int
    channel: str
    parts: list[str] = field(default_factory=list)


class DeltaCoalescer:
    """Coalesces ``add(turn, channel, text)`` calls into ``send`` calls (on the event loop)."""

    def __init__(self, send: DeltaSend, *, window: float = WINDOW_S) -> None:
        self._send = send
        self._window = window
        self._pending: list[_Run] = []  # in order
        self._timer: asyncio.TimerHandle | None = None

    def add(self, turn: int, channel: str, text: str) -> None:
        if not text:
            return
        last = self._pending[-1] if self._pending else None
        if last is None or (last.turn, last.channel) != (turn, channel):
            last = _Run(turn, channel)
            self._pending.append(last)
        last.parts.append(text)
        if self._timer is None:  # quiet until now: send at once, then hold a window
            self.flush()
            self._timer = asyncio.get_running_loop().call_later(self._window, self._window_ended)

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for run in pending:
            self._send(run.turn, run.channel, "".join(run.parts))

    def close(self) -> None:
        """Send what is waiting and stop the window (the ask is over)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flush()

    def _window_ended(self) -> None:
        self._timer = None
        if self._pending:
            self.flush()
            self._timer = asyncio.get_running_loop().call_later(self._window, self._window_ended)
