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
    # The same question when answering it means looking at the file system (awaited, so
    # the tool can do that in a thread): a CallPermission that replaces ``permission``'s
    # for this call, or None when the call needs nothing more (write_file on what git
    # obeys: ``tools.git_writes``).
    permission_check: Callable[[dict[str, Any]], Awaitable[CallPermission | None]] | None = None
    # The argument that names what a call acts on, shown after the tool's name in trace
    # lines and compaction's notes (``read_file src/app.py``, ``bash pytest -q``).
    # None: the first string argument the schema requires (see summary_argument).
    summary_key: str | None = None
    # What a compacted conversation must keep of this tool's calls, in the words of the
    # summarizer's instructions (``"commands run and their results"``). None: the tool
    # is named there, nothing more.
    compaction_keeps: str | None = None
    # What a call does, in the Agent Client Protocol's words (a client picks its icon and
    # treatment by it): read, edit, delete, move, search, execute, fetch, think, other.
    kind: str = "other"
    # How clients name a call of this tool when its registry name reads badly
    # (``mcp__time__get_current_time`` -> "get_current_time — time (MCP server)"), escaped;
    # None: the name itself.
    display_name: str | None = None

    def summary_argument(self) -> str | None:
        """The argument a one-line summary of a call shows: ``summary_key``, else the
        first required string parameter (what nearly every tool acts on: a path, a
        command, a pattern), else None."""
        if self.summary_key is not None:
            return self.summary_key
        properties = self.parameters.get("properties")
        if not isinstance(properties, Mapping):
            return None
        for name in self.parameters.get("required") or ():
            schema = properties.get(name)
            if isinstance(schema, Mapping) and schema.get("type") == "string":
                return str(name)
        return None


def is_error(output: str) -> bool:
    """Whether a tool result reports a failure (by the contract's prefix)."""
    return output.startswith(ERROR_PREFIX)
