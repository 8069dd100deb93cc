"""Errors the engine raises for the front ends, with their JSON-RPC codes."""

from __future__ import annotations

from .protocol import ErrorCode


class AgentError(Exception):
    """A problem the user or client can act on; carries its JSON-RPC code."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, *, data: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParamsError(AgentError):
    code = ErrorCode.INVALID_PARAMS

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"Invalid params: {field}: {message}", data={"field": field})
        self.field = field


class NoWorkspaceFolderError(AgentError):
    code = ErrorCode.NO_WORKSPACE_FOLDER


class SessionBusyError(AgentError):
    code = ErrorCode.SESSION_BUSY


class ContextWindowExceededError(AgentError):
    """The conversation does not fit the model's context window even compacted;
    ``data``: ``{contextTokens, contextWindow}``."""

    code = ErrorCode.CONTEXT_WINDOW_EXCEEDED
