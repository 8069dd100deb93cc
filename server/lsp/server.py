"""The pygls application: the language server's start, its standard LSP features, and
the engine loaded behind them.

``initialize`` is answered before the engine's modules are loaded (the ACP face does the
same, ``server.acp.serve``): its result needs only pygls, the names it announces
(``server.lsp.announced``) and the configured model, read from the sources the engine
reads (:func:`announced_model`). The engine's modules then load in a worker thread, the
engine is built and given the folders and settings ``initialize`` brought, and the agent/*
requests are registered (``server.lsp.handlers``); every request or notification that
arrives meanwhile waits for it (:meth:`AgentLanguageServer.engine_ready`), none fails.
Spawn → ``initialize`` is then what bare pygls costs (bench/results/startup.md).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcMethodNotFound
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
from ..config.sources import DEFAULT_MODEL, resolve_model_sources
from ..config.user_config import UserConfigError, config_path, permission_warning
from ..stdio import EXIT_DEADLINE_S, cancel_on_signals, exit_within
from .announced import NOTIFICATIONS, PROTOCOL_VERSION, REQUESTS, SETTINGS_SECTION

if TYPE_CHECKING:
    from ..engine.engine import AgentEngine
    from .permission_requests import LspAsker

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 5.0
ANSWER_TURNS = 10  # turns of the event loop before the engine's modules load
AGENT_METHODS = "agent/"  # the requests registered once the engine is loaded


class AgentProtocol(LanguageServerProtocol):
    _server: AgentLanguageServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Iterator[Any]:  # a pygls generator handler
        result = yield from super().lsp_initialize(params)
        # pygls builds capabilities from registered features; custom methods are
        # advertised here so clients can detect the agent extension.
        agent: dict[str, Any] = {
            "version": PROTOCOL_VERSION,
            "requests": list(REQUESTS),
            "notifications": list(NOTIFICATIONS),
            # agent/ask accepts `context` (the active document, selection, others).
            "askContext": True,
        }
        # The model asks use as configured with initialize's settings, so a client names
        # it before the first ask; absent while none is configured.
        if model := self._server.announced_model:
            agent["model"] = model
        result.capabilities.experimental = {"agent": agent}
        return result

    def _get_handler(self, feature_name: str) -> Any:
        try:
            return super()._get_handler(feature_name)
        except JsonRpcMethodNotFound:
            # An agent/* request before the engine (and so the request) is there: it waits.
            if not feature_name.startswith(AGENT_METHODS) or self._server.engine_loaded:
                raise
            return _after_loading(self._server, feature_name)


def _after_loading(server: AgentLanguageServer, method: str) -> Callable[[Any], Any]:
    async def handle(params: Any) -> Any:
        await server.engine_ready()
        handler = server.protocol.fm.features.get(method)
        if handler is None:
            raise JsonRpcMethodNotFound.of(method)
        result = handler(params)
        return await result if asyncio.iscoroutine(result) else result

    return handle


class AgentLanguageServer(LanguageServer):
    """The server; its engine (``make_engine``) is built once ``initialize`` is answered."""

    engine: AgentEngine
    asker: LspAsker

    def __init__(
        self,
        make_engine: Callable[[], AgentEngine],
        environ: Mapping[str, str] | None = None,
    ) -> None:
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
        self._make_engine = make_engine
        self._environ = environ
        self._loading: asyncio.Future[None] | None = None
        self.engine_loaded = False
        # What initialize brought, applied once the engine is built.
        self.initialize_params: types.InitializeParams | None = None
        self.announced_model: str | None = None
        self.config_warnings: list[str] = []
        self.asks: set[asyncio.Task[Any]] = set()
        self.pending_warnings: list[str] = []
        self.shutdown_requested = False
        self.warm_up: asyncio.Future[None] | None = None
        self.sandbox_notice: asyncio.Future[None] | None = None

    # -- the engine, loaded after initialize ----------------------------------------

    def engine_ready(self) -> asyncio.Future[None]:
        """Done once the engine is built and the agent/* requests registered (starts
        loading them if nothing did yet)."""
        return asyncio.shield(self.load_engine())

    def load_engine(self) -> asyncio.Future[None]:
        """Start (once) loading the engine."""
        if self._loading is None:
            self._loading = asyncio.ensure_future(self._load())
        return self._loading

    async def _load(self) -> None:
        # After initialize's answer is written, a few turns of the loop away: the import
        # thread would otherwise share the GIL with that write.
        for _ in range(ANSWER_TURNS):
            await asyncio.sleep(0)
        try:
            await asyncio.to_thread(_load_engine_modules)
            from . import handlers

            handlers.attach_engine(self, self._make_engine())
        except Exception:
            logger.exception("could not load the agent's engine")
            raise
        finally:
            gc.enable()  # off for the start-up (server.cli)
        self.engine_loaded = True
        if (params := self.initialize_params) is not None:
            self.pending_warnings.extend(_initialize_engine(self, params))

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
        from .handlers import apply_settings

        return apply_settings(self, raw, sandbox_notice=sandbox_notice)

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
            await self.close_engine()
        if received:
            return 128 + received[0]
        return 0 if self.shutdown_requested else 1

    async def close_engine(self) -> None:
        """No MCP server outlives us; a load still under way is abandoned."""
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        if self.engine_loaded:
            await self.engine.close_mcp_servers()


def _load_engine_modules() -> None:
    """The engine, the tools and the agent/* requests (call from a worker thread)."""
    from . import handlers  # noqa: F401

    if not gc.isenabled():  # off for the start-up (server.cli)
        # The pass the start-up skipped, here with the imports; what survives it lives as long
        # as the process (modules, classes), so no later pass looks at it again.
        gc.collect()
        gc.freeze()
        gc.enable()


def _initialize_engine(ls: AgentLanguageServer, params: types.InitializeParams) -> list[str]:
    """What ``initialize`` brought, given to the engine: the folders and the settings;
    returns the warnings to show once the client is ready for messages."""
    paths = [Path(p) for f in params.workspace_folders or [] if (p := to_fs_path(f.uri))]
    if not paths and params.root_uri and (root := to_fs_path(params.root_uri)):
        paths = [Path(root)]
    if not paths and params.root_path:
        paths = [Path(params.root_path)]
    warnings = ls.engine.set_folders(paths)
    # The user file's warnings first: each is given once per process, and initialize's
    # answer read the file (the configured model) before the engine was there.
    warnings.extend(ls.config_warnings)
    warnings.extend(ls.engine.config_warnings())
    # The sandbox's notice (a probe that runs a process, 20-40 ms) after `initialized`.
    warnings.extend(ls.apply_settings(params.initialization_options, sandbox_notice=False))
    if (model := ls.engine.configured_model()) != ls.announced_model:
        logger.warning(
            "initialize named the model %r, the engine uses %r", ls.announced_model, model
        )
    return warnings


def announced_model(raw: Any, environ: Mapping[str, str]) -> str | None:
    """The model ``initialize`` names: what the engine's ``configured_model()`` is once the
    initialization options ``raw`` are applied (tests/test_startup.py keeps the two equal),
    read without the engine's modules: the editor's model and base URL (the settings'
    reader keeps a non-empty text, drops anything else), then the sources
    ``server.model.endpoint`` reads. None: not configured."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SETTINGS_SECTION), Mapping):
        raw = raw[SETTINGS_SECTION]
    overrides: dict[str, str] = {}
    if isinstance(raw, Mapping):
        for key in ("model", "baseUrl"):
            if isinstance(value := raw.get(key), str) and value:
                overrides[key] = value
    try:
        sources = resolve_model_sources(overrides, environ=environ)
    except UserConfigError:
        return None
    if sources.api_key is None or sources.base_url is None:
        return None
    if not sources.base_url.value.startswith(("http://", "https://")):
        return None
    return sources.model.value if sources.model else DEFAULT_MODEL


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


def create_server(
    make_engine: Callable[[], AgentEngine], environ: Mapping[str, str] | None = None
) -> AgentLanguageServer:
    """The server with its standard features wired in one place (esbonio style); the
    agent/* requests join them once the engine is loaded (``server.lsp.handlers``).
    ``environ``: the environment the engine reads the model from (default ``os.environ``)."""
    server = AgentLanguageServer(make_engine, environ)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: types.InitializeParams) -> None:
        ls.initialize_params = params
        environ = os.environ if ls._environ is None else ls._environ
        # Before the model is read (that read would log the warning instead): the
        # engine's config_warnings(), given once the engine is there.
        user_file = config_path(environ)
        if user_file is not None and (warning := permission_warning(user_file)):
            ls.config_warnings.append(warning)
        ls.announced_model = announced_model(params.initialization_options, environ)
        ls.load_engine()  # once this answer is written

    @server.feature(types.INITIALIZED)
    async def initialized(ls: AgentLanguageServer, params: types.InitializedParams) -> None:
        await ls.engine_ready()
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
    async def folders_changed(
        ls: AgentLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        await ls.engine_ready()
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
        await ls.engine_ready()
        raw = params.settings
        if isinstance(raw, dict) and SETTINGS_SECTION in raw:
            problems = ls.apply_settings(raw[SETTINGS_SECTION])
        else:
            workspace = ls.client_capabilities.workspace
            if not (workspace and workspace.configuration):
                return
            # Pull model: the notification only says "something changed".
            items = [types.ConfigurationItem(section=SETTINGS_SECTION)]
            values = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
            problems = ls.apply_settings(values[0] if values else None)
        for problem in problems:
            ls.warn_user(problem)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: None) -> None:
        ls.shutdown_requested = True
        await ls.engine_ready()
        await ls.cancel_all_asks()
        await ls.engine.close_mcp_servers()

    return server
