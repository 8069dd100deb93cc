"""MCP server definitions: from the user file, the editor setting and a workspace folder's files.

Three sources, merged in this order:

- the user file (``config.toml``, :mod:`.user_config`)::

      [mcp_servers.time]
      command = "uvx"
      args = ["mcp-server-time"]
      env = { TZ = "Europe/Paris" }

      [mcp_servers.tracker]
      url = "https://tracker.example.com/mcp"
      headers = { Authorization = "Bearer ${TRACKER_TOKEN}" }
      trust = true

- the editor setting ``agentLsp.mcpServers``, in the shape of ``.vscode/mcp.json``'s
  ``servers`` object (``{"NAME": {"type": "stdio", "command": ...}}``); same name as a user
  server: the editor's wins;
- a workspace folder's ``.vscode/mcp.json`` (``servers``) and ``.mcp.json`` (``mcpServers``, as
  Claude Code writes it). A cloned repository can name any command there, so these are untrusted
  data: parsed, never trusted (``trust`` is always False), never run here, and never allowed to
  replace a user or editor server of the same name. Starting one needs the user's approval of
  that exact definition (:mod:`.mcp_approvals`).

One bad server never stops the others: each problem is a warning naming the server and the field,
and a server with a bad value is not started (its entry has no spec), since guessing what the user
meant could run something else. Unknown keys are ignored with a warning, for newer versions.

``${VAR}`` (or ``mcp.json``'s ``${env:VAR}``) in ``args``, ``url``, ``env`` values and ``headers``
values is replaced from the environment given; ``$$`` is a literal ``$``. An unset variable keeps
that server from starting. A workspace definition may not reference the environment (it would
let a repository send the user's secrets to a server of its choosing); it may use
``${workspaceFolder}``, its folder.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from tooling.regular_files import read_text_file
from tools.mcp.spec import (
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    McpServerSpec,
    Transport,
)

from ..config.untrusted_files import read_untrusted, strip_jsonc
from ..config.user_config import MAX_CONFIG_BYTES as MAX_USER_FILE
from ..config.user_config import display_path, is_bare_key

TABLE: Final = "mcp_servers"
EDITOR_SETTING: Final = "agentLsp.mcpServers"
# A folder's own definition files and the key their servers sit under, in precedence order.
WORKSPACE_FILES: Final = ((".vscode/mcp.json", "servers"), (".mcp.json", "mcpServers"))
# A definitions file is a few kilobytes; a bigger one is not read (it is untrusted input).
MAX_WORKSPACE_FILE: Final = 1 << 20
MAX_TIMEOUT: Final = 86_400.0

ORIGIN_USER: Final = "user"
ORIGIN_EDITOR: Final = "editor"
ORIGIN_WORKSPACE: Final = "workspace"

_VARIABLE = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)")
_REFERENCE = re.compile(r"\$(\$|\{([^{}]*)\})")
_COMMON_KEYS: Final = frozenset(
    {"enabled", "startup_timeout", "tool_timeout", "enabled_tools", "disabled_tools", "trust"}
)
_STDIO_KEYS: Final = frozenset({"command", "args", "env", "cwd"})
_HTTP_KEYS: Final = frozenset({"url", "headers"})


@dataclass(frozen=True)
class McpServerEntry:
    """One defined server: its spec when it can be started, else only what the warnings say."""

    name: str
    origin: str
    # Where it is defined, as messages name it: "~/.config/agent-lsp/config.toml [mcp_servers.x]".
    where: str
    spec: McpServerSpec | None
    warnings: tuple[str, ...] = ()
    # As written (variables not replaced, so no secret is shown): for listings.
    transport: str | None = None
    target: str = ""

    @property
    def enabled(self) -> bool:
        return self.spec.enabled if self.spec is not None else False


@dataclass(frozen=True)
class McpDefinitions:
    entries: tuple[McpServerEntry, ...] = ()
    # Problems that belong to no one server: an unreadable file, a shadowed workspace server.
    warnings: tuple[str, ...] = ()

    def specs(self) -> tuple[McpServerSpec, ...]:
        """The servers that can be started (workspace ones still need an approval)."""
        return tuple(entry.spec for entry in self.entries if entry.spec is not None)

    def get(self, name: str) -> McpServerEntry | None:
        return next((entry for entry in self.entries if entry.name == name), None)

    def all_warnings(self) -> tuple[str, ...]:
        """Every warning as one line that names its server: for a log or ``showMessage``."""
        own = (f"{entry.where}: {text}" for entry in self.entries for text in entry.warnings)
        return (*self.warnings, *own)


# --- the sources ----------------------------------------------------------------------


def parse_user_file(path: Path | None, environ: Mapping[str, str]) -> McpDefinitions:
    """The ``[mcp_servers.NAME]`` tables of the user file; an absent file defines none."""
    if path is None:
        return McpDefinitions()
    try:
        data = tomllib.loads(read_text_file(path, MAX_USER_FILE))
    except (FileNotFoundError, NotADirectoryError):
        return McpDefinitions()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return McpDefinitions(warnings=(f"{display_path(path)}: no MCP servers read: {exc}",))
    return parse_user_table(data.get(TABLE), display_path(path), environ)


def parse_user_table(raw: Any, where: str, environ: Mapping[str, str]) -> McpDefinitions:
    """``data["mcp_servers"]`` of a parsed user file (``where`` names the file)."""
    if raw is None:
        return McpDefinitions()
    if not isinstance(raw, dict):
        return McpDefinitions(warnings=(f"{where}: {TABLE} must be tables [{TABLE}.NAME]",))
    return _parse_servers(
        raw, ORIGIN_USER, lambda name: f"{where} [{TABLE}.{name}]", _from_environ(environ)
    )


def parse_editor_setting(raw: Any, environ: Mapping[str, str]) -> McpDefinitions:
    """The editor's ``mcpServers`` setting (``.vscode/mcp.json``'s ``servers`` shape)."""
    if raw is None:
        return McpDefinitions()
    if not isinstance(raw, dict):
        return McpDefinitions(warnings=(f"{EDITOR_SETTING} must be an object of servers",))
    return _parse_servers(
        raw, ORIGIN_EDITOR, lambda name: f"{EDITOR_SETTING}.{name}", _from_environ(environ)
    )


def parse_workspace_folder(folder: Path) -> McpDefinitions:
    """A folder's ``.vscode/mcp.json`` and ``.mcp.json``: untrusted, parsed and nothing more."""
    found: list[McpDefinitions] = []
    for relative, key in WORKSPACE_FILES:
        path = folder / relative
        text, problem = read_untrusted(path, MAX_WORKSPACE_FILE)
        if problem:
            found.append(McpDefinitions(warnings=(f"{path}: ignored: {problem}",)))
        if text is None:
            continue
        try:
            data = json.loads(strip_jsonc(text))
        except ValueError as exc:
            found.append(McpDefinitions(warnings=(f"{path}: ignored: not valid JSON ({exc})",)))
            continue
        servers = data.get(key) if isinstance(data, dict) else None
        if servers is None:
            continue
        if not isinstance(servers, dict):
            found.append(McpDefinitions(warnings=(f"{path}: ignored: {key} must be an object",)))
            continue
        found.append(
            _parse_servers(
                servers,
                ORIGIN_WORKSPACE,
                functools.partial("{} {}.{}".format, path, key),  # "PATH KEY.NAME"
                _from_workspace(folder),
                base=folder,
            )
        )
    # Two files of one folder naming one server: the first file's (``.vscode/mcp.json``) is kept.
    return merge_definitions(*found)


def merge_definitions(*sources: McpDefinitions) -> McpDefinitions:
    """Sources in order (user, editor, workspace): the later editor wins a name, a workspace
    server never replaces another (it is dropped, with a warning)."""
    merged: dict[str, McpServerEntry] = {}
    warnings: list[str] = []
    for source in sources:
        warnings += source.warnings
        for entry in source.entries:
            earlier = merged.get(entry.name)
            if earlier is None:
                merged[entry.name] = entry
            elif entry.origin == ORIGIN_WORKSPACE:
                why = f"a server of that name is defined in {earlier.where}"
                warnings.append(f"{entry.where}: ignored: {why}")
            else:
                note = f"replaces the server of the same name in {earlier.where}"
                merged[entry.name] = replace(entry, warnings=(*entry.warnings, note))
    return McpDefinitions(entries=tuple(merged.values()), warnings=tuple(warnings))


def load_definitions(
    *,
    user_file: Path | None,
    editor_setting: Any,
    folder: Path | None,
    environ: Mapping[str, str],
) -> McpDefinitions:
    """Every server one folder may use: the user file, the editor setting, the folder's files."""
    workspace = parse_workspace_folder(folder) if folder is not None else McpDefinitions()
    return merge_definitions(
        parse_user_file(user_file, environ),
        parse_editor_setting(editor_setting, environ),
        workspace,
    )


# --- one server ------------------------------------------------------------------------

# Looks a reference up: its value, or None when it cannot be replaced (the reason appended).
Lookup = Callable[[str, list[str]], str | None]


def _parse_servers(
    raw: Mapping[Any, Any],
    origin: str,
    where: Callable[[str], str],
    lookup: Lookup,
    base: Path | None = None,
) -> McpDefinitions:
    """``base``: the folder a relative ``cwd`` is in (a workspace's); else it must be absolute."""
    entries, warnings = [], []
    for name, definition in raw.items():
        if not isinstance(name, str) or not is_bare_key(name):
            warnings.append(
                f"{where(str(name))}: ignored: a server name is letters, digits, '-' and '_'"
            )
            continue
        entries.append(_parse_server(name, definition, origin, where(name), lookup, base))
    return McpDefinitions(entries=tuple(entries), warnings=tuple(warnings))


def _parse_server(
    name: str, raw: Any, origin: str, where: str, lookup: Lookup, base: Path | None
) -> McpServerEntry:
    if not isinstance(raw, dict):
        shape = "a table" if origin == ORIGIN_USER else "an object"
        return McpServerEntry(name, origin, where, None, (f"must be {shape} of settings",))
    errors: list[str] = []
    notes: list[str] = []
    transport = _transport(raw, origin, errors)
    known = _COMMON_KEYS | _STDIO_KEYS | _HTTP_KEYS | ({"type"} if origin != ORIGIN_USER else set())
    for key in sorted(set(map(str, raw)) - known):
        notes.append(f"unknown setting {key!r} ignored")
    if transport is not None:
        wrong = _HTTP_KEYS if transport == "stdio" else _STDIO_KEYS
        for key in sorted(wrong & set(raw)):
            errors.append(f"{key} is for {'http' if transport == 'stdio' else 'stdio'} servers")

    fields = _Fields(raw, errors, lookup, base)
    values: dict[str, Any] = {
        "enabled": fields.boolean("enabled", True),
        "startup_timeout": fields.seconds("startup_timeout", DEFAULT_STARTUP_TIMEOUT),
        "tool_timeout": fields.seconds("tool_timeout", DEFAULT_TOOL_TIMEOUT),
        "enabled_tools": fields.strings("enabled_tools", expand=False),
        "disabled_tools": fields.strings("disabled_tools", expand=False) or (),
        "trust": fields.boolean("trust", False),
    }
    if origin == ORIGIN_WORKSPACE and values["trust"]:
        notes.append("trust is ignored in a workspace's definitions: its tools ask first")
        values["trust"] = False
    target = ""
    if transport == "stdio":
        command = fields.text("command", expand=False, required=True)
        args = fields.strings("args") or ()
        values |= {"command": command, "args": args, "env": fields.mapping("env")}
        values["cwd"] = fields.folder("cwd")
        target = _written_command_line(raw)
    elif transport == "http":
        url = fields.text("url", required=True)
        if url is not None and not url.startswith(("http://", "https://")):
            errors.append("url must start with http:// or https://")
        values |= {"url": url, "headers": fields.mapping("headers")}
        written = raw.get("url")
        target = written if isinstance(written, str) else ""

    spec = None
    if transport is not None and not errors:
        try:
            spec = McpServerSpec(name=name, transport=transport, origin=origin, **values)
        except ValueError as exc:  # what the spec itself refuses
            errors.append(str(exc))
    return McpServerEntry(name, origin, where, spec, (*errors, *notes), transport, target)


def _transport(raw: Mapping[str, Any], origin: str, errors: list[str]) -> Transport | None:
    declared = raw.get("type") if origin != ORIGIN_USER else None
    has_command, has_url = "command" in raw, "url" in raw
    if declared == "sse":
        errors.append('type "sse" (the old HTTP+SSE transport) is not supported: use "http"')
        return None
    if declared is not None and declared not in ("stdio", "http"):
        errors.append(f'type must be "stdio" or "http", not {declared!r}')
        return None
    if has_command and has_url:
        errors.append("give either command (a stdio server) or url (an http server), not both")
        return None
    transport: Transport | None = declared or (
        "stdio" if has_command else "http" if has_url else None
    )
    if transport is None:
        errors.append("needs a command (a stdio server) or a url (an http server)")
    return transport


class _Fields:
    """Reads one server's values; each bad one appends an error that names its field."""

    def __init__(
        self, raw: Mapping[str, Any], errors: list[str], lookup: Lookup, base: Path | None
    ) -> None:
        self.raw, self.errors, self.lookup, self.base = raw, errors, lookup, base

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if not isinstance(value, bool):
            self.errors.append(f"{key} must be true or false")
            return default
        return value

    def seconds(self, key: str, default: float) -> float:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.errors.append(f"{key} must be a number of seconds")
            return default
        if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
            self.errors.append(f"{key} must be more than 0 and at most {MAX_TIMEOUT:.0f} seconds")
            return default
        return float(value)

    def text(self, key: str, *, expand: bool = True, required: bool = False) -> str | None:
        value = self.raw.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.errors.append(f"{key} must be a non-empty string")
            return None
        return self._checked(key, value, expand)

    def strings(self, key: str, *, expand: bool = True) -> tuple[str, ...] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.errors.append(f"{key} must be a list of strings")
            return None
        checked = [self._checked(key, item, expand) for item in value]
        return tuple(item for item in checked if item is not None)

    def mapping(self, key: str) -> dict[str, str]:
        value = self.raw.get(key, {})
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            self.errors.append(f"{key} must map names to strings")
            return {}
        out = {}
        for name, text in value.items():
            if not name or "=" in name or "\0" in name:
                self.errors.append(f"{key}: {name!r} is not a valid name")
            elif (checked := self._checked(f"{key}.{name}", text, True)) is not None:
                out[name] = checked
        return out

    def folder(self, key: str) -> str | None:
        value = self.text(key)
        if value is None or os.path.isabs(value):
            return value
        if self.base is not None:
            return os.path.normpath(self.base / value)
        if value.startswith("~/"):
            return os.path.expanduser(value)
        self.errors.append(f"{key} must be an absolute path (or start with ~/)")
        return None

    def _checked(self, key: str, value: str, expand: bool) -> str | None:
        if "\0" in value:
            self.errors.append(f"{key} holds a NUL character")
            return None
        if not expand:
            return value
        problems: list[str] = []
        result = _expand(value, self.lookup, problems)
        self.errors += [f"{key}: {problem}" for problem in problems]
        return result


def _expand(text: str, lookup: Lookup, problems: list[str]) -> str | None:
    """``text`` with ``$$`` and ``${...}`` replaced; None (problems appended) when one cannot be."""
    failed = False

    def one(match: re.Match[str]) -> str:
        nonlocal failed
        if match[1] == "$":
            return "$"
        value = lookup(match[2], problems)
        if value is None:
            failed = True
            return ""
        return value

    result = _REFERENCE.sub(one, text)
    if "${" in _REFERENCE.sub("", text):
        problems.append("an unclosed ${ (write $$ for a literal $)")
        return None
    return None if failed else result


def _from_environ(environ: Mapping[str, str]) -> Lookup:
    def lookup(reference: str, problems: list[str]) -> str | None:
        match = _VARIABLE.fullmatch(reference)
        if match is None:
            problems.append(f"${{{reference}}} is not a variable reference (write $$ for a $)")
            return None
        value = environ.get(match[1])
        if value is None:
            problems.append(f"${{{reference}}} is not set in the environment: not started")
        return value

    return lookup


def _from_workspace(folder: Path) -> Lookup:
    def lookup(reference: str, problems: list[str]) -> str | None:
        if reference == "workspaceFolder":
            return str(folder)
        problems.append(
            f"${{{reference}}}: a workspace's definitions may not read the environment "
            "(define the server in your user file to use variables)"
        )
        return None

    return lookup


def _written_command_line(raw: Mapping[str, Any]) -> str:
    command, args = raw.get("command"), raw.get("args", [])
    words = [command] if isinstance(command, str) else []
    if isinstance(args, list):
        words += [arg for arg in args if isinstance(arg, str)]
    return shlex.join(words)
