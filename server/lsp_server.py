"""The pygls application: JSON-RPC methods mapped onto the engine.

Thin on purpose (the jedi-language-server shape): parameter checking, progress,
notifications and error codes live here; everything an ask does lives in
``server.engine``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from . import __version__
from .activity import activity_params, summarize_arguments
from .documents import LspDocuments
from .engine import AgentEngine
from .errors import (
    MODEL_NOT_CONFIGURED,
    MODEL_REQUEST_FAILED,
    AgentError,
    InvalidParamsError,
)
from .events import AgentEvent, FinalAnswer, ModelRequestStarted, ToolCallFinished, ToolCallStarted
from .model_config import ModelNotConfiguredError, ModelRequestError
from .settings import SECTION, parse_settings

logger = logging.getLogger(__name__)

AGENT_ASK = "agent/ask"
AGENT_LIST_TOOLS = "agent/listTools"
AGENT_END_SESSION = "agent/endSession"
AGENT_TOOL_ACTIVITY = "agent/toolActivity"
PROTOCOL_VERSION = 1
SHUTDOWN_GRACE_S = 5.0


class AgentProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Iterator[Any]:  # a pygls generator handler
        result = yield from super().lsp_initialize(params)
        # pygls builds capabilities from registered features; custom methods are
        # advertised here so clients can detect the agent extension.
        result.capabilities.experimental = {
            "agent": {
                "version": PROTOCOL_VERSION,
                "requests": [AGENT_ASK, AGENT_LIST_TOOLS, AGENT_END_SESSION],
                "notifications": [AGENT_TOOL_ACTIVITY],
            }
        }
        return result


class AgentLanguageServer(LanguageServer):
    def __init__(self, engine: AgentEngine | None = None) -> None:
        super().__init__(
            "agent-lsp",
            __version__,
            protocol_cls=AgentProtocol,
            # Keeps custom params and results plain JSON objects (pygls 2 would
            # otherwise turn them into namedtuples).
            converter_factory=get_converter,
        )
        self.engine = engine or AgentEngine()
        self.engine.attach_documents(LspDocuments(self))
        self.asks: set[asyncio.Task[Any]] = set()
        self._pending_warnings: list[str] = []

    # -- helpers -------------------------------------------------------------------

    def warn_user(self, message: str) -> None:
        logger.warning("%s", message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    def apply_settings(self, raw: Any) -> list[str]:
        """Apply editor settings; returns the problems to show the user."""
        settings = parse_settings(raw)
        try:
            self.engine.update_settings(settings)
        except ValueError as exc:
            return [f"agent-lsp settings not applied: {exc}"]
        return [f"agent-lsp: {warning}" for warning in settings.warnings]

    async def cancel_all_asks(self) -> None:
        """Cancel running asks and wait until their tool processes are gone."""
        asks = [task for task in self.asks if not task.done()]
        for task in asks:
            task.cancel()
        if asks:
            await asyncio.wait(asks, timeout=SHUTDOWN_GRACE_S)

    def shutdown(self) -> None:
        # pygls waits for its reader thread, which may sit in a blocking stdin read
        # forever if the client keeps the pipe open; don't wait for it.
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server is not None:
            self._server.close()

    @property
    def exit_code(self) -> int:
        return 0 if self.protocol._shutdown else 1


class Progress:
    """Work-done progress for one ask: the client's token, or one we create."""

    def __init__(self, ls: AgentLanguageServer, token: types.ProgressToken | None) -> None:
        self._ls = ls
        self.token = token

    @classmethod
    async def start(cls, ls: AgentLanguageServer, token: Any, task: asyncio.Task[Any]) -> Progress:
        if token is None and _client_supports_progress(ls):
            token = f"agent-lsp-{uuid.uuid4().hex}"
            try:
                await asyncio.wait_for(ls.work_done_progress.create_async(token), 5.0)
            except (TimeoutError, JsonRpcException):
                token = None
        progress = cls(ls, token)
        if token is not None:
            ls.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(title="Agent", cancellable=True, message="starting"),
            )
            # window/workDoneProgress/cancel cancels this future: cancel the ask with it.
            future = ls.work_done_progress.tokens.get(token)
            if future is not None:
                future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        return progress

    def report(self, message: str) -> None:
        if self.token is not None:
            self._ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self, message: str) -> None:
        if self.token is None:
            return
        self._ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        # pygls keeps every token's future forever otherwise.
        future = self._ls.work_done_progress.tokens.pop(self.token, None)
        if future is not None and not future.done():
            future.set_result(None)


def _import_sdk() -> None:
    try:
        import jsonschema  # noqa: F401
        import openai  # noqa: F401
    except Exception:  # the ask will report it properly
        logger.debug("could not pre-import the SDK", exc_info=True)


def _client_supports_progress(ls: AgentLanguageServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.work_done_progress)


def _object_params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParamsError("params", "must be an object")
    return params


def _optional_string(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidParamsError(key, "must be a non-empty string")
    return value


def _folder_path(params: dict[str, Any]) -> Path | None:
    uri = _optional_string(params, "workspaceFolder")
    if uri is None:
        return None
    path = to_fs_path(uri) if "://" in uri else uri
    if not path:
        raise InvalidParamsError("workspaceFolder", f"not a file URI: {uri}")
    return Path(path)


def _rpc_error(exc: Exception) -> JsonRpcException:
    """Map engine errors onto the protocol's error codes (messages never hold the key)."""
    if isinstance(exc, AgentError):
        return JsonRpcException(message=exc.message, code=exc.code, data=exc.data)
    if isinstance(exc, ModelNotConfiguredError):
        return JsonRpcException(message=str(exc), code=MODEL_NOT_CONFIGURED)
    if isinstance(exc, ModelRequestError):
        return JsonRpcException(
            message=str(exc), code=MODEL_REQUEST_FAILED, data={"status": exc.status}
        )
    raise exc


def create_server(engine: AgentEngine | None = None) -> AgentLanguageServer:
    """The server with its features wired in one place (esbonio style)."""
    server = AgentLanguageServer(engine)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: types.InitializeParams) -> None:
        paths = [Path(p) for f in params.workspace_folders or [] if (p := to_fs_path(f.uri))]
        if not paths and params.root_uri and (root := to_fs_path(params.root_uri)):
            paths = [Path(root)]
        if not paths and params.root_path:
            paths = [Path(params.root_path)]
        ls._pending_warnings.extend(ls.engine.set_folders(paths))
        # Shown once the client is ready for messages (after `initialized`).
        ls._pending_warnings.extend(ls.apply_settings(params.initialization_options))

    @server.feature(types.INITIALIZED)
    def initialized(ls: AgentLanguageServer, params: types.InitializedParams) -> None:
        for warning in ls._pending_warnings:
            ls.warn_user(warning)
        ls._pending_warnings.clear()
        # Importing the SDK (and jsonschema) takes about a second; do it now, off the
        # event loop, rather than in the user's first ask (and not before initialize
        # answers).
        threading.Thread(target=_import_sdk, name="agent-lsp-warm-sdk", daemon=True).start()
        if not ls.engine.folders:
            ls.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Warning,
                    message="agent-lsp: no workspace folder open; asks will fail until one is.",
                )
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(
        ls: AgentLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for removed in params.event.removed:
            if path := to_fs_path(removed.uri):
                ls.engine.remove_folder(Path(path))
        for added in params.event.added:
            if (path := to_fs_path(added.uri)) and (warning := ls.engine.add_folder(Path(path))):
                ls.warn_user(f"agent-lsp: {warning}")

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(
        ls: AgentLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        raw = params.settings
        if isinstance(raw, dict) and SECTION in raw:
            problems = ls.apply_settings(raw[SECTION])
        else:
            workspace = ls.client_capabilities.workspace
            if not (workspace and workspace.configuration):
                return
            # Pull model: the notification only says "something changed".
            items = [types.ConfigurationItem(section=SECTION)]
            values = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
            problems = ls.apply_settings(values[0] if values else None)
        for problem in problems:
            ls.warn_user(problem)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: None) -> None:
        await ls.cancel_all_asks()

    @server.feature(AGENT_LIST_TOOLS)
    def list_tools(ls: AgentLanguageServer, params: Any) -> dict[str, Any]:
        try:
            folder = _folder_path(_object_params(params))
            return {"tools": ls.engine.list_tools(folder)}
        except AgentError as exc:
            raise _rpc_error(exc) from None

    @server.feature(AGENT_END_SESSION)
    def end_session(ls: AgentLanguageServer, params: Any) -> dict[str, Any]:
        try:
            session_id = _optional_string(_object_params(params), "sessionId")
            if session_id is None:
                raise InvalidParamsError("sessionId", "is required")
        except AgentError as exc:
            raise _rpc_error(exc) from None
        return {"ended": ls.engine.end_session(session_id)}

    @server.feature(AGENT_ASK)
    async def ask(ls: AgentLanguageServer, params: Any) -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None
        ls.asks.add(task)
        task.add_done_callback(ls.asks.discard)
        try:
            p = _object_params(params)
            prompt = p.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise InvalidParamsError("prompt", "must be a non-empty string")
            session_id = _optional_string(p, "sessionId")
            folder = _folder_path(p)
        except AgentError as exc:
            raise _rpc_error(exc) from None

        progress = await Progress.start(ls, p.get("workDoneToken"), task)
        outcome = "cancelled"
        current_session = {"id": session_id or ""}

        def on_event(event: AgentEvent) -> None:
            if isinstance(event, ModelRequestStarted):
                progress.report(f"turn {event.turn}: waiting for the model")
            elif isinstance(event, ToolCallStarted):
                summary = summarize_arguments(event.name, event.arguments)
                progress.report(f"turn {event.turn}: {event.name} {summary}")
                ls.protocol.notify(
                    AGENT_TOOL_ACTIVITY, activity_params(current_session["id"], event)
                )
            elif isinstance(event, ToolCallFinished):
                ls.protocol.notify(
                    AGENT_TOOL_ACTIVITY, activity_params(current_session["id"], event)
                )
            elif isinstance(event, FinalAnswer):
                progress.report("answer ready")

        try:
            result = await ls.engine.ask(
                prompt,
                session_id=session_id,
                folder=folder,
                on_event=on_event,
                on_session=lambda sid: current_session.__setitem__("id", sid),
            )
            outcome = "done"
            return result.to_json()
        except (AgentError, ModelNotConfiguredError, ModelRequestError) as exc:
            outcome = "failed"
            ls.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"agent/ask: {exc}")
            )
            raise _rpc_error(exc) from None
        finally:
            progress.end(outcome)

    return server
