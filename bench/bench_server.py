"""Language-server benchmarks: agent-lsp over stdio, each figure next to a baseline
measured in the same run.

1. Start-up: spawn -> ``initialize`` result of ``python -m server --stdio`` versus a
   bare pygls 2 server (``bench/bare_pygls_server.py``), spawned alternately: wall
   time, and the server's CPU time up to that moment (steadier on a busy machine);
   plus where agent-lsp's extra import time goes.
2. Round trip: ``agent/listTools`` versus the bare server's ``bench/echo`` (p50/p99).
3. Ask overhead per tool turn: ``agent/ask`` through the server versus
   ``server.agent.loop.agent_loop`` called in-process with the same runtime (the
   server's five tools, ``ToolRuntime(build_tools(...))``), the same system prompt, the
   same tool (``read_file`` of a 6-byte file) and an ``AsyncOpenAI`` client, both
   against the scripted model's instant responder.
4. Eight concurrent asks against a model that answers after 1 s: wall time versus
   one ask alone, and ``agent/listTools`` latency meanwhile versus idle.

The scripted model (``tests/support/model_server.py``: ``ScriptedModel`` with
``instant_responder``) runs in its own process through its command line, so that in
the in-process baseline the model's HTTP threads do not share the benchmark's GIL
(which would slow the baseline, not the server).

Run: ``uv run python bench/bench_server.py`` (writes ``bench/results/server.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from lsprotocol import types  # noqa: E402
from lsprotocol.converters import get_converter  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from server.agent.loop import agent_loop  # noqa: E402
from server.engine.bootstrap import build_tools  # noqa: E402
from server.engine.engine import AgentEngine  # noqa: E402
from server.project.prompts import system_prompt  # noqa: E402
from tests.support.lsp_client import server_env  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "server.md"
SERVER_CMD = [sys.executable, "-I", "-m", "server", "--stdio"]
BARE_CMD = [sys.executable, str(REPO_ROOT / "bench" / "bare_pygls_server.py")]
ECHO = "bench/echo"
LIST_TOOLS = "agent/listTools"
ASK = "agent/ask"

STARTS = 20  # spawns per server, alternating
ROUND_TRIPS = 500  # requests per method, in interleaved blocks
RT_BLOCK = 10  # small blocks: bursts of load from other processes hit every method
TOOL_TURNS = 20  # tool turns per ask (each ask makes TOOL_TURNS + 1 model requests)
ASK_ROUNDS = 30  # asks per variant, interleaved
ASK_WARMUP = 2
CONCURRENT = 8
MODEL_LATENCY = 1.0
CONCURRENT_ROUNDS = 3
IDLE_PROBES = 500
IMPORT_RUNS = 5
SDK_WARM_S = 2.0  # the server imports the openai SDK in a thread after `initialized`
TOOL = "read_file"
TOOL_ARGS = {"path": "tiny.txt"}
PROMPT = "Read tiny.txt, then answer."

# (name, agent-lsp, baseline, ratio, target, met) rows of the summary table.
Row = tuple[str, str, str, str, str, str]


# --- statistics ------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p99(values: list[float]) -> float:
    return percentile(values, 99)


# --- processes -------------------------------------------------------------------


@dataclass
class Session:
    """One server process driven by pygls's ``LanguageClient``."""

    client: LanguageClient
    startup_s: float
    startup_cpu_s: float | None
    stderr_tail: bytearray = field(default_factory=bytearray)
    drain: asyncio.Task[None] | None = None

    @property
    def process(self) -> asyncio.subprocess.Process:
        process = self.client._server
        assert process is not None
        return process

    async def request(self, method: str, params: Any) -> Any:
        try:
            return await self.client.protocol.send_request_async(method, params)
        except Exception as exc:
            tail = self.stderr_tail.decode(errors="replace")
            raise RuntimeError(f"{method} failed: {exc!r}; server stderr:\n{tail}") from exc

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.shutdown_async(None), 5)
            self.client.exit(None)
        process = self.process
        if process.stdin is not None:
            process.stdin.close()  # a pygls reader thread may wait for EOF
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.stop(), 5)
        if self.drain is not None:
            await self.drain


def _ignore(params: Any) -> None:
    pass


async def _drain(stream: asyncio.StreamReader, tail: bytearray) -> None:
    """Read the server's stderr (a full pipe would block it); keep the last 4 KB."""
    while chunk := await stream.read(65536):
        tail.extend(chunk)
        del tail[:-4096]


async def spawn(
    cmd: list[str],
    env: dict[str, str],
    folder: Path,
    *,
    initialized: bool = True,
    handlers: dict[str, Callable[[Any], None]] | None = None,
    cwd: Path = REPO_ROOT,
) -> Session:
    """Start ``cmd``, initialize it on ``folder``; ``startup_s`` is spawn -> result.

    ``initialized=False`` skips the ``initialized`` notification, after which
    agent-lsp imports the openai SDK in a thread (kept out of start-up CPU time).
    """
    client = LanguageClient("agent-lsp-bench", "1", converter_factory=get_converter)
    methods = (
        "agent/toolActivity",
        "agent/askProgress",
        "agent/answerDelta",
        "$/progress",
        "window/logMessage",
    )
    for method in (*methods, "window/showMessage"):
        client.feature(method)((handlers or {}).get(method, _ignore))
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        root_uri=folder.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
    )
    started = time.perf_counter()
    await client.start_io(*cmd, env=env, cwd=str(cwd))
    result = await client.initialize_async(params)
    startup = time.perf_counter() - started
    assert result.server_info is not None
    session = Session(client, startup, _process_cpu(client._server))
    assert session.process.stderr is not None
    session.drain = asyncio.create_task(_drain(session.process.stderr, session.stderr_tail))
    if initialized:
        client.initialized(types.InitializedParams())
    return session


def _process_cpu(process: asyncio.subprocess.Process | None) -> float | None:
    """CPU time (user + system, all threads) a live process has used so far.

    From ``/proc/PID/stat`` (Linux; clock ticks, 10 ms at the usual 100 Hz): unlike
    wall time it hardly moves when other processes compete for the CPUs.
    """
    if process is None:
        return None
    try:
        stat = Path(f"/proc/{process.pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields 3.. (the name may hold spaces)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def start_model(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    """The scripted model in its own process; returns it and its base URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.model_server",
        *args,
        cwd=str(REPO_ROOT),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode().strip()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"model server did not start: {line!r}")
    return process, line.removeprefix("READY ")


async def stop_model(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), 5)
    except TimeoutError:
        process.kill()
        await process.wait()


# --- 1. start-up -----------------------------------------------------------------


async def bench_startup(folder: Path) -> dict[str, Any]:
    """Wall time and server CPU time, spawn -> ``initialize`` result."""
    env = server_env(None)
    wall: dict[str, list[float]] = {"ours": [], "bare": []}
    cpu: dict[str, list[float]] = {"ours": [], "bare": []}
    interpreter: list[float] = []
    for i in range(STARTS):
        # Alternate which goes first so drift and cache effects hit both alike.
        order = [(SERVER_CMD, "ours"), (BARE_CMD, "bare")]
        for cmd, name in order if i % 2 == 0 else reversed(order):
            session = await spawn(cmd, env, folder, initialized=False)
            await session.close()
            wall[name].append(session.startup_s)
            if session.startup_cpu_s is not None:
                cpu[name].append(session.startup_cpu_s)
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass", env=env)
        assert await process.wait() == 0
        interpreter.append(time.perf_counter() - started)
    return {
        "ours": wall["ours"],
        "bare": wall["bare"],
        "ours_cpu": cpu["ours"],
        "bare_cpu": cpu["bare"],
        "interpreter": interpreter,
    }


_IMPORT_PROBE = """
import sys, time
t0 = time.perf_counter()
import pygls.lsp.server, lsprotocol.converters
t1 = time.perf_counter()
sys.stderr.write("--agent-lsp-bench--\\n"); sys.stderr.flush()
import server.cli, server.lsp.server, server.stdio
t2 = time.perf_counter()
sys.stderr.write("--agent-lsp-bench-end--\\n"); sys.stderr.flush()
from server.engine.bootstrap import build_tools
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
# built on a folder's first use (listTools or ask), not at start
ToolRuntime(build_tools(Workspace(".")))
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def import_breakdown() -> dict[str, Any]:
    """What ``python -m server`` imports beyond the bare server's pygls + lsprotocol.

    Wall times come from runs without ``-X importtime`` (it inflates them); the
    per-package split of the extra comes from ``-X importtime`` self times.
    """
    env = server_env(None)
    bare_s: list[float] = []
    extra_s: list[float] = []
    runtime_s: list[float] = []
    per_package: dict[str, list[float]] = defaultdict(list)
    for _ in range(IMPORT_RUNS):
        plain = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        bare, extra, runtime = map(float, plain.stdout.split())
        bare_s.append(bare)
        extra_s.append(extra)
        runtime_s.append(runtime)
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", _IMPORT_PROBE],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        totals: dict[str, float] = defaultdict(float)
        after_mark = False
        for line in traced.stderr.splitlines():
            if line.startswith("--agent-lsp-bench--"):
                after_mark = True
            elif line.startswith("--agent-lsp-bench-end--"):
                after_mark = False
            elif after_mark and line.startswith("import time:") and "|" in line:
                self_us, _cumulative, name = line.removeprefix("import time:").split("|")
                if self_us.strip().isdigit():
                    totals[name.strip().split(".")[0]] += int(self_us) / 1e6
        for package, seconds in totals.items():
            per_package[package].append(seconds)
    traced_total = sum(p50(v) for v in per_package.values())
    shares = sorted(
        ((package, p50(v) / traced_total) for package, v in per_package.items()),
        key=lambda item: -item[1],
    )
    return {
        "bare_s": p50(bare_s),
        "extra_s": p50(extra_s),
        "runtime_s": p50(runtime_s),
        "shares": shares,
    }


# --- 2. round trips ----------------------------------------------------------------


async def _timed_calls(session: Session, method: str, params: Any, count: int) -> list[float]:
    times: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        await session.request(method, params)
        times.append(time.perf_counter() - started)
    return times


async def bench_round_trips(ours: Session, bare: Session) -> dict[str, list[float]]:
    tools = await ours.request(LIST_TOOLS, {})
    payload = json.loads(json.dumps(tools))  # listTools's result, echoed back
    variants: list[tuple[str, Session, str, Any]] = [
        ("list_tools", ours, LIST_TOOLS, {}),
        ("echo", bare, ECHO, {}),
        ("echo_payload", bare, ECHO, payload),
    ]
    samples: dict[str, list[float]] = {name: [] for name, *_ in variants}
    for _name, session, method, params in variants:  # warm-up
        await _timed_calls(session, method, params, RT_BLOCK)
    for _ in range(ROUND_TRIPS // RT_BLOCK):
        for name, session, method, params in variants:
            samples[name] += await _timed_calls(session, method, params, RT_BLOCK)
    samples["payload_bytes"] = [float(len(json.dumps(tools)))]
    return samples


async def list_tools_in_process(folder: Path) -> dict[str, list[float]]:
    """Where a listTools answer's server-side time goes: the engine building the
    result, then the encoding pygls applies to any response (cattrs ``unstructure``
    of the response message, ``json.dumps``), timed in-process."""
    from pygls.protocol.json_rpc import JsonRPCResponseMessage

    engine = AgentEngine(environ={})
    engine.set_folders([folder])
    converter = get_converter()
    build: list[float] = []
    encode: list[float] = []
    for i in range(ROUND_TRIPS):
        started = time.perf_counter()
        tools = {"tools": await engine.list_tools()}
        built = time.perf_counter()
        message = JsonRPCResponseMessage(id=i, result=tools, jsonrpc="2.0")
        json.dumps(converter.unstructure(message))
        encode.append(time.perf_counter() - built)
        build.append(built - started)
    return {"build": build, "encode": encode}


# --- 3. ask overhead per tool turn ---------------------------------------------------


async def bench_ask_overhead(folder: Path) -> dict[str, Any]:
    model, base_url = await start_model(
        "--instant",
        "--instant-tool",
        TOOL,
        "--instant-args",
        json.dumps(TOOL_ARGS),
        "--instant-turns",
        str(TOOL_TURNS),
    )
    session: Session | None = None
    direct = AsyncOpenAI(api_key="test-key-123", base_url=base_url, max_retries=0)
    try:
        session = await spawn(SERVER_CMD, server_env(base_url), folder)
        await asyncio.sleep(SDK_WARM_S)
        workspace = Workspace(folder)
        runtime = ToolRuntime(build_tools(workspace))
        prompt = system_prompt(workspace.root)

        async def through_server(token: str) -> float:
            assert session is not None
            started = time.perf_counter()
            result = await session.request(ASK, {"prompt": PROMPT, "workDoneToken": token})
            elapsed = time.perf_counter() - started
            calls = result["toolCalls"]
            assert result["stopReason"] == "end_turn" and len(calls) == TOOL_TURNS, result
            assert all(call["ok"] for call in calls), calls[0]
            return elapsed

        async def loop_directly() -> float:
            messages = [
                {"role": "system", "content": prompt},
                {"role": "user", "content": PROMPT},
            ]
            started = time.perf_counter()
            result = await agent_loop(messages, runtime, client=direct, model="scripted")
            elapsed = time.perf_counter() - started
            assert result.stop_reason == "end_turn" and len(result.tool_calls) == TOOL_TURNS
            assert all(call.ok for call in result.tool_calls)
            return elapsed

        server_turns: list[float] = []
        direct_turns: list[float] = []
        for i in range(ASK_WARMUP + ASK_ROUNDS):
            server_time = await through_server(f"bench-{i}")
            direct_time = await loop_directly()
            if i >= ASK_WARMUP:
                server_turns.append(server_time / TOOL_TURNS)
                direct_turns.append(direct_time / TOOL_TURNS)
        return {"server": server_turns, "direct": direct_turns}
    finally:
        await direct.close()
        if session is not None:
            await session.close()
        await stop_model(model)


# --- 4. concurrent asks -------------------------------------------------------------


async def _probe_until(session: Session, done: asyncio.Event) -> list[float]:
    """``agent/listTools`` one after another until ``done``; their latencies."""
    times: list[float] = []
    while not done.is_set():
        started = time.perf_counter()
        await session.request(LIST_TOOLS, {})
        times.append(time.perf_counter() - started)
    return times


async def bench_concurrent(folder: Path) -> dict[str, Any]:
    model, base_url = await start_model(
        "--instant", "--instant-turns", "0", "--latency", str(MODEL_LATENCY)
    )
    session: Session | None = None
    try:
        session = await spawn(SERVER_CMD, server_env(base_url), folder)
        await asyncio.sleep(SDK_WARM_S)

        async def one_ask(token: str) -> None:
            assert session is not None
            result = await session.request(ASK, {"prompt": "Answer.", "workDoneToken": token})
            assert result["answer"] == "done", result

        async def timed(coro: Callable[[], Awaitable[Any]]) -> float:
            started = time.perf_counter()
            await coro()
            return time.perf_counter() - started

        await one_ask("warm-up")
        idle = await _timed_calls(session, LIST_TOOLS, {}, IDLE_PROBES)
        single: list[float] = []
        together: list[float] = []
        busy: list[float] = []
        for r in range(CONCURRENT_ROUNDS):
            single.append(await timed(lambda r=r: one_ask(f"single-{r}")))
            done = asyncio.Event()
            probe = asyncio.create_task(_probe_until(session, done))

            async def many(r: int = r) -> None:
                await asyncio.gather(*(one_ask(f"many-{r}-{i}") for i in range(CONCURRENT)))

            together.append(await timed(many))
            done.set()
            busy += await probe
        return {"single": single, "together": together, "idle": idle, "busy": busy}
    finally:
        if session is not None:
            await session.close()
        await stop_model(model)


# --- report ---------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _cpu_row(startup: dict[str, Any]) -> list[Row]:
    if not startup["ours_cpu"] or not startup["bare_cpu"]:
        return []  # no /proc
    ours, bare = p50(startup["ours_cpu"]), p50(startup["bare_cpu"])
    return [
        (
            "server CPU time, start → `initialize` result, median (ms)",
            f"{ours * 1e3:.0f}",
            f"{bare * 1e3:.0f}",
            f"{ours / bare:.2f}",
            "≤ 1.1×",
            _met(ours / bare <= 1.1),
        )
    ]


def render(
    startup: dict[str, Any],
    imports: dict[str, Any],
    trips: dict[str, list[float]],
    handler: dict[str, list[float]],
    overhead: dict[str, Any],
    concurrent: dict[str, Any],
    load: tuple[float, float],
) -> str:
    import openai

    env = (
        f"Python {platform.python_version()}, pygls {version('pygls')}, "
        f"openai {openai.__version__}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.machine()}; {time.strftime('%Y-%m-%d %H:%M')}; "
        f"1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end"
    )
    ms = 1e3
    us = 1e6
    start_ours, start_bare = p50(startup["ours"]), p50(startup["bare"])
    start_ratio = start_ours / start_bare
    lt, echo, echo_payload = trips["list_tools"], trips["echo"], trips["echo_payload"]
    rt50, rt99 = p50(lt) / p50(echo), p99(lt) / p99(echo)
    srv, dct = p50(overhead["server"]), p50(overhead["direct"])
    ask_ratio = srv / dct
    paired = p50([a / b for a, b in zip(overhead["server"], overhead["direct"], strict=True)])
    single, together = p50(concurrent["single"]), p50(concurrent["together"])
    idle, busy = concurrent["idle"], concurrent["busy"]

    rows: list[Row] = [
        (
            "start → `initialize` result, median (ms)",
            f"{start_ours * ms:.0f}",
            f"{start_bare * ms:.0f}",
            f"{start_ratio:.2f}",
            "≤ 1.1×",
            _met(start_ratio <= 1.1),
        ),
        *_cpu_row(startup),
        (
            "`agent/listTools` vs `bench/echo {}` round trip, p50 (µs)",
            f"{p50(lt) * us:.0f}",
            f"{p50(echo) * us:.0f}",
            f"{rt50:.2f}",
            "≤ 1.1×",
            _met(rt50 <= 1.1),
        ),
        (
            "`agent/listTools` vs `bench/echo {}` round trip, p99 (µs)",
            f"{p99(lt) * us:.0f}",
            f"{p99(echo) * us:.0f}",
            f"{rt99:.2f}",
            "≤ 1.1×",
            _met(rt99 <= 1.1),
        ),
        (
            "`agent/listTools` vs `bench/echo` of the same result (bytes both ways), p50 (µs)",
            f"{p50(lt) * us:.0f}",
            f"{p50(echo_payload) * us:.0f}",
            f"{p50(lt) / p50(echo_payload):.2f}",
            "(for scale)",
            "-",
        ),
        (
            "ask overhead per tool turn, median (µs): `agent/ask` vs `agent_loop` in-process",
            f"{srv * us:.0f}",
            f"{dct * us:.0f}",
            f"{ask_ratio:.2f}",
            "≤ 1.2×",
            _met(ask_ratio <= 1.2),
        ),
        (
            f"{CONCURRENT} concurrent asks, model latency {MODEL_LATENCY:g} s: wall time vs "
            "1 ask alone, median (s)",
            f"{together:.3f}",
            f"{single:.3f}",
            f"{together / single:.2f}",
            "~1 s (≤ 1.1× one ask)",
            _met(together <= 1.1 * single),
        ),
        (
            f"`agent/listTools` p99 during {CONCURRENT} asks vs idle (µs)",
            f"{p99(busy) * us:.0f}",
            f"{p99(idle) * us:.0f}",
            f"{p99(busy) / p99(idle):.2f}",
            "(responsive)",
            "-",
        ),
    ]
    lines = [
        "# Language-server benchmarks",
        "",
        f"Measured with `uv run python bench/bench_server.py` ({env}). The client is pygls's "
        "`LanguageClient` over stdio; every figure is next to a baseline from the same run.",
        "",
        "| measurement | agent-lsp | baseline | ratio | target | met |",
        "|---|---:|---:|---:|---|---|",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        "## Details",
        "",
        f"**Start-up** ({STARTS} spawns each, alternating; `python -m server --stdio` vs "
        "`bench/bare_pygls_server.py`, spawn → `initialize` result): "
        f"agent-lsp p50 {start_ours * ms:.0f} ms / max {max(startup['ours']) * ms:.0f} ms; "
        f"bare pygls p50 {start_bare * ms:.0f} ms / max {max(startup['bare']) * ms:.0f} ms; "
        f"the interpreter alone (`python -c pass`, spawn → exit) "
        f"{p50(startup['interpreter']) * ms:.0f} ms. Server CPU time is read from "
        "`/proc/PID/stat` (10 ms ticks) when the `initialize` result arrives.",
        "",
    ]
    shares = ", ".join(
        f"`{package}` {share * 100:.0f}%" for package, share in imports["shares"][:8]
    )
    lines += [
        f"Imports, in-process wall time (median of {IMPORT_RUNS}): the bare server's "
        f"`pygls.lsp.server` + `lsprotocol.converters` {imports['bare_s'] * ms:.0f} ms; "
        f"agent-lsp's `server.cli` + `server.lsp.server` on top of those "
        f"{imports['extra_s'] * ms:.0f} ms (start-up gap: "
        f"{(start_ours - start_bare) * ms:.0f} ms). Split of that extra by top-level "
        f"package (`-X importtime` self time): {shares}. A folder's tool runtime is built "
        f"on its first use (the first listTools or ask), not during `initialize`; "
        f"`ToolRuntime(build_tools(...))` the first time in a process "
        f"(jsonschema import included): "
        f"{imports['runtime_s'] * ms:.0f} ms.",
        "",
    ]
    lines += [
        f"**Round trip** ({ROUND_TRIPS} sequential requests per method, interleaved blocks of "
        f"{RT_BLOCK}): `agent/listTools` returns {int(trips['payload_bytes'][0])} bytes of "
        "JSON (five tool schemas); `bench/echo {}` returns `{}`. For scale, `bench/echo` with "
        f"the listTools result as params (those bytes both ways): p50 "
        f"{p50(echo_payload) * us:.0f} µs, p99 {p99(echo_payload) * us:.0f} µs. Server-side, "
        f"in-process (median of {ROUND_TRIPS}): `engine.list_tools()` builds the result in "
        f"{p50(handler['build']) * us:.0f} µs, and pygls's encoding of that response "
        f"(cattrs `unstructure` + `json.dumps`) takes {p50(handler['encode']) * us:.0f} µs.",
        "",
        f"**Ask overhead** ({TOOL_TURNS} `{TOOL}` tool turns per ask = {TOOL_TURNS + 1} model "
        f"requests, {ASK_ROUNDS} asks per variant interleaved after {ASK_WARMUP} warm-ups; "
        f"per turn = ask time / {TOOL_TURNS}): through the server (JSON-RPC, engine, "
        "conversation, `agent/toolActivity` and `$/progress` notifications for a "
        f"`workDoneToken`) p50 {srv * us:.0f} µs, p99 {p99(overhead['server']) * us:.0f} µs; "
        f"`agent_loop` in-process p50 {dct * us:.0f} µs, p99 "
        f"{p99(overhead['direct']) * us:.0f} µs; difference {(srv - dct) * us:+.0f} µs per "
        f"turn; median of the per-round ratios {paired:.2f}. Both use the same five-tool "
        "runtime, system prompt and instant scripted model (in its own process).",
        "",
        f"**Concurrency** ({CONCURRENT_ROUNDS} rounds; each ask is one model request answered "
        f"after {MODEL_LATENCY:g} s): 1 ask {single:.3f} s, {CONCURRENT} asks at once "
        f"{together:.3f} s. `agent/listTools` sent back to back meanwhile: p50 "
        f"{p50(busy) * us:.0f} µs, p99 {p99(busy) * us:.0f} µs over {len(busy)} requests; "
        f"idle p50 {p50(idle) * us:.0f} µs, p99 {p99(idle) * us:.0f} µs over {len(idle)}.",
        "",
    ]
    return "\n".join(lines)


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-") as tmp:
        folder = Path(tmp).resolve()
        (folder / "tiny.txt").write_text("hello\n", encoding="utf-8")
        began = time.perf_counter()
        load_before = os.getloadavg()[0]
        startup = await bench_startup(folder)
        print(f"start-up done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
        imports = import_breakdown()
        print(f"imports done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
        ours = await spawn(SERVER_CMD, server_env(None), folder)
        bare = await spawn(BARE_CMD, server_env(None), folder)
        await asyncio.sleep(SDK_WARM_S)  # let agent-lsp's background SDK import finish
        try:
            trips = await bench_round_trips(ours, bare)
        finally:
            await ours.close()
            await bare.close()
        handler = await list_tools_in_process(folder)
        print(f"round trips done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
        overhead = await bench_ask_overhead(folder)
        print(f"ask overhead done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
        concurrent = await bench_concurrent(folder)
        print(f"concurrency done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
        load = (load_before, os.getloadavg()[0])
    report = render(startup, imports, trips, handler, overhead, concurrent, load)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
