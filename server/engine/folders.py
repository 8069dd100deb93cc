"""The open workspace folders and their tools: a runtime per folder, built on first use.

The tools of a folder are built with the editor settings of the time (enabled tools,
bash timeout, sandbox policy) and agent-lsp's own files hidden from every sandboxed
command; when those settings change, the folders' tools are rebuilt (an ask already
running keeps the runtime it started with). Each folder also has its MCP servers
(``mcp_servers``), which outlive such a rebuild and are closed with the folder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace, WorkspaceError
from tools import programs, sandbox

from .. import protocol as p
from ..config.own_secrets import exposure_warning
from ..errors import InvalidParamsError, NoWorkspaceFolderError
from ..mcp.servers import McpServers
from ..settings.settings import AgentSettings, ToolSettings
from .bootstrap import build_tools, check_enabled, sandbox_unavailable

if TYPE_CHECKING:
    from tooling.contract import ToolDefinition
    from tooling.language import LanguageFeatures

    class LanguageSource(LanguageFeatures, Protocol):
        """A folder's source of language features, closed with the folder."""

        async def aclose(self) -> None: ...

    # A folder's source, made when it opens (None: none answers for it).
    LanguageFactory = Callable[[Path], LanguageSource | None]

log = logging.getLogger(__name__)

BUILTIN_SOURCE: dict[str, Any] = {"kind": "builtin"}  # agent/listTools's source of our own tools


class Folder:
    """One open workspace folder, its tools and their runtime, built on first use.

    Describing the tools needs only the registry (the tools' modules); running them
    needs the runtime, which compiles every schema with jsonschema (slower to load):
    so an early listTools does not wait for jsonschema.

    The built-in tools are built once per :class:`ToolSettings` (a new ``Folder``);
    the folder's MCP servers' tools (``mcp.tools``, a new tuple at each change) join
    them, and the registry and runtime are cached for the tuple they were built with:
    a change of MCP tools makes the next ask's runtime anew, and an ask already
    running keeps its own.
    """

    def __init__(
        self,
        workspace: Workspace,
        build: Callable[[], ToolRegistry],
        key: ToolSettings,
        mcp: McpServers | None = None,
        language: LanguageSource | None = None,
    ) -> None:
        self.workspace = workspace
        self.runtime_key = key
        self.mcp = mcp
        # The folder's source of language features (None: none answers for it).
        self.language = language
        self._build = build
        self._builtins: ToolRegistry | None = None
        self._registry: tuple[tuple[ToolDefinition, ...], ToolRegistry] | None = None
        self._runtime: tuple[tuple[ToolDefinition, ...], ToolRuntime] | None = None
        self._lock = threading.RLock()  # the warm-up thread and a request may both build

    def _extra(self) -> tuple[ToolDefinition, ...]:
        return self.mcp.tools if self.mcp is not None else ()

    def registry_now(self) -> ToolRegistry:
        """The registry, built here if needed (call from a worker thread)."""
        with self._lock:
            extra = self._extra()
            cached = self._registry
            if cached is not None and cached[0] is extra:
                return cached[1]
            if self._builtins is None:
                self._builtins = self._build()
            registry = self._builtins if not extra else ToolRegistry([*self._builtins, *extra])
            self._registry = (extra, registry)
            return registry

    def runtime_now(self) -> ToolRuntime:
        """The runtime, built here if needed (call from a worker thread)."""
        with self._lock:
            extra = self._extra()
            cached = self._runtime
            if cached is not None and cached[0] is extra:
                return cached[1]
            runtime = ToolRuntime(self.registry_now())
            self._runtime = (extra, runtime)
            return runtime

    async def registry(self) -> ToolRegistry:
        cached = self._registry
        if cached is not None and cached[0] is self._extra():
            return cached[1]
        return await asyncio.to_thread(self.registry_now)

    async def runtime(self) -> ToolRuntime:
        cached = self._runtime
        if cached is not None and cached[0] is self._extra():
            return cached[1]
        return await asyncio.to_thread(self.runtime_now)

    async def describe_tools(self) -> list[p.ToolInfo]:
        """The tools as ``agent/listTools`` lists them, each with its ``source`` (built-in,
        or ``{"kind": "mcp", "server": NAME}`` from the MCP tool's annotations)."""
        # Only the registry is needed, built in a thread (not the whole warm-up: the
        # SDK import would make an early listTools wait a second).
        described = (await self.registry()).describe()
        return [
            cast(
                p.ToolInfo,
                {**tool, "source": tool["annotations"].get("source") or dict(BUILTIN_SOURCE)},
            )
            for tool in described
        ]


class Folders:
    """The open folders by resolved root, in the order they were opened."""

    def __init__(
        self,
        settings: Callable[[], AgentSettings],
        hidden_paths: Iterable[Path],
        mcp_servers: Callable[[Path], McpServers] | None = None,
        readable_paths: Iterable[Path] = (),
        language_servers: LanguageFactory | None = None,
    ) -> None:
        self._settings = settings  # the editor settings now (the engine holds them)
        # agent-lsp's own files (key, conversations): no sandboxed bash command reads them.
        self._hidden_paths = tuple(hidden_paths)
        # Folders outside the workspace read_file may read (the user's skills).
        self._readable_paths = tuple(readable_paths)
        self._mcp_servers = mcp_servers  # a folder's MCP servers (None: it has none)
        # A folder's source of language features: by default the language servers
        # agent-lsp starts; a face may give its own (set_language_servers).
        self._language_servers = language_servers
        self._folders: dict[Path, Folder] = {}
        self._sandbox_warned = False
        self._closing: set[asyncio.Task[None]] = set()  # MCP servers of removed folders
        # A folder's tools built from other settings (a session's mode), by root and key.
        self._variants: dict[tuple[Path, ToolSettings], Folder] = {}

    def set_language_servers(self, factory: LanguageFactory | None) -> None:
        """The source of language features of the folders opened from now on (a face
        chooses: the LSP face gives the editor's own servers to a client that answers)."""
        self._language_servers = factory

    def set(self, paths: list[Path]) -> list[str]:
        """Replace the open folders; returns warnings for folders that cannot be used (or
        that hold agent-lsp's own files)."""
        old, self._folders = self._folders, {}
        warnings = [w for path in paths if (w := self.add(path, old))]
        for root, folder in old.items():
            if root not in self._folders:
                self._close_mcp(folder)
        return warnings

    def add(self, path: Path, reuse: dict[Path, Folder] | None = None) -> str | None:
        try:
            workspace = Workspace(path)
        except WorkspaceError as exc:
            return str(exc)
        if workspace.root not in self._folders:
            kept = (reuse or {}).get(workspace.root)
            self._folders[workspace.root] = kept or self._make_folder(workspace)
        # Before anything runs a program for it (a checkpoint's git at the warm-up): never
        # looked up in a folder the agent writes, this one's or its writable roots'.
        programs.mark_agent_writable((workspace.root, *self._settings().sandbox.writable_roots))
        return exposure_warning(workspace.root, self._hidden_paths)

    def remove(self, path: Path) -> None:
        folder = self._folders.pop(Path(path).resolve(), None)
        if folder is not None:
            self._close_mcp(folder)

    def _close_mcp(self, folder: Folder) -> None:
        """Close the folder's MCP servers and the language servers started for it."""
        closing = [one.aclose() for one in (folder.mcp, folder.language) if one is not None]
        if not closing:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a script): nothing was started either
            for coroutine in closing:
                coroutine.close()
            return
        for coroutine in closing:
            task = loop.create_task(coroutine, name=f"close servers of {folder.workspace.root}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def refresh_mcp(
        self, folder: Folder | None = None, *, used_only: bool = False, retry: bool = False
    ) -> None:
        """Read the MCP definitions of ``folder`` (default: every folder) again and start
        what should run; ``used_only``: only folders whose servers were started already;
        ``retry``: failed servers too, once their backoff has passed (an ask)."""
        for one in [folder] if folder is not None else list(self):
            if one.mcp is not None and (one.mcp.in_use or not used_only):
                one.mcp.refresh(retry=retry)

    async def list_tools(self, path: Path | None) -> list[p.ToolInfo]:
        """``agent/listTools`` of a folder; its MCP definitions are read again meanwhile
        (in the background: a change shows in a later listing)."""
        folder = self.folder(path)
        self.refresh_mcp(folder)
        return await folder.describe_tools()

    async def aclose(self) -> None:
        """Close every folder's MCP servers (shutdown)."""
        for folder in self:
            self._close_mcp(folder)
        while self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)

    @property
    def roots(self) -> list[Path]:
        return list(self._folders)

    def __contains__(self, root: Path) -> bool:
        return root in self._folders

    def __iter__(self) -> Iterator[Folder]:
        return iter(list(self._folders.values()))

    def get(self, root: Path) -> Folder | None:
        return self._folders.get(root)

    def folder(self, path: Path | None) -> Folder:
        """The named folder, or the first; errors name what is wrong."""
        if not self._folders:
            raise NoWorkspaceFolderError(
                "No workspace folder is open: open a folder in the editor "
                "(agent-lsp acts only inside the editor's workspace folders)."
            )
        if path is None:
            return next(iter(self._folders.values()))
        resolved = Path(path).resolve()
        found = self._folders.get(resolved)
        if found is None:
            raise InvalidParamsError(
                "workspaceFolder", f"{path} is not one of the open workspace folders"
            )
        return found

    def variant(self, folder: Folder, key: ToolSettings) -> Folder:
        """``folder`` with its tools built from ``key`` instead (a session's mode): the same
        workspace and MCP servers, built once per key until the settings change."""
        if key == folder.runtime_key:
            return folder
        found = self._variants.get((folder.workspace.root, key))
        if found is None or found.mcp is not folder.mcp or found.language is not folder.language:
            found = self._make_folder(folder.workspace, folder.mcp, key, folder.language)
            self._variants[(folder.workspace.root, key)] = found
        return found

    def rebuild(self) -> None:
        """After new editor settings: the folders whose tools they change get new ones, and
        the used folders' MCP definitions are read again (``mcpServers`` may have changed:
        only the servers whose definition did are restarted)."""
        self._variants.clear()
        key = self._settings().tools()
        for root, folder in list(self._folders.items()):
            if folder.runtime_key != key:
                self._folders[root] = self._make_folder(
                    folder.workspace, folder.mcp, language=folder.language
                )
        self.refresh_mcp(used_only=True)

    async def warm_up(self) -> None:
        """Build every folder's tools and runtime, off the event loop (its MCP servers
        are started by the engine's warm-up, after the model SDK's import)."""
        for folder in self:
            try:
                await folder.registry()
                await folder.runtime()
            except Exception:
                log.exception("could not build the tools for %s", folder.workspace.root)

    def sandbox_notice(self) -> str | None:
        """Once per process: the settings want a sandbox this system cannot enforce."""
        if self._sandbox_warned:
            return None
        notice = sandbox_unavailable(self._settings().sandbox)
        self._sandbox_warned = notice is not None
        return notice

    def sandbox_status(self, path: Path | None) -> p.SandboxStatus:
        """The bash sandbox of a folder, its layers in force."""
        workspace = self.folder(path).workspace
        configured = self._settings().sandbox
        policy = dataclasses.replace(
            configured, hidden_paths=(*configured.hidden_paths, *self._hidden_paths)
        )
        return cast(p.SandboxStatus, sandbox.describe(policy, workspace.root))

    def _make_folder(
        self,
        workspace: Workspace,
        mcp: McpServers | None = None,
        key: ToolSettings | None = None,
        language: LanguageSource | None = None,
    ) -> Folder:
        settings = key if key is not None else self._settings().tools()
        if language is None and self._language_servers is not None:
            language = self._language_servers(workspace.root)
        source = language.name() if language is not None else None

        def build() -> ToolRegistry:
            return build_tools(
                workspace,
                settings,
                hidden_paths=self._hidden_paths,
                readable_paths=self._readable_paths,
                language=source,
            )

        if mcp is None and self._mcp_servers is not None:
            mcp = self._mcp_servers(workspace.root)
        return Folder(workspace, build, settings, mcp, language)


def known_tools_only(
    settings: AgentSettings, current: AgentSettings
) -> tuple[AgentSettings, list[str]]:
    """``settings`` and their problems; an ``enabledTools`` naming an unknown tool keeps
    the tools of ``current`` (a typo must not silently disable or enable one)."""
    problems = list(settings.warnings)
    if settings.enabled_tools is not None:
        try:
            check_enabled(settings.enabled_tools)
        except ValueError as exc:
            problems.append(f"{exc}; the tools stay as they were")
            settings = attrs.evolve(settings, enabled_tools=current.enabled_tools)
    return settings, problems
