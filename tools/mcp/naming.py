"""The registry name of an MCP server's tool: ``mcp__SERVER__TOOL``.

Model APIs accept function names of ``[A-Za-z0-9_-]`` and at most 64 characters (OpenAI's
limit, which the other endpoints share), so other characters become ``_`` and a longer
name is cut, with a short hash of the whole original name as its end: two long names that
share their first 55 characters stay distinct. Names that are still equal (``a.b`` and
``a_b`` on one server) are the registry's to refuse, with a warning.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_LENGTH = 64
_HASH_LENGTH = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``, safe for every model API (see the module's docstring)."""
    name = f"{PREFIX}{_UNSAFE.sub('_', server)}{SEPARATOR}{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_LENGTH:
        return name
    # Hashed before replacement, so the suffix tells apart what replacement merged.
    digest = hashlib.sha256(f"{PREFIX}{server}{SEPARATOR}{tool}".encode()).hexdigest()
    return f"{name[: MAX_LENGTH - _HASH_LENGTH - 1]}_{digest[:_HASH_LENGTH]}"


def server_prefix(server: str) -> str:
    """What every registry name of ``server``'s tools starts with (``mcp__SERVER__``)."""
    return f"{PREFIX}{_UNSAFE.sub('_', server)}{SEPARATOR}"
