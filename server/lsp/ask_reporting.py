"""What the editor sees of a running ask: work-done progress and notifications.

One :class:`AskReporter` per ask turns the loop's typed events into
``agent/toolActivity``, ``agent/askProgress``, ``agent/compaction`` and
``agent/answerDelta`` notifications (structured fields clients render) and
work-done progress reports (text for humans only). Streamed text is coalesced
(``server.agent.delta_coalescing``) and what is waiting is sent before any other
notification, so the editor sees everything in the order it happened, and all of
it before the ask's response. The words to show (progress messages, a call's title,
output head and duration, a compaction's summary: ``server.agent.activity``) are
escaped (``tooling.display``); the data (arguments, output, deltas) is sent as it is.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tooling.display import escape_control

from .. import protocol as p
from ..agent.activity import (
    call_title,
    compaction_summary,
    missing_text,
    progress_text,
    tool_activity,
)
from ..agent.delta_coalescing import DeltaCoalescer
from ..agent.events import (
    AgentEvent,
    CompactionFinished,
    CompactionStarted,
    FinalAnswer,
    ModelRequestStarted,
    PermissionAnswered,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolSourcesMissing,
    ToolSourcesStarting,
)

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

PROGRESS_CREATE_TIMEOUT = 5.0


class Progress:
    """Work-done progress for one ask: the client's token, or one we create."""

    def __init__(self, ls: LanguageServer, token: types.ProgressToken | None) -> None:
        self._ls = ls
        self.token = token

    @classmethod
    async def start(cls, ls: LanguageServer, token: Any, task: asyncio.Task[Any]) -> Progress:
        if token is None and _client_supports_progress(ls):
            token = f"agent-lsp-{uuid.uuid4().hex}"
            try:
                await asyncio.wait_for(
                    ls.work_done_progress.create_async(token), PROGRESS_CREATE_TIMEOUT
                )
            except (TimeoutError, JsonRpcException):
                token = None
        progress = cls(ls, token)
        if token is not None:
            ls.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(title="Agent", cancellable=True, message="starting"),
            )
            # window/workDoneProgress/cancel cancels this future: cancel the ask with it.
            future = ls.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        return progress

    def report(self, message: str) -> None:
        if self.token is not None:
            self._ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self._ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        # pygls keeps every token's future forever otherwise.
        future = self._ls.work_done_progress.tokens.pop(self.token, None)
        if future is not None and not future.done():
            future.set_result(None)


class AskReporter:
    """The event sink of one ask (pass it to ``AgentEngine.ask`` as ``on_event``)."""

    def __init__(self, ls: LanguageServer, progress: Progress, session_id: str | None) -> None:
        self._ls = ls
        self._progress = progress
        self.session_id = session_id or ""
        self._turn = 0
        self._writing = 0  # the turn whose text is arriving
        self._deltas = DeltaCoalescer(self._send_delta)

    def set_session(self, session_id: str) -> None:
        self.session_id = session_id

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            if event.turn != self._writing:  # the turn's first text: no longer "waiting"
                self._writing = event.turn
                self._phase("writing", "the model is writing", turn=event.turn)
            self._deltas.add(event.turn, event.channel, event.text)
            return
        self._deltas.flush()
        if isinstance(event, ModelRequestStarted):
            self._turn = event.turn
            self._phase("model", "waiting for the model", turn=event.turn)
        elif isinstance(event, ToolCallStarted):
            # The name is the model's too (it may call a tool that does not exist).
            title = call_title(event.name, event.arguments, event.summary_key)
            self._phase("tools", title, turn=event.turn)
            self._activity(tool_activity(self.session_id, event))
        elif isinstance(event, ToolCallFinished):
            self._activity(tool_activity(self.session_id, event))
        elif isinstance(event, ToolCallProgress):
            text = f"{escape_control(event.name)} {progress_text(event)}"
            self._phase(
                "tools",
                text.rstrip(),
                turn=event.turn,
                call_id=event.call_id,
                progress=event.progress,
                total=event.total,
            )
        elif isinstance(event, ToolSourcesStarting):
            names = ", ".join(escape_control(name) for name in event.servers)
            self._phase(
                "starting",
                f"starting MCP servers (waiting up to {event.wait_s:.0f} s): {names}",
                servers=list(event.servers),
            )
        elif isinstance(event, ToolSourcesMissing):
            self._phase(
                "starting",
                f"this ask goes without the tools of MCP servers not ready: {missing_text(event)}",
                servers=list(event.servers),
            )
        elif isinstance(event, PermissionRequested | PermissionAnswered):
            # "waiting" while the user is asked; "started" again once allowed to run.
            waiting = isinstance(event, PermissionRequested)
            if waiting:
                self._phase("permission", f"waiting for you: {event.title}", turn=self._turn)
            elif event.allowed:
                self._phase("tools", f"{escape_control(event.name)} allowed", turn=self._turn)
            if waiting or event.allowed:
                self._activity(tool_activity(self.session_id, event, self._turn))
        elif isinstance(event, FinalAnswer):
            self._phase("done", "answer ready")
        elif isinstance(event, CompactionStarted):
            self._turn = event.turn
            used = f"about {event.tokens:,} of {event.window:,} tokens"
            self._phase("compacting", f"compacting the conversation ({used})", turn=event.turn)
        elif isinstance(event, CompactionFinished):
            notice = p.CompactionNotice(
                self.session_id,
                event.turn,
                event.trigger,
                event.tokens_before,
                event.tokens_after,
                event.window,
                event.elided,
                event.summarized,
                round(event.duration_ms, 1),
                compaction_summary(
                    event.tokens_before,
                    event.tokens_after,
                    event.window,
                    event.elided,
                    event.summarized,
                    event.trigger,
                ),
            )
            self._ls.protocol.notify(p.AGENT_COMPACTION, p.to_wire(notice))

    def _phase(self, phase: str, text: str, *, turn: int | None = None, **fields: Any) -> None:
        """Report ``text``; with ``turn``, the message says it first (``turn 2: ...``)."""
        message = f"turn {turn}: {text}" if turn is not None else text
        self._progress.report(message)
        progress = p.AskProgress(self.session_id, self._turn, phase, message, **fields, text=text)
        self._ls.protocol.notify(p.AGENT_ASK_PROGRESS, p.to_wire(progress))

    def _activity(self, activity: p.ToolActivity) -> None:
        self._ls.protocol.notify(p.AGENT_TOOL_ACTIVITY, p.to_wire(activity))

    def _send_delta(self, turn: int, channel: str, text: str) -> None:
        delta = p.AnswerDelta(self.session_id, turn, text, channel)
        self._ls.protocol.notify(p.AGENT_ANSWER_DELTA, p.to_wire(delta))

    def end(self, outcome: str) -> None:
        self._deltas.close()
        self._progress.end(outcome)


def _client_supports_progress(ls: LanguageServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.work_done_progress)
