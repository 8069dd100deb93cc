"""Adding and removing ``[mcp_servers.NAME]`` in the user file (``agent-lsp mcp add|remove``).

Edited as text, so the user's comments and every other line stay; the result is parsed again
and compared with what was meant before it replaces the file (privately, atomically).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config.user_config import (
    UserConfigError,
    header_name,
    is_bare_key,
    is_comment,
    read_for_edit,
    toml_string,
    write_private,
)
from .config import TABLE


def add_server(path: Path, name: str, table: Mapping[str, Any], *, replace: bool = False) -> Path:
    """Write ``[mcp_servers.NAME]`` with ``table``'s values at the end of the file (or, with
    ``replace``, where the old definition was); every other line stays. Returns the file written."""
    if not is_bare_key(name):
        raise UserConfigError(f"server name {name!r}: use letters, digits, '-' and '_' only")
    target, old, data = read_for_edit(path)
    servers = data.get(TABLE, {})
    if not isinstance(servers, dict):
        raise UserConfigError(f"{target}: {TABLE} is not a table; fix it first")
    if name in servers and not replace:
        raise UserConfigError(f"{TABLE}.{name} is already defined in {target} (--replace)")
    block = [f"[{TABLE}.{name}]\n", *(f"{key} = {_toml_value(v)}\n" for key, v in table.items())]
    lines = _lines(old)
    spans = _server_spans(lines, name)
    if spans:
        at = spans[0][0]
        for start, end in reversed(spans):
            del lines[start:end]
        lines[at:at] = block
    else:
        if lines and lines[-1].strip():
            lines.append("\n")
        lines += block
    expected = {**data, TABLE: {**servers, name: dict(table)}}
    return _write_checked(target, "".join(lines), expected, f"{TABLE}.{name}")


def remove_server(path: Path, name: str) -> Path:
    """Remove ``[mcp_servers.NAME]`` (and its sub-tables); every other line stays."""
    target, old, data = read_for_edit(path)
    servers = data.get(TABLE, {})
    if not isinstance(servers, dict) or name not in servers:
        raise UserConfigError(f"no MCP server {name!r} in {target}")
    lines = _lines(old)
    for start, end in reversed(_server_spans(lines, name)):
        # The blank line that separated the table goes with it, unless nothing would then
        # separate what was before it from what follows.
        if end == len(lines) or not lines[end].strip():
            while start > 0 and not lines[start - 1].strip():
                start -= 1
        del lines[start:end]
    rest = {key: value for key, value in servers.items() if key != name}
    return _write_checked(target, "".join(lines), {**data, TABLE: rest}, f"{TABLE}.{name}")


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def _server_spans(lines: list[str], name: str) -> list[tuple[int, int]]:
    """Line ranges of ``[mcp_servers.NAME]`` and its sub-tables, each up to the next table but
    without the comments and blank lines before it (they introduce the next table)."""
    named = [(i, header_name(line)) for i, line in enumerate(lines)]
    headers = [(i, header) for i, header in named if header is not None]
    own = f"{TABLE}.{name}"
    spans = []
    for number, (start, header) in enumerate(headers):
        if header != own and not header.startswith(own + "."):
            continue
        end = headers[number + 1][0] if number + 1 < len(headers) else len(lines)
        while end > start + 1 and (not lines[end - 1].strip() or is_comment(lines[end - 1])):
            end -= 1
        spans.append((start, end))
    return spans


def _write_checked(target: Path, text: str, expected: dict[str, Any], what: str) -> Path:
    """Write ``text`` only if it reads back as ``expected``: a form of the file this textual
    edit does not understand (a multi-line string, dotted keys) is refused, not corrupted."""
    try:
        written: dict[str, Any] | None = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        written = None
    if written is None or _without_empty_table(written) != _without_empty_table(expected):
        raise UserConfigError(
            f"could not update {what} in {target} safely (it is written in a form this "
            "command does not edit); change it by hand"
        )
    write_private(target, text)
    return target


def _without_empty_table(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if not (key == TABLE and value == {})}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{_toml_key(key)} = {_toml_value(item)}" for key, item in value.items())
        return "{ " + ", ".join(items) + " }" if value else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _toml_key(key: str) -> str:
    return key if is_bare_key(key) else toml_string(key)
