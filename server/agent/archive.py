"""What compaction leaves with a conversation: its archive and what it learned of its size.

Saved with the conversation (``server.conversations.session_files``) and read by the engine for
history and titles; written by ``server.agent.compaction``.

**Archive.** What compaction takes out stays with the conversation (and its session
file), bounded by :data:`ARCHIVE_CHARS`: the original of every elided output (so
``agent/toolOutput`` still serves it) and the summarized messages (so
``agent/sessionHistory`` still shows them); beyond the bound the oldest go first.
A compacted history starts ``[system, user: SUMMARY_PREFIX…, assistant: ACKNOWLEDGEMENT]``
(:func:`is_summary`); :func:`transcript` puts the summarized messages back in its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from ..model.messages import Message, message_chars

CHARS_PER_TOKEN = 4.0  # until the provider's count calibrates it
ARCHIVE_CHARS = 2_000_000
SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]"
ACKNOWLEDGEMENT = "Understood: I have the summary of the earlier conversation and go on from it."


# -- state kept with the conversation ---------------------------------------------------


@dataclass
class ContextState:
    """What was learned about the conversation's size from the provider."""

    model: str = ""  # the model these figures were measured with
    prompt_tokens: int = 0  # the last request's usage.prompt_tokens
    sent_chars: int = 0  # that request's size by our count
    tokens_per_char: float = 1 / CHARS_PER_TOKEN
    provider_window: int | None = None  # a window a provider's error stated
    configured_window: int = 0  # the window configured when it did

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "promptTokens": self.prompt_tokens,
            "sentChars": self.sent_chars,
            "tokensPerChar": self.tokens_per_char,
            "providerWindow": self.provider_window,
            "configuredWindow": self.configured_window,
        }

    @classmethod
    def from_json(cls, data: object) -> ContextState:
        if not isinstance(data, dict):
            return cls()
        state = cls()
        state.model = str(data.get("model") or "")
        state.prompt_tokens = _count(data.get("promptTokens"))
        state.sent_chars = _count(data.get("sentChars"))
        ratio = data.get("tokensPerChar")
        if isinstance(ratio, int | float) and 0.01 <= ratio <= 2:
            state.tokens_per_char = float(ratio)
        window = _count(data.get("providerWindow"))
        state.provider_window = window or None
        state.configured_window = _count(data.get("configuredWindow"))
        return state


@dataclass
class Archive:
    """What compaction took out of the messages, bounded by ``limit`` characters."""

    outputs: dict[str, str] = field(default_factory=dict)  # tool_call_id -> original
    removed: list[Message] = field(default_factory=list)  # summarized, oldest first
    # The user message right after the summary is also in ``removed`` (the request
    # an ask was answering when its earlier turns were summarized).
    prompt_copied: bool = False
    first_prompt: str | None = None  # the conversation's first prompt (its title)
    dropped_asks: int = 0  # user messages dropped from ``removed`` by the bound
    limit: int = ARCHIVE_CHARS
    _chars: int = 0

    def keep_output(self, call_id: str, output: str) -> None:
        if call_id and call_id not in self.outputs:
            self.outputs[call_id] = output
            self._chars += len(output)
            self._trim()

    def keep_removed(self, messages: Iterable[Message]) -> None:
        for message in messages:
            self.removed.append(message)
            self._chars += message_chars(message)
        self._trim()

    def _trim(self) -> None:
        while self._chars > self.limit and self.outputs:
            oldest = next(iter(self.outputs))
            self._chars -= len(self.outputs.pop(oldest))
        while self._chars > self.limit and self.removed:
            message = self.removed.pop(0)
            self._chars -= message_chars(message)
            if message.get("role") == "user":
                self.dropped_asks += 1

    def to_json(self) -> dict[str, object]:
        return {
            "outputs": self.outputs,
            "removed": self.removed,
            "promptCopied": self.prompt_copied,
            "firstPrompt": self.first_prompt,
            "droppedAsks": self.dropped_asks,
        }

    @classmethod
    def from_json(cls, data: object) -> Archive:
        archive = cls()
        if not isinstance(data, dict):
            return archive
        outputs = data.get("outputs")
        if isinstance(outputs, dict):
            for call_id, text in outputs.items():
                if isinstance(text, str):
                    archive.outputs[str(call_id)] = text
                    archive._chars += len(text)
        removed = data.get("removed")
        if isinstance(removed, list):
            # Messages the server saved: trusted to have their roles' shape.
            archive.removed = [cast(Message, m) for m in removed if isinstance(m, dict)]
            archive._chars += sum(message_chars(m) for m in archive.removed)
        archive.prompt_copied = data.get("promptCopied") is True
        first = data.get("firstPrompt")
        archive.first_prompt = first if isinstance(first, str) else None
        archive.dropped_asks = _count(data.get("droppedAsks"))
        archive._trim()
        return archive


def is_summary(messages: Sequence[Message]) -> bool:
    """Whether the history starts (after the system prompt) with a compaction summary."""
    return (
        len(messages) >= 3
        and messages[1].get("role") == "user"
        and str(messages[1].get("content") or "").startswith(SUMMARY_PREFIX)
        and messages[2].get("role") == "assistant"
        and messages[2].get("content") == ACKNOWLEDGEMENT
    )


def transcript(messages: Sequence[Message], archive: Archive) -> list[Message]:
    """The conversation as the user had it: summarized messages back in place of the
    summary (tool messages may still hold notes; ``archive.outputs`` has the originals)."""
    if not is_summary(messages):
        return [*archive.removed, *messages[1:]]
    rest = messages[4:] if archive.prompt_copied else messages[3:]
    return [*archive.removed, *rest]


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
