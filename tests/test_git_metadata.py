"""Issue 33, findings 3, 4 and 5 through the real server (``agent/ask``, a scripted model).

3. ``write_file``/``edit_file`` on what git obeys is a permission request, whatever the
   approval setting, showing the file and the content; refused when nobody can be asked.
4. A bash call cannot move ``.git`` aside to plant a fresh one (a git dir is a mount point).
5. When the watch cannot read all of what git obeys, the result says so.

Each attack plants a command that writes a marker file outside the workspace; after the
ask, the test runs the user's own ``git status`` (outside any sandbox, as the user would) and
checks the marker is absent. On the code before this change each attack wrote the file
silently (no request, no note) and ``git status`` then wrote the marker.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.lsp_client import ask
from tests.support.model_server import ScriptedModel, tool_call
from tests.test_git_guard import GIT_ENV
from tests.test_permissions import CAN_ASK, permission_session, tool_results
from tools import sandbox

NEEDS_NAMESPACES = pytest.mark.skipif(
    sandbox.support().namespaces is None, reason="needs the bubblewrap sandbox"
)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True,
                          check=False, timeout=60)  # fmt: skip


@pytest.fixture
def repo(workspace: Path) -> Path:
    """A repository with one commit and an executable pre-commit hook."""
    assert git(workspace, "init", "-q", "-b", "main").returncode == 0
    (workspace / "a.txt").write_text("a\n")
    git(workspace, "add", "a.txt")
    assert git(workspace, "commit", "-qm", "first").returncode == 0
    hook = workspace / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    return workspace


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def fsmonitor(marker: Path) -> str:
    return f'[core]\n\tfsmonitor = "touch {marker}; false"\n'


def git_obeys_it(tmp_path: Path, config: str, marker: Path) -> None:
    """The control: the same config, in a repository of the test's own, does run the marker
    command on git status (so an absent marker above means it was kept out, not broken)."""
    control = tmp_path / "control"
    assert git(tmp_path, "init", "-q", str(control)).returncode == 0
    with (control / ".git/config").open("a") as config_file:
        config_file.write(config)
    git(control, "status", "--short")
    assert marker.exists(), "the planted command did not run: the test proves nothing"
    marker.unlink()


def users_git_runs(repo: Path, *folders: str) -> None:
    """What the user does next, outside the sandbox: git status (and a commit)."""
    for folder in ("", *folders):
        git(repo / folder, "status", "--short")
    (repo / "a.txt").write_text("changed\n")
    git(repo, "commit", "-qam", "the user's commit")


# -- 3: the file tools ask ------------------------------------------------------------------


async def test_writes_to_what_git_obeys_are_asked_about_and_a_rejection_keeps_them_out(
    model: ScriptedModel, repo: Path, marker: Path
) -> None:
    config = (repo / ".git/config").read_text()
    hook = "#!/bin/sh\nexit 0\n"
    model.reply(
        tool_calls=[
            tool_call("read_file", {"path": ".git/config"}, id="r1"),
            tool_call("read_file", {"path": ".git/hooks/pre-commit"}, id="r2"),
        ]
    )
    planted = fsmonitor(marker)
    model.reply(
        tool_calls=[
            tool_call(
                "edit_file",
                {"path": ".git/config", "old_text": "[core]", "new_text": planted.rstrip("\n")},
                id="config",
            ),
            tool_call(
                "edit_file",
                {
                    "path": ".git/hooks/pre-commit",
                    "old_text": "exit 0",
                    "new_text": f"touch {marker}",
                },
                id="hook",
            ),
            tool_call(
                "write_file",
                {"path": "evil/.git/HEAD", "content": "ref: refs/heads/main\n"},
                id="head",
            ),
            tool_call("write_file", {"path": "evil/.git/config", "content": planted}, id="nested"),
            tool_call("write_file", {"path": "notes.txt", "content": "fine\n"}, id="plain"),
        ]
    )
    model.reply("done")
    async with permission_session(model, repo) as client:
        client.answers = ["reject_once"] * 4
        await ask(client, prompt="set things up")
        asked = {request["callId"]: request for request in client.requests}
    assert list(asked) == ["config", "hook", "head", "nested"]  # not notes.txt
    assert asked["config"]["title"] == "Edit a file git obeys: .git/config"
    assert asked["hook"]["title"] == "Edit a file git obeys: .git/hooks/pre-commit"
    assert asked["nested"]["title"] == "Write a file git obeys: evil/.git/config"
    # The exact change is in the reason every client shows (escaped: a newline is ⏎).
    assert f"touch {marker}" in asked["config"]["reason"]
    assert "Replaces: exit 0 With: touch" in asked["hook"]["reason"]
    assert "New content (" in asked["nested"]["reason"] and "fsmonitor" in asked["nested"]["reason"]
    assert "inside the git dir .git" in asked["hook"]["reason"]
    results = tool_results(model)
    assert all("declined" in results[call] for call in asked), results
    assert (repo / ".git/config").read_text() == config
    assert (repo / ".git/hooks/pre-commit").read_text() == hook
    assert os.stat(repo / ".git/hooks/pre-commit").st_mode & stat.S_IXUSR
    assert not (repo / "evil").exists()
    assert (repo / "notes.txt").read_text() == "fine\n"
    users_git_runs(repo)
    assert not marker.exists()
    git_obeys_it(repo.parent, planted, marker)


async def test_an_allowed_write_to_git_configuration_is_made(
    model: ScriptedModel, repo: Path
) -> None:
    model.reply(
        tool_calls=[
            tool_call("write_file", {"path": ".git/info/attributes", "content": "*.txt text\n"})
        ]
    )
    model.reply("done")
    async with permission_session(model, repo) as client:
        client.answers = ["allow_once"]
        await ask(client, prompt="attributes")
        [request] = client.requests
    assert request["title"] == "Write a file git obeys: .git/info/attributes"
    assert request["arguments"]["content"] == "*.txt text\n"
    assert (repo / ".git/info/attributes").read_text() == "*.txt text\n"


async def test_a_hooks_path_in_the_working_tree_and_a_new_repository_at_the_root_ask(
    model: ScriptedModel, workspace: Path
) -> None:
    # Not a repository: turning the workspace folder into one (core.worktree = .) asks as
    # soon as the write would complete HEAD + objects + refs.
    (workspace / "objects").mkdir()
    (workspace / "refs").mkdir()
    model.reply(
        tool_calls=[tool_call("write_file", {"path": "HEAD", "content": "ref: refs/heads/x\n"})]
    )
    model.reply("done")
    async with permission_session(model, workspace) as client:
        await ask(client, prompt="go")
        [request] = client.requests
    assert request["title"] == "Write a file git obeys: HEAD"
    assert "would become a git dir" in request["reason"]
    assert not (workspace / "HEAD").exists()


@pytest.mark.parametrize("approval", ["never", "on-request"])
async def test_without_anyone_to_ask_a_write_to_git_configuration_is_refused(
    model: ScriptedModel, repo: Path, approval: str
) -> None:
    config = (repo / ".git/config").read_text()
    model.reply(tool_calls=[tool_call("read_file", {"path": ".git/config"})])
    model.reply(
        tool_calls=[
            tool_call(
                "edit_file",
                {"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\tpager = x"},
                id="e",
            )
        ]
    )
    model.reply("ok")
    # approval "never": refused unasked; a client that cannot answer: refused too.
    capabilities = None if approval == "on-request" else CAN_ASK
    settings = {"approval": approval}
    async with permission_session(
        model, repo, settings=settings, capabilities=capabilities
    ) as client:
        await ask(client, prompt="x")
        assert client.requests == []
    result = tool_results(model)["e"]
    assert result.startswith("Error:") and "Edit a file git obeys: .git/config" in result
    assert ('approval: "never"' in result) == (approval == "never")
    assert (repo / ".git/config").read_text() == config


# -- 4: .git cannot be moved aside ----------------------------------------------------------


@NEEDS_NAMESPACES
async def test_a_git_dir_cannot_be_moved_aside_and_commits_still_work(
    model: ScriptedModel, repo: Path, marker: Path
) -> None:
    git(repo, "init", "-q", "nested")
    nested = "nested/.git/config"
    plant = f"printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n'"
    attacks = {
        "dotgit": "mv .git .git-old && mkdir .git && cp -r .git-old/HEAD .git-old/objects "
        f".git-old/refs .git-old/index .git/ && {plant} > .git/config",
        "nested": f"mv nested/.git nested/old && git init -q nested && {plant} >> {nested}",
        "parent": f"mv nested nested-old && git init -q nested && {plant} >> {nested}",
        "hooks": f"mv .git/hooks .git/hooks-old && mkdir .git/hooks && {plant} > .git/hooks/x",
    }
    commit = "echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@e " \
        "commit -qm sandboxed && git log --oneline"  # fmt: skip
    calls = [tool_call("bash", {"command": c}, id=i) for i, c in attacks.items()]
    model.reply(tool_calls=[*calls, tool_call("bash", {"command": commit}, id="commit")])
    model.reply("done")
    async with permission_session(model, repo) as client:
        await ask(client, prompt="go")
    results = tool_results(model)
    for name in attacks:
        assert results[name].startswith("Error:"), results[name]
        assert "Device or resource busy" in results[name], results[name]
    assert "sandboxed" in results["commit"] and not results["commit"].startswith("Error:")
    assert not (repo / ".git-old").exists() and not (repo / "nested-old").exists()
    users_git_runs(repo, "nested")
    assert not marker.exists()
    git_obeys_it(repo.parent, fsmonitor(marker), marker)


# -- 5: the watch fails closed -------------------------------------------------------------


@NEEDS_NAMESPACES
async def test_when_the_watch_runs_out_of_budget_the_result_says_so(
    model: ScriptedModel, repo: Path
) -> None:
    exhaust = "mkdir -p .git/worktrees && cd .git/worktrees && mkdir w{00001..25000}"
    submodule = (
        "mkdir -p .git/modules/sub && printf '[core]\\n\\tfsmonitor = touch x\\n' "
        "> .git/modules/sub/config"
    )
    model.reply(tool_calls=[tool_call("bash", {"command": exhaust}, id="exhaust")])
    model.reply(tool_calls=[tool_call("bash", {"command": submodule}, id="plant")])
    model.reply("done")
    async with permission_session(model, repo) as client:
        await ask(client, prompt="go")
    results = tool_results(model)
    assert "could not check what git obeys in this workspace" in results["plant"], results
    assert "Tell the user" in results["plant"]


@NEEDS_NAMESPACES
async def test_a_repository_made_where_there_was_none_is_reported(
    model: ScriptedModel, repo: Path
) -> None:
    command = "git init -q fresh && git -C fresh config core.pager cat"
    model.reply(tool_calls=[tool_call("bash", {"command": command}, id="init")])
    model.reply("done")
    async with permission_session(model, repo) as client:
        await ask(client, prompt="go")
    result = tool_results(model)["init"]
    assert "made a new repository (git dir) at fresh/.git" in result, result
    assert "tell the user" in result
