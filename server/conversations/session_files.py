"""Conversations saved as files, so they outlive the server process.

The language server keeps them by default (an editor window reload restarts the
server, and the user expects to reopen and continue a conversation); each
``agent-lsp ask`` of the terminal client is a fresh process that continues one
with ``--session``. Files are private to the user (0600, folder 0700) since they
hold prompts and tool output, ids are checked before they become file names, and
whole files are written atomically (temporary file + rename).

Each conversation is three files: ``ID.json`` (the messages, needed to continue it,
with what compaction archived of them: ``server.agent.compaction``), ``ID.log`` (what
was added since, one JSON line per save) and ``ID.meta.json`` (a few hundred bytes:
folder, title, times, asks, state), so listing a folder's conversations never parses
their histories.

A save costs what changed, not the conversation's length: when the messages saved
last are still the conversation's first ones (the same objects: compaction, a rewind
or a failed ask replace or remove messages, never edit them in place), only the new
ones are appended to the log, with the system prompt if it changed; otherwise, and
every ``MAX_LOG_LINES`` saves, ``ID.json`` is rewritten and the log starts over. Each
log line names the ``ID.json`` it follows (``base``), so a crash between the rewrite
and the log's removal never applies an old log to a new file; a torn last line (a
crash mid-write) is ignored.

An ask saves its conversation as it starts (the prompt, ``state: "running"``) and as it
ends (``"done"``): a server killed mid-ask leaves the prompt on disk, listed as
``interrupted`` (the ask's checkpoint says what it changed), and a conversation
loaded in that state gets a note in place of the answer that never came (so the next
prompt does not follow a prompt: strict chat templates refuse two in a row).

Retention: files not used for ``MAX_AGE_DAYS`` are deleted, and beyond ``MAX_FILES``
conversations the least recently used go first (:meth:`SessionFiles.prune`, run in the
background).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.archive import Archive, ContextState
from ..model.messages import AssistantMessage, Message, assistant_message
from .conversations import Conversation, SessionMeta

_ID = re.compile(r"[0-9a-f]{32}")
MAX_AGE_DAYS = 30
MAX_FILES = 500
MAX_LOG_LINES = 200  # saves appended before ID.json is rewritten with them
INTERRUPTED_NOTE = (
    "(No answer: agent-lsp stopped during this ask. Its checkpoint records what it changed.)"
)


@dataclass
class SaveJob:
    """One prepared save: the whole file's data, or a log line; and the meta file."""

    id: str
    meta: dict[str, Any]
    whole: dict[str, Any] | None = None
    line: dict[str, Any] | None = None


@dataclass
class _Saved:
    """What this process last saved of a conversation (to append only what is new)."""

    base: str  # the generation of ID.json the log follows
    messages: list[Message]  # the saved messages (the objects themselves)
    archive: tuple[int, int, bool, str | None, int]
    lines: int  # log lines written since ID.json


class SessionFiles:
    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._saved: dict[str, _Saved] = {}
        self._mutex = threading.Lock()  # prepare() on the loop, write() in worker threads
        self._io = threading.Lock()  # a conversation's files: written, or deleted
        self._deleted: set[str] = set()  # a save prepared before its deletion never lands

    def _path(self, conversation_id: str, suffix: str = ".json") -> Path | None:
        if not _ID.fullmatch(conversation_id):
            return None
        return self._dir / f"{conversation_id}{suffix}"

    def save(self, conversation: Conversation, *, state: str = "done") -> None:
        """Save what changed since the last save (the whole file when it must)."""
        job = self.prepare(conversation, state=state)
        if job is not None:
            self.write(job)

    def prepare(
        self, conversation: Conversation, *, state: str = "done", whole: bool = False
    ) -> SaveJob | None:
        """What a save writes, taken now (cheap: references and shallow copies), so
        :meth:`write` can run in a worker thread while the conversation goes on. Jobs
        must be written in the order they were prepared."""
        if self._path(conversation.id) is None:
            return None
        messages = conversation.messages
        with self._mutex:
            saved = self._saved.get(conversation.id)
            archive = _archive_mark(conversation)
            meta = {
                "id": conversation.id,
                "workspace_root": str(conversation.workspace_root),
                "title": conversation.title,
                "created": conversation.created,
                "updated": conversation.updated,
                "asks": conversation.asks,
                "state": state,
                "mode": conversation.mode,
            }
            context = conversation.context.to_json()
            if whole or saved is None or not _extends(saved, messages, archive):
                base = uuid.uuid4().hex
                data: dict[str, Any] = {
                    "id": conversation.id,
                    "base": base,
                    "workspace_root": str(conversation.workspace_root),
                    "created": conversation.created,
                    "messages": list(messages),
                    "archive": _copied(conversation.archive.to_json()),
                    "context": context,
                }
                self._saved[conversation.id] = _Saved(base, list(messages), archive, 0)
                return SaveJob(conversation.id, meta, whole=data)
            line: dict[str, Any] = {
                "base": saved.base,
                "from": len(saved.messages),
                "messages": messages[len(saved.messages) :],
                "context": context,
            }
            if messages and saved.messages and messages[0] is not saved.messages[0]:
                line["system"] = messages[0]
            saved.messages = list(messages)
            saved.lines += 1
            return SaveJob(conversation.id, meta, line=line)

    def write(self, job: SaveJob) -> None:
        """Write a prepared save (in a worker thread: this is the part that takes time)."""
        path, log, meta = (self._path(job.id, s) for s in (".json", ".log", ".meta.json"))
        assert path is not None and log is not None and meta is not None
        try:
            with self._io:
                self._write_job(job, path, log, meta)
        except BaseException:
            with self._mutex:  # the next save writes the whole file again
                self._saved.pop(job.id, None)
            raise

    def _write_job(self, job: SaveJob, path: Path, log: Path, meta: Path) -> None:
        if job.id in self._deleted:
            return
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if job.whole is not None:
            self._write(path, job.whole)
            log.unlink(missing_ok=True)
        else:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(job.line, ensure_ascii=False) + "\n")
        self._write(meta, job.meta)

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self._dir, prefix=".session-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp: mode 0600
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, conversation_id: str) -> Conversation | None:
        path = self._path(conversation_id)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            return None
        messages: list[Message] = data["messages"]  # as the server saved them
        context = data.get("context")
        lines = 0
        for line in self._log_lines(conversation_id, data.get("base")):
            del messages[line["from"] :]
            messages.extend(line["messages"])
            if isinstance(line.get("system"), dict) and messages:
                messages[0] = line["system"]
            context = line.get("context", context)
            lines += 1
        meta = self._read_meta(self._path(conversation_id, ".meta.json"))
        note: AssistantMessage | None = None
        if meta is not None and meta.state == "running" and messages[-1:]:
            if messages[-1].get("role") == "user":
                note = assistant_message(INTERRUPTED_NOTE)
                messages.append(note)
        conversation = Conversation(
            id=conversation_id,
            workspace_root=Path(data["workspace_root"]),
            messages=messages,
            created=float(data.get("created", 0.0)),
            archive=Archive.from_json(data.get("archive")),
            context=ContextState.from_json(context),
        )
        if meta is not None:
            conversation.updated = meta.updated
            conversation.mode = _saved_mode(self._path(conversation_id, ".meta.json"))
        # Listed as interrupted while the note is its last message
        # (server.conversations.conversations).
        conversation.interrupted_note = note
        if isinstance(data.get("base"), str) and lines < MAX_LOG_LINES:
            with self._mutex:  # the next save appends to this log
                mark = _archive_mark(conversation)
                self._saved[conversation_id] = _Saved(data["base"], list(messages), mark, lines)
                if messages and messages[-1].get("content") == INTERRUPTED_NOTE:
                    self._saved[conversation_id].messages.pop()  # saved with the next ask
        return conversation

    def _log_lines(self, conversation_id: str, base: Any) -> list[dict[str, Any]]:
        """The log's lines that follow ``ID.json`` generation ``base``, in order; a line
        that does not parse (a crash mid-write) ends it."""
        path = self._path(conversation_id, ".log")
        if path is None or not isinstance(base, str):
            return []
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return []
        found = []
        for raw in text.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                break
            if not isinstance(line, dict) or line.get("base") != base:
                continue  # an older file's log, left by a crash before its removal
            if not isinstance(line.get("from"), int) or not isinstance(line.get("messages"), list):
                break
            found.append(line)
        return found

    def list(self, workspace_root: Path | None = None) -> list[SessionMeta]:
        """Saved conversations (of one folder, if given), most recently used first."""
        try:
            names = os.listdir(self._dir)
        except OSError:
            return []
        found = []
        for name in names:
            if name.endswith(".meta.json"):
                meta = self._read_meta(self._dir / name)
                if meta is not None and (workspace_root in (None, meta.workspace_root)):
                    found.append(meta)
        return sorted(found, key=lambda m: m.updated, reverse=True)

    def delete(self, conversation_id: str) -> None:
        with self._mutex:
            self._saved.pop(conversation_id, None)
        with self._io:
            self._deleted.add(conversation_id)
            for suffix in (".json", ".log", ".meta.json"):
                path = self._path(conversation_id, suffix)
                if path is not None:
                    path.unlink(missing_ok=True)

    def prune(self, *, max_age_days: float = MAX_AGE_DAYS, max_files: int = MAX_FILES) -> int:
        """Delete conversations unused for ``max_age_days`` and the least recently used
        beyond ``max_files``; returns how many were deleted."""
        metas = self.list()
        cutoff = time.time() - max_age_days * 86400
        doomed = [m for m in metas if m.updated < cutoff]
        kept = [m for m in metas if m.updated >= cutoff]
        doomed += kept[max_files:]
        for meta in doomed:
            self.delete(meta.id)
        return len(doomed)

    @staticmethod
    def _read_meta(path: Path | None) -> SessionMeta | None:
        if path is None:
            return None
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if _ID.fullmatch(str(data["id"])):
                return SessionMeta(
                    id=data["id"],
                    workspace_root=Path(data["workspace_root"]),
                    title=str(data.get("title", "")),
                    created=float(data["created"]),
                    updated=float(data["updated"]),
                    asks=int(data.get("asks", 0)),
                    state=str(data.get("state", "done")),
                )
        return None


def _saved_mode(path: Path | None) -> str | None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if path is not None:
            mode = json.loads(path.read_text(encoding="utf-8")).get("mode")
            return mode if isinstance(mode, str) else None
    return None


def _archive_mark(conversation: Conversation) -> tuple[int, int, bool, str | None, int]:
    """What changes in the archive when compaction runs (cheap to compare)."""
    archive = conversation.archive
    return (
        len(archive.outputs),
        len(archive.removed),
        archive.prompt_copied,
        archive.first_prompt,
        archive.dropped_asks,
    )


def _extends(
    saved: _Saved, messages: list[Message], archive: tuple[int, int, bool, str | None, int]
) -> bool:
    """Whether ``messages`` are the saved ones with more after them (the system prompt
    aside), so a log line can say what is new."""
    if saved.lines >= MAX_LOG_LINES or archive != saved.archive:
        return False
    count = len(saved.messages)
    if len(messages) < count:
        return False
    return all(a is b for a, b in zip(saved.messages[1:], messages[1:count], strict=True))


def _copied(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its dicts and lists copied one level down (the archive's, which
    compaction changes on the event loop while a worker thread writes them)."""
    return {
        key: dict(value)
        if isinstance(value, dict)
        else list(value)
        if isinstance(value, list)
        else value
        for key, value in data.items()
    }
