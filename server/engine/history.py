"""The sessions the server holds: their conversations and files, what a client redraws
of one (its history, a tool call's whole output), an ask that did not finish, and
compaction on request.

The conversations themselves are ``server.conversations.conversations``; this is what the
engine does with them for the faces, as the protocol's typed results.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.contract import is_error
from tooling.runtime import ToolRuntime

from .. import protocol as p
from ..agent.activity import (
    call_title,
    compaction_summary,
    output_head,
    summarize_arguments,
)
from ..agent.archive import transcript
from ..agent.compaction import ContextWindow
from ..conversations.conversations import Conversation, ConversationStore
from ..conversations.editor_context import prompt_of
from ..conversations.session_files import SessionFiles
from ..errors import InvalidParamsError, SessionBusyError
from ..model.context_limits import window_for
from ..model.messages import Message, UserMessage, call_parts, tool_calls
from ..settings.settings import AgentSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

# History entries show tool output previews of this size (agent/toolOutput has it all).
HISTORY_PREVIEW = 2000


class Sessions:
    """The conversations by session id, saved to ``session_dir`` when there is one."""

    def __init__(self, *, max_conversations: int, session_dir: Path | None) -> None:
        self._files = SessionFiles(session_dir) if session_dir is not None else None
        self._conversations = ConversationStore(
            max_conversations=max_conversations, files=self._files
        )
        self._pending: dict[str, asyncio.Future[None]] = {}  # save_soon's, by conversation

    def create(self, root: Path, system_prompt: str) -> Conversation:
        return self._conversations.create(root, system_prompt)

    def find(self, session_id: str) -> Conversation | None:
        return self._conversations.get(session_id)

    def get(self, session_id: str) -> Conversation:
        conversation = self._conversations.get(session_id)
        if conversation is None:
            raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")
        return conversation

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._conversations

    def drop(self, session_id: str) -> bool:
        return self._conversations.drop(session_id)  # its grants go with it

    async def save(self, conversation: Conversation, *, state: str = "done") -> None:
        """Save what changed: taken now, written in a worker thread (after any save
        :meth:`save_soon` started)."""
        if self._files is None:
            return
        pending = self._pending.pop(conversation.id, None)
        job = self._files.prepare(conversation, state=state)
        if pending is not None:
            await pending
        if job is not None:
            await asyncio.to_thread(self._files.write, job)

    def save_soon(self, conversation: Conversation, *, state: str) -> None:
        """Save the conversation as it is now, in the background (an ask's start: its
        first model request does not wait for the disk); the next save waits for it."""
        if self._files is None:
            return
        job = self._files.prepare(conversation, state=state)
        previous = self._pending.get(conversation.id)
        files = self._files

        async def run() -> None:
            if previous is not None:
                await previous
            if job is None:
                return
            try:
                await asyncio.to_thread(files.write, job)
            except OSError as exc:  # a full disk: the ask goes on; its end saves again
                log.warning("could not save conversation %s: %s", conversation.id, exc)

        self._pending[conversation.id] = asyncio.ensure_future(run())

    async def prune(self) -> None:
        """Delete the session files past their retention, off the event loop."""
        if self._files is not None:
            await asyncio.to_thread(self._files.prune)

    async def summaries(self, root: Path | None) -> list[p.SessionSummary]:
        metas = await asyncio.to_thread(self._conversations.summaries, root)
        return [
            p.SessionSummary(
                m.id, m.workspace_root.as_uri(), m.title, m.created, m.updated, m.asks, m.state
            )
            for m in metas
        ]

    def grants(self, session_id: str) -> list[p.GrantInfo]:
        return [
            p.GrantInfo(g.grant_id, g.tool_name, g.arguments, g.title, g.decision, g.created)
            for g in self.get(session_id).grants.list()
        ]

    def revoke_grant(self, session_id: str, grant_id: str) -> bool:
        return self.get(session_id).grants.revoke(grant_id)

    def history(
        self, session_id: str, display_name: Callable[[str], str | None] | None = None
    ) -> p.SessionHistoryResult:
        """What a client needs to redraw a conversation: prompts, answers, tool calls
        (what compaction took out of the model's view included, as far as it is kept),
        each call named by ``display_name`` as live activity names it, where it gives one."""
        conversation = self.get(session_id)
        messages = transcript(conversation.messages, conversation.archive)
        results = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in messages
            if m.get("role") == "tool"
        }
        results.update(conversation.archive.outputs)
        entries: list[p.HistoryEntry] = []
        for message in messages:
            role = message.get("role")
            if role == "user":
                entries.append(p.HistoryEntry("user", prompt_of(str(message.get("content") or ""))))
            elif role == "assistant":
                calls = []
                for call in tool_calls(message):
                    name, arguments = call_parts(call)
                    output = results.get(call.get("id"), "")
                    shown = display_name(name) if display_name is not None else None
                    calls.append(
                        p.HistoryToolCall(
                            call.get("id", ""),
                            name,
                            arguments,
                            not is_error(output),
                            _preview(output, HISTORY_PREVIEW),
                            shown,
                            call_title(name, arguments, display_name=shown),
                            summarize_arguments(name, arguments),
                            output_head(output),
                        )
                    )
                entries.append(
                    p.HistoryEntry("assistant", str(message.get("content") or ""), calls)
                )
        return p.SessionHistoryResult(
            conversation.id, conversation.workspace_root.as_uri(), entries
        )

    def tool_output(self, session_id: str, call_id: str) -> p.ToolOutputResult:
        """A tool call's whole output, as the model received it (before compaction
        elided it, while the conversation's archive keeps it)."""
        conversation = self.get(session_id)
        messages = transcript(conversation.messages, conversation.archive)
        call = next(
            (
                c
                for m in messages
                if m.get("role") == "assistant"
                for c in tool_calls(m)
                if c.get("id") == call_id
            ),
            None,
        )
        result = next(
            (m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id),
            None,
        )
        if call is None or result is None:
            raise InvalidParamsError("callId", f"no tool call {call_id!r} in this session")
        name, arguments = call_parts(call)
        output = conversation.archive.outputs.get(call_id, str(result.get("content") or ""))
        title = call_title(name, arguments)
        return p.ToolOutputResult(
            call_id, name, arguments, not is_error(output), output, False, title
        )

    async def settle_unfinished(
        self, conversation: Conversation, request: UserMessage, *, created: bool
    ) -> bool:
        """Leave the conversation of an ask that failed or was cancelled usable; False
        when the conversation is gone (the ask left no trace, or its session ended).

        Until the model has answered once nothing happened: the ask leaves no trace
        (its ``request`` message goes, and a conversation this ask created with it; a
        retry of the same prompt then does not stack a duplicate). Once it has
        answered, its turns stay, even cut short: the tools they ran may have changed
        files, which the model must go on knowing (the loop has paired every call).
        The request is found by identity: compaction may have moved it.
        """
        messages = conversation.messages
        at = next((i for i, m in enumerate(messages) if m is request), None)
        if at is not None and not _answered(messages, at + 1):
            del messages[at:]
            if created:
                self._conversations.drop(conversation.id)
                return False
        await self.save(conversation)
        return conversation.id in self._conversations

    async def compact(
        self,
        conversation: Conversation,
        settings: AgentSettings,
        *,
        client: AsyncOpenAI,
        model: str,
        runtime: ToolRuntime | None,
    ) -> p.CompactResult:
        """Compact ``conversation`` now: old tool outputs elided, older turns summarized
        by ``model``, whatever its size."""
        if conversation.lock.locked():
            raise SessionBusyError(
                f"Session {conversation.id} is answering an ask; compact it after that."
            )
        async with conversation.lock:
            window = context_window(conversation, settings, model, runtime)
            before = window.tokens(conversation.messages)

            from ..agent.loop import complete_text  # loaded by the warm-up (endpoints)

            async def summarize(request: list[Message]) -> str:
                return await complete_text(client, model, request)

            done = await window.fit(conversation.messages, summarize, trigger="request", force=True)
            after = window.tokens(conversation.messages)
            if done is not None and (done.elided or done.summarized):
                await self.save(conversation)
        elided, summarized = (done.elided, done.summarized) if done else (0, 0)
        summary = compaction_summary(before, after, window.window, elided, summarized)
        return p.CompactResult(before, after, window.window, elided, summarized, summary)


def context_window(
    conversation: Conversation, settings: AgentSettings, model: str, runtime: ToolRuntime | None
) -> ContextWindow:
    """The model's context window over ``conversation``: what compaction keeps it within.

    The tools' schemas count only until a response calibrated the estimate; their
    definitions tell the summarizer what the tools are and what to keep of their calls.
    """
    return ContextWindow(
        window_for(model, settings.context_window),
        conversation.context,
        conversation.archive,
        model=model,
        threshold=settings.compact_threshold,
        fixed_chars=len(json.dumps(runtime.schemas())) if runtime is not None else 0,
        tools=runtime.registry if runtime is not None else (),
    )


def _answered(messages: list[Message], since: int) -> bool:
    return any(m.get("role") == "assistant" for m in messages[since:])


def _preview(output: str, limit: int) -> str:
    # The agent loop (~30 ms with the model request code it pulls in) is loaded by the
    # warm-up thread (endpoints), not on the way to `initialize`.
    from ..agent.loop import preview

    return preview(output, limit)
