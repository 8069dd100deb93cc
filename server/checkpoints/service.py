"""Checkpoints: what each ask changed, kept so it can be shown and undone.

Protocol-free (the language server maps ``agent/checkpoints``, ``agent/diff`` and
``agent/rewind`` onto :class:`CheckpointService`; tests drive it directly).

Before an ask can change anything, its workspace folder is snapshotted into a shadow
git repository (``server.checkpoints.shadow_git``) kept under the state directory, one per folder;
the snapshot runs while the model thinks, and the first tool that may change files
waits for it. When the ask ends a second snapshot is taken; the difference is what
the ask changed, whichever tool changed it. The file tools' journal adds what the
snapshots cannot see: edits that went into open editor buffers, git-ignored files and
nested repositories, and -- without git -- every ``write_file``/``edit_file`` change
(``bash`` changes are then not covered, and each checkpoint says so).

The store of each folder is ``server.checkpoints.store``: it alone knows the layout on
disk (refs, session logs, blobs, locks, the shadow repository); this module asks it.

Storage is bounded: at most ``MAX_PER_FOLDER`` checkpoints per folder (the oldest
dropped, whichever session they belong to), none older than ``RETENTION_DAYS``, and
a session's checkpoints are deleted when the session ends; objects nothing refers to
any more are garbage-collected in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools import programs

from .file_states import (
    MAX_DIFF_BYTES,
    text_of,
    unified_diff,
)
from .recorder import SNAPSHOT_WAIT, AskRecorder, content_of, snapshot_within
from .rewind import RewindEditor, RewindOutcome, rewind_files
from .shadow_git import GitError
from .store import Checkpoint, FolderCheckpoints, SessionLog, default_checkpoint_dir

log = logging.getLogger(__name__)

MAX_PER_FOLDER = 100
RETENTION_DAYS = 30
# Seconds the warm-up waits for a folder's store to be made ready (the shadow repository
# created or checked); past it that goes on in the background, and a git that never
# answers costs the first ask at most its snapshot wait (``SNAPSHOT_WAIT``).
PREPARE_WAIT = 1.0
PROMPT_CHARS = 120
NO_GIT_NOTE = (
    "git is not installed: checkpoints record only what write_file and edit_file "
    "change; changes made by bash commands are not covered"
)


# --- the service ---------------------------------------------------------------------


@dataclass
class FileDiff:
    path: str
    status: str
    diff: str | None  # None: binary, or too large to show
    before: str | None = None  # whole texts, when asked for (None: absent or not text)
    after: str | None = None


class CheckpointService:
    """Checkpoints of every folder the server acts in (one store per folder)."""

    def __init__(
        self,
        directory: Path | None = None,
        *,
        git: str | bool | None = True,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.directory = directory if directory is not None else default_checkpoint_dir()
        # git found outside the workspaces (``tools.programs``): each folder's own look-up
        # also skips that folder (a .venv/bin/git planted in it is never run).
        self._find_git = git is True
        self._git = programs.git() if git is True else (git or None)
        self._folders: dict[Path, FolderCheckpoints] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._on_warning = on_warning
        self._warned: set[str] = set()
        self.snapshot_wait = SNAPSHOT_WAIT
        if self._git is None:
            self.warn(NO_GIT_NOTE)  # once per server, before its first checkpoint

    @property
    def uses_git(self) -> bool:
        return self._git is not None

    def folder(self, root: Path) -> FolderCheckpoints:
        found = self._folders.get(root)
        if found is None:
            git = programs.git((root,)) if self._find_git else self._git
            found = FolderCheckpoints.of(root, self.directory, git)
            self._folders[root] = found
        return found

    def warn(self, message: str, *, once: bool = False) -> None:
        """A problem the user should see (git missing, a snapshot that failed);
        ``once``: not again in this server's life."""
        if once:
            if message in self._warned:
                return
            self._warned.add(message)
        if self._on_warning is not None:
            self._on_warning(message)
        else:
            log.warning("%s", message)

    # -- asks --------------------------------------------------------------------------

    async def prepare(self, root: Path) -> None:
        """Ready ``root``'s store before its first ask (the server's warm-up): the
        shadow repository created or checked, then a snapshot in the background that no
        checkpoint keeps: git's index then knows the tree, so the first ask's snapshot
        only looks at what changed (a huge tree's first snapshot never holds an ask).
        Waits at most ``PREPARE_WAIT`` s for git, which then goes on in the background
        (raises GitError when git fails sooner)."""
        folder = await self._opened(root)
        ready = asyncio.ensure_future(folder.prepare())
        try:
            await asyncio.wait_for(asyncio.shield(ready), PREPARE_WAIT)
        except TimeoutError:
            log.info("git is slow to prepare the checkpoints of %s: in the background", root)
            self.spawn(ready)
            return
        if folder.uses_git:
            self.spawn(folder.snapshot())

    async def _opened(self, root: Path) -> FolderCheckpoints:
        """``root``'s store, its private folder made and named."""
        folder = self.folder(root)
        await folder.open()
        return folder

    async def begin(
        self,
        root: Path,
        session_id: str,
        prompt: str,
        request_digest: str,
    ) -> AskRecorder:
        """Start recording an ask, and return at once: the checkpoint is written to the
        session's log and the folder snapshotted in the background. Tools that may
        change files wait for both through ``recorder.ready()`` (as the runtime does),
        so the way to the model's first request never waits for the disk or for git."""
        folder = self.folder(root)
        short = " ".join(prompt.split())
        if len(short) > PROMPT_CHARS:
            short = short[: PROMPT_CHARS - 1] + "…"
        git = folder.uses_git
        checkpoint = Checkpoint(
            id="",  # numbered when the log takes it
            prompt=short,
            time=time.time(),
            request_digest=request_digest,
            coverage="all" if git else "fileTools",
            notes=[] if git else [NO_GIT_NOTE],
        )
        recorder = AskRecorder(self, folder, session_id, checkpoint)
        recorder.start(self._register(folder, session_id, checkpoint))
        return recorder

    async def _register(
        self, folder: FolderCheckpoints, session_id: str, checkpoint: Checkpoint
    ) -> None:
        """Write ``checkpoint`` into its session's log, numbered (raises OSError, GitError)."""
        await folder.open()
        await self._settle(folder, session_id)

        def add(session: SessionLog) -> None:
            checkpoint.id = str(session.next_number)
            session.next_number += 1
            session.checkpoints.append(checkpoint)

        await folder.edit(session_id, add)

    async def after_ask(self, folder: FolderCheckpoints) -> None:
        """Keep the store within its bounds; pack objects in the background."""
        now = time.time()
        dropped = await folder.drop_checkpoints(lambda every: _beyond_bounds(every, now))
        await self._forget(folder, dropped)
        if folder.uses_git:
            self.spawn(folder.pack())

    # -- reading -----------------------------------------------------------------------

    async def checkpoints(self, root: Path, session_id: str) -> list[Checkpoint]:
        folder = self.folder(root)
        await self._settle(folder, session_id)
        return (await folder.read(session_id)).checkpoints

    async def diff(
        self, root: Path, session_id: str, checkpoint_id: str, *, include_content: bool = False
    ) -> list[FileDiff]:
        folder = self.folder(root)
        await self._settle(folder, session_id)
        session = await folder.read(session_id)
        checkpoint = session.checkpoints[session.find(checkpoint_id)]
        states = [s for c in checkpoint.changes for s in (c.before, c.after)]
        contents = await folder.contents(states, max_size=MAX_DIFF_BYTES)
        files = []
        for change in checkpoint.changes:
            old = content_of(change.before, contents)
            new = content_of(change.after, contents)
            text = None
            if old is not False and new is not False:
                text = await asyncio.to_thread(unified_diff, change.path, old, new)  # type: ignore[arg-type]
            entry = FileDiff(change.path, change.status, text)
            if include_content:
                entry.before = text_of(old) if isinstance(old, bytes) else None
                entry.after = text_of(new) if isinstance(new, bytes) else None
            files.append(entry)
        return files

    def has_session(self, root: Path, session_id: str) -> bool:
        return self.folder(root).has_session(session_id)

    # -- rewind ------------------------------------------------------------------------

    async def rewind(
        self,
        root: Path,
        session_id: str,
        checkpoint_id: str,
        *,
        editor: RewindEditor | None = None,
        dry_run: bool = False,
    ) -> tuple[RewindOutcome, list[Checkpoint]]:
        """Undo the asks from ``checkpoint_id`` on; returns the outcome and the undone
        checkpoints (the conversation is cut before the first of them)."""
        folder = self.folder(root)
        await self._settle(folder, session_id)
        session = await folder.read(session_id)
        index = session.find(checkpoint_id)
        undone = session.checkpoints[index:]
        busy = [c.id for c in undone if folder.is_running(session_id, c.id)]
        if busy:
            raise CheckpointBusyError(f"ask {busy[0]} of session {session_id} is still running")
        outcome = await rewind_files(folder, undone, editor, dry_run=dry_run)
        if not dry_run:
            ids = {c.id for c in undone}

            def drop(log_: SessionLog) -> None:
                log_.checkpoints = [c for c in log_.checkpoints if c.id not in ids]

            await folder.edit(session_id, drop)
            await self._forget(folder, [(session_id, c) for c in undone])
        return outcome, undone

    # -- ending ------------------------------------------------------------------------

    async def end_session(self, root: Path, session_id: str) -> None:
        """The session ended: its checkpoints go."""
        folder = self.folder(root)
        if not folder.has_session(session_id):
            return
        dropped = await folder.remove_session(session_id)
        await self._forget(folder, [(session_id, c) for c in dropped])

    async def settled(self) -> None:
        """Wait for background maintenance (packing, garbage collection) to finish."""
        while self._background:
            await asyncio.wait(list(self._background))

    async def aclose(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # -- internals ---------------------------------------------------------------------

    async def _settle(self, folder: FolderCheckpoints, session_id: str) -> None:
        """Close checkpoints whose ask never finished (its server was killed): what
        changed after their start until the next checkpoint counts as theirs."""
        session = await folder.read(session_id)
        stale = [
            c
            for c in session.checkpoints
            if c.state == "running" and not folder.is_running(session_id, c.id)
        ]
        for checkpoint in stale:
            checkpoint.state = "interrupted"
            checkpoint.notes.append(
                "the server stopped during this ask: its changes were worked out later and "
                "include anything changed until the next ask"
            )
            if checkpoint.before_tree and folder.uses_git:
                later = session.checkpoints[session.find(checkpoint.id) + 1 :]
                end = next((c.before_tree for c in later if c.before_tree), None)
                with contextlib.suppress(GitError):
                    if end is None:
                        now = await snapshot_within(folder, self)
                        end = now.tree if now is not None else None
                    if end is None:
                        raise GitError("git did not answer")
                    changes = await folder.changes_between(checkpoint.before_tree, end)
                    checkpoint.after_tree = end
                    checkpoint.changes = changes
            await folder.edit(session_id, functools.partial(SessionLog.put, checkpoint=checkpoint))

    async def _forget(
        self, folder: FolderCheckpoints, dropped: list[tuple[str, Checkpoint]]
    ) -> None:
        """Remove what only the dropped checkpoints used: refs, blobs, then git objects."""
        if not dropped:
            return
        await folder.release_trees(dropped)
        if folder.uses_git:
            self.spawn(folder.collect())
        await folder.drop_unused_blobs()

    def spawn(self, work: Any) -> None:
        async def run() -> None:
            with contextlib.suppress(GitError):
                await work

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


class CheckpointBusyError(Exception):
    """A rewind over an ask that is still running."""


def _beyond_bounds(every: list[tuple[str, Checkpoint]], now: float) -> list[tuple[str, Checkpoint]]:
    """Of a folder's (session id, checkpoint) pairs, those past the retention period or
    beyond the folder's cap (the oldest first); never one still running."""
    horizon = now - RETENTION_DAYS * 86400
    by_age = sorted(every, key=lambda entry: entry[1].time)
    excess = max(0, len(by_age) - MAX_PER_FOLDER)
    return [
        (sid, c)
        for i, (sid, c) in enumerate(by_age)
        if (i < excess or c.time < horizon) and c.state != "running"
    ]
