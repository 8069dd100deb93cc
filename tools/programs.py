"""Programs the server itself runs (git), found by absolute path outside what the agent writes.

``PATH`` may hold a folder the agent can write: an editor started from an activated
``.venv`` puts ``WORKSPACE/.venv/bin`` first, and a bash call can plant ``git`` there. So
a program is looked for only in ``PATH`` entries that are absolute and lie outside every
folder the agent may write: the workspace folders, the ``writableRoots``, and the temp
dir the sandbox makes each call's private ``$TMPDIR`` in (``tempfile.gettempdir()``), nor
``/tmp`` and ``/dev/shm``, which anyone may write. A program whose real path
(symlinks resolved) lies in one of them is skipped too. ``PATH`` is read once, at the
first look-up (the server's start); each look-up is a few ``stat`` calls, kept.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

# Anyone may write these: a program found there could be anybody's.
SHARED_TEMP = ("/tmp", "/dev/shm")


@functools.cache
def _path_entries() -> tuple[str, ...]:
    """The server's ``PATH`` as it started (read once)."""
    return tuple(os.environ.get("PATH", os.defpath).split(os.pathsep))


# Every folder the agent has been given to write in this process (the workspace folders and
# writable roots of every tool assembly): a program the server runs is never looked up
# there, whichever folder it runs for (the checkpoints of one folder, with another
# folder's ``.venv/bin`` or a writable root's ``bin`` on PATH). Only ever grows.
_agent_writable: set[str] = set()


def mark_agent_writable(folders: Iterable[Path]) -> None:
    """Folders the agent may write from now on (called where the tools are assembled)."""
    added = {os.path.realpath(str(f)) for f in folders} - _agent_writable
    if added:
        _agent_writable.update(added)


def untrusted_folders(writable: Iterable[Path] = ()) -> tuple[str, ...]:
    """``writable`` (the workspace folders and writable roots), every folder the agent was
    given to write so far, and the temp dirs, as real paths."""
    folders = [*map(str, writable), *sorted(_agent_writable), tempfile.gettempdir(), *SHARED_TEMP]
    return tuple(dict.fromkeys(os.path.realpath(f) for f in folders))


def find(name: str, writable: Iterable[Path] = (), *, path: str | None = None) -> str | None:
    """The absolute path of program ``name`` on the server's ``PATH`` (or ``path``, read
    now), skipping entries that are relative or inside ``writable`` (workspace folders,
    writable roots) or a temp dir; None when there is none."""
    entries = _path_entries() if path is None else tuple(path.split(os.pathsep))
    return _find(name, entries, untrusted_folders(writable))


def trusted_path(writable: Iterable[Path] = ()) -> str:
    """The server's ``PATH`` without the entries :func:`find` skips: for a program the
    server runs that may itself look programs up."""
    untrusted = untrusted_folders(writable)
    kept = [
        entry
        for entry in _path_entries()
        if entry and os.path.isabs(entry) and not _inside(os.path.realpath(entry), untrusted)
    ]
    return os.pathsep.join(kept) or os.defpath


def git(writable: Iterable[Path] = ()) -> str | None:
    """git, as :func:`find` finds it."""
    return find("git", writable)


@functools.lru_cache(maxsize=64)
def _find(name: str, entries: tuple[str, ...], untrusted: tuple[str, ...]) -> str | None:
    for entry in entries:
        if not entry or not os.path.isabs(entry):
            continue  # relative: it names a folder of the current one (the workspace)
        folder = os.path.realpath(entry)
        if _inside(folder, untrusted):
            continue
        candidate = os.path.join(folder, name)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if _inside(os.path.realpath(candidate), untrusted):
            continue  # a link to a program the agent could have written
        return candidate
    return None


def _inside(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
