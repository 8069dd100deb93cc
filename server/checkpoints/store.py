"""The checkpoint store of one workspace folder: records, session logs, locks.

Layout (every folder 0700, every file private); this module alone knows it::

    $XDG_STATE_HOME/agent-lsp/checkpoints/<sha256 of the folder path, 16 hex>/
        folder              the workspace folder's path
        git/                the shadow repository (index, objects, and per checkpoint
                            refs/agent-lsp/<session>/<checkpoint>/{before,after})
        blobs/<id>          contents the change journal captured
        sessions/<id>.json  one session's checkpoints, in ask order
        running/<id>        held (flock) by the server recording that ask
        lock                serialises snapshots and log edits across server processes

Session logs on disk are the truth, since another server process (a terminal
``agent-lsp ask``, a second editor window) may use the same folder: every change
loads, edits and saves a log under the folder's lock. Without git there is no shadow
repository: what would use it does nothing (snapshots are then never asked for).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from .file_states import BlobDir, FileState, from_tree
from .ignores import inherited_excludes
from .shadow_git import GitError, ShadowRepo, Snapshot

log = logging.getLogger(__name__)

LOCK_TIMEOUT = 180.0
REF_PREFIX = "refs/agent-lsp/"
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

T = TypeVar("T")
Coverage = Literal["all", "fileTools"]
CheckpointState = Literal["running", "done", "interrupted"]


class CheckpointError(Exception):
    """An unknown session or checkpoint (the client named something that is not there)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# --- records -------------------------------------------------------------------------


@dataclass
class FileChange:
    path: str  # relative to the folder, "/"-separated
    before: FileState
    after: FileState
    added: int | None = None
    removed: int | None = None

    @property
    def status(self) -> str:
        if not self.before.exists:
            return "added"
        if not self.after.exists:
            return "deleted"
        return "modified"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "added": self.added,
            "removed": self.removed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileChange:
        return cls(
            data["path"],
            FileState.from_json(data["before"]),
            FileState.from_json(data["after"]),
            data.get("added"),
            data.get("removed"),
        )


@dataclass
class Checkpoint:
    """One ask: the folder before it, and what it changed."""

    id: str
    prompt: str
    time: float
    # sha256 of the ask's request message, to find it in the conversation (compaction
    # moves messages); None when the ask left no trace there (it failed unanswered).
    request_digest: str | None
    coverage: Coverage = "all"
    state: CheckpointState = "running"
    before_tree: str | None = None
    after_tree: str | None = None
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "time": self.time,
            "requestDigest": self.request_digest,
            "coverage": self.coverage,
            "state": self.state,
            "beforeTree": self.before_tree,
            "afterTree": self.after_tree,
            "changes": [c.to_json() for c in self.changes],
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            id=str(data["id"]),
            prompt=data["prompt"],
            time=float(data["time"]),
            request_digest=data.get("requestDigest"),
            coverage=data.get("coverage", "all"),
            state=data.get("state", "done"),
            before_tree=data.get("beforeTree"),
            after_tree=data.get("afterTree"),
            changes=[FileChange.from_json(c) for c in data.get("changes", [])],
            notes=list(data.get("notes", [])),
        )

    def oids(self) -> set[str]:
        return {s.oid for c in self.changes for s in (c.before, c.after) if s.oid}


@dataclass
class SessionLog:
    """One session's checkpoints in ask order, kept as one JSON file."""

    path: Path
    session_id: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    next_number: int = 1

    def find(self, checkpoint_id: str) -> int:
        for index, checkpoint in enumerate(self.checkpoints):
            if checkpoint.id == checkpoint_id:
                return index
        raise CheckpointError(
            "checkpointId", f"no checkpoint {checkpoint_id!r} in session {self.session_id}"
        )

    def put(self, checkpoint: Checkpoint) -> None:
        """Replace the checkpoint with the same id (or add it)."""
        for index, existing in enumerate(self.checkpoints):
            if existing.id == checkpoint.id:
                self.checkpoints[index] = checkpoint
                return
        self.checkpoints.append(checkpoint)

    def save(self) -> None:
        data = {
            "version": 1,
            "sessionId": self.session_id,
            "next": self.next_number,
            "checkpoints": [c.to_json() for c in self.checkpoints],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".session-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path, session_id: str) -> SessionLog:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            checkpoints = [Checkpoint.from_json(c) for c in data["checkpoints"]]
            return cls(path, session_id, checkpoints, int(data.get("next", 1)))
        except FileNotFoundError:
            return cls(path, session_id)
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("unreadable checkpoint log %s: starting it over", path)
            return cls(path, session_id)


# --- one folder ----------------------------------------------------------------------


def default_checkpoint_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "agent-lsp" / "checkpoints"


class FolderCheckpoints:
    """The checkpoints of one workspace folder: shadow repository, blobs, session logs.

    Session logs on disk are the truth (another server process may use the same
    folder): each change loads, edits and saves a log under the folder's lock.
    """

    def __init__(self, root: Path, directory: Path, git: str | None, state_root: Path) -> None:
        self.root = root
        # The layout's parts: only this module (and tests looking at the disk) use them.
        self.directory = directory
        self.blobs = BlobDir(directory / "blobs")
        self.repo = ShadowRepo(git, directory / "git", root, directory) if git else None
        self._state_root = state_root
        self._lock = asyncio.Lock()
        self._git_lock = asyncio.Lock()
        self._excludes: tuple[str, ...] | None = None

    @classmethod
    def of(cls, root: Path, state_root: Path, git: str | None) -> FolderCheckpoints:
        """The store of workspace folder ``root`` among those under ``state_root``."""
        digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
        return cls(root, state_root / digest, git, state_root)

    @property
    def uses_git(self) -> bool:
        """Whether this store snapshots the folder (else only the journal's changes)."""
        return self.repo is not None

    async def open(self) -> None:
        """Make the store's private folder and name the workspace folder in it."""
        await asyncio.to_thread(self._open)

    def _open(self) -> None:
        private_dir(self.directory)
        name = self.directory / "folder"
        if not name.exists():
            name.write_text(str(self.root) + "\n")

    # -- session logs ------------------------------------------------------------------

    def _log_path(self, session_id: str) -> Path:
        if not _SESSION_ID.fullmatch(session_id):
            raise CheckpointError("sessionId", f"not a session id: {session_id!r}")
        return self.directory / "sessions" / f"{session_id}.json"

    async def read(self, session_id: str) -> SessionLog:
        path = self._log_path(session_id)
        return await asyncio.to_thread(SessionLog.load, path, session_id)

    async def edit(self, session_id: str, change: Callable[[SessionLog], T]) -> T:
        """Load a session's log, apply ``change`` (in a worker thread), save it."""
        path = self._log_path(session_id)

        def run() -> T:
            session = SessionLog.load(path, session_id)
            result = change(session)
            session.save()
            return result

        async with self.locked():
            return await asyncio.to_thread(run)

    async def remove_session(self, session_id: str) -> list[Checkpoint]:
        """Delete a session's log; returns the checkpoints it held."""
        path = self._log_path(session_id)

        def run() -> list[Checkpoint]:
            dropped = SessionLog.load(path, session_id).checkpoints
            path.unlink(missing_ok=True)
            return dropped

        async with self.locked():
            return await asyncio.to_thread(run)

    async def drop_checkpoints(
        self, choose: Callable[[list[tuple[str, Checkpoint]]], Iterable[tuple[str, Checkpoint]]]
    ) -> list[tuple[str, Checkpoint]]:
        """Drop the checkpoints ``choose`` picks out of all this folder's (session id,
        checkpoint) pairs, from every session's log; returns the dropped ones."""

        def run() -> list[tuple[str, Checkpoint]]:
            sessions = self._load_all()
            every = [(sid, c) for sid, s in sessions.items() for c in s.checkpoints]
            dropped = list(choose(every))
            for sid in {sid for sid, _ in dropped}:
                gone = {c.id for s, c in dropped if s == sid}
                session = sessions[sid]
                session.checkpoints = [c for c in session.checkpoints if c.id not in gone]
                session.save()
            return dropped

        async with self.locked():
            return await asyncio.to_thread(run)

    def has_session(self, session_id: str) -> bool:
        try:
            return self._log_path(session_id).is_file()
        except CheckpointError:
            return False

    def session_ids(self) -> list[str]:
        try:
            paths = list((self.directory / "sessions").glob("*.json"))
        except OSError:
            return []
        return [p.stem for p in paths if _SESSION_ID.fullmatch(p.stem)]

    def _load_all(self) -> dict[str, SessionLog]:
        return {sid: SessionLog.load(self._log_path(sid), sid) for sid in self.session_ids()}

    def locked(self) -> contextlib.AbstractAsyncContextManager[None]:
        """This folder's session logs and blobs, exclusively: in this process and across
        processes."""
        return self._exclusive(self._lock, "lock")

    def git_locked(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The shadow repository's index, exclusively. A lock of its own: a snapshot that
        git is slow to take (a huge first tree, a git that hangs) must not hold up the
        session logs, which every ask's start and end edits."""
        return self._exclusive(self._git_lock, "git.lock")

    @contextlib.asynccontextmanager
    async def _exclusive(self, lock: asyncio.Lock, name: str) -> AsyncIterator[None]:
        async with lock:
            fd = await _acquire(self.directory / name)
            try:
                yield
            finally:
                _release(fd)

    # -- snapshots (the shadow repository) ---------------------------------------------

    async def prepare(self) -> None:
        """Make the shadow repository ready for a snapshot (raises GitError): what the
        first snapshot of a process would do first, so the warm-up can do it instead."""
        if self.repo is None:
            return
        async with self.git_locked():
            await self._ready_locked()

    async def snapshot(self) -> Snapshot:
        """Snapshot the folder into the shadow repository (raises GitError)."""
        assert self.repo is not None
        async with self.git_locked():
            await self._ready_locked()
            return await self.repo.snapshot()

    async def _ready_locked(self) -> None:
        assert self.repo is not None
        await asyncio.to_thread(private_dir, self.directory)
        excludes = tuple(await asyncio.to_thread(inherited_excludes, self.root, self._state_root))
        await self.repo.ensure(excludes)
        if excludes != self._excludes:
            # Files that the rules now exclude leave the snapshots (git add keeps what
            # it already tracks); checked once per process and on each change.
            await self.repo.untrack_ignored()
            self._excludes = excludes

    async def changes_between(self, before_tree: str, after_tree: str) -> list[FileChange]:
        """What differs between two snapshots' trees (raises GitError)."""
        assert self.repo is not None
        raw = await self.repo.diff(before_tree, after_tree)
        return [FileChange(r.path, from_tree(r.before), from_tree(r.after)) for r in raw]

    async def paths_in(self, tree: str, paths: Iterable[str]) -> set[str]:
        """Which of ``paths`` a snapshot's tree holds (raises GitError)."""
        assert self.repo is not None
        return set(await self.repo.entries(tree, paths))

    async def keep_trees(self, session_id: str, checkpoint: Checkpoint) -> None:
        """Keep the checkpoint's snapshots (those it has) from garbage collection, by a
        ref each (raises GitError)."""
        if self.repo is None:
            return
        trees = (("before", checkpoint.before_tree), ("after", checkpoint.after_tree))
        refs: dict[str, str | None] = {
            _ref(session_id, checkpoint.id, end): tree for end, tree in trees if tree
        }
        await self.repo.set_refs(refs)

    async def release_trees(self, dropped: list[tuple[str, Checkpoint]]) -> None:
        """Drop the refs of the dropped checkpoints' snapshots: their git objects go
        with the next :meth:`collect` unless another checkpoint shares them."""
        if self.repo is None or not dropped:
            return
        gone = {_ref(sid, c.id, end) for sid, c in dropped for end in ("before", "after")}
        with contextlib.suppress(GitError):
            existing = await self.repo.refs(REF_PREFIX)
            await self.repo.set_refs({ref: None for ref in gone if ref in existing})

    async def drop_unused_blobs(self) -> None:
        """Delete the journal's blobs no checkpoint left refers to."""
        async with self.locked():
            await asyncio.to_thread(self._keep_live_blobs)

    def _keep_live_blobs(self) -> None:
        live: set[str] = set()
        for session in self._load_all().values():
            for checkpoint in session.checkpoints:
                live |= checkpoint.oids()
        self.blobs.keep_only(live)

    async def pack(self) -> None:
        """Pack the shadow repository's loose objects when there are many (raises GitError)."""
        if self.repo is not None:
            await self.repo.pack()

    async def collect(self) -> None:
        """Reclaim the space of git objects no checkpoint refers to (raises GitError)."""
        if self.repo is not None:
            await self.repo.collect()

    # -- contents ----------------------------------------------------------------------

    async def keep_content(self, state: FileState, data: bytes) -> None:
        """Keep a content the snapshots do not hold (the journal saw it)."""
        assert state.oid
        await asyncio.to_thread(self.blobs.put, state.oid, data)

    async def contents(
        self, states: list[FileState], *, max_size: int | None = None
    ) -> dict[str, bytes]:
        """Bytes by blob id, from the journal's blobs or the shadow repository; ids
        over ``max_size`` bytes (or missing) are left out."""
        found: dict[str, bytes] = {}
        missing: list[str] = []
        for state in states:
            if not state.oid or state.oid in found or state.oid in missing:
                continue
            data = await asyncio.to_thread(self.blobs.get, state.oid, max_size)
            if data is not None:
                found[state.oid] = data
            elif not self.blobs.has(state.oid):
                missing.append(state.oid)
        if missing and self.repo is not None:
            with contextlib.suppress(GitError):
                found.update(await self.repo.read_blobs(missing, max_size=max_size))
        return found

    # -- asks in progress (a lock file each, held while the ask runs) -----------------

    def claim_running(self, session_id: str, checkpoint_id: str) -> int:
        path = self._running_path(session_id, checkpoint_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def release_running(self, session_id: str, checkpoint_id: str, fd: int) -> None:
        self._running_path(session_id, checkpoint_id).unlink(missing_ok=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def is_running(self, session_id: str, checkpoint_id: str) -> bool:
        """Whether an ask of some server process still records this checkpoint."""
        try:
            fd = os.open(self._running_path(session_id, checkpoint_id), os.O_RDWR)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops our lock, if we got it
        return False

    def _running_path(self, session_id: str, checkpoint_id: str) -> Path:
        return self.directory / "running" / f"{session_id}.{checkpoint_id}".replace("/", ".")


def _ref(session_id: str, checkpoint_id: str, end: str) -> str:
    return f"{REF_PREFIX}{session_id}/{checkpoint_id}/{end}"


async def _acquire(path: Path) -> int:
    """The folder's lock file, locked (waiting in a thread). Cancelled meanwhile, the
    thread may still get the lock: it is then released, never left held."""
    pending = asyncio.get_running_loop().run_in_executor(None, _flock, path, LOCK_TIMEOUT)
    try:
        return await asyncio.shield(pending)
    except asyncio.CancelledError:
        pending.add_done_callback(
            lambda done: None if done.cancelled() or done.exception() else _release(done.result())
        )
        raise


def _release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def _flock(path: Path, timeout: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise GitError(f"the checkpoint store {path.parent} stayed locked") from None
            time.sleep(0.02)


def private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
