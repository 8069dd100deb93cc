"""The sandbox through the real server process: settings, listTools, the user's warning."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.support.lsp_client import (
    SERVER_WITHOUT_LANDLOCK,
    AgentTestClient,
    agent_session,
    ask,
    server_env,
)
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import wait_until


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
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        result = await ask(client, prompt="write two files")
        assert [call["ok"] for call in result["toolCalls"]] == [True, False]
        refused = [m for m in model.bodies[1]["messages"] if m.get("tool_call_id") == "out"]
        assert "Note: this command ran in agent-lsp's sandbox" in refused[0]["content"]
        assert (workspace / "inside.txt").exists()
        assert not (tmp_path / "outside.txt").exists()
        sandbox = (await bash_annotations(client))["sandbox"]
        assert sandbox["enforced"] is True and sandbox["mode"] == "workspace-write"
        assert client.messages == []  # nothing to warn about


async def test_settings_choose_the_sandbox(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    settings = {"writableRoots": [str(cache)], "network": True}
    async with agent_session(server_env(model.base_url), [workspace], settings=settings) as client:
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


async def test_without_landlock_the_user_is_told_once(
    model: ScriptedModel, workspace: Path
) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], command=SERVER_WITHOUT_LANDLOCK
    ) as client:
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
