"""The baseline for the ACP start-up figure: a bare agent on the ACP SDK.

It is built the way ``agent-lsp acp`` is (``import acp``, an ``Agent`` whose
``initialize`` answers with the SDK's schema types, ``acp.run_agent`` over stdio)
but does nothing else: ``session/new`` gives a fixed id and ``session/prompt``
ends its turn at once. ``agent-lsp acp``'s spawn → ``initialize`` result is
reported as a ratio to this agent's (``bench/bench_acp.py``, ``bench/bench_startup.py``).

Run: ``python bench/bare_acp_agent.py`` (serves on stdio).
"""

from __future__ import annotations

import asyncio
from typing import Any

from acp import PROTOCOL_VERSION, run_agent
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class BareAgent:
    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="bare-acp", title="bare-acp", version="1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="bare")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(BareAgent()))  # type: ignore[arg-type]
