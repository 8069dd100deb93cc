"""Asking the user before a call runs: the interface tools and the runtime see.

A tool says what one call would need the user's permission for (``CallPermission``,
from its ``ToolDefinition.permission`` hook); the runtime asks the call's
``context.permissions`` before running any destructive tool, and the front end
decides (its policy, the user's earlier answers, a dialog in the editor).
``server.agent.permissions`` implements it over LSP; without one (``None`` in the context)
calls that require permission are refused, and the others run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class CallPermission:
    """What a tool would ask the user about one call."""

    title: str  # what the user allows, in one line (e.g. "Run with network access: npm ci")
    # The call needs the user's yes even when the policy asks only for escalations.
    required: bool = False
    reason: str = ""  # why (the model's justification, or what the system lacks)
    # The call asks to leave the sandbox (network, or none at all): only the user's
    # answer or grant covers it, never a command allow-list.
    escalation: bool = False
    # What an "always" answer is bound to: by default the exact call (tool + arguments);
    # a tool may name a wider scope it asked about (e.g. network to one host, any command),
    # with the words that tell the user what "always" then covers.
    grant_scope: Mapping[str, Any] | None = field(default=None, compare=False)
    grant_title: str = ""


@dataclass(frozen=True)
class PermissionRequest:
    tool_name: str
    tool_title: str
    call_id: str
    arguments: Mapping[str, Any]  # parsed and schema-valid
    raw_arguments: str  # as the model sent them
    # None: the tool has no hook; the front end words the request itself.
    permission: CallPermission | None
    # The argument a one-line summary shows (ToolDefinition.summary_argument).
    summary_key: str | None = None
    display_name: str | None = None  # ToolDefinition.display_name


@dataclass(frozen=True)
class PermissionDecision:
    allowed: bool
    # For the model when refused: what happened and what to do instead.
    message: str = ""
    # How long the user took to answer (0: nobody was asked): the loop takes it out of
    # the call's duration, since a call is not slow because its user was thinking.
    waited_s: float = 0.0


class Permissions(Protocol):
    async def authorize(self, request: PermissionRequest) -> PermissionDecision:
        """Allow or refuse one call (may wait for the user; cancellable)."""
        ...


def refused_without_asker(request: PermissionRequest) -> PermissionDecision:
    """The decision when nobody can be asked: run only what needs no permission."""
    if request.permission is None or not request.permission.required:
        return PermissionDecision(True)
    return PermissionDecision(
        False,
        f"this call needs the user's permission ({request.permission.title}), and there is "
        "no one to ask here; do without it or tell the user what is needed.",
    )
