"""DeltaCoalescer: the first piece at once, the rest gathered per window, in order."""

from __future__ import annotations

import asyncio
import time

from server.agent.delta_coalescing import DeltaCoalescer
from tests.support.procs import until


class Sent:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str, str]] = []
        self.times: list[float] = []

    def __call__(self, turn: int, channel: str, text: str) -> None:
        self.calls.append((turn, channel, text))
        self.times.append(time.monotonic())


async def test_the_first_piece_goes_at_once_and_the_rest_wait_for_the_window() -> None:
    sent = Sent()
    coalescer = DeltaCoalescer(sent, window=0.2)

    coalescer.add(1, "answer", "Hel")
    assert sent.calls == [(1, "answer", "Hel")]  # no waiting for company
    coalescer.add(1, "answer", "lo, ")
    coalescer.add(1, "answer", "world")
    assert len(sent.calls) == 1
    await until(lambda: len(sent.calls) == 2)
    assert sent.calls[1] == (1, "answer", "lo, world")
    assert sent.times[1] - sent.times[0] >= 0.15

    # After a quiet window, the next piece again goes at once.
    await asyncio.sleep(0.3)
    before = time.monotonic()
    coalescer.add(1, "answer", "!")
    assert sent.calls[-1] == (1, "answer", "!") and sent.times[-1] - before < 0.05
    coalescer.close()


async def test_turns_and_channels_stay_apart_and_in_order() -> None:
    sent = Sent()
    coalescer = DeltaCoalescer(sent, window=10)  # nothing leaves by the window here
    coalescer.add(1, "reasoning", "think")
    for turn, channel, text in [
        (1, "reasoning", "ing"),
        (1, "answer", "Let me look."),
        (2, "answer", "Found "),
        (2, "answer", "it."),
        (2, "reasoning", "done"),
        (2, "answer", ""),
    ]:
        coalescer.add(turn, channel, text)
    coalescer.flush()
    assert sent.calls == [
        (1, "reasoning", "think"),
        (1, "reasoning", "ing"),
        (1, "answer", "Let me look."),
        (2, "answer", "Found it."),
        (2, "reasoning", "done"),
    ]
    coalescer.add(2, "answer", " More.")
    coalescer.close()  # the ask ended: what waits is sent, no timer left behind
    assert sent.calls[-1] == (2, "answer", " More.")
    coalescer.flush()
    assert len(sent.calls) == 6


async def test_a_fast_stream_is_sent_a_few_dozen_times_a_second() -> None:
    sent = Sent()
    coalescer = DeltaCoalescer(sent)  # the server's window
    pieces = [f"t{i} " for i in range(1000)]
    started = time.monotonic()
    for piece in pieces:  # 1,000 tokens a second
        coalescer.add(1, "answer", piece)
        await asyncio.sleep(0.001)
    elapsed = time.monotonic() - started
    coalescer.close()
    assert "".join(text for _, _, text in sent.calls) == "".join(pieces)
    assert len(sent.calls) <= elapsed * 30 + 2
