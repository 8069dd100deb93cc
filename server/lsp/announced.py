"""What the language server announces in ``initialize``: the agent protocol's
version, methods and settings section, without importing ``server.protocol`` (its
classes), so ``initialize`` is answered before the engine loads.

Generated from server/protocol/ by docs/protocol_schema.py; do not edit.
Regenerate: uv run python docs/protocol_schema.py
"""

from __future__ import annotations

from typing import Final

PROTOCOL_VERSION: Final = 1
SETTINGS_SECTION: Final = "agentLsp"
REQUESTS: Final = (
    "agent/ask",
    "agent/newSession",
    "agent/listTools",
    "agent/endSession",
    "agent/sessions",
    "agent/sessionHistory",
    "agent/toolOutput",
    "agent/checkpoints",
    "agent/diff",
    "agent/rewind",
    "agent/listModels",
    "agent/checkConnection",
    "agent/grants",
    "agent/revokeGrant",
    "agent/compact",
    "agent/sandboxStatus",
    "agent/mcpServers",
    "agent/approveMcpServer",
    "agent/controlMcpServer",
    "agent/mcpServerLog",
    "agent/instructions",
    "agent/listCommands",
)
NOTIFICATIONS: Final = (
    "agent/toolActivity",
    "agent/askProgress",
    "agent/compaction",
    "agent/answerDelta",
)
