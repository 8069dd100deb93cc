"""Model settings resolution and typed model errors (real SDK, real HTTP)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from server.agent.loop import agent_loop
from server.config.sources import PROJECT_ROOT
from server.model.endpoint import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT,
    ModelNotConfiguredError,
    ModelRequestError,
    ModelSettings,
    create_client,
    load_model_settings,
)
from tests.support.model_server import ScriptedModel
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime

KEY = "sk-secret-DO-NOT-LEAK-4242"


def write_env(path: Path, **values: str) -> Path:
    path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return path


# --- sources and precedence -------------------------------------------------------


def test_override_beats_environment_beats_env_file(tmp_path: Path) -> None:
    env_file = write_env(
        tmp_path / "server.env",
        MODEL_API_KEY="file-key",
        BASE_URL="http://file/v1",
        MODEL="file-model",
    )
    environ = {"BASE_URL": "http://env/v1", "MODEL": "env-model"}

    settings = load_model_settings(
        {"model": "override-model", "baseUrl": "http://override/v1"},
        environ=environ,
        env_file=env_file,
    )
    assert (settings.api_key, settings.base_url, settings.model) == (
        "file-key",
        "http://override/v1",
        "override-model",
    )

    settings = load_model_settings({}, environ=environ, env_file=env_file)
    assert (settings.base_url, settings.model) == ("http://env/v1", "env-model")

    settings = load_model_settings(None, environ={}, env_file=env_file)
    assert (settings.api_key, settings.base_url, settings.model) == (
        "file-key",
        "http://file/v1",
        "file-model",
    )

    settings = load_model_settings(
        None, environ={"MODEL_API_KEY": "env-key", "BASE_URL": "http://env/v1"}, env_file=env_file
    )
    assert settings.api_key == "env-key"


def test_defaults_when_only_key_and_url_are_set() -> None:
    settings = load_model_settings(
        environ={"MODEL_API_KEY": KEY, "BASE_URL": "http://localhost:11434/v1"}, env_file=None
    )
    assert settings == ModelSettings(
        api_key=KEY,
        base_url="http://localhost:11434/v1",
        model=DEFAULT_MODEL,
        timeout=DEFAULT_TIMEOUT,
        max_retries=DEFAULT_MAX_RETRIES,
    )


def test_openai_names_are_a_fallback(tmp_path: Path) -> None:
    environ = {"OPENAI_API_KEY": "openai-key", "OPENAI_BASE_URL": "https://openai.example/v1"}
    settings = load_model_settings(environ=environ, env_file=None)
    assert (settings.api_key, settings.base_url) == ("openai-key", "https://openai.example/v1")

    both = {**environ, "MODEL_API_KEY": "own-key", "BASE_URL": "https://own.example/v1"}
    settings = load_model_settings(environ=both, env_file=None)
    assert (settings.api_key, settings.base_url) == ("own-key", "https://own.example/v1")

    # The project's own names beat an OPENAI_* variable exported for other tools, even
    # from agent-lsp's .env: the key stays paired with the URL configured next to it.
    env_file = write_env(
        tmp_path / "server.env", MODEL_API_KEY="own-file-key", BASE_URL="https://own.example/v1"
    )
    settings = load_model_settings(environ={"OPENAI_API_KEY": "openai-key"}, env_file=env_file)
    assert settings.api_key == "own-file-key"


def test_env_file_named_by_variable_and_default_location(tmp_path: Path) -> None:
    env_file = write_env(tmp_path / "elsewhere.env", MODEL_API_KEY="named", BASE_URL="http://n/v1")
    settings = load_model_settings(environ={"AGENT_LSP_ENV_FILE": str(env_file)})
    assert settings.api_key == "named"
    # Without the variable the file is agent-lsp's own .env (the folder holding server/).
    assert PROJECT_ROOT == Path(__file__).resolve().parent.parent
    assert (PROJECT_ROOT / "server" / "model" / "endpoint.py").is_file()


def test_reading_the_env_file_leaves_os_environ_alone(tmp_path: Path) -> None:
    env_file = write_env(
        tmp_path / "server.env", MODEL_API_KEY="k", BASE_URL="http://x/v1", AGENT_LSP_PROBE="1"
    )
    load_model_settings(environ={}, env_file=env_file)
    assert "AGENT_LSP_PROBE" not in os.environ


def test_a_workspace_env_file_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "untrusted-repo"
    workspace.mkdir()
    write_env(workspace / ".env", MODEL_API_KEY="workspace-key", BASE_URL="http://evil.example/v1")
    monkeypatch.chdir(workspace)
    server_env = tmp_path / "server.env"  # configured but holding no key

    with pytest.raises(ModelNotConfiguredError):
        load_model_settings(environ={"AGENT_LSP_ENV_FILE": str(server_env)})

    settings = load_model_settings(
        environ={
            "AGENT_LSP_ENV_FILE": str(server_env),
            "MODEL_API_KEY": "k",
            "BASE_URL": "http://ok/v1",
        }
    )
    assert settings.base_url == "http://ok/v1"
    if not (PROJECT_ROOT / ".env").exists():  # the default location, when not configured here
        with pytest.raises(ModelNotConfiguredError):
            load_model_settings(environ={})


def test_an_api_key_override_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ModelNotConfiguredError):
        load_model_settings(
            {"apiKey": "from-editor"}, environ={"BASE_URL": "http://x/v1"}, env_file=None
        )
    settings = load_model_settings(
        {"apiKey": "from-editor"},
        environ={"MODEL_API_KEY": "env-key", "BASE_URL": "http://x/v1"},
        env_file=None,
    )
    assert settings.api_key == "env-key"
    assert "from-editor" not in caplog.text


def test_missing_key_message_says_what_to_set_and_where(tmp_path: Path) -> None:
    env_file = tmp_path / "absent.env"
    with pytest.raises(ModelNotConfiguredError) as caught:
        load_model_settings(environ={"BASE_URL": "http://x/v1"}, env_file=env_file)
    message = str(caught.value)
    assert message.startswith("No model API key.")
    assert "MODEL_API_KEY (or OPENAI_API_KEY) in the server's environment" in message
    assert str(env_file) in message and "does not exist" in message
    assert "AGENT_LSP_ENV_FILE" in message
    assert "never read from editor settings or the workspace" in message


def test_missing_base_url_is_required_not_defaulted() -> None:
    with pytest.raises(ModelNotConfiguredError) as caught:
        load_model_settings(environ={"MODEL_API_KEY": KEY}, env_file=None)
    message = str(caught.value)
    assert message.startswith("No model base URL: run `agent-lsp config set base_url URL`")
    assert "BASE_URL (or OPENAI_BASE_URL)" in message
    assert "agentLsp.baseUrl" in message
    assert KEY not in message


def test_base_url_needs_a_scheme() -> None:
    with pytest.raises(ModelNotConfiguredError, match="http:// or https://"):
        load_model_settings(
            environ={"MODEL_API_KEY": "k", "BASE_URL": "api.example.com/v1"}, env_file=None
        )


def test_timeout_and_retries_overrides_are_validated() -> None:
    environ = {"MODEL_API_KEY": "k", "BASE_URL": "http://x/v1"}
    settings = load_model_settings({"timeout": 5, "maxRetries": 0}, environ=environ, env_file=None)
    assert (settings.timeout, settings.max_retries) == (5.0, 0)
    for bad in ({"timeout": 0}, {"timeout": "soon"}, {"maxRetries": -1}, {"maxRetries": 1.5}):
        with pytest.raises(ModelNotConfiguredError, match="agentLsp"):
            load_model_settings(bad, environ=environ, env_file=None)


def test_settings_repr_hides_the_key() -> None:
    settings = ModelSettings(api_key=KEY, base_url="http://x/v1", model="m")
    assert KEY not in repr(settings)
    assert KEY not in str(settings)
    assert "http://x/v1" in repr(settings)


async def test_create_client_uses_the_settings() -> None:
    client = create_client(
        ModelSettings(
            api_key=KEY, base_url="http://127.0.0.1:9/v1", model="m", timeout=7, max_retries=1
        )
    )
    try:
        assert str(client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"
        assert client.max_retries == 1
        assert client.api_key == KEY
    finally:
        await client.close()


# --- typed model errors -------------------------------------------------------------


async def ask(base_url: str, *, request_timeout: float = 10.0) -> Any:
    client = create_client(
        ModelSettings(
            api_key=KEY, base_url=base_url, model="m", timeout=request_timeout, max_retries=0
        )
    )
    messages = [{"role": "user", "content": "hello"}]
    try:
        return await agent_loop(messages, ToolRuntime(ToolRegistry([])), client=client, model="m")
    finally:
        await client.close()
        assert messages == [{"role": "user", "content": "hello"}]  # a failed request adds nothing


def assert_no_key(error: ModelRequestError) -> None:
    assert KEY not in str(error)
    assert KEY not in repr(error)
    assert KEY not in error.provider_message


@pytest.mark.parametrize("status", [500, 429, 401])
async def test_http_errors_carry_status_and_provider_message(
    model: ScriptedModel, status: int
) -> None:
    # A provider that echoes the key back must not get it into our error text.
    model.reply(status=status, error_message=f"Provider says no (key {KEY} rejected)")
    with pytest.raises(ModelRequestError) as caught:
        await ask(model.base_url)
    error = caught.value
    assert error.status == status
    assert error.kind == "status"
    assert error.provider_message == "Provider says no (key [redacted] rejected)"
    assert f"HTTP {status}" in str(error)
    assert model.base_url in str(error)
    assert_no_key(error)


async def test_timeout_becomes_a_model_request_error(model: ScriptedModel) -> None:
    model.reply("late", delay=5)
    with pytest.raises(ModelRequestError) as caught:
        await ask(model.base_url, request_timeout=0.3)
    assert caught.value.kind == "timeout"
    assert caught.value.status is None
    assert "timed out" in str(caught.value)
    assert_no_key(caught.value)


async def test_connection_refused_becomes_a_model_request_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelRequestError) as caught:
        await ask(base_url)
    assert caught.value.kind == "connection"
    assert caught.value.status is None
    assert str(caught.value).startswith(f"Could not connect to the model endpoint {base_url}")
    assert_no_key(caught.value)


async def test_sdk_retries_see_the_repeated_scripted_error(model: ScriptedModel) -> None:
    model.reply(status=503, error_message="busy", times=2)
    client = create_client(
        ModelSettings(api_key=KEY, base_url=model.base_url, model="m", timeout=10, max_retries=1)
    )
    try:
        with pytest.raises(ModelRequestError) as caught:
            await agent_loop(
                [{"role": "user", "content": "x"}],
                ToolRuntime(ToolRegistry([])),
                client=client,
                model="m",
            )
    finally:
        await client.close()
    assert (caught.value.status, caught.value.provider_message) == (503, "busy")
    assert len(model.requests) == 2 and model.pending == 0
