"""The agent engine: workspace folders, their tool runtimes, conversations, asks.

Protocol-free (no pygls here) so every front end and the tests drive the same
code; ``server.lsp.server`` is a thin mapping of JSON-RPC onto this class. Results
are the protocol's typed values (``server.protocol``), plain attrs data.

The engine never blocks its event loop on heavy work: the SDK, jsonschema, the
loop and the tools are imported, and runtimes and model clients built, in a worker
thread (:meth:`AgentEngine.warm_up`, started by the server after ``initialized``);
an ask or listTools that arrives earlier awaits that work instead of doing it
on the loop (importing on the loop while the warm-up thread holds the import
lock would block every other request).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooling.context import ToolContext
from tooling.contract import is_error
from tooling.workspace import Workspace, WorkspaceError

from .. import protocol as p
from ..agent.archive import transcript
from ..agent.compaction import ContextWindow
from ..agent.events import EngineWarning, EventSink, WarningSink
from ..agent.loop import LoopResult, agent_loop, complete_text, preview
from ..agent.permissions import Asker, PermissionGate
from ..config.own_secrets import exposure_warning, hidden_paths
from ..errors import (
    AgentError,
    InvalidParamsError,
    NoWorkspaceFolderError,
    SessionBusyError,
)
from ..model.context_limits import window_for
from ..model.endpoint import ModelRequestError, ModelSettings, create_client, load_model_settings
from ..model.stream import StreamSupport
from .bootstrap import check_enabled
from .conversations import Conversation, ConversationStore
from .editor_context import prompt_of, with_context
from .prompts import system_prompt
from .session_files import SessionFiles
from .settings import AgentSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from tooling.documents import EditorDocuments
    from tooling.registry import ToolRegistry
    from tooling.runtime import ToolRuntime

    from ..checkpoints.rewind import RewindEditor
    from ..checkpoints.service import AskRecorder, CheckpointService
    from ..checkpoints.store import Checkpoint

log = logging.getLogger(__name__)

# History entries show tool output previews of this size (agent/toolOutput has it all).
HISTORY_PREVIEW = 2000
# How long an ask that is done waits for its endpoint's model check to report, so a
# one-shot client (the terminal) still shows the warning; the check runs meanwhile.
MODEL_CHECK_GRACE_S = 0.5


class Folder:
    """One open workspace folder, its tools and their runtime, built on first use.

    Describing the tools needs only the registry (the tools' modules); running them
    needs the runtime, which compiles every schema with jsonschema (slower to load):
    so an early listTools does not wait for jsonschema.
    """

    def __init__(
        self, workspace: Workspace, build: Callable[[], ToolRegistry], key: tuple[Any, ...]
    ) -> None:
        self.workspace = workspace
        self.runtime_key = key
        self._build = build
        self._registry: ToolRegistry | None = None
        self._runtime: ToolRuntime | None = None
        self._lock = threading.RLock()  # the warm-up thread and a request may both build

    def registry_now(self) -> ToolRegistry:
        """The registry, built here if needed (call from a worker thread)."""
        with self._lock:
            if self._registry is None:
                self._registry = self._build()
            return self._registry

    def runtime_now(self) -> ToolRuntime:
        """The runtime, built here if needed (call from a worker thread)."""
        from tooling.runtime import ToolRuntime

        with self._lock:
            if self._runtime is None:
                self._runtime = ToolRuntime(self.registry_now())
            return self._runtime

    async def registry(self) -> ToolRegistry:
        if self._registry is not None:
            return self._registry
        return await asyncio.to_thread(self.registry_now)

    async def runtime(self) -> ToolRuntime:
        if self._runtime is not None:
            return self._runtime
        return await asyncio.to_thread(self.runtime_now)


def _import_heavy() -> None:
    """What the first ask needs that takes long to load (~1 s: the model SDK)."""
    from ..model.warmup import rehearse_sdk

    rehearse_sdk()  # imports openai and runs its request path once, locally
    p.warm()


def _build_client(settings: ModelSettings) -> AsyncOpenAI:
    client = create_client(settings)
    # The SDK imports its resource modules on first attribute access (~50 ms): here,
    # in the worker thread, not in the first request on the event loop.
    _ = client.chat.completions, client.models
    return client


class AgentEngine:
    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        max_conversations: int = 100,
        session_dir: Path | None = None,
        checkpoint_dir: Path | None = None,
    ) -> None:
        self._environ = environ
        # agent-lsp's own files (key, conversations): no sandboxed bash command reads them.
        self._hidden_paths = hidden_paths(
            os.environ if environ is None else environ, state=(session_dir,)
        )
        self._settings = AgentSettings()
        self._folders: dict[Path, Folder] = {}
        self._files = SessionFiles(session_dir) if session_dir is not None else None
        self._conversations = ConversationStore(
            max_conversations=max_conversations, files=self._files
        )
        self._clients: dict[ModelSettings, AsyncOpenAI] = {}
        # What each endpoint accepts (does it stream?), learned once per server lifetime.
        self._streaming: dict[ModelSettings, StreamSupport] = {}
        self._documents: EditorDocuments | None = None
        self._warm: asyncio.Task[None] | None = None
        self._sandbox_warned = False
        self._editor: RewindEditor | None = None
        self._checkpoint_dir = checkpoint_dir
        self._checkpoints: CheckpointService | None = None
        self._on_warning: WarningSink | None = None
        # One check per (base URL, model) for the server's lifetime.
        self._model_checks: dict[tuple[str, str], asyncio.Task[None]] = {}

    def attach_documents(
        self, documents: EditorDocuments | None, editor: RewindEditor | None = None
    ) -> None:
        """Give the file tools the editor's open buffers (the language server does), and
        rewinds a way to restore open documents through the editor."""
        self._documents = documents
        self._editor = editor

    def attach_warnings(self, sink: WarningSink | None) -> None:
        """Where warnings that belong to no ask go (the language server shows them)."""
        self._on_warning = sink

    # -- readiness -------------------------------------------------------------------

    def warm_up(self) -> asyncio.Task[None]:
        """Start (once) importing and building what asks need, off the event loop."""
        if self._warm is None:
            self._warm = asyncio.get_running_loop().create_task(self._warm_up())
        return self._warm

    async def _warm_up(self) -> None:
        # Cheapest first: what listTools needs, then what running tools needs, then
        # the SDK (most of the time).
        for folder in list(self._folders.values()):
            try:
                await folder.registry()
                await folder.runtime()
            except Exception:
                log.exception("could not build the tools for %s", folder.workspace.root)
        try:
            await asyncio.to_thread(_import_heavy)
        except Exception:  # an ask will report a broken install properly
            log.exception("could not import the agent's dependencies")
            return
        try:
            settings = self.model_settings()
            # Listing the endpoint's models now (not beside the first ask) also opens
            # the connection the first ask will reuse.
            self._check_model(settings, await self._client(settings))
        except Exception:  # not configured yet: the ask says what to set
            log.debug("model client not created during warm-up", exc_info=True)
        if self._files is not None:
            await asyncio.to_thread(self._files.prune)
        # Last: the checkpoint stores (a shadow repository created or checked per folder),
        # so the first ask's checkpoint is only its snapshot.
        from ..checkpoints.shadow_git import GitError

        for folder in list(self._folders.values()):
            try:
                await self.checkpoints.prepare(folder.workspace.root)
            except (OSError, GitError) as exc:  # the first ask says so, if it still fails
                log.info("could not prepare the checkpoints of %s: %s", folder.workspace.root, exc)

    async def _ready(self) -> None:
        await asyncio.shield(self.warm_up())

    # -- configuration -------------------------------------------------------------

    @property
    def settings(self) -> AgentSettings:
        return self._settings

    def update_settings(self, settings: AgentSettings) -> list[str]:
        """New editor settings; returns the problems found, one per field.

        Tool runtimes are rebuilt if their settings changed; asks already running keep
        the runtime they started with. An ``enabledTools`` naming an unknown tool
        leaves the tools as they were (a typo must not silently disable or enable one).
        """
        problems = list(settings.warnings)
        if settings.enabled_tools is not None:
            try:
                check_enabled(settings.enabled_tools)
            except ValueError as exc:
                problems.append(f"{exc}; the tools stay as they were")
                settings = dataclasses.replace(settings, enabled_tools=self._settings.enabled_tools)
        self._settings = settings
        for root, folder in list(self._folders.items()):
            if folder.runtime_key != settings.runtime_key():
                self._folders[root] = self._make_folder(folder.workspace)
        if notice := self.sandbox_notice():
            problems.append(notice)
        return problems

    def sandbox_notice(self) -> str | None:
        """Once per process: the settings want a sandbox this system cannot enforce."""
        if self._sandbox_warned:
            return None
        from .bootstrap import sandbox_unavailable

        notice = sandbox_unavailable(self._settings.sandbox)
        self._sandbox_warned = notice is not None
        return notice

    # -- workspace folders -----------------------------------------------------------

    def set_folders(self, paths: list[Path]) -> list[str]:
        """Replace the open folders; returns warnings for folders that cannot be used (or
        that hold agent-lsp's own files)."""
        self._folders.clear()
        return [w for path in paths if (w := self.add_folder(path))]

    def add_folder(self, path: Path) -> str | None:
        try:
            workspace = Workspace(path)
        except WorkspaceError as exc:
            return str(exc)
        self._folders.setdefault(workspace.root, self._make_folder(workspace))
        return exposure_warning(workspace.root, self._hidden_paths)

    def remove_folder(self, path: Path) -> None:
        self._folders.pop(Path(path).resolve(), None)

    @property
    def folders(self) -> list[Path]:
        return list(self._folders)

    def folder(self, path: Path | None) -> Folder:
        """The named folder, or the first; errors name what is wrong."""
        if not self._folders:
            raise NoWorkspaceFolderError(
                "No workspace folder is open: open a folder in the editor "
                "(agent-lsp acts only inside the editor's workspace folders)."
            )
        if path is None:
            return next(iter(self._folders.values()))
        resolved = Path(path).resolve()
        found = self._folders.get(resolved)
        if found is None:
            raise InvalidParamsError(
                "workspaceFolder", f"{path} is not one of the open workspace folders"
            )
        return found

    def _make_folder(self, workspace: Workspace) -> Folder:
        settings = self._settings

        def build() -> ToolRegistry:
            from .bootstrap import build_registry

            return build_registry(
                workspace,
                enabled=settings.enabled_tools,
                bash_timeout=settings.bash_timeout,
                sandbox_policy=settings.sandbox,
                hidden_paths=self._hidden_paths,
            )

        return Folder(workspace, build, settings.runtime_key())

    # -- sessions --------------------------------------------------------------------

    def new_session(self, folder: Path | None = None) -> Conversation:
        """A conversation in ``folder`` (default: the first), before any ask."""
        target = self.folder(folder)
        root = target.workspace.root
        return self._conversations.create(root, system_prompt(root, self._settings.system_prompt))

    def conversation(self, session_id: str) -> Conversation:
        conversation = self._conversations.get(session_id)
        if conversation is None:
            raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")
        return conversation

    async def end_session(self, session_id: str) -> bool:
        conversation = self._conversations.get(session_id)
        if conversation is not None and conversation.workspace_root in self._folders:
            await self._drop_checkpoints(conversation)
        return self._conversations.drop(session_id)  # its grants go with it

    def grants(self, session_id: str) -> list[p.GrantInfo]:
        return [
            p.GrantInfo(g.grant_id, g.tool_name, g.arguments, g.title, g.decision, g.created)
            for g in self.conversation(session_id).grants.list()
        ]

    def revoke_grant(self, session_id: str, grant_id: str) -> bool:
        return self.conversation(session_id).grants.revoke(grant_id)

    async def sessions(self, folder: Path | None = None) -> list[p.SessionSummary]:
        root = self.folder(folder).workspace.root if folder is not None else None
        metas = await asyncio.to_thread(self._conversations.summaries, root)
        return [
            p.SessionSummary(m.id, m.workspace_root.as_uri(), m.title, m.created, m.updated, m.asks)
            for m in metas
        ]

    def history(self, session_id: str) -> p.SessionHistoryResult:
        """What a client needs to redraw a conversation: prompts, answers, tool calls
        (what compaction took out of the model's view included, as far as it is kept)."""
        conversation = self.conversation(session_id)
        messages = transcript(conversation.messages, conversation.archive)
        results = {
            m.get("tool_call_id"): str(m.get("content") or "")
            for m in messages
            if m.get("role") == "tool"
        }
        results.update(conversation.archive.outputs)
        entries: list[p.HistoryEntry] = []
        for message in messages:
            role = message.get("role")
            if role == "user":
                entries.append(p.HistoryEntry("user", prompt_of(str(message.get("content") or ""))))
            elif role == "assistant":
                calls = []
                for call in message.get("tool_calls") or ():
                    name, arguments = _call_parts(call)
                    output = results.get(call.get("id"), "")
                    calls.append(
                        p.HistoryToolCall(
                            call.get("id", ""),
                            name,
                            arguments,
                            not is_error(output),
                            preview(output, HISTORY_PREVIEW),
                        )
                    )
                entries.append(
                    p.HistoryEntry("assistant", str(message.get("content") or ""), calls)
                )
        return p.SessionHistoryResult(
            conversation.id, conversation.workspace_root.as_uri(), entries
        )

    def tool_output(self, session_id: str, call_id: str) -> p.ToolOutputResult:
        """A tool call's whole output, as the model received it (before compaction
        elided it, while the conversation's archive keeps it)."""
        conversation = self.conversation(session_id)
        messages = transcript(conversation.messages, conversation.archive)
        call = next(
            (
                c
                for m in messages
                if m.get("role") == "assistant"
                for c in m.get("tool_calls") or ()
                if c.get("id") == call_id
            ),
            None,
        )
        result = next(
            (m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id),
            None,
        )
        if call is None or result is None:
            raise InvalidParamsError("callId", f"no tool call {call_id!r} in this session")
        name, arguments = _call_parts(call)
        output = conversation.archive.outputs.get(call_id, str(result.get("content") or ""))
        return p.ToolOutputResult(call_id, name, arguments, not is_error(output), output, False)

    # -- requests ------------------------------------------------------------------

    async def list_tools(self, folder: Path | None = None) -> list[dict[str, Any]]:
        # Only the runtime is needed, built in a thread (not the whole warm-up: the
        # SDK import would make an early listTools wait a second).
        return (await self.folder(folder).registry()).describe()

    def sandbox_status(self, folder: Path | None = None) -> dict[str, Any]:
        """``agent/sandboxStatus``: the bash sandbox of a folder, its layers in force."""
        from tools import sandbox

        workspace = self.folder(folder).workspace
        policy = dataclasses.replace(
            self._settings.sandbox,
            hidden_paths=(*self._settings.sandbox.hidden_paths, *self._hidden_paths),
        )
        return sandbox.describe(policy, workspace.root)

    def model_settings(self) -> ModelSettings:
        """Resolved model settings; raises ModelNotConfiguredError with what to set."""
        return load_model_settings(self._settings.model_overrides(), environ=self._environ)

    def config_warnings(self) -> list[str]:
        """Problems of the user configuration file to show once (other users can read it)."""
        from ..config.user_config import config_path, permission_warning

        path = config_path(os.environ if self._environ is None else self._environ)
        warning = permission_warning(path) if path is not None else None
        return [warning] if warning else []

    async def list_models(self) -> p.ListModelsResult:
        """The models the endpoint lists, and the one asks use (``agent/listModels``)."""
        from ..model.connection_check import list_model_ids

        settings = self.model_settings()
        ids = await list_model_ids(await self._client(settings))
        return p.ListModelsResult([p.ModelInfo(name) for name in ids], settings.model)

    async def check_connection(self) -> p.CheckConnectionResult:
        """Whether the endpoint works, in plain words (``agent/checkConnection``)."""
        from ..model.connection_check import check_connection

        report = await check_connection(self._settings.model_overrides(), environ=self._environ)
        checks = [p.ConnectionCheck(c.name, c.ok, c.message) for c in report.checks]
        return p.CheckConnectionResult(report.ok, checks)

    async def _client(self, settings: ModelSettings) -> AsyncOpenAI:
        client = self._clients.get(settings)
        if client is None:
            # Building the SDK client loads TLS certificates: not on the loop.
            client = await asyncio.to_thread(_build_client, settings)
            client = self._clients.setdefault(settings, client)
        return client

    async def ask(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        folder: Path | None = None,
        on_event: EventSink | None = None,
        on_session: Callable[[str], None] | None = None,
        context: p.EditorContext | None = None,
        asker: Asker | None = None,
    ) -> p.AskResult:
        """Run one ask; ``on_session`` learns the session id before any tool runs.

        ``context`` (what the user is looking at) becomes a note after the prompt.
        ``asker`` reaches the user for calls that need permission (none: such calls
        are refused, and the model is told why).
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidParamsError("prompt", "must be a non-empty string")

        conversation: Conversation | None = None
        if session_id is not None:
            conversation = self.conversation(session_id)
            if folder is not None and Path(folder).resolve() != conversation.workspace_root:
                raise InvalidParamsError(
                    "workspaceFolder", "the session belongs to another workspace folder"
                )
            target = self.folder(conversation.workspace_root)
        else:
            target = self.folder(folder)

        content = await with_context(prompt, context, target.workspace, self._documents)
        # Fail before touching the conversation when the model is not configured.
        model_settings = self.model_settings()
        await self._ready()
        client = await self._client(model_settings)
        runtime = await target.runtime()
        settings = self._settings

        created = conversation is None
        if conversation is None:
            conversation = self.new_session(target.workspace.root)
        if conversation.lock.locked():
            raise SessionBusyError(
                f"Session {conversation.id} is already answering another ask; "
                "wait for it or cancel it first."
            )

        if on_session is not None:
            on_session(conversation.id)
        check = self._check_model(model_settings, client)
        async with conversation.lock:
            window = self._context_window(conversation, model_settings.model, runtime)
            request = {"role": "user", "content": content}
            recorder = await self._begin_checkpoint(conversation, prompt, request)
            conversation.messages.append(request)
            try:
                result = await agent_loop(
                    conversation.messages,
                    runtime,
                    client=client,
                    model=model_settings.model,
                    max_turns=settings.max_turns,
                    on_event=on_event,
                    context=ToolContext(
                        ledger=conversation.ledger,
                        documents=self._documents,
                        session_id=conversation.id,
                        permissions=PermissionGate(
                            settings.approval,
                            conversation.grants,
                            asker,
                            session_id=conversation.id,
                            emit=on_event or _ignore,
                        ),
                        journal=recorder,
                    ),
                    window=window,
                    streaming=self._streaming.setdefault(model_settings, StreamSupport()),
                )
            except BaseException as exc:
                await self._settle_unfinished(conversation, request, created=created)
                if recorder is not None:
                    await asyncio.shield(self._finish_checkpoint(recorder, conversation, request))
                    if conversation.id not in self._conversations:  # it left no trace
                        await asyncio.shield(self._drop_checkpoints(conversation))
                if isinstance(exc, ModelRequestError):
                    await _grace(check)
                raise
            if recorder is not None:
                await asyncio.shield(self._finish_checkpoint(recorder, conversation, request))
            conversation.touch()
            await self._save(conversation)
            usage = window.usage(conversation.messages)
        await _grace(check)
        checkpoint_id = recorder.checkpoint.id if recorder is not None else None
        return _ask_result(conversation.id, result, usage, model_settings.model, checkpoint_id)

    # -- checkpoints -----------------------------------------------------------------

    @property
    def checkpoints(self) -> CheckpointService:
        if self._checkpoints is None:
            from ..checkpoints.service import CheckpointService

            self._checkpoints = CheckpointService(
                self._checkpoint_dir, on_warning=self._checkpoint_warning
            )
        return self._checkpoints

    def _checkpoint_warning(self, message: str) -> None:
        if self._on_warning is None:
            log.warning("%s", message)
        else:
            self._on_warning(EngineWarning(kind="checkpoints", message=message))

    async def _begin_checkpoint(
        self, conversation: Conversation, prompt: str, request: dict[str, Any]
    ) -> AskRecorder | None:
        """Start this ask's checkpoint; an ask still runs when the store cannot be used."""
        with self._store_problems("starting the checkpoint"):
            return await self.checkpoints.begin(
                conversation.workspace_root, conversation.id, prompt, _digest(request)
            )
        return None

    async def _finish_checkpoint(
        self, recorder: AskRecorder, conversation: Conversation, request: dict[str, Any]
    ) -> None:
        kept = any(m is request for m in conversation.messages)  # compaction may move it
        with self._store_problems("recording the checkpoint"):
            await recorder.finish(in_conversation=kept)

    async def _drop_checkpoints(self, conversation: Conversation) -> None:
        with self._store_problems("dropping the session's checkpoints"):
            await self.checkpoints.end_session(conversation.workspace_root, conversation.id)

    @contextlib.contextmanager
    def _store_problems(self, what: str) -> Iterator[None]:
        """Checkpoint storage the environment refuses (a full disk, git failing) must
        not fail the ask: it is logged and shown to the user once (bugs still raise)."""
        from ..checkpoints.shadow_git import GitError

        try:
            yield
        except (OSError, GitError) as exc:
            log.warning("%s failed: %s", what, exc)
            self.checkpoints.warn(f"{what} failed ({exc}); this ask may not be undoable")

    def _checkpoint_session(self, session_id: str) -> tuple[Path, Conversation | None]:
        """The open folder whose checkpoints hold ``session_id``, and the conversation
        if the server still has it."""
        conversation = self._conversations.get(session_id)
        if conversation is not None:
            if conversation.workspace_root not in self._folders:
                raise InvalidParamsError(
                    "sessionId",
                    f"the session belongs to {conversation.workspace_root}, which is not an "
                    "open workspace folder",
                )
            return conversation.workspace_root, conversation
        for root in self._folders:
            if self.checkpoints.has_session(root, session_id):
                return root, None
        raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")

    async def list_checkpoints(self, session_id: str) -> p.CheckpointsResult:
        root, _ = self._checkpoint_session(session_id)
        with _checkpoint_errors():
            found = await self.checkpoints.checkpoints(root, session_id)
        return p.CheckpointsResult([_checkpoint_summary(c) for c in found])

    async def checkpoint_diff(
        self, session_id: str, checkpoint_id: str, *, include_content: bool = False
    ) -> p.DiffResult:
        root, _ = self._checkpoint_session(session_id)
        with _checkpoint_errors():
            files = await self.checkpoints.diff(
                root, session_id, checkpoint_id, include_content=include_content
            )
        return p.DiffResult(
            [
                p.FileDiff(f.path, f.status, f.diff or "", f.diff is None, f.before, f.after)
                for f in files
            ]
        )

    async def rewind(
        self, session_id: str, checkpoint_id: str, *, dry_run: bool = False
    ) -> p.RewindResult:
        """Undo the asks from ``checkpoint_id`` on and cut the conversation back to
        before it (refused while the session is answering an ask)."""
        root, conversation = self._checkpoint_session(session_id)
        if conversation is not None and conversation.busy:
            raise SessionBusyError(
                f"Session {session_id} is answering an ask; wait for it or cancel it first."
            )
        lock = conversation.lock if conversation is not None else asyncio.Lock()
        async with lock:
            with _checkpoint_errors():
                outcome, undone = await self.checkpoints.rewind(
                    root, session_id, checkpoint_id, editor=self._editor, dry_run=dry_run
                )
            truncated = conversation is not None and _cut_before(
                conversation, undone, dry_run=dry_run
            )
            if truncated and not dry_run:
                assert conversation is not None
                conversation.touch()
                await self._save(conversation)
        return p.RewindResult(
            restored=outcome.restored,
            in_editor=outcome.in_editor,
            conflicts=[p.RewindConflict(path, reason) for path, reason in outcome.conflicts],
            conversation_truncated=truncated,
            dry_run=dry_run,
        )

    def _context_window(
        self, conversation: Conversation, model: str, runtime: ToolRuntime | None
    ) -> ContextWindow:
        settings = self._settings
        return ContextWindow(
            window_for(model, settings.context_window),
            conversation.context,
            conversation.archive,
            model=model,
            threshold=settings.compact_threshold,
            fixed_chars=len(json.dumps(runtime.schemas())) if runtime is not None else 0,
        )

    async def compact(self, session_id: str) -> p.CompactResult:
        """Compact a conversation now (``agent/compact``): old tool outputs elided,
        older turns summarized by the model, whatever its size."""
        conversation = self.conversation(session_id)
        model_settings = self.model_settings()
        await self._ready()
        client = await self._client(model_settings)
        # The tools' schemas count only until a response calibrated the estimate, and
        # the conversation's folder need not be open to compact it.
        folder = self._folders.get(conversation.workspace_root)
        runtime = await folder.runtime() if folder is not None else None
        if conversation.lock.locked():
            raise SessionBusyError(
                f"Session {conversation.id} is answering an ask; compact it after that."
            )
        async with conversation.lock:
            window = self._context_window(conversation, model_settings.model, runtime)
            before = window.tokens(conversation.messages)

            async def summarize(request: list[dict[str, Any]]) -> str:
                return await complete_text(client, model_settings.model, request)

            done = await window.fit(conversation.messages, summarize, trigger="request", force=True)
            after = window.tokens(conversation.messages)
            if done is not None and (done.elided or done.summarized):
                await self._save(conversation)
        return p.CompactResult(
            before,
            after,
            window.window,
            done.elided if done else 0,
            done.summarized if done else 0,
        )

    async def _settle_unfinished(
        self, conversation: Conversation, request: dict[str, Any], *, created: bool
    ) -> None:
        """Leave the conversation of an ask that failed or was cancelled usable.

        Until the model has answered once nothing happened: the ask leaves no trace
        (its ``request`` message goes, and a conversation this ask created with it; a
        retry of the same prompt then does not stack a duplicate). Once it has
        answered, its turns stay, even cut short: the tools they ran may have changed
        files, which the model must go on knowing (the loop has paired every call).
        The request is found by identity: compaction may have moved it.
        """
        messages = conversation.messages
        at = next((i for i, m in enumerate(messages) if m is request), None)
        if at is not None and not _answered(messages, at + 1):
            del messages[at:]
            if created:
                self._conversations.drop(conversation.id)
                return
        await self._save(conversation)

    def _check_model(self, settings: ModelSettings, client: AsyncOpenAI) -> asyncio.Task[None]:
        """Check, once per endpoint and model, that the endpoint serves the model.

        Runs beside the ask's first request, so the ask does not wait for it.
        """
        key = (settings.base_url, settings.model)
        check = self._model_checks.get(key)
        if check is None:
            check = asyncio.create_task(self._report_unserved_model(settings, client))
            check.add_done_callback(_log_failure)
            self._model_checks[key] = check
        return check

    async def _report_unserved_model(self, settings: ModelSettings, client: AsyncOpenAI) -> None:
        from ..model.served_models import is_served, not_served_warning, served_models

        served = await served_models(client, http_timeout=settings.timeout)
        if served is None or is_served(settings.model, served):
            return
        message = not_served_warning(settings.model, served, settings.base_url)
        if self._on_warning is None:
            log.warning("%s", message)
        else:
            self._on_warning(EngineWarning(kind="model_not_served", message=message))

    async def _save(self, conversation: Conversation) -> None:
        # Called under the conversation's lock, so nothing appends while it is written.
        if self._files is not None:
            await asyncio.to_thread(self._conversations.save, conversation)

    async def aclose(self) -> None:
        if self._checkpoints is not None:
            await self._checkpoints.aclose()
        checks = [check for check in self._model_checks.values() if not check.done()]
        for check in checks:
            check.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


def _answered(messages: list[dict[str, Any]], since: int) -> bool:
    return any(m.get("role") == "assistant" for m in messages[since:])


async def _grace(check: asyncio.Task[None]) -> None:
    if not check.done():
        await asyncio.wait({check}, timeout=MODEL_CHECK_GRACE_S)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("The model check failed", exc_info=exc)


def _ask_result(
    session_id: str,
    loop: LoopResult,
    context: dict[str, int],
    model: str,
    checkpoint_id: str | None = None,
) -> p.AskResult:
    return p.AskResult(
        answer=loop.text,
        session_id=session_id,
        stop_reason=loop.stop_reason,
        turns=loop.turns,
        tool_calls=[
            p.ToolCallResult(
                call.id, call.name, call.arguments, call.ok, call.output, round(call.duration_ms, 1)
            )
            for call in loop.tool_calls
        ],
        usage={**loop.usage.as_dict(), **context},
        model=model,
        checkpoint_id=checkpoint_id,
    )


def _call_parts(call: Mapping[str, Any]) -> tuple[str, str]:
    function = call.get("function") or {}
    return str(function.get("name") or ""), str(function.get("arguments") or "")


def _ignore(event: object) -> None:
    pass


def _checkpoint_summary(checkpoint: Checkpoint) -> p.CheckpointSummary:
    from datetime import UTC, datetime

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


def _cut_before(conversation: Conversation, undone: list[Checkpoint], *, dry_run: bool) -> bool:
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
            if message.get("role") == "user" and _digest(message) == target:
                same -= 1
                if same == 0:
                    if not dry_run:
                        del messages[index:]
                        conversation.ledger.seen.clear()  # the model forgets what it read
                    return position == 0
    return False


def _digest(message: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(
        str(message.get("content") or "").encode("utf-8", "surrogatepass")
    ).hexdigest()


@contextlib.contextmanager
def _checkpoint_errors() -> Iterator[None]:
    from ..checkpoints.service import CheckpointBusyError
    from ..checkpoints.shadow_git import GitError
    from ..checkpoints.store import CheckpointError

    try:
        yield
    except CheckpointError as exc:
        raise InvalidParamsError(exc.field, str(exc)) from None
    except CheckpointBusyError as exc:
        raise SessionBusyError(str(exc)) from None
    except (OSError, GitError) as exc:
        raise AgentError(f"The checkpoint store failed: {exc}") from None
