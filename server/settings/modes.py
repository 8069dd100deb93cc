"""A session's mode: what the agent may do in it, on top of the user's settings.

The Agent Client Protocol lets an editor offer a session's modes in its own UI (Zed's
and JetBrains' mode pickers); the server owns what each one means, so any face can
offer them. A mode only ever narrows the user's settings or moves bash out of the
sandbox with every command asked about: none of them lets anything leave the sandbox
without a deliberate answer to exactly what will run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import attrs

from .settings import AgentSettings


@dataclass(frozen=True)
class SessionMode:
    id: str
    name: str
    description: str


READ_ONLY, WORKSPACE_WRITE, FULL_ACCESS = "read-only", "workspace-write", "full-access"
DEFAULT_MODE = WORKSPACE_WRITE
MODES: tuple[SessionMode, ...] = (
    SessionMode(
        READ_ONLY,
        "Read only",
        "Reads and searches the workspace; bash runs with the workspace read-only, and no "
        "file tool is offered that writes.",
    ),
    SessionMode(
        WORKSPACE_WRITE,
        "Workspace write",
        "Your settings: the file tools work inside the workspace, bash runs in the sandbox "
        "(the workspace writable, no network); anything more is asked about first.",
    ),
    SessionMode(
        FULL_ACCESS,
        "Full access",
        "bash runs outside the sandbox (the network, any file you can write), and every "
        "command is asked about first; the file tools stay inside the workspace.",
    ),
)


def mode_ids() -> list[str]:
    return [mode.id for mode in MODES]


def apply_mode(settings: AgentSettings, mode: str) -> AgentSettings:
    """``settings`` as a session in ``mode`` uses them (ValueError: no such mode)."""
    if mode == WORKSPACE_WRITE:
        return settings
    sandbox = settings.sandbox
    if mode == READ_ONLY:
        sandbox = dataclasses.replace(sandbox, mode="read-only")
        return attrs.evolve(settings, sandbox=sandbox, read_only=True)
    if mode == FULL_ACCESS:
        sandbox = dataclasses.replace(sandbox, mode="off", ask_unconfined=True)
        return attrs.evolve(settings, sandbox=sandbox)
    raise ValueError(f"unknown mode {mode!r}; the modes are {', '.join(mode_ids())}")
