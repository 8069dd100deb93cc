"""What the client sees of a running prompt: the loop's events as ``session/update``s.

One :class:`PromptReporter` per prompt. The loop's event sink is synchronous and the
SDK's notifications are coroutines, so updates go through one queue and one sending
task: the client gets them in the order they happened, and :meth:`PromptReporter.close`
waits until all of them are out, so every update precedes the prompt's response.
Streamed text is coalesced as for ``agent/answerDelta`` (``agent.delta_coalescing``).

A tool call is announced ``pending``; it becomes ``in_progress`` once it runs, which is
after the user's answer when the gate asks (``PermissionRequested`` comes within the
same step of the loop as the call's start, so one ``call_soon`` tells the two apart).
A call that changed a file (kind ``edit``) ends with a ``diff``: the text before it
(what the model read, else the disk) and after.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from acp import helpers
from acp.schema import ToolCallLocation

from tooling.display import escape_control
from tooling.regular_files import read_regular
from tooling.workspace import Workspace, WorkspaceError

from ..agent.activity import call_title, missing_text, progress_text
from ..agent.delta_coalescing import DeltaCoalescer
from ..agent.events import (
    AgentEvent,
    CompactionFinished,
    CompactionStarted,
    PermissionAnswered,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolSourcesMissing,
    ToolSourcesStarting,
)
from .documents import AcpDocuments

log = logging.getLogger(__name__)

MAX_DIFF_BYTES = 1024 * 1024  # a larger file's change is shown as text only


def raw_input(arguments: str) -> Any:
    """The call's arguments as JSON data (the model's text itself if it is not JSON)."""
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return arguments


class PromptReporter:
    """The event sink of one prompt (``AgentEngine.ask``'s ``on_event``)."""

    def __init__(
        self,
        conn: Any,
        session_id: str,
        workspace: Workspace,
        documents: AcpDocuments | None,
        kinds: dict[str, str],
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._workspace = workspace
        self._documents = documents
        self._kinds = kinds  # shared with the asker: the kind of each announced call
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._sender = asyncio.get_running_loop().create_task(self._send_all())
        self._deltas = DeltaCoalescer(self._send_delta)
        self._asking: set[str] = set()  # calls waiting for the user's answer
        self._done: set[str] = set()  # calls finished (an unknown tool's, before it "ran")
        self._before: dict[str, tuple[Path, str | None]] = {}  # an edit's file and old text

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self._deltas.add(event.turn, event.channel, event.text)
            return
        self._deltas.flush()
        if isinstance(event, ToolCallStarted):
            self._started(event)
        elif isinstance(event, PermissionRequested):
            self._asking.add(event.call_id)
        elif isinstance(event, PermissionAnswered):
            self._asking.discard(event.call_id)
            if event.allowed:
                self._put(helpers.update_tool_call(event.call_id, status="in_progress"))
        elif isinstance(event, ToolCallProgress):
            text = progress_text(event)
            self._put(helpers.update_tool_call(event.call_id, content=[_text(text)]))
        elif isinstance(event, ToolCallFinished):
            self._finished(event)
        elif isinstance(event, CompactionStarted):
            used = f"about {event.tokens:,} of {event.window:,} tokens"
            self._put(helpers.update_agent_thought_text(f"Compacting the conversation ({used})…\n"))
        elif isinstance(event, CompactionFinished):
            after = f"{event.tokens_before:,} → {event.tokens_after:,} tokens"
            self._put(helpers.update_agent_thought_text(f"Compacted the conversation ({after}).\n"))
        elif isinstance(event, ToolSourcesStarting):
            names = ", ".join(escape_control(name) for name in event.servers)
            text = f"Starting MCP servers (waiting up to {event.wait_s:.0f} s): {names}…\n"
            self._put(helpers.update_agent_thought_text(text))
        elif isinstance(event, ToolSourcesMissing):
            missing = missing_text(event)
            text = f"This prompt goes without the tools of MCP servers not ready: {missing}\n"
            self._put(helpers.update_agent_thought_text(text))

    def _started(self, event: ToolCallStarted) -> None:
        self._kinds[event.call_id] = event.kind
        arguments = raw_input(event.arguments)
        path = self._path(arguments)
        locations = None
        if path is not None:
            offset = arguments.get("offset") if isinstance(arguments, dict) else None
            line = offset - 1 if isinstance(offset, int) and offset > 0 else None
            locations = [ToolCallLocation(path=str(path), line=line)]
            if event.kind == "edit":
                self._before[event.call_id] = (path, self._text_of(path))
        self._put(
            helpers.start_tool_call(
                event.call_id,
                call_title(event.name, event.arguments, event.summary_key, event.display_name),
                kind=event.kind,  # type: ignore[arg-type]
                status="pending",
                locations=locations,
                raw_input=arguments,
            )
        )
        # Runs after this step of the loop: by then a call that asks has said so.
        asyncio.get_running_loop().call_soon(self._running, event.call_id)

    def _running(self, call_id: str) -> None:
        if call_id not in self._asking and call_id not in self._done:
            self._put(helpers.update_tool_call(call_id, status="in_progress"))

    def _finished(self, event: ToolCallFinished) -> None:
        self._done.add(event.call_id)
        content: list[Any] = [_text(event.output)]
        before = self._before.pop(event.call_id, None)
        if before is not None and event.ok:
            path, old = before
            new = self._text_of(path)
            if new is not None and new != old:
                content.insert(0, helpers.tool_diff_content(str(path), new, old))
        status = "completed" if event.ok else "failed"
        self._put(
            helpers.update_tool_call(
                event.call_id, status=status, content=content, raw_output=event.output
            )
        )

    def _path(self, arguments: Any) -> Path | None:
        value = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(value, str) or not value:
            return None
        try:
            return self._workspace.resolve(value)
        except (WorkspaceError, OSError, ValueError):
            return None  # outside the workspace: the tool refuses it, nothing to point at

    def _text_of(self, path: Path) -> str | None:
        """What the user's editor holds of ``path`` as far as we know, else the disk."""
        if self._documents is not None:
            text = self._documents.buffer_text(path)
            if text is not None:
                return text
        try:
            found = read_regular(path, MAX_DIFF_BYTES)
            return None if found.cut else found.data.decode("utf-8")
        except (OSError, UnicodeDecodeError):  # a FIFO or device too: it would block
            return None

    def _send_delta(self, turn: int, channel: str, text: str) -> None:
        if channel == "answer":
            self._put(helpers.update_agent_message_text(text))
        else:
            self._put(helpers.update_agent_thought_text(text))

    def message(self, text: str) -> None:
        """An answer of our own (a command's), as the agent's message."""
        self._put(helpers.update_agent_message_text(text))

    def update(self, update: Any) -> None:
        """Any other update, in order with the prompt's (before its response)."""
        self._put(update)

    def _put(self, update: Any) -> None:
        self._queue.put_nowait(update)

    async def sent(self) -> None:
        """Return once every update so far is out (a permission request names a tool call
        the client must have been shown)."""
        self._deltas.flush()
        marker: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(marker)
        await asyncio.shield(marker)

    async def _send_all(self) -> None:
        while (update := await self._queue.get()) is not None:
            if isinstance(update, asyncio.Future):
                if not update.done():
                    update.set_result(None)
                continue
            try:
                await self._conn.session_update(session_id=self._session_id, update=update)
            except Exception as exc:  # the client is gone: the prompt ends anyway
                log.info("session/update not sent: %s", exc)

    async def close(self) -> None:
        """Send what is waiting, then return once every update is out."""
        self._deltas.close()
        await asyncio.sleep(0)  # a call's pending call_soon (its in_progress) goes first
        self._queue.put_nowait(None)
        await asyncio.shield(self._sender)


def _text(text: str) -> Any:
    return helpers.tool_content(helpers.text_block(text))
