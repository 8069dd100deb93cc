"""The headless source of language features: language servers agent-lsp starts itself.

For the faces without an editor's language servers (the terminal, ACP, an LSP client that
does not forward its own), a folder's servers are the user's ``[language_servers.NAME]``
(``server.language.config``), each:

- started lazily, on the first request for one of its files, in the folder;
- confined by the sandbox, read-only with no network (``tools.sandbox``'s confinement of
  a call, the workspace readable, nothing writable but a private temp folder), unless the
  user set ``AGENT_LSP_LANGUAGE_SERVERS_UNCONFINED=1`` (said in every report, never
  silently) or this system has no sandbox (then said once, as bash's is);
- stopped after ``IDLE_SECONDS`` without a request, and when the folder closes;
- when it fails to start or crashes, said once to the model (the next report) and
  restarted on a later request once its backoff has passed (1 s, doubling to 60 s, as MCP
  servers are).

Positions: the model's (1-based line and column in characters, ``tooling.language``)
are converted to the server's (0-based, in the position encoding it chose) with
``server.positions.LineIndex``, on the text the server was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tooling.language import (
    Diagnostic,
    DiagnosticsReport,
    LanguageError,
    Location,
    Position,
    Symbol,
    WorkspaceChange,
)
from tooling.regular_files import read_text_file
from tools import sandbox

from ..positions import LineIndex, fs_path
from .client import ClientError, JsonRpcClient
from .config import LanguageServerSpec, language_id, read_definitions
from .shapes import LspShapes, hover_text

log = logging.getLogger(__name__)

IDLE_SECONDS: Final = 600.0
START_TIMEOUT: Final = 20.0  # initialize's answer
REQUEST_TIMEOUT: Final = 10.0  # a navigation request's
FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 60.0
MAX_FILE: Final = 8 * 1024 * 1024  # a file bigger than this is not sent to a server
UNCONFINED_VARIABLE: Final = "AGENT_LSP_LANGUAGE_SERVERS_UNCONFINED"

CLIENT_CAPABILITIES: Final[Mapping[str, Any]] = {
    "general": {"positionEncodings": ["utf-16", "utf-32", "utf-8"]},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
        "hover": {"contentFormat": ["plaintext", "markdown"]},
        "definition": {"linkSupport": False},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "rename": {"prepareSupport": False},
    },
    "workspace": {
        "workspaceFolders": False,
        "configuration": True,
        "symbol": {},
        "workspaceEdit": {"documentChanges": True},
    },
}


def backoff(failures: int) -> float:
    return 0.0 if failures <= 1 else min(FIRST_BACKOFF * 2 ** (failures - 2), MAX_BACKOFF)


class _Published:
    def __init__(self) -> None:
        self.version: int | None = None
        self.diagnostics: list[dict[str, Any]] = []
        self.count = 0  # publishes received for the path


class _Server:
    """One defined server in one folder and its current process (a restart: a new one)."""

    def __init__(self, spec: LanguageServerSpec) -> None:
        self.spec = spec
        self.client: JsonRpcClient | None = None
        self.starting: asyncio.Task[JsonRpcClient] | None = None
        self.capabilities: dict[str, Any] = {}
        self.encoding = "utf-16"
        self.documents: dict[Path, tuple[int, str]] = {}
        self.published: dict[Path, _Published] = {}
        self.changed = asyncio.Condition()
        self.syncing = asyncio.Lock()  # one didOpen/didChange at a time (calls run at once)
        self.failures = 0
        self.retry_at = 0.0
        self.error: str | None = None
        self.unsaid: str | None = None  # a failure the model has not been told yet
        self.last_used = time.monotonic()
        self.tmp: str | None = None

    def on_notification(self, method: str, params: Any) -> None:
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        path_text = fs_path(str(params.get("uri", "")))
        if path_text is None:
            return
        record = self.published.setdefault(Path(path_text), _Published())
        version = params.get("version")
        record.version = version if isinstance(version, int) else None
        raw = params.get("diagnostics")
        record.diagnostics = (
            [d for d in raw if isinstance(d, dict)] if isinstance(raw, list) else []
        )
        record.count += 1
        self.wake()

    def wake(self) -> None:
        """Wake whoever waits for a publish (one arrived, or the server ended)."""
        asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        async with self.changed:
            self.changed.notify_all()


class HeadlessLanguages:
    """A folder's language servers as a :class:`tooling.language.LanguageFeatures`."""

    def __init__(
        self,
        root: Path,
        specs: Sequence[LanguageServerSpec],
        *,
        hidden_paths: Iterable[Path] = (),
        environ: Mapping[str, str] | None = None,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._servers = [_Server(spec) for spec in specs]
        self._hidden = tuple(hidden_paths)
        self._environ = dict(os.environ if environ is None else environ)
        self._idle_seconds = idle_seconds
        self._clock = clock
        self._idle_task: asyncio.Task[None] | None = None
        self._unconfined_said = False

    # -- the interface ------------------------------------------------------------------

    def name(self) -> str:
        return "language servers: " + ", ".join(s.spec.name for s in self._servers)

    def handles(self, path: Path) -> bool:
        return self._server_for(path) is not None

    async def diagnostics(
        self,
        paths: Sequence[Path],
        *,
        texts: Mapping[Path, str] | None = None,
        wait: float,
    ) -> DiagnosticsReport:
        report = DiagnosticsReport(timeout_ms=round(wait * 1000))
        deadline = time.monotonic() + wait
        if not paths:  # every file whose problems are known
            for server in self._servers:
                for path, record in server.published.items():
                    if server.client is not None and path in server.documents:
                        report.diagnostics[path] = self._diagnostics(server, path, record)
            return report
        for path in paths:
            handler = self._server_for(path)
            if handler is None:
                report.unhandled.append(path)
                continue
            text = (texts or {}).get(path)
            try:
                answered = await self._fresh_diagnostics(handler, path, text, deadline)
            except LanguageError as exc:
                if handler.unsaid is None:  # else said below, once
                    report.problems.append(str(exc))
                report.failed.append(path)
                continue
            if answered is None:
                report.unanswered.append(path)
            else:
                report.diagnostics[path] = answered
        report.problems.extend(self._unsaid())
        return report

    async def definition(self, path: Path, position: Position) -> list[Location]:
        server, index = await self._open(path)
        result = await self._request(
            server, "textDocument/definition", self._at(path, index, server, position)
        )
        return self._locations(server, result)

    async def references(self, path: Path, position: Position) -> list[Location]:
        server, index = await self._open(path)
        params = self._at(path, index, server, position)
        params["context"] = {"includeDeclaration": True}
        result = await self._request(server, "textDocument/references", params)
        return self._locations(server, result)

    async def document_symbols(self, path: Path) -> list[Symbol]:
        server, _ = await self._open(path)
        result = await self._request(
            server, "textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}
        )
        symbols: list[Symbol] = []
        if isinstance(result, list):
            self._symbols(server, path, result, symbols, None, 0)
        return symbols

    async def workspace_symbols(self, query: str) -> list[Symbol]:
        symbols: list[Symbol] = []
        problems: list[str] = []
        candidates = [s for s in self._servers if s.capabilities.get("workspaceSymbolProvider")]
        for server in candidates or self._servers:
            try:
                await self._ensure(server)
            except LanguageError as exc:
                problems.append(str(exc))
                continue
            try:
                if not server.capabilities.get("workspaceSymbolProvider"):
                    continue
                result = await self._request(server, "workspace/symbol", {"query": query})
            except LanguageError as exc:
                problems.append(str(exc))
                continue
            if isinstance(result, list):
                self._symbols(server, None, result, symbols, None, 0)
        if not symbols and problems:
            for server in self._servers:
                server.unsaid = None  # said now, in this call's error
            raise LanguageError("; ".join(problems))
        return symbols

    async def hover(self, path: Path, position: Position) -> str | None:
        server, index = await self._open(path)
        result = await self._request(
            server, "textDocument/hover", self._at(path, index, server, position)
        )
        if not isinstance(result, dict):
            return None
        return hover_text(result.get("contents")) or None

    async def rename(self, path: Path, position: Position, new_name: str) -> WorkspaceChange:
        server, index = await self._open(path)
        params = self._at(path, index, server, position)
        params["newName"] = new_name
        result = await self._request(server, "textDocument/rename", params)
        if not isinstance(result, dict):
            return WorkspaceChange()
        return self._workspace_change(server, result)

    async def aclose(self) -> None:
        """Stop every server (the folder closed, or the process ends)."""
        for server in self._servers:
            if server.starting is not None:
                server.starting.cancel()
                with contextlib.suppress(BaseException):
                    await server.starting
                server.starting = None
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
        await asyncio.gather(*(self._stop(s) for s in self._servers), return_exceptions=True)

    # -- servers ------------------------------------------------------------------------

    def _server_for(self, path: Path) -> _Server | None:
        return next((s for s in self._servers if s.spec.handles(path)), None)

    async def _ensure(self, server: _Server) -> JsonRpcClient:
        """The server's running client, started (or restarted once its backoff passed)."""
        server.last_used = self._clock()
        if server.client is not None and server.client.ended is None:
            return server.client
        if server.client is not None:  # it crashed since
            self._failed(server, f"{server.spec.name} stopped: {server.client.ended}")
            await self._stop(server)
        if server.starting is None:
            if server.failures and self._clock() < server.retry_at:
                later = f"it is tried again in {max(server.retry_at - self._clock(), 1):.0f} s"
                if server.unsaid:  # why, the first time it is said
                    why, server.unsaid = server.unsaid, None
                    raise LanguageError(f"{why}; {later}")
                raise LanguageError(
                    f"the language server {server.spec.name} is not running (it failed); {later}"
                )
            server.starting = asyncio.get_running_loop().create_task(self._start(server))
        task = server.starting
        try:
            return await asyncio.shield(task)
        except LanguageError:
            raise
        finally:
            if task.done() and server.starting is task:
                server.starting = None

    async def _start(self, server: _Server) -> JsonRpcClient:
        spec = server.spec
        try:
            argv, redirects = self._argv(server)
            client = await JsonRpcClient.start(
                argv,
                cwd=self.root,
                env={**self._environ, **spec.env, **redirects},
                on_notification=server.on_notification,
                on_end=server.wake,
            )
        except (OSError, LanguageError) as exc:
            raise self._failed(server, f"{spec.name} could not start: {exc}") from None
        try:
            answer = await client.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "clientInfo": {"name": "agent-lsp"},
                    "rootUri": self.root.as_uri(),
                    "rootPath": str(self.root),
                    "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
                    "capabilities": CLIENT_CAPABILITIES,
                    "initializationOptions": spec.initialization_options,
                },
                within=START_TIMEOUT,
            )
            await client.notify("initialized", {})
        except (ClientError, TimeoutError) as exc:
            why = str(exc) or f"no answer to initialize within {START_TIMEOUT:.0f} s"
            await client.close(within=0.5)
            raise self._failed(server, f"{spec.name} could not start: {why}") from None
        except asyncio.CancelledError:  # the folder closed while it started
            with contextlib.suppress(ProcessLookupError):
                client.process.kill()
            await client.close(within=0.5)
            raise
        capabilities = answer.get("capabilities") if isinstance(answer, dict) else None
        server.capabilities = capabilities if isinstance(capabilities, dict) else {}
        encoding = server.capabilities.get("positionEncoding")
        server.encoding = encoding if encoding in ("utf-8", "utf-16", "utf-32") else "utf-16"
        server.client, server.documents, server.published = client, {}, {}
        server.error = None
        self._watch_idle()
        return client

    def _argv(self, server: _Server) -> tuple[list[str], dict[str, str]]:
        """The server's command line, confined, and the variables that point its caches
        (``~/.cache``: read-only inside) at its private temp folder."""
        spec = server.spec
        path = self._environ.get("PATH", os.defpath)
        found = shutil.which(spec.command, path=path)
        if found is None:
            raise LanguageError(f"{spec.command} was not found on PATH")
        program = [found, *spec.args]
        if self._environ.get(UNCONFINED_VARIABLE) == "1":
            return program, {}
        policy = sandbox.SandboxPolicy(mode="read-only", network=False, hidden_paths=self._hidden)
        server.tmp = server.tmp or tempfile.mkdtemp(prefix="agent-lsp-language-")
        confined = sandbox.confinement(policy, self.root, Path(server.tmp))
        if confined is None:
            # No sandbox on this system: a language server runs what a repository names
            # (build scripts, macros), so it is not started unconfined unless the user said so.
            raise LanguageError(
                "this system has no sandbox to run language servers in; set "
                f"{UNCONFINED_VARIABLE}=1 to run them unconfined, with your rights"
            )
        # The server's own install stays visible under the sandbox's private /tmp (a
        # virtualenv there: its bin/ and the packages beside it), as the link and its target,
        installs = {Path(found).parent.parent, Path(os.path.realpath(found)).parent.parent}
        # And the files its command line names (a script run by an interpreter).
        installs |= {
            Path(arg).parent for arg in spec.args if os.path.isabs(arg) and os.path.exists(arg)
        }
        readable = (*confined.readable, *sorted(installs - set(confined.readable)))
        confined = dataclasses.replace(confined, readable=tuple(dict.fromkeys(readable)))
        redirects = sandbox.cache_redirects(self._environ, confined, self.root)
        return confined.argv(program), {"TMPDIR": server.tmp, **redirects}

    def _failed(self, server: _Server, why: str) -> LanguageError:
        server.failures += 1
        server.retry_at = self._clock() + backoff(server.failures + 1)
        server.error = why
        server.unsaid = why
        log.warning("language server: %s", why)
        return LanguageError(why)

    def _unsaid(self) -> list[str]:
        said = []
        for server in self._servers:
            if server.unsaid:
                said.append(server.unsaid)
                server.unsaid = None
        if not self._unconfined_said and any(s.client is not None for s in self._servers):
            self._unconfined_said = True
            if self._environ.get(UNCONFINED_VARIABLE) == "1":
                said.append(
                    f"language servers run unconfined ({UNCONFINED_VARIABLE}=1), with the "
                    "user's rights"
                )
            elif not sandbox.support().available:
                said.append("language servers run unconfined: this system has no sandbox")
        return said

    async def _stop(self, server: _Server) -> None:
        client, server.client = server.client, None
        server.documents, server.published = {}, {}
        if client is not None:
            await client.close()
        if server.tmp is not None:
            shutil.rmtree(server.tmp, ignore_errors=True)
            server.tmp = None

    def _watch_idle(self) -> None:
        if self._idle_task is None or self._idle_task.done():
            self._idle_task = asyncio.get_running_loop().create_task(self._idle())

    async def _idle(self) -> None:
        while any(s.client is not None for s in self._servers):
            await asyncio.sleep(min(self._idle_seconds, 60.0))
            for server in self._servers:
                idle = self._clock() - server.last_used
                if server.client is not None and idle >= self._idle_seconds:
                    await self._stop(server)

    # -- documents ----------------------------------------------------------------------

    async def _sync(self, server: _Server, path: Path, text: str | None) -> int:
        """``path`` open in the server with ``text`` (None: the disk's); its version."""
        client = await self._ensure(server)
        if text is None:
            text = _read(path)
            if text is None:
                raise LanguageError(f"{path} cannot be read as UTF-8 text")
        async with server.syncing:
            return await self._send_text(server, client, path, text)

    async def _send_text(
        self, server: _Server, client: JsonRpcClient, path: Path, text: str
    ) -> int:
        known = server.documents.get(path)
        if known is not None and known[1] == text:
            return known[0]
        uri = path.as_uri()
        try:
            if known is None:
                version = 1
                await client.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": language_id(path),
                                      "version": version, "text": text}},
                )  # fmt: skip
            else:
                version = known[0] + 1
                await client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version},
                     "contentChanges": [{"text": text}]},
                )  # fmt: skip
        except ClientError as exc:
            raise LanguageError(f"{server.spec.name} stopped: {exc}") from None
        server.documents[path] = (version, text)
        return version

    async def _fresh_diagnostics(
        self, server: _Server, path: Path, text: str | None, deadline: float
    ) -> list[Diagnostic] | None:
        """The problems of ``path`` as published for ``text``, or None when the server did
        not publish them before ``deadline``."""

        async def published() -> list[Diagnostic]:
            record = server.published.get(path)
            count = record.count if record is not None else 0
            before = server.documents.get(path)
            version = await self._sync(server, path, text)
            fresh = before is None or before[0] != version
            client = server.client

            def ready() -> bool:
                if client is None or client.ended is not None:
                    return True  # it ended: said at once, not as a timeout
                now = server.published.get(path)
                if now is None:
                    return False
                if now.version is not None:
                    return now.version >= version
                return now.count > count or not fresh

            async with server.changed:
                await server.changed.wait_for(ready)
            if client is None or client.ended is not None:
                why = client.ended if client is not None else "stopped"
                failure = self._failed(server, f"{server.spec.name} stopped: {why}")
                if server.client is client:
                    await self._stop(server)
                raise failure
            return self._diagnostics(server, path, server.published[path])

        try:
            return await asyncio.wait_for(published(), max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            return None

    async def _open(self, path: Path) -> tuple[_Server, LineIndex]:
        server = self._server_for(path)
        if server is None:
            raise LanguageError(
                f"no language server is configured for {path.suffix or path.name} files"
            )
        try:
            await self._sync(server, path, None)
        except LanguageError:
            server.unsaid = None  # said now, as this call's error
            raise
        return server, LineIndex(server.documents[path][1], server.encoding)

    async def _request(self, server: _Server, method: str, params: Any) -> Any:
        try:
            client = await self._ensure(server)
        except LanguageError:
            server.unsaid = None  # said now, as this call's error
            raise
        try:
            return await client.request(method, params, within=REQUEST_TIMEOUT)
        except TimeoutError:
            raise LanguageError(
                f"{server.spec.name} did not answer {method} within {REQUEST_TIMEOUT:.0f} s"
            ) from None
        except ClientError as exc:
            raise LanguageError(f"{server.spec.name} could not answer {method}: {exc}") from None

    # -- conversions --------------------------------------------------------------------

    def _shapes(self, server: _Server) -> LspShapes:
        return LspShapes(lambda path: self._text(server, path), server.encoding)

    def _at(
        self, path: Path, index: LineIndex, server: _Server, position: Position
    ) -> dict[str, Any]:
        return self._shapes(server).at(path, position)

    def _text(self, server: _Server, path: Path) -> str:
        known = server.documents.get(path)
        if known is not None:
            return known[1]
        return _read(path) or ""

    def _diagnostics(self, server: _Server, path: Path, record: _Published) -> list[Diagnostic]:
        return self._shapes(server).diagnostics(path, record.diagnostics)

    def _locations(self, server: _Server, result: Any) -> list[Location]:
        return self._shapes(server).locations(result)

    def _symbols(
        self,
        server: _Server,
        path: Path | None,
        items: list[Any],
        out: list[Symbol],
        container: str | None,
        depth: int,
    ) -> None:
        self._shapes(server).symbols(path, items, out, container, depth)

    def _workspace_change(self, server: _Server, raw: dict[str, Any]) -> WorkspaceChange:
        return self._shapes(server).workspace_change(raw)


def _read(path: Path) -> str | None:
    try:
        return read_text_file(path, MAX_FILE)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def folder_languages(
    environ: Mapping[str, str],
    user_file: Path | None,
    hidden_paths: Iterable[Path],
    warn: Callable[[str], None],
) -> Callable[[Path], HeadlessLanguages | None]:
    """The factory of a folder's language servers: the user file's ``[language_servers]``,
    read when the folder opens (a bad table is one warning); None where none is defined."""
    hidden = tuple(hidden_paths)

    def languages(root: Path) -> HeadlessLanguages | None:
        definitions = read_definitions(user_file)
        for warning in definitions.warnings:
            warn(warning)
        if not definitions.specs:
            return None
        return HeadlessLanguages(root, definitions.specs, hidden_paths=hidden, environ=environ)

    return languages
