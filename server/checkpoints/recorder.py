"""One ask's checkpoint as it is recorded: the snapshot before, what the file tools say
they change (the ask's :class:`~tooling.journal.ChangeJournal`), the snapshot after.

What the snapshots show changed is the agent's only if a file tool wrote it or it changed
while one of the agent's other tools ran (a command, an MCP tool: ``running``), judged by
the file's ctime (which no program can set back: a rename or ``cp -p`` moves it too).
Anything else changed during the ask by someone else -- an ACP client writing its own
transcript into the workspace, an editor's autosave -- and is left out of the checkpoint
with a note saying so: undo leaves it as it is instead of refusing it. A file deleted
during the ask is the agent's if one of those tools ran at all (a deletion leaves no time
on the file). A change made by someone else *while* a command ran cannot be told apart.

Created by :meth:`server.checkpoints.service.CheckpointService.begin`, which it reports
back to through :class:`RecorderHost` (a protocol, so this module does not import the
service that imports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .file_states import MAX_DIFF_BYTES, FileState, from_text, line_stats, read_disk
from .shadow_git import GitError, Snapshot
from .store import Checkpoint, FileChange, FolderCheckpoints

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_STAT_FILES = 500  # line counts are computed for at most this many files per ask
# Seconds an ask waits for git to snapshot the folder, before its first tool that may
# change files (counted from the ask's start) and at its end. Past it the snapshot is
# given up for this ask (its
# checkpoint then holds what the file tools' journal saw) and finishes in the
# background: a first snapshot of a huge tree still fills the index for the next ask,
# and a git that hangs never holds an ask for longer than this.
SNAPSHOT_WAIT = 5.0
# Nanoseconds around a tool's run within which a file's ctime counts as its doing: file
# times come from the kernel's coarse clock, a tick (up to 10 ms) behind the real time.
WINDOW_SLACK_NS = 50_000_000
MAX_OTHERS_NAMED = 20  # files changed by someone else, named in the checkpoint's notes


class RecorderHost(Protocol):
    """What a recorder needs of the service that made it."""

    snapshot_wait: float

    def warn(self, message: str, *, once: bool = False) -> None: ...

    def spawn(self, work: Any) -> None: ...

    async def after_ask(self, folder: FolderCheckpoints) -> None: ...


class AskRecorder:
    """Records one ask's checkpoint; the ask's :class:`~tooling.journal.ChangeJournal`."""

    def __init__(
        self,
        service: RecorderHost,
        folder: FolderCheckpoints,
        session_id: str,
        checkpoint: Checkpoint,
    ) -> None:
        self._service = service
        self._folder = folder
        self._session_id = session_id
        self.checkpoint = checkpoint
        self._mutex = threading.Lock()
        # Per path: its state on disk before the ask's first write of it, and its
        # open buffer before and after the agent's edits (state, bytes).
        self._written: dict[Path, tuple[FileState, bytes | None]] = {}
        self._buffers: dict[Path, tuple[tuple[FileState, bytes], tuple[FileState, bytes]]] = {}
        self._before: asyncio.Task[Snapshot | None] | None = None
        self._before_since = 0.0  # the loop's time it started
        self._waiting: asyncio.Future[None] | None = None
        self._gave_up = False  # the snapshot before took too long: not this ask's
        # Set once a tool that may change files is about to run (the runtime awaits
        # ready() first): without one, the workspace is as the agent found it.
        self._may_change = False
        self._running_fd: int | None = None
        self._started: asyncio.Future[bool] | None = None
        # When each of the ask's unreported tools ran: [start, end] (end None: running).
        self._windows: list[list[int | None]] = []

    def start(self, register: Awaitable[None]) -> None:
        """Begin in the background: ``register`` writes the checkpoint into the log,
        then the ask claims it as running and the snapshot before it starts."""
        self._started = asyncio.ensure_future(self._start(register))

    async def _start(self, register: Awaitable[None]) -> bool:
        try:
            await register
            claim = self._folder.claim_running
            self._running_fd = await asyncio.to_thread(claim, self._session_id, self.checkpoint.id)
        except (OSError, GitError) as exc:  # the ask runs on, without a checkpoint
            log.warning("starting the checkpoint failed: %s", exc)
            self._service.warn(
                f"starting the checkpoint failed ({exc}); this ask may not be undoable"
            )
            return False
        if self._folder.uses_git:
            self._before = asyncio.create_task(self._take_before())
            self._before_since = asyncio.get_running_loop().time()
        return True

    @property
    def checkpoint_id(self) -> str | None:
        """The checkpoint's id once it is in the log (None: the store could not be used)."""
        return self.checkpoint.id or None

    async def _take_before(self) -> Snapshot | None:
        try:
            snapshot = await self._folder.snapshot()
        except GitError as exc:
            if not self._gave_up:
                self._degrade(f"the checkpoint before this ask could not be taken ({exc})")
            return None
        if self._gave_up:
            return None  # tools have run since: this tree is not the ask's start
        self.checkpoint.before_tree = snapshot.tree
        self._note_skipped(snapshot)
        # Kept before any tool runs, so a server killed mid-ask leaves what is needed
        # to work out its changes later (a few milliseconds).
        with contextlib.suppress(GitError, OSError):
            await self._folder.keep_trees(self._session_id, self.checkpoint)
            await self._save()
        return snapshot

    async def _save(self) -> None:
        checkpoint = self.checkpoint
        await self._folder.edit(self._session_id, lambda session: session.put(checkpoint))

    # -- the journal -------------------------------------------------------------------

    async def ready(self) -> None:
        self._may_change = True
        if self._started is None or not await asyncio.shield(self._started):
            return
        if self._before is None or self._before.done():
            return
        if self._waiting is None:  # one wait for all the ask's tools (run side by side)
            self._waiting = asyncio.ensure_future(self._wait_for_before(self._before))
        await asyncio.shield(self._waiting)

    async def _wait_for_before(self, before: asyncio.Task[Snapshot | None]) -> None:
        # Counted from the snapshot's start: the time the model took meanwhile counts.
        wait = self._service.snapshot_wait
        left = self._before_since + wait - asyncio.get_running_loop().time()
        try:
            await asyncio.wait_for(asyncio.shield(before), max(0.0, left))
        except TimeoutError:
            self._gave_up = True
            self._degrade(f"git did not snapshot the folder within {wait:g} s", once=True)
        except Exception:  # its own failure is recorded by _take_before
            pass

    def will_write(self, path: Path) -> None:
        if not path.is_relative_to(self._folder.root):
            return
        with self._mutex:
            if path in self._written:
                return
        try:
            captured = read_disk(path)
        except OSError:
            return  # the write will fail the same way and change nothing
        with self._mutex:
            self._written.setdefault(path, captured)

    def edited_buffer(self, path: Path, before: str, after: str) -> None:
        if not path.is_relative_to(self._folder.root):
            return
        with self._mutex:
            first = self._buffers.get(path, (from_text(before), from_text(after)))[0]
            self._buffers[path] = (first, from_text(after))

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        window: list[int | None] = [time.time_ns(), None]
        with self._mutex:
            self._windows.append(window)
        try:
            yield
        finally:
            window[1] = time.time_ns()

    def _agents(self, changes: list[FileChange]) -> list[FileChange]:
        """Of ``changes`` (the snapshots'), those the agent made; notes the others."""
        with self._mutex:
            reported = set(self._written) | set(self._buffers)
            now = time.time_ns()
            windows = [(start or 0, end or now) for start, end in self._windows]
        root = self._folder.root
        kept, others = [], []
        for change in changes:
            path = root / change.path
            if path in reported or _during(path, windows):
                kept.append(change)
            else:
                others.append(change.path)
        if others:
            named = ", ".join(others[:MAX_OTHERS_NAMED])
            more = (
                f" and {len(others) - MAX_OTHERS_NAMED} more"
                if len(others) > MAX_OTHERS_NAMED
                else ""
            )
            self.checkpoint.notes.append(
                f"changed during this ask by someone else, not by the agent (left out: undo "
                f"leaves them as they are): {named}{more}"
            )
        return kept

    # -- the end of the ask --------------------------------------------------------------

    async def finish(self, *, in_conversation: bool = True) -> None:
        """Record what the ask changed (also after a failure or cancellation);
        ``in_conversation``: whether its request stayed in the conversation."""
        if not in_conversation:
            self.checkpoint.request_digest = None
        if self._started is None or not await asyncio.shield(self._started):
            return  # never got into the log: nothing to record
        try:
            await self._finish()
        finally:
            if self._running_fd is not None:
                release = self._folder.release_running
                await asyncio.to_thread(
                    release, self._session_id, self.checkpoint.id, self._running_fd
                )
                self._running_fd = None

    async def _finish(self) -> None:
        checkpoint = self.checkpoint
        before = None
        if self._before is not None and not self._before.done():
            if self._gave_up:
                self._service.spawn(self._before)  # finishes for the next ask's sake
                # Its tree (if git got that far) is kept by no ref: not this checkpoint's.
                checkpoint.before_tree = None
            else:
                # The ask ended (cancelled, failed) before its snapshot did: no tool that
                # changes files ran (they wait for it), so there is nothing to record.
                self._before.cancel()
        if self._before is not None and not self._gave_up:
            with contextlib.suppress(BaseException):
                before = await self._before
        after_tree = None
        if before is not None and not self._may_change:
            # Only read-only tools ran (or none): the end is the start, no snapshot needed
            # (an answer-only ask finishes ~10 ms sooner).
            after_tree = before.tree
        elif before is not None:
            try:
                after = await snapshot_within(self._folder, self._service)
                if after is None:
                    wait = self._service.snapshot_wait
                    self._degrade(f"git did not snapshot the folder within {wait:g} s", once=True)
                else:
                    after_tree = after.tree
                    self._note_skipped(after)
            except GitError as exc:
                self._degrade(f"the end of this ask could not be snapshotted ({exc})")
        checkpoint.after_tree = after_tree

        changes: dict[str, FileChange] = {}
        if before is not None and after_tree is not None and after_tree != before.tree:
            try:
                between = self._folder.changes_between(before.tree, after_tree)
                found = await self._bounded(between)
                for change in await asyncio.to_thread(self._agents, found):
                    changes[change.path] = change
            except GitError as exc:  # the journal's changes are all this ask records
                self._degrade(f"what this ask changed could not be read from git ({exc})")
                before, checkpoint.after_tree, after_tree = None, None, None
        try:
            changes.update(await self._journal_changes(changes, before, after_tree))
        except GitError as exc:
            self._degrade(f"what this ask changed could not be read from git ({exc})")
            changes.update(await self._journal_changes(changes, None, None))
        ordered = [changes[path] for path in sorted(changes)]
        await self._count_lines(ordered)
        checkpoint.changes = ordered
        checkpoint.state = "done"
        with contextlib.suppress(GitError):
            await self._bounded(self._folder.keep_trees(self._session_id, checkpoint))
        await self._save()
        await self._service.after_ask(self._folder)

    async def _bounded(self, work: Awaitable[T]) -> T:
        """``work`` (git), given at most the snapshot wait: a git that does not answer
        never holds the ask (it finishes, or times out, in the background; GitError)."""
        task = asyncio.ensure_future(work)
        wait = self._service.snapshot_wait
        try:
            return await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            self._service.spawn(task)
            raise GitError(f"git did not answer within {wait:g} s") from None

    async def _journal_changes(
        self, git_changes: dict[str, FileChange], before: Snapshot | None, after_tree: str | None
    ) -> dict[str, FileChange]:
        """Changes the snapshots cannot see, from what the file tools reported."""
        with self._mutex:
            written, buffers = dict(self._written), dict(self._buffers)
        root = self._folder.root
        found: dict[str, FileChange] = {}
        for path, ((state, data), (now, now_data)) in buffers.items():
            if not now.same_content(state):
                rel = path.relative_to(root).as_posix()
                await self._keep((state, data), (now, now_data))
                found[rel] = FileChange(rel, state, now)
        disk: dict[str, tuple[Path, FileState, bytes | None]] = {}
        for path, (state, before_data) in written.items():
            rel = path.relative_to(root).as_posix()
            if rel not in git_changes:
                disk[rel] = (path, state, before_data)
        if disk and before is not None and after_tree is not None:
            # Paths the snapshots cover already show in the git changes if they changed.
            covered = await self._bounded(self._folder.paths_in(before.tree, disk))
            covered |= await self._bounded(self._folder.paths_in(after_tree, disk))
            disk = {rel: v for rel, v in disk.items() if rel not in covered}
        for rel, (path, state, before_data) in disk.items():
            if rel in found:
                continue  # its buffer change is what the user sees
            on_disk, disk_data = await asyncio.to_thread(read_disk, path)
            if not on_disk.same_content(state) or on_disk.mode != state.mode:
                await self._keep((state, before_data), (on_disk, disk_data))
                found[rel] = FileChange(rel, state, on_disk)
        return found

    async def _keep(self, *states: tuple[FileState, bytes | None]) -> None:
        for state, data in states:
            if state.exists and state.oid and data is not None:
                await self._folder.keep_content(state, data)

    async def _count_lines(self, changes: list[FileChange]) -> None:
        countable = changes[:MAX_STAT_FILES]
        states = [s for c in countable for s in (c.before, c.after)]
        try:
            contents = await self._bounded(self._folder.contents(states, max_size=MAX_DIFF_BYTES))
        except GitError:
            return  # no line counts: git does not answer

        def count() -> None:
            for change in countable:
                old = content_of(change.before, contents)
                new = content_of(change.after, contents)
                if old is False or new is False:
                    continue
                stats = line_stats(old, new)  # type: ignore[arg-type]
                if stats is not None:
                    change.added, change.removed = stats

        await asyncio.to_thread(count)

    def _note_skipped(self, snapshot: Snapshot) -> None:
        for skipped in snapshot.skipped[:20]:
            note = f"not covered: {skipped}"
            if note not in self.checkpoint.notes:
                self.checkpoint.notes.append(note)

    def _degrade(self, note: str, *, once: bool = False) -> None:
        """This ask's checkpoint holds only the file tools' changes; the user is told
        (``once``: a slow git is said once per server, not at every ask)."""
        log.warning("checkpoint %s/%s: %s", self._session_id, self.checkpoint.id, note)
        self.checkpoint.coverage = "fileTools"
        self.checkpoint.notes.append(note + "; bash changes are not covered")
        if once:
            note += ": checkpoints cover only the file tools' changes while git is this slow"
        self._service.warn(note, once=once)


async def snapshot_within(folder: FolderCheckpoints, host: RecorderHost) -> Snapshot | None:
    """The folder's snapshot, or None when git takes longer than ``host.snapshot_wait``
    (the snapshot then finishes in the background; raises GitError)."""
    task = asyncio.ensure_future(folder.snapshot())
    try:
        return await asyncio.wait_for(asyncio.shield(task), host.snapshot_wait)
    except TimeoutError:
        host.spawn(task)
        return None
    except asyncio.CancelledError:
        host.spawn(task)  # never left running unwatched
        raise


def _during(path: Path, windows: list[tuple[int, int]]) -> bool:
    """Whether ``path`` changed while one of the agent's tools ran (by its ctime)."""
    try:
        changed = os.lstat(path).st_ctime_ns
    except FileNotFoundError:
        return bool(windows)  # deleted: only a tool that ran could have done it
    except OSError:
        return True  # cannot tell: the agent's, as before
    return any(
        start - WINDOW_SLACK_NS <= changed <= end + WINDOW_SLACK_NS for start, end in windows
    )


def content_of(state: FileState, contents: dict[str, bytes]) -> bytes | bool | None:
    """The bytes of a state, None when absent, False when not available."""
    if not state.exists:
        return None
    return contents.get(state.oid, False)
