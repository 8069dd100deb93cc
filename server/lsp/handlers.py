"""The agent/* requests: each parses its params into the protocol's typed class
(``server.protocol.parse``: a malformed param is a -32602 naming the field), calls one
engine method and returns its typed result; :func:`_rpc` maps the engine's errors onto
the protocol's codes in one place.

Imported (with the engine) after ``initialize`` is answered, in a worker thread
(``server.lsp.server``); :func:`attach_engine` then wires the engine in and registers
the requests, which clients' requests that arrived meanwhile waited for.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path

from .. import protocol as p
from ..engine.engine import AgentEngine
from ..errors import AgentError, InvalidParamsError
from ..model.endpoint import ModelNotConfiguredError, ModelRequestError
from ..settings.settings import read_settings
from .ask_reporting import AskReporter, Progress
from .documents import LspDocuments
from .permission_requests import LspAsker

if TYPE_CHECKING:
    from .app import AgentLanguageServer

logger = logging.getLogger(__name__)


def attach_engine(server: AgentLanguageServer, engine: AgentEngine) -> None:
    """Give ``server`` its engine: the editor's documents, warnings, permission requests
    and every agent/* request."""
    documents = LspDocuments(server, lambda: engine.settings)
    server.documents = documents  # the editor's language source reads its buffers too
    engine.attach_documents(documents, editor=documents)
    engine.attach_warnings(lambda warning: server.warn_user(f"agent-lsp: {warning.message}"))
    server.asker = LspAsker(server)
    server.engine = engine
    _register_requests(server)


def apply_settings(
    server: AgentLanguageServer, raw: Any, *, sandbox_notice: bool = True
) -> list[str]:
    """Apply editor settings; returns the problems to show the user."""
    problems = server.engine.update_settings(read_settings(raw), sandbox_notice=sandbox_notice)
    return [f"agent-lsp: {problem}" for problem in problems]


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


def _register_requests(server: AgentLanguageServer) -> None:
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
