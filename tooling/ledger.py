"""What a conversation has seen of each file: the basis of stale-edit protection.

File tools record a :class:`Fingerprint` of exactly what they showed the model (a
read) or wrote (a write), and a later write over that file is a compare-and-swap
against it: nothing written after the agent's read is overwritten blind. The ledger
only stores fingerprints; the file store (``tools.filestore``) takes and checks them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class FileStat:
    """Which file, and which version of it, as ``fstat`` of an open descriptor says."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStat:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class Fingerprint:
    """What the agent saw of one file: the bytes ``[start, end)`` of its content.

    ``digest`` is the sha256 of those bytes (the buffer's UTF-8 text for a buffer).
    ``whole``: they were all of the content, so the digest checks every byte.
    ``stat``: for the disk, the file's :class:`FileStat` while those bytes were read
    (or, after the agent's own write, of the file it wrote).
    """

    source: Literal["disk", "buffer"]
    digest: str
    start: int
    end: int
    whole: bool
    stat: FileStat | None = None


@dataclass
class FileLedger:
    seen: dict[Path, Fingerprint] = field(default_factory=dict)

    def record(self, path: Path, fingerprint: Fingerprint) -> None:
        self.seen[path] = fingerprint

    def recorded(self, path: Path) -> Fingerprint | None:
        return self.seen.get(path)

    def forget(self, path: Path) -> None:
        self.seen.pop(path, None)
