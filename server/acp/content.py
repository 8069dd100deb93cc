"""ACP's content in the engine's terms: a prompt's blocks, a session's MCP servers, and a
saved conversation replayed as ``session/update``s.

A prompt's text blocks are the prompt. A ``resource_link`` is a file the user attached:
inside the workspace (the boundary every tool keeps) its text follows the prompt, read as
the tools read it (the client's buffer when it serves ``fs/read_text_file``, else the
disk); outside, the model is told it was not attached. An embedded ``resource`` is text
the client sent itself (often an unsaved selection): it follows the prompt the same way.
Either is quoted under its URI and cut at :data:`MAX_ATTACHED_CHARS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
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

from tooling.documents import EditorDocuments
from tooling.regular_files import read_regular
from tooling.workspace import Workspace, WorkspaceError

from .. import protocol as p
from ..agent.activity import call_title
from ..positions import fs_path
from .updates import raw_input

McpServers = dict[str, dict[str, Any]]
MAX_ATTACHED_CHARS = 100_000  # one attachment's text, beyond which it is cut
_MAX_READ_BYTES = 4 * MAX_ATTACHED_CHARS


def fresh_blocks(blocks: list[Any], seen: set[str]) -> list[Any]:
    """A prompt's blocks without the earlier prompts a client sends again.

    CodeCompanion re-sends the text of earlier prompts (cancelled ones too) as leading
    blocks of the next ``session/prompt``, and after a resume its first prompt carries the
    conversation's replayed user turns. The rule: a text block *before the last text
    block* whose text is one this session has seen as a prompt (sent here, or a user turn
    of the loaded conversation) is dropped; the last text block is always kept, so a
    prompt typed again on purpose is asked again. ``seen`` gets this prompt's texts.
    """
    last = max((i for i, b in enumerate(blocks) if isinstance(b, TextContentBlock)), default=-1)
    kept = [
        block
        for i, block in enumerate(blocks)
        if not (isinstance(block, TextContentBlock) and i < last and block.text.strip() in seen)
    ]
    seen.update(b.text.strip() for b in blocks if isinstance(b, TextContentBlock))
    return kept


async def prompt_parts(
    blocks: list[Any], workspace: Workspace, documents: EditorDocuments | None
) -> tuple[str, str]:
    """``(prompt text, the attachments' notes that follow it)`` of a prompt's blocks."""
    texts: list[str] = []
    notes: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            notes.append(await _linked(block.uri, workspace, documents))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                notes.append(_quoted(resource.uri, resource.text))
            else:
                notes.append(f"[The user attached {resource.uri}: binary content, not shown.]")
        else:  # images and audio are not offered in promptCapabilities
            notes.append("[The user attached content this agent cannot read (image or audio).]")
    return "\n".join(texts), "".join(f"\n\n{note}" for note in notes)


async def _linked(uri: str, workspace: Workspace, documents: EditorDocuments | None) -> str:
    path = fs_path(uri) if uri.startswith("file:") else None
    try:
        target = workspace.resolve(path) if path else None
    except WorkspaceError:
        target = None
    if target is None:
        return f"[The user attached {uri}, which is outside the workspace: it is not available.]"
    text = await documents.read_text(target) if documents is not None else None
    if text is None:
        text = await asyncio.to_thread(_read_disk, target)
    if text is None:
        return f"[The user attached {workspace.relative(target)}: not a readable text file.]"
    return _quoted(workspace.relative(target), text)


def _read_disk(path: Path) -> str | None:
    try:
        data = read_regular(path, _MAX_READ_BYTES).data
    except OSError:  # absent, unreadable, or a FIFO or device (which would block)
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _quoted(name: str, text: str) -> str:
    if len(text) > MAX_ATTACHED_CHARS:
        text = text[:MAX_ATTACHED_CHARS] + "\n[… cut: the attachment is longer]"
    return f"[Attached by the user: {name}]\n```\n{text}\n```"


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
                call_title(call.name, call.arguments, None, call.display_name),
                kind=kind(call.name),  # type: ignore[arg-type]
                status="completed" if call.ok else "failed",
                content=[helpers.tool_content(helpers.text_block(call.output))],
                raw_input=arguments,
            )
