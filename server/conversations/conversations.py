"""Conversations: the message history of a chat, kept in memory by the server.

A conversation belongs to one workspace folder and holds the message list the
agent loop appends to. Its ``lock`` serialises asks: one ask at a time per
conversation (two loops appending to one list would interleave tool messages).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tooling.ledger import FileLedger

from ..agent.archive import Archive, ContextState, transcript
from ..agent.permissions import GrantStore
from ..model.messages import AssistantMessage, Message, system_message
from ..project.instructions import Instruction
from .editor_context import prompt_of

TITLE_CHARS = 80


@dataclass(eq=False)
class Conversation:
    id: str
    workspace_root: Path
    messages: list[Message]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    # What the agent has read of each file (stale-edit protection); not persisted,
    # so a conversation loaded from a file re-reads before it edits.
    ledger: FileLedger = field(default_factory=FileLedger, repr=False)
    # The user's allow/reject-always answers, each bound to one exact call; in memory
    # only, so they end with the conversation (or the server).
    grants: GrantStore = field(default_factory=GrantStore, repr=False)
    # What compaction took out of ``messages`` and what it learned of their size
    # (server.agent.compaction); saved with the conversation.
    archive: Archive = field(default_factory=Archive, repr=False)
    context: ContextState = field(default_factory=ContextState, repr=False)
    # The subfolders whose instructions this conversation was given (or found to have
    # none), and those given: in memory only (a reloaded conversation is told again).
    instruction_folders: set[Path] = field(default_factory=set, repr=False)
    nested_instructions: list[Instruction] = field(default_factory=list, repr=False)
    # The note a conversation loaded mid-ask got for the answer that never came
    # (server.conversations.session_files); while it is the last message, it is interrupted.
    interrupted_note: AssistantMessage | None = field(default=None, repr=False)
    # The mode its last ask ran in, or a client chose for it (server.settings.modes); saved
    # with it, so a client that loads or resumes it offers the same mode again.
    mode: str | None = None

    @property
    def interrupted(self) -> bool:
        """Its last ask never finished (its server stopped), and none has started since."""
        note = self.interrupted_note
        return note is not None and bool(self.messages) and self.messages[-1] is note

    @property
    def title(self) -> str:
        """The first prompt on one line, shortened (how clients list conversations)."""
        first = self.archive.first_prompt
        if first is None:
            found = next((m for m in self.transcript() if m.get("role") == "user"), None)
            first = str(found.get("content") or "") if found else ""
        text = " ".join(prompt_of(first).split())
        return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"

    @property
    def asks(self) -> int:
        asked = sum(1 for m in self.transcript() if m.get("role") == "user")
        return asked + self.archive.dropped_asks

    def transcript(self) -> list[Message]:
        """The messages as the user had them (the system prompt left out), compaction's
        summary replaced by what it summarized."""
        return transcript(self.messages, self.archive)

    @property
    def busy(self) -> bool:
        """Whether an ask currently holds this conversation."""
        return self.lock.locked()

    def touch(self) -> None:
        self.updated = time.time()


@dataclass(frozen=True)
class SessionMeta:
    id: str
    workspace_root: Path
    title: str
    created: float
    updated: float
    asks: int
    # "done", "running" (an ask is under way), "interrupted" (one never finished: its
    # server stopped mid-ask).
    state: str = "done"


class SavedConversations(Protocol):
    """Where a store keeps conversations beyond memory (``server.conversations.session_files``)."""

    def load(self, conversation_id: str) -> Conversation | None: ...

    def save(self, conversation: Conversation, *, state: str = "done") -> None: ...

    def delete(self, conversation_id: str) -> None: ...

    def list(self, workspace_root: Path | None = None) -> list[SessionMeta]: ...


class ConversationStore:
    """Conversations by id, least recently used dropped beyond ``max_conversations``.

    ``create`` and ``get`` count as use. When over the cap, the least recently
    used conversation that is not busy is dropped (a busy one only if all are):
    a running ask keeps its own reference, so dropping never breaks it.
    """

    def __init__(
        self, max_conversations: int = 100, files: SavedConversations | None = None
    ) -> None:
        if max_conversations < 1:
            raise ValueError("max_conversations must be >= 1")
        self._max = max_conversations
        self._items: OrderedDict[str, Conversation] = OrderedDict()
        # Optional persistence (the terminal client): misses fall back to files.
        self._files = files

    @property
    def max_conversations(self) -> int:
        return self._max

    def create(self, workspace_root: Path, system_prompt: str) -> Conversation:
        conversation = Conversation(
            id=uuid.uuid4().hex,
            workspace_root=workspace_root,
            messages=[system_message(system_prompt)],
        )
        self._items[conversation.id] = conversation
        self._evict()
        return conversation

    def get(self, conversation_id: str) -> Conversation | None:
        conversation = self._items.get(conversation_id)
        if conversation is None and self._files is not None:
            conversation = self._files.load(conversation_id)
            if conversation is not None:
                self._items[conversation_id] = conversation
                self._evict()
        if conversation is not None:
            self._items.move_to_end(conversation_id)
            conversation.touch()
        return conversation

    def drop(self, conversation_id: str) -> bool:
        if self._files is not None:
            self._files.delete(conversation_id)
        return self._items.pop(conversation_id, None) is not None

    def save(self, conversation: Conversation, *, state: str = "done") -> None:
        """Persist the conversation if this store keeps files (a no-op otherwise)."""
        if self._files is not None:
            self._files.save(conversation, state=state)

    def summaries(self, workspace_root: Path | None = None) -> list[SessionMeta]:
        """Conversations of a folder (all if None), in memory or saved, newest first."""
        found = {
            c.id: SessionMeta(
                c.id,
                c.workspace_root,
                c.title,
                c.created,
                c.updated,
                c.asks,
                "running" if c.busy else "interrupted" if c.interrupted else "done",
            )
            for c in self._items.values()
            if workspace_root is None or c.workspace_root == workspace_root
        }
        if self._files is not None:
            for meta in self._files.list(workspace_root):
                if meta.state == "running":  # on disk only: its server stopped mid-ask
                    meta = dataclasses.replace(meta, state="interrupted")
                found.setdefault(meta.id, meta)
        return sorted(found.values(), key=lambda m: m.updated, reverse=True)

    @property
    def files(self) -> SavedConversations | None:
        return self._files

    def ids(self) -> list[str]:
        """Ids from least to most recently used."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, conversation_id: object) -> bool:
        return conversation_id in self._items

    def _evict(self) -> None:
        while len(self._items) > self._max:
            # Never the newest (just created); otherwise the oldest idle, else the oldest.
            candidates = list(self._items.values())[:-1]
            victim = next((c for c in candidates if not c.busy), candidates[0])
            del self._items[victim.id]
