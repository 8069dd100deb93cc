"""``agent/requestPermission`` over LSP: the :class:`~server.agent.permissions.Asker` the
language server hands every ask.

The request and its result have ACP's shape (see ``server.protocol``). pygls does not
tell the client when the server stops waiting for one of its requests, so a cancelled
or timed-out ask withdraws the request itself with ``$/cancelRequest``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .. import protocol as p
from ..agent.permissions import OPTIONS, PermissionPrompt

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)


class LspAsker:
    def __init__(self, ls: LanguageServer) -> None:
        self._ls = ls

    def can_ask(self) -> bool:
        experimental = self._ls.client_capabilities.experimental
        agent = experimental.get("agent") if isinstance(experimental, dict) else None
        return isinstance(agent, dict) and agent.get(p.CLIENT_CAN_ANSWER_PERMISSION) is True

    async def ask(self, prompt: PermissionPrompt) -> str | None:
        params = p.RequestPermissionParams(
            session_id=prompt.session_id,
            call_id=prompt.call_id,
            tool_name=prompt.tool_name,
            arguments=dict(prompt.arguments),
            title=prompt.title,
            reason=prompt.reason,
            options=[p.PermissionOption(kind, name, kind) for kind, name in prompt.options],
            always_scope=prompt.always_scope or None,
        )
        protocol = self._ls.protocol
        msg_id = f"permission-{uuid.uuid4().hex}"
        future = protocol.send_request(p.AGENT_REQUEST_PERMISSION, p.to_wire(params), msg_id=msg_id)
        answer = asyncio.wrap_future(future)
        answer.add_done_callback(_read_late)
        try:
            # Shielded: pygls keeps the request's future until the client answers; left
            # pending here, the client's late answer (to the $/cancelRequest, or the
            # user's click) settles it quietly, with nobody awaiting it. Cancelled, it
            # would take the answer with an error in the log.
            result = await asyncio.shield(answer)
        except asyncio.CancelledError:
            # The ask was cancelled or the user took too long: withdraw the request.
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except JsonRpcException as exc:
            log.warning("agent/requestPermission failed on the client: %s", exc)
            return None
        return _chosen_kind(result)


def _read_late(answer: asyncio.Future[Any]) -> None:
    """An answer nobody awaits any more is read here (else asyncio logs its error)."""
    if not answer.cancelled():
        answer.exception()


def _chosen_kind(result: Any) -> str | None:
    """The chosen option's kind from ``{"outcome": {"outcome": "selected", "optionId"}}``."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return None  # "cancelled", or something we cannot read: nothing was allowed
    option = outcome.get("optionId")
    return option if option in {kind for kind, _ in OPTIONS} else None
