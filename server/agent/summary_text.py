"""The words of a compaction: the summarizer's instructions, the transcript it reads, the
note that replaces an elided output, and the summary written without the model.

Pure text functions, apart from :class:`server.agent.compaction.ContextWindow`'s policy
(when to compact, what to keep), so that a reader of either holds one concern.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tooling.contract import ToolDefinition

from ..model.messages import Message, content_text, tool_calls
from .activity import summarize_arguments

TRANSCRIPT_ITEM_CHARS = 2_000  # each message as the summarizer sees it

SUMMARY_SUFFIX = (
    "\n\n(Earlier tool outputs are no longer in this conversation: call the tools "
    "again if you need them.)"
)
NOTE_PREFIX = "[Output elided to save context: "

# {tools} and {keeps} come from the tools' definitions (summary_instructions): a new tool
# is named here, with what to keep of its calls, without an edit to this module.
SUMMARY_INSTRUCTIONS = """\
You compact the history of a conversation between a user and a coding agent that \
works in the user's project with tools{tools}. \
The agent will read your summary instead of the messages, so write what it needs to \
continue the work: what the user asked for and any preferences they stated, decisions \
made, {keeps}errors met and how they were resolved, and what remains to be done. \
Leave out pleasantries and anything the work no longer needs. Write plain text or short \
bullet points, at most about {words} words."""


def summary_instructions(tools: Iterable[ToolDefinition], words: int) -> str:
    """The summarizer's system prompt: the tools by name, and what to keep of their calls
    (each tool's ``compaction_keeps``, once when tools share the words)."""
    listed = list(tools)
    names = f" ({', '.join(tool.name for tool in listed)})" if listed else ""
    keeps = dict.fromkeys(tool.compaction_keeps for tool in listed if tool.compaction_keeps)
    return SUMMARY_INSTRUCTIONS.format(
        tools=names, keeps="".join(f"{kept}, " for kept in keeps), words=words
    )


def elision_note(name: str, arguments: str, output: str, *, key: str | None = None) -> str:
    """What replaces an elided output: what it was (``key``: the tool's summary argument)
    and how to get it again."""
    lines = output.count("\n") + (0 if output.endswith("\n") else 1)
    what = f"{name} {summarize_arguments(name, arguments, key)}".strip()
    verb = "failed with" if output.startswith("Error:") else "returned"
    return (
        f"{NOTE_PREFIX}{what} {verb} {lines:,} lines ({len(output):,} characters). "
        f"Call {name} again if you need it.]"
    )


# -- the transcript ---------------------------------------------------------------


def transcript_items(
    messages: list[Message],
    calls: dict[str, tuple[str, str]],
    keys: Mapping[str, str | None],
) -> list[str]:
    items = []
    for message in messages:
        role = message.get("role")
        text = clip(content_text(message.get("content")), TRANSCRIPT_ITEM_CHARS)
        if role == "tool":
            name, _ = calls.get(str(message.get("tool_call_id")), ("tool", ""))
            items.append(f"Tool result ({name}): {text}")
        elif role == "assistant":
            line = f"Assistant: {text}" if text else "Assistant:"
            for call in tool_calls(message):
                name, arguments = calls.get(str(call.get("id")), ("?", ""))
                summary = summarize_arguments(name, arguments, keys.get(name))
                line += f"\n  (called {name} {summary})"
            items.append(line)
        else:
            items.append(f"User: {text}")
    return items


def chunks(items: list[str], size: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for item in items:
        if current and used + len(item) > size:
            chunks.append("\n\n".join(current))
            current, used = [], 0
        current.append(item)
        used += len(item) + 2
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def fallback(previous: str, chunk: str) -> str:
    """A summary without the model (it answered nothing): the requests, as said."""
    asked = [line[6:] for line in chunk.split("\n\n") if line.startswith("User: ")]
    lines = [previous] if previous else []
    lines += [f"- The user asked: {' '.join(text.split())[:300]}" for text in asked[-20:]]
    return "\n".join(lines) or "(earlier turns of tool calls; their details were not kept)"


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half:,} characters left out] …\n{text[-half:]}"
