"""The real server process: the user file it reads, agent/listModels, agent/checkConnection."""

from __future__ import annotations

import asyncio
import re
import socket
import typing
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_client import agent_session, ask, server_env
from tests.support.model_server import ScriptedModel

FILE_KEY = "sk-user-file-key-DO-NOT-LEAK-1111"
ENV_KEY = "sk-environment-key-DO-NOT-LEAK-2222"


def user_file(config_home: Path, text: str, mode: int = 0o600) -> Path:
    path = config_home / "agent-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def file_env(config_home: Path, **extra: str | None) -> dict[str, str]:
    """A server environment with no model variables: only the user file configures it."""
    return server_env(None, XDG_CONFIG_HOME=str(config_home), **extra)


def authorization(model: ScriptedModel) -> str:
    return model.requests[-1]["headers"]["authorization"]


# --- the user file, and its place in the precedence --------------------------------------


async def test_the_server_reads_the_user_file_from_xdg_config_home(
    tmp_path: Path, model: ScriptedModel, workspace: Path
) -> None:
    config_home = tmp_path / "xdg"
    user_file(
        config_home,
        f'api_key = "{FILE_KEY}"\nbase_url = "{model.base_url}"\nmodel = "file-model"\n',
    )
    async with agent_session(file_env(config_home), [workspace]) as client:
        model.reply("from the file's endpoint")
        result = await ask(client, prompt="hello")
        assert result["answer"] == "from the file's endpoint"
        assert authorization(model) == f"Bearer {FILE_KEY}"
        assert model.requests[-1]["body"]["model"] == "file-model"

        # Editor settings beat the file (never for the key).
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentLsp": {"model": "editor-model"}})
        )
        model.reply("editor's model")
        await ask(client, prompt="again")
        assert model.requests[-1]["body"]["model"] == "editor-model"
        assert authorization(model) == f"Bearer {FILE_KEY}"


async def test_the_environment_beats_the_user_file(
    tmp_path: Path, model: ScriptedModel, workspace: Path
) -> None:
    config_home = tmp_path / "xdg"
    user_file(config_home, f'api_key = "{FILE_KEY}"\nbase_url = "http://file.invalid/v1"\n')
    env = file_env(config_home, MODEL_API_KEY=ENV_KEY, BASE_URL=model.base_url, MODEL="env-model")
    async with agent_session(env, [workspace]) as client:
        model.reply("ok")
        await ask(client, prompt="hello")
        assert authorization(model) == f"Bearer {ENV_KEY}"
        assert model.requests[-1]["body"]["model"] == "env-model"


async def test_a_shared_key_file_is_reported_once(
    tmp_path: Path, model: ScriptedModel, workspace: Path
) -> None:
    config_home = tmp_path / "xdg"
    path = user_file(
        config_home, f'api_key = "{FILE_KEY}"\nbase_url = "{model.base_url}"\n', mode=0o644
    )
    async with agent_session(file_env(config_home), [workspace]) as client:
        if not client.messages:  # shown after initialized; wait for it if not yet here
            await asyncio.wait_for(client.wait_for_notification(types.WINDOW_SHOW_MESSAGE), 10)
        model.reply("ok")
        await ask(client, prompt="hello")
        warnings = [m.message for m in client.messages if "chmod 600" in m.message]
        assert len(warnings) == 1, [m.message for m in client.messages]
        assert str(path) in warnings[0] and FILE_KEY not in warnings[0]


# --- agent/listModels -------------------------------------------------------------------


async def test_list_models_returns_the_endpoint_list_and_the_current_model(
    tmp_path: Path, workspace: Path
) -> None:
    with ScriptedModel(models=["zeta", "alpha", "scripted"], api_key=FILE_KEY) as model:
        config_home = tmp_path / "xdg"
        user_file(
            config_home,
            f'api_key = "{FILE_KEY}"\nbase_url = "{model.base_url}"\nmodel = "zeta"\n',
        )
        async with agent_session(file_env(config_home), [workspace]) as client:
            result = await client.protocol.send_request_async(
                "agent/listModels", {"workspaceFolder": workspace.as_uri()}
            )
            assert result == {
                "models": [{"id": "alpha"}, {"id": "scripted"}, {"id": "zeta"}],
                "current": "zeta",
            }
            listing = [r for r in model.http_log if r["method"] == "GET"]
            assert listing[-1]["path"] == "/v1/models"
            assert listing[-1]["headers"]["authorization"] == f"Bearer {FILE_KEY}"
            assert FILE_KEY not in repr(result)


async def test_list_models_says_what_is_missing(workspace: Path, tmp_path: Path) -> None:
    async with agent_session(file_env(tmp_path / "empty"), [workspace]) as client:
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async("agent/listModels", None)
        assert caught.value.code == -32001
        assert "No model API key" in caught.value.message
        # What to do, for each client to word in its own menus; the words name no editor.
        assert caught.value.data == {"action": "setApiKey"}
        assert "VS Code" not in caught.value.message


async def test_list_models_reports_a_refused_key(workspace: Path) -> None:
    with ScriptedModel(api_key="the-right-key") as model:
        async with agent_session(server_env(model.base_url), [workspace]) as client:
            with pytest.raises(JsonRpcException) as caught:
                await client.protocol.send_request_async("agent/listModels", {})
            assert caught.value.code == -32002
            assert "HTTP 401" in caught.value.message
            assert "test-key-123" not in caught.value.message


# --- agent/checkConnection ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def check(env: dict[str, str], workspace: Path) -> dict[str, Any]:
    async with agent_session(env, [workspace]) as client:
        return await client.protocol.send_request_async("agent/checkConnection", {})


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in result["checks"]}


async def test_check_a_good_endpoint(workspace: Path) -> None:
    with ScriptedModel(models=["scripted", "other"], api_key=ENV_KEY) as model:
        model.reply("OK")
        env = server_env(model.base_url, MODEL_API_KEY=ENV_KEY)
        result = await check(env, workspace)
        checks = by_name(result)
        assert result["ok"] is True
        assert list(checks) == ["configuration", "models", "model", "request"]
        assert all(c["ok"] for c in checks.values())
        assert all(c.get("kind") is None for c in checks.values())  # only failures have one
        assert "Key from environment MODEL_API_KEY" in checks["configuration"]["message"]
        assert "lists 2 models" in checks["models"]["message"]
        # One tiny request, to the configured model.
        assert len(model.requests) == 1
        assert model.requests[0]["body"]["model"] == "scripted"
        assert len(model.requests[0]["body"]["messages"]) == 1
        assert ENV_KEY not in repr(result)


async def test_check_a_wrong_url(workspace: Path) -> None:
    with ScriptedModel() as model:
        wrong = model.base_url.replace("/v1", "/not-the-api/v1")
        result = await check(server_env(wrong), workspace)
    checks = by_name(result)
    assert result["ok"] is False
    assert checks["configuration"]["ok"] is True
    assert checks["models"]["ok"] is False and "HTTP 404" in checks["models"]["message"]
    assert "usually ends in /v1" in checks["models"]["message"]
    assert checks["request"]["ok"] is False
    assert "the base URL is probably wrong" in checks["request"]["message"]
    # Something answers, but not the API: the base URL is the fix.
    assert (checks["models"]["kind"], checks["request"]["kind"]) == ("url", "url")


async def test_check_an_address_where_nothing_listens(workspace: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = await check(server_env(url), workspace)
    checks = by_name(result)
    assert result["ok"] is False
    assert list(checks) == ["configuration", "models"]
    assert checks["models"]["message"].startswith(f"Nothing answers at {url}")
    assert checks["models"]["kind"] == "unreachable"
    assert checks["models"]["action"] == "setBaseUrl"


async def test_check_a_refused_key(workspace: Path) -> None:
    with ScriptedModel(api_key="the-right-key") as model:
        result = await check(server_env(model.base_url), workspace)
        assert model.requests == []  # no chat request with a refused key
    checks = by_name(result)
    assert result["ok"] is False
    message = checks["models"]["message"]
    assert "The endpoint refused the API key from environment MODEL_API_KEY" in message
    assert "HTTP 401" in message and "`agent-lsp config set-key`" in message
    assert "VS Code" not in message  # the client words the action its own way
    assert checks["models"]["kind"] == "auth"
    assert checks["models"]["action"] == "setApiKey"
    assert "test-key-123" not in repr(result)


async def test_check_an_unknown_model(workspace: Path) -> None:
    with ScriptedModel(models=["deepseek-chat", "deepseek-reasoner"]) as model:
        model.reply(status=404, error_message="The model `gpt-5-typo` does not exist.")
        result = await check(server_env(model.base_url, MODEL="gpt-5-typo"), workspace)
    checks = by_name(result)
    assert result["ok"] is False
    assert checks["models"]["ok"] is True
    assert checks["model"]["ok"] is False
    assert "gpt-5-typo is not a model this endpoint serves" in checks["model"]["message"]
    assert "deepseek-chat, deepseek-reasoner" in checks["model"]["message"]
    assert checks["request"]["ok"] is False
    assert (checks["model"]["kind"], checks["request"]["kind"]) == ("model", "model")
    assert "kind" not in checks["models"] or checks["models"]["kind"] is None


async def test_check_a_rate_limited_endpoint(workspace: Path) -> None:
    with ScriptedModel(models=["scripted"]) as model:
        model.reply(status=429, error_message="You exceeded your current quota.")
        result = await check(server_env(model.base_url), workspace)
    checks = by_name(result)
    assert checks["request"]["ok"] is False
    assert "rate-limiting or out of quota" in checks["request"]["message"]
    assert checks["request"]["kind"] == "other"  # nothing to set: the words say what to do
    assert "action" not in checks["request"]


async def test_check_without_a_key(tmp_path: Path, workspace: Path) -> None:
    result = await check(file_env(tmp_path / "empty"), workspace)
    assert result["ok"] is False
    [only] = result["checks"]
    assert (only["name"], only["ok"]) == ("configuration", False)
    assert only["message"].startswith("No model API key.")
    assert only["kind"] == "auth"
    assert only["action"] == "setApiKey"


async def test_check_a_base_url_without_a_scheme(workspace: Path) -> None:
    result = await check(server_env("127.0.0.1:11434/v1"), workspace)
    [only] = result["checks"]
    assert (only["name"], only["ok"], only["kind"]) == ("configuration", False, "url")
    assert "must start with http:// or https://" in only["message"]


async def test_check_a_broken_user_file(tmp_path: Path, workspace: Path) -> None:
    config_home = tmp_path / "xdg"
    user_file(config_home, "api_key = [unterminated\n")
    result = await check(file_env(config_home), workspace)
    [only] = result["checks"]
    assert (only["name"], only["ok"], only["kind"]) == ("configuration", False, "other")


def test_every_kind_is_documented() -> None:
    from server.model.connection_check import Kind

    protocol_md = (Path(__file__).resolve().parents[1] / "docs/protocol.md").read_text()
    table = protocol_md.split("| `kind` | what failed | the fix |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z]+)` \| ", table, re.MULTILINE)
    assert rows == list(typing.get_args(Kind))


async def test_both_requests_are_advertised(workspace: Path, model: ScriptedModel) -> None:
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        agent = client.initialize_result.capabilities.experimental["agent"]  # type: ignore[attr-defined]
        assert {"agent/listModels", "agent/checkConnection"} <= set(agent["requests"])


async def test_check_an_endpoint_that_does_not_answer_in_time() -> None:
    # In-process (the check's own timeouts are short here; the server uses 15 s and 30 s).
    from server.model.connection_check import check_connection

    with ScriptedModel(models_delay=5) as model:
        env = {"MODEL_API_KEY": ENV_KEY, "BASE_URL": model.base_url}
        report = await check_connection(environ=env, list_timeout=0.3)
    assert [(c.name, c.ok) for c in report.checks] == [("configuration", True), ("models", False)]
    assert report.checks[1].message.startswith(f"{env['BASE_URL']} did not answer within 0.3 s")
    assert report.checks[1].kind == "unreachable"

    with ScriptedModel() as model:
        model.reply("late", delay=5)
        env = {"MODEL_API_KEY": ENV_KEY, "BASE_URL": model.base_url}
        report = await check_connection(environ=env, request_timeout=0.3)
    checks = {c.name: c for c in report.checks}
    assert checks["models"].ok is True
    assert checks["request"].ok is False
    assert "did not answer within 0.3 s" in checks["request"].message
    assert checks["request"].kind == "unreachable"
    assert ENV_KEY not in repr(report)
