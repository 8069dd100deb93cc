"""The pygls application: JSON-RPC methods mapped onto the engine.

Thin on purpose (the jedi-language-server shape): each handler parses its params
into the protocol's typed class (``server.protocol.parse``: a malformed param is a
-32602 naming the field), calls one engine method and returns its typed result;
:func:`_rpc` maps the engine's errors onto the protocol's codes in one place.
Progress and notifications of a running ask live in ``server.lsp.ask_reporting``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.uris import to_fs_path

from .. import __version__
from .. import protocol as p
from ..engine.engine import AgentEngine
from ..errors import AgentError, InvalidParamsError
from ..model.endpoint import ModelNotConfiguredError, ModelRequestError
from ..settings.settings import read_settings
from ..stdio import EXIT_DEADLINE_S, cancel_on_signals, exit_within
from .ask_reporting import AskReporter, Progress
from .documents import LspDocuments
from .language import client_answers, editor_languages
from .permission_requests import LspAsker

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 5.0


class AgentProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Iterator[Any]:  # a pygls generator handler
        result = yield from super().lsp_initialize(params)
        # pygls builds capabilities from registered features; custom methods are
        # advertised here so clients can detect the agent extension.
        agent: dict[str, Any] = {
            "version": p.PROTOCOL_VERSION,
            "requests": list(p.REQUESTS),
            "notifications": list(p.NOTIFICATIONS),
            # agent/ask accepts `context` (the active document, selection, others).
            "askContext": True,
        }
        # The model asks use as configured now (the settings are applied by now), so a
        # client names it before the first ask; absent while none is configured.
        engine = getattr(self._server, "engine", None)
        model = engine.configured_model() if engine is not None else None
        if model:
            agent["model"] = model
        result.capabilities.experimental = {"agent": agent}
        return result


class AgentLanguageServer(LanguageServer):
    def __init__(self, engine: AgentEngine | None = None) -> None:
        self.converter = get_converter()
        super().__init__(
            "agent-lsp",
            __version__,
            protocol_cls=AgentProtocol,
            # Keeps custom params and results plain JSON objects (pygls 2 would
            # otherwise turn them into namedtuples). Our own instance, so the warm-up
            # can prepare it (see _warm_converter).
            converter_factory=lambda: self.converter,
        )
        self.engine = engine or AgentEngine()
        documents = LspDocuments(self, lambda: self.engine.settings)
        self.documents = documents
        self.engine.attach_documents(documents, editor=documents)
        self.engine.attach_warnings(lambda warning: self.warn_user(f"agent-lsp: {warning.message}"))
        self.asker = LspAsker(self)
        self.asks: set[asyncio.Task[Any]] = set()
        self.pending_warnings: list[str] = []
        self.shutdown_requested = False
        self.warm_up: asyncio.Future[None] | None = None
        self.sandbox_notice: asyncio.Future[None] | None = None

    # -- helpers -------------------------------------------------------------------

    def warn_user(self, message: str) -> None:
        # The user sees it as a message; a WARNING on stderr would show it twice where the
        # client prints the server's stderr too (the terminal client does).
        logger.info("%s", message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    def apply_settings(self, raw: Any, *, sandbox_notice: bool = True) -> list[str]:
        """Apply editor settings; returns the problems to show the user."""
        problems = self.engine.update_settings(read_settings(raw), sandbox_notice=sandbox_notice)
        return [f"agent-lsp: {problem}" for problem in problems]

    def track_ask(self) -> asyncio.Task[Any]:
        task = asyncio.current_task()
        assert task is not None
        self.asks.add(task)
        task.add_done_callback(self.asks.discard)
        return task

    async def cancel_all_asks(self) -> None:
        """Cancel running asks and wait until their tool processes are gone."""
        asks = [task for task in self.asks if not task.done()]
        for task in asks:
            task.cancel()
        if asks:
            await asyncio.wait(asks, timeout=SHUTDOWN_GRACE_S)

    async def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """Serve one client over stdio until ``exit``, end of input or a signal.

        pygls's ``start_io`` would do the reading; it is done here so the event loop
        owns SIGTERM/SIGHUP (a handler that cancels this task, instead of an
        exception raised inside whatever code the signal interrupts) and every ask
        is cancelled, and its tool processes killed, before the exit code is returned.
        """
        received = cancel_on_signals()
        self.protocol.set_writer(StdoutWriter(stdout))
        # Its own thread: a blocking stdin read never holds a worker the engine needs.
        reader = StdinAsyncReader(stdin, ThreadPoolExecutor(1, "agent-lsp-stdin"))
        try:
            await run_async(
                stop_event=threading.Event(),
                reader=reader,
                protocol=self.protocol,
                logger=logger,
                error_handler=self.report_server_error,
            )
        except asyncio.CancelledError:
            if not received:
                raise
        finally:
            await self.cancel_all_asks()
            await self.engine.close_mcp_servers()  # no MCP server outlives us
        if received:
            return 128 + received[0]
        return 0 if self.shutdown_requested else 1


# What the first ask sends and receives through pygls: cattrs generates (and compiles)
# each class's (un)structuring code on first use, a few milliseconds apiece.
_WIRE_CLASSES = (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    types.ShowMessageParams,
    types.LogMessageParams,
    types.ProgressParams,
    types.WorkDoneProgressBegin,
    types.WorkDoneProgressReport,
    types.WorkDoneProgressEnd,
    types.WorkDoneProgressCreateParams,
    types.ApplyWorkspaceEditParams,
    types.ApplyWorkspaceEditResult,
    types.ConfigurationParams,
)


async def _show_sandbox_notice(ls: AgentLanguageServer) -> None:
    """The settings want a sandbox this system cannot enforce: say so (once per process).
    Probed in a worker thread after `initialize` was answered, not on its way."""
    if notice := await asyncio.to_thread(ls.engine.sandbox_notice):
        ls.warn_user(f"agent-lsp: {notice}")


def _warm_converter(converter: Any) -> None:
    for cls in _WIRE_CLASSES:
        converter.get_structure_hook(cls)
        converter.get_unstructure_hook(cls)


# How long the tasks still running at exit (the warm-up, checkpoint maintenance) get to
# end once cancelled: the server exits when its client is gone, whatever they are doing.
EXIT_GRACE_S = 5.0


def serve_stdio(server: AgentLanguageServer, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Run :meth:`AgentLanguageServer.serve`; the exit code (``exit`` raises SystemExit).

    Not ``asyncio.run``: its clean-up waits without limit for every cancelled task, and a
    task caught in a child's or a lock's clean-up then keeps the process alive for good.
    """
    loop = asyncio.new_event_loop()
    code = 1
    try:
        code = loop.run_until_complete(server.serve(stdin, stdout))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        exit_within(EXIT_DEADLINE_S, code)  # the client is gone: end, whatever still runs
        _end_tasks(loop)
    return code


def _end_tasks(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        _, stuck = loop.run_until_complete(asyncio.wait(pending, timeout=EXIT_GRACE_S))
        for task in stuck:
            logger.warning("exiting with a task that did not end: %r", task)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _rpc(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Map engine errors onto the protocol's error codes (messages never hold the key)."""

    def translate(exc: Exception) -> JsonRpcException:
        if isinstance(exc, p.ParamsError):
            return JsonRpcException(
                message=f"Invalid params: {exc}", code=p.INVALID_PARAMS, data={"field": exc.field}
            )
        if isinstance(exc, AgentError):
            return JsonRpcException(message=exc.message, code=exc.code, data=exc.data)
        if isinstance(exc, ModelNotConfiguredError):
            data: dict[str, object] | None = {p.ACTION_KEY: exc.action} if exc.action else None
            return JsonRpcException(message=str(exc), code=p.MODEL_NOT_CONFIGURED, data=data)
        assert isinstance(exc, ModelRequestError)
        data = {
            "status": exc.status,
            "kind": exc.kind,
            "attempts": exc.attempts,
            "elapsedMs": round(exc.elapsed_ms),
        }
        return JsonRpcException(message=str(exc), code=p.MODEL_REQUEST_FAILED, data=data)

    expected = (p.ParamsError, AgentError, ModelNotConfiguredError, ModelRequestError)
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async_handler(ls: AgentLanguageServer, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except expected as exc:
                raise translate(exc) from None

        return run_async_handler

    @functools.wraps(handler)
    def run_handler(ls: AgentLanguageServer, params: Any) -> Any:
        try:
            return handler(ls, params)
        except expected as exc:
            raise translate(exc) from None

    return run_handler


def _folder(uri: str | None) -> Path | None:
    if uri is None:
        return None
    path = to_fs_path(uri) if "://" in uri else uri
    if not path:
        raise InvalidParamsError("workspaceFolder", f"not a file URI: {uri}")
    return Path(path)


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
        # The folders' language features: the editor's own servers for a client that
        # answers for them (every folder, even where [language_servers] are defined: the
        # editor's are the user's), else the ones agent-lsp starts.
        if client_answers(ls):
            ls.engine.attach_languages(editor_languages(ls, ls.documents))
        ls.pending_warnings.extend(ls.engine.set_folders(paths))
        # Shown once the client is ready for messages (after `initialized`). The user file's
        # warnings first: each is given once per process, and initialize's answer reads
        # the file (the configured model) before `initialized`.
        ls.pending_warnings.extend(ls.engine.config_warnings())
        # The sandbox's notice (a probe that runs a process, 20-40 ms) after the answer.
        ls.pending_warnings.extend(
            ls.apply_settings(params.initialization_options, sandbox_notice=False)
        )

    @server.feature(types.INITIALIZED)
    def initialized(ls: AgentLanguageServer, params: types.InitializedParams) -> None:
        for warning in ls.pending_warnings:
            ls.warn_user(warning)
        ls.pending_warnings.clear()
        ls.sandbox_notice = asyncio.ensure_future(_show_sandbox_notice(ls))
        # Import the SDK and build the tools now, in a thread, rather than in the
        # user's first ask (and not before initialize answers).
        ls.engine.warm_up()
        ls.warm_up = asyncio.ensure_future(asyncio.to_thread(_warm_converter, ls.converter))
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
        if isinstance(raw, dict) and p.SETTINGS_SECTION in raw:
            problems = ls.apply_settings(raw[p.SETTINGS_SECTION])
        else:
            workspace = ls.client_capabilities.workspace
            if not (workspace and workspace.configuration):
                return
            # Pull model: the notification only says "something changed".
            items = [types.ConfigurationItem(section=p.SETTINGS_SECTION)]
            values = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
            problems = ls.apply_settings(values[0] if values else None)
        for problem in problems:
            ls.warn_user(problem)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: None) -> None:
        ls.shutdown_requested = True
        await ls.cancel_all_asks()
        await ls.engine.close_mcp_servers()

    @server.feature(p.AGENT_LIST_TOOLS)
    @_rpc
    async def list_tools(ls: AgentLanguageServer, params: Any) -> p.ListToolsResult:
        q = p.parse(params, p.FolderParams)
        return p.ListToolsResult(tools=await ls.engine.list_tools(_folder(q.workspace_folder)))

    @server.feature(p.AGENT_SANDBOX_STATUS)
    @_rpc
    def sandbox_status(ls: AgentLanguageServer, params: Any) -> p.SandboxStatus:
        q = p.parse(params, p.ProjectParams)
        return ls.engine.sandbox_status(_folder(q.workspace_folder), q.session_id)

    @server.feature(p.AGENT_MCP_SERVERS)
    @_rpc
    async def mcp_servers(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.FolderParams)
        return p.to_wire(await ls.engine.mcp_servers(_folder(q.workspace_folder)))

    @server.feature(p.AGENT_APPROVE_MCP_SERVER)
    @_rpc
    async def approve_mcp_server(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ApproveMcpServerParams)
        result = await ls.engine.approve_mcp_server(
            q.name, _folder(q.workspace_folder), asker=ls.asker
        )
        return p.to_wire(result)

    @server.feature(p.AGENT_CONTROL_MCP_SERVER)
    @_rpc
    async def control_mcp_server(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ControlMcpServerParams)
        result = await ls.engine.control_mcp_server(q.name, q.action, _folder(q.workspace_folder))
        return p.to_wire(result)

    @server.feature(p.AGENT_MCP_SERVER_LOG)
    @_rpc
    async def mcp_server_log(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ApproveMcpServerParams)
        return p.to_wire(await ls.engine.mcp_server_log(q.name, _folder(q.workspace_folder)))

    @server.feature(p.AGENT_INSTRUCTIONS)
    @_rpc
    async def instructions(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ProjectParams)
        result = await ls.engine.instructions(q.session_id, _folder(q.workspace_folder))
        return p.to_wire(result)

    @server.feature(p.AGENT_LIST_COMMANDS)
    @_rpc
    async def list_commands(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ProjectParams)
        result = await ls.engine.list_commands(q.session_id, _folder(q.workspace_folder))
        return p.to_wire(result)

    @server.feature(p.AGENT_NEW_SESSION)
    @_rpc
    def new_session(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.FolderParams)
        conversation = ls.engine.new_session(_folder(q.workspace_folder))
        return p.to_wire(p.NewSessionResult(conversation.id, conversation.workspace_root.as_uri()))

    @server.feature(p.AGENT_END_SESSION)
    @_rpc
    async def end_session(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.SessionParams)
        return p.to_wire(p.EndSessionResult(await ls.engine.end_session(q.session_id)))

    @server.feature(p.AGENT_LIST_MODELS)
    @_rpc
    async def list_models(ls: AgentLanguageServer, params: Any) -> Any:
        p.parse(params, p.FolderParams)  # the endpoint is the same for every folder
        return p.to_wire(await ls.engine.list_models())

    @server.feature(p.AGENT_CHECK_CONNECTION)
    @_rpc
    async def check_connection(ls: AgentLanguageServer, params: Any) -> Any:
        p.parse(params, p.FolderParams)
        return p.to_wire(await ls.engine.check_connection())

    @server.feature(p.AGENT_CHECKPOINTS)
    @_rpc
    async def checkpoints(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.SessionParams)
        return p.to_wire(await ls.engine.list_checkpoints(q.session_id))

    @server.feature(p.AGENT_DIFF)
    @_rpc
    async def diff(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.DiffParams)
        result = await ls.engine.checkpoint_diff(
            q.session_id, q.checkpoint_id, include_content=q.include_content
        )
        return p.to_wire(result)

    @server.feature(p.AGENT_REWIND)
    @_rpc
    async def rewind(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.RewindParams)
        return p.to_wire(await ls.engine.rewind(q.session_id, q.checkpoint_id, dry_run=q.dry_run))

    @server.feature(p.AGENT_SESSIONS)
    @_rpc
    async def sessions(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.FolderParams)
        found = await ls.engine.sessions(_folder(q.workspace_folder))
        return p.to_wire(p.SessionsResult(found))

    @server.feature(p.AGENT_SESSION_HISTORY)
    @_rpc
    async def session_history(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.SessionParams)
        return p.to_wire(await ls.engine.history(q.session_id))

    @server.feature(p.AGENT_TOOL_OUTPUT)
    @_rpc
    def tool_output(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.ToolOutputParams)
        return p.to_wire(ls.engine.tool_output(q.session_id, q.call_id))

    @server.feature(p.AGENT_GRANTS)
    @_rpc
    def grants(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.SessionParams)
        return p.to_wire(p.GrantsResult(ls.engine.grants(q.session_id)))

    @server.feature(p.AGENT_REVOKE_GRANT)
    @_rpc
    def revoke_grant(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.RevokeGrantParams)
        return p.to_wire(p.RevokeGrantResult(ls.engine.revoke_grant(q.session_id, q.grant_id)))

    @server.feature(p.AGENT_COMPACT)
    @_rpc
    async def compact(ls: AgentLanguageServer, params: Any) -> Any:
        q = p.parse(params, p.SessionParams)
        return p.to_wire(await ls.engine.compact(q.session_id))

    @server.feature(p.AGENT_ASK)
    @_rpc
    async def ask(ls: AgentLanguageServer, params: Any) -> Any:
        task = ls.track_ask()
        q = p.parse(params, p.AskParams)
        folder = _folder(q.workspace_folder)
        reporter = AskReporter(ls, await Progress.start(ls, q.work_done_token, task), q.session_id)
        outcome = "cancelled"
        try:
            result = await ls.engine.ask(
                q.prompt,
                session_id=q.session_id,
                folder=folder,
                on_event=reporter,
                on_session=reporter.set_session,
                context=q.context,
                asker=ls.asker,
                disabled_tools=q.disabled_tools or (),
            )
            outcome = "done"
            return p.to_wire(result)
        except (AgentError, ModelNotConfiguredError, ModelRequestError) as exc:
            outcome = "failed"
            ls.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"agent/ask: {exc}")
            )
            raise
        finally:
            reporter.end(outcome)

    return server
