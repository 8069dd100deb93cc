"""LSP's JSON shapes to ``tooling.language``'s plain data, and the model's positions to LSP's.

Shared by both sources of language features: the headless one (``server.language.servers``,
servers agent-lsp starts) and the editor's own (the LSP face forwarding to its client).
``text`` gives a file's text as the far side sees it (what it was sent, the editor's
buffer, else the disk); ``encoding`` is the far side's position encoding. Positions are
converted with the one ``LineIndex``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from tooling.language import (
    SEVERITIES,
    Diagnostic,
    Location,
    Position,
    Span,
    Symbol,
    TextChange,
    WorkspaceChange,
)

from ..positions import LineIndex, fs_path

SYMBOL_KINDS: Final = (
    "file", "module", "namespace", "package", "class", "method", "property", "field",
    "constructor", "enum", "interface", "function", "variable", "constant", "string",
    "number", "boolean", "array", "object", "key", "null", "enum member", "struct", "event",
    "operator", "type parameter",
)  # fmt: skip


# Items of one answer converted at most (a file with tens of thousands of problems, a
# server answering with a flood): the tools show far fewer, and each costs a position
# conversion on the event loop.
MAX_ITEMS: Final = 1000


class LspShapes:
    def __init__(self, text: Callable[[Path], str], encoding: str) -> None:
        self._text = text
        self.encoding = encoding
        # Within one conversion: each file's text read and indexed once, not per range.
        self._memo: dict[Path, tuple[LineIndex, LineIndex]] | None = None

    @contextlib.contextmanager
    def _conversion(self) -> Iterator[None]:
        outer = self._memo is None
        if outer:
            self._memo = {}
        try:
            yield
        finally:
            if outer:
                self._memo = None

    def _indexes(self, path: Path) -> tuple[LineIndex, LineIndex]:
        """The far side's index of ``path``'s text and the characters' one."""
        if self._memo is not None and path in self._memo:
            return self._memo[path]
        text = self._text(path)
        found = (LineIndex(text, self.encoding), LineIndex(text, "utf-32"))
        if self._memo is not None:
            self._memo[path] = found
        return found

    def at(self, path: Path, position: Position) -> dict[str, Any]:
        """``textDocument`` and ``position`` params for the model's ``position`` in ``path``."""
        text = self._text(path)
        offset = LineIndex(text, "utf-32").offset(position.line - 1, position.column - 1)
        line, character = LineIndex(text, self.encoding).position(offset)
        return {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": line, "character": character},
        }

    def span(self, path: Path, raw: Any) -> Span:
        wire, chars = self._indexes(path)

        def point(value: Any) -> Position:
            value = value if isinstance(value, dict) else {}
            line = int(value.get("line", 0) or 0)
            character = int(value.get("character", 0) or 0)
            at = chars.position(wire.offset(line, character))
            return Position(at[0] + 1, at[1] + 1)

        raw = raw if isinstance(raw, dict) else {}
        return Span(point(raw.get("start")), point(raw.get("end")))

    def diagnostics(self, path: Path, items: list[Any]) -> list[Diagnostic]:
        with self._conversion():
            return self._diagnostics(path, items[:MAX_ITEMS])

    def _diagnostics(self, path: Path, items: list[Any]) -> list[Diagnostic]:
        found = []
        for raw in items:
            if not isinstance(raw, dict):
                continue
            severity = raw.get("severity")
            code = raw.get("code")
            if isinstance(code, dict):  # VS Code's {value, target}
                code = code.get("value")
            found.append(
                Diagnostic(
                    span=self.span(path, raw.get("range")),
                    message=str(raw.get("message", "")),
                    severity=SEVERITIES[severity - 1]
                    if isinstance(severity, int) and 1 <= severity <= 4
                    else "error",
                    code=str(code) if code is not None else None,
                    source=str(raw["source"]) if raw.get("source") else None,
                )
            )
        return found

    def locations(self, result: Any) -> list[Location]:
        items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
        with self._conversion():
            return self._locations(items[:MAX_ITEMS])

    def _locations(self, items: list[Any]) -> list[Location]:
        found = []
        for item in items:
            if not isinstance(item, dict):
                continue
            uri = item.get("uri") or item.get("targetUri")
            where = item.get("range") or item.get("targetSelectionRange")
            path_text = fs_path(str(uri or ""))
            if path_text is None:
                continue
            path = Path(path_text)
            found.append(Location(path, self.span(path, where)))
        return found

    def symbols(
        self,
        path: Path | None,
        items: list[Any],
        out: list[Symbol],
        container: str | None = None,
        depth: int = 0,
    ) -> None:
        with self._conversion():
            self._symbols(path, items, out, container, depth)

    def _symbols(
        self,
        path: Path | None,
        items: list[Any],
        out: list[Symbol],
        container: str | None,
        depth: int,
    ) -> None:
        for item in items:
            if len(out) >= MAX_ITEMS:
                return
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            kind = item.get("kind")
            kind_name = (
                SYMBOL_KINDS[kind - 1] if isinstance(kind, int) and 1 <= kind <= 26 else "symbol"
            )
            if "location" in item:  # SymbolInformation / WorkspaceSymbol
                location = item["location"] if isinstance(item["location"], dict) else {}
                target = fs_path(str(location.get("uri", "")))
                if target is None:
                    continue
                where = Path(target)
                span = self.span(where, location.get("range"))
                parent = item.get("containerName") or container
            else:  # DocumentSymbol, nested
                if path is None:
                    continue
                where = path
                span = self.span(path, item.get("selectionRange") or item.get("range"))
                parent = container
            out.append(
                Symbol(
                    name=item["name"],
                    kind=kind_name,
                    location=Location(where, span),
                    container=parent if isinstance(parent, str) and parent else None,
                    detail=item.get("detail") if isinstance(item.get("detail"), str) else None,
                    depth=depth,
                )
            )
            children = item.get("children")
            if isinstance(children, list) and path is not None:
                self._symbols(path, children, out, item["name"], depth + 1)

    def workspace_change(self, raw: dict[str, Any]) -> WorkspaceChange:
        with self._conversion():
            return self._workspace_change(raw)

    def _workspace_change(self, raw: dict[str, Any]) -> WorkspaceChange:
        changes: dict[Path, list[TextChange]] = {}
        unsupported: list[str] = []

        def add(uri: Any, edits: Any) -> None:
            target = fs_path(str(uri or ""))
            if target is None or not isinstance(edits, list):
                unsupported.append(f"an edit of {uri}")
                return
            path = Path(target)
            for edit in edits:
                if isinstance(edit, dict) and isinstance(edit.get("newText"), str):
                    changes.setdefault(path, []).append(
                        TextChange(self.span(path, edit.get("range")), edit["newText"])
                    )

        for change in raw.get("documentChanges") or []:
            if isinstance(change, dict) and "textDocument" in change:
                add((change["textDocument"] or {}).get("uri"), change.get("edits"))
            elif isinstance(change, dict):
                unsupported.append(f"{change.get('kind', 'a file operation')} of "
                                   f"{change.get('uri') or change.get('oldUri')}")  # fmt: skip
        if not raw.get("documentChanges"):
            for uri, edits in (raw.get("changes") or {}).items():
                add(uri, edits)
        return WorkspaceChange(changes, tuple(unsupported))


def hover_text(contents: Any) -> str:
    if isinstance(contents, str):
        return contents.strip()
    if isinstance(contents, dict):
        return str(contents.get("value", "")).strip()
    if isinstance(contents, list):
        return "\n\n".join(t for t in (hover_text(c) for c in contents) if t)
    return ""
