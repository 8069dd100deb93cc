"""Conversations saved as files, so they outlive the server process.

The language server keeps them by default (an editor window reload restarts the
server, and the user expects to reopen and continue a conversation); each
``agent-lsp ask`` of the terminal client is a fresh process that continues one
with ``--session``. Files are private to the user (0600, folder 0700) since they
hold prompts and tool output, ids are checked before they become file names, and
writes are atomic (temporary file + rename).

Each conversation is two files: ``ID.json`` (the messages, needed to continue it,
with what compaction archived of them: ``server.agent.compaction``)
and ``ID.meta.json`` (a few hundred bytes: folder, title, times, asks), so listing
a folder's conversations never parses their histories. Retention: files not used
for ``MAX_AGE_DAYS`` are deleted, and beyond ``MAX_FILES`` conversations the least
recently used go first (:meth:`SessionFiles.prune`, run in the background).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from ..agent.archive import Archive, ContextState
from .conversations import Conversation, SessionMeta

_ID = re.compile(r"[0-9a-f]{32}")
MAX_AGE_DAYS = 30
MAX_FILES = 500


class SessionFiles:
    def __init__(self, directory: Path) -> None:
        self._dir = directory

    def _path(self, conversation_id: str, suffix: str = ".json") -> Path | None:
        if not _ID.fullmatch(conversation_id):
            return None
        return self._dir / f"{conversation_id}{suffix}"

    def save(self, conversation: Conversation) -> None:
        path, meta = self._path(conversation.id), self._path(conversation.id, ".meta.json")
        if path is None or meta is None:
            return
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {
            "id": conversation.id,
            "workspace_root": str(conversation.workspace_root),
            "created": conversation.created,
            "messages": conversation.messages,
            "archive": conversation.archive.to_json(),
            "context": conversation.context.to_json(),
        }
        self._write(path, data)
        self._write(
            meta,
            {
                "id": conversation.id,
                "workspace_root": str(conversation.workspace_root),
                "title": conversation.title,
                "created": conversation.created,
                "updated": conversation.updated,
                "asks": conversation.asks,
            },
        )

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
        meta = self._read_meta(self._path(conversation_id, ".meta.json"))
        conversation = Conversation(
            id=conversation_id,
            workspace_root=Path(data["workspace_root"]),
            messages=data["messages"],
            created=float(data.get("created", 0.0)),
            archive=Archive.from_json(data.get("archive")),
            context=ContextState.from_json(data.get("context")),
        )
        if meta is not None:
            conversation.updated = meta.updated
        return conversation

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
        for suffix in (".json", ".meta.json"):
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
                )
        return None
