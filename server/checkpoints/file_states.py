"""What one path holds at one moment, and how to read, keep, compare and restore it.

A :class:`FileState` names content by its git blob id, whether the content came from
a shadow-git snapshot, from the disk (the change journal) or from an editor's buffer,
so states from any source compare directly. Contents the journal captured are kept
as files in a :class:`BlobDir`; snapshot contents live in the shadow repository.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from tooling.regular_files import SkippedFile, read_regular

from .shadow_git import SYMLINK, TreeEntry, blob_id

Kind = Literal["absent", "file", "link"]
Source = Literal["disk", "buffer"]

MAX_CAPTURE_BYTES = 64 * 1024 * 1024  # larger files are not copied by the journal
MAX_DIFF_BYTES = 2 * 1024 * 1024  # larger contents get no line diff

ABSENT_MODE = 0


@dataclass(frozen=True)
class FileState:
    kind: Kind
    # Permission bits of a file (git keeps only 0o644 / 0o755; the journal the exact
    # bits), 0 for links and absent paths.
    mode: int = ABSENT_MODE
    oid: str = ""  # git blob id of the content ("" when absent or not captured)
    source: Source = "disk"

    @property
    def exists(self) -> bool:
        return self.kind != "absent"

    @property
    def executable(self) -> bool:
        return bool(self.mode & 0o111)

    def same_content(self, other: FileState) -> bool:
        """Same kind and bytes (the executable bit counts when both are on disk)."""
        if self.kind != other.kind or self.oid != other.oid:
            return False
        if self.kind == "file" and self.source == other.source == "disk":
            return self.executable == other.executable
        return True

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileState:
        return cls(
            kind=data["kind"], mode=int(data["mode"]), oid=data["oid"], source=data["source"]
        )


ABSENT = FileState("absent")


def from_tree(entry: TreeEntry | None) -> FileState:
    if entry is None:
        return ABSENT
    if entry.mode == SYMLINK:
        return FileState("link", 0, entry.oid)
    return FileState("file", 0o755 if entry.mode & 0o111 else 0o644, entry.oid)


def from_text(text: str, mode: int = 0o644) -> tuple[FileState, bytes]:
    data = text.encode("utf-8", "surrogatepass")
    return FileState("file", mode, blob_id(data), "buffer"), data


def read_disk(path: Path, *, limit: int = MAX_CAPTURE_BYTES) -> tuple[FileState, bytes | None]:
    """The state of ``path`` on disk and its bytes (None if over ``limit``: then the
    oid is empty and the content cannot be restored)."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT, b""
    if stat.S_ISLNK(st.st_mode):
        target = os.fsencode(os.readlink(path))
        return FileState("link", 0, blob_id(target)), target
    if not stat.S_ISREG(st.st_mode):
        return ABSENT, b""  # a folder or a device: not a file we keep
    mode = stat.S_IMODE(st.st_mode)
    if st.st_size > limit:
        return FileState("file", mode, ""), None
    try:
        found = read_regular(path, limit + 1, follow_symlinks=False)
    except SkippedFile:  # swapped for a FIFO, a device or a link since the lstat
        return ABSENT, b""
    if found.cut:
        return FileState("file", mode, ""), None
    return FileState("file", mode, blob_id(found.data)), found.data


class BlobDir:
    """Contents captured by the journal, one private file per blob id."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, oid: str, data: bytes) -> None:
        path = self.root / oid
        if path.exists():
            return
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".blob-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, oid: str, max_size: int | None = None) -> bytes | None:
        """The blob's bytes; None if it is not here or is over ``max_size``."""
        try:
            with open(self.root / oid, "rb") as handle:
                if max_size is not None and os.fstat(handle.fileno()).st_size > max_size:
                    return None
                return handle.read()
        except OSError:
            return None

    def has(self, oid: str) -> bool:
        return (self.root / oid).is_file()

    def keep_only(self, oids: set[str]) -> None:
        with contextlib.suppress(FileNotFoundError):
            for path in self.root.iterdir():
                if path.name not in oids:
                    path.unlink(missing_ok=True)


def restore(path: Path, state: FileState, data: bytes | None, *, root: Path) -> None:
    """Put ``state`` at ``path``: write the bytes (atomically, with its mode), make the
    link, or remove the file (and the folders that leaves empty, below ``root``, the
    workspace, which is never removed). Raises OSError; ``data`` is None only for ABSENT."""
    if state.kind == "absent":
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _prune_empty_parents(path.parent, root)
        return
    assert data is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    if state.kind == "link":
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.symlink(os.fsdecode(data), path)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".restore")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode_for(path, state))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path, state: FileState) -> int:
    """The exact bits when the journal kept them; for a git state (0o644/0o755, which
    is all git records) the file's current bits with the executable bit as recorded,
    or the usual bits under the umask for a file that has to be created."""
    if state.mode not in (0o644, 0o755):
        return state.mode
    try:
        st = path.lstat()
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        return (0o777 if state.executable else 0o666) & ~_umask()
    current = stat.S_IMODE(st.st_mode)
    if state.executable:
        return current | ((current & 0o444) >> 2)  # x wherever r is set
    return current & ~0o111


def _umask() -> int:
    """The process umask, read without setting it where the system allows."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o022)  # elsewhere: set and put back (briefly visible to threads)
    os.umask(umask)
    return umask


def _prune_empty_parents(folder: Path, root: Path) -> None:
    """Remove folders left empty by a removal, as ``git rm`` does (stops at the
    first folder that is not empty, or cannot be removed, and at ``root``: the workspace
    stays, empty or not)."""
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def line_stats(before: bytes | None, after: bytes | None) -> tuple[int, int] | None:
    """(lines added, lines removed), or None for binary or very large contents."""
    old, new = _lines(before), _lines(after)
    if old is None or new is None:
        return None
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def unified_diff(path: str, before: bytes | None, after: bytes | None) -> str | None:
    """A unified diff (``--- a/path``, ``+++ b/path``), or None for binary contents."""
    old, new = _lines(before), _lines(after)
    if old is None or new is None:
        return None
    lines = difflib.unified_diff(
        old,
        new,
        fromfile=f"a/{path}" if before is not None else "/dev/null",
        tofile=f"b/{path}" if after is not None else "/dev/null",
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def text_of(data: bytes | None) -> str | None:
    """``data`` as text if it is (UTF-8, no NUL), else None."""
    if data is None or len(data) > MAX_DIFF_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:  # absent
        return []
    text = text_of(data)
    return None if text is None else text.splitlines(keepends=True)
