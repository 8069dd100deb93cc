"""Context-window management: how full a conversation is, and compacting it.

Protocol-free: the agent loop calls :meth:`ContextWindow.send` around each model
request, and ``agent/compact`` calls :meth:`ContextWindow.fit` directly.

**Budget.** The window comes from ``server.model.context_limits`` (setting, known model,
default, or what the provider's error stated). The size of the next request is the
last response's ``usage.prompt_tokens`` plus an estimate of what changed since: a
character count (content, tool-call names and arguments, a small overhead per
message) times tokens-per-character, calibrated on every response as
``prompt_tokens / characters sent`` (``1/4`` until the first response). No
tokenizer is downloaded or bundled: models differ, and the provider's own count is
the reference anyway.

**Compaction**, when the next request would pass ``threshold`` of the window:

1. Old tool outputs (outside the most recent turns) are replaced by a note saying
   what was there and how to get it again; the message keeps its ``tool_call_id``.
2. If that is not enough, the older turns are summarized by the model in a separate
   request (no tools), in chunks that fit its window, and replaced by the summary.

Kept verbatim: the system prompt, the current user request and the most recent
turns (up to :data:`KEEP_RECENT_TURNS` of the current ask; fewer when they alone
would take most of the budget, never fewer than one). After a summary the history
reads ``[system, user: summary, assistant: acknowledgement, user: current request,
recent turns...]``: roles still alternate (templates such as Gemma's and Mistral's
refuse two user messages in a row), every tool message still follows the assistant
message that called it, and no system message appears after the first.

**Archive.** What compaction takes out stays with the conversation: ``server.agent.archive``.
The words (instructions, transcript, elision notes): ``server.agent.summary_text``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar, cast

from tooling.contract import ToolDefinition

from ..model.context_limits import Overflow, Window
from ..model.endpoint import ModelRequestError
from ..model.messages import (
    Message,
    ToolMessage,
    assistant_message,
    calls_by_id,
    content_text,
    last_user,
    message_chars,
    system_message,
    turn_starts,
    user_message,
)
from .archive import (
    ACKNOWLEDGEMENT,
    CHARS_PER_TOKEN,
    SUMMARY_PREFIX,
    Archive,
    ContextState,
    is_summary,
)
from .events import CompactionFinished, CompactionStarted, EventSink, ModelRequestStarted
from .summary_text import (
    NOTE_PREFIX,
    SUMMARY_SUFFIX,
    TRANSCRIPT_ITEM_CHARS,
    chunks,
    clip,
    elision_note,
    fallback,
    summary_instructions,
    transcript_items,
)

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.8  # of the window: the editor setting compactThreshold's default
KEEP_RECENT_TURNS = 3
RECENT_SHARE = 0.6  # the kept turns may take this much of the budget before fewer are kept
ELIDE_MIN_CHARS = 1_000  # shorter outputs stay: their note would save little
SUMMARY_MAX_CHARS = 12_000
OVERFLOW_SHRINK = 0.7  # without numbers from the provider, compact to this share

Summarize = Callable[[list[Message]], Awaitable[str]]
_Reply = TypeVar("_Reply")


@dataclass(frozen=True)
class Compaction:
    """What one compaction did."""

    trigger: str
    tokens_before: int
    tokens_after: int
    elided: int
    summarized: int
    duration_ms: float

    @property
    def freed(self) -> bool:
        return self.tokens_after < self.tokens_before


class ContextWindow:
    """The budget of one conversation's requests, and the compaction that keeps to it.

    ``fixed_chars`` is what every request carries besides the messages (the tools'
    schemas), counted until the first response calibrates the estimate. ``tools``: the
    conversation's tool definitions, for the summarizer's instructions and for what
    each call is shown acting on (``summary_argument``) in notes and transcripts.
    """

    def __init__(
        self,
        window: Window,
        state: ContextState,
        archive: Archive,
        *,
        model: str,
        threshold: float = DEFAULT_THRESHOLD,
        fixed_chars: int = 0,
        tools: Iterable[ToolDefinition] = (),
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError("threshold must be in (0, 1]")
        self.configured = window
        self.state = state
        self.archive = archive
        self.threshold = threshold
        self.fixed_chars = fixed_chars
        self.tools = tuple(tools)
        self._keys = {tool.name: tool.summary_argument() for tool in self.tools}
        if state.model != model:  # figures measured with another model do not carry over
            state.model, state.prompt_tokens, state.sent_chars = model, 0, 0
            state.tokens_per_char, state.provider_window = 1 / CHARS_PER_TOKEN, None
        if state.configured_window != window.tokens:  # a new setting: trust it again
            state.configured_window, state.provider_window = window.tokens, None

    @property
    def window(self) -> int:
        learned = self.state.provider_window
        return min(self.configured.tokens, learned) if learned else self.configured.tokens

    @property
    def limit(self) -> int:
        """Compact before a request estimated above this many tokens."""
        return int(self.window * self.threshold)

    # -- estimating ----------------------------------------------------------------

    def tokens(self, messages: list[Message]) -> int:
        """The estimated prompt size of a request sending ``messages``."""
        chars = self._chars(messages)
        state = self.state
        if state.prompt_tokens:
            return max(0, state.prompt_tokens + self._tokens_of(chars - state.sent_chars))
        return self._tokens_of(chars)

    def usage(self, messages: list[Message]) -> dict[str, int]:
        """An ask result's context figures: the history's size now, and the window."""
        return {"contextTokens": self.tokens(messages), "contextWindow": self.window}

    def observe(self, messages: list[Message], prompt_tokens: int | None) -> None:
        """Calibrate on a response: ``messages`` as sent, ``prompt_tokens`` as counted."""
        if not prompt_tokens or prompt_tokens <= 0:
            return
        chars = self._chars(messages)
        self.state.prompt_tokens, self.state.sent_chars = prompt_tokens, chars
        self.state.tokens_per_char = min(2.0, max(0.01, prompt_tokens / max(chars, 1)))

    def _chars(self, messages: list[Message]) -> int:
        return self.fixed_chars + sum(message_chars(m) for m in messages)

    def _tokens_of(self, chars: int) -> int:
        return math.ceil(chars * self.state.tokens_per_char)

    # -- the request hook ----------------------------------------------------------

    async def send(
        self,
        messages: list[Message],
        request: Callable[[], Awaitable[_Reply]],
        *,
        turn: int,
        summarize: Summarize,
        emit: EventSink,
    ) -> _Reply:
        """One model request within the window: compact first if the history is over
        the threshold; on the provider's context-length error, compact and retry once.

        Raises :class:`ContextWindowExceededError` when it still does not fit.
        """
        await self.fit(messages, summarize, turn=turn, emit=emit)
        emit(ModelRequestStarted(turn=turn))
        try:
            return await request()
        except ModelRequestError as exc:
            if exc.overflow is None:
                raise
            self._learn(exc.overflow, messages)
            # Our estimate said it fits, or the provider's numbers say it does: the
            # provider is the authority, so aim well below what was sent.
            current = self.tokens(messages)
            target = self.limit if current > self.limit else int(current * OVERFLOW_SHRINK)
            done = await self.fit(
                messages, summarize, turn=turn, emit=emit, trigger="overflow", limit=target
            )
            if done is None or not done.freed:
                raise self._exceeded(messages) from None
        emit(ModelRequestStarted(turn=turn))
        try:
            return await request()
        except ModelRequestError as exc:
            if exc.overflow is None:
                raise
            self._learn(exc.overflow, messages)
            raise self._exceeded(messages) from None

    def _learn(self, overflow: Overflow, messages: list[Message]) -> None:
        if overflow.window:
            known = self.state.provider_window
            self.state.provider_window = min(known, overflow.window) if known else overflow.window
        if overflow.request_tokens:
            self.observe(messages, overflow.request_tokens)
        log.info(
            "context window exceeded: the provider counted %s tokens against a window of %s",
            overflow.request_tokens or "?",
            overflow.window or "?",
        )

    def _exceeded(self, messages: list[Message]) -> Exception:
        from ..errors import ContextWindowExceededError  # the protocol module: not at import

        tokens, window = self.tokens(messages), self.window
        return ContextWindowExceededError(
            f"The conversation does not fit the model's context window (about {tokens:,} "
            f"of {window:,} tokens) even after compacting it: the system prompt, this "
            "request and its latest turn alone are too large. Ask again with a shorter "
            "request (or less attached context), or for smaller tool output; start a new "
            "session; or, if the model accepts more, raise the agentLsp.contextWindow "
            "setting. The session itself is kept and can go on.",
            data={"contextTokens": tokens, "contextWindow": window},
        )

    # -- compacting ----------------------------------------------------------------

    async def fit(
        self,
        messages: list[Message],
        summarize: Summarize,
        *,
        turn: int = 0,
        emit: EventSink | None = None,
        trigger: str = "threshold",
        limit: int | None = None,
        force: bool = False,
    ) -> Compaction | None:
        """Compact ``messages`` in place to ``limit`` tokens (default: the threshold).

        Nothing happens (None) when they are within it, unless ``force`` (a user's
        ``agent/compact``): then every old output is elided and older turns are
        summarized whatever the size. A cancellation leaves a valid history.
        """
        limit = self.limit if limit is None else limit
        before = self.tokens(messages)
        if before <= limit and not force:
            return None
        started = time.perf_counter()
        if emit is not None:
            emit(CompactionStarted(turn, trigger, before, self.window))
        elided = summarized = 0
        current = last_user(messages)
        if current is not None and not (is_summary(messages) and current < 3):
            keep_from = self._keep_from(messages, current, limit)
            elided = self._elide(messages, keep_from)
            if force or self.tokens(messages) > limit:
                summarized = await self._summarize(messages, current, keep_from, summarize, limit)
        after = self.tokens(messages)
        done = Compaction(
            trigger, before, after, elided, summarized, (time.perf_counter() - started) * 1000
        )
        if emit is not None:
            emit(
                CompactionFinished(
                    turn,
                    trigger,
                    before,
                    after,
                    self.window,
                    elided,
                    summarized,
                    done.duration_ms,
                )
            )
        log.info(
            "compacted (%s): %d -> %d tokens of %d; %d outputs elided, %d messages summarized",
            trigger,
            before,
            after,
            self.window,
            elided,
            summarized,
        )
        return done

    def _keep_from(self, messages: list[Message], current: int, limit: int) -> int:
        """Index of the first verbatim turn: the most recent turns of the current ask
        that fit :data:`RECENT_SHARE` of the budget (at least the last one)."""
        turns = turn_starts(messages, current + 1)
        if not turns:
            return len(messages)
        base = message_chars(messages[0]) + message_chars(messages[current]) + self.fixed_chars
        for count in range(min(KEEP_RECENT_TURNS, len(turns)), 1, -1):
            start = turns[-count]
            kept = base + sum(message_chars(m) for m in messages[start:])
            if self._tokens_of(kept) <= limit * RECENT_SHARE:
                return start
        return turns[-1]

    def _elide(self, messages: list[Message], keep_from: int) -> int:
        """Replace long tool outputs before ``keep_from`` by notes; how many."""
        calls = calls_by_id(messages)
        count = 0
        for index in range(1, keep_from):
            if messages[index].get("role") != "tool":
                continue
            message = cast(ToolMessage, messages[index])  # as its role says
            content = message.get("content")
            if not isinstance(content, str):
                continue
            if len(content) < ELIDE_MIN_CHARS or content.startswith(NOTE_PREFIX):
                continue
            call_id = str(message.get("tool_call_id") or "")
            name, arguments = calls.get(call_id, ("the tool", ""))
            self.archive.keep_output(call_id, content)
            note = elision_note(name, arguments, content, key=self._keys.get(name))
            elided: ToolMessage = {**message, "content": note}
            messages[index] = elided
            count += 1
        return count

    async def _summarize(
        self,
        messages: list[Message],
        current: int,
        keep_from: int,
        summarize: Summarize,
        limit: int,
    ) -> int:
        """Replace the messages before ``keep_from`` (but the current request) with a
        summary by the model; returns how many messages it replaced."""
        first = 3 if is_summary(messages) else 1
        earlier = messages[1:first] if first == 3 else []
        region = [i for i in range(first, keep_from) if i != current]
        if not region:
            return 0
        previous = (
            content_text(messages[1].get("content"))[len(SUMMARY_PREFIX) :] if earlier else ""
        )
        previous = previous.removesuffix(SUMMARY_SUFFIX).strip()
        items = transcript_items([messages[i] for i in region], calls_by_id(messages), self._keys)
        summary = await self._write_summary(
            previous, items, content_text(messages[current].get("content")), summarize, limit
        )
        if summary is None:
            return 0
        # Nothing awaited from here on: the history changes in one step.
        archive = self.archive
        if archive.first_prompt is None:
            firsts = [m for m in [*archive.removed, *messages[first:]] if m.get("role") == "user"]
            archive.first_prompt = content_text(firsts[0].get("content")) if firsts else None
        chronological = [i for i in range(first, keep_from)]
        if archive.prompt_copied and first == 3:
            chronological = [i for i in chronological if i != 3]
        archive.keep_removed(messages[i] for i in chronological)
        archive.prompt_copied = True
        messages[:] = [
            messages[0],
            user_message(f"{SUMMARY_PREFIX}\n{summary}{SUMMARY_SUFFIX}"),
            assistant_message(ACKNOWLEDGEMENT),
            messages[current],
            *messages[keep_from:],
        ]
        return len(region) + len(earlier)

    async def _write_summary(
        self,
        previous: str,
        items: list[str],
        current_request: str,
        summarize: Summarize,
        limit: int,
    ) -> str | None:
        """The summary of ``items`` (after ``previous``), chunked to fit the window;
        None when a summary request failed (the history then stays as it is: the
        turn's own request will meet the same endpoint and report what is wrong)."""
        words = max(150, min(1_500, limit // 20))
        instructions = summary_instructions(self.tools, words)
        request_note = (
            "\n\nFor context, the user's current request, which stays in the conversation "
            f"verbatim after your summary:\n{clip(current_request, TRANSCRIPT_ITEM_CHARS)}"
        )
        room = int(min(limit, self.window * 0.6)) - self._tokens_of(
            len(instructions) + len(request_note) + SUMMARY_MAX_CHARS
        )
        room_chars = max(4_000, int(room / self.state.tokens_per_char))
        summary = previous
        for chunk in chunks(items, room_chars):
            head = f"Summary of what came before:\n{summary}\n\n" if summary else ""
            request: list[Message] = [
                system_message(instructions),
                user_message(f"{head}Conversation to summarize:\n\n{chunk}{request_note}"),
            ]
            try:
                written = (await summarize(request)).strip()
            except ModelRequestError as exc:
                log.warning("the summary request failed: %s", exc)
                return None
            summary = clip(written, SUMMARY_MAX_CHARS) if written else fallback(summary, chunk)
        return summary
