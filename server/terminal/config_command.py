"""``agent-lsp config``: show, set and check the model configuration from a terminal.

``show`` prints each value with its source (the key masked), ``set-key`` reads the
key without echo (or from stdin when it is not a terminal) into the user file,
``set base_url|model VALUE`` writes one value, ``check`` runs the connection check
the editors run, ``models`` lists what the endpoint serves. Problems are one line
on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from ..config.own_secrets import ancestors_holding
from ..config.sources import DEFAULT_MODEL, ModelSources, resolve_model_sources
from ..config.user_config import (
    VALUE_KEYS,
    UserConfigError,
    config_path,
    display_path,
    permission_warning,
    set_value,
)

SETTABLE = ("base_url", "model")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "config",
        help="show or change the model configuration (the user configuration file)",
        description=(
            "The key, endpoint and model agent-lsp uses, from the user configuration file "
            "($XDG_CONFIG_HOME/agent-lsp/config.toml, else ~/.config/agent-lsp/config.toml)."
        ),
    )
    actions = config.add_subparsers(dest="config_command", metavar="ACTION")
    actions.add_parser("show", help="the effective configuration and where each value comes from")
    set_key = actions.add_parser(
        "set-key",
        help="store the API key in the user file (read without echo, or from stdin)",
    )
    set_key.add_argument("--endpoint", help="in [endpoints.NAME] instead of the top level")
    set_one = actions.add_parser("set", help="store base_url or model in the user file")
    set_one.add_argument("key", choices=SETTABLE)
    set_one.add_argument("value")
    set_one.add_argument("--endpoint", help="in [endpoints.NAME] instead of the top level")
    actions.add_parser("check", help="try the endpoint: list models, make one tiny request")
    actions.add_parser("models", help="list the models the endpoint serves")


def run_config(
    args: argparse.Namespace,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    # Here, not at the top: ``agent-lsp``'s parser (built by every start of the server)
    # imports this module for add_parser, and the model code imports the protocol's classes.
    from ..model.endpoint import ModelNotConfiguredError, ModelRequestError

    env = os.environ if environ is None else environ
    out, err = out or sys.stdout, err or sys.stderr
    action = args.config_command or "show"
    try:
        if action == "show":
            return _show(env, out, err)
        if action == "set-key":
            return _set_key(env, args.endpoint, stdin or sys.stdin, out, err)
        if action == "set":
            return _set(env, args.key, args.value, args.endpoint, out, err)
        if action == "check":
            return _check(env, out)
        if action == "models":
            return _models(env, out)
    except (UserConfigError, ModelNotConfiguredError, ModelRequestError) as exc:
        print(f"agent-lsp config {action}: {exc}", file=err)
        return 1
    except KeyboardInterrupt:
        print(f"agent-lsp config {action}: interrupted", file=err)
        return 130
    raise AssertionError(f"unhandled config action {action!r}")


def mask_key(key: str) -> str:
    """Enough to tell two keys apart, not enough to use one."""
    if len(key) >= 16:
        return f"…{key[-4:]} ({len(key)} characters)"
    return f"set ({len(key)} characters)"


# --- actions -------------------------------------------------------------------------


def _show(env: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    path = config_path(env)
    if path is None:
        print("User configuration file: none (neither XDG_CONFIG_HOME nor HOME is set)", file=out)
    else:
        print(f"User configuration file: {display_path(path)} ({_file_state(path)})", file=out)
        if warning := permission_warning(path):
            print(f"agent-lsp: warning: {warning}", file=err)
    sources = resolve_model_sources({}, environ=env)
    user = sources.user_config
    if user is not None and user.endpoints:
        chosen = f"; using {user.endpoint}" if user.endpoint else "; using the top level"
        print(f"  endpoints: {', '.join(user.endpoints)}{chosen}", file=out)
    rows = [(key, *_describe(key, sources)) for key in VALUE_KEYS]
    width = max(len(value) for _, value, _ in rows)
    for key, value, source in rows:
        print(f"{key:<9} {value:<{width}}  {source}", file=out)
    print(
        "Highest first: editor settings (agentLsp.baseUrl, agentLsp.model; never the key), "
        "the environment, the user file, agent-lsp's .env"
        + (f" ({sources.env_file})" if sources.env_file else "")
        + ".",
        file=out,
    )
    return 0


def _set_key(
    env: Mapping[str, str], endpoint: str | None, stdin: TextIO, out: TextIO, err: TextIO
) -> int:
    path = _require_path(env)
    if stdin.isatty():
        key = getpass.getpass("API key (not shown as you type): ")
    else:
        key = stdin.readline()
    key = key.strip()
    if not key:
        print("agent-lsp config set-key: no key given; nothing written", file=err)
        return 1
    if any(char.isspace() for char in key):
        print("agent-lsp config set-key: an API key has no spaces; nothing written", file=err)
        return 1
    written = set_value(path, "api_key", key, endpoint=endpoint)
    where = f" [endpoints.{endpoint}]" if endpoint else ""
    saved = f"Saved the API key {mask_key(key)} to {display_path(written)}{where} (mode 0600)."
    print(saved, file=out)
    _note_precedence("api_key", env, out)
    return 0


def _set(
    env: Mapping[str, str],
    key: str,
    value: str,
    endpoint: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    value = value.strip()
    if not value:
        print(f"agent-lsp config set: {key} must not be empty", file=err)
        return 1
    if key == "base_url" and not value.startswith(("http://", "https://")):
        print(
            f"agent-lsp config set: base_url must start with http:// or https://, got {value!r}",
            file=err,
        )
        return 1
    written = set_value(_require_path(env), key, value, endpoint=endpoint)
    where = f" [endpoints.{endpoint}]" if endpoint else ""
    print(f"Saved {key} = {value} to {display_path(written)}{where}.", file=out)
    _note_precedence(key, env, out)
    return 0


def _check(env: Mapping[str, str], out: TextIO) -> int:
    from ..model.connection_check import check_connection

    report = asyncio.run(check_connection({}, environ=env))
    for check in report.checks:
        print(f"{'✓' if check.ok else '✗'} {check.name}: {check.message}", file=out)
    print("The endpoint works." if report.ok else "The endpoint does not work yet.", file=out)
    print(sandbox_line(), file=out)
    return 0 if report.ok else 1


def sandbox_line() -> str:
    """The bash sandbox this machine gives, in one line (its layers, or what it lacks)."""
    from tools import sandbox

    state = sandbox.support()
    if not state.available:
        return f"✗ sandbox: none ({state.reason()}); every bash call asks first"
    layers = []
    if state.namespaces is not None:
        layers.append(f"namespaces ({state.namespaces.bwrap})")
    if state.abi:
        layers.append(f"Landlock ABI {state.abi}")
    if state.seccomp:
        layers.append("seccomp")
    lost = sandbox.weakened(state)
    line = f"{'!' if lost else '✓'} sandbox: {', '.join(layers)}, resource limits"
    if state.namespace_problem:
        line += f" ({state.namespace_problem})"
    line += "".join(f"\n  weaker: {what}" for what in lost)
    if state.namespaces is None:  # no PID namespace: a command sees every process's /proc
        line += "".join(
            f"\n! the API key is in the environment of {comm} (pid {pid}), an ancestor of "
            f"this process: a sandboxed command can read it here (/proc/{pid}/environ). "
            "Keep the key in the user configuration file (agent-lsp config set-key) and "
            "start the editor from an environment without it."
            for pid, comm in ancestors_holding()
        )
    return line


def _models(env: Mapping[str, str], out: TextIO) -> int:
    from ..model.connection_check import list_model_ids
    from ..model.endpoint import create_client, load_model_settings

    settings = load_model_settings({}, environ=env)

    async def listing() -> list[str]:
        client = create_client(settings)
        try:
            return await list_model_ids(client)
        finally:
            await client.close()

    for name in asyncio.run(listing()):
        print(f"{'*' if name == settings.model else ' '} {name}", file=out)
    return 0


# --- helpers -------------------------------------------------------------------------


def _describe(key: str, sources: ModelSources) -> tuple[str, str]:
    found = sources.get(key)
    if found is None:
        if key == "model":
            return DEFAULT_MODEL, "default"
        how = (
            "agent-lsp config set-key" if key == "api_key" else "agent-lsp config set base_url URL"
        )
        return "not set", f"set it with: {how}"
    value = mask_key(found.value) if key == "api_key" else found.value
    return value, f"from {found.source}"


def _file_state(path: Path) -> str:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not created yet; agent-lsp config set-key creates it"
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    return f"mode {stat.S_IMODE(mode):04o}"


def _require_path(env: Mapping[str, str]) -> Path:
    path = config_path(env)
    if path is None:
        raise UserConfigError("neither XDG_CONFIG_HOME nor HOME is set: no place for the file")
    return path


def _note_precedence(key: str, env: Mapping[str, str], out: TextIO) -> None:
    """Say so when a higher source still decides the value."""
    found = resolve_model_sources({}, environ=env).get(key)
    user = config_path(env)
    if found is not None and user is not None and not found.source.startswith(display_path(user)):
        print(f"Note: {key} still comes from {found.source}, which takes precedence.", file=out)
