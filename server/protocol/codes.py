"""Error codes of the agent protocol, and the actions an error asks of the user.

An error the user fixes by setting something carries ``{"action": ...}`` in its ``data``
(one of :class:`ErrorAction`); its message says what is wrong in words that name no
editor, and each client words the action in its own terms (a command, a menu, a button).
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Final


class ErrorCode(IntEnum):
    """The JSON-RPC error codes the server answers with (besides LSP's own)."""

    METHOD_NOT_FOUND = -32601  # JSON-RPC's: a method this server does not have (an older one)
    INVALID_PARAMS = -32602  # a param does not fit its class; data: {"field"}
    INTERNAL_ERROR = -32603
    MODEL_NOT_CONFIGURED = -32001  # no key, base URL or model; data: {"action"}
    MODEL_REQUEST_FAILED = -32002  # the model endpoint failed; data: {"kind", "status", ...}
    NO_WORKSPACE_FOLDER = -32003
    SESSION_BUSY = -32004  # an ask is already running in the conversation
    CONTEXT_WINDOW_EXCEEDED = -32005  # data: {"contextTokens", "contextWindow"}
    REQUEST_CANCELLED = -32800  # LSP's: the client cancelled the request


class ErrorAction(StrEnum):
    """What the user does to fix an error (an error's ``data.action``; a failed
    ``agent/checkConnection`` check's ``action``): each client words it in its own menus."""

    SET_API_KEY = "setApiKey"  # set the model API key (kept outside the editor's settings)
    SET_BASE_URL = "setBaseUrl"  # set the model endpoint's base URL
    SET_MODEL = "setModel"  # choose a model the endpoint serves


ACTION_KEY: Final = "action"  # the key of ``data`` that holds an ErrorAction
