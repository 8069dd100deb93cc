"""A connected MCP server's tools as our ``ToolDefinition``s.

Each tool keeps the server's declaration (its description, prefixed with the server's
name so the model knows whose it is; its ``inputSchema`` as our parameters, which the
runtime validates arguments against) under the name of :mod:`tools.mcp.naming`.

Consent: an MCP server runs outside our sandbox, as the user's own process, so a call is
what an unsandboxed bash call is: a tool whose annotations say ``readOnlyHint: true``
runs without asking, any other asks (a required escalation, which no command allow-list
covers, and which a client that cannot ask refuses), unless the user configured the server
``trust = true``. The hints come from the server: trusting a read-only claim is trusting
the server the user chose to run, as every MCP client does.
"""

from __future__ import annotations

import json
from copy import deepcopy
from typing import Any

from mcp import types

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.display import escape_consent
from tooling.permissions import CallPermission

from .connection import McpCallError, McpConnection, ProgressFn
from .naming import tool_name
from .results import capped, tool_output

EMPTY_SCHEMA: dict[str, Any] = {"type": "object"}


def definitions(connection: McpConnection) -> list[ToolDefinition]:
    """One definition per tool the connection offers (``connection.tools``)."""
    return [definition(connection, tool) for tool in connection.tools]


def definition(connection: McpConnection, tool: types.Tool) -> ToolDefinition:
    server = connection.spec.name
    hints = tool.annotations or types.ToolAnnotations()
    read_only = bool(hints.read_only_hint)
    title = tool.title or hints.title
    shown = title or tool.name
    description = f"[{server}] {tool.description or shown}"
    annotations: dict[str, Any] = {
        # The spec's default when a server says nothing: the tool reaches outside.
        "openWorldHint": hints.open_world_hint if hints.open_world_hint is not None else True,
        "source": {"kind": "mcp", "server": server},
    }

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        sink = context.progress
        reported: ProgressFn | None = None
        if sink is not None:

            async def reported(progress: float, total: float | None, message: str | None) -> None:
                sink(progress, total, message)

        try:
            result = await connection.call(tool.name, arguments, progress=reported)
        except McpCallError as exc:
            return str(exc)
        whole = tool_output(result)
        shown = capped(whole)
        if shown is not whole and context.keep_whole_output is not None:
            context.keep_whole_output(context.call_id, whole)
        return shown

    def permission(arguments: dict[str, Any]) -> CallPermission:
        shown_arguments = json.dumps(arguments, ensure_ascii=False)
        return CallPermission(
            escape_consent(f"Run {shown} on MCP server {server}: {shown_arguments}"),
            required=True,
            escalation=True,
            reason=(
                f"MCP servers run outside the sandbox, with your rights; {server} does not "
                f"declare {shown} read-only."
            ),
            # "Always" covers this tool with any arguments (the issue: grants per tool).
            grant_scope={"mcp_server": server, "mcp_tool": tool.name},
            grant_title=f"Any call of {shown} on MCP server {server}, with any arguments",
        )

    needs_asking = not read_only and not connection.spec.trust
    return ToolDefinition(
        name=tool_name(server, tool.name),
        description=description,
        parameters=parameters(connection, tool),
        handler=handler,
        read_only=read_only,
        destructive=not read_only,
        title=title,
        annotations=annotations,
        permission=permission if needs_asking else None,
        display_name=escape_consent(f"{tool.name} — {server} (MCP server)"),
    )


def parameters(connection: McpConnection, tool: types.Tool) -> dict[str, Any]:
    """The tool's ``inputSchema``, or ``{"type": "object"}`` when it is not a valid JSON
    Schema of an object (the runtime compiles every tool's schema; one bad schema must cost
    that tool its argument checks, not the registry)."""
    schema = tool.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(EMPTY_SCHEMA)
    # Imported here: jsonschema is a sizeable import the server defers (tooling/runtime.py),
    # and this runs only once a server is connected.
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        connection.log(
            f"MCP server {connection.spec.name}: the schema of {tool.name} is invalid "
            f"({exc.message}); its arguments go unchecked"
        )
        return dict(EMPTY_SCHEMA)
    return deepcopy(schema)
