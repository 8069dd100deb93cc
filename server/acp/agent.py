"""The ACP agent: the Agent Client Protocol's methods mapped onto the engine.

Thin, as the LSP face is: the SDK (``agent-client-protocol``) parses every request into
its schema's classes (a malformed one is -32602 there), each method here makes one or two
engine calls, and :func:`_errors` maps the engine's errors onto JSON-RPC errors in one
place. An ACP session is one of the engine's conversations (the same id, the same store:
a conversation started in VS Code can be loaded here and back). What only ACP has lives
beside this module: the prompt's updates (``updates``), the client's files
(``documents``), permission requests (``permissions``), the ``/`` commands
(``commands``), prompt content and history replay (``content``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import attrs
from acp import helpers
from acp.exceptions import RequestError
from acp.schema import (
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionInfo,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    UsageUpdate,
)

from .. import protocol as p
from ..engine.engine import AgentEngine
from ..errors import AgentError, InvalidParamsError, SessionBusyError
from ..model.endpoint import ModelNotConfiguredError, ModelRequestError
from ..settings.modes import DEFAULT_MODE, MODES, mode_ids
from .commands import available_commands, command_of, run_command
from .content import McpServers, fresh_blocks, prompt_parts, replay, session_servers
from .documents import AcpDocuments
from .handshake import AUTH_METHOD, SETUP, initialize_response
from .options import MODE, MODEL, config_options, with_models
from .ownership import SessionClaims
from .permissions import AcpAsker
from .updates import PromptReporter

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000  # ACP's auth_required
# What auth_required's data names, for a client that shows data rather than the message.
SETUP_STEPS = [
    "agent-lsp config set-key",
    "agent-lsp config set base_url URL",
    "agent-lsp config set model NAME",
    "agent-lsp config check",
]
# The engine's configuration messages name the editor's settings; an ACP client forwards
# none (its agent is configured in a terminal: SETUP).
_CLIENT_NEUTRAL = (
    ("or set the editor setting agentLsp.baseUrl, ", ""),
    ("the editor setting agentLsp.", "the setting "),
)
STOP_REASONS = {
    "end_turn": "end_turn",
    "empty": "end_turn",
    "max_tokens": "max_tokens",
    "max_turns": "max_turn_requests",
}

P = ParamSpec("P")
R = TypeVar("R")


def _errors(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The engine's errors as JSON-RPC errors (messages never hold the key)."""

    @functools.wraps(method)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except p.ParamsError as exc:
            raise RequestError(
                p.INVALID_PARAMS, f"Invalid params: {exc}", {"field": exc.field}
            ) from None
        except AgentError as exc:
            raise RequestError(exc.code, exc.message, exc.data) from None
        except ModelNotConfiguredError as exc:
            raise not_configured(exc) from None
        except ModelRequestError as exc:
            data = {"status": exc.status, "kind": exc.kind, "attempts": exc.attempts}
            raise RequestError(p.MODEL_REQUEST_FAILED, str(exc), data) from None

    return run


def not_configured(exc: ModelNotConfiguredError) -> RequestError:
    """ACP's auth_required: what is missing and what to run, in the message and the data."""
    detail = str(exc)
    for ours, neutral in _CLIENT_NEUTRAL:
        detail = detail.replace(ours, neutral)
    data: dict[str, object] = {"authMethods": [AUTH_METHOD], "missing": detail, "run": SETUP_STEPS}
    if exc.action:
        data[p.ACTION_KEY] = exc.action
    return RequestError(AUTH_REQUIRED, f"{detail} {SETUP}", data)


@dataclass
class Session:
    """One ACP session: a conversation of the engine and what this client chose for it."""

    id: str
    root: Path
    documents: AcpDocuments | None
    mode: str = DEFAULT_MODE
    model: str | None = None  # None: the configured one
    mcp: McpServers = field(default_factory=dict)
    prompt: asyncio.Future[p.AskResult] | None = None  # the running ask
    kinds: dict[str, str] = field(default_factory=dict)  # each announced call's kind
    # The text of every prompt seen in this session (and of the loaded conversation's):
    # a client that sends them again as leading blocks is not asking them again.
    seen: set[str] = field(default_factory=set)
    title: str = ""  # as last sent in session_info_update


class AcpAgent:
    """Implements the SDK's ``acp.interfaces.Agent`` over one :class:`AgentEngine`."""

    def __init__(self, engine: AgentEngine) -> None:
        self._engine = engine
        self._conn: Any = None  # the SDK's AgentSideConnection, set by on_connect
        self._client = ClientCapabilities()
        self._sessions: dict[str, Session] = {}
        self._served: list[str] = []  # the endpoint's models, once listed
        self._listing: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()  # updates sent after a response
        self._claims = SessionClaims(os.environ)

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # -- set-up ------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._client = client_capabilities or ClientCapabilities()
        self._engine.warm_up()  # the SDK import and the tools, off the loop, before a prompt
        return initialize_response(protocol_version)

    @_errors
    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        self._engine.model_settings()  # configured since? (raises auth_required if not)
        return AuthenticateResponse()

    # -- sessions ----------------------------------------------------------------

    @_errors
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        root = self._open_folder(cwd)
        self._engine.model_settings()  # no endpoint: auth_required, before a session exists
        conversation = self._engine.new_session(root)
        session = self._add_session(conversation.id, root, mcp_servers)
        self._after_response(session)
        response = NewSessionResponse(
            session_id=session.id, modes=_modes(session.mode), config_options=self._options(session)
        )
        return with_models(response, self._model(session), self._served)

    @_errors
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        session = await self._reopen(cwd, session_id, mcp_servers)
        history = await self._engine.history(session.id)
        runtime = await self._engine.folder(session.root).runtime()
        for update in replay(history, runtime.kind):
            await self._conn.session_update(session_id=session.id, update=update)
        self._after_response(session)
        response = LoadSessionResponse(
            modes=_modes(session.mode), config_options=self._options(session)
        )
        return with_models(response, self._model(session), self._served)

    @_errors
    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        session = await self._reopen(cwd, session_id, mcp_servers)
        self._after_response(session)
        response = ResumeSessionResponse(
            modes=_modes(session.mode), config_options=self._options(session)
        )
        return with_models(response, self._model(session), self._served)

    @_errors
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        root = _absolute(cwd, "cwd") if cwd is not None else None
        if root is not None and root not in self._engine.folders:
            self._open_folder(cwd or "")
        found = await self._engine.sessions(root)
        # A conversation nobody has asked anything yet (a chat's own new session) is not
        # listed: there is nothing in it to resume, and it has no title.
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.session_id,
                    cwd=str(_path_of(s.workspace_folder)),
                    title=f"{s.title} (interrupted)" if s.state == "interrupted" else s.title,
                    updated_at=_iso(s.updated),
                )
                for s in found
                if s.turns > 0 or s.title
            ]
        )

    @_errors
    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        session = self._session(session_id)
        if session.prompt is not None:
            session.prompt.cancel()
        del self._sessions[session_id]
        self._claims.release(session_id)
        self._apply_mcp()  # servers only this session gave are stopped
        # The conversation stays saved (session/list, session/load), its checkpoints too.
        return CloseSessionResponse()

    @_errors
    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        session = self._session(session_id)
        if mode_id not in mode_ids():
            raise InvalidParamsError(
                "modeId", f"unknown mode; the modes are {', '.join(mode_ids())}"
            )
        await self._set_mode(session, mode_id)
        await self._send_options(session)
        return SetSessionModeResponse()

    @_errors
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        session = self._session(session_id)
        if config_id == MODE:
            if value not in mode_ids():
                raise InvalidParamsError("value", f"the modes are {', '.join(mode_ids())}")
            await self._set_mode(session, str(value))
        elif config_id == MODEL:
            if not isinstance(value, str) or not value.strip():
                raise InvalidParamsError("value", "a model name")
            session.model = value.strip()
        else:
            raise InvalidParamsError(
                "configId", f"no option {config_id!r}; the options: mode, model"
            )
        return SetSessionConfigOptionResponse(config_options=self._options(session))

    @_errors
    async def set_model(self, params: Any) -> dict[str, Any]:
        """The unstable ``session/set_model`` (``{sessionId, modelId}``), for clients that
        still use it: the same as the ``model`` config option, which clients are told of."""
        if not isinstance(params, dict):
            raise InvalidParamsError("params", "an object with sessionId and modelId")
        session_id, model_id = params.get("sessionId"), params.get("modelId")
        if not isinstance(session_id, str):
            raise InvalidParamsError("sessionId", "a session id")
        if not isinstance(model_id, str) or not model_id.strip():
            raise InvalidParamsError("modelId", "a model name")
        session = self._session(session_id)
        session.model = model_id.strip()
        await self._send_options(session)
        return {}

    # -- prompts -----------------------------------------------------------------

    @_errors
    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.prompt is not None and not session.prompt.done():
            raise SessionBusyError(
                f"Session {session_id} is already answering a prompt; wait for it or cancel it."
            )
        workspace = self._engine.folder(session.root).workspace
        reporter = PromptReporter(
            self._conn, session.id, workspace, session.documents, session.kinds
        )
        if session.documents is not None:
            session.documents.announced = reporter.sent
        try:
            blocks = fresh_blocks(prompt, session.seen)
            command = command_of(blocks)
            if command is not None:
                reporter.message(
                    await run_command(self._engine, session.id, *command, session.documents)
                )
                return PromptResponse(stop_reason="end_turn")
            text, notes = await prompt_parts(blocks, workspace, session.documents)

            def cancel() -> None:  # a permission request the client answered "cancelled"
                if session.prompt is not None:
                    session.prompt.cancel()

            # Its own task, so session/cancel ends the ask and not the SDK's request task
            # (which still answers: stopReason "cancelled").
            ask = asyncio.ensure_future(
                self._engine.ask(
                    text + notes,
                    session_id=session.id,
                    on_event=reporter,
                    asker=AcpAsker(self._conn, session.kinds, reporter.sent, cancel),
                    documents=session.documents,
                    mode=session.mode,
                    model_name=session.model,
                )
            )
            session.prompt = ask
            try:
                result = await ask
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not ask.cancelled() or (current is not None and current.cancelling()):
                    raise  # the connection is closing: not a session/cancel
                # The loop has ended its tools and kept no half turn.
                return PromptResponse(stop_reason="cancelled")
            self._usage(reporter, result)
            return PromptResponse(stop_reason=STOP_REASONS.get(result.stop_reason, "end_turn"))
        finally:
            self._info(reporter, session)
            await reporter.close()
            session.prompt = None
            if session.documents is not None:
                session.documents.announced = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.prompt is not None:
            session.prompt.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        """End every running prompt (the client is gone)."""
        running = [s.prompt for s in self._sessions.values() if s.prompt is not None]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=5)
        self._claims.release_all()

    # -- helpers -----------------------------------------------------------------

    def _open_folder(self, cwd: str) -> Path:
        root = _absolute(cwd, "cwd")
        if not root.is_dir():
            raise InvalidParamsError("cwd", f"{cwd} is not a folder")
        if root not in self._engine.folders:
            warning = self._engine.add_folder(root)
            if root.resolve() not in self._engine.folders:
                raise InvalidParamsError("cwd", warning or f"{cwd} cannot be used")
            if warning:
                log.warning("%s", warning)
        return root.resolve()

    def _add_session(self, session_id: str, root: Path, servers: list[Any] | None) -> Session:
        fs = self._client.fs
        read, write = bool(fs and fs.read_text_file), bool(fs and fs.write_text_file)
        documents = (
            AcpDocuments(self._conn, session_id, read=read, write=write) if read or write else None
        )
        session = Session(session_id, root, documents, mcp=session_servers(servers))
        self._sessions[session_id] = session
        self._apply_mcp()
        owner = self._claims.claim(session_id)
        if owner is not None:
            self._later(session, self._tell_shared(session, owner))
        return session

    async def _tell_shared(self, session: Session, owner: int) -> None:
        who = f"agent-lsp process {owner}" if owner > 0 else "another agent-lsp process"
        text = (
            f"This session is open in {who} too: both would add to one conversation "
            "without seeing each other's turns. Close it there, or start a new session."
        )
        log.warning("session %s: %s", session.id, text)
        await self._conn.session_update(
            session_id=session.id, update=helpers.update_agent_message_text(text)
        )

    async def _reopen(self, cwd: str, session_id: str, servers: list[Any] | None) -> Session:
        root = self._open_folder(cwd)
        self._engine.model_settings()
        conversation = self._engine.conversation(session_id)  # loaded from its file
        if conversation.workspace_root != root:
            raise InvalidParamsError("cwd", "the session belongs to another folder")
        existing = self._sessions.get(session_id)
        if existing is not None:
            return existing
        session = self._add_session(session_id, root, servers)
        if conversation.mode in mode_ids():
            session.mode = conversation.mode  # as it was left (saved with the conversation)
        history = (await self._engine.history(session_id)).entries
        session.seen.update(e.content.strip() for e in history if e.role == "user")
        session.title = conversation.title
        return session

    async def _set_mode(self, session: Session, mode: str) -> None:
        session.mode = mode
        await self._engine.remember_mode(session.id, mode)
        update = CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)
        await self._conn.session_update(session_id=session.id, update=update)

    def _model(self, session: Session) -> str:
        return session.model or self._engine.model_settings().model

    def _usage(self, reporter: PromptReporter, result: p.AskResult) -> None:
        """``usage_update``: the context's size now and the window (no cost: the endpoint
        does not say what a token costs)."""
        used, size = result.usage.get("contextTokens"), result.usage.get("contextWindow")
        if isinstance(used, int) and isinstance(size, int) and size > 0:
            update = UsageUpdate(session_update="usage_update", used=max(used, 0), size=size)
            reporter.update(update)

    def _info(self, reporter: PromptReporter, session: Session) -> None:
        """``session_info_update``: the title once the first prompt gives one (the same as
        session/list), and the time of this activity."""
        try:
            title = self._engine.conversation(session.id).title
        except AgentError:
            return
        update = SessionInfoUpdate(
            session_update="session_info_update", updated_at=_iso(time.time())
        )
        if title and title != session.title:
            session.title = update.title = title
        reporter.update(update)

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise InvalidParamsError("sessionId", f"unknown session {session_id!r}")
        return session

    def _apply_mcp(self) -> None:
        """The MCP servers every open session gave, as the editor's ``mcpServers``."""
        merged: McpServers = {}
        for session in self._sessions.values():
            merged.update(session.mcp)
        settings = self._engine.settings
        if (settings.mcp_servers or {}) != merged:
            value = merged or None
            for problem in self._engine.update_settings(attrs.evolve(settings, mcp_servers=value)):
                log.warning("%s", problem)

    def _options(self, session: Session) -> list[Any]:
        model = session.model or self._engine.model_settings().model
        return list(config_options(session.mode, model, self._served))

    async def _send_options(self, session: Session) -> None:
        update = ConfigOptionUpdate(
            session_update="config_option_update", config_options=self._options(session)
        )
        await self._conn.session_update(session_id=session.id, update=update)

    def _after_response(self, session: Session) -> None:
        """The commands, sent once the client knows the session (after the response); the
        endpoint's models listed once, in the background."""

        async def send() -> None:
            try:
                files = (await self._engine.list_commands(session.id)).commands
                update = helpers.update_available_commands(available_commands(files))
                await self._conn.session_update(session_id=session.id, update=update)
            except Exception as exc:
                log.info("available_commands_update not sent: %s", exc)

        self._later(session, send())
        if self._listing is None:
            self._listing = asyncio.get_running_loop().create_task(self._list_models())

    def _later(self, session: Session, work: Awaitable[None]) -> None:
        """``work`` after the response in hand (an update about a session the client
        must know first); kept referenced until done."""

        async def run() -> None:
            await asyncio.sleep(0)
            try:
                await work
            except Exception as exc:
                log.info("update for %s not sent: %s", session.id, exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _list_models(self) -> None:
        try:
            listed = await self._engine.list_models()
        except Exception as exc:  # an endpoint that does not list: the configured model only
            log.info("the endpoint's models are not listed: %s", exc)
            return
        served = [model.id for model in listed.models]
        if not served:
            return
        self._served = served
        for session in list(self._sessions.values()):
            try:
                await self._send_options(session)
            except Exception as exc:
                log.info("config_option_update not sent: %s", exc)


def _modes(current: str) -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES
        ],
    )


def _absolute(cwd: str, field_name: str) -> Path:
    path = Path(cwd)
    if not cwd or not path.is_absolute():
        raise InvalidParamsError(field_name, f"must be an absolute path, not {cwd!r}")
    return path


def _path_of(uri: str) -> Path:
    from ..positions import fs_path

    return Path(fs_path(uri) or uri)


def _iso(seconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat().replace("+00:00", "Z")
