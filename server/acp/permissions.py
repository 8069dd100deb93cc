"""The permission gate's questions as ``session/request_permission`` (the Asker of ACP).

Our options already are ACP's (``allow_once``, ``allow_always``, ``reject_once``,
``reject_always``; each option's id is its kind), and the question names the tool call it
is about, which the client has been shown as a ``tool_call`` already: the request does
not retitle it (a client such as agent-shell shows the request's title in place of the
call's), and the reason goes as the call's text content, line breaks kept.

A ``cancelled`` outcome is not a refusal: ACP has a client answer it only while it cancels
the prompt, and agent-shell answers it *before* it sends ``session/cancel``. So it ends
the turn at once, as ``session/cancel`` does (no further model request, no stray text
after the cancel); nothing is left to withdraw.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import helpers
from acp.exceptions import RequestError
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from ..agent.permissions import ALLOW_ALWAYS, OPTIONS, REJECT_ALWAYS, PermissionPrompt

log = logging.getLogger(__name__)

_KINDS = {kind for kind, _ in OPTIONS}


class AcpAsker:
    def __init__(
        self,
        conn: Any,
        kinds: dict[str, str],
        shown: Callable[[], Awaitable[None]],
        cancel: Callable[[], None],
    ) -> None:
        self._conn = conn  # the SDK's AgentSideConnection
        self._kinds = kinds  # the tool kind of each announced call, by call id
        self._shown = shown  # returns once the call's tool_call update is out
        self._cancel = cancel  # ends the prompt's ask, as session/cancel does

    def can_ask(self) -> bool:
        return True  # every ACP client answers session/request_permission

    async def ask(self, prompt: PermissionPrompt) -> str | None:
        # What is asked goes in the call's content, not its title (agent-shell shows the
        # request's title in place of the call's): the question, then the reason below it.
        asked = "\n".join(part for part in (prompt.title, prompt.reason) if part)
        reason = [helpers.tool_content(helpers.text_block(asked))] if asked else None
        call = ToolCallUpdate(
            tool_call_id=prompt.call_id,
            kind=self._kinds.get(prompt.call_id, "other"),  # type: ignore[arg-type]
            status="pending",
            content=reason,
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
        if isinstance(outcome, DeniedOutcome) and outcome.outcome == "cancelled":
            # The client is cancelling the prompt: end it here, before anything else runs
            # (the CancelledError reaches this call at its next suspension).
            self._cancel()
            await asyncio.sleep(0)
        return None  # an option we never offered (or not cancellable): nothing is allowed


def _label(kind: str, name: str, scope: str) -> str:
    """An option's label; an "always" one names what it covers (ACP's request has no other
    place for the scope: "Allow always: Network access to localhost for any command, …")."""
    if scope and kind in (ALLOW_ALWAYS, REJECT_ALWAYS):
        return f"{name}: {scope}"
    return name
