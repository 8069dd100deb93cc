"""The checkpoint engine without the protocol: storage, bounds, ignore rules, git's isolation."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from server.checkpoints import recorder as recorder_module
from server.checkpoints import service as checkpoints_module
from server.checkpoints.ignores import inherited_excludes, rebase
from server.checkpoints.service import CheckpointService
from server.checkpoints.shadow_git import blob_id
from server.checkpoints.store import FolderCheckpoints

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=GIT_ENV
    )
    return done.stdout


def shadow_files(service: CheckpointService, root: Path) -> list[str]:
    """What the shadow repository's index holds for ``root``."""
    repo = service.folder(root).repo
    assert repo is not None
    out = subprocess.run(
        ["git", f"--git-dir={repo.git_dir}", "ls-files"],
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(repo.git_dir)},
    ).stdout
    return out.splitlines()


async def one_ask(service: CheckpointService, root: Path, session: str, prompt: str, edit) -> str:  # type: ignore[no-untyped-def]
    recorder = await service.begin(root, session, prompt, "request")
    await recorder.ready()
    with recorder.running():  # as a command of the agent's
        edit()
    await recorder.finish()
    return recorder.checkpoint.id


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root


@pytest.fixture
async def service(tmp_path: Path):  # type: ignore[no-untyped-def]
    service = CheckpointService(tmp_path / "state" / "checkpoints")
    yield service
    await service.aclose()


async def test_ignored_trees_and_default_excludes_are_never_snapshotted(
    workspace: Path, service: CheckpointService
) -> None:
    (workspace / ".gitignore").write_text("build/\n")
    for folder in ("build", "node_modules/pkg", ".venv/lib", "src/__pycache__"):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / "x.py").write_text("generated\n")
    (workspace / "src" / "main.py").write_text("print(1)\n")
    await one_ask(service, workspace, "s1", "look", lambda: None)
    assert sorted(shadow_files(service, workspace)) == [".gitignore", "a.txt", "src/main.py"]


async def test_a_workspace_inside_a_repository_honours_the_rules_above_it(
    tmp_path: Path, service: CheckpointService
) -> None:
    repo = tmp_path / "monorepo"
    (repo / "web" / "dist").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("*.log\n/web/dist/\n/other/\n")
    (repo / ".git" / "info" / "exclude").write_text("secret.txt\n")
    root = repo / "web"
    for name in ("app.js", "debug.log", "secret.txt", "dist/bundle.js"):
        (root / name).write_text(name)
    await one_ask(service, root, "s1", "look", lambda: None)
    assert shadow_files(service, root) == ["app.js"]


def test_rebasing_gitignore_patterns_onto_a_subfolder() -> None:
    patterns = ["# comment", "", "*.o", "**/tmp", "/top", "web/dist/", "!web/keep.txt", "x/*/y"]
    assert rebase(patterns, "web") == ["*.o", "**/tmp", "/dist/", "!/keep.txt"]
    assert rebase(patterns, "") == patterns[2:]


def test_the_state_folder_inside_a_workspace_is_excluded(tmp_path: Path) -> None:
    state = tmp_path / ".local" / "state" / "agent-lsp" / "checkpoints"
    assert "/.local/state/agent-lsp/checkpoints/" in inherited_excludes(tmp_path, state)


async def test_the_users_git_config_and_hooks_are_never_used(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A global config that would run a program from any git command (fsmonitor), and
    # turn line endings: neither may reach the shadow repository.
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "fsmonitor-ran"
    hook = home / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {hook}\n\tautocrlf = true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    (workspace / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    service = CheckpointService(tmp_path / "state")
    try:
        await one_ask(service, workspace, "s1", "x", lambda: (workspace / "crlf.txt").unlink())
        (change,) = (await service.checkpoints(workspace, "s1"))[0].changes
        assert change.before.oid == blob_id(b"a\r\nb\r\n")  # exact bytes, no conversion
        outcome, _ = await service.rewind(workspace, "s1", "1")
        assert outcome.restored == ["crlf.txt"]
        assert (workspace / "crlf.txt").read_bytes() == b"a\r\nb\r\n"
        assert not marker.exists()
        assert not (tmp_path / "elsewhere").exists()
    finally:
        await service.aclose()


async def test_the_store_is_private(
    workspace: Path, service: CheckpointService, tmp_path: Path
) -> None:
    await one_ask(service, workspace, "s1", "x", lambda: (workspace / "b.txt").write_text("b"))
    folder = service.folder(workspace).directory
    assert folder.stat().st_mode & 0o077 == 0
    log = folder / "sessions" / "s1.json"
    assert log.stat().st_mode & 0o077 == 0
    assert (folder / "folder").read_text().strip() == str(workspace)


async def test_the_oldest_checkpoints_beyond_the_cap_are_dropped(
    workspace: Path, service: CheckpointService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints_module, "MAX_PER_FOLDER", 3)
    for n in range(5):
        session = "s1" if n % 2 else "s2"  # the cap is per folder, across sessions
        await one_ask(
            service,
            workspace,
            session,
            f"ask {n}",
            lambda n=n: (workspace / "a.txt").write_text(f"version {n}\n"),
        )
    remaining = [
        c.prompt for session in ("s1", "s2") for c in await service.checkpoints(workspace, session)
    ]
    assert sorted(remaining) == ["ask 2", "ask 3", "ask 4"]
    repo = service.folder(workspace).repo
    assert repo is not None
    refs = await repo.refs("refs/agent-lsp/")
    assert len(refs) == 6  # before and after of each checkpoint left, nothing else


async def test_checkpoints_past_the_retention_period_are_dropped(
    workspace: Path, service: CheckpointService
) -> None:
    await one_ask(service, workspace, "s1", "old", lambda: None)
    log = service.folder(workspace).directory / "sessions" / "s1.json"
    data = json.loads(log.read_text())
    data["checkpoints"][0]["time"] = time.time() - 31 * 86400
    log.write_text(json.dumps(data))
    await one_ask(service, workspace, "s1", "new", lambda: None)
    assert [c.prompt for c in await service.checkpoints(workspace, "s1")] == ["new"]


async def test_ending_a_session_removes_its_logs_refs_and_blobs(
    workspace: Path, service: CheckpointService
) -> None:
    recorder = await service.begin(workspace, "s1", "x", "request")
    await recorder.ready()
    with recorder.running():
        (workspace / "a.txt").write_text("changed\n")
    recorder.edited_buffer(workspace / "b.txt", "an open buffer\n", "the agent's edit\n")
    await recorder.finish()
    folder = service.folder(workspace)
    assert list(folder.blobs.root.iterdir())
    await service.end_session(workspace, "s1")
    assert not folder.has_session("s1")
    assert not list(folder.blobs.root.iterdir())
    assert folder.repo is not None
    assert await folder.repo.refs("refs/agent-lsp/") == {}


async def clock_past(nanoseconds: int) -> None:
    """Return once the clock has moved ``nanoseconds`` on (file times are told apart)."""
    start = time.time_ns()
    await asyncio.sleep(nanoseconds / 1e9)
    assert time.time_ns() - start >= nanoseconds


async def test_a_file_changed_by_someone_else_during_an_ask_is_not_the_agents(
    workspace: Path, service: CheckpointService
) -> None:
    # An ACP client (agent-shell) writes its transcript into the workspace during a turn:
    # while the agent's own command is not running, and without a file tool.
    recorder = await service.begin(workspace, "s1", "x", "request")
    await recorder.ready()
    transcript = workspace / ".agent-shell" / "transcripts" / "today.md"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("# the client's transcript\n")
    await clock_past(recorder_module.WINDOW_SLACK_NS * 2)
    with recorder.running():  # the agent's command
        (workspace / "a.txt").write_text("by the agent's command\n")
    await clock_past(recorder_module.WINDOW_SLACK_NS * 2)
    (workspace / "b.txt").write_text("b, by someone else after the command\n")
    await recorder.finish()
    checkpoint = recorder.checkpoint
    assert [c.path for c in checkpoint.changes] == ["a.txt"]
    (note,) = [n for n in checkpoint.notes if "someone else" in n]
    assert ".agent-shell/transcripts/today.md" in note and "b.txt" in note
    # Undo restores the agent's change and leaves the others as they are, no conflict.
    outcome, _ = await service.rewind(workspace, "s1", checkpoint.id)
    assert outcome.restored == ["a.txt"] and outcome.conflicts == []
    assert (workspace / "a.txt").read_text() == "a\n"
    assert transcript.read_text() == "# the client's transcript\n"


async def test_an_ask_whose_server_died_is_worked_out_later(
    workspace: Path, tmp_path: Path
) -> None:
    first = CheckpointService(tmp_path / "state")
    recorder = await first.begin(workspace, "s1", "interrupted", "request")
    await recorder.ready()
    (workspace / "a.txt").write_text("half done\n")
    # The server is killed: no finish; its lock on the running ask goes with it.
    folder = first.folder(workspace)
    assert recorder._running_fd is not None
    os.close(recorder._running_fd)
    await first.aclose()

    second = CheckpointService(tmp_path / "state")  # a new server process
    try:
        (checkpoint,) = await second.checkpoints(workspace, "s1")
        assert checkpoint.state == "interrupted"
        assert [c.path for c in checkpoint.changes] == ["a.txt"]
        outcome, _ = await second.rewind(workspace, "s1", checkpoint.id)
        assert outcome.restored == ["a.txt"]
        assert (workspace / "a.txt").read_text() == "a\n"
    finally:
        await second.aclose()
    assert folder.directory.exists()


async def test_a_running_ask_is_not_mistaken_for_an_interrupted_one(
    workspace: Path, tmp_path: Path
) -> None:
    first = CheckpointService(tmp_path / "state")
    recorder = await first.begin(workspace, "s1", "long", "request")
    await recorder.ready()
    other = CheckpointService(tmp_path / "state")  # another server looking at the folder
    try:
        (checkpoint,) = await other.checkpoints(workspace, "s1")
        assert checkpoint.state == "running"
        with pytest.raises(checkpoints_module.CheckpointBusyError):
            await other.rewind(workspace, "s1", checkpoint.id)
    finally:
        await recorder.finish()
        await first.aclose()
        await other.aclose()


async def test_an_empty_nested_repository_is_noted_and_the_rest_is_covered(
    workspace: Path, service: CheckpointService
) -> None:
    (workspace / "empty-repo").mkdir()
    git(workspace / "empty-repo", "init", "-q")  # git add fails on it without --ignore-errors
    await one_ask(service, workspace, "s1", "x", lambda: (workspace / "a.txt").write_text("b\n"))
    (checkpoint,) = await service.checkpoints(workspace, "s1")
    assert [c.path for c in checkpoint.changes] == ["a.txt"]
    assert "not covered: empty-repo: a git repository with no commit yet" in checkpoint.notes


async def test_a_cancelled_wait_for_the_store_lock_never_leaves_it_held(
    workspace: Path, service: CheckpointService
) -> None:
    folder = service.folder(workspace)
    # Another server process: the same store, its own in-process lock.
    other = FolderCheckpoints(workspace, folder.directory, None, service.directory)
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with folder.locked():
            held.set()
            await release.wait()

    async def wait_for_it() -> None:
        async with other.locked():
            pass

    holder = asyncio.create_task(hold())
    await held.wait()
    waiter = asyncio.create_task(wait_for_it())
    await asyncio.sleep(0)  # the waiter's thread now polls for the lock
    waiter.cancel()
    release.set()
    await holder
    async with asyncio.timeout(10):  # left held, this would wait LOCK_TIMEOUT (180 s)
        async with other.locked():
            pass


def test_the_conversation_is_cut_before_the_undone_ask_even_after_compaction() -> None:
    from server.checkpoints.store import Checkpoint
    from server.conversations.conversations import Conversation
    from server.engine.engine import _cut_before, _digest

    def ask(text: str) -> dict[str, str]:
        return {"role": "user", "content": text}

    def checkpoint(n: int, request: dict[str, str] | None) -> Checkpoint:
        return Checkpoint(str(n), "p", 0.0, _digest(request) if request else None)

    first, second, third = ask("fix the tests"), ask("and the docs"), ask("fix the tests")
    summary = ask("[Summary of the earlier conversation, written when it was compacted] ...")
    # Compacted: the first ask is in the summary, the later ones stay (moved).
    messages = [
        {"role": "system", "content": "s"},
        summary,
        {"role": "assistant", "content": "Understood"},
        second,
        {"role": "assistant", "content": "docs done"},
        third,
        {"role": "assistant", "content": "tests done"},
    ]
    conversation = Conversation(id="c", workspace_root=Path("/w"), messages=list(messages))
    asks = [checkpoint(1, first), checkpoint(2, second), checkpoint(3, third)]
    # Undo the third: the last "fix the tests" (not a summarized first one).
    assert _cut_before(conversation, asks[2:], dry_run=False)
    assert conversation.messages == messages[:5]
    # Undo from the second: cut before it (the third, same text as the first, is after it).
    conversation.messages = list(messages)
    assert _cut_before(conversation, asks[1:], dry_run=True)
    assert conversation.messages == messages  # a dry run cuts nothing
    assert _cut_before(conversation, asks[1:], dry_run=False)
    assert conversation.messages == messages[:3]
    # Undo from the first: only the summary holds it now; the later ones are cut.
    conversation.messages = list(messages)
    assert not _cut_before(conversation, asks, dry_run=False)
    assert conversation.messages == messages[:3]
    # An undone ask that left no trace (it failed unanswered) is skipped.
    conversation.messages = list(messages)
    assert _cut_before(conversation, [checkpoint(4, None), asks[2]], dry_run=False)
    assert conversation.messages == messages[:5]
