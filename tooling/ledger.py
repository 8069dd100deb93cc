"""What a conversation has seen of each file: the basis of stale-edit protection.

File tools record a :class:`Fingerprint` of what they showed the model (a read) or
wrote (a write), and refuse to overwrite a file whose current state does not match
the recorded one: nothing written after the agent's read is overwritten blind.
The ledger only stores fingerprints; the file store decides what they hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Fingerprint:
    """What the agent saw of one file (or buffer), as the file store recorded it."""

    source: str  # "disk" or "buffer"
    digest: str  # sha256 of the bytes shown or written


@dataclass
class FileLedger:
    seen: dict[Path, Fingerprint] = field(default_factory=dict)

    def record(self, path: Path, fingerprint: Fingerprint) -> None:
        self.seen[path] = fingerprint

    def recorded(self, path: Path) -> Fingerprint | None:
        return self.seen.get(path)

    def forget(self, path: Path) -> None:
        self.seen.pop(path, None)
