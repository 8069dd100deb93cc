"""Explicit assembly: which tools a workspace's runtime gets.

The one place that imports both the mechanism (``tooling``) and the concrete
tools (``tools``). Declaring a tool elsewhere does not enable it; being listed
here (and in the user's ``enabledTools`` setting, if any) does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.workspace import Workspace

if TYPE_CHECKING:
    from tooling.contract import ToolDefinition
    from tooling.registry import ToolRegistry
    from tooling.runtime import ToolRuntime
    from tools.sandbox import SandboxPolicy

DEFAULT_TOOLS: tuple[str, ...] = ("bash", "read_file", "write_file", "edit_file", "glob")


def build_runtime(
    workspace: Workspace,
    *,
    enabled: Iterable[str] | None = None,
    bash_timeout: float | None = None,
    secret_env: Iterable[str] = (),
    sandbox_policy: SandboxPolicy | None = None,
    hidden_paths: Iterable[Path] = (),
) -> ToolRuntime:
    """A fresh runtime whose tools act on ``workspace`` only (see :func:`build_registry`)."""
    from tooling.runtime import ToolRuntime

    return ToolRuntime(
        build_registry(
            workspace,
            enabled=enabled,
            bash_timeout=bash_timeout,
            secret_env=secret_env,
            sandbox_policy=sandbox_policy,
            hidden_paths=hidden_paths,
        )
    )


def build_registry(
    workspace: Workspace,
    *,
    enabled: Iterable[str] | None = None,
    bash_timeout: float | None = None,
    secret_env: Iterable[str] = (),
    sandbox_policy: SandboxPolicy | None = None,
    hidden_paths: Iterable[Path] = (),
) -> ToolRegistry:
    """The enabled tools, bound to ``workspace`` only.

    ``hidden_paths`` (agent-lsp's own files, :func:`server.config.own_secrets.hidden_paths`) join
    the sandbox policy's: no confined ``bash`` command may read them.

    What a call may use beyond that (the editor's documents, the conversation's
    ledger) reaches it through its ``ToolContext``. ``enabled`` narrows the default
    set (unknown names raise ``ValueError`` so a typo in the editor's settings is
    reported, not silently ignored). A registry is enough to describe the tools; a
    ``ToolRuntime`` over it (which compiles the schemas) is needed to run them.
    """
    # Imported here, not at the top, so validating settings (check_enabled) stays
    # cheap; the server imports these in a worker thread before the first ask.
    from tooling.registry import ToolRegistry
    from tools.edit_file import edit_file_tool
    from tools.glob import glob_tool
    from tools.read_file import read_file_tool
    from tools.sandbox import SandboxPolicy
    from tools.shell import DEFAULT_SECRET_ENV, bash_tool
    from tools.write_file import write_file_tool

    policy = sandbox_policy or SandboxPolicy()
    policy = dataclasses.replace(policy, hidden_paths=(*policy.hidden_paths, *hidden_paths))

    factories: dict[str, Callable[[], ToolDefinition]] = {
        "bash": lambda: bash_tool(
            workspace,
            default_timeout=bash_timeout,
            hidden_env=(*DEFAULT_SECRET_ENV, *secret_env),
            policy=policy,
        ),
        "read_file": lambda: read_file_tool(workspace),
        "write_file": lambda: write_file_tool(workspace),
        "edit_file": lambda: edit_file_tool(workspace),
        "glob": lambda: glob_tool(workspace),
    }
    names = list(DEFAULT_TOOLS if enabled is None else enabled)
    check_enabled(names)
    return ToolRegistry(factories[name]() for name in dict.fromkeys(names))


def check_enabled(names: Iterable[str]) -> None:
    """Refuse unknown tool names (a typo in the editor's settings is reported)."""
    unknown = [name for name in names if name not in DEFAULT_TOOLS]
    if unknown:
        raise ValueError(
            f"Unknown tool(s) in enabledTools: {', '.join(unknown)}; "
            f"available: {', '.join(DEFAULT_TOOLS)}"
        )


def sandbox_unavailable(policy: SandboxPolicy) -> str | None:
    """What to tell the user, once, when ``policy`` asks for a sandbox this system cannot
    enforce in full: none at all, or one without namespaces (and what that gives up)."""
    from tools import sandbox

    if policy.mode == "off":
        return None
    state = sandbox.support()
    if not state.available:
        return (
            f"bash commands run without a sandbox: {state.reason()}. Each one asks "
            'for your permission first (agentLsp.sandbox "off" runs them without asking).'
        )
    lost = sandbox.weakened(state)
    if not lost:
        return None
    why = f" ({state.namespace_problem})" if state.namespace_problem else ""
    layers = "Landlock, seccomp and resource limits" if state.namespaces is None else "namespaces"
    return f"The bash sandbox runs on {layers} only{why}; weaker here: " + "; ".join(lost) + "."
