"""Errors the engine raises for the front ends, and their JSON-RPC codes."""

from __future__ import annotations

# JSON-RPC error codes of the agent protocol (documented in docs/protocol.md).
INVALID_PARAMS = -32602
MODEL_NOT_CONFIGURED = -32001
MODEL_REQUEST_FAILED = -32002
NO_WORKSPACE_FOLDER = -32003
SESSION_BUSY = -32004
REQUEST_CANCELLED = -32800


class AgentError(Exception):
    """A problem the user or client can act on; carries its JSON-RPC code."""

    code = -32603

    def __init__(self, message: str, *, data: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParamsError(AgentError):
    code = INVALID_PARAMS

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"Invalid params: {field}: {message}", data={"field": field})
        self.field = field


class NoWorkspaceFolderError(AgentError):
    code = NO_WORKSPACE_FOLDER


class SessionBusyError(AgentError):
    code = SESSION_BUSY
