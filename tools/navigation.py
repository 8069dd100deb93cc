"""The code navigation tools: ``definition``, ``references``, ``symbols``, ``hover``.

Each asks the folder's language features (``tooling.language``, in the call's context)
and answers in lines the model reads back as it reads ``read_file``'s: ``path:line:col``
with the line's text. A position is a 1-based ``line`` and either a 1-based ``column``
(characters) or a ``symbol``, a name on that line (its first occurrence; the column, when
also given, picks the occurrence at or after it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.language import LanguageError, Location, Position, Symbol
from tooling.regular_files import read_text_file
from tooling.workspace import Workspace, WorkspaceError

from .diagnostics import shown_path
from .errors import ToolError, resolve

MAX_LOCATIONS = 100
MAX_SYMBOLS = 300
MAX_HOVER = 4000
MAX_READ = 8 * 1024 * 1024
NO_SOURCE = "Error: no language server answers for this folder"

POSITION: dict[str, Any] = {
    "path": {
        "type": "string",
        "minLength": 1,
        "description": "The file, relative to the workspace root.",
    },
    "line": {"type": "integer", "minimum": 1, "description": "1-based line number."},
    "column": {
        "type": "integer",
        "minimum": 1,
        "description": "1-based column (characters). Give this or symbol.",
    },
    "symbol": {
        "type": "string",
        "minLength": 1,
        "description": "A name on that line (its first occurrence). Give this or column.",
    },
}


def position_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(POSITION),
        "required": ["path", "line"],
        "additionalProperties": False,
    }


async def file_text(context: ToolContext, target: Path, shown: str) -> str:
    """The text of ``target`` as the file tools read it (the editor's buffer first)."""
    if context.documents is not None:
        text = await context.documents.read_text(target)
        if text is not None:
            return text
    try:
        return read_text_file(target, MAX_READ)
    except FileNotFoundError:
        raise ToolError(f"file not found: {shown}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"cannot read {shown}: {exc}") from None


async def position_of(
    workspace: Workspace, arguments: dict[str, Any], context: ToolContext
) -> tuple[Path, Position]:
    """The file and position a call names; :class:`ToolError` when they do not exist."""
    target = resolve(workspace, arguments["path"])
    shown = shown_path(workspace, target)
    line: int = arguments["line"]
    column: int | None = arguments.get("column")
    symbol: str | None = arguments.get("symbol")
    if column is None and symbol is None:
        raise ToolError("give column (1-based) or symbol (a name on that line)")
    lines = (await file_text(context, target, shown)).splitlines()
    if line > len(lines):
        raise ToolError(f"{shown} has {len(lines)} lines; there is no line {line}")
    text = lines[line - 1]
    if symbol is not None:
        found = text.find(symbol, (column or 1) - 1)
        if found < 0:
            raise ToolError(f"{symbol!r} is not on line {line} of {shown}: {text.strip()!r}")
        column = found + 1
    assert column is not None
    if column > len(text) + 1:
        raise ToolError(f"line {line} of {shown} has {len(text)} characters; no column {column}")
    return target, Position(line, column)


def _line_text(workspace: Workspace, path: Path, line: int, cache: dict[Path, list[str]]) -> str:
    """The line a location names, read as ``read_file`` would read it: only inside the
    workspace, a symlink followed only where it stays inside (a server may name any path,
    e.g. a workspace link to a file the sandbox hides: its text must not reach the model)."""
    if path not in cache:
        try:
            cache[path] = read_text_file(workspace.resolve(str(path)), MAX_READ).splitlines()
        except (OSError, UnicodeDecodeError, ValueError, RuntimeError, WorkspaceError):
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def location_lines(workspace: Workspace, locations: list[Location]) -> list[str]:
    cache: dict[Path, list[str]] = {}
    out = []
    for location in locations[:MAX_LOCATIONS]:
        start = location.span.start
        text = _line_text(workspace, location.path, start.line, cache)
        shown = shown_path(workspace, location.path)
        out.append(f"{shown}:{start.line}:{start.column}: {text}".rstrip())
    if len(locations) > MAX_LOCATIONS:
        out.append(f"... and {len(locations) - MAX_LOCATIONS} more")
    return out


def symbol_lines(workspace: Workspace, symbols: list[Symbol], *, outline: bool) -> list[str]:
    out = []
    for symbol in symbols[:MAX_SYMBOLS]:
        start = symbol.location.span.start
        detail = f" — {symbol.detail}" if symbol.detail else ""
        if outline:
            out.append(
                f"{'  ' * symbol.depth}{symbol.kind} {symbol.name}{detail} (line {start.line})"
            )
        else:
            inside = f" in {symbol.container}" if symbol.container else ""
            shown = shown_path(workspace, symbol.location.path)
            out.append(f"{shown}:{start.line}:{start.column}: {symbol.kind} {symbol.name}{inside}")
    if len(symbols) > MAX_SYMBOLS:
        out.append(f"... and {len(symbols) - MAX_SYMBOLS} more")
    return out


def definition_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        if context.language is None:
            return NO_SOURCE
        try:
            target, position = await position_of(workspace, arguments, context)
            found = await context.language.definition(target, position)
        except ToolError as exc:
            return exc.text()
        except LanguageError as exc:
            return f"Error: {exc}"
        if not found:
            return "No definition found at that position."
        return "\n".join(location_lines(workspace, found))

    return ToolDefinition(
        name="definition",
        description=(
            "Where the symbol at a position is defined, from the language server: "
            "path:line:col and that line. Name the position by line and column, or by "
            "line and symbol (a name on that line)."
        ),
        parameters=position_schema(),
        handler=handler,
        read_only=True,
        title="Go to definition",
        summary_key="path",
        kind="search",
    )


def references_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        if context.language is None:
            return NO_SOURCE
        try:
            target, position = await position_of(workspace, arguments, context)
            found = await context.language.references(target, position)
        except ToolError as exc:
            return exc.text()
        except LanguageError as exc:
            return f"Error: {exc}"
        if not found:
            return "No references found."
        head = f"{len(found)} reference{'s' if len(found) != 1 else ''} (declaration included):"
        return "\n".join([head, *location_lines(workspace, found)])

    return ToolDefinition(
        name="references",
        description=(
            "Every use of the symbol at a position, from the language server: path:line:col "
            "and the line. Name the position by line and column, or line and symbol."
        ),
        parameters=position_schema(),
        handler=handler,
        read_only=True,
        title="Find references",
        summary_key="path",
        kind="search",
    )


SYMBOLS_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "A file whose outline to list, relative to the workspace root.",
        },
        "query": {
            "type": "string",
            "description": "Search the whole workspace's symbols by name instead.",
        },
    },
    "additionalProperties": False,
}


def symbols_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        language = context.language
        if language is None:
            return NO_SOURCE
        path, query = arguments.get("path"), arguments.get("query")
        if (path is None) == (query is None):
            return "Error: give either path (a file's outline) or query (workspace symbols)"
        try:
            if path is not None:
                target = resolve(workspace, path)
                found = await language.document_symbols(target)
                if not found:
                    return f"No symbols in {shown_path(workspace, target)}."
                return "\n".join(symbol_lines(workspace, found, outline=True))
            found = await language.workspace_symbols(str(query))
        except ToolError as exc:
            return exc.text()
        except LanguageError as exc:
            return f"Error: {exc}"
        if not found:
            return f"No symbols match {query!r}."
        return "\n".join(symbol_lines(workspace, found, outline=False))

    return ToolDefinition(
        name="symbols",
        description=(
            "Symbols from the language server: a file's outline (path: its classes, "
            "functions, ... with their lines), or the workspace's symbols matching a name "
            "(query)."
        ),
        parameters=SYMBOLS_PARAMETERS,
        handler=handler,
        read_only=True,
        title="Symbols",
        summary_key="path",
        kind="search",
    )


def hover_tool(workspace: Workspace) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        if context.language is None:
            return NO_SOURCE
        try:
            target, position = await position_of(workspace, arguments, context)
            text = await context.language.hover(target, position)
        except ToolError as exc:
            return exc.text()
        except LanguageError as exc:
            return f"Error: {exc}"
        if not text:
            return "Nothing known at that position."
        return text if len(text) <= MAX_HOVER else text[:MAX_HOVER] + "\n[... cut]"

    return ToolDefinition(
        name="hover",
        description=(
            "What the language server says of the symbol at a position: its type, signature "
            "and documentation. Name the position by line and column, or line and symbol."
        ),
        parameters=position_schema(),
        handler=handler,
        read_only=True,
        title="Hover",
        summary_key="path",
        kind="read",
    )
