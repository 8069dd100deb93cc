"""Reading a file the server opens on its own initiative, which a tool call may have planted.

Instruction files, skills, prompt files, MCP definitions, ``.git/HEAD`` and the other git
metadata the environment block reads, ignore files, the editor's active file: each is read
through :func:`read_regular`, which never blocks and never reads without end. The file is
opened ``O_NONBLOCK`` (opening a FIFO returns at once instead of waiting for a writer),
checked with ``fstat`` *after* the open (no race with a swap between a check and the open),
and read up to a cap. A FIFO, socket, device or folder is refused with a reason the caller
puts where the file would have appeared; ``follow_symlinks=False`` also refuses a symlink
(``O_NOFOLLOW``) where the caller has no reason to follow one.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path


class SkippedFile(OSError):
    """The file exists but is not read: its ``reason`` says why ("not a regular file (a FIFO)")."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(errno.EINVAL, reason, str(path))
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class RegularFile:
    data: bytes  # at most the ``limit`` asked for
    size: int  # the whole file's size, from fstat

    @property
    def cut(self) -> bool:
        return self.size > len(self.data)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a plain file"


def read_regular(path: Path | str, limit: int, *, follow_symlinks: bool = True) -> RegularFile:
    """At most ``limit`` bytes of the regular file ``path``, and its size.

    Raises :class:`FileNotFoundError` / :class:`NotADirectoryError` when it is absent,
    :class:`SkippedFile` when it is something else than a regular file (or a symlink, with
    ``follow_symlinks=False``), and :class:`OSError` when it cannot be opened or read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise SkippedFile(path, "a symbolic link") from None
        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, a FIFO with no reader
            raise SkippedFile(path, "not a regular file") from None
        raise
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkippedFile(path, f"not a regular file ({kind_of(info.st_mode)})")
        chunks, left = [], max(limit, 0)
        while left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    return RegularFile(data, max(info.st_size, len(data)))


def read_text_file(path: Path | str, limit: int, *, follow_symlinks: bool = True) -> str:
    """The whole UTF-8 text of the regular file ``path``; :class:`SkippedFile` also when it
    is larger than ``limit`` bytes, :class:`UnicodeDecodeError` when it is not UTF-8."""
    found = read_regular(path, limit, follow_symlinks=follow_symlinks)
    if found.cut:
        raise SkippedFile(path, f"larger than {limit:,} bytes")
    return found.data.decode("utf-8")
