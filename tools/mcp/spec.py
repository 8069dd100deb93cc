"""What one MCP server is, as the user (or a workspace) defined it: how to reach it and how
far to trust it. Parsed from the configuration file and the editor settings by
``server.mcp.config``; run by :mod:`tools.mcp.connection`."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["stdio", "http"]
TRANSPORTS: tuple[str, ...] = ("stdio", "http")
DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 120.0


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    transport: Transport
    # stdio: the program and its arguments (no shell), extra environment, working folder.
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    # http (Streamable HTTP): the endpoint and extra request headers.
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    # None: every tool the server lists; else only these (enabled) / all but these (disabled).
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    # True: its tools run without asking (the user vouches for the server).
    trust: bool = False
    # Where the definition came from: "user" (config file), "editor" (settings), "workspace".
    origin: str = "user"

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"MCP transport must be one of {', '.join(TRANSPORTS)}")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs a command")
        if self.transport == "http" and not self.url:
            raise ValueError("an http MCP server needs a url")

    def runs(self) -> dict[str, Any]:
        """What would run or be contacted: the part an approval is bound to."""
        if self.transport == "stdio":
            return {
                "transport": "stdio",
                "command": self.command,
                "args": list(self.args),
                "env": dict(sorted(self.env.items())),
                "cwd": self.cwd,
            }
        return {"transport": "http", "url": self.url, "headers": dict(sorted(self.headers.items()))}

    def digest(self) -> str:
        """sha256 of :meth:`runs` as canonical JSON: a changed definition has another digest."""
        canonical = json.dumps(self.runs(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def command_line(self) -> str:
        """What runs, on one line for the user, quoted as a shell would need it:
        ``env K=V COMMAND ARGS (in CWD)``, or the URL and its headers' names. Everything
        an approval is bound to that could change what runs is named (a repository's
        ``LD_PRELOAD`` as much as its command)."""
        if self.transport == "stdio":
            env = [f"{key}={value}" for key, value in sorted(self.env.items())]
            line = shlex.join([*(["env", *env] if env else []), self.command or "", *self.args])
            return f"{line} (in {shlex.quote(self.cwd)})" if self.cwd else line
        headers = ", ".join(sorted(self.headers))
        return f"{self.url or ''} (headers: {headers})" if headers else self.url or ""

    def allows(self, tool: str) -> bool:
        """Whether the server's tool ``tool`` is offered to the model."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools
