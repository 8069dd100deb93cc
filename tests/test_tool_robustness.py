"""What the environment refuses fails one tool call, never the ask.

The real server process, over stdio, with real refusals: folders it may not read
(as root, the server is started without the capabilities that bypass permission
bits, so mode 000 applies to it as to any user), a file whose read fails with EIO
(``/proc/PID/mem`` of the server itself, bind-mounted into the workspace in a private
mount namespace), and a ``git`` on PATH that never answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.lsp_client import SERVER_COMMAND, AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call

IS_ROOT = os.geteuid() == 0
# Capabilities that let root ignore permission bits; the server runs without them.
DAC_CAPS = "-dac_override,-dac_read_search"

pytestmark = pytest.mark.skipif(
    IS_ROOT and not (shutil.which("setpriv") and shutil.which("unshare")),
    reason="as root, needs setpriv and unshare (util-linux) to run the server unprivileged",
)


def unprivileged(command: list[str], eio_file: Path) -> list[str]:
    """``command`` as root without the DAC capabilities, with ``eio_file`` bound to the
    server's own ``/proc/PID/mem`` (reading offset 0 of it fails with EIO)."""
    if not IS_ROOT:
        return command
    script = (
        'mount --bind "/proc/$$/mem" "$0" && '
        f'exec setpriv --bounding-set={DAC_CAPS} --inh-caps=-all -- "$@"'
    )
    namespace = ["unshare", "--mount", "--propagation", "private"]
    return [*namespace, "sh", "-c", script, str(eio_file), *command]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    for name in ("ok.py", "open/x.py", "locked/secret.txt", "locked/inner/y.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    (root / "mem.txt").write_text("")
    (root / ".git").mkdir()  # a work tree, so glob asks git first
    (root / "locked").chmod(0)
    yield root
    (root / "locked").chmod(0o755)
    tmp_path.chmod(0o755)


@pytest.fixture
def hanging_git(tmp_path: Path) -> Path:
    fake = tmp_path / "bin"
    fake.mkdir()
    sleeper = f"{sys.executable} -c 'import time; time.sleep(600)'"
    (fake / "git").write_text(f"#!/bin/sh\nexec {sleeper}\n")
    (fake / "git").chmod(0o755)
    return fake


@pytest.fixture
def server_tmp() -> Iterator[Path]:
    """The server's temp dir, apart from the tests' (a git in a temp dir is never chosen;
    the hanging one must be) and outside the folder the tests make unreadable."""
    folder = Path(tempfile.mkdtemp(prefix="agent-lsp-server-tmp-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def client(
    model: ScriptedModel, workspace: Path, hanging_git: Path, server_tmp: Path
) -> AsyncIterator[AgentTestClient]:
    env = server_env(
        model.base_url,
        PATH=f"{hanging_git}{os.pathsep}{os.environ['PATH']}",
        TMPDIR=str(server_tmp),
    )
    async with agent_session(
        env, [workspace], command=unprivileged(SERVER_COMMAND, workspace / "mem.txt")
    ) as client:
        yield client


def outputs(result: dict[str, object]) -> dict[str, tuple[bool, str]]:
    calls = result["toolCalls"]
    assert isinstance(calls, list)
    return {call["id"]: (call["ok"], call["output"]) for call in calls}


async def test_unreadable_folders_eio_and_a_hanging_git_fail_only_their_calls(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    calls = {
        "walk": tool_call("glob", {"pattern": "**/*.py"}, id="walk"),
        "glob_in": tool_call("glob", {"pattern": "*", "path": "locked/inner"}, id="glob_in"),
        "read": tool_call("read_file", {"path": "locked/secret.txt"}, id="read"),
        "write": tool_call("write_file", {"path": "locked/new.txt", "content": "x"}, id="write"),
        "edit": tool_call(
            "edit_file",
            {"path": "locked/secret.txt", "old_text": "#", "new_text": "//"},
            id="edit",
        ),
        "bash": tool_call("bash", {"command": "echo still working"}, id="bash"),
    }
    if IS_ROOT:
        calls["eio"] = tool_call("read_file", {"path": "mem.txt"}, id="eio")
    model.reply(tool_calls=list(calls.values()))
    model.reply("done despite the refusals")
    result = await ask(client, prompt="look around")
    assert result["answer"] == "done despite the refusals"
    out = outputs(result)

    ok, text = out["walk"]  # git never answered: the walk ran, and skipped what it cannot read
    assert ok, text
    lines = text.splitlines()
    assert lines[:2] == ["ok.py", "open/x.py"]
    assert "could not be read" in lines[-1] and "locked" in lines[-1]
    for name in ("glob_in", "read", "write", "edit"):
        ok, text = out[name]
        assert not ok and text.startswith("Error:") and "permission denied" in text, (name, text)
    assert out["bash"] == (True, "still working\n")
    if IS_ROOT:
        ok, text = out["eio"]
        assert not ok and text.startswith("Error:") and "Input/output error" in text, text


async def test_a_workspace_that_becomes_unreadable_fails_each_call_not_the_ask(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "ok.py"})])
    model.reply("read")
    first = await ask(client, prompt="read")
    assert first["toolCalls"][0]["ok"]

    workspace.parent.chmod(0)  # the folder holding the workspace: nothing inside is reachable
    model.reply(
        tool_calls=[
            tool_call("bash", {"command": "echo hi"}, id="bash"),
            tool_call("glob", {"pattern": "*.py"}, id="glob"),
            tool_call("read_file", {"path": "ok.py"}, id="read"),
            tool_call("write_file", {"path": "ok.py", "content": "x"}, id="write"),
        ]
    )
    model.reply("the workspace is gone, and I can say so")
    second = await ask(client, prompt="again", sessionId=first["sessionId"])
    workspace.parent.chmod(0o755)
    assert second["answer"] == "the workspace is gone, and I can say so"
    for name, (ok, text) in outputs(second).items():
        assert not ok and text.startswith("Error:") and "ermission denied" in text, (name, text)
    assert (workspace / "ok.py").read_text() == "# ok.py\n"


@pytest.fixture
def repository(workspace: Path) -> Path:
    (workspace / ".git").rmdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_git_names_the_folders_it_could_not_read(
    model: ScriptedModel, repository: Path
) -> None:
    workspace = repository
    async with agent_session(
        server_env(model.base_url),
        [workspace],
        command=unprivileged(SERVER_COMMAND, workspace / "mem.txt"),
    ) as client:
        model.reply(
            tool_calls=[
                tool_call("glob", {"pattern": "**/*.py"}, id="top"),
                tool_call("glob", {"pattern": "**/*", "path": "open"}, id="below"),
                tool_call("glob", {"pattern": "*", "path": "locked"}, id="inside"),
            ]
        )
        model.reply("listed")
        result = await ask(client, prompt="list")
    out = outputs(result)
    ok, text = out["top"]
    assert ok and text.splitlines() == [
        "ok.py",
        "open/x.py",
        "[1 folder could not be read and was skipped: locked (permission denied)]",
    ]
    assert out["below"] == (True, "open/x.py")
    ok, text = out["inside"]
    assert not ok and text == "Error: permission denied: cannot list locked"
