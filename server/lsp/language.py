"""The editor's own language servers: a source of language features over the client.

A client that sets ``capabilities.experimental.agent.languageFeatures`` answers two
server -> client requests for the editor's language servers (the ones the user already
runs): ``agent/languageDiagnostics`` (the problems its editor knows for files, after
waiting for them to change) and ``agent/languageRequest`` (one LSP request,
definition, references, symbols, hover or rename, run against the editor's providers).
:class:`EditorLanguages` implements ``tooling.language.LanguageFeatures`` over them, for
every folder of such a client (the LSP face chooses it; ``server.language``'s headless
servers otherwise).

Positions: the model's (1-based line and column in characters) are converted to the
client's (0-based, in the negotiated position encoding) with the one ``LineIndex``, on
the text the editor has (its open buffer, else the disk); answers back the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tooling.language import (
    DiagnosticsReport,
    LanguageError,
    Location,
    Position,
    Symbol,
    WorkspaceChange,
)
from tooling.regular_files import read_text_file

from .. import protocol as p
from ..language.shapes import LspShapes, hover_text
from ..positions import fs_path

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

NAME: Final = "the editor's language servers"
REQUEST_TIMEOUT: Final = 10.0  # a forwarded navigation request's answer
ANSWER_MARGIN: Final = 5.0  # a diagnostics request: the client's wait, plus this for its answer
MAX_FILE: Final = 8 * 1024 * 1024
# Files of an extension the editor answered ``answered: false`` for this many times, and
# never answered for: no language server of the editor handles them (no more waits).
UNHANDLED_AFTER: Final = 2
# An answer "not answered" that came back within this fraction of the wait: the editor said
# at once that no server of its handles the file.
QUICK_FRACTION: Final = 0.5


def client_answers(ls: LanguageServer) -> bool:
    """Whether the client said its editor's language servers answer (the capability)."""
    experimental = ls.client_capabilities.experimental
    agent = experimental.get("agent") if isinstance(experimental, dict) else None
    return isinstance(agent, dict) and agent.get(p.CLIENT_CAN_ANSWER_LANGUAGE) is True


class EditorLanguages:
    """A folder's language features, answered by the client's editor."""

    def __init__(
        self,
        ls: LanguageServer,
        root: Path,
        buffer_text: Callable[[Path], str | None],
        encoding: Callable[[], str],
    ) -> None:
        self._ls = ls
        self.root = root
        self._buffer_text = buffer_text
        self._encoding = encoding
        # The text each file had when the editor last answered for it: the same text
        # again needs no wait for a change.
        self._answered_for: dict[Path, str] = {}
        self._unanswered: dict[str, int] = {}  # by extension: answers with answered false
        self._answered: set[str] = set()  # extensions the editor answered for

    # -- the interface ------------------------------------------------------------------

    def name(self) -> str:
        return NAME

    def handles(self, path: Path) -> bool:
        kind = _kind(path)
        return kind in self._answered or self._unanswered.get(kind, 0) < UNHANDLED_AFTER

    async def diagnostics(
        self,
        paths: Sequence[Path],
        *,
        texts: Mapping[Path, str] | None = None,
        wait: float,
    ) -> DiagnosticsReport:
        report = DiagnosticsReport(timeout_ms=round(wait * 1000))
        if not paths:  # every file the editor answered for so far
            paths = sorted(self._answered_for)
            if not paths:
                return report
            wait = 0.0
        now = {path: self._text_now(path, texts) for path in paths}
        # A file whose text changed since the editor's last answer for it (or that the
        # editor has not analysed: not open): wait for its diagnostics to change.
        changed = any(
            self._answered_for.get(path, self._buffer_text(path)) != text
            for path, text in now.items()
        )
        wait_ms = round(wait * 1000) if changed else 0
        params = p.LanguageDiagnosticsParams(
            uris=[path.as_uri() for path in paths], wait_ms=wait_ms
        )
        started = time.monotonic()
        try:
            result = await self._send(
                p.AGENT_LANGUAGE_DIAGNOSTICS, p.to_wire(params), wait_ms / 1000 + ANSWER_MARGIN
            )
        except LanguageError as exc:
            report.problems.append(str(exc))
            report.failed.extend(paths)
            return report
        files = result.get("files") if isinstance(result, dict) else None
        by_uri: dict[str, dict[str, Any]] = {}
        for item in files if isinstance(files, list) else []:
            if isinstance(item, dict) and isinstance(item.get("uri"), str):
                if (path_text := fs_path(item["uri"])) is not None:
                    by_uri[Path(path_text).as_uri()] = item
        # "Not answered" well before the wait was over: the editor knows no server handles
        # the file (it did not wait for one).
        quick = (time.monotonic() - started) * 1000 < wait_ms * QUICK_FRACTION
        shapes = self._shapes(now)
        for path in paths:
            item = by_uri.get(path.as_uri())
            kind = _kind(path)
            if item is None or item.get("answered") is not True:
                if kind in self._answered:
                    report.unanswered.append(path)
                elif wait_ms == 0:
                    report.unhandled.append(path)
                elif quick:
                    self._unanswered[kind] = UNHANDLED_AFTER
                    report.unhandled.append(path)
                else:
                    self._unanswered[kind] = self._unanswered.get(kind, 0) + 1
                    report.unanswered.append(path)
                continue
            self._answered.add(kind)
            self._answered_for[path] = now[path]
            raw = item.get("diagnostics")
            raw = raw if isinstance(raw, list) else []
            report.diagnostics[path] = shapes.diagnostics(path, raw)
        return report

    async def definition(self, path: Path, position: Position) -> list[Location]:
        shapes = self._shapes()
        result = await self._forward(path, "textDocument/definition", shapes.at(path, position))
        return shapes.locations(result)

    async def references(self, path: Path, position: Position) -> list[Location]:
        shapes = self._shapes()
        params = shapes.at(path, position)
        params["context"] = {"includeDeclaration": True}
        return shapes.locations(await self._forward(path, "textDocument/references", params))

    async def document_symbols(self, path: Path) -> list[Symbol]:
        shapes = self._shapes()
        result = await self._forward(
            path, "textDocument/documentSymbol", {"textDocument": {"uri": path.as_uri()}}
        )
        symbols: list[Symbol] = []
        if isinstance(result, list):
            shapes.symbols(path, result, symbols)
        return symbols

    async def workspace_symbols(self, query: str) -> list[Symbol]:
        shapes = self._shapes()
        result = await self._forward(None, "workspace/symbol", {"query": query})
        symbols: list[Symbol] = []
        if isinstance(result, list):
            shapes.symbols(None, result, symbols)
        return symbols

    async def hover(self, path: Path, position: Position) -> str | None:
        shapes = self._shapes()
        result = await self._forward(path, "textDocument/hover", shapes.at(path, position))
        if not isinstance(result, dict):
            return None
        return hover_text(result.get("contents")) or None

    async def rename(self, path: Path, position: Position, new_name: str) -> WorkspaceChange:
        shapes = self._shapes()
        params = shapes.at(path, position)
        params["newName"] = new_name
        result = await self._forward(path, "textDocument/rename", params)
        if not isinstance(result, dict):
            return WorkspaceChange()
        return shapes.workspace_change(result)

    async def aclose(self) -> None:
        """Nothing to stop: the editor's servers are the editor's."""

    # -- the wire -----------------------------------------------------------------------

    def _text_now(self, path: Path, texts: Mapping[Path, str] | None) -> str:
        given = (texts or {}).get(path)
        if given is not None:
            return given
        buffer = self._buffer_text(path)
        return buffer if buffer is not None else _read(path)

    def _shapes(self, texts: Mapping[Path, str] | None = None) -> LspShapes:
        return LspShapes(lambda path: self._text_now(path, texts), self._encoding())

    async def _forward(self, path: Path | None, method: str, params: dict[str, Any]) -> Any:
        """``method``'s LSP result from the editor; a null one is an error for the model
        (no language server of the editor answered for that file)."""
        request = p.LanguageRequestParams(method=method, params=params)
        result = await self._send(p.AGENT_LANGUAGE_REQUEST, p.to_wire(request), REQUEST_TIMEOUT)
        answer = result.get("result") if isinstance(result, dict) else None
        if answer is None:
            where = f"for {path}" if path is not None else f"({method})"
            raise LanguageError(f"no language server of the editor answered {where}")
        return answer

    async def _send(self, method: str, params: Any, within: float) -> Any:
        protocol = self._ls.protocol
        msg_id = f"language-{uuid.uuid4().hex}"
        future = asyncio.wrap_future(protocol.send_request(method, params, msg_id=msg_id))
        future.add_done_callback(_read_late)
        try:
            return await asyncio.wait_for(asyncio.shield(future), within)
        except TimeoutError:
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise LanguageError(
                f"the editor did not answer {method} within {within:.0f} s"
            ) from None
        except asyncio.CancelledError:
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except JsonRpcException as exc:
            raise LanguageError(f"the editor could not answer {method}: {exc}") from None


def editor_languages(ls: LanguageServer, documents: Any) -> Callable[[Path], EditorLanguages]:
    """The factory of a folder's source when the client answers (``documents``: the
    editor's buffers, ``server.lsp.documents.LspDocuments``)."""

    def languages(root: Path) -> EditorLanguages:
        return EditorLanguages(ls, root, documents.buffer_text, documents.position_encoding)

    return languages


def _kind(path: Path) -> str:
    return path.suffix.lower() or path.name


def _read(path: Path) -> str:
    try:
        return read_text_file(path, MAX_FILE)
    except (OSError, UnicodeDecodeError, ValueError):
        return ""


def _read_late(answer: asyncio.Future[Any]) -> None:
    """An answer nobody awaits any more is read here (else asyncio logs its error)."""
    if not answer.cancelled():
        answer.exception()
