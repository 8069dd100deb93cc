"""The ACP ``initialize`` answer, apart from the agent: ``agent-lsp acp`` answers it before
the engine's modules are loaded (``server.acp.serve``), so this imports the SDK's schema
and nothing of the engine."""

from __future__ import annotations

from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    AuthMethodAgent,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from .. import __version__

AUTH_METHOD = "agent-lsp-config"
SETUP = (
    "agent-lsp has no model endpoint yet: run `agent-lsp config set-key` (the key, read "
    "without echo), `agent-lsp config set base_url URL` and `agent-lsp config set model "
    "NAME` in a terminal (`agent-lsp config check` tests them), then try again."
)


def initialize_response(protocol_version: int) -> InitializeResponse:
    return InitializeResponse(
        protocol_version=min(protocol_version, PROTOCOL_VERSION),
        agent_capabilities=AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                resume=SessionResumeCapabilities(),
                close=SessionCloseCapabilities(),
            ),
        ),
        auth_methods=[
            AuthMethodAgent(id=AUTH_METHOD, name="Configure the model endpoint", description=SETUP)
        ],
        agent_info=Implementation(name="agent-lsp", title="agent-lsp", version=__version__),
    )
