"""ACP's content in the engine's terms: a prompt's blocks, a session's MCP servers, and a
saved conversation replayed as ``session/update``s.

A prompt's text blocks are the prompt. A ``resource_link`` is a file the user points at:
inside the workspace it joins the editor context (``context.documents``: the model is
told of it and reads it with its tools, through the workspace boundary); outside, the
model is told it was not attached. An embedded ``resource`` is text the client sent
(often an unsaved selection): it follows the prompt, quoted, under its URI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from acp import helpers
from acp.schema import (
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    McpServerStdio,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from tooling.workspace import Workspace, WorkspaceError

from .. import protocol as p
from ..positions import fs_path
from .updates import call_title, raw_input

McpServers = dict[str, dict[str, Any]]
MAX_EMBEDDED_CHARS = 100_000  # one embedded resource's text, beyond which it is cut


def prompt_parts(
    blocks: list[Any], workspace: Workspace
) -> tuple[str, p.EditorContext | None, str]:
    """``(prompt text, editor context, notes after the prompt)`` of a prompt's blocks."""
    texts: list[str] = []
    documents: list[str] = []
    notes: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            path = fs_path(block.uri) if block.uri.startswith("file:") else None
            try:
                inside = path is not None and workspace.resolve(path) is not None
            except WorkspaceError:
                inside = False
            if inside:
                documents.append(block.uri)
            else:
                notes.append(
                    f"[The user attached {block.uri}, which is outside the workspace: it is "
                    "not available to you.]"
                )
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                text = resource.text
                if len(text) > MAX_EMBEDDED_CHARS:
                    text = text[:MAX_EMBEDDED_CHARS] + "\n[… cut: the attachment is longer]"
                notes.append(f"[Attached by the user: {resource.uri}]\n```\n{text}\n```")
            else:
                notes.append(f"[The user attached {resource.uri}: binary content, not shown.]")
        else:  # images and audio are not offered in promptCapabilities
            notes.append("[The user attached content this agent cannot read (image or audio).]")
    context = p.EditorContext(documents=documents) if documents else None
    note = "".join(f"\n\n{n}" for n in notes)
    return "\n".join(texts), context, note


def session_servers(servers: list[Any] | None) -> McpServers:
    """A session's MCP servers (they come from the user's editor: user configuration) in the
    shape of the editor's ``mcpServers`` setting, which the engine parses and starts."""
    found: McpServers = {}
    for server in servers or ():
        if isinstance(server, McpServerStdio):
            entry: dict[str, Any] = {"type": "stdio", "command": server.command}
            entry["args"] = list(server.args)
            if server.env:
                entry["env"] = {variable.name: variable.value for variable in server.env}
        elif isinstance(server, HttpMcpServer):
            entry = {"type": "http", "url": server.url}
            if server.headers:
                entry["headers"] = {header.name: header.value for header in server.headers}
        elif isinstance(server, SseMcpServer):
            entry = {"type": "sse", "url": server.url}  # refused, with a warning that says why
        else:
            continue
        found[server.name] = entry
    return found


def replay(history: p.SessionHistoryResult, kind: Callable[[str], str]) -> Iterator[Any]:
    """A saved conversation as the updates a client draws it from: each prompt, each tool
    call with its final status and output, each answer; ``kind``: a tool's kind by name."""
    for entry in history.entries:
        if entry.role == "user":
            yield helpers.update_user_message_text(entry.content)
            continue
        if entry.content:
            yield helpers.update_agent_message_text(entry.content)
        for call in entry.tool_calls:
            arguments = raw_input(call.arguments)
            yield helpers.start_tool_call(
                call.id,
                call_title(call.name, call.arguments, None),
                kind=kind(call.name),  # type: ignore[arg-type]
                status="completed" if call.ok else "failed",
                content=[helpers.tool_content(helpers.text_block(call.output))],
                raw_input=arguments,
            )
