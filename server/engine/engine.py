"""The agent engine: the one facade the faces call (folders, sessions, asks, undo).

Protocol-free (no pygls here) so every front end and the tests drive the same
code; ``server.lsp.server`` is a thin mapping of JSON-RPC onto this class. Results
are the protocol's typed values (``server.protocol``), plain attrs data. Its parts
are their own modules: the open folders and their tools (``folders``), the model
endpoints (``endpoints``), the sessions and their history (``history``), the
checkpoints (``undo``); what is here joins them: the warm-up, and an ask.

The engine never blocks its event loop on heavy work: the SDK, jsonschema, the
loop and the tools are imported, and runtimes and model clients built, in a worker
thread (:meth:`AgentEngine.warm_up`, started by the server after ``initialized``);
an ask or listTools that arrives earlier awaits that work instead of doing it
on the loop (importing on the loop while the warm-up thread holds the import
lock would block every other request).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooling.documents import EditorDocuments
from tools import programs

from .. import protocol as p
from ..agent.events import EngineWarning, EventSink, WarningSink
from ..agent.permissions import Asker
from ..config.own_secrets import hidden_paths
from ..config.user_config import config_path, permission_warning
from ..conversations.conversations import Conversation
from ..conversations.editor_context import with_context, with_note
from ..errors import InvalidParamsError, SessionBusyError
from ..language.servers import folder_languages
from ..mcp.servers import approve_with_user, folder_servers, listing, server_log, wait_for_starting
from ..mcp.servers import control as mcp_control
from ..model.endpoint import ModelNotConfiguredError, ModelRequestError, ModelSettings
from ..model.messages import UserMessage, user_message
from ..project.project import Project, commands_result, instructions_result
from ..project.prompts import system_prompt
from ..settings.modes import DEFAULT_MODE, apply_mode
from ..settings.settings import AgentSettings
from .asks import ask_result, tool_context
from .endpoints import Endpoints, grace
from .folders import Folder, Folders, known_tools_only
from .history import Sessions, context_window
from .undo import Undo
from .undo import cut_before as _cut_before  # noqa: F401 (tests/test_checkpoints.py)
from .undo import digest as _digest  # noqa: F401 (tests/test_checkpoints.py)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from tooling.runtime import ToolRuntime

    from ..agent.compaction import ContextWindow
    from ..agent.loop import LoopResult
    from ..checkpoints.rewind import RewindEditor
    from .folders import LanguageFactory

log = logging.getLogger(__name__)


class AgentEngine:
    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        max_conversations: int = 100,
        session_dir: Path | None = None,
        checkpoint_dir: Path | None = None,
        warm: bool = True,
    ) -> None:
        self._environ = environ
        # False (``--no-warm-up``): a server for a command that asks nothing (``agent-lsp mcp
        # list``): no model SDK, no model check (its warning), no checkpoint stores at start.
        self._warm_asks = warm
        self._settings = AgentSettings()
        env = os.environ if environ is None else environ
        # agent-lsp's own files (key, conversations): no sandboxed bash command reads them.
        hidden = hidden_paths(env, state=(session_dir,))
        mcp = folder_servers(
            env, lambda: self._settings.mcp_servers, lambda m: self._warn("mcp", m)
        )
        user = config_path(env)
        self._project = Project(user.parent if user else None, lambda m: self._warn("project", m))
        readable = (self._project.skills_dir,) if self._project.skills_dir else ()
        languages = folder_languages(env, user, hidden, lambda m: self._warn("language", m))
        self._folders = Folders(lambda: self._settings, hidden, mcp, readable, languages)
        self._sessions = Sessions(max_conversations=max_conversations, session_dir=session_dir)
        self._endpoints = Endpoints(environ, lambda m: self._warn("model_not_served", m))
        self._undo = Undo(
            checkpoint_dir, self._sessions, self._folders, lambda m: self._warn("checkpoints", m)
        )
        self._documents: EditorDocuments | None = None
        self._editor: RewindEditor | None = None
        self._on_warning: WarningSink | None = None
        self._warm: asyncio.Task[None] | None = None
        self._asks_can_run: asyncio.Future[None] | None = None  # set by the warm-up
        self._asked = False  # an ask waited for the warm-up

    def attach_documents(
        self, documents: EditorDocuments | None, editor: RewindEditor | None = None
    ) -> None:
        """Give the file tools the editor's open buffers (the language server does), and
        rewinds a way to restore open documents through the editor."""
        self._documents = documents
        self._editor = editor

    def attach_languages(self, factory: LanguageFactory | None) -> None:
        """Give the folders opened from now on another source of language features than
        the language servers agent-lsp starts (the LSP face: the editor's own, for a
        client that answers for them); None: none at all."""
        self._folders.set_language_servers(factory)

    def attach_warnings(self, sink: WarningSink | None) -> None:
        """Where warnings that belong to no ask go (the language server shows them)."""
        self._on_warning = sink

    def _warn(self, kind: str, message: str) -> None:
        if self._on_warning is None:
            log.warning("%s", message)
        else:
            self._on_warning(EngineWarning(kind=kind, message=message))

    # -- readiness -------------------------------------------------------------------

    def warm_up(self) -> asyncio.Task[None]:
        """Start (once) importing and building what asks need, off the event loop."""
        if self._warm is None:
            loop = asyncio.get_running_loop()
            self._asks_can_run = loop.create_future()
            self._warm = loop.create_task(self._warm_up())
        return self._warm

    async def _warm_up(self) -> None:
        # Cheapest first: what listTools needs, then what running tools needs, then
        # the SDK (most of the time), the checkpoint stores meanwhile (git runs in its
        # own processes, beside the import). Asks may run from there on; what only
        # saves a first ask a few milliseconds (the SDK's request path rehearsed, the
        # protocol's converters) comes after, and is not done for an ask that waited:
        # it would make that ask wait longer than the few milliseconds it saves it. The
        # MCP servers last: their SDK's import (1.4 s of CPU, as long as openai's)
        # would share the one GIL with what a first ask waits for, while an ask never
        # waits for an MCP server (bench/results/mcp.md).
        ok = False
        try:
            await self._folders.warm_up()
            if not self._warm_asks:
                self._release_asks()
                self._folders.refresh_mcp()
                return
            await asyncio.to_thread(self._undo.load)
            # False: the SDK cannot be imported, and an ask will report the broken install.
            sdk = asyncio.ensure_future(self._endpoints.warm_up(self._settings.model_overrides()))
            # The checkpoint stores (a shadow repository created or checked per folder),
            # so the first ask's checkpoint is only its snapshot.
            await self._undo.prepare()
            ok = await sdk
            if ok:
                await self._sessions.prune()
        finally:
            self._release_asks()
        if ok:
            await self._endpoints.rehearse(rehearse_requests=not self._asked)
        self._folders.refresh_mcp()

    def _release_asks(self) -> None:
        if self._asks_can_run is not None and not self._asks_can_run.done():
            self._asks_can_run.set_result(None)

    async def _ready(self) -> None:
        """Once asks can run (the warm-up's first part is done, or it failed: raised)."""
        warm = self.warm_up()
        assert self._asks_can_run is not None
        if self._asks_can_run.done():
            return
        self._asked = True
        await asyncio.wait({warm, self._asks_can_run}, return_when=asyncio.FIRST_COMPLETED)
        if not self._asks_can_run.done():
            await asyncio.shield(warm)  # raises what the warm-up raised

    # -- configuration -------------------------------------------------------------

    @property
    def settings(self) -> AgentSettings:
        return self._settings

    def update_settings(self, settings: AgentSettings, *, sandbox_notice: bool = True) -> list[str]:
        """New editor settings; returns the problems found, one per field.

        Tool runtimes are rebuilt if their settings changed; asks already running keep
        the runtime they started with. An ``enabledTools`` naming an unknown tool
        leaves the tools as they were (a typo must not silently disable or enable one).
        """
        settings, problems = known_tools_only(settings, self._settings)
        self._settings = settings
        programs.mark_agent_writable(settings.sandbox.writable_roots)
        self._folders.rebuild()
        # False: the caller asks for it later (the language server, after `initialize`).
        if sandbox_notice and (notice := self.sandbox_notice()):
            problems.append(notice)
        return problems

    def sandbox_notice(self) -> str | None:
        """Once per process: the settings want a sandbox this system cannot enforce."""
        return self._folders.sandbox_notice()

    def config_warnings(self) -> list[str]:
        """Problems of the user configuration file to show once (other users can read it)."""
        path = config_path(os.environ if self._environ is None else self._environ)
        warning = permission_warning(path) if path is not None else None
        return [warning] if warning else []

    def model_settings(self) -> ModelSettings:
        """Resolved model settings; raises ModelNotConfiguredError with what to set."""
        return self._endpoints.settings(self._settings.model_overrides())

    def configured_model(self) -> str | None:
        """The model asks use as configured now (no request made); None: not configured."""
        try:
            return self.model_settings().model
        except ModelNotConfiguredError:
            return None

    async def list_models(self) -> p.ListModelsResult:
        """The models the endpoint lists, and the one asks use (``agent/listModels``)."""
        return await self._endpoints.list_models(self.model_settings())

    async def check_connection(self) -> p.CheckConnectionResult:
        """Whether the endpoint works, in plain words (``agent/checkConnection``)."""
        return await self._endpoints.check_connection(self._settings.model_overrides())

    # -- workspace folders -----------------------------------------------------------

    def set_folders(self, paths: list[Path]) -> list[str]:
        """Replace the open folders; returns warnings for folders that cannot be used (or
        that hold agent-lsp's own files)."""
        return self._folders.set(paths)

    def add_folder(self, path: Path) -> str | None:
        return self._folders.add(path)

    def remove_folder(self, path: Path) -> None:
        self._folders.remove(path)

    @property
    def folders(self) -> list[Path]:
        return self._folders.roots

    def folder(self, path: Path | None) -> Folder:
        """The named folder, or the first; errors name what is wrong."""
        return self._folders.folder(path)

    async def list_tools(self, folder: Path | None = None) -> list[p.ToolInfo]:
        return await self._folders.list_tools(folder)

    async def mcp_servers(self, folder: Path | None = None) -> p.McpServersResult:
        """``agent/mcpServers``: the folder's MCP servers, their states, tools and errors."""
        return await listing(self.folder(folder).mcp)

    async def approve_mcp_server(
        self, name: str, folder: Path | None = None, *, asker: Asker | None = None
    ) -> p.ApproveMcpServerResult:
        """``agent/approveMcpServer``: may the folder's own server ``name`` start?"""
        return await approve_with_user(self.folder(folder).mcp, name, asker)

    async def control_mcp_server(
        self, name: str, action: str, folder: Path | None = None
    ) -> p.McpServerInfo:
        """``agent/controlMcpServer``: the user starts, stops or restarts ``name``."""
        return await mcp_control(self.folder(folder).mcp, name, action)

    async def mcp_server_log(self, name: str, folder: Path | None = None) -> p.McpServerLogResult:
        """``agent/mcpServerLog``: one server's own output."""
        return await server_log(self.folder(folder).mcp, name)

    async def close_mcp_servers(self) -> None:
        """End every MCP server (shutdown): their process groups too."""
        await self._folders.aclose()

    def sandbox_status(
        self, folder: Path | None = None, session_id: str | None = None
    ) -> p.SandboxStatus:
        """``agent/sandboxStatus``: the bash sandbox of a folder, its layers in force; with a
        session, its folder's and ``grants``: the user's "always" answers that let its bash
        calls leave the sandbox (a host's network, an exact escalated command)."""
        conversation, target = self._ask_target(session_id, folder)
        status = self._folders.sandbox_status(target.workspace.root)
        if conversation is not None:
            status["grants"] = [
                p.SandboxGrant(grantId=g.grant_id, title=g.title)
                for g in self._sessions.grants(conversation.id)
                if g.tool_name == "bash" and g.decision == "allow" and _escalates(g.arguments)
            ]
        return status

    # -- sessions --------------------------------------------------------------------

    def new_session(self, folder: Path | None = None) -> Conversation:
        """A conversation in ``folder`` (default: the first), before any ask."""
        root = self.folder(folder).workspace.root
        return self._sessions.create(root, system_prompt(root, self._settings.system_prompt))

    def conversation(self, session_id: str) -> Conversation:
        return self._sessions.get(session_id)

    async def end_session(self, session_id: str) -> bool:
        conversation = self._sessions.find(session_id)
        if conversation is not None and conversation.workspace_root in self._folders:
            await self._undo.drop(conversation)
        return self._sessions.drop(session_id)  # its grants go with it

    def grants(self, session_id: str) -> list[p.GrantInfo]:
        return self._sessions.grants(session_id)

    def revoke_grant(self, session_id: str, grant_id: str) -> bool:
        return self._sessions.revoke_grant(session_id, grant_id)

    async def sessions(self, folder: Path | None = None) -> list[p.SessionSummary]:
        root = self.folder(folder).workspace.root if folder is not None else None
        return await self._sessions.summaries(root)

    async def remember_mode(self, session_id: str, mode: str) -> None:
        """The mode a client chose for a conversation, saved with it (a conversation with
        no ask yet is saved by its first)."""
        conversation = self.conversation(session_id)
        conversation.mode = mode
        if conversation.messages and not conversation.busy:
            await self._sessions.save(conversation)

    async def history(self, session_id: str) -> p.SessionHistoryResult:
        """What a client needs to redraw a conversation (``agent/sessionHistory``), its
        tool calls named as live activity names them while the folder is open (the tools
        its registry knows now: an MCP server's, once it has started)."""
        conversation = self.conversation(session_id)
        folder = self._folders.get(conversation.workspace_root)
        runtime = await folder.runtime() if folder is not None else None
        return self._sessions.history(
            session_id, runtime.display_name if runtime is not None else None
        )

    def tool_output(self, session_id: str, call_id: str) -> p.ToolOutputResult:
        """A tool call's whole output, as the model received it (``agent/toolOutput``)."""
        return self._sessions.tool_output(session_id, call_id)

    async def compact(self, session_id: str) -> p.CompactResult:
        """Compact a conversation now (``agent/compact``): old tool outputs elided,
        older turns summarized by the model, whatever its size."""
        conversation = self.conversation(session_id)
        model = self.model_settings()
        await self._ready()
        client = await self._endpoints.client(model)
        # The conversation's folder need not be open to compact it.
        folder = self._folders.get(conversation.workspace_root)
        runtime = await folder.runtime() if folder is not None else None
        return await self._sessions.compact(
            conversation, self._settings, client=client, model=model.model, runtime=runtime
        )

    # -- asks ------------------------------------------------------------------------

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
        documents: EditorDocuments | None = None,
        mode: str = DEFAULT_MODE,
        model_name: str | None = None,
        disabled_tools: Sequence[str] = (),
    ) -> p.AskResult:
        """Run one ask; ``on_session`` learns the session id before any tool runs.

        ``context`` (what the user is looking at) becomes a note after the prompt.
        ``asker`` reaches the user for calls that need permission (none: such calls
        are refused, and the model is told why). ``documents``: the editor's files as
        this ask's tools see them (default: the attached ones); ``mode`` narrows what the
        tools may do (``server.settings.modes``); ``model_name`` replaces the configured model;
        ``disabled_tools``: the tools the user turned off (names, ``mcp__SERVER__*``), not
        offered to the model, a call to one refused saying so.
        """
        given = self._ask_given(prompt, mode, documents, asker, on_event)
        conversation, target = self._ask_target(session_id, folder)
        content = await self._ask_content(given, context, target)
        # Fail before touching the conversation when the model is not configured.
        model, client = await self._ask_model(target, model_name)
        conversation, created = self._take(conversation, target, on_session)
        check = self._endpoints.check_model(model, client)
        async with conversation.lock:
            conversation.mode = mode
            content = await self._with_starting_servers(target, content, on_event)
            runtime, unavailable = await self._ask_tools(target, given.settings, disabled_tools)
            await self._project.tell(
                conversation, target.workspace, given.settings, given.documents
            )
            window = context_window(conversation, given.settings, model.model, runtime)
            try:
                result, checkpoint_id = await self._run_loop(
                    given,
                    conversation,
                    target,
                    user_message(content),
                    created=created,
                    runtime=runtime,
                    unavailable=unavailable,
                    model=model,
                    client=client,
                    window=window,
                )
            except ModelRequestError:
                await grace(check)  # the ask failed: still show why its model may be wrong
                raise
            conversation.touch()
            await self._sessions.save(conversation)
            usage = window.usage(conversation.messages)
        await grace(check)
        return ask_result(conversation.id, result, usage, model.model, checkpoint_id)

    def _ask_given(
        self,
        prompt: str,
        mode: str,
        documents: EditorDocuments | None,
        asker: Asker | None,
        on_event: EventSink | None,
    ) -> _Given:
        """What an ask was given, checked: its prompt, and the settings its mode leaves."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidParamsError("prompt", "must be a non-empty string")
        try:
            settings = apply_mode(self._settings, mode)
        except ValueError as exc:
            raise InvalidParamsError("mode", str(exc)) from None
        documents = documents if documents is not None else self._documents
        return _Given(prompt, settings, documents, asker, on_event)

    async def _ask_content(
        self, given: _Given, context: p.EditorContext | None, target: Folder
    ) -> str:
        """The request's text: the prompt (a /NAME of a prompt file expanded), then the
        note of what the user is looking at."""
        expanded = await self._project.expand(given.prompt, target.workspace)
        return await with_context(expanded, context, target.workspace, given.documents)

    async def _ask_model(
        self, target: Folder, model_name: str | None
    ) -> tuple[ModelSettings, AsyncOpenAI]:
        """The model an ask talks to (``model_name`` over the configured one) and its
        client; the folder's MCP servers are started meanwhile if they are not."""
        model = self.model_settings()
        if model_name:
            model = dataclasses.replace(model, model=model_name)
        await self._ready()
        self._folders.refresh_mcp(target, retry=True)  # never waits for a server
        return model, await self._endpoints.client(model)

    def _take(
        self,
        conversation: Conversation | None,
        target: Folder,
        on_session: Callable[[str], None] | None,
    ) -> tuple[Conversation, bool]:
        """The conversation the ask goes on in (a new one for None) and whether it was
        created; refused while another ask answers in it."""
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
        return conversation, created

    async def _with_starting_servers(
        self, target: Folder, content: str, on_event: EventSink | None
    ) -> str:
        """The folder's MCP servers still starting are waited for (bounded), so that the
        first ask after a start has their tools; the model is told of those missing."""
        missing = await wait_for_starting(target.mcp, on_event)
        return with_note(content, missing) if missing is not None else content

    async def _ask_tools(
        self, target: Folder, settings: AgentSettings, disabled_tools: Sequence[str]
    ) -> tuple[ToolRuntime, Callable[[str], str | None] | None]:
        """The tools the model is offered (those the user turned off left out), and why a
        name it may call is not among them."""
        runtime = await self._folders.variant(target, settings.tools()).runtime()
        unavailable: Callable[[str], str | None] | None = (
            target.mcp.unavailable if target.mcp else None
        )
        if disabled_tools:
            turned_off = turned_off_by(disabled_tools)
            runtime = runtime.without(turned_off)
            unavailable = _turned_off_note(turned_off, unavailable)
        return runtime, unavailable

    async def _run_loop(
        self,
        given: _Given,
        conversation: Conversation,
        target: Folder,
        request: UserMessage,
        *,
        created: bool,
        runtime: ToolRuntime,
        unavailable: Callable[[str], str | None] | None,
        model: ModelSettings,
        client: AsyncOpenAI,
        window: ContextWindow,
    ) -> tuple[LoopResult, str | None]:
        """``request`` added to the conversation and answered by the agent loop, its
        changes recorded as a checkpoint; the loop's result and that checkpoint's id. An
        ask that fails or is cancelled leaves its conversation usable (``settle``)."""
        settings, documents = given.settings, given.documents
        settle = functools.partial(
            self._sessions.settle_unfinished, conversation, request, created=created
        )
        async with self._undo.recording(
            conversation, given.prompt, request, settle=settle
        ) as recorder:
            conversation.messages.append(request)
            # On disk before the model is asked: a server killed mid-ask leaves
            # the prompt, listed as interrupted (a log line, not the whole file).
            self._sessions.save_soon(conversation, state="running")
            result = await _agent_loop()(
                conversation.messages,
                runtime,
                client=client,
                model=model.model,
                max_turns=settings.max_turns,
                on_event=given.on_event,
                context=tool_context(
                    conversation,
                    settings.approval,
                    documents=documents,
                    asker=given.asker,
                    on_event=given.on_event,
                    journal=recorder,
                    path_notes=self._project.nested(
                        conversation, target.workspace, settings, documents
                    ),
                    unavailable=unavailable,
                    language=target.language,
                ),
                window=window,
                streaming=self._endpoints.streaming(model),
            )
        return result, recorder.checkpoint_id if recorder is not None else None

    # -- what an ask is told -----------------------------------------------------------

    async def instructions(
        self, session_id: str | None = None, folder: Path | None = None
    ) -> p.InstructionsResult:
        """``agent/instructions``: the instruction files and skills an ask would be given
        (with a session: its folder's, and the subfolders' it has been given since)."""
        conversation, target = self._ask_target(session_id, folder)
        given = await self._project.files(target.workspace, self._settings, self._documents)
        return instructions_result(*given, conversation)

    async def list_commands(
        self, session_id: str | None = None, folder: Path | None = None
    ) -> p.CommandsResult:
        """``agent/listCommands``: the built-in commands and the user's prompt files."""
        _, target = self._ask_target(session_id, folder)
        return commands_result(await asyncio.to_thread(self._project.commands, target.workspace))

    def _ask_target(
        self, session_id: str | None, folder: Path | None
    ) -> tuple[Conversation | None, Folder]:
        """The conversation an ask continues (None: a new one) and the folder it acts in."""
        if session_id is None:
            return None, self.folder(folder)
        conversation = self.conversation(session_id)
        if folder is not None and Path(folder).resolve() != conversation.workspace_root:
            raise InvalidParamsError(
                "workspaceFolder", "the session belongs to another workspace folder"
            )
        return conversation, self.folder(conversation.workspace_root)

    # -- checkpoints -----------------------------------------------------------------

    async def list_checkpoints(self, session_id: str) -> p.CheckpointsResult:
        return await self._undo.checkpoints(session_id)

    async def checkpoint_diff(
        self, session_id: str, checkpoint_id: str, *, include_content: bool = False
    ) -> p.DiffResult:
        return await self._undo.diff(session_id, checkpoint_id, include_content=include_content)

    async def rewind(
        self,
        session_id: str,
        checkpoint_id: str,
        *,
        dry_run: bool = False,
        editor: RewindEditor | None = None,
    ) -> p.RewindResult:
        """Undo the asks from ``checkpoint_id`` on and cut the conversation back to
        before it (refused while the session is answering an ask). ``editor``: the files
        of the face that asks (an ACP session's client), else the attached one."""
        return await self._undo.rewind(
            session_id, checkpoint_id, dry_run=dry_run, editor=editor or self._editor
        )

    async def aclose(self) -> None:
        await self.close_mcp_servers()
        await self._undo.aclose()
        await self._endpoints.aclose()


@dataclass(frozen=True)
class _Given:
    """What one ask was given, checked, for its steps (:meth:`AgentEngine.ask`)."""

    prompt: str
    settings: AgentSettings  # the engine's, narrowed by the ask's mode
    documents: EditorDocuments | None  # the editor's files as its tools see them
    asker: Asker | None
    on_event: EventSink | None


def _escalates(arguments: str) -> bool:
    """Whether a grant's arguments (canonical JSON) leave the sandbox: an escalation, or the
    hosts a network grant covers (its scope)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return False
    if not isinstance(parsed, dict):
        return False
    return bool(parsed.get("escalation") or parsed.get("network_hosts"))


def turned_off_by(disabled: Sequence[str]) -> Callable[[str], bool]:
    """Whether a tool name is one of ``disabled``: a name, or ``PREFIX*`` (an MCP server's
    tools, ``mcp__SERVER__*``) for the names starting with PREFIX."""
    names = frozenset(d for d in disabled if not d.endswith("*"))
    prefixes = tuple(d[:-1] for d in disabled if d.endswith("*"))
    return lambda name: name in names or (bool(prefixes) and name.startswith(prefixes))


def _turned_off_note(
    turned_off: Callable[[str], bool], otherwise: Callable[[str], str | None] | None
) -> Callable[[str], str | None]:
    """Why a tool name the model called is not there: turned off, else ``otherwise``'s."""

    def why(name: str) -> str | None:
        if turned_off(name):
            return f"{name} is turned off by the user for this conversation; do without it."
        return otherwise(name) if otherwise is not None else None

    return why


def _agent_loop() -> Any:
    # Imported by the warm-up thread (endpoints._import_sdk) before an ask runs, not on the
    # way to `initialize` (bench/results/startup.md).
    from ..agent.loop import agent_loop

    return agent_loop
