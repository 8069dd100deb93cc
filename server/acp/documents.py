"""The editor's files over ACP (``fs/read_text_file``, ``fs/write_text_file``), for the tools.

An ACP client that advertises ``fs.readTextFile`` answers for any file with the text it
chooses to give: some clients answer from their open buffer (unsaved text included), others
read the disk (CodeCompanion does: a line typed and not saved is not seen, and its write
replaces the whole buffer). With ``fs.writeTextFile`` the write goes through the client,
which may leave it in its buffer or save it (CodeCompanion saves, and its buffer adds a
final newline). So after a write the file is read back once (no polling) and what the
client then holds is what is recorded, for the stale-edit rule and the checkpoint alike;
whether it saved is observed on disk. Without ``readTextFile`` the client's answer is
trusted (the text sent is what it holds).

Both keep the same rules as the LSP face's documents (``tooling.documents``): the workspace
boundary is checked by the tools before a path gets here, and a write is compare-and-swap:
the file's text is read again right before it is replaced, and a text that is no longer
what the model read is not written (a difference in trailing newlines only is not a
conflict: clients add and drop the final newline on their own). ACP has no versioned edit,
so a keystroke between that read and the write is the one residual race.

A missing file answered with empty content (CodeCompanion answers so on purpose, "so the
agent can create it") is a missing file: the tools create it. Files larger than
:data:`MAX_CLIENT_BYTES` on disk are read from the disk: the whole text would cross the
wire for a window of it. What the client returned last is kept per path, for the code that
asks synchronously (the editor-context note, a rewind's plan: :meth:`refresh` first).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError

from tooling.documents import BufferEdit, EditOutcome

log = logging.getLogger(__name__)

MAX_CLIENT_BYTES = 4 * 1024 * 1024


class AcpDocuments:
    """The files of one ACP session as its client holds them."""

    def __init__(self, conn: Any, session_id: str, *, read: bool, write: bool) -> None:
        self._conn = conn  # the SDK's AgentSideConnection (the client's methods)
        self._session_id = session_id
        self._read = read
        self._write = write
        self._texts: dict[Path, str] = {}
        # Set while a prompt runs: returns once its updates so far are out, so the
        # tool_call that announces a read or write reaches the client before the request.
        self.announced: Callable[[], Awaitable[None]] | None = None

    def open_paths(self) -> list[Path]:
        return []  # ACP does not say which files the editor has open

    def buffer_text(self, path: Path) -> str | None:
        return self._texts.get(path)

    def position_encoding(self) -> str:
        return "utf-16"  # ACP gives lines, never characters: only the note's quoting uses it

    async def read_text(self, path: Path) -> str | None:
        if not self._read or _too_large(path):
            return None
        if self.announced is not None:
            await self.announced()
        try:
            response = await self._conn.read_text_file(session_id=self._session_id, path=str(path))
        except RequestError as exc:
            # Not a file the client can read (missing, binary, a folder): the disk answers,
            # and says what is wrong in the tool's own words.
            log.info("fs/read_text_file %s: %s", path, exc)
            self._texts.pop(path, None)
            return None
        if response.content == "" and not os.path.lexists(path):
            # No such file: the client answers empty content rather than an error.
            self._texts.pop(path, None)
            return None
        self._texts[path] = response.content
        return response.content

    async def refresh(self, paths: list[Path]) -> None:
        """Ask the client again for these files (before code that asks synchronously)."""
        for path in paths:
            if self._read:
                await self.read_text(path)

    def can_edit(self) -> bool:
        return self._write

    async def apply_edits(
        self, path: Path, base_text: str, edits: list[BufferEdit], *, label: str
    ) -> EditOutcome:
        new = base_text
        for edit in sorted(edits, key=lambda e: e.start, reverse=True):
            new = new[: edit.start] + edit.text + new[edit.end :]
        return await self.replace_text(path, new, base_text=base_text)

    async def replace_text(
        self, path: Path, text: str, *, label: str = "", base_text: str | None = None
    ) -> EditOutcome:
        """Write ``text`` through the client, on condition it still holds ``base_text``
        (give or take trailing newlines); the outcome says what it holds after."""
        if base_text is not None and self._read:
            current = await self.read_text(path)
            if current is not None and current.rstrip("\r\n") != base_text.rstrip("\r\n"):
                return EditOutcome(False, "the file changed in the editor since it was read")
        if self.announced is not None:
            await self.announced()
        try:
            await self._conn.write_text_file(
                session_id=self._session_id, path=str(path), content=text
            )
        except RequestError as exc:
            return EditOutcome(False, f"the editor refused the write ({exc})")
        held = text
        if self._read:  # once: what the client now holds (its own newline, its encoding)
            read = await self.read_text(path)
            held = read if read is not None else text
        self._texts[path] = held
        return EditOutcome(True, held=held, saved=_on_disk(path, held))

    async def create_text(self, path: Path, text: str, *, label: str) -> EditOutcome | None:
        if not self._write:
            return None
        # The file store has just asked the client (it holds no such buffer).
        if os.path.lexists(path):
            return EditOutcome(False, "the file was created by someone else meanwhile")
        return await self.replace_text(path, text)

    async def delete_document(self, path: Path, *, label: str) -> EditOutcome | None:
        return None  # ACP has no delete: a rewind deletes on disk


def _on_disk(path: Path, text: str) -> bool:
    """Whether the disk holds ``text`` (the client saved its write)."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_CLIENT_BYTES + 1) == text.encode("utf-8", "surrogatepass")
    except OSError:
        return False


def _too_large(path: Path) -> bool:
    """Not for the client: a huge file, or a FIFO or device (the client's read would block)."""
    try:
        info = os.stat(path)
        return info.st_size > MAX_CLIENT_BYTES or not stat.S_ISREG(info.st_mode)
    except OSError:
        return False  # not on disk: perhaps a buffer the client has not saved yet
