"""The real server with MCP servers configured: a session, its servers' states, results.

Shared by the engine's MCP tests (tests/test_mcp_server.py, tests/test_mcp_asks.py). The
MCP server is the SDK's test toolbox (tests/support/mcp_servers/toolbox.py) over real
stdio; each gets a unique ``--tag`` so its process can be found in /proc.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.support.lsp_client import AgentTestClient, agent_session, make_client, server_env
from tests.support.mcp_servers import toolbox
from tests.support.model_server import ScriptedModel

TOOLBOX = str(Path(toolbox.__file__))
CAN_ASK = types.ClientCapabilities(experimental={"agent": {"requestPermission": True}})


class McpClient(AgentTestClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[dict[str, Any]] = []
        self.answers: list[str] = []  # option ids; none left: reject_once


def mcp_client() -> McpClient:
    client = make_client(McpClient)
    assert isinstance(client, McpClient)

    @client.feature("agent/requestPermission")
    async def on_request(params: dict[str, Any]) -> dict[str, Any]:
        client.requests.append(params)
        answer = client.answers.pop(0) if client.answers else "reject_once"
        return {"outcome": {"outcome": "selected", "optionId": answer}}

    return client


def toolbox_server(tag: str, **extra: Any) -> dict[str, Any]:
    return {"type": "stdio", "command": sys.executable, "args": [TOOLBOX, "--tag", tag], **extra}


@asynccontextmanager
async def mcp_session(
    model: ScriptedModel,
    workspace: Path,
    servers: dict[str, Any] | None = None,
    *,
    can_ask: bool = True,
    env: dict[str, str] | None = None,
) -> AsyncIterator[McpClient]:
    settings = {"mcpServers": servers} if servers is not None else None
    async with agent_session(
        env if env is not None else server_env(model.base_url),
        [workspace],
        settings=settings,
        capabilities=CAN_ASK if can_ask else None,
        client_factory=mcp_client,
    ) as client:
        assert isinstance(client, McpClient)
        yield client


async def mcp_servers(client: McpClient) -> dict[str, dict[str, Any]]:
    result = await client.protocol.send_request_async("agent/mcpServers", {})
    return {server["name"]: server for server in result["servers"]}


async def until_state(
    client: McpClient,
    name: str,
    state: str,
    within: float = 30.0,
    also: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> dict[str, Any]:
    """Poll agent/mcpServers until ``name`` is in ``state``; its entry."""
    deadline = time.monotonic() + within
    while True:
        server = (await mcp_servers(client)).get(name)
        if server is not None and server["state"] == state and also(server):
            return server
        assert time.monotonic() < deadline, f"{name} never became {state}: {server}"
        await asyncio.sleep(0.05)


def tool_results(model: ScriptedModel) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"]
        for m in model.bodies[-1]["messages"]
        if m.get("role") == "tool"
    }


def new_tag() -> str:
    return f"mcp-test-{uuid.uuid4().hex[:10]}"
