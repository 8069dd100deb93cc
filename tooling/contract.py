"""The tool contract: what one tool is."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .context import ToolContext
from .permissions import CallPermission

# Receives the parsed, schema-validated arguments and the per-call context (what the
# call may use: the conversation's ledger, the editor's documents, cancellation);
# returns the text that becomes the ``role="tool"`` message. Recoverable problems
# (bad input, what the environment refused) are returned as ``Error: ...``.
ToolHandler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]

ERROR_PREFIX = "Error:"


@dataclass(frozen=True)
class ToolDefinition:
    """One tool: its public declaration and its local handler.

    Frozen against rebinding, not deeply immutable: treat ``parameters`` as
    read-only data (the registry hands out deep copies).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    # Annotations a client can show (MCP's readOnlyHint / destructiveHint / title).
    # ``read_only`` also lets the agent loop run such calls concurrently.
    read_only: bool = False
    destructive: bool = False
    title: str | None = None
    # More annotations for clients (e.g. MCP's ``openWorldHint``, the bash sandbox's
    # state); merged into the described tool's ``annotations``.
    annotations: Mapping[str, Any] = field(default_factory=dict)
    # What a call would ask the user (destructive tools are asked about when the user
    # chose approval "always"; ``required`` ones always). None: the front end words it.
    permission: Callable[[dict[str, Any]], CallPermission] | None = None


def is_error(output: str) -> bool:
    """Whether a tool result reports a failure (by the contract's prefix)."""
    return output.startswith(ERROR_PREFIX)
