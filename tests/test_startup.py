"""The language server answers ``initialize`` before its engine loads (bench/results/startup.md):
the answer is what it was (the capabilities, the model it names), and whatever the client sends
before the engine is there waits for it and works."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from server.engine.engine import AgentEngine
from server.lsp.server import announced_model
from server.settings.settings import read_settings
from tests.support.lsp_client import REPO, SERVER_COMMAND, server_env
from tests.support.procs import until

ENVIRONS: dict[str, dict[str, str]] = {
    "configured": {"MODEL_API_KEY": "k", "BASE_URL": "http://127.0.0.1:9/v1", "MODEL": "env-m"},
    "no model": {"MODEL_API_KEY": "k", "BASE_URL": "https://example.invalid/v1"},
    "no base URL": {"MODEL_API_KEY": "k"},
    "no key": {"BASE_URL": "http://127.0.0.1:9/v1"},
    "not http": {"MODEL_API_KEY": "k", "BASE_URL": "ftp://example.invalid"},
    "blank model": {"MODEL_API_KEY": "k", "BASE_URL": "http://127.0.0.1:9/v1", "MODEL": "  "},
    "nothing": {},
}
USER_FILES: dict[str, str | None] = {
    "none": None,
    "whole": 'api_key = "f"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "file-m"\n',
    "model only": 'model = "file-m"\n',
    "broken": "api_key = 5\n",
    "unknown endpoint": 'default_endpoint = "nowhere"\n',
}
OPTIONS: list[Any] = [
    None,
    {},
    "not an object",
    {"model": "editor-m"},
    {"agentLsp": {"model": "section-m", "baseUrl": "http://127.0.0.1:9/v2"}},
    {"model": ""},
    {"model": "   "},
    {"model": 5},
    {"model": None, "baseUrl": "https://example.invalid/v1"},
    {"baseUrl": "not a URL"},
    {"baseUrl": ["http://x"]},
    {"agentLsp": "not an object"},
]


@pytest.mark.parametrize(
    ("environ_name", "file_name"), list(itertools.product(ENVIRONS, USER_FILES))
)
def test_the_model_initialize_names_is_the_engines(
    tmp_path: Path, environ_name: str, file_name: str
) -> None:
    """announced_model (read without the engine's modules) agrees with the engine's
    configured_model() once the same initialization options are applied, for every
    source of the model and every kind of bad value."""
    config_home = tmp_path / "config"
    environ = {
        **ENVIRONS[environ_name],
        "XDG_CONFIG_HOME": str(config_home),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "AGENT_LSP_ENV_FILE": "/dev/null",
    }
    if (text := USER_FILES[file_name]) is not None:
        path = config_home / "agent-lsp" / "config.toml"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        path.chmod(0o600)
    for raw in OPTIONS:
        engine = AgentEngine(environ=environ, session_dir=tmp_path / "sessions", warm=False)
        engine.update_settings(read_settings(raw), sandbox_notice=False)
        assert announced_model(raw, environ) == engine.configured_model(), raw


def _initialize_params(folder: Path, options: Any = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(workspace_folders=True)
        ),
        root_uri=folder.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
        initialization_options=options,
    )


async def test_requests_sent_before_the_engine_is_loaded_wait_for_it(tmp_path: Path) -> None:
    """Requests sent at once after initialize's answer (before `initialized`, while the
    engine's modules are still loading) are answered as later ones are; the settings and
    folders initialize brought are applied first, and their warnings shown after
    `initialized`."""
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("hello\n")
    # pygls's own client: pytest-lsp's sends `initialized` with initialize.
    client = LanguageClient("startup-test", "1", converter_factory=get_converter)
    shown: list[str] = []
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: shown.append(params.message))
    for method in ("window/logMessage", "$/progress", "window/workDoneProgress/create"):
        client.feature(method)(lambda params: None)
    await client.start_io(*SERVER_COMMAND, env=server_env("http://127.0.0.1:9/v1"), cwd=str(REPO))
    try:
        options = {"maxTurns": "many", "enabledTools": ["read_file", "bash"]}
        result = await client.initialize_async(_initialize_params(folder, options))
        agent = result.capabilities.experimental["agent"]
        assert agent["model"] == "scripted"
        assert "agent/listTools" in agent["requests"]
        assert agent["notifications"] and agent["version"] == 1
        # What pygls derives from the standard features registered before the answer.
        assert result.capabilities.workspace.workspace_folders.supported
        assert result.capabilities.workspace.workspace_folders.change_notifications

        # Right away, before `initialized`: each waits for the engine, none fails.
        tools = client.protocol.send_request_async("agent/listTools", {})
        status = client.protocol.send_request_async("agent/sandboxStatus", {})
        unknown = client.protocol.send_request_async("agent/noSuchMethod", {})
        session = client.protocol.send_request_async("agent/newSession", {})
        client.initialized(types.InitializedParams())
        names = [tool["name"] for tool in (await tools)["tools"]]
        assert names == ["read_file", "bash"]  # initialize's settings were applied first
        assert "mode" in await status
        assert (await session)["workspaceFolder"] == folder.resolve().as_uri()
        with pytest.raises(JsonRpcException, match="noSuchMethod"):
            await unknown
        await until(lambda: any("agentLsp.maxTurns" in message for message in shown))
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()  # a failed test: the client's stop waits for the exit
        await client.stop()
