"""The ACP face (``agent-lsp acp``) next to the LSP face, each figure next to a baseline
measured in the same run, the two sides alternating.

Both faces run as the editors start them, over stdio: ``python -I -m server acp`` driven by
the official ACP SDK's client side (``acp.spawn_agent_process``, a minimal ``Client`` that
records every ``session/update`` with its arrival time), and ``python -I -m server --stdio``
driven by pygls's ``LanguageClient`` (``bench_server.spawn``). One scripted model
(``tests/support/model_server.py``'s ``ScriptedModel``, in its own process: this script with
``--model``) answers both; it prints each streamed answer's ``StreamRecord`` (when each SSE
event left, ``time.monotonic()``: the system-wide clock, comparable across processes) with the
tag of the prompt it answered.

1. **A prompt with a tool turn.** The model calls ``read_file`` once (a 6-byte file), then
   answers ``done`` (``instant_responder``): ``session/prompt`` in one ACP session vs
   ``agent/ask`` continuing one LSP conversation (``sessionId``), so both carry the same
   growing history. Median over ``ROUNDS`` rounds after ``WARMUP`` warm-up prompts; target
   <= 1.1x. For scale, a third variant in a second ACP process whose client advertises
   ``fs.readTextFile``, so ``read_file`` reads through the client (``fs/read_text_file``).
2. **Streaming.** The model streams ``STREAM_TOKENS`` chunks of one 4-character token,
   ``STREAM_DELAY`` s apart: first SSE content chunk sent -> first ``agent_message_chunk`` at
   the ACP client vs -> first ``agent/answerDelta`` at the LSP client (and, for scale, the
   openai SDK reading the same stream directly); target <= 20 ms added.

Both clients stamp a message in their handler (after their SDK parsed it), the way an editor
sees it.

Run: ``uv run python bench/bench_acp.py`` (writes ``bench/results/acp.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench_server import (  # the script's folder is on sys.path
    REPO_ROOT,
    SERVER_CMD,
    Session,
    _drain,
    _process_cpu,
    percentile,
    server_env,
    spawn,
    stop_model,
)

RESULTS = REPO_ROOT / "bench" / "results" / "acp.md"
ACP_CMD = [sys.executable, "-I", "-m", "server", "acp"]
BARE_ACP_CMD = [sys.executable, str(REPO_ROOT / "bench" / "bare_acp_agent.py")]
STARTS = 10  # spawns per agent for the start-up figure, alternating
STARTUP: dict[str, list[float]] = {}  # acp_startup's figures, for the report
TOOL = "read_file"
TOOL_ARGS = {"path": "tiny.txt"}
ANSWER = "done"
ROUNDS = 60  # part 1, per variant, alternating
WARMUP = 3
STREAM_ROUNDS = 30  # part 2
STREAM_WARMUP = 2
STREAM_TOKENS = 50
STREAM_DELAY = 0.005  # seconds between chunks
RATIO_TARGET = 1.1
ADDED_TARGET_MS = 20.0
TIMEOUT = 60.0  # any one request; a face that hangs fails the run with this
TAG = re.compile(r"\[(tool|stream)-([\w-]+)\]")


def stream_text() -> str:
    return "".join(f"t{i % 1000:03d} " for i in range(STREAM_TOKENS))  # 5 characters each


def med(values: list[float]) -> float:
    return statistics.median(values)


def p90(values: list[float]) -> float:
    return percentile(values, 90)


# --- the scripted model (``--model``: its own process) ---------------------------------


def _user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return json.dumps(content)
    return ""


def serve_model() -> None:
    """A ``ScriptedModel``: ``[tool-…]`` prompts get one ``read_file`` call then ``done``;
    ``[stream-…]`` prompts a streamed answer. Each finished stream is printed as
    ``STREAM {record, tag, tools}``."""
    from tests.support.model_server import ScriptedModel, instant_responder, make_reply

    tool_turn = instant_responder(TOOL, TOOL_ARGS, tool_turns=1, answer=ANSWER)
    text = stream_text()

    def responder(body: dict[str, Any]) -> Any:
        match = TAG.search(_user_text(body.get("messages", [])))
        if match and match.group(1) == "stream":
            return make_reply(text, chunk_size=5, chunk_delay=STREAM_DELAY)
        return tool_turn(body)

    model = ScriptedModel(responder)
    lock = threading.Lock()

    class Log:
        """``ScriptedModel.stream_log``: each record with the prompt's tag, to stdout."""

        def write(self, line: str) -> None:
            record = json.loads(line)
            body = model.requests[record["request"]]["body"]
            match = TAG.search(_user_text(body.get("messages", [])))
            record["tag"] = match.group(0) if match else None
            record["tools"] = bool(body.get("tools"))
            with lock:
                sys.stdout.write("STREAM " + json.dumps(record) + "\n")
                sys.stdout.flush()

        def flush(self) -> None:
            pass

    model.stream_log = Log()  # type: ignore[assignment]
    model.start()
    print(f"READY {model.base_url}", flush=True)
    try:
        threading.Event().wait()
    finally:
        model.stop()


class Model:
    """The model process and the stream records it prints."""

    def __init__(self, process: asyncio.subprocess.Process, base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self.records: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls) -> Model:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).resolve()),
            "--model",
            cwd=str(REPO_ROOT),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode().strip()
        if not line.startswith("READY "):
            process.kill()
            raise RuntimeError(f"model server did not start: {line!r}")
        return cls(process, line.removeprefix("READY "))

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            if line.startswith(b"STREAM "):
                async with self._changed:
                    self.records.append(json.loads(line[7:]))
                    self._changed.notify_all()

    async def stream_for(self, tag: str, *, tools: bool) -> dict[str, Any]:
        """The finished stream answering a prompt tagged ``tag`` (an agent's turn offers
        tools; the SDK's direct request none)."""

        def found() -> dict[str, Any] | None:
            return next((r for r in self.records if r["tag"] == tag and r["tools"] == tools), None)

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: found() is not None), 10)
        record = found()
        assert record is not None
        return record

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await stop_model(self.process)


# --- the ACP face -------------------------------------------------------------------------


class Deviations:
    """What the ACP face did that the contract (``/tmp/acp_spec.md``) says otherwise; each
    kind once, with how often it happened."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.seen[what] = self.seen.get(what, 0) + 1


@dataclass
class Update:
    at: float  # time.monotonic() in the handler
    session_id: str
    kind: str
    update: Any


class Recorder:
    """A minimal ACP client (``acp.interfaces.Client``): records what the agent sends."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.updates: list[Update] = []
        self.permissions: list[Any] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.seen: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)  # by kind

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = getattr(update, "session_update", type(update).__name__)
        self.updates.append(Update(time.monotonic(), session_id, kind, update))
        self.seen[kind].set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permissions.append(tool_call)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_once")
        )

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kwargs: Any,
    ) -> Any:
        from acp.schema import ReadTextFileResponse

        self.reads.append(path)
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        from acp.exceptions import RequestError

        self.writes.append(path)
        raise RequestError.method_not_found("fs/write_text_file")  # not advertised


@dataclass
class AcpAgent:
    conn: Any
    process: asyncio.subprocess.Process
    client: Recorder
    session_id: str
    stderr_tail: bytearray
    initialize_s: float


@contextlib.asynccontextmanager
async def acp_agent(
    base_url: str, folder: Path, deviations: Deviations, *, read_through_client: bool = False
) -> AsyncIterator[AcpAgent]:
    """``agent-lsp acp`` initialized, with one new session on ``folder``."""
    from acp import PROTOCOL_VERSION, spawn_agent_process
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    client = Recorder(folder)
    tail = bytearray()
    env = server_env(base_url)
    started = time.perf_counter()
    async with spawn_agent_process(
        client, *ACP_CMD, env=env, cwd=str(REPO_ROOT), use_unstable_protocol=True
    ) as (conn, process):
        assert process.stderr is not None
        drain = asyncio.create_task(_drain(process.stderr, tail))
        try:
            fs = FileSystemCapabilities(read_text_file=read_through_client, write_text_file=False)
            init = await _within(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(fs=fs),
                ),
                "initialize",
                tail,
            )
            initialize_s = time.perf_counter() - started
            deviations.check(init.protocol_version == 1, "initialize: protocolVersion is not 1")
            info = init.agent_info
            deviations.check(
                info is not None and info.name == "agent-lsp", "initialize: agentInfo.name"
            )
            session = await _within(
                conn.new_session(cwd=str(folder), mcp_servers=[]), "session/new", tail
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(client.seen["available_commands_update"].wait(), 5)
            commands = [
                {c.name for c in u.update.available_commands}
                for u in client.updates
                if u.kind == "available_commands_update"
            ]
            deviations.check(
                bool(commands) and {"compact", "checkpoints", "undo"} <= commands[0],
                "session/new: no `available_commands_update` with compact, checkpoints, undo "
                "within 5 s",
            )
            modes = session.modes
            deviations.check(
                modes is not None and modes.current_mode_id == "workspace-write",
                "session/new: modes.currentModeId is not workspace-write",
            )
            yield AcpAgent(conn, process, client, session.session_id, tail, initialize_s)
        finally:
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain


async def spawn_initialize(
    cmd: list[str], env: dict[str, str], folder: Path, cwd: Path = REPO_ROOT
) -> tuple[float, float, float]:
    """Spawn an ACP agent, send ``initialize`` then ``session/new`` on ``folder``: (wall
    seconds spawn -> ``initialize`` result, the agent's CPU seconds by then, wall seconds
    spawn -> ``session/new`` result). The agent is closed (stdin ends) before returning."""
    from acp import PROTOCOL_VERSION, spawn_agent_process
    from acp.schema import ClientCapabilities

    tail = bytearray()
    started = time.perf_counter()
    async with spawn_agent_process(Recorder(folder), *cmd, env=env, cwd=str(cwd)) as (
        conn,
        process,
    ):
        assert process.stderr is not None
        drain = asyncio.create_task(_drain(process.stderr, tail))
        try:
            await _within(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
                ),
                "initialize",
                tail,
            )
            wall = time.perf_counter() - started
            cpu = _process_cpu(process) or 0.0
            await _within(conn.new_session(cwd=str(folder), mcp_servers=[]), "session/new", tail)
            session = time.perf_counter() - started
        finally:
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
    return wall, cpu, session


async def acp_startup(env: dict[str, str], folder: Path, starts: int = STARTS) -> dict[str, Any]:
    """``agent-lsp acp`` vs the bare ACP agent (``bench/bare_acp_agent.py``): spawn ->
    ``initialize`` result, wall and CPU, alternating (the order reversed every round)."""
    out: dict[str, list[float]] = defaultdict(list)
    for i in range(starts):
        order = [(ACP_CMD, "ours"), (BARE_ACP_CMD, "bare")]
        for cmd, name in order if i % 2 == 0 else reversed(order):
            wall, cpu, session = await spawn_initialize(cmd, env, folder)
            out[name].append(wall)
            out[f"{name}_cpu"].append(cpu)
            out[f"{name}_session"].append(session)
    return dict(out)


async def _within(awaitable: Any, what: str, tail: bytearray) -> Any:
    try:
        return await asyncio.wait_for(awaitable, TIMEOUT)
    except TimeoutError:
        raise RuntimeError(
            f"ACP {what}: no answer within {TIMEOUT:g} s; agent stderr:\n"
            + tail.decode(errors="replace")
        ) from None
    except Exception as exc:
        raise RuntimeError(
            f"ACP {what} failed: {exc!r}; agent stderr:\n" + tail.decode(errors="replace")
        ) from exc


async def acp_prompt(agent: AcpAgent, text: str) -> tuple[float, float, Any, list[Update]]:
    """(wall seconds, client CPU seconds, PromptResponse, the updates it got)."""
    from acp import text_block

    start = len(agent.client.updates)
    cpu = time.process_time()
    started = time.perf_counter()
    response = await _within(
        agent.conn.prompt(session_id=agent.session_id, prompt=[text_block(text)]),
        "session/prompt",
        agent.stderr_tail,
    )
    elapsed = time.perf_counter() - started
    return elapsed, time.process_time() - cpu, response, agent.client.updates[start:]


def check_tool_prompt(response: Any, updates: list[Update], deviations: Deviations) -> None:
    deviations.check(response.stop_reason == "end_turn", "prompt: stopReason is not end_turn")
    kinds = [u.kind for u in updates]
    starts = [u.update for u in updates if u.kind == "tool_call"]
    progress = [u.update for u in updates if u.kind == "tool_call_update"]
    chunks = [u.update for u in updates if u.kind == "agent_message_chunk"]
    deviations.check(len(starts) == 1, "prompt: not exactly one `tool_call` update")
    if starts:
        call = starts[0]
        deviations.check(call.kind == "read", "tool_call: kind is not `read`")
        deviations.check(call.status == "pending", "tool_call: status is not `pending`")
        deviations.check(
            bool(call.title) and call.title.startswith(TOOL), "tool_call: title not `read_file …`"
        )
        deviations.check(call.raw_input == TOOL_ARGS, "tool_call: rawInput is not the arguments")
        deviations.check(
            bool(call.locations) and Path(call.locations[0].path).is_absolute(),
            "tool_call: no absolute `locations` path",
        )
    statuses = [p.status for p in progress if p.status is not None]
    deviations.check(
        statuses[:1] == ["in_progress"] and statuses[-1:] == ["completed"],
        "tool_call_update: statuses are not in_progress, then completed",
    )
    answer = "".join(getattr(c.content, "text", "") for c in chunks)
    deviations.check(answer == ANSWER, "agent_message_chunk: joined chunks are not the answer")
    if "tool_call" in kinds and "agent_message_chunk" in kinds:
        deviations.check(
            kinds.index("tool_call") < kinds.index("agent_message_chunk"),
            "updates: the answer came before the tool call",
        )


# --- the LSP face -------------------------------------------------------------------------


@dataclass
class LspFace:
    session: Session
    deltas: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    notifications: int = 0
    conversation: str | None = None


async def lsp_face(base_url: str, folder: Path) -> LspFace:
    face: LspFace | None = None

    def count(params: Any) -> None:
        assert face is not None
        face.notifications += 1

    handlers = {"agent/toolActivity": count, "agent/askProgress": count, "$/progress": count}
    session = await spawn(SERVER_CMD, server_env(base_url), folder, handlers=handlers)
    face = LspFace(session)

    def on_delta(params: Any) -> None:
        assert face is not None
        face.notifications += 1
        face.deltas.append((time.monotonic(), params))

    session.client.feature("agent/answerDelta")(on_delta)
    return face


async def lsp_ask(face: LspFace, text: str) -> tuple[float, float, Any]:
    """(wall seconds, client CPU seconds, the ask's result); continues one conversation."""
    params: dict[str, Any] = {"prompt": text}
    if face.conversation is not None:
        params["sessionId"] = face.conversation
    cpu = time.process_time()
    started = time.perf_counter()
    result = await asyncio.wait_for(face.session.request("agent/ask", params), TIMEOUT)
    elapsed = time.perf_counter() - started
    face.conversation = result["sessionId"]
    return elapsed, time.process_time() - cpu, result


# --- 1. a prompt with a tool turn ---------------------------------------------------------


@dataclass
class Part1:
    acp: list[float] = field(default_factory=list)
    lsp: list[float] = field(default_factory=list)
    acp_fs: list[float] = field(default_factory=list)
    acp_client_cpu: list[float] = field(default_factory=list)
    lsp_client_cpu: list[float] = field(default_factory=list)
    acp_server_cpu: float | None = None  # per prompt, over the timed rounds
    lsp_server_cpu: float | None = None
    acp_updates: list[int] = field(default_factory=list)  # session/update per prompt
    lsp_notifications: list[int] = field(default_factory=list)
    fs_reads: int = 0
    fs_error: str | None = None
    initialize_s: float = 0.0


async def bench_tool_turn(
    model: Model, folder: Path, deviations: Deviations, fs_deviations: Deviations
) -> Part1:
    out = Part1()
    lsp = await lsp_face(model.base_url, folder)
    try:
        async with (
            acp_agent(model.base_url, folder, deviations) as acp,
            contextlib.AsyncExitStack() as stack,
        ):
            out.initialize_s = acp.initialize_s
            fs_agent: AcpAgent | None = None
            try:
                fs_agent = await stack.enter_async_context(
                    acp_agent(model.base_url, folder, fs_deviations, read_through_client=True)
                )
            except Exception as exc:  # for scale only: report it, measure the rest
                out.fs_error = str(exc).splitlines()[0]
            cpu_start: tuple[float | None, float | None] = (None, None)
            for round_ in range(WARMUP + ROUNDS):
                if round_ == WARMUP:
                    cpu_start = (_process_cpu(acp.process), _process_cpu(lsp.session.process))
                text = f"Read tiny.txt, then answer. [tool-{round_}]"
                order = ["acp", "lsp", "fs"] if round_ % 2 == 0 else ["fs", "lsp", "acp"]
                for variant in order:
                    if variant == "acp":
                        wall, cpu, response, updates = await acp_prompt(acp, text)
                        check_tool_prompt(response, updates, deviations)
                        if round_ >= WARMUP:
                            out.acp.append(wall)
                            out.acp_client_cpu.append(cpu)
                            out.acp_updates.append(len(updates))
                    elif variant == "lsp":
                        before = lsp.notifications
                        wall, cpu, result = await lsp_ask(lsp, text)
                        assert result["stopReason"] == "end_turn", result
                        assert result["answer"] == ANSWER, result
                        calls = result["toolCalls"]
                        assert len(calls) == 1 and calls[0]["ok"], calls
                        if round_ >= WARMUP:
                            out.lsp.append(wall)
                            out.lsp_client_cpu.append(cpu)
                            out.lsp_notifications.append(lsp.notifications - before)
                    elif fs_agent is not None:
                        reads = len(fs_agent.client.reads)
                        try:
                            wall, _, response, updates = await acp_prompt(fs_agent, text)
                        except Exception as exc:
                            out.fs_error = str(exc).splitlines()[0]
                            fs_agent = None
                            continue
                        check_tool_prompt(response, updates, fs_deviations)
                        fs_deviations.check(
                            len(fs_agent.client.reads) > reads,
                            "fs.readTextFile advertised: read_file did not read through "
                            "`fs/read_text_file`",
                        )
                        if round_ >= WARMUP:
                            out.acp_fs.append(wall)
                            out.fs_reads += len(fs_agent.client.reads) - reads
            acp_end, lsp_end = _process_cpu(acp.process), _process_cpu(lsp.session.process)
            if cpu_start[0] is not None and acp_end is not None:
                out.acp_server_cpu = (acp_end - cpu_start[0]) / ROUNDS
            if cpu_start[1] is not None and lsp_end is not None:
                out.lsp_server_cpu = (lsp_end - cpu_start[1]) / ROUNDS
    finally:
        await lsp.session.close()
    return out


# --- 2. streaming -------------------------------------------------------------------------


@dataclass
class Part2:
    acp: list[float] = field(default_factory=list)  # first chunk sent -> first text, s
    lsp: list[float] = field(default_factory=list)
    sdk: list[float] = field(default_factory=list)
    acp_last: list[float] = field(default_factory=list)  # [DONE] sent -> prompt response
    lsp_last: list[float] = field(default_factory=list)
    acp_chunks: list[int] = field(default_factory=list)
    lsp_deltas: list[int] = field(default_factory=list)


async def sdk_first(client: Any, model: Model, tag: str, text: str) -> float:
    first = 0.0
    parts: list[str] = []
    stream = await client.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": f"Stream. {tag}"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if not parts:
                first = time.monotonic()
            parts.append(chunk.choices[0].delta.content)
    assert "".join(parts) == text
    return first - (await model.stream_for(tag, tools=False))["sent"][0]


async def bench_streaming(model: Model, folder: Path, deviations: Deviations) -> Part2:
    from openai import AsyncOpenAI

    out = Part2()
    text = stream_text()
    lsp = await lsp_face(model.base_url, folder)
    direct = AsyncOpenAI(api_key="bench", base_url=model.base_url, max_retries=0)
    try:
        async with acp_agent(model.base_url, folder, deviations) as acp:
            for round_ in range(STREAM_WARMUP + STREAM_ROUNDS):
                keep = round_ >= STREAM_WARMUP
                order = ["acp", "lsp", "sdk"] if round_ % 2 == 0 else ["sdk", "lsp", "acp"]
                for variant in order:
                    tag = f"[stream-{variant}-{round_}]"
                    if variant == "acp":
                        _, _, response, updates = await acp_prompt(acp, f"Stream. {tag}")
                        arrived = time.monotonic()
                        record = await model.stream_for(tag, tools=True)
                        chunks = [u for u in updates if u.kind == "agent_message_chunk"]
                        joined = "".join(getattr(u.update.content, "text", "") for u in chunks)
                        deviations.check(
                            response.stop_reason == "end_turn",
                            "prompt: stopReason is not end_turn",
                        )
                        deviations.check(
                            joined == text, "agent_message_chunk: joined chunks are not the answer"
                        )
                        if not chunks:
                            raise RuntimeError("ACP: no agent_message_chunk for a streamed answer")
                        if keep:
                            out.acp.append(chunks[0].at - record["sent"][0])
                            out.acp_last.append(arrived - record["sent"][-1])
                            out.acp_chunks.append(len(chunks))
                    elif variant == "lsp":
                        start = len(lsp.deltas)
                        _, _, result = await lsp_ask(lsp, f"Stream. {tag}")
                        arrived = time.monotonic()
                        record = await model.stream_for(tag, tools=True)
                        deltas = [
                            (at, p)
                            for at, p in lsp.deltas[start:]
                            if p.get("channel", "answer") == "answer"
                        ]
                        assert result["answer"] == text, result["answer"][:80]
                        assert "".join(p["delta"] for _, p in deltas) == text, "deltas differ"
                        if keep:
                            out.lsp.append(deltas[0][0] - record["sent"][0])
                            out.lsp_last.append(arrived - record["sent"][-1])
                            out.lsp_deltas.append(len(deltas))
                    else:
                        first = await sdk_first(direct, model, tag, text)
                        if keep:
                            out.sdk.append(first)
    finally:
        await direct.close()
        await lsp.session.close()
    return out


# --- report -------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _ms_p90(values: list[float]) -> str:
    return f"{med(values) * 1000:.2f} ms (p90 {p90(values) * 1000:.2f})"


def _deviation_lines(title: str, deviations: Deviations) -> list[str]:
    if not deviations.seen:
        return []
    return [
        f"**{title}** (the contract says otherwise; each kind with how many prompts):",
        "",
        *(f"- {what}: {count}" for what, count in deviations.seen.items()),
        "",
    ]


def render(
    one: Part1,
    two: Part2,
    deviations: Deviations,
    fs_deviations: Deviations,
    load: tuple[float, float],
    elapsed: float,
) -> str:
    cpus = len(os.sched_getaffinity(0))
    env = (
        f"{time.strftime('%Y-%m-%d %H:%M')}, {cpus} CPUs, Python {platform.python_version()}, "
        f"agent-client-protocol {version('agent-client-protocol')}, pygls {version('pygls')}, "
        f"openai {version('openai')}; 1-minute load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end; whole run {elapsed:.0f} s"
    )
    ratio = med(one.acp) / med(one.lsp)
    paired = med([a / b for a, b in zip(one.acp, one.lsp, strict=True)])
    ratio_met = ratio <= RATIO_TARGET
    first_added = med(two.acp) - med(two.lsp)
    first_met = first_added * 1000 <= ADDED_TARGET_MS
    last_added = med(two.acp_last) - med(two.lsp_last)
    rows = [
        f"| prompt with one `{TOOL}` tool turn, median | {_ms_p90(one.acp)} | "
        f"{_ms_p90(one.lsp)} | {(med(one.acp) - med(one.lsp)) * 1000:+.2f} ms | {ratio:.2f}x | "
        f"≤ {RATIO_TARGET:g}x: {'met' if ratio_met else '**not met**'} |",
        f"| first SSE content chunk sent → first text at the client | {_ms_p90(two.acp)} | "
        f"{_ms_p90(two.lsp)} | {first_added * 1000:+.2f} ms | {med(two.acp) / med(two.lsp):.2f}x "
        f"| added ≤ {ADDED_TARGET_MS:g} ms: {'met' if first_met else '**not met**'} |",
        f"| last event (`[DONE]`) sent → prompt / ask response | {_ms_p90(two.acp_last)} | "
        f"{_ms_p90(two.lsp_last)} | {last_added * 1000:+.2f} ms | "
        f"{med(two.acp_last) / med(two.lsp_last):.2f}x | (for scale) |",
    ]
    lines = [
        "# ACP face",
        "",
        f"`uv run python bench/bench_acp.py`; {env}.",
        "",
        "`agent-lsp acp` (`python -I -m server acp`, the ACP SDK's `spawn_agent_process` and a "
        "minimal `Client` recording each `session/update` as its handler gets it) next to the "
        "LSP face (`python -I -m server --stdio`, pygls's `LanguageClient`, `agent/ask`), one "
        "process each, against one scripted model in its own process; the variants alternate "
        "(order reversed every round). Tool turn: the model calls `read_file` (6-byte file) "
        f"once, then answers `{ANSWER}`; {ROUNDS} prompts per face after {WARMUP} warm-ups, "
        "continuing one ACP session and one LSP conversation (`sessionId`), so both send the "
        f"same growing history. Streaming: the model streams {STREAM_TOKENS} chunks of one "
        f"5-character token, {STREAM_DELAY * 1000:g} ms apart, and stamps each event as it "
        f"leaves (`StreamRecord.sent`, `time.monotonic()`); {STREAM_ROUNDS} prompts per face "
        f"after {STREAM_WARMUP} warm-ups, in a second pair of processes. Medians, p90. "
        "The model stamps an event once its write returns, so a fast reader can see it a "
        "hair earlier (a figure at or below zero).",
        "",
        "| measurement | ACP face | LSP face (baseline) | added | ratio | target |",
        "|---|---:|---:|---:|---:|---|",
        *rows,
        "",
        "## Details",
        "",
    ]
    server_cpu = ""
    if one.acp_server_cpu is not None and one.lsp_server_cpu is not None:
        server_cpu = (
            f" Agent process CPU per prompt (`/proc/PID/stat`, 10 ms ticks, over the "
            f"{ROUNDS} timed rounds): ACP {_ms(one.acp_server_cpu)}, LSP "
            f"{_ms(one.lsp_server_cpu)}."
        )
    lines += [
        f"**Tool turn.** Median of the per-round ratios {paired:.2f}x. Client CPU per prompt "
        f"(this process, `time.process_time()`): ACP SDK {_ms(med(one.acp_client_cpu))}, "
        f"pygls {_ms(med(one.lsp_client_cpu))}.{server_cpu} Messages per prompt: "
        f"{med([float(n) for n in one.acp_updates]):.0f} `session/update`s vs "
        f"{med([float(n) for n in one.lsp_notifications]):.0f} LSP notifications "
        "(`agent/toolActivity`, `agent/askProgress`, `agent/answerDelta`). ACP spawn → "
        f"`initialize` result: {_ms(one.initialize_s)} (once, for scale).",
        "",
    ]
    if STARTUP:
        ours, bare = med(STARTUP["ours"]), med(STARTUP["bare"])
        ratio = ours / bare
        lines += [
            f"**Start-up** ({len(STARTUP['ours'])} spawns each, alternating): `agent-lsp acp` "
            f"spawn → `initialize` result {_ms(ours)}, the bare agent on the ACP SDK "
            f"(`bench/bare_acp_agent.py`) {_ms(bare)}: {ratio:.2f}x (target ≤ {RATIO_TARGET}x: "
            f"{'met' if ratio <= RATIO_TARGET else 'not met'}); CPU by then "
            f"{_ms(med(STARTUP['ours_cpu']))} vs {_ms(med(STARTUP['bare_cpu']))}; spawn → "
            f"`session/new` result {_ms(med(STARTUP['ours_session']))} vs "
            f"{_ms(med(STARTUP['bare_session']))} (agent-lsp's engine loads between the two).",
            "",
        ]
    if one.acp_fs:
        lines += [
            f"For scale, a client advertising `fs.readTextFile` ({one.fs_reads} "
            f"`fs/read_text_file` requests over {len(one.acp_fs)} prompts; `read_file` "
            f"reads through the client): {_ms_p90(one.acp_fs)}, "
            f"{med(one.acp_fs) / med(one.lsp):.2f}x the LSP face, "
            f"{(med(one.acp_fs) - med(one.acp)) * 1000:+.2f} ms over reading the disk.",
            "",
        ]
    elif one.fs_error:
        lines += [f"The `fs.readTextFile` variant failed: {one.fs_error}", ""]
    lines += [
        f"**Streaming.** For scale, the openai SDK reading the same stream directly: "
        f"{_ms_p90(two.sdk)}; ACP adds {(med(two.acp) - med(two.sdk)) * 1000:+.2f} ms to it, "
        f"the LSP face {(med(two.lsp) - med(two.sdk)) * 1000:+.2f} ms. Text messages per "
        f"answer: {med([float(n) for n in two.acp_chunks]):.0f} `agent_message_chunk`s vs "
        f"{med([float(n) for n in two.lsp_deltas]):.0f} `agent/answerDelta`s (the model sent "
        f"{STREAM_TOKENS} chunks); both added up to the answer.",
        "",
        *_deviation_lines("ACP deviations seen", deviations),
        *_deviation_lines("ACP deviations seen with `fs.readTextFile`", fs_deviations),
        "## Verdict",
        "",
        f"- Prompt with a tool turn, ACP vs LSP (≤ {RATIO_TARGET:g}x): "
        + (
            f"met ({ratio:.2f}x; median of the per-round ratios {paired:.2f}x)."
            if ratio_met
            else f"**not met** ({ratio:.2f}x; per-round {paired:.2f}x; "
            f"{(med(one.acp) - med(one.lsp)) * 1000:+.2f} ms "
            "per prompt)" + _why(one) + "."
        ),
        f"- First `agent_message_chunk` vs first `agent/answerDelta` (≤ {ADDED_TARGET_MS:g} ms "
        "added): "
        + (
            f"met ({first_added * 1000:+.2f} ms)."
            if first_met
            else f"**not met** ({first_added * 1000:+.2f} ms; ACP "
            f"{(med(two.acp) - med(two.sdk)) * 1000:+.2f} ms over the SDK reading directly, "
            f"{med([float(n) for n in two.acp_chunks]):.0f} `agent_message_chunk`s per answer "
            f"of {STREAM_TOKENS} model chunks)."
        ),
        "- Contract: "
        + (
            "no deviation seen in what these prompts exercise."
            if not deviations.seen and not fs_deviations.seen
            else "deviations seen (above)."
        ),
        "",
    ]
    return "\n".join(lines).rstrip() + "\n"


def _why(one: Part1) -> str:
    """What the figures say about where an ACP prompt's extra time goes."""
    parts = []
    client = med(one.acp_client_cpu) - med(one.lsp_client_cpu)
    parts.append(f"client CPU {client * 1000:+.2f} ms")
    if one.acp_server_cpu is not None and one.lsp_server_cpu is not None:
        parts.append(f"agent CPU {(one.acp_server_cpu - one.lsp_server_cpu) * 1000:+.2f} ms")
    return "; of it, per prompt: " + ", ".join(parts)


async def main() -> None:
    began = time.perf_counter()
    load_before = os.getloadavg()[0]
    deviations, fs_deviations = Deviations(), Deviations()
    model = await Model.start()
    try:
        with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-acp-") as tmp:
            folder = Path(tmp).resolve()
            (folder / "tiny.txt").write_text("hello\n", encoding="utf-8")
            STARTUP.update(await acp_startup(server_env(model.base_url), folder))
            one = await bench_tool_turn(model, folder, deviations, fs_deviations)
            print(f"tool turn done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
            two = await bench_streaming(model, folder, deviations)
            print(f"streaming done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    finally:
        await model.close()
    load = (load_before, os.getloadavg()[0])
    report = render(one, two, deviations, fs_deviations, load, time.perf_counter() - began)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="store_true", help="serve the scripted model only")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="tool-turn rounds (a trial)")
    parser.add_argument(
        "--stream-rounds", type=int, default=STREAM_ROUNDS, help="streaming rounds (a trial)"
    )
    options = parser.parse_args()
    ROUNDS, STREAM_ROUNDS = options.rounds, options.stream_rounds
    if options.model:
        serve_model()
    else:
        asyncio.run(main())
