"""The pygls application: the language server whose engine is loaded after ``initialize``.

Light on purpose: it imports pygls and nothing of the engine, so ``initialize`` is answered
before the engine's modules load (``server.lsp.server`` loads them right after; the ACP
face does the same, ``server.acp.serve``). Until the engine is there, an agent/* request
waits for it (:meth:`AgentLanguageServer.engine_ready`), as the standard features do.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __version__
from ..stdio import cancel_on_signals
from .announced import NOTIFICATIONS, PROTOCOL_VERSION, REQUESTS

if TYPE_CHECKING:
    from ..engine.engine import AgentEngine
    from .documents import LspDocuments
    from .permission_requests import LspAsker

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 5.0
ANSWER_TURNS = 10  # turns of the event loop before the engine's modules load
AGENT_METHODS = "agent/"  # the requests registered once the engine is loaded


class AgentProtocol(LanguageServerProtocol):
    _server: AgentLanguageServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # a pygls generator handler
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
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
    """The server; ``load_engine`` gives it its engine (``engine``, ``asker``, the agent/*
    requests) once ``initialize`` is answered."""

    engine: AgentEngine
    asker: LspAsker
    documents: LspDocuments

    def __init__(
        self,
        load_engine: Callable[[AgentLanguageServer], Awaitable[None]],
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
        self._load_engine = load_engine
        self.environ = environ
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
        self.collected: asyncio.Future[None] | None = None  # the start-up's garbage

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
            await self._load_engine(self)
        except BaseException as exc:  # a failure, or the server stopping meanwhile
            gc.enable()  # off for the start-up (server.cli); on once the engine is loaded
            if isinstance(exc, Exception):
                logger.exception("could not load the agent's engine")
            raise
        self.engine_loaded = True

    # -- helpers -------------------------------------------------------------------

    def warn_user(self, message: str) -> None:
        # The user sees it as a message; a WARNING on stderr would show it twice where the
        # client prints the server's stderr too (the terminal client does).
        logger.info("%s", message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

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
