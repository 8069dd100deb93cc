"""Agent-loop benchmarks, each figure next to a baseline measured in the same run.

1. Loop overhead per tool turn: ``agent_loop`` against the scripted model's instant
   responder (a no-op tool call per turn, then an answer) versus the same sequence of
   bare ``client.chat.completions.create`` calls with the same growing message list
   (what the loop wraps). Both go through the real SDK and real HTTP on 127.0.0.1; the
   difference is the loop's own cost (event emission, tool runtime dispatch, message
   bookkeeping); both make plain requests. Another row streams the loop's requests
   (Server-Sent Events, the server's default) to show what streaming costs a turn,
   and one runs the loop against an in-memory client (no HTTP) to show its own cost.
2. Parallel read-only calls: one response asks for 4 read-only tools that each take
   0.5 s; wall time of the ask versus the same tools declared not read-only (run one
   after another).

Run: ``uv run python bench/bench_loop.py`` (writes ``bench/results/loop.md``).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import openai  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402

from server.agent.loop import agent_loop  # noqa: E402
from server.model.endpoint import ModelSettings, create_client  # noqa: E402
from server.model.stream import StreamSupport  # noqa: E402
from tests.support.model_server import (  # noqa: E402
    ScriptedModel,
    completion_body,
    instant_responder,
    tool_call,
)
from tooling.context import ToolContext  # noqa: E402
from tooling.contract import ToolDefinition  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "loop.md"
TURNS_PER_ASK = 20  # tool turns per ask; each ask makes TURNS_PER_ASK + 1 requests
ROUNDS = 30  # asks per variant (interleaved)
WARMUP = 3
PARALLEL_CALLS = 4
TOOL_SECONDS = 0.5
PARALLEL_ROUNDS = 3
EMPTY_OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


async def _noop(arguments: dict[str, Any], context: ToolContext) -> str:
    return "ok"


def _runtime(*, read_only: bool, sleep: float | None = None) -> ToolRuntime:
    if sleep is None:
        tools = [ToolDefinition("noop", "Does nothing.", EMPTY_OBJECT, _noop, read_only=read_only)]
    else:

        async def slow(arguments: dict[str, Any], context: ToolContext) -> str:
            await asyncio.sleep(sleep)
            return "read"

        tools = [
            ToolDefinition(f"read_{i}", "Slow read.", EMPTY_OBJECT, slow, read_only=read_only)
            for i in range(PARALLEL_CALLS)
        ]
    return ToolRuntime(ToolRegistry(tools))


def _prompt() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a benchmark."},
        {"role": "user", "content": "Call the no-op tool, then answer."},
    ]


async def _ask_with_loop(
    client: Any, runtime: ToolRuntime, *, stream: bool = False
) -> tuple[float, int]:
    messages = _prompt()
    started = time.perf_counter()
    result = await agent_loop(
        messages,
        runtime,
        client=client,
        model="bench",
        max_turns=1000,
        streaming=StreamSupport(enabled=stream),
    )
    elapsed = time.perf_counter() - started
    assert result.stop_reason == "end_turn" and len(result.tool_calls) == TURNS_PER_ASK
    return elapsed, result.turns


async def _ask_bare(client: Any, schemas: list[dict[str, Any]]) -> tuple[float, int]:
    """The same requests the loop makes, with the minimum bookkeeping around them."""
    messages = _prompt()
    requests = 0
    started = time.perf_counter()
    while True:
        response = await client.chat.completions.create(
            model="bench", messages=list(messages), tools=schemas, tool_choice="auto"
        )
        requests += 1
        message = response.choices[0].message
        # As every endpoint accepts it (llama.cpp's server: content must be a string).
        messages.append({**message.model_dump(exclude_none=True), "content": message.content or ""})
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
    return time.perf_counter() - started, requests


class _MemoryCompletions:
    """``chat.completions`` answering from memory: the loop's cost without HTTP."""

    def __init__(self) -> None:
        self._respond = instant_responder("noop", tool_turns=TURNS_PER_ASK)

    async def create(self, **request: Any) -> ChatCompletion:
        body = completion_body(self._respond(request), request)
        return ChatCompletion.model_validate(body)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response JSON, as the SDK's ``post(..., cast_to=object)`` gives it."""
        return completion_body(self._respond(request), request)


class _MemoryClient:
    api_key = "memory"
    base_url = "memory://"
    max_retries = 0
    timeout = 600.0

    def __init__(self) -> None:
        self.completions = _MemoryCompletions()
        self.chat = type("Chat", (), {"completions": self.completions})()

    async def post(self, path: str, *, content: bytes, **options: Any) -> dict[str, Any]:
        """What ``server.model.stream`` sends (the body already JSON), answered from memory."""
        return self.completions.answer(json.loads(content))


async def bench_overhead() -> dict[str, float]:
    runtime = _runtime(read_only=False)
    schemas = runtime.schemas()
    memory = _MemoryClient()
    loop_turns: list[float] = []
    streamed_turns: list[float] = []
    bare_turns: list[float] = []
    memory_turns: list[float] = []
    with ScriptedModel(instant_responder("noop", tool_turns=TURNS_PER_ASK)) as model:
        settings = ModelSettings(
            api_key="bench", base_url=model.base_url, model="bench", max_retries=0
        )
        client = create_client(settings)
        try:
            for round_ in range(WARMUP + ROUNDS):
                loop_time, loop_n = await _ask_with_loop(client, runtime)
                streamed_time, streamed_n = await _ask_with_loop(client, runtime, stream=True)
                bare_time, bare_n = await _ask_bare(client, schemas)
                memory_time, memory_n = await _ask_with_loop(memory, runtime)  # type: ignore[arg-type]
                assert loop_n == streamed_n == bare_n == memory_n == TURNS_PER_ASK + 1
                if round_ >= WARMUP:
                    loop_turns.append(loop_time / loop_n)
                    streamed_turns.append(streamed_time / streamed_n)
                    bare_turns.append(bare_time / bare_n)
                    memory_turns.append(memory_time / memory_n)
        finally:
            await client.close()
    loop_us = statistics.median(loop_turns) * 1e6
    bare_us = statistics.median(bare_turns) * 1e6
    return {
        "loop_us": loop_us,
        "streamed_us": statistics.median(streamed_turns) * 1e6,
        "bare_us": bare_us,
        "memory_us": statistics.median(memory_turns) * 1e6,
        "ratio": loop_us / bare_us,
        "requests": ROUNDS * (TURNS_PER_ASK + 1),
    }


async def _parallel_ask(client: Any, runtime: ToolRuntime, model: ScriptedModel) -> float:
    model.reply(tool_calls=[tool_call(f"read_{i}", {}) for i in range(PARALLEL_CALLS)])
    model.reply("read them all")
    started = time.perf_counter()
    result = await agent_loop(_prompt(), runtime, client=client, model="bench")
    elapsed = time.perf_counter() - started
    assert len(result.tool_calls) == PARALLEL_CALLS and all(c.ok for c in result.tool_calls)
    return elapsed


async def bench_parallel() -> dict[str, float]:
    concurrent = _runtime(read_only=True, sleep=TOOL_SECONDS)
    sequential = _runtime(read_only=False, sleep=TOOL_SECONDS)
    parallel_times: list[float] = []
    sequential_times: list[float] = []
    with ScriptedModel() as model:
        settings = ModelSettings(
            api_key="bench", base_url=model.base_url, model="bench", max_retries=0
        )
        client = create_client(settings)
        try:
            model.reply("warm-up")
            await agent_loop(_prompt(), concurrent, client=client, model="bench")
            for _ in range(PARALLEL_ROUNDS):
                parallel_times.append(await _parallel_ask(client, concurrent, model))
                sequential_times.append(await _parallel_ask(client, sequential, model))
        finally:
            await client.close()
    parallel = statistics.median(parallel_times)
    serial = statistics.median(sequential_times)
    return {"parallel_s": parallel, "sequential_s": serial, "speedup": serial / parallel}


def render(overhead: dict[str, float], parallel: dict[str, float]) -> str:
    env = (
        f"Python {platform.python_version()}, openai {openai.__version__}, "
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    extra = overhead["loop_us"] - overhead["bare_us"]
    lines = [
        "# Agent loop benchmarks",
        "",
        f"Measured with `uv run python bench/bench_loop.py` ({env}).",
        "",
        f"## Loop overhead per tool turn ({TURNS_PER_ASK} no-op tool turns per ask, "
        f"median of {ROUNDS} asks, {int(overhead['requests'])} requests per variant)",
        "",
        "| variant | per turn (µs, median) | ratio to bare SDK |",
        "|---|---:|---:|",
        f"| bare `chat.completions.create` + message bookkeeping (baseline) "
        f"| {overhead['bare_us']:.0f} | 1.00 |",
        f"| `agent_loop` (events, runtime dispatch, no-op tool) "
        f"| {overhead['loop_us']:.0f} | {overhead['ratio']:.2f} |",
        f"| `agent_loop`, requests streamed (SSE, the server's default) "
        f"| {overhead['streamed_us']:.0f} | {overhead['streamed_us'] / overhead['bare_us']:.2f} |",
        f"| `agent_loop` with an in-memory client (loop + response parsing, no HTTP) "
        f"| {overhead['memory_us']:.0f} | {overhead['memory_us'] / overhead['bare_us']:.2f} |",
        "",
        f"Loop overhead over the bare SDK call: {extra:+.0f} µs per turn.",
        "",
        f"## {PARALLEL_CALLS} read-only calls of {TOOL_SECONDS} s in one response "
        f"(median of {PARALLEL_ROUNDS} asks, each ask = 2 model requests + tools)",
        "",
        "| variant | ask wall time (s) | speed-up |",
        "|---|---:|---:|",
        f"| same tools declared not read-only: sequential (baseline) "
        f"| {parallel['sequential_s']:.3f} | 1.00 |",
        f"| read-only: run concurrently "
        f"| {parallel['parallel_s']:.3f} | {parallel['speedup']:.2f}× |",
        "",
    ]
    return "\n".join(lines)


async def main() -> None:
    overhead = await bench_overhead()
    parallel = await bench_parallel()
    report = render(overhead, parallel)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
