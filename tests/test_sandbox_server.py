"""The sandbox through the real server process: settings, listTools, the user's warning."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.support.lsp_client import (
    SERVER_WITHOUT_LANDLOCK,
    AgentTestClient,
    ask,
    server_env,
    start_client,
)
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import wait_until


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def stop(client: AgentTestClient) -> None:
    await client.shutdown_session()
    await client.stop()


async def bash_annotations(client: AgentTestClient) -> dict[str, Any]:
    result = await client.protocol.send_request_async("agent/listTools", {})
    return next(t for t in result["tools"] if t["name"] == "bash")["annotations"]


async def test_an_asks_bash_is_confined_and_told_why(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    model.reply(
        tool_calls=[
            tool_call("bash", {"command": "echo in > inside.txt"}, id="in"),
            tool_call("bash", {"command": "echo out > ../outside.txt"}, id="out"),
        ]
    )
    model.reply("done")
    client = await start_client(server_env(model.base_url), [workspace])
    try:
        result = await ask(client, prompt="write two files")
        assert [call["ok"] for call in result["toolCalls"]] == [True, False]
        refused = [m for m in model.bodies[1]["messages"] if m.get("tool_call_id") == "out"]
        assert "Note: this command ran in agent-lsp's sandbox" in refused[0]["content"]
        assert (workspace / "inside.txt").exists()
        assert not (tmp_path / "outside.txt").exists()
        sandbox = (await bash_annotations(client))["sandbox"]
        assert sandbox["enforced"] is True and sandbox["mode"] == "workspace-write"
        assert client.messages == []  # nothing to warn about
    finally:
        await stop(client)


async def test_settings_choose_the_sandbox(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    settings = {"writableRoots": [str(cache)], "network": True}
    client = await start_client(server_env(model.base_url), [workspace], settings=settings)
    try:
        sandbox = (await bash_annotations(client))["sandbox"]
        assert sandbox["writableRoots"] == [str(workspace.resolve()), str(cache)]
        assert sandbox["network"] is True
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentLsp": {"sandbox": "off"}})
        )
        assert (await bash_annotations(client))["sandbox"]["enforced"] is False
        model.reply(tool_calls=[tool_call("bash", {"command": "echo out > ../outside.txt"})])
        model.reply("done")
        result = await ask(client, prompt="write outside")
        assert result["toolCalls"][0]["ok"] is True
        assert (tmp_path / "outside.txt").exists()
    finally:
        await stop(client)


async def test_without_landlock_the_user_is_told_once(
    model: ScriptedModel, workspace: Path
) -> None:
    client = await start_client(
        server_env(model.base_url), [workspace], command=SERVER_WITHOUT_LANDLOCK
    )
    try:
        await asyncio.to_thread(wait_until, lambda: client.messages, 10)
        assert len(client.messages) == 1
        warning = client.messages[0]
        assert warning.type == types.MessageType.Warning
        assert "without a sandbox" in warning.message and "no Landlock" in warning.message
        annotations = await bash_annotations(client)
        assert annotations["sandbox"]["enforced"] is False
        assert "no Landlock" in annotations["sandbox"]["reason"]
        assert annotations["openWorldHint"] is True
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentLsp": {"maxTurns": 5}})
        )
        await client.protocol.send_request_async("agent/listTools", {})  # a round trip
        assert len(client.messages) == 1
    finally:
        await stop(client)
