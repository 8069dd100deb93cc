"""Every agent/* method: its name (written once, here) and what it carries.

``SIGNATURES`` is the declaration: each method with its direction, params and result
classes. ``REQUESTS`` (what a client may send, announced in ``initialize``) and
``NOTIFICATIONS`` are derived from it; the client-facing schema,
docs/protocol.schema.json, and the clients' tables (TypeScript, Lua, Elisp) are
generated from it (docs/protocol_schema.py).
"""

from __future__ import annotations

from typing import Final, Literal

import attrs

from .messages import (
    AnswerDelta,
    ApproveMcpServerParams,
    ApproveMcpServerResult,
    AskParams,
    AskProgress,
    AskResult,
    CheckConnectionResult,
    CheckpointsResult,
    CommandsResult,
    CompactionNotice,
    CompactResult,
    ControlMcpServerParams,
    DiffParams,
    DiffResult,
    EndSessionResult,
    FolderParams,
    GrantsResult,
    InstructionsResult,
    LanguageDiagnosticsParams,
    LanguageDiagnosticsResult,
    LanguageRequestParams,
    LanguageRequestResult,
    ListModelsResult,
    ListToolsResult,
    McpServerInfo,
    McpServerLogResult,
    McpServersResult,
    NewSessionResult,
    ProjectParams,
    RequestPermissionParams,
    RevokeGrantParams,
    RevokeGrantResult,
    RewindParams,
    RewindResult,
    SandboxStatus,
    SessionHistoryResult,
    SessionParams,
    SessionsResult,
    ToolActivity,
    ToolOutputParams,
    ToolOutputResult,
)

PROTOCOL_VERSION: Final = 1  # additions are announced in "requests"; 2 = a breaking change

# The settings section every client forwards (raw user values; the server validates).
SETTINGS_SECTION: Final = "agentLsp"
# A client that can answer agent/requestPermission sets
# capabilities.experimental.agent.requestPermission = true in initialize.
CLIENT_CAN_ANSWER_PERMISSION: Final = "requestPermission"
# A client whose editor's own language servers answer agent/languageDiagnostics and
# agent/languageRequest sets capabilities.experimental.agent.languageFeatures = true.
CLIENT_CAN_ANSWER_LANGUAGE: Final = "languageFeatures"


@attrs.frozen
class Signature:
    """What one method carries. ``params``/``result``: a protocol class (``object``: JSON
    not declared as a class, described in docs/protocol.md; a notification has no result)."""

    kind: Literal["request", "notification"]
    direction: Literal["clientToServer", "serverToClient"]
    params: object
    result: object = None


def _request(params: object, result: object) -> Signature:
    return Signature("request", "clientToServer", params, result)


def _notification(params: object) -> Signature:
    return Signature("notification", "serverToClient", params)


# -- the method names ---------------------------------------------------------------------------
AGENT_ASK: Final = "agent/ask"
AGENT_NEW_SESSION: Final = "agent/newSession"
AGENT_LIST_TOOLS: Final = "agent/listTools"
AGENT_END_SESSION: Final = "agent/endSession"
AGENT_SESSIONS: Final = "agent/sessions"
AGENT_SESSION_HISTORY: Final = "agent/sessionHistory"
AGENT_TOOL_OUTPUT: Final = "agent/toolOutput"
AGENT_CHECKPOINTS: Final = "agent/checkpoints"
AGENT_DIFF: Final = "agent/diff"
AGENT_REWIND: Final = "agent/rewind"
AGENT_LIST_MODELS: Final = "agent/listModels"
AGENT_CHECK_CONNECTION: Final = "agent/checkConnection"
AGENT_GRANTS: Final = "agent/grants"
AGENT_SANDBOX_STATUS: Final = "agent/sandboxStatus"
AGENT_REVOKE_GRANT: Final = "agent/revokeGrant"
AGENT_COMPACT: Final = "agent/compact"
AGENT_MCP_SERVERS: Final = "agent/mcpServers"
AGENT_APPROVE_MCP_SERVER: Final = "agent/approveMcpServer"
AGENT_CONTROL_MCP_SERVER: Final = "agent/controlMcpServer"
AGENT_MCP_SERVER_LOG: Final = "agent/mcpServerLog"
AGENT_INSTRUCTIONS: Final = "agent/instructions"
AGENT_LIST_COMMANDS: Final = "agent/listCommands"
AGENT_TOOL_ACTIVITY: Final = "agent/toolActivity"
AGENT_ASK_PROGRESS: Final = "agent/askProgress"
AGENT_COMPACTION: Final = "agent/compaction"
AGENT_ANSWER_DELTA: Final = "agent/answerDelta"
AGENT_REQUEST_PERMISSION: Final = "agent/requestPermission"
AGENT_LANGUAGE_DIAGNOSTICS: Final = "agent/languageDiagnostics"
AGENT_LANGUAGE_REQUEST: Final = "agent/languageRequest"

# -- what each method carries (the order: how initialize announces them) -----------------------
SIGNATURES: Final[dict[str, Signature]] = {
    AGENT_ASK: _request(AskParams, AskResult),
    AGENT_NEW_SESSION: _request(FolderParams, NewSessionResult),
    AGENT_LIST_TOOLS: _request(FolderParams, ListToolsResult),
    AGENT_END_SESSION: _request(SessionParams, EndSessionResult),
    AGENT_SESSIONS: _request(FolderParams, SessionsResult),
    AGENT_SESSION_HISTORY: _request(SessionParams, SessionHistoryResult),
    AGENT_TOOL_OUTPUT: _request(ToolOutputParams, ToolOutputResult),
    AGENT_CHECKPOINTS: _request(SessionParams, CheckpointsResult),
    AGENT_DIFF: _request(DiffParams, DiffResult),
    AGENT_REWIND: _request(RewindParams, RewindResult),
    AGENT_LIST_MODELS: _request(FolderParams, ListModelsResult),
    AGENT_CHECK_CONNECTION: _request(FolderParams, CheckConnectionResult),
    AGENT_GRANTS: _request(SessionParams, GrantsResult),
    AGENT_REVOKE_GRANT: _request(RevokeGrantParams, RevokeGrantResult),
    AGENT_COMPACT: _request(SessionParams, CompactResult),
    AGENT_SANDBOX_STATUS: _request(ProjectParams, SandboxStatus),
    AGENT_MCP_SERVERS: _request(FolderParams, McpServersResult),
    AGENT_APPROVE_MCP_SERVER: _request(ApproveMcpServerParams, ApproveMcpServerResult),
    AGENT_CONTROL_MCP_SERVER: _request(ControlMcpServerParams, McpServerInfo),
    AGENT_MCP_SERVER_LOG: _request(ApproveMcpServerParams, McpServerLogResult),
    AGENT_INSTRUCTIONS: _request(ProjectParams, InstructionsResult),
    AGENT_LIST_COMMANDS: _request(ProjectParams, CommandsResult),
    AGENT_TOOL_ACTIVITY: _notification(ToolActivity),
    AGENT_ASK_PROGRESS: _notification(AskProgress),
    AGENT_COMPACTION: _notification(CompactionNotice),
    AGENT_ANSWER_DELTA: _notification(AnswerDelta),
    # Server -> client, to a client that said it can answer (CLIENT_CAN_ANSWER_PERMISSION);
    # its result is ACP's outcome (RequestPermissionParams says which).
    AGENT_REQUEST_PERMISSION: Signature(
        "request", "serverToClient", RequestPermissionParams, object
    ),
    # Server -> client, to a client that said its editor's language servers answer
    # (CLIENT_CAN_ANSWER_LANGUAGE): the problems of files, and one forwarded LSP request.
    AGENT_LANGUAGE_DIAGNOSTICS: Signature(
        "request", "serverToClient", LanguageDiagnosticsParams, LanguageDiagnosticsResult
    ),
    AGENT_LANGUAGE_REQUEST: Signature(
        "request", "serverToClient", LanguageRequestParams, LanguageRequestResult
    ),
}

REQUESTS: Final = tuple(
    m for m, s in SIGNATURES.items() if s.kind == "request" and s.direction == "clientToServer"
)
NOTIFICATIONS: Final = tuple(m for m, s in SIGNATURES.items() if s.kind == "notification")
