"""Text-file primitives for the filesystem tools.

- ``open_regular``: open for reading without ever blocking on a FIFO or device, and
  refuse anything that is not a regular file.
- ``window_of``: a bounded window of lines from a file of any size. Memory is
  O(window) and time O(offset + window): lines before ``offset`` are skipped by
  counting newlines in fixed-size chunks, an over-long line is cut and the rest of it
  skipped in chunks, and the remainder is counted only when that costs at most
  ``COUNT_REST_LIMIT`` bytes of reading.
  The window also carries the byte span it covers and the sha256 of those bytes, taken
  as they were read (what the model is shown is exactly what is fingerprinted).
- ``atomic_write``: replace a file's content so that a crash or error leaves either
  the old or the new content, never a mix and never a stray temporary file; a
  compare-and-swap against the version of the file the write replaces.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from tooling.ledger import FileStat

if TYPE_CHECKING:
    from hashlib import _Hash

# A NUL byte in the first SNIFF_BYTES marks a file as binary (git's heuristic). UTF-16
# and UTF-32 text contain NULs too and are therefore reported as binary.
SNIFF_BYTES = 8192
# Characters kept of one line; the rest is replaced by a marker.
MAX_LINE_CHARS = 2000
# Bytes read for one line before cutting it: enough for MAX_LINE_CHARS + 1 characters
# of any UTF-8 text, so whether a line is over the limit is always known.
_LINE_READ_BYTES = 4 * (MAX_LINE_CHARS + 1)
_CHUNK = 256 * 1024
# After the window, the rest of the file is counted only if it is at most this long.
COUNT_REST_LIMIT = 4 * 1024 * 1024


class BinaryFileError(ValueError):
    """The file looks binary (it has a NUL byte near its start)."""


class NotRegularFileError(OSError):
    """The path exists but is a FIFO, socket or device, which the tools never open."""


class OffsetPastEndError(ValueError):
    def __init__(self, total_lines: int) -> None:
        super().__init__(f"offset is past the end of the file ({total_lines} lines)")
        self.total_lines = total_lines


class FileChangedError(OSError):
    """The file on disk is not the version the write was meant to replace."""


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading; raise unless it is a regular file.

    ``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a
    writer; it has no effect on regular files.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(f"not a regular file: {path}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@dataclass(frozen=True)
class LineWindow:
    lines: list[str]
    first: int  # 1-based number of lines[0]
    more: bool  # at least one line follows the window
    remaining: int | None  # exact number of lines after the window, when counted
    hit_char_limit: bool  # the window stopped at max_chars, not at max_lines
    invalid_utf8: bool  # some bytes were not UTF-8 and show as U+FFFD
    file_size: int
    # The bytes the shown lines came from (over-long lines whole, newlines included) and
    # their sha256, hashed as they were read.
    start: int
    end: int
    digest: str

    @property
    def whole(self) -> bool:
        """The window covers every byte of the content."""
        return self.start == 0 and self.end == self.file_size

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1

    @property
    def total(self) -> int | None:
        return None if self.remaining is None else self.last + self.remaining


def window_of(f: BinaryIO, size: int, offset: int, max_lines: int, max_chars: int) -> LineWindow:
    """Lines ``offset .. offset + max_lines - 1`` of an open stream of ``size`` bytes (a
    file or a buffer), fewer if ``max_chars`` would be exceeded; at least one line is
    always returned if one exists.

    Lines are split on ``\\n`` with a trailing ``\\r`` dropped (CRLF shows as LF);
    lines longer than ``MAX_LINE_CHARS`` are cut with a marker.
    """
    if looks_binary(f.read(SNIFF_BYTES)):
        raise BinaryFileError("binary content")
    f.seek(0)
    skipped = _skip_lines(f, offset - 1)
    if skipped < offset - 1:
        raise OffsetPastEndError(skipped)

    lines: list[str] = []
    chars = 0
    invalid = False
    held_back = False  # a line was read but left out (char limit)
    start = end = f.tell()
    digest = hashlib.sha256()
    while len(lines) < max_lines:
        before = digest.copy()
        line, bad = _read_line(f, digest)
        if line is None:
            break
        if lines and chars + len(line) + 1 > max_chars:
            held_back = True
            digest = before  # not shown, so not part of the fingerprint
            break
        invalid = invalid or bad
        lines.append(line)
        chars += len(line) + 1
        end = f.tell()

    if not lines and offset > 1:
        raise OffsetPastEndError(offset - 1)

    more = held_back
    if not more and len(lines) == max_lines:
        more = bool(f.read(1))
        if more:
            f.seek(-1, os.SEEK_CUR)
    remaining = None
    if more:
        rest = size - f.tell()
        if rest <= COUNT_REST_LIMIT:
            remaining = _count_lines(f.read(rest)) + (1 if held_back else 0)
    return LineWindow(
        lines=lines,
        first=offset,
        more=more,
        remaining=remaining,
        hit_char_limit=held_back,
        invalid_utf8=invalid,
        file_size=size,
        start=start,
        end=end,
        digest=digest.hexdigest(),
    )


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _skip_lines(f: BinaryIO, n: int) -> int:
    """Move past ``n`` lines; return how many there were (fewer at end of file)."""
    if n <= 0:
        return 0
    counted = 0
    ends_with_newline = True
    while True:
        start = f.tell()
        chunk = f.read(_CHUNK)
        if not chunk:
            return counted + (0 if ends_with_newline else 1)
        found = chunk.count(b"\n")
        if counted + found >= n:
            pos = -1
            for _ in range(n - counted):
                pos = chunk.index(b"\n", pos + 1)
            f.seek(start + pos + 1)
            return n
        counted += found
        ends_with_newline = chunk.endswith(b"\n")


def _read_line(f: BinaryIO, digest: _Hash) -> tuple[str | None, bool]:
    """The next line (decoded, at most MAX_LINE_CHARS plus a marker) and whether it
    had invalid UTF-8; ``(None, False)`` at end of file. Every byte consumed, the
    skipped rest of an over-long line included, is fed to ``digest``."""
    raw = f.readline(_LINE_READ_BYTES)
    if not raw:
        return None, False
    digest.update(raw)
    complete = raw.endswith(b"\n") or len(raw) < _LINE_READ_BYTES
    body = raw[:-1] if raw.endswith(b"\n") else raw
    skipped = 0
    if complete:
        if body.endswith(b"\r"):
            body = body[:-1]
    else:
        skipped = _skip_rest_of_line(f, digest)
    text, bad = _decode(body, final=complete)
    if not complete or len(text) > MAX_LINE_CHARS:
        total = len(body) + skipped
        text = f"{text[:MAX_LINE_CHARS]}… [line truncated: it is {total:,} bytes long]"
    return text, bad


def _skip_rest_of_line(f: BinaryIO, digest: _Hash) -> int:
    """Move past the rest of the current line and its newline; return its length."""
    skipped = 0
    while True:
        chunk = f.read(_CHUNK)
        if not chunk:
            return skipped
        end = chunk.find(b"\n")
        if end >= 0:
            digest.update(chunk[: end + 1])
            f.seek(end + 1 - len(chunk), os.SEEK_CUR)
            return skipped + end
        digest.update(chunk)
        skipped += len(chunk)


def _decode(data: bytes, *, final: bool) -> tuple[str, bool]:
    """UTF-8 decode; when not ``final`` an incomplete trailing character (cut by the
    line limit) is dropped rather than reported as invalid."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=final), False
    except UnicodeDecodeError:
        return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=final), True


def atomic_write(path: Path, data: bytes, *, expected: os.stat_result | None) -> FileStat:
    """Replace ``path``'s content with ``data`` atomically, if it is still ``expected``.

    A temporary file in the same folder is written, flushed and fsynced, given the
    replaced file's permission bits (and owner, where allowed), then renamed over
    ``path``; the folder is fsynced so the rename is durable. A new file gets the usual
    ``0o666 & ~umask`` mode. On any error the temporary file is removed. ``path`` must
    already be symlink-resolved: a symlink is never replaced, its target is. Hard
    links to the old file keep the old content (a rename cannot update them).

    The precondition, checked as late as possible (after the data is on disk, right
    before the rename): ``expected`` is the ``fstat`` of the file this write replaces,
    and ``path`` must still have its device, inode, size and mtime; ``None`` means a
    new file, and nothing may exist at ``path``. Otherwise ``FileChangedError`` is
    raised and nothing is written. Residual race: POSIX has no compare-and-rename, so
    a write by another process between that last ``stat`` and the rename (a window of
    microseconds) is replaced; and a same-size in-place write within one tick of a
    coarse mtime clock is invisible to ``stat`` (the file store's digests cover the
    bytes the agent was shown). A new file is linked into place, which fails if
    anything appeared there; where hard links are unsupported it is renamed after a
    last check.

    Returns the :class:`FileStat` of the written file (``fstat`` of the temporary
    file after its fsync; the rename keeps device, inode, size and mtime).
    """
    tmp = path.parent / f".{path.name[:200]}.{secrets.token_hex(6)}.tmp"
    # Without O_EXCL a planted symlink at tmp could redirect the write; 0o666 lets the
    # kernel apply the umask to a brand-new file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            if expected is not None:
                if (expected.st_uid, expected.st_gid) != (os.getuid(), os.getgid()):
                    with contextlib.suppress(OSError):
                        os.fchown(fd, expected.st_uid, expected.st_gid)
                os.fchmod(fd, stat.S_IMODE(expected.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            written = FileStat.of(os.fstat(fd))
        finally:
            os.close(fd)
        if expected is None:
            _link_new(tmp, path)
        else:
            if not _same_file_state(path, expected):
                raise FileChangedError(errno.ESTALE, "changed on disk", str(path))
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return written


def _link_new(tmp: Path, path: Path) -> None:
    """Put ``tmp`` at ``path`` only if nothing is there (``link`` refuses to replace)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileChangedError(errno.EEXIST, "created meanwhile", str(path)) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if os.path.lexists(path):  # no hard links here: check, then rename
            raise FileChangedError(errno.EEXIST, "created meanwhile", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _same_file_state(path: Path, expected: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return FileStat.of(now) == FileStat.of(expected)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename durable; some filesystems cannot open or fsync a directory.
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
