"""Start the real agent-lsp server over stdio with a pytest-lsp client."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

REPO = Path(__file__).resolve().parents[2]
# Isolated mode, as every client should start it (see docs/protocol.md).
SERVER_COMMAND = [sys.executable, "-I", "-m", "server"]
# The server on what looks like a kernel without Landlock (see no_landlock.py).
SERVER_WITHOUT_LANDLOCK = [
    sys.executable,
    str(REPO / "tests/support/no_landlock.py"),
    *SERVER_COMMAND,
]


class AgentTestClient(LanguageClient):
    """pytest-lsp's client plus a record of the agent's notifications."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.activity: list[dict[str, Any]] = []
        self.progress: list[dict[str, Any]] = []
        self.compactions: list[dict[str, Any]] = []
        self.deltas: list[dict[str, Any]] = []  # agent/answerDelta, with "at": arrival time
        self.notifications: list[tuple[str, dict[str, Any]]] = []  # all three, in order


def make_client(cls: type[AgentTestClient] = AgentTestClient) -> AgentTestClient:
    # Same converter as the server, so custom params and results stay plain JSON.
    client = cls(converter_factory=get_converter)
    register_lsp_features(client)

    @client.feature("agent/toolActivity")
    def on_activity(params: dict[str, Any]) -> None:
        client.activity.append(params)
        client.notifications.append(("agent/toolActivity", params))

    @client.feature("agent/askProgress")
    def on_progress(params: dict[str, Any]) -> None:
        client.progress.append(params)
        client.notifications.append(("agent/askProgress", params))

    @client.feature("agent/answerDelta")
    def on_delta(params: dict[str, Any]) -> None:
        client.deltas.append({**params, "at": time.monotonic()})
        client.notifications.append(("agent/answerDelta", params))

    @client.feature("agent/compaction")
    def on_compaction(params: dict[str, Any]) -> None:
        client.compactions.append(params)

    return client


def run_cli(
    *args: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``agent-lsp ARGS`` as a user runs it (isolated mode), without a terminal."""
    return subprocess.run(
        [*SERVER_COMMAND, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def server_env(base_url: str | None, **extra: str | None) -> dict[str, str]:
    """The server's whole environment (pytest-lsp replaces it, not extends it)."""
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_VARS}
    # Never pick up a developer's real .env, configuration or saved conversations.
    env["AGENT_LSP_ENV_FILE"] = os.devnull
    env["XDG_STATE_HOME"] = str(_scratch() / "state")
    env["XDG_CONFIG_HOME"] = str(_scratch() / "config")
    env["PYTHONPATH"] = str(REPO)
    if base_url is not None:
        env.update(MODEL_API_KEY="test-key-123", BASE_URL=base_url, MODEL="scripted")
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


_SCRATCH: list[Path] = []


def _scratch() -> Path:
    """A private folder for this test run's state and configuration (removed at exit)."""
    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="agent-lsp-tests-")))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    return _SCRATCH[0]


_MODEL_VARS = {
    "MODEL_API_KEY",
    "OPENAI_API_KEY",
    "BASE_URL",
    "OPENAI_BASE_URL",
    "MODEL",
    "AGENT_LSP_ENDPOINT",
    "AGENT_LSP_API_KEY_SOURCE",
}


async def start_client(
    env: dict[str, str],
    folders: list[Path],
    *,
    settings: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities | None = None,
    client_factory: Callable[[], AgentTestClient] = make_client,
    command: list[str] | None = None,
) -> AgentTestClient:
    """``command``: how to start the server (default ``SERVER_COMMAND``), e.g. wrapped."""
    config = ClientServerConfig(
        server_command=command or SERVER_COMMAND, server_env=env, client_factory=client_factory
    )
    client = await config.start()
    assert isinstance(client, AgentTestClient)
    uris = [folder.resolve().as_uri() for folder in folders]
    client.initialize_result = await client.initialize_session(  # type: ignore[attr-defined]
        types.InitializeParams(
            capabilities=capabilities or types.ClientCapabilities(),
            root_uri=uris[0] if uris else None,
            workspace_folders=[
                types.WorkspaceFolder(uri=uri, name=Path(folder).name)
                for uri, folder in zip(uris, folders, strict=True)
            ],
            initialization_options=settings,
        )
    )
    return client


@asynccontextmanager
async def agent_session(
    env: dict[str, str], folders: list[Path], **options: Any
) -> AsyncIterator[AgentTestClient]:
    """``start_client(env, folders, **options)`` for the length of an ``async with`` block.

    On the way out, also when the block raises, the session is shut down and the server
    stopped: a test that fails must not leave a server process behind for the next one.
    """
    client = await start_client(env, folders, **options)
    try:
        yield client
    finally:
        await end_session(client)


async def end_session(client: LanguageClient) -> None:
    """Shut the session down the way an editor does (``shutdown``, ``exit``), then wait for
    the server process to end."""
    await client.shutdown_session()
    await client.stop()


async def ask(client: LanguageClient, **params: Any) -> Any:
    return await client.protocol.send_request_async("agent/ask", params)


class RunningAsk:
    """An ask in flight that the test can cancel the way an editor does."""

    def __init__(self, client: LanguageClient, params: dict[str, Any]) -> None:
        self._client = client
        self.msg_id = f"ask-{uuid.uuid4().hex[:8]}"
        self.result = asyncio.wrap_future(
            client.protocol.send_request("agent/ask", params, msg_id=self.msg_id)
        )

    def cancel(self) -> None:
        """Send ``$/cancelRequest`` (cancelling the local future alone sends nothing)."""
        self._client.protocol.notify("$/cancelRequest", types.CancelParams(id=self.msg_id))
