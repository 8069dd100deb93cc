"""The one file store: where a file's text comes from, and how it is written.

A file open in the editor is its buffer, unsaved changes included; any other file is
the disk. Every file tool goes through :class:`FileStore`, so that choice and the
stale-edit rule exist once.

- **A read** returns the text together with the fingerprint of exactly what it
  returned, recorded in the conversation's ledger. Disk: one open descriptor; its
  (dev, ino, size, mtime_ns) before and after reading (if they differ the read is
  retried, and after three tries nothing is recorded) plus the byte span of the
  lines shown and its sha256, hashed as it was read (no second open, and a window
  costs no whole-file hash). A window that covers the whole file makes the digest a
  full-content check. Buffer: the sha256 of the whole buffer text.
- **A write** replaces a snapshot: it is compare-and-swap against the conversation's
  fingerprint of the file (none: an existing file is refused; a new file needs no
  read). The precondition holds iff the file still has the recorded stat and the
  recorded span still hashes the same, or the fingerprint covered the whole content
  (a whole-file read, a buffer, the agent's own write) and the current content has
  that digest: a touch, or a save of the same text, does not force a re-read. Then
  the write itself is conditional on what was checked: on disk an atomic write whose
  stat is compared right before the rename (``textfiles.atomic_write``); in the editor
  a ``workspace/applyEdit`` of the checked buffer text, versioned so the editor
  refuses it if the user typed meanwhile. Without ``applyEdit`` a buffer with unsaved
  changes is never written under (the disk is written only when the buffer is clean).
- **After a write** the store records what was written (its digest, and for the disk
  the written file's fstat), so the agent can go on editing its own text. An editor
  that says what it holds after the write (ACP: read back once) is taken at its word:
  its text is recorded, not the text sent (a client that adds a final newline does not
  make the next edit a conflict); one that reports later (LSP's didChange) is waited for
  briefly.

Residual races (there is no compare-and-rename in POSIX): a write by another process
between the last ``stat`` and the rename is replaced; and a same-size, same-inode
rewrite within one tick of a coarse mtime clock that touches only bytes outside the
span the agent was shown (a windowed read) goes unnoticed. Whole-file reads, buffers
and the agent's own writes are checked byte for byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from tooling.context import ToolContext
from tooling.ledger import FileStat, Fingerprint
from tooling.workspace import Workspace

from .errors import ToolError, human_size, os_error, utf8
from .textedit import minimal_edit
from .textfiles import (
    FileChangedError,
    LineWindow,
    atomic_write,
    looks_binary,
    open_regular,
    window_of,
)

READ_ATTEMPTS = 3
_HASH_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Shown:
    """What a read returned: a window of lines, and notes on where it came from."""

    window: LineWindow
    notes: list[str]


# Where a write landed: the disk; the editor's buffer, unsaved; the editor, which saved it.
Placed = Literal["disk", "buffer", "saved"]


@dataclass(frozen=True)
class Written:
    """Where a write landed, and whether the editor holds other text than was sent."""

    placed: Placed
    altered: bool = False  # the editor changed it on the way (e.g. a final newline)


@dataclass(frozen=True)
class Current:
    """A file's whole current text, as an edit starts from it; ``stat`` (disk) or the
    buffer's text itself is the precondition of the write that replaces it."""

    target: Path
    text: str
    in_buffer: bool
    stat: os.stat_result | None = None


class FileStore:
    """The files of one workspace as one tool call sees them (its context's ledger and
    the editor's documents)."""

    def __init__(self, workspace: Workspace, context: ToolContext) -> None:
        self._workspace = workspace
        self._ledger = context.ledger
        self._documents = context.documents
        self._journal = context.journal  # the ask's checkpoint: told about every change

    def shown(self, target: Path) -> str:
        return self._workspace.relative(target)

    # -- reading ---------------------------------------------------------------------

    async def read(self, target: Path, offset: int, max_lines: int, max_chars: int) -> Shown:
        """A window of ``target``; records its fingerprint. Raises ``BinaryFileError``,
        ``OffsetPastEndError`` or :class:`ToolError`."""
        buffer = await self._buffer(target)
        if buffer is not None:
            data = buffer.encode("utf-8", "surrogatepass")
            window, note = await asyncio.to_thread(
                self._read_buffer, target, data, offset, max_lines, max_chars
            )
            self._ledger.record(target, _whole("buffer", data))
            return Shown(window, [note] if note else [])
        window, fingerprint = await asyncio.to_thread(
            self._read_disk, target, offset, max_lines, max_chars
        )
        if fingerprint is None:
            self._ledger.forget(target)
            note = (
                f"[note: {self.shown(target)} kept changing while it was read; read it again "
                "before changing it]"
            )
            return Shown(window, [note])
        self._ledger.record(target, fingerprint)
        return Shown(window, [])

    def _read_disk(
        self, target: Path, offset: int, max_lines: int, max_chars: int
    ) -> tuple[LineWindow, Fingerprint | None]:
        try:
            with open_regular(target) as f:
                for _ in range(READ_ATTEMPTS):
                    before = FileStat.of(os.fstat(f.fileno()))
                    f.seek(0)
                    window = window_of(f, before.size, offset, max_lines, max_chars)
                    if FileStat.of(os.fstat(f.fileno())) == before:
                        return window, Fingerprint(
                            "disk", window.digest, window.start, window.end, window.whole, before
                        )
                return window, None
        except OSError as exc:
            raise os_error(exc, self.shown(target), "read") from None

    def _read_buffer(
        self, target: Path, data: bytes, offset: int, max_lines: int, max_chars: int
    ) -> tuple[LineWindow, str]:
        window = window_of(io.BytesIO(data), len(data), offset, max_lines, max_chars)
        on_disk = _disk_matches(target, data)
        if on_disk is None:
            return window, "[read from the editor's buffer: this file is not saved to disk yet]"
        if not on_disk:
            return window, (
                "[read from the editor's buffer: it has unsaved changes; commands run with "
                "bash see the saved file on disk]"
            )
        return window, ""

    # -- the whole text, for an edit -------------------------------------------------

    async def current(self, target: Path, *, max_bytes: int) -> Current:
        """``target``'s whole text, if the conversation may change it (the precondition
        holds); otherwise :class:`ToolError` saying why and what to do."""
        buffer = await self._buffer(target)
        if buffer is not None and self._editable():
            self._check_buffer(target, buffer)
            return Current(target, buffer, in_buffer=True)
        return await asyncio.to_thread(self._current_on_disk, target, max_bytes, buffer)

    def _current_on_disk(self, target: Path, max_bytes: int, buffer: str | None) -> Current:
        shown = self.shown(target)
        try:
            with open_regular(target) as f:
                st, data = _stable_read(f, max_bytes)
        except FileNotFoundError:
            raise ToolError(f"file not found: {shown} (use write_file to create a file)") from None
        except _TooLarge as exc:
            raise ToolError(
                f"{shown} is too large to edit ({exc.size}; the limit is {exc.limit})"
            ) from None
        except _Unstable:
            raise ToolError(f"{shown} kept changing while it was read; try again") from None
        except OSError as exc:
            raise os_error(exc, shown, "read") from None
        if looks_binary(data):
            raise ToolError(f"{shown} looks like a binary file (it contains NUL bytes); not edited")
        self._check_unsaved(target, buffer, data)
        self._check_disk(target, st, data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ToolError(
                f"{shown} is not valid UTF-8 (first bad byte on line {line}); edit_file "
                "only edits UTF-8 text, so nothing was changed"
            ) from None
        return Current(target, text, in_buffer=False, stat=st)

    # -- writing ---------------------------------------------------------------------

    async def replace(self, current: Current, new_text: str, *, label: str) -> Written:
        """Replace ``current`` (as loaded) with ``new_text``; where it landed."""
        data = utf8(new_text, "new_text")
        if current.in_buffer:
            return await self._edit_buffer(current.target, current.text, new_text, label)
        await asyncio.to_thread(self._write_disk, current.target, data, current.stat)
        return Written("disk")

    async def write(self, target: Path, content: str, *, label: str) -> Written:
        """Create ``target`` or replace all of it; where it landed."""
        data = utf8(content, "content")
        buffer = await self._buffer(target)
        if buffer is not None and self._editable():
            self._check_buffer(target, buffer)
            return await self._edit_buffer(target, buffer, content, label)
        if buffer is None and self._editable() and not os.path.lexists(target):
            created = await self._create_in_editor(target, content, data, label)
            if created is not None:
                return created
        await asyncio.to_thread(self._write_whole_on_disk, target, data, buffer)
        return Written("disk")

    async def _create_in_editor(
        self, target: Path, content: str, data: bytes, label: str
    ) -> Written | None:
        """A new file through the editor (ACP's fs/write_text_file); None: this editor
        does not create files."""
        documents = self._documents
        assert documents is not None
        await asyncio.to_thread(self._make_parents, target)
        if self._journal is not None:
            self._journal.will_write(target)  # absent before: a rewind removes it
        outcome = await documents.create_text(target, content, label=label)
        if outcome is None:
            return None
        if not outcome.applied:
            raise ToolError(f"{self.shown(target)} was not created: {outcome.reason}")
        held = content if outcome.held is None else outcome.held
        self._ledger.record(target, _whole("buffer", held.encode("utf-8", "surrogatepass")))
        return Written("saved" if outcome.saved else "buffer", held != content)

    def _write_whole_on_disk(self, target: Path, data: bytes, buffer: str | None) -> None:
        shown = self.shown(target)
        try:
            with open_regular(target) as f:
                st = os.fstat(f.fileno())
                old = f.read() if buffer is not None else None
                self._check_unsaved(target, buffer, old)
                self._check_disk(target, st, f)
        except (FileNotFoundError, NotADirectoryError):
            self._make_parents(target)
            self._write_disk(target, data, None)
            return
        except OSError as exc:
            raise os_error(exc, shown, "write") from None
        self._write_disk(target, data, st)

    def _write_disk(self, target: Path, data: bytes, expected: os.stat_result | None) -> None:
        shown = self.shown(target)
        try:
            if expected is not None and not os.access(target, os.W_OK):
                raise ToolError(f"permission denied: {shown} is not writable")
            if self._journal is not None:
                self._journal.will_write(target)
            written = atomic_write(target, data, expected=expected)
        except FileChangedError:
            if expected is None:
                raise ToolError(
                    f"{shown} was created by someone else while it was being written; nothing "
                    "was written. Read it with read_file before replacing it."
                ) from None
            raise ToolError(
                f"{shown} changed on disk while it was being written; nothing was written. "
                "Read it again and retry."
            ) from None
        except OSError as exc:
            raise self._write_error(exc, target) from None
        self._ledger.record(target, Fingerprint("disk", _sha256(data), 0, len(data), True, written))

    def _make_parents(self, target: Path) -> None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ToolError(
                f"cannot create the folder for {self.shown(target)}: a file is in the way "
                f"({self._blocking_file(target.parent)})"
            ) from None
        except OSError as exc:
            raise os_error(exc, self.shown(target), "write") from None

    def _blocking_file(self, folder: Path) -> str:
        for candidate in (folder, *folder.parents):
            try:
                if candidate.exists():
                    return f"{self.shown(candidate)} is a file"
            except OSError:
                break
        return "unknown"

    def _write_error(self, exc: OSError, target: Path) -> ToolError:
        if isinstance(exc, PermissionError) and os.access(target, os.W_OK):
            # The file is writable but its folder is not: the temporary file for the
            # atomic replace cannot be created there.
            return ToolError(
                f"permission denied: cannot write {self.shown(target)}: its folder "
                f"{self.shown(target.parent)} is not writable (an atomic write creates a "
                "temporary file next to the file)"
            )
        return os_error(exc, self.shown(target), "write")

    async def _edit_buffer(self, target: Path, base: str, new: str, label: str) -> Written:
        """Change an open buffer through the editor, on condition it is still ``base``."""
        documents = self._documents
        assert documents is not None
        outcome = await documents.apply_edits(target, base, [minimal_edit(base, new)], label=label)
        if not outcome.applied:
            raise ToolError(f"{self.shown(target)} was not changed: {outcome.reason}")
        held = outcome.held
        if held is None:
            # The editor reports its new text with didChange, usually just before or after
            # answering; wait briefly so the next read sees the agent's own edit.
            for _ in range(100):
                if await documents.read_text(target) == new:
                    break
                await asyncio.sleep(0.01)
            held = new
        if self._journal is not None:
            self._journal.edited_buffer(target, base, held)
        self._ledger.record(target, _whole("buffer", held.encode("utf-8", "surrogatepass")))
        return Written("saved" if outcome.saved else "buffer", held != new)

    # -- the precondition ------------------------------------------------------------

    def _check_buffer(self, target: Path, buffer: str) -> None:
        """The buffer is what this conversation last saw of the file (whole)."""
        recorded = self._recorded(target)
        data = buffer.encode("utf-8", "surrogatepass")
        if not (recorded.whole and recorded.end == len(data) and _sha256(data) == recorded.digest):
            raise self._changed(target)

    def _check_disk(self, target: Path, st: os.stat_result, content: BinaryIO | bytes) -> None:
        """The file (``st`` of an open descriptor, ``content`` its bytes or that
        descriptor) is what this conversation last saw of it."""
        recorded = self._recorded(target)
        if recorded.stat == FileStat.of(st):
            span = (recorded.start, recorded.end)  # same version by stat: the bytes shown
        elif recorded.whole and recorded.end - recorded.start == st.st_size:
            span = (0, st.st_size)  # another version: same content?
        else:
            raise self._changed(target)
        if _digest_of(content, *span) != recorded.digest:
            raise self._changed(target)

    def _check_unsaved(self, target: Path, buffer: str | None, on_disk: bytes | None) -> None:
        """A buffer with unsaved changes that the editor cannot change for us: writing
        the disk under it would be lost at the user's next save (or lose their text)."""
        if buffer is None or on_disk is None or buffer.encode("utf-8", "surrogatepass") == on_disk:
            return
        raise ToolError(
            f"{self.shown(target)} has unsaved changes in the editor, and this editor does not "
            "accept edits from agent-lsp (workspace/applyEdit); ask the user to save or close "
            "it first (nothing was written)"
        )

    def _recorded(self, target: Path) -> Fingerprint:
        recorded = self._ledger.recorded(target)
        if recorded is None:
            raise ToolError(
                f"{self.shown(target)} already exists and has not been read in this "
                "conversation; read it with read_file first, then change it (nothing was written)"
            )
        return recorded

    def _changed(self, target: Path) -> ToolError:
        return ToolError(
            f"{self.shown(target)} changed since you last read it (edited in the editor, saved, "
            "or written by another process); read it again with read_file before changing it "
            "(nothing was written)"
        )

    # -- the editor ------------------------------------------------------------------

    async def _buffer(self, target: Path) -> str | None:
        return None if self._documents is None else await self._documents.read_text(target)

    def _editable(self) -> bool:
        return self._documents is not None and self._documents.can_edit()


class _Unstable(Exception):
    """The file kept changing while it was read."""


class _TooLarge(Exception):
    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = human_size(size), human_size(limit)


def _stable_read(f: BinaryIO, max_bytes: int) -> tuple[os.stat_result, bytes]:
    """All of ``f`` and the ``fstat`` it was read at (the same before and after)."""
    for _ in range(READ_ATTEMPTS):
        st = os.fstat(f.fileno())
        if st.st_size > max_bytes:
            raise _TooLarge(st.st_size, max_bytes)
        f.seek(0)
        data = f.read()
        if FileStat.of(os.fstat(f.fileno())) == FileStat.of(st) and len(data) == st.st_size:
            return st, data
    raise _Unstable


def _whole(source: Literal["disk", "buffer"], data: bytes) -> Fingerprint:
    return Fingerprint(source, _sha256(data), 0, len(data), True)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest_of(content: BinaryIO | bytes, start: int, end: int) -> str:
    """sha256 of bytes ``[start, end)`` of ``content`` (bytes, or an open file read by
    position, so the caller's descriptor is the one checked)."""
    if isinstance(content, bytes):
        return _sha256(memoryview(content)[start:end])  # type: ignore[arg-type]
    digest = hashlib.sha256()
    fd, pos = content.fileno(), start
    while pos < end:
        chunk = os.pread(fd, min(_HASH_CHUNK, end - pos), pos)
        if not chunk:
            break  # shorter than recorded: the digest will differ
        digest.update(chunk)
        pos += len(chunk)
    return digest.hexdigest()


def _disk_matches(target: Path, data: bytes) -> bool | None:
    """Whether the file on disk holds ``data``; None if there is no file."""
    try:
        with open_regular(target) as f:
            if os.fstat(f.fileno()).st_size != len(data):
                return False
            return f.read() == data
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return False


def in_editor(written: Written) -> str:
    """What a write through the editor did, in words for the model (after the path)."""
    if written.placed == "saved":
        said = "through the editor, which saved it to disk"
    else:
        said = "in the editor (the change is in its buffer, unsaved; the user saves it)"
    if written.altered:
        said += (
            "; the editor's text differs from what was sent (e.g. a final newline it adds): "
            "read it again before quoting it"
        )
    return said
