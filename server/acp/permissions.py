"""The permission gate's questions as ``session/request_permission`` (the Asker of ACP).

Our options already are ACP's (``allow_once``, ``allow_always``, ``reject_once``,
``reject_always``; each option's id is its kind), and the question names the tool call it
is about, which the client has been shown as a ``tool_call`` already. A cancelled prompt
stops waiting: ACP has the client answer its open requests with ``cancelled`` once it
sends ``session/cancel``, so there is nothing to withdraw.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp.exceptions import RequestError
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from ..agent.permissions import ALLOW_ALWAYS, OPTIONS, REJECT_ALWAYS, PermissionPrompt

log = logging.getLogger(__name__)

_KINDS = {kind for kind, _ in OPTIONS}


class AcpAsker:
    def __init__(
        self, conn: Any, kinds: dict[str, str], shown: Callable[[], Awaitable[None]]
    ) -> None:
        self._conn = conn  # the SDK's AgentSideConnection
        self._kinds = kinds  # the tool kind of each announced call, by call id
        self._shown = shown  # returns once the call's tool_call update is out

    def can_ask(self) -> bool:
        return True  # every ACP client answers session/request_permission

    async def ask(self, prompt: PermissionPrompt) -> str | None:
        reason = f"\n{prompt.reason}" if prompt.reason else ""
        call = ToolCallUpdate(
            tool_call_id=prompt.call_id,
            title=prompt.title + reason,
            kind=self._kinds.get(prompt.call_id, "other"),  # type: ignore[arg-type]
            status="pending",
            raw_input=dict(prompt.arguments),
        )
        scope = prompt.always_scope
        options = [
            PermissionOption(option_id=kind, name=_label(kind, name, scope), kind=kind)
            for kind, name in prompt.options
        ]  # type: ignore[arg-type]
        await self._shown()
        try:
            response = await self._conn.request_permission(
                session_id=prompt.session_id, tool_call=call, options=options
            )
        except (RequestError, ConnectionError) as exc:
            log.warning("session/request_permission failed on the client: %s", exc)
            return None
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id in _KINDS:
            return outcome.option_id
        return None  # cancelled, or an option we never offered: nothing is allowed


def _label(kind: str, name: str, scope: str) -> str:
    """An option's label; an "always" one names what it covers (ACP's request has no other
    place for the scope: "Allow always: Network access to localhost for any command, …")."""
    if scope and kind in (ALLOW_ALWAYS, REJECT_ALWAYS):
        return f"{name}: {scope}"
    return name
