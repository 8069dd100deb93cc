"""The user's configuration file: ``$XDG_CONFIG_HOME/agent-lsp/config.toml``.

Else ``~/.config/agent-lsp/config.toml``. The format::

    # the endpoint agent-lsp uses when no endpoint is selected
    api_key = "sk-..."
    base_url = "https://api.openai.com/v1"
    model = "gpt-4o-mini"

    # optional named endpoints; one is used as a whole when selected
    default_endpoint = "deepseek"

    [endpoints.deepseek]
    api_key = "sk-..."
    base_url = "https://api.deepseek.com/v1"
    model = "deepseek-chat"

An endpoint is selected by ``AGENT_LSP_ENDPOINT`` in the environment, else by
``default_endpoint``. A selected endpoint's values replace the top-level ones
as a whole, so a key is never paired with another endpoint's URL.

Reading is strict about what we understand (a key that is not a string, a
selected endpoint that does not exist: :class:`UserConfigError`, one line) and
lenient about what we do not (unknown keys are ignored, for newer versions).
Writing (``agent-lsp config set-key`` / ``set``) replaces the one line holding the
key and keeps every other line, comments included; the file is written
atomically with mode 0600 in a folder created 0700.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tooling.regular_files import read_text_file

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a FIFO or a huge file is refused, never read without end

log = logging.getLogger(__name__)

FILE_NAME: Final = "config.toml"
ENDPOINT_VARIABLE: Final = "AGENT_LSP_ENDPOINT"
VALUE_KEYS: Final = ("api_key", "base_url", "model")
# mcp_servers: the MCP server definitions, read by mcp_config.
_TOP_LEVEL_KEYS: Final = {
    *VALUE_KEYS,
    "default_endpoint",
    "endpoints",
    "mcp_servers",
    "language_servers",
}

# Paths whose permissions were reported in this process: the warning is said once.
_warned: set[Path] = set()
# path -> (modification time, size, inode) and the content parsed then.
_parsed: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}
_SETTLED_NS: Final = 2_000_000_000


class UserConfigError(Exception):
    """The file cannot be read or written as asked; the message says what and where."""


@dataclass(frozen=True)
class UserConfig:
    """The values the file gives, for the selected endpoint (or the top level)."""

    path: Path
    exists: bool = False
    endpoint: str | None = None
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    model: str | None = None
    endpoints: tuple[str, ...] = ()

    def value(self, key: str) -> str | None:
        return {"api_key": self.api_key, "base_url": self.base_url, "model": self.model}[key]

    @property
    def label(self) -> str:
        """Where a value came from, as the user would name it."""
        where = display_path(self.path)
        return f"{where} [endpoints.{self.endpoint}]" if self.endpoint else where


def config_path(environ: Mapping[str, str]) -> Path | None:
    """The file's location for this environment; None when it names no home at all.

    Only ``environ`` is consulted (tests pass their own; the server passes
    ``os.environ``). A relative ``XDG_CONFIG_HOME`` is ignored, as the XDG spec says.
    """
    xdg = environ.get("XDG_CONFIG_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "agent-lsp" / FILE_NAME
    home = environ.get("HOME", "").strip()
    if home:
        return Path(home) / ".config" / "agent-lsp" / FILE_NAME
    return None


def display_path(path: Path) -> str:
    """``path`` with the home folder shown as ``~`` when it is under it."""
    home = os.environ.get("HOME", "").rstrip("/")
    text = str(path)
    if home and text.startswith(home + "/"):
        return "~" + text[len(home) :]
    return text


def read_user_config(path: Path, *, endpoint: str | None = None) -> UserConfig:
    """The file's values; an absent file gives none. ``endpoint`` overrides the default.

    Read on every ask, so an edit applies at once; the parsed content is kept while the
    file's modification time, size and inode stay the same (a stat, not a parse).
    """
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return UserConfig(path=path)
    except OSError as exc:
        raise UserConfigError(f"cannot read {path}: {_reason(exc)}") from None
    signature = (info.st_mtime_ns, info.st_size, info.st_ino)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == signature:
        data = cached[1]
    else:
        data = _load(path)
        # A file changed within the file system's timestamp granularity could change
        # again with the same signature ("racy git"): keep only settled content.
        if time.time_ns() - info.st_mtime_ns > _SETTLED_NS:
            _parsed[path] = (signature, data)
    if warning := permission_warning(path, data):
        log.warning("%s", warning)
    return _parse(path, data, endpoint)


def permission_warning(path: Path, data: Mapping[str, Any] | None = None) -> str | None:
    """A warning, the first time in this process, when a file holding a key is not private.

    ``data`` is the file's parsed content when the caller has it.
    """
    if path in _warned:
        return None
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if not mode & 0o077:
        return None
    if data is None:
        try:
            data = tomllib.loads(read_text_file(path, MAX_CONFIG_BYTES))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None
    if not _holds_key(data):
        return None
    _warned.add(path)
    return (
        f"{path} holds an API key and other users can read or change it "
        f"(mode {stat.S_IMODE(mode):04o}): run chmod 600 {path}"
    )


def set_value(path: Path, key: str, value: str, *, endpoint: str | None = None) -> Path:
    """Write ``key = value`` at the top level or in ``[endpoints.<endpoint>]``.

    The line holding the key is replaced (or one is added at the end of its
    table); every other line stays as it was. The result is checked by reading it
    back. Returns the file written (a symlink's target).
    """
    if key not in VALUE_KEYS:
        raise UserConfigError(f"unknown key {key!r}: one of {', '.join(VALUE_KEYS)}")
    if endpoint is not None and not is_bare_key(endpoint):
        raise UserConfigError(f"endpoint name {endpoint!r}: use letters, digits, '-' and '_' only")
    target, old, _ = read_for_edit(path)
    new = _with_value(old, key, value, endpoint)
    try:
        written = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        written = None
    table = written if endpoint is None else (written or {}).get("endpoints", {}).get(endpoint)
    if not isinstance(table, dict) or table.get(key) != value:
        raise UserConfigError(
            f"could not update {key} in {target} safely (it is written in a form this "
            f"command does not edit); change it by hand"
        )
    write_private(target, new)
    return target


def read_for_edit(path: Path) -> tuple[Path, str, dict[str, Any]]:
    """The file a command edits (a symlink's target), its text ("" when absent) and its
    parsed content; a file that is not valid TOML is left for the user to fix first."""
    target = path.resolve() if path.is_symlink() else path
    try:
        old = read_text_file(target, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise UserConfigError(f"cannot read {target}: {_reason(exc)}") from None
    try:
        return target, old, tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise UserConfigError(f"{target} is not valid TOML ({exc}); fix it first") from None


# --- reading --------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(read_text_file(path, MAX_CONFIG_BYTES))
    except FileNotFoundError:
        return {}  # removed since the stat
    except tomllib.TOMLDecodeError as exc:
        raise UserConfigError(f"{path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserConfigError(f"cannot read {path}: {_reason(exc)}") from None
    unknown = sorted(set(data) - _TOP_LEVEL_KEYS)
    if unknown:
        log.warning("%s: ignoring unknown key(s) %s", path, ", ".join(unknown))
    return data


def _parse(path: Path, data: dict[str, Any], override: str | None) -> UserConfig:
    raw_endpoints = data.get("endpoints", {})
    if not isinstance(raw_endpoints, dict) or not all(
        isinstance(table, dict) for table in raw_endpoints.values()
    ):
        raise UserConfigError(f"{path}: endpoints must be tables, e.g. [endpoints.deepseek]")
    default = data.get("default_endpoint")
    if default is not None and not isinstance(default, str):
        raise UserConfigError(f"{path}: default_endpoint must be a string (an endpoint's name)")

    selected = (override or "").strip() or (default or "").strip() or None
    if selected is not None:
        table = raw_endpoints.get(selected)
        if table is None:
            known = ", ".join(sorted(raw_endpoints)) or "none is defined"
            how = (
                f"{ENDPOINT_VARIABLE}={selected}"
                if override
                else f'default_endpoint = "{selected}"'
            )
            raise UserConfigError(
                f"{path}: {how} names no endpoint [endpoints.{selected}] (known: {known})"
            )
        where = f"{path} [endpoints.{selected}]"
    else:
        table, where = data, str(path)

    values = {key: _string(table, key, where) for key in VALUE_KEYS}
    return UserConfig(
        path=path,
        exists=True,
        endpoint=selected,
        endpoints=tuple(sorted(raw_endpoints)),
        **values,
    )


def _string(table: Mapping[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise UserConfigError(f"{where}: {key} must be a string in quotes")
    return value.strip() or None


def _holds_key(data: Mapping[str, Any]) -> bool:
    endpoints = data.get("endpoints")
    if not isinstance(endpoints, dict):
        endpoints = {}
    tables = [data, *(t for t in endpoints.values() if isinstance(t, Mapping))]
    return any(isinstance(t.get("api_key"), str) and t["api_key"].strip() for t in tables)


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


# --- writing --------------------------------------------------------------------------


def _with_value(text: str, key: str, value: str, endpoint: str | None) -> str:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    assignment = f"{key} = {toml_string(value)}\n"
    header = None if endpoint is None else f"endpoints.{endpoint}"

    start, end = _table_span(lines, header)
    if start is None:  # the table does not exist yet: append it
        if lines and lines[-1].strip():
            lines.append("\n")
        lines += [f"[{header}]\n", assignment]
        return "".join(lines)
    for index in range(start, end):
        if _assigns(lines[index], key):
            lines[index] = assignment
            return "".join(lines)
    # Add it after the table's last assignment, before trailing blanks and the
    # comments that introduce the next table.
    insert = end
    while insert > start and (not lines[insert - 1].strip() or is_comment(lines[insert - 1])):
        insert -= 1
    lines.insert(insert, assignment)
    return "".join(lines)


def _table_span(lines: list[str], header: str | None) -> tuple[int | None, int]:
    """Line range ``[start, end)`` of a table's body (``header=None``: the top level)."""
    start: int | None = 0 if header is None else None
    for index, line in enumerate(lines):
        name = header_name(line)
        if name is None:
            continue
        if start is not None:
            return start, index
        if name == header:
            start = index + 1
    return start, len(lines)


def header_name(line: str) -> str | None:
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    inner = stripped.split("#", 1)[0].strip()
    inner = inner.strip("[]").strip()
    return ".".join(part.strip().strip('"') for part in inner.split("."))


def _assigns(line: str, key: str) -> bool:
    name, sep, _ = line.partition("=")
    return bool(sep) and name.strip().strip('"') == key


def is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def is_bare_key(name: str) -> bool:
    """A TOML bare key: ASCII letters, digits, '-' and '_' (what an endpoint or an MCP
    server may be named, so its table header needs no quoting)."""
    return bool(name) and all(c.isascii() and (c.isalnum() or c in "-_") for c in name)


def toml_string(value: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n"}
    escaped |= {"\f": "\\f", "\r": "\\r"}
    out = []
    for char in value:
        if char in escaped:
            out.append(escaped[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600, creating its folder 0700."""
    folder = path.parent
    try:
        if not folder.is_dir():
            folder.parent.mkdir(parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
        # mkstemp creates the file 0600 and never follows or reuses an existing name.
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
        temp = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        _fsync_folder(folder)
    except OSError as exc:
        raise UserConfigError(f"cannot write {path}: {_reason(exc)}") from None


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
