"""The language server's start: its standard LSP features, the engine loaded behind them,
and serving stdio.

``initialize`` is answered before the engine's modules are loaded (the ACP face does the
same, ``server.acp.serve``): its result needs only pygls (``server.lsp.app``), the names it
announces (``server.lsp.announced``) and the configured model, read from the sources the
engine reads (:func:`announced_model`). The engine's modules then load in a worker thread,
the engine is built and given the folders and settings ``initialize`` brought, and the
agent/* requests are registered (``server.lsp.handlers``); every request or notification
that arrives meanwhile waits for it, none fails. Spawn → ``initialize`` is then what bare
pygls costs (bench/results/startup.md).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.uris import to_fs_path

from ..config.sources import DEFAULT_MODEL, resolve_model_sources
from ..config.user_config import UserConfigError, config_path, permission_warning
from ..stdio import EXIT_DEADLINE_S, exit_within
from .announced import SETTINGS_SECTION
from .app import ANSWER_TURNS, AgentLanguageServer

if TYPE_CHECKING:
    from ..engine.engine import AgentEngine

logger = logging.getLogger(__name__)


async def _load_engine(ls: AgentLanguageServer, make_engine: Callable[[], AgentEngine]) -> None:
    """The engine's modules imported in a worker thread, the engine built and wired in, then
    given what ``initialize`` brought."""
    await asyncio.to_thread(_load_engine_modules)
    from . import handlers

    handlers.attach_engine(ls, make_engine())
    if (params := ls.initialize_params) is not None:
        ls.pending_warnings.extend(_initialize_engine(ls, params))
    # After the requests that waited for the engine have had their turn.
    ls.collected = asyncio.ensure_future(_collect_start_up_garbage())


async def _collect_start_up_garbage() -> None:
    """The pass the start-up skipped (the collector is off from ``server.cli.main``: its
    passes over pygls's and the engine's objects freed nothing), in a worker thread; what
    survives it lives as long as the process (modules, classes), so it is frozen: no later
    pass looks at it again."""
    for _ in range(ANSWER_TURNS):
        await asyncio.sleep(0)
    if not gc.isenabled():
        await asyncio.to_thread(_collect)


def _collect() -> None:
    gc.collect()
    gc.freeze()
    gc.enable()


def _apply_settings(ls: AgentLanguageServer, raw: Any, *, sandbox_notice: bool = True) -> list[str]:
    from .handlers import apply_settings

    return apply_settings(ls, raw, sandbox_notice=sandbox_notice)


def _load_engine_modules() -> None:
    """The engine, the tools and the agent/* requests (call from a worker thread)."""
    from . import handlers  # noqa: F401


def _initialize_engine(ls: AgentLanguageServer, params: types.InitializeParams) -> list[str]:
    """What ``initialize`` brought, given to the engine: the folders and the settings;
    returns the warnings to show once the client is ready for messages."""
    paths = [Path(p) for f in params.workspace_folders or [] if (p := to_fs_path(f.uri))]
    if not paths and params.root_uri and (root := to_fs_path(params.root_uri)):
        paths = [Path(root)]
    if not paths and params.root_path:
        paths = [Path(params.root_path)]
    # The folders' language features: the editor's own servers for a client that answers
    # for them (every folder, even where [language_servers] are defined: the editor's are
    # the user's), else the ones agent-lsp starts.
    from .language import client_answers, editor_languages

    if client_answers(ls):
        ls.engine.attach_languages(editor_languages(ls, ls.documents))
    warnings = ls.engine.set_folders(paths)
    # The user file's warnings first: each is given once per process, and initialize's
    # answer read the file (the configured model) before the engine was there.
    warnings.extend(ls.config_warnings)
    warnings.extend(ls.engine.config_warnings())
    # The sandbox's notice (a probe that runs a process, 20-40 ms) after `initialized`.
    warnings.extend(_apply_settings(ls, params.initialization_options, sandbox_notice=False))
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
    server = AgentLanguageServer(lambda ls: _load_engine(ls, make_engine), environ)

    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: types.InitializeParams) -> None:
        ls.initialize_params = params
        environ = os.environ if ls.environ is None else ls.environ
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
            problems = _apply_settings(ls, raw[SETTINGS_SECTION])
        else:
            workspace = ls.client_capabilities.workspace
            if not (workspace and workspace.configuration):
                return
            # Pull model: the notification only says "something changed".
            items = [types.ConfigurationItem(section=SETTINGS_SECTION)]
            values = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
            problems = _apply_settings(ls, values[0] if values else None)
        for problem in problems:
            ls.warn_user(problem)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentLanguageServer, params: None) -> None:
        ls.shutdown_requested = True
        await ls.engine_ready()
        await ls.cancel_all_asks()
        await ls.engine.close_mcp_servers()

    return server
