"""The undo side of asks: each ask's checkpoint, and the checkpoints a face lists,
diffs and rewinds to (with the conversation cut back to before the undone asks).

The checkpoint modules (the service, its stores, the shadow git repository; ~20 ms to
import) are imported where first used, not at the top: the first use is the engine's
warm-up after ``initialized``, so the server's start-up does not pay for them. Every
such import below says ``# deferred``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .. import protocol as p
from ..conversations.conversations import Conversation
from ..errors import AgentError, InvalidParamsError, SessionBusyError
from ..model.messages import Message, UserMessage
from .folders import Folders
from .history import Sessions

if TYPE_CHECKING:
    from ..checkpoints.recorder import AskRecorder
    from ..checkpoints.rewind import RewindEditor
    from ..checkpoints.service import CheckpointService
    from ..checkpoints.store import Checkpoint

log = logging.getLogger(__name__)


class Undo:
    """The checkpoints of the sessions in ``sessions``, kept per folder of ``folders``.

    Storage the environment refuses (a full disk, git failing) never fails an ask: it
    is logged and reported through ``warn`` (a message for the user) once.
    """

    def __init__(
        self,
        checkpoint_dir: Path | None,
        sessions: Sessions,
        folders: Folders,
        warn: Callable[[str], None],
    ) -> None:
        self._checkpoint_dir = checkpoint_dir
        self._sessions = sessions
        self._folders = folders
        self._warn = warn
        self._service: CheckpointService | None = None
        # A cancelled ask answers at once while its checkpoint is still being finished
        # (shielded): per session, that finish, which listing and undo wait for.
        self._finishing: dict[str, asyncio.Future[None]] = {}

    @property
    def service(self) -> CheckpointService:
        if self._service is None:
            from ..checkpoints.service import CheckpointService  # deferred: see the docstring

            self._service = CheckpointService(self._checkpoint_dir, on_warning=self._warn)
        return self._service

    @staticmethod
    def load() -> None:
        """Import the checkpoint modules (call from a worker thread: not on the event loop
        while another thread imports the model SDK)."""
        from ..checkpoints import service, shadow_git  # noqa: F401

    async def prepare(self) -> None:
        """Create or check each open folder's store, so an ask's checkpoint is only its
        snapshot."""
        from ..checkpoints.shadow_git import GitError  # deferred: see the docstring

        for folder in self._folders:
            try:
                await self.service.prepare(folder.workspace.root)
            except (OSError, GitError) as exc:  # the first ask says so, if it still fails
                log.info("could not prepare the checkpoints of %s: %s", folder.workspace.root, exc)

    @contextlib.asynccontextmanager
    async def recording(
        self,
        conversation: Conversation,
        prompt: str,
        request: UserMessage,
        *,
        settle: Callable[[], Awaitable[bool]],
    ) -> AsyncIterator[AskRecorder | None]:
        """The checkpoint of the ask whose message is ``request``, around its loop.

        On success the checkpoint is finished. On an error or a cancellation,
        ``settle()`` first leaves the conversation usable (False: the ask left no
        trace), then the checkpoint is finished, and dropped with the
        session's others if the ask took its conversation with it. Yields None when
        the store cannot be used: the ask still runs.
        """
        recorder = await self._begin(conversation, prompt, request)
        try:
            yield recorder
        except BaseException:
            if recorder is None:
                await settle()
                raise

            async def wind_up() -> None:
                kept = await settle()
                await self._finish(recorder, conversation, request)
                if not kept:
                    await self.drop(conversation)

            # Known to listing and undo before anything here awaits: a cancelled ask's
            # prompt may be answered while its conversation is still being settled.
            finishing = asyncio.ensure_future(wind_up())
            self._finishing[conversation.id] = finishing
            finishing.add_done_callback(lambda _: self._finished(conversation.id, finishing))
            await asyncio.shield(finishing)
            raise
        if recorder is not None:
            await asyncio.shield(self._finish(recorder, conversation, request))

    def _finished(self, session_id: str, finishing: asyncio.Future[None]) -> None:
        if self._finishing.get(session_id) is finishing:
            del self._finishing[session_id]

    async def _settled(self, session_id: str) -> None:
        """Once the checkpoint of a cancelled ask of this session is finished."""
        finishing = self._finishing.get(session_id)
        if finishing is not None:
            await asyncio.wait([finishing])

    async def drop(self, conversation: Conversation) -> None:
        """Delete the checkpoints of ``conversation``'s session (it ended)."""
        with self._store_problems("dropping the session's checkpoints"):
            await self.service.end_session(conversation.workspace_root, conversation.id)

    async def checkpoints(self, session_id: str) -> p.CheckpointsResult:
        root, _ = self._session(session_id)
        await self._settled(session_id)
        with _checkpoint_errors():
            found = await self.service.checkpoints(root, session_id)
        return p.CheckpointsResult([_checkpoint_summary(c) for c in found])

    async def diff(
        self, session_id: str, checkpoint_id: str, *, include_content: bool
    ) -> p.DiffResult:
        root, _ = self._session(session_id)
        with _checkpoint_errors():
            files = await self.service.diff(
                root, session_id, checkpoint_id, include_content=include_content
            )
        return p.DiffResult(
            [
                p.FileDiff(f.path, f.status, f.diff or "", f.diff is None, f.before, f.after)
                for f in files
            ]
        )

    async def rewind(
        self,
        session_id: str,
        checkpoint_id: str,
        *,
        dry_run: bool,
        editor: RewindEditor | None,
    ) -> p.RewindResult:
        """Undo the asks from ``checkpoint_id`` on and cut the conversation back to
        before it (refused while the session is answering an ask)."""
        root, conversation = self._session(session_id)
        if conversation is not None and conversation.busy:
            raise SessionBusyError(
                f"Session {session_id} is answering an ask; wait for it or cancel it first."
            )
        lock = conversation.lock if conversation is not None else asyncio.Lock()
        await self._settled(session_id)
        async with lock:
            with _checkpoint_errors():
                outcome, undone = await self.service.rewind(
                    root, session_id, checkpoint_id, editor=editor, dry_run=dry_run
                )
            truncated = conversation is not None and cut_before(
                conversation, undone, dry_run=dry_run
            )
            if truncated and not dry_run:
                assert conversation is not None
                conversation.touch()
                await self._sessions.save(conversation)
        return p.RewindResult(
            restored=outcome.restored,
            in_editor=outcome.in_editor,
            conflicts=[p.RewindConflict(path, reason) for path, reason in outcome.conflicts],
            conversation_truncated=truncated,
            dry_run=dry_run,
        )

    async def aclose(self) -> None:
        if self._service is not None:
            await self._service.aclose()

    async def _begin(
        self, conversation: Conversation, prompt: str, request: UserMessage
    ) -> AskRecorder | None:
        """Start this ask's checkpoint; an ask still runs when the store cannot be used."""
        with self._store_problems("starting the checkpoint"):
            return await self.service.begin(
                conversation.workspace_root, conversation.id, prompt, digest(request)
            )
        return None

    async def _finish(
        self, recorder: AskRecorder, conversation: Conversation, request: UserMessage
    ) -> None:
        kept = any(m is request for m in conversation.messages)  # compaction may move it
        with self._store_problems("recording the checkpoint"):
            await recorder.finish(in_conversation=kept)

    @contextlib.contextmanager
    def _store_problems(self, what: str) -> Iterator[None]:
        """Checkpoint storage the environment refuses (a full disk, git failing) must
        not fail the ask: it is logged and shown to the user once (bugs still raise)."""
        from ..checkpoints.shadow_git import GitError  # deferred: see the docstring

        try:
            yield
        except (OSError, GitError) as exc:
            log.warning("%s failed: %s", what, exc)
            self.service.warn(f"{what} failed ({exc}); this ask may not be undoable")

    def _session(self, session_id: str) -> tuple[Path, Conversation | None]:
        """The open folder whose checkpoints hold ``session_id``, and the conversation
        if the server still has it."""
        conversation = self._sessions.find(session_id)
        if conversation is not None:
            if conversation.workspace_root not in self._folders:
                raise InvalidParamsError(
                    "sessionId",
                    f"the session belongs to {conversation.workspace_root}, which is not an "
                    "open workspace folder",
                )
            return conversation.workspace_root, conversation
        for root in self._folders.roots:
            if self.service.has_session(root, session_id):
                return root, None
        raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")


def cut_before(conversation: Conversation, undone: list[Checkpoint], *, dry_run: bool) -> bool:
    """Cut the conversation back to before the first of the ``undone`` asks that left
    its request in it; True when that worked. Compaction moves messages, so a request
    is found by its digest, from the end (every later undone ask with the same text
    comes after it). One that only a summary holds now cannot be cut out: then the
    conversation is cut before the first later undone ask still there, and False."""
    digests = [c.request_digest for c in undone if c.request_digest]
    if not digests:
        return True  # none of them is in the conversation: nothing to cut
    messages = conversation.messages
    for position, target in enumerate(digests):
        same = digests[position:].count(target)
        for index in range(len(messages) - 1, 0, -1):
            message = messages[index]
            if message.get("role") == "user" and digest(message) == target:
                same -= 1
                if same == 0:
                    if not dry_run:
                        del messages[index:]
                        conversation.ledger.seen.clear()  # the model forgets what it read
                    return position == 0
    return False


def digest(message: Message) -> str:
    """What a checkpoint keeps of its ask's request message, to find it again."""
    return hashlib.sha256(
        str(message.get("content") or "").encode("utf-8", "surrogatepass")
    ).hexdigest()


def _checkpoint_summary(checkpoint: Checkpoint) -> p.CheckpointSummary:
    stamp = datetime.fromtimestamp(checkpoint.time, UTC).isoformat(timespec="seconds")
    return p.CheckpointSummary(
        id=checkpoint.id,
        prompt=checkpoint.prompt,
        time=stamp.replace("+00:00", "Z"),
        state=checkpoint.state,
        coverage=checkpoint.coverage,
        notes=list(checkpoint.notes),
        files=[p.CheckpointFile(c.path, c.status, c.added, c.removed) for c in checkpoint.changes],
    )


@contextlib.contextmanager
def _checkpoint_errors() -> Iterator[None]:
    """What the checkpoint service refuses, as the errors a face maps onto codes."""
    from ..checkpoints.service import CheckpointBusyError  # deferred: see the docstring
    from ..checkpoints.shadow_git import GitError  # deferred: see the docstring
    from ..checkpoints.store import CheckpointError  # deferred: see the docstring

    try:
        yield
    except CheckpointError as exc:
        raise InvalidParamsError(exc.field, str(exc)) from None
    except CheckpointBusyError as exc:
        raise SessionBusyError(str(exc)) from None
    except (OSError, GitError) as exc:
        raise AgentError(f"The checkpoint store failed: {exc}") from None
