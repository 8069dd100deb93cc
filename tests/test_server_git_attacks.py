"""Issue 33, findings 1, 2, 6 and 8: the git the server runs itself obeys nothing the agent wrote.

Each test plants what the finding planted (by a tool call, or by the test where the way
it got there is not the point), then has the real server run its git (glob's listing,
the environment block's status, the checkpoints), and checks that the command the
planted configuration names never ran: it would touch a marker outside the workspace.
A git the server may not trust (in the workspace, on a ``PATH`` entry inside it) is never
chosen, and a git that never answers holds no ask. Every test here failed on the code
before (glob's ``git ls-files`` and the status ran unconfined, git came from ``PATH``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp_client import AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.test_permissions import permission_session
from tools import sandbox

REAL_GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(REAL_GIT is None, reason="git is not installed")
# Never chosen, never written to: a clean, isolated git for the test's own set-up.
GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(folder: Path, *args: str) -> str:
    assert REAL_GIT is not None
    done = subprocess.run(
        [REAL_GIT, "-C", str(folder), *args],
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where the planted command would write: outside the workspace (and outside what a
    sandboxed call may write)."""
    return tmp_path / "PWNED-MARKER"


def touch(marker: Path) -> str:
    return f"touch {marker}; false"


def planted_repository(marker: Path) -> dict[str, str]:
    """A repository's files as ``write_file`` can make them: config naming an fsmonitor."""
    return {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".git/config": (
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
            f"\tfsmonitor = {touch(marker)}\n"
        ),
        ".git/objects/info/packs": "",
        ".git/refs/heads/.keep": "",
    }


async def run_ask(
    model: ScriptedModel,
    workspace: Path,
    calls: list[tuple[str, str, Any]],
    *,
    settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One ask through the real server, the model making ``calls`` one after another."""
    for call in calls:
        model.reply(tool_calls=[call])
    model.reply("done")
    options = {"settings": settings} if settings else {}
    if any(name == "write_file" for _, name, _ in calls):
        # Writing what git obeys asks (issue 33, finding 3): the user allows each write
        # here, so that what the model planted is really there when the server runs git.
        async with permission_session(model, workspace, settings=settings) as permitting:
            permitting.answers = ["allow_once"] * len(calls)
            result = await ask(permitting, prompt="look around")
    else:
        async with agent_session(
            env or server_env(model.base_url), [workspace], **options
        ) as client:
            result = await ask(client, prompt="look around")
    assert result["answer"] == "done", result
    return result


async def request(client: AgentTestClient, method: str, **params: Any) -> Any:
    return await client.protocol.send_request_async(method, params)


def output(result: dict[str, Any], call_id: str) -> str:
    call = next(c for c in result["toolCalls"] if c["id"] == call_id)
    assert call["ok"], call
    return str(call["output"])


# -- 1: glob's git ls-files ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["workspace-write", "off"])
async def test_glob_in_a_repository_bash_planted_runs_nothing_it_names(
    model: ScriptedModel, workspace: Path, marker: Path, mode: str
) -> None:
    # With the sandbox off (the user's choice) git runs unconfined but hardened.
    plant = f"git init -q evil && git -C evil config core.fsmonitor '{touch(marker)}' && "
    plant += "touch evil/a.txt"
    result = await run_ask(
        model,
        workspace,
        [
            tool_call("bash", {"command": plant}, id="plant"),
            tool_call("glob", {"pattern": "evil/*"}, id="glob"),
        ],
        settings={"sandbox": mode},
    )
    assert output(result, "glob").splitlines() == ["evil/a.txt"]
    assert not marker.exists()


async def test_glob_in_a_repository_planted_with_write_file_runs_nothing_it_names(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    files = {f"evil/{name}": text for name, text in planted_repository(marker).items()}
    files["evil/a.txt"] = "a\n"
    calls = [
        tool_call("write_file", {"path": path, "content": text}, id=f"w{i}")
        for i, (path, text) in enumerate(files.items())
    ]
    result = await run_ask(
        model, workspace, [*calls, tool_call("glob", {"pattern": "evil/*"}, id="glob")]
    )
    assert "fsmonitor" in (workspace / "evil/.git/config").read_text()  # planted, allowed
    assert output(result, "glob").splitlines() == ["evil/a.txt"]
    assert not marker.exists()


async def test_a_commondir_to_a_planted_folder_runs_nothing(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    git(workspace, "init", "-q")
    write(workspace / "a.txt", "a\n")
    planted = workspace / "planted"
    for name, text in planted_repository(marker).items():
        write(planted / name.removeprefix(".git/"), text)
    write(workspace / ".git/commondir", "../planted\n")
    result = await run_ask(model, workspace, [tool_call("glob", {"pattern": "*.txt"}, id="glob")])
    assert output(result, "glob").splitlines() == ["a.txt"]
    assert not marker.exists()


async def test_a_root_turned_into_a_repository_runs_nothing(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    write(workspace / "a.txt", "a\n")
    files = planted_repository(marker)
    calls = [
        tool_call("write_file", {"path": path, "content": text}, id=f"w{i}")
        for i, (path, text) in enumerate(files.items())
    ]
    result = await run_ask(
        model, workspace, [*calls, tool_call("glob", {"pattern": "**/*"}, id="glob")]
    )
    assert "fsmonitor" in (workspace / ".git/config").read_text()  # planted, allowed
    assert output(result, "glob").splitlines() == ["a.txt"]
    assert not marker.exists()


# -- 2: the environment block's git status ----------------------------------------------------


def clean_filter(marker: Path) -> str:
    return f'[filter "evil"]\n\tclean = touch {marker} && cat\n'


async def test_a_submodules_clean_filter_never_runs_for_the_status(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    git(workspace, "init", "-q")
    sub = workspace / "sub"
    git(workspace, "init", "-q", "sub")
    write(sub / ".gitattributes", "* filter=evil\n")
    write(sub / "file.txt", "one\n")
    git(sub, "add", ".")
    git(sub, "commit", "-qm", "sub")
    git(workspace, "add", "sub")
    git(workspace, "commit", "-qm", "top")
    with (sub / ".git/config").open("a") as config:  # planted after the commit
        config.write(clean_filter(marker))
    # Changed, same size: the status must read it through the filter to tell.
    write(sub / "file.txt", "owt\n")
    git(workspace, "status", "--porcelain")  # the filter is potent: plain git runs it
    assert marker.exists()
    marker.unlink()
    result = await run_ask(model, workspace, [])
    assert result["answer"] == "done"
    environment = model.bodies[0]["messages"][0]["content"]
    assert "git repository, branch" in environment
    assert not marker.exists()


async def test_a_byte_order_mark_hides_no_filter_from_the_status(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    git(workspace, "init", "-q")
    write(workspace / ".gitattributes", "* filter=evil\n")
    write(workspace / "file.txt", "one\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "top")
    config = workspace / ".git/config"
    config.write_bytes(b"\xef\xbb\xbf" + clean_filter(marker).encode() + config.read_bytes())
    write(workspace / "file.txt", "owt\n")
    git(workspace, "status", "--porcelain")
    assert marker.exists()
    marker.unlink()
    await run_ask(model, workspace, [])
    environment = model.bodies[0]["messages"][0]["content"]
    assert "git repository, branch" in environment
    assert not marker.exists()


# -- 6 and 8: which git, and a git that never answers -------------------------------------------


async def test_a_git_planted_on_a_path_entry_inside_the_workspace_is_never_run(
    model: ScriptedModel, workspace: Path, marker: Path
) -> None:
    # An editor started from an activated .venv: its bin folder first on PATH. The
    # planted git would also hang: were it chosen, the ask would wait for it.
    git(workspace, "init", "-q")
    write(workspace / "a.txt", "a\n")
    venv_bin = workspace / ".venv/bin"
    venv_bin.mkdir(parents=True)
    env = server_env(model.base_url, PATH=f"{venv_bin}:{os.environ['PATH']}")
    fake = f"#!/bin/sh\ntouch {marker}\nexec sleep 600\n"
    plant = f"printf '%s' '{fake}' > .venv/bin/git && chmod +x .venv/bin/git"
    started = time.monotonic()
    result = await run_ask(
        model,
        workspace,
        [
            tool_call("bash", {"command": plant}, id="plant"),
            tool_call("glob", {"pattern": "*.txt"}, id="glob"),
            tool_call("write_file", {"path": "b.txt", "content": "b\n"}, id="write"),
        ],
        env=env,
    )
    took = time.monotonic() - started
    assert (venv_bin / "git").stat().st_mode & 0o111
    assert output(result, "glob").splitlines() == ["a.txt"]
    assert not marker.exists()
    assert took < 10, took
    # The next ask's environment block and checkpoint use the real git too.
    model.reply("again")
    async with agent_session(env, [workspace]) as client:
        again = await ask(client, prompt="again")
        listed = await request(client, "agent/checkpoints", sessionId=again["sessionId"])
    assert listed["checkpoints"][0]["coverage"] == "all"
    assert "?? b.txt" in model.bodies[-1]["messages"][0]["content"]
    assert not marker.exists()


async def test_a_git_that_never_answers_holds_an_ask_less_than_10_s(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    # The git_hang scenario: every git call hangs, the shadow repository's `git init`
    # first (a stuck network file system). A folder the server trusts holds it (its temp
    # dir is elsewhere).
    git(workspace, "init", "-q")
    write(workspace / "a.txt", "a\n")
    bin_dir, server_tmp = tmp_path / "bin", tmp_path / "server-tmp"
    server_tmp.mkdir()
    write(bin_dir / "git", "#!/bin/sh\nexec sleep 600\n").chmod(0o755)
    env = server_env(
        model.base_url,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        TMPDIR=str(server_tmp),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    took: list[float] = []
    async with agent_session(env, [workspace]) as client:
        session: dict[str, str] = {}
        for name in ("b.txt", "c.txt"):
            model.reply(tool_calls=[tool_call("write_file", {"path": name, "content": "x\n"})])
            model.reply("done")
            started = time.monotonic()
            result = await ask(client, prompt="write", **session)
            took.append(time.monotonic() - started)
            assert result["toolCalls"][0]["ok"], result
            session = {"sessionId": result["sessionId"]}
        listed = await request(client, "agent/checkpoints", **session)
    # The first ask also waits for the server's warm-up (importing the model SDK: seconds
    # on a loaded machine), which is not git's: before, git's `init` alone held it 30 s.
    assert took[0] < 20 and took[1] < 10, took
    for checkpoint, name in zip(listed["checkpoints"], ("b.txt", "c.txt"), strict=True):
        assert checkpoint["coverage"] == "fileTools"
        assert any("git did not snapshot" in note for note in checkpoint["notes"]), checkpoint
        assert [f["path"] for f in checkpoint["files"]] == [name]
    environment = model.bodies[0]["messages"][0]["content"]
    assert "status skipped (git took longer than" in environment


def test_no_sandbox_means_no_git_on_workspace_content(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    # Neither namespaces nor Landlock: glob walks, the status is skipped, saying why.
    from server.project import environment
    from tools.workspace_git import GitRunner

    monkeypatch.setattr(sandbox, "support", lambda: sandbox.SandboxSupport(abi=0))
    git(workspace, "init", "-q")
    runner = GitRunner.of(workspace, sandbox.SandboxPolicy())
    assert runner.unusable() == "no sandbox on this system to run it in"
    summary = environment.git_summary(workspace)
    assert summary.endswith("status skipped (no sandbox on this system to run it in)"), summary


async def test_without_namespaces_glob_still_lists_with_git_and_runs_nothing(
    no_namespaces: None, workspace: Path, marker: Path
) -> None:
    # Landlock, seccomp and the supervising launcher only: git still runs read-only.
    from tooling.registry import ToolRegistry
    from tooling.runtime import ToolRuntime
    from tooling.workspace import Workspace
    from tools.glob import glob_tool

    assert sandbox.support().available, sandbox.support().reason()
    git(workspace, "init", "-q", "evil")
    git(workspace / "evil", "config", "core.fsmonitor", touch(marker))
    write(workspace / "evil/a.txt", "a\n")
    write(workspace / "evil/.gitignore", "ignored.txt\n")
    write(workspace / "evil/ignored.txt", "i\n")
    runtime = ToolRuntime(ToolRegistry([glob_tool(Workspace(workspace))]))
    out = await runtime.execute("glob", '{"pattern": "evil/*"}')
    assert out.splitlines() == ["evil/.gitignore", "evil/a.txt"]
    assert not marker.exists()


@pytest.mark.parametrize("hangs", ["init", "add", "diff-tree", "update-ref", "cat-file"])
async def test_each_shadow_git_call_that_hangs_is_bounded(
    tmp_path: Path, workspace: Path, hangs: str
) -> None:
    # A git given to the service (its `git=`) that hangs on one subcommand: the warm-up
    # and the ask go on without it, the checkpoint saying so when it lost something.
    from server.checkpoints.service import CheckpointService

    write(workspace / "a.txt", "a\n")
    slow = write(
        tmp_path / "slow-git",
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = {hangs} ] && exec sleep 600; done\n'
        f'exec {REAL_GIT} "$@"\n',
    )
    slow.chmod(0o755)
    service = CheckpointService(tmp_path / "state", git=str(slow))
    try:
        started = time.monotonic()
        await service.prepare(workspace)
        recorder = await service.begin(workspace, "s1", "write", "request")
        await recorder.ready()
        recorder.will_write(workspace / "b.txt")
        write(workspace / "b.txt", "b\n")
        await recorder.finish()
        took = time.monotonic() - started
    finally:
        await service.aclose()
    assert took < 10, took
    checkpoint = recorder.checkpoint
    assert [c.path for c in checkpoint.changes] == ["b.txt"], checkpoint
    if hangs in ("init", "add", "diff-tree"):  # the snapshots or their difference lost
        assert checkpoint.coverage == "fileTools" and checkpoint.notes, checkpoint
