"""Conversations saved as files, so a terminal client can continue one later.

Each ``agent-lsp ask`` starts a fresh server process; with a session directory
(``--session-dir``) the conversation outlives it. Files are private to the user
(0600) since they hold prompts and tool output, and ids are checked before they
become file names.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from .conversations import Conversation

_ID = re.compile(r"[0-9a-f]{32}")


def default_session_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "agent-lsp" / "sessions"


class SessionFiles:
    def __init__(self, directory: Path) -> None:
        self._dir = directory

    def _path(self, conversation_id: str) -> Path | None:
        return self._dir / f"{conversation_id}.json" if _ID.fullmatch(conversation_id) else None

    def save(self, conversation: Conversation) -> None:
        path = self._path(conversation.id)
        if path is None:
            return
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {
            "id": conversation.id,
            "workspace_root": str(conversation.workspace_root),
            "created": conversation.created,
            "messages": conversation.messages,
        }
        fd, tmp = tempfile.mkstemp(dir=self._dir, prefix=".session-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
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
        return Conversation(
            id=conversation_id,
            workspace_root=Path(data["workspace_root"]),
            messages=data["messages"],
            created=float(data.get("created", 0.0)),
        )

    def delete(self, conversation_id: str) -> None:
        path = self._path(conversation_id)
        if path is not None:
            path.unlink(missing_ok=True)
