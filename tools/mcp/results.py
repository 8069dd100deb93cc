"""An MCP ``CallToolResult`` as our tool output: the text the model reads.

The model gets text only (our endpoints speak Chat Completions, whose tool messages are
text), so each content block becomes lines: text as it is, an embedded text resource as
its text, a resource link as a line naming its URI, and what has no text (images, audio,
binary resources) as a one-line placeholder with its type and size, so the model knows
something came and what it was. ``structuredContent`` is the result when there is no text
(a server that sends both puts the same data in the text, as the spec asks). An
``isError`` result is our ``Error: ...`` (tooling/contract.py). Nothing is escaped here:
the model sees the server's words verbatim; escaping for display is the clients' job.
"""

from __future__ import annotations

import json

from mcp import types

from tooling.contract import ERROR_PREFIX

NO_OUTPUT = "(no output)"
# What the model gets of one result at most, as of a bash call (tools/shell.py): the first
# and the last half. The whole text is kept for agent/toolOutput (ToolContext.keep_whole_output).
OUTPUT_LIMIT = 50_000


def tool_output(result: types.CallToolResult) -> str:
    """The model's text for one call's result (see the module's docstring)."""
    lines = [_block_text(block) for block in result.content]
    has_text = any(_is_text(block) for block in result.content)
    if not has_text and result.structured_content is not None:
        lines.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(lines)
    if result.is_error:
        # The server's own "Error: ..." is not doubled.
        message = text.removeprefix(ERROR_PREFIX).strip() or "the tool failed without a message"
        return f"{ERROR_PREFIX} {message}"
    return text if text else NO_OUTPUT


def capped(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` itself when it fits in ``limit`` characters, else its first and last halves
    around a line saying how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = len(text) - 2 * half
    return (
        text[:half]
        + f"\n\n[... {left_out:,} characters of the MCP tool's output omitted; the user can "
        "see all of it ...]\n\n" + text[-half:]
    )


def _is_text(block: types.ContentBlock) -> bool:
    if isinstance(block, types.TextContent):
        return True
    return isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.TextResourceContents
    )


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return placeholder("image", block.mime_type, decoded_size(block.data))
    if isinstance(block, types.AudioContent):
        return placeholder("audio", block.mime_type, decoded_size(block.data))
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return placeholder(
            f"resource {resource.uri}", resource.mime_type, decoded_size(resource.blob)
        )
    if isinstance(block, types.ResourceLink):
        named = f" ({block.name})" if block.name and block.name != str(block.uri) else ""
        return f"[resource link: {block.uri}{named}]"
    # A kind a later protocol revision adds: its data as JSON, so nothing is lost silently.
    return json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))


def placeholder(kind: str, mime_type: str | None, size: int) -> str:
    """``[image: image/png, 12,345 bytes]``."""
    return f"[{kind}: {mime_type or 'unknown type'}, {size:,} bytes]"


def decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded, without decoding it (it may be megabytes)."""
    compact = "".join(data.split())  # base64 may be wrapped in lines
    if not compact:
        return 0
    padding = len(compact) - len(compact.rstrip("="))
    return max(0, len(compact) * 3 // 4 - padding)
