"""Explicit assembly: which tools a workspace's runtime gets.

The one place in ``server/`` that imports the concrete tools (``tools.shell``,
``tools.read_file``, ...) and binds them to the mechanism (``tooling``); the rest of
``server/`` uses only a few services of ``tools/`` (the sandbox's entry point, the
programs it runs, ...), each listed with its reason in the import-linter contract
``tools-assembled-in-bootstrap`` (``pyproject.toml``). Declaring a tool elsewhere does
not enable it; being listed here (and in the user's ``enabledTools`` setting, if any) does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.workspace import Workspace

from ..settings.settings import ToolSettings

if TYPE_CHECKING:
    from tooling.contract import ToolDefinition
    from tooling.registry import ToolRegistry
    from tools.sandbox import SandboxPolicy

DEFAULT_TOOLS: tuple[str, ...] = ("bash", "read_file", "write_file", "edit_file", "glob")
# Offered only where a source of language features answers for the folder
# (``tooling.language``): a model never sees a tool that cannot answer.
LANGUAGE_TOOLS: tuple[str, ...] = (
    "diagnostics",
    "definition",
    "references",
    "symbols",
    "hover",
    "rename",
)


def build_tools(
    workspace: Workspace,
    settings: ToolSettings | None = None,
    *,
    hidden_paths: Iterable[Path] = (),
    secret_env: Iterable[str] = (),
    readable_paths: Iterable[Path] = (),
    language: str | None = None,
) -> ToolRegistry:
    """The enabled tools, bound to ``workspace`` only: the one place the editor's
    settings (:class:`ToolSettings`, ``AgentSettings.tools()``) reach the tools.

    ``hidden_paths`` (agent-lsp's own files, :func:`server.config.own_secrets.hidden_paths`) join
    the sandbox policy's: no confined ``bash`` command may read them; ``secret_env`` joins
    the variables it never sees; ``readable_paths`` are folders outside the workspace that
    ``read_file`` may read too (the user's skills), never write; ``language``: the name of
    the source of language features that answers for the folder, None: none (with one, the
    language tools join the default set, each naming it in its annotations'
    ``languageSource`` for ``agent/listTools``, and the file tools wait ``diagnostics_wait``
    for the problems of what they wrote, ``bash`` for those of the open files it changed).

    What a call may use beyond that (the editor's documents, the conversation's
    ledger) reaches it through its ``ToolContext``. ``enabled_tools`` narrows the default
    set (unknown names raise ``ValueError`` so a typo in the editor's settings is
    reported, not silently ignored). A registry is enough to describe the tools; a
    ``ToolRuntime`` over it (which compiles the schemas) is needed to run them.
    """
    # Imported here, not at the top, so validating settings (check_enabled) stays
    # cheap; the server imports these in a worker thread before the first ask.
    from tooling.registry import ToolRegistry
    from tools import programs
    from tools.diagnostics import diagnostics_tool
    from tools.edit_file import edit_file_tool
    from tools.glob import glob_tool
    from tools.navigation import definition_tool, hover_tool, references_tool, symbols_tool
    from tools.read_file import read_file_tool
    from tools.rename import rename_tool
    from tools.shell import DEFAULT_SECRET_ENV, bash_tool
    from tools.write_file import write_file_tool

    settings = settings or ToolSettings()
    policy = settings.sandbox
    policy = dataclasses.replace(policy, hidden_paths=(*policy.hidden_paths, *hidden_paths))
    # From now on no program the server runs (git for checkpoints, glob, the status) is
    # looked up in a folder these tools may write.
    programs.mark_agent_writable((workspace.root, *policy.writable_roots))

    wait = settings.diagnostics_wait / 1000 if language else 0.0
    factories: dict[str, Callable[[], ToolDefinition]] = {
        "bash": lambda: bash_tool(
            workspace,
            default_timeout=settings.bash_timeout,
            hidden_env=(*DEFAULT_SECRET_ENV, *secret_env),
            policy=policy,
            diagnostics_wait=wait,
        ),
        "read_file": lambda: read_file_tool(workspace, also_readable=tuple(readable_paths)),
        "write_file": lambda: write_file_tool(workspace, diagnostics_wait=wait),
        "edit_file": lambda: edit_file_tool(workspace, diagnostics_wait=wait),
        "glob": lambda: glob_tool(workspace, policy=policy),
        "diagnostics": lambda: diagnostics_tool(workspace),
        "definition": lambda: definition_tool(workspace),
        "references": lambda: references_tool(workspace),
        "symbols": lambda: symbols_tool(workspace),
        "hover": lambda: hover_tool(workspace),
        "rename": lambda: rename_tool(workspace),
    }
    offered = (*DEFAULT_TOOLS, *LANGUAGE_TOOLS) if language else DEFAULT_TOOLS
    names = list(offered if settings.enabled_tools is None else settings.enabled_tools)
    check_enabled(names)
    if not language:
        names = [name for name in names if name not in LANGUAGE_TOOLS]
    tools = [factories[name]() for name in dict.fromkeys(names)]
    if language:
        tools = [
            dataclasses.replace(tool, annotations={**tool.annotations, "languageSource": language})
            if tool.name in LANGUAGE_TOOLS
            else tool
            for tool in tools
        ]
    if settings.read_only:
        # A tool that executes is confined by the sandbox policy (read-only in this mode);
        # any other tool that is not read-only would write around it.
        tools = [tool for tool in tools if tool.read_only or tool.kind == "execute"]
    return ToolRegistry(tools)


def check_enabled(names: Iterable[str]) -> None:
    """Refuse unknown tool names (a typo in the editor's settings is reported)."""
    known = (*DEFAULT_TOOLS, *LANGUAGE_TOOLS)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(
            f"Unknown tool(s) in enabledTools: {', '.join(unknown)}; available: {', '.join(known)}"
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
