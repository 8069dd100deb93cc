"""Language features the tools may call (an interface, no protocol here).

A source of language features answers for a folder's files: the problems a language
server reports (diagnostics), definitions, references, symbols, hover text and a
rename's edit. Tools depend only on this interface; a source implements it over the
language servers agent-lsp starts itself (``server.language``) or, later, over the
editor's own (the LSP face forwarding to the editor's providers). Without one (``None``
in the tool context) the language tools are not offered and the file tools report no
problems.

Positions here are as the model thinks of them: a 1-based line and a 1-based column
counted in characters (Unicode code points). Each source converts them to its wire's
positions with the one line index (``server.positions.LineIndex``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and a 1-based column (characters, not bytes or UTF-16 units)."""

    line: int
    column: int


@dataclass(frozen=True)
class Span:
    start: Position
    end: Position


@dataclass(frozen=True)
class Location:
    path: Path
    span: Span


SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Diagnostic:
    span: Span
    message: str
    severity: str = "error"  # one of SEVERITIES
    code: str | None = None
    source: str | None = None

    def identity(self) -> tuple[str, str | None, str | None, str]:
        """What tells two reports of a problem apart across an edit (lines move): its
        severity, code, source and message, not its place."""
        return (self.severity, self.code, self.source, self.message)


@dataclass
class DiagnosticsReport:
    """The problems of the files asked about, and what could not be said of the others."""

    # Each file asked about that a server answered for (an empty list: no problems).
    diagnostics: dict[Path, list[Diagnostic]] = field(default_factory=dict)
    # Files whose server did not publish for the asked text within the bound.
    unanswered: list[Path] = field(default_factory=list)
    # Files whose server is not running (it failed to start or crashed; said in problems).
    failed: list[Path] = field(default_factory=list)
    # Files no language server handles (no server for their language).
    unhandled: list[Path] = field(default_factory=list)
    # What went wrong, in words for the model (a server that crashed, said once).
    problems: list[str] = field(default_factory=list)
    # The bound waited for, in milliseconds (for "did not answer within N ms").
    timeout_ms: int = 0


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # LSP's SymbolKind in words: "function", "class", "variable", ...
    location: Location
    container: str | None = None  # the enclosing symbol's name, if any
    detail: str | None = None
    depth: int = 0  # nesting in a document's outline (0: top level)


@dataclass(frozen=True)
class TextChange:
    """Replace ``span`` with ``text`` (positions as above)."""

    span: Span
    text: str


@dataclass(frozen=True)
class WorkspaceChange:
    """A language server's workspace edit as plain data: the changes per file (files
    created, renamed or deleted by the edit are listed apart: never applied by the
    tools)."""

    changes: Mapping[Path, Sequence[TextChange]] = field(default_factory=dict)
    unsupported: Sequence[str] = ()


class LanguageError(Exception):
    """A request a source could not answer: the message says why, for the model (no
    server for that file's language, the server failed, did not answer in time)."""


class LanguageFeatures(Protocol):
    def name(self) -> str:
        """Which source answers, in words for the user ("language servers: ruff")."""
        ...

    def handles(self, path: Path) -> bool:
        """Whether a language server of this source answers for ``path``."""
        ...

    async def diagnostics(
        self,
        paths: Sequence[Path],
        *,
        texts: Mapping[Path, str] | None = None,
        wait: float,
    ) -> DiagnosticsReport:
        """The problems of ``paths``; ``texts``: their content now (a tool's write), else
        what is on disk. Waits (at most ``wait`` seconds) until the server has published
        for that content; an empty ``paths``: every file whose problems are known."""
        ...

    async def definition(self, path: Path, position: Position) -> list[Location]: ...

    async def references(self, path: Path, position: Position) -> list[Location]: ...

    async def document_symbols(self, path: Path) -> list[Symbol]: ...

    async def workspace_symbols(self, query: str) -> list[Symbol]: ...

    async def hover(self, path: Path, position: Position) -> str | None: ...

    async def rename(self, path: Path, position: Position, new_name: str) -> WorkspaceChange: ...
