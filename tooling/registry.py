"""The registry: one name index that both the public schemas and dispatch use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from copy import deepcopy
from typing import Any

from .contract import ToolDefinition


class ToolRegistry:
    def __init__(self, definitions: Iterable[ToolDefinition]) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        for tool in definitions:
            if tool.name in self._tools:
                raise ValueError(f"Duplicate tool name: {tool.name}")
            self._tools[tool.name] = tool
        self._described: list[dict[str, Any]] | None = None

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI Chat Completions function tools (deep copies of the declarations)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": deepcopy(tool.parameters),
                },
            }
            for tool in self._tools.values()
        ]

    def describe(self) -> list[dict[str, Any]]:
        """MCP ``Tool`` shapes for editors (same index as :meth:`schemas`); built once,
        so callers must treat them as read-only."""
        if self._described is None:
            self._described = self._describe()
        return self._described

    def _describe(self) -> list[dict[str, Any]]:
        described = []
        for tool in self._tools.values():
            entry: dict[str, Any] = {
                "name": tool.name,
                "description": tool.description,
                "inputSchema": deepcopy(tool.parameters),
                "annotations": {
                    **deepcopy(dict(tool.annotations)),
                    "readOnlyHint": tool.read_only,
                    "destructiveHint": tool.destructive,
                },
            }
            if tool.title is not None:
                entry["title"] = tool.title
                entry["annotations"]["title"] = tool.title
            described.append(entry)
        return described
