"""Context-window management over a long session, in one run.

A session of 60 asks x 5 tool turns (300 turns, 360 model requests), each turn a real
``read_file`` of a 20 KB file, through ``agent_loop`` with its ``ContextWindow``, the
real openai SDK and the scripted model over HTTP on 127.0.0.1 (an instant model with
a context limit of WINDOW tokens, which would answer OpenAI's 400 to a request over it).

1. Request size per turn: each request's size by the model's own count (the figure
   its ``usage.prompt_tokens`` reports), next to the size the same history would have
   without compaction (rebuilt from the archive, which is unbounded here). The
   series' maximum is reported against the window.
2. Time: what the server spends compacting per turn (``CompactionFinished.duration_ms``,
   summary requests included; and the estimate alone, on turns that did not compact),
   next to the model request time of the same run (``ModelRequestStarted`` to the
   loop's next event: the SDK call over HTTP to the instant model).

Run: ``uv run python bench/bench_compaction.py`` (writes ``bench/results/compaction.md``).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import openai  # noqa: E402

from server.agent.archive import Archive, ContextState, transcript  # noqa: E402
from server.agent.compaction import ContextWindow  # noqa: E402
from server.agent.events import (  # noqa: E402
    AgentEvent,
    CompactionFinished,
    CompactionStarted,
    ModelRequestStarted,
)
from server.agent.loop import agent_loop  # noqa: E402
from server.engine.bootstrap import build_tools  # noqa: E402
from server.model.context_limits import Window  # noqa: E402
from server.model.endpoint import ModelSettings, create_client  # noqa: E402
from server.project.prompts import system_prompt  # noqa: E402
from server.settings.settings import ToolSettings  # noqa: E402
from tests.support.model_server import (  # noqa: E402
    ScriptedModel,
    instant_responder,
    prompt_tokens,
)
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "compaction.md"
WINDOW = 32_000
THRESHOLD = 0.8
ASKS = 60
TURNS_PER_ASK = 5
FILE = "".join(f"{n:05d}: a line of the build log, about as long as most\n" for n in range(400))


class Timeline:
    """Loop events with their times (perf_counter), in order."""

    def __init__(self) -> None:
        self.events: list[tuple[float, AgentEvent]] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append((time.perf_counter(), event))


async def run_session(root: Path) -> dict[str, Any]:
    (root / "build.log").write_text(FILE)
    workspace = Workspace(root)
    runtime = ToolRuntime(build_tools(workspace, ToolSettings(enabled_tools=("read_file",))))
    reader = instant_responder(
        "read_file", {"path": "build.log"}, tool_turns=TURNS_PER_ASK, answer="The log is fine."
    )
    timeline = Timeline()
    with ScriptedModel(reader, context_limit=WINDOW) as model:
        client = create_client(
            ModelSettings(api_key="bench", base_url=model.base_url, model="scripted")
        )
        archive = Archive(limit=10**12)  # unbounded: the baseline is rebuilt from it
        window = ContextWindow(
            Window(WINDOW, "setting"),
            ContextState(),
            archive,
            model="scripted",
            threshold=THRESHOLD,
            fixed_chars=len(json.dumps(runtime.schemas())),
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(workspace.root)}
        ]
        started = time.perf_counter()
        try:
            for number in range(1, ASKS + 1):
                messages.append({"role": "user", "content": f"ask {number}: check the log"})
                result = await agent_loop(
                    messages,
                    runtime,
                    client=client,
                    model="scripted",
                    on_event=timeline,
                    window=window,
                )
                assert result.text == "The log is fine.", result.text
        finally:
            await client.close()
        wall = time.perf_counter() - started
        bodies, refused = model.bodies, model.refused
    assert not refused, refused
    chats = [b for b in bodies if b.get("tools")]
    assert len(chats) == ASKS * (TURNS_PER_ASK + 1)
    full = [messages[0], *_restored(transcript(messages, archive), archive)]
    return {
        "sizes": [prompt_tokens(b) for b in chats],
        "baseline": _uncompacted_sizes(full),
        "summaries": len(bodies) - len(chats),
        "timeline": timeline.events,
        "wall_s": wall,
    }


def _restored(messages: list[dict[str, Any]], archive: Archive) -> list[dict[str, Any]]:
    restored = []
    for message in messages:
        original = archive.outputs.get(str(message.get("tool_call_id")))
        restored.append({**message, "content": original} if original is not None else message)
    return restored


def _uncompacted_sizes(full: list[dict[str, Any]]) -> list[int]:
    """The size of each request the uncompacted history would make (the model's count)."""
    sizes = []
    chars = 2  # "[]"
    for index, message in enumerate(full):
        if message["role"] == "assistant":
            sizes.append(max(1, chars // 4))
        chars += len(json.dumps(message)) + (2 if index else 0)  # ", " between items
    return sizes


def timings(events: list[tuple[float, AgentEvent]]) -> dict[str, Any]:
    """Per turn: the model request time, and the server's compaction or estimate time."""
    requests: list[float] = []
    compactions: list[float] = []
    elision_only: list[float] = []
    with_summary: list[float] = []
    checks: list[float] = []  # previous event -> ModelRequestStarted on turns without one
    for index, (at, event) in enumerate(events):
        if isinstance(event, ModelRequestStarted):
            if index + 1 < len(events):
                requests.append((events[index + 1][0] - at) * 1000)
            previous = events[index - 1][1] if index else None
            if index and not isinstance(previous, CompactionFinished):
                checks.append((at - events[index - 1][0]) * 1000)
        elif isinstance(event, CompactionFinished):
            compactions.append(event.duration_ms)
            (with_summary if event.summarized else elision_only).append(event.duration_ms)
    turns = len(requests)
    return {
        "turns": turns,
        "request_ms": statistics.median(requests),
        "request_mean_ms": statistics.fmean(requests),
        "compactions": len(compactions),
        "compaction_per_turn_ms": sum(compactions) / turns,
        "elision_ms": statistics.median(elision_only) if elision_only else 0.0,
        "elision_count": len(elision_only),
        "summary_ms": statistics.median(with_summary) if with_summary else 0.0,
        "summary_count": len(with_summary),
        "check_ms": statistics.median(checks),
        "started": sum(1 for _, e in events if isinstance(e, CompactionStarted)),
    }


def render(run: dict[str, Any], times: dict[str, Any], load: tuple[float, float]) -> str:
    sizes, baseline = run["sizes"], run["baseline"]
    peak = max(sizes)
    env = (
        f"Python {platform.python_version()}, openai {openai.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}; 1-minute load average {load[0]:.1f} at the "
        f"start, {load[1]:.1f} at the end"
    )
    marks = [1, 10, 25, 50, 100, 150, 200, 250, 300, len(sizes)]
    rows = [
        f"| {turn} | {sizes[turn - 1]:,} | {sizes[turn - 1] / WINDOW:.0%} "
        f"| {baseline[turn - 1]:,} | {baseline[turn - 1] / WINDOW:.1f}× |"
        for turn in marks
    ]
    tail = sizes[len(sizes) // 2 :]
    ratio = times["compaction_per_turn_ms"] / times["request_mean_ms"]
    lines = [
        "# Compaction benchmark",
        "",
        f"Measured with `uv run python bench/bench_compaction.py` ({env}).",
        "",
        f"One session of {ASKS} asks × {TURNS_PER_ASK} tool turns ({ASKS * TURNS_PER_ASK} "
        f"turns, {len(sizes)} requests), each turn a real `read_file` of {len(FILE):,} "
        f"characters, against an instant scripted model with a {WINDOW:,}-token window "
        f"(it refuses larger requests with OpenAI's 400); compaction threshold "
        f"{THRESHOLD:.0%}. Whole run: {run['wall_s']:.1f} s; no request was refused.",
        "",
        "## Request size per turn (tokens, by the model's own count)",
        "",
        "| request | with compaction | of the window | same history uncompacted (baseline) "
        "| of the window |",
        "|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Maximum over all {len(sizes)} requests: **{peak:,} tokens = {peak / WINDOW:.0%} of "
        f"the {WINDOW:,}-token window** (the threshold, {THRESHOLD:.0%} = "
        f"{int(WINDOW * THRESHOLD):,} tokens, is checked before each request against an "
        "estimate calibrated on the previous response, so the model's count may differ from "
        "it by the estimate's error). Second half of the session: "
        f"{min(tail):,}–{max(tail):,} tokens, level rather than growing; uncompacted, the "
        f"last request would be {baseline[-1]:,} tokens ({baseline[-1] / WINDOW:.0f}× the "
        "window).",
        "",
        "## Time per turn (same run)",
        "",
        "| measurement | ms | ratio to the model request (mean) |",
        "|---|---:|---:|",
        f"| model request, SDK + HTTP to the instant model: median (baseline) "
        f"| {times['request_ms']:.2f} | |",
        f"| model request: mean (baseline) | {times['request_mean_ms']:.2f} | 1.00 |",
        f"| compaction, averaged over all {times['turns']} turns "
        f"| {times['compaction_per_turn_ms']:.2f} | {ratio:.2f} |",
        f"| a compaction that only elided outputs: median of {times['elision_count']} "
        f"| {times['elision_ms']:.2f} | {times['elision_ms'] / times['request_mean_ms']:.2f} |",
        f"| a compaction with a summary (its model request included): median of "
        f"{times['summary_count']} | {times['summary_ms']:.2f} "
        f"| {times['summary_ms'] / times['request_mean_ms']:.2f} |",
        f"| tool result → next request on turns without compaction (estimate + loop) "
        f"| {times['check_ms']:.2f} | {times['check_ms'] / times['request_mean_ms']:.2f} |",
        "",
        f"{times['compactions']} compactions in {times['turns']} turns "
        f"({run['summaries']} summary requests): most compactions only elide the output "
        "that just left the most recent turns. With a real model a request takes seconds, so "
        "the compaction's own work (elision, the estimate) is noise beside it; a summary "
        "costs one extra model request per chunk of history it summarizes.",
        "",
    ]
    return "\n".join(lines)


async def main() -> None:
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as folder:
        run = await run_session(Path(folder))
    times = timings(run["timeline"])
    report = render(run, times, (load_start, os.getloadavg()[0]))
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
