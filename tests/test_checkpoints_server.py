"""Checkpoints and rewind through the real server: real git, real files, scripted model."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.editor import EDITOR_CAPABILITIES, TestEditor, make_editor_client
from tests.support.lsp_client import AgentTestClient, RunningAsk, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, make_reply, tool_call
from tests.support.procs import until

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


# -- the user's project -------------------------------------------------------------


def user_git(root: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def make_project(root: Path, *, git: bool) -> None:
    root.mkdir()
    (root / "keep.txt").write_text("untouched\n")
    (root / "edit.txt").write_text("one\ntwo\nthree\n")
    (root / "gone.txt").write_text("to be deleted\n")
    (root / "sed.txt").write_text("alpha beta\n")
    os.chmod(root / "sed.txt", 0o755)
    (root / "crlf.txt").write_bytes(b"windows\r\nline endings\r\n")
    (root / "link").symlink_to("keep.txt")
    (root / ".gitignore").write_text("ignored/\n")
    (root / ".gitattributes").write_text("*.txt text eol=crlf\n")  # never applied by us
    (root / "ignored").mkdir()
    (root / "ignored" / "cache.bin").write_bytes(os.urandom(64))
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "site.py").write_text("# a virtualenv\n")
    if git:
        user_git(root, "init", "-q")
        user_git(root, "add", "keep.txt", "edit.txt", "gone.txt", "sed.txt", ".gitignore")
        user_git(root, "commit", "-qm", "initial")
        (root / "keep.txt").write_text("untouched, stashed\n")
        user_git(root, "stash", "-q")  # a stash that must survive
        (root / "edit.txt").write_text("one\ntwo\nthree\n")
        user_git(root, "add", "crlf.txt")  # staged, not committed: the index must survive
    (root / "untracked.txt").write_text("the user's untracked notes\n")


def tree_of(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every file and link outside .git: kind, permission bits, bytes."""
    found: dict[str, tuple[str, int, bytes]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" or Path(folder) != root]
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", 0, os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
            elif not os.listdir(path):
                found[rel] = ("empty folder", 0, b"")
    return found


def git_dir_digest(root: Path) -> str:
    """A hash of the user's whole .git: names, modes and bytes of everything in it."""
    digest = hashlib.sha256()
    git_dir = root / ".git"
    for path in sorted(git_dir.rglob("*")):
        st = path.lstat()
        digest.update(f"{path.relative_to(git_dir)}\0{st.st_mode}\0".encode())
        if stat.S_ISREG(st.st_mode):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def script_the_ask(model: ScriptedModel) -> None:
    """An ask that writes a new file, edits one, deletes one and seds another in bash."""
    model.reply(
        tool_calls=[
            tool_call("write_file", {"path": "new/created.txt", "content": "made by the agent\n"}),
            tool_call("read_file", {"path": "edit.txt"}),
            tool_call("read_file", {"path": "crlf.txt"}),
        ]
    )
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "edit.txt", "old_text": "two", "new_text": "TWO"}),
            tool_call("edit_file", {"path": "crlf.txt", "old_text": "line", "new_text": "LINE"}),
            tool_call("bash", {"command": "rm gone.txt && sed -i 's/alpha/omega/' sed.txt"}),
        ]
    )
    model.reply("Done: four files changed.")


async def request(client: AgentTestClient, method: str, **params: Any) -> Any:
    return await client.protocol.send_request_async(method, params)


async def expect_error(code: int, pending: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await pending
    assert caught.value.code == code, caught.value.message
    return caught.value


@pytest.fixture
async def client(model: ScriptedModel, tmp_path: Path) -> AsyncIterator[AgentTestClient]:
    make_project(tmp_path / "project", git=True)
    async with agent_session(server_env(model.base_url), [tmp_path / "project"]) as client:
        yield client


@pytest.fixture
async def editor_client(model: ScriptedModel, tmp_path: Path) -> AsyncIterator[AgentTestClient]:
    """The project in git, served to an editor that applies edits to its open buffers."""
    make_project(tmp_path / "project", git=True)
    async with agent_session(
        server_env(model.base_url),
        [tmp_path / "project"],
        capabilities=EDITOR_CAPABILITIES,
        client_factory=make_editor_client,
    ) as client:
        yield client


def edit_line_one(model: ScriptedModel) -> None:
    """The model reads edit.txt, then shouts its first line (the answer comes after)."""
    model.reply(tool_calls=[tool_call("read_file", {"path": "edit.txt"})])
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "edit.txt", "old_text": "one", "new_text": "ONE"})
        ]
    )


# -- the story ------------------------------------------------------------------------


@pytest.mark.parametrize("git", [True, False], ids=["git-workspace", "plain-folder"])
async def test_rewind_puts_the_tree_back_byte_for_byte(
    model: ScriptedModel, tmp_path: Path, git: bool
) -> None:
    project = tmp_path / "project"
    make_project(project, git=git)
    before = tree_of(project)
    git_before = git_dir_digest(project) if git else None
    # A hook's environment must not lead the server's git into the user's repository.
    env = server_env(model.base_url, GIT_DIR=str(project / ".git"), GIT_INDEX_FILE="index")
    async with agent_session(env, [project]) as client:
        script_the_ask(model)
        result = await ask(client, prompt="tidy up the project")
        session, checkpoint = result["sessionId"], result["checkpointId"]
        assert (project / "new" / "created.txt").exists()
        assert not (project / "gone.txt").exists()
        assert (project / "sed.txt").read_text() == "omega beta\n"

        listed = await request(client, "agent/checkpoints", sessionId=session)
        (entry,) = listed["checkpoints"]
        assert entry["id"] == checkpoint
        assert entry["prompt"] == "tidy up the project"
        assert entry["coverage"] == "all"
        assert [(f["path"], f["status"]) for f in entry["files"]] == [
            ("crlf.txt", "modified"),
            ("edit.txt", "modified"),
            ("gone.txt", "deleted"),
            ("new/created.txt", "added"),
            ("sed.txt", "modified"),
        ]
        edit = next(f for f in entry["files"] if f["path"] == "edit.txt")
        assert (edit["added"], edit["removed"]) == (1, 1)

        rewound = await request(client, "agent/rewind", sessionId=session, checkpointId=checkpoint)
        assert rewound["conflicts"] == []
        assert rewound["restored"] == [
            "crlf.txt",
            "edit.txt",
            "gone.txt",
            "new/created.txt",
            "sed.txt",
        ]
        assert rewound["conversationTruncated"] is True
        assert tree_of(project) == before
        if git:
            assert git_dir_digest(project) == git_before
        assert (await request(client, "agent/checkpoints", sessionId=session))["checkpoints"] == []


async def test_a_file_the_user_changed_after_the_ask_keeps_the_users_text(
    client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    before = tree_of(project)
    script_the_ask(model)
    result = await ask(client, prompt="tidy up")
    (project / "sed.txt").write_text("the user's own line\n")

    rewound = await request(
        client, "agent/rewind", sessionId=result["sessionId"], checkpointId=result["checkpointId"]
    )
    assert [c["path"] for c in rewound["conflicts"]] == ["sed.txt"]
    assert "changed after the agent" in rewound["conflicts"][0]["reason"]
    assert "sed.txt" not in rewound["restored"]
    assert (project / "sed.txt").read_text() == "the user's own line\n"
    after = tree_of(project)
    assert {k: v for k, v in after.items() if k != "sed.txt"} == {
        k: v for k, v in before.items() if k != "sed.txt"
    }


async def test_untracked_and_ignored_files_the_ask_did_not_touch_survive(
    client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    script_the_ask(model)
    result = await ask(client, prompt="tidy up")
    # Made by the user after the ask: untracked, ignored, inside a folder the ask made.
    (project / "later.txt").write_text("written after the ask\n")
    (project / "ignored" / "later.log").write_text("ignored, after the ask\n")
    (project / "new" / "mine.txt").write_text("the user's file in the agent's folder\n")

    await request(
        client, "agent/rewind", sessionId=result["sessionId"], checkpointId=result["checkpointId"]
    )
    assert (project / "untracked.txt").read_text() == "the user's untracked notes\n"
    assert (project / "later.txt").read_text() == "written after the ask\n"
    assert (project / "ignored" / "later.log").exists()
    assert (project / "ignored" / "cache.bin").stat().st_size == 64
    assert (project / ".venv" / "lib" / "site.py").exists()
    assert (project / "new" / "mine.txt").exists()  # so its folder stays, too
    assert not (project / "new" / "created.txt").exists()


async def test_two_asks_rewound_to_the_first_are_both_undone_in_order(
    client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    model.reply(tool_calls=[tool_call("read_file", {"path": "edit.txt"})])
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "edit.txt", "old_text": "one", "new_text": "1"})
        ]
    )
    model.reply("first done")
    first = await ask(client, prompt="first ask")
    session = first["sessionId"]
    model.reply(
        tool_calls=[
            tool_call("read_file", {"path": "edit.txt"}),
            tool_call("bash", {"command": "echo second > second.txt"}),
        ]
    )
    model.reply(
        tool_calls=[tool_call("edit_file", {"path": "edit.txt", "old_text": "1", "new_text": "I"})]
    )
    model.reply("second done")
    second = await ask(client, prompt="second ask", sessionId=session)
    assert (project / "edit.txt").read_text() == "I\ntwo\nthree\n"

    listed = (await request(client, "agent/checkpoints", sessionId=session))["checkpoints"]
    assert [(c["id"], c["prompt"]) for c in listed] == [
        (first["checkpointId"], "first ask"),
        (second["checkpointId"], "second ask"),
    ]
    assert [f["path"] for f in listed[1]["files"]] == ["edit.txt", "second.txt"]

    diff = await request(
        client, "agent/diff", sessionId=session, checkpointId=second["checkpointId"]
    )
    by_path = {f["path"]: f for f in diff["files"]}
    assert "-1\n+I\n" in by_path["edit.txt"]["diff"]
    assert by_path["second.txt"]["status"] == "added"

    rewound = await request(
        client, "agent/rewind", sessionId=session, checkpointId=first["checkpointId"]
    )
    assert rewound["restored"] == ["edit.txt", "second.txt"]
    assert (project / "edit.txt").read_text() == "one\ntwo\nthree\n"
    assert not (project / "second.txt").exists()

    # The conversation is cut back to before the first ask: the model forgot both.
    model.reply("fresh start")
    await ask(client, prompt="third ask", sessionId=session)
    sent = model.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[-1]["content"] == "third ask"


@pytest.mark.parametrize("created", ["only.txt", "a/b/only.txt"])
async def test_rewinding_the_only_file_of_the_workspace_keeps_the_workspace(
    model: ScriptedModel, workspace: Path, created: str
) -> None:
    """Issue 33: the folders a removal leaves empty are removed up to the workspace, never
    the workspace itself (nor the folders above it)."""
    (workspace.parent / "beside.txt").write_text("the folder above stays non-empty\n")
    model.reply(tool_calls=[tool_call("write_file", {"path": created, "content": "x\n"})])
    model.reply("done")
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        result = await ask(client, prompt="make it")
        assert (workspace / created).read_text() == "x\n"
        rewound = await request(
            client,
            "agent/rewind",
            sessionId=result["sessionId"],
            checkpointId=result["checkpointId"],
        )
    assert rewound["restored"] == [created], rewound
    assert workspace.is_dir()
    assert list(workspace.iterdir()) == []


async def test_a_dry_run_reports_and_changes_nothing(
    client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    script_the_ask(model)
    result = await ask(client, prompt="tidy up")
    (project / "edit.txt").write_text("the user rewrote it\n")
    changed = tree_of(project)

    dry = await request(
        client,
        "agent/rewind",
        sessionId=result["sessionId"],
        checkpointId=result["checkpointId"],
        dryRun=True,
    )
    assert dry["dryRun"] is True
    assert dry["restored"] == ["crlf.txt", "gone.txt", "new/created.txt", "sed.txt"]
    assert [c["path"] for c in dry["conflicts"]] == ["edit.txt"]
    assert tree_of(project) == changed
    listed = await request(client, "agent/checkpoints", sessionId=result["sessionId"])
    assert len(listed["checkpoints"]) == 1
    model.reply("still here")
    await ask(client, prompt="and now?", sessionId=result["sessionId"])
    assert any(m.get("content") == "tidy up" for m in model.bodies[-1]["messages"])


async def test_rewind_is_refused_while_the_session_is_answering(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    model.reply("first")
    first = await ask(client, prompt="first")
    model.reply(tool_calls=[tool_call("bash", {"command": "sleep 30"})])
    running = RunningAsk(client, {"prompt": "slow", "sessionId": first["sessionId"]})
    assert await _wait_for_activity(client, "bash")
    await expect_error(
        -32004,
        request(
            client, "agent/rewind", sessionId=first["sessionId"], checkpointId=first["checkpointId"]
        ),
    )
    running.cancel()
    with pytest.raises(JsonRpcException):
        await running.result


async def test_unknown_session_and_checkpoint_are_invalid_params(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    error = await expect_error(-32602, request(client, "agent/checkpoints", sessionId="nope"))
    assert error.data == {"field": "sessionId"}
    model.reply("hi")
    result = await ask(client, prompt="hello")
    error = await expect_error(
        -32602, request(client, "agent/diff", sessionId=result["sessionId"], checkpointId="99")
    )
    assert error.data == {"field": "checkpointId"}
    error = await expect_error(-32602, request(client, "agent/rewind", sessionId="x"))
    assert error.data == {"field": "checkpointId"}


async def test_ending_the_session_deletes_its_checkpoints(
    model: ScriptedModel, tmp_path: Path
) -> None:
    make_project(tmp_path / "project", git=True)
    state = tmp_path / "state"
    async with agent_session(
        server_env(model.base_url, XDG_STATE_HOME=str(state)), [tmp_path / "project"]
    ) as client:
        script_the_ask(model)
        result = await ask(client, prompt="tidy up")
        logs = list(state.glob("agent-lsp/checkpoints/*/sessions/*.json"))
        assert [p.stem for p in logs] == [result["sessionId"]]
        assert stat.S_IMODE(logs[0].parent.parent.stat().st_mode) == 0o700
        await request(client, "agent/endSession", sessionId=result["sessionId"])
        assert not list(state.glob("agent-lsp/checkpoints/*/sessions/*.json"))


async def test_an_edit_in_an_open_unsaved_buffer_is_undone_in_the_editor(
    editor_client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project, client = tmp_path / "project", editor_client
    editor: TestEditor = client.editor  # type: ignore[attr-defined]
    buffer = editor.open(project / "edit.txt")
    editor.type(buffer, "three", "three (the user's unsaved words)")
    edit_line_one(model)
    model.reply("edited in your buffer")
    result = await ask(client, prompt="shout the first line")
    assert buffer.text == "ONE\ntwo\nthree (the user's unsaved words)\n"
    assert (project / "edit.txt").read_text() == "one\ntwo\nthree\n"  # not saved

    listed = await request(client, "agent/checkpoints", sessionId=result["sessionId"])
    assert [(f["path"], f["status"]) for f in listed["checkpoints"][0]["files"]] == [
        ("edit.txt", "modified")
    ]
    rewound = await request(
        client,
        "agent/rewind",
        sessionId=result["sessionId"],
        checkpointId=result["checkpointId"],
    )
    assert rewound["restored"] == rewound["inEditor"] == ["edit.txt"]
    # Through workspace/applyEdit: the buffer is back, the user's words kept, and
    # the rewind itself can be undone in the editor.
    assert editor.apply_requests[-1].label == "agent-lsp: undo ask"
    assert buffer.text == "one\ntwo\nthree (the user's unsaved words)\n"
    assert (project / "edit.txt").read_text() == "one\ntwo\nthree\n"
    editor.undo(buffer)
    assert buffer.text.startswith("ONE\n")


async def test_a_buffer_the_user_typed_in_after_the_ask_is_a_conflict(
    editor_client: AgentTestClient, model: ScriptedModel, tmp_path: Path
) -> None:
    project, client = tmp_path / "project", editor_client
    editor: TestEditor = client.editor  # type: ignore[attr-defined]
    buffer = editor.open(project / "edit.txt")
    edit_line_one(model)
    model.reply("edited")
    result = await ask(client, prompt="shout")
    editor.type(buffer, "two", "two, typed after the ask")  # its didChange goes first
    rewound = await request(
        client,
        "agent/rewind",
        sessionId=result["sessionId"],
        checkpointId=result["checkpointId"],
    )
    assert [c["path"] for c in rewound["conflicts"]] == ["edit.txt"]
    assert "in the editor" in rewound["conflicts"][0]["reason"]
    assert buffer.text == "ONE\ntwo, typed after the ask\nthree\n"


async def test_without_git_the_file_tools_are_covered_and_bash_is_said_not_to_be(
    model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    make_project(project, git=False)
    bin_dir = tmp_path / "bin"  # what bash needs here, and no git
    bin_dir.mkdir()
    for name in ("bash", "sh", "rm", "sed", "env"):
        found = shutil.which(name)
        assert found is not None
        (bin_dir / name).symlink_to(found)
    async with agent_session(server_env(model.base_url, PATH=str(bin_dir)), [project]) as client:
        script_the_ask(model)
        result = await ask(client, prompt="tidy up")
        (entry,) = (await request(client, "agent/checkpoints", sessionId=result["sessionId"]))[
            "checkpoints"
        ]
        shown = [m.message for m in client.messages]
        assert any("git is not installed" in m and "bash" in m for m in shown), shown
        assert entry["coverage"] == "fileTools"
        assert any("bash" in note and "not covered" in note for note in entry["notes"])
        assert [f["path"] for f in entry["files"]] == ["crlf.txt", "edit.txt", "new/created.txt"]
        await request(
            client, "agent/rewind", sessionId=result["sessionId"], checkpointId=entry["id"]
        )
        assert (project / "edit.txt").read_text() == "one\ntwo\nthree\n"
        assert (project / "crlf.txt").read_bytes() == b"windows\r\nline endings\r\n"
        assert not (project / "new").exists()
        assert not (project / "gone.txt").exists()  # bash's change: not covered, as said


async def test_an_edit_inside_a_nested_repository_is_undone(
    model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    make_project(project, git=True)
    nested = project / "vendor" / "lib"
    nested.mkdir(parents=True)
    (nested / "lib.py").write_text("VERSION = 1\n")
    user_git(nested, "init", "-q")
    user_git(nested, "add", "lib.py")
    user_git(nested, "commit", "-qm", "lib")
    async with agent_session(server_env(model.base_url), [project]) as client:
        model.reply(tool_calls=[tool_call("read_file", {"path": "vendor/lib/lib.py"})])
        model.reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"path": "vendor/lib/lib.py", "old_text": "1", "new_text": "2"}
                )
            ]
        )
        model.reply("bumped")
        result = await ask(client, prompt="bump the vendored lib")
        rewound = await request(
            client,
            "agent/rewind",
            sessionId=result["sessionId"],
            checkpointId=result["checkpointId"],
        )
        assert rewound["restored"] == ["vendor/lib/lib.py"]
        assert (nested / "lib.py").read_text() == "VERSION = 1\n"


async def _wait_for_activity(client: AgentTestClient, name: str) -> bool:
    import asyncio

    for _ in range(200):
        if any(a["name"] == name and a["status"] == "started" for a in client.activity):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_what_the_user_saves_while_the_agent_only_reads_is_not_the_asks_change(
    model: ScriptedModel, tmp_path: Path
) -> None:
    project, state = tmp_path / "project", tmp_path / "state"
    make_project(project, git=True)
    released = threading.Event()
    async with agent_session(
        server_env(model.base_url, XDG_STATE_HOME=str(state)), [project]
    ) as client:
        # Released before the session ends, also when the test fails: the model's answer
        # waits for it, and shutdown would wait for the answer.
        try:
            model.reply(tool_calls=[tool_call("read_file", {"path": "keep.txt"})])
            # The model's second answer waits until the user has saved a file.
            model.responder = lambda body: (
                make_reply("It is untouched.") if released.wait(30) else None
            )
            running = RunningAsk(client, {"prompt": "what does keep.txt say?"})
            # The checkpoint before the ask is taken (its ref is written) and the agent has read.
            await until(
                lambda: any(state.rglob("refs/agent-lsp/*/1/before")) and len(model.bodies) == 2
            )
            (project / "keep.txt").write_text("the user saved this meanwhile\n")
            released.set()
            result = await running.result

            listed = await request(client, "agent/checkpoints", sessionId=result["sessionId"])
            assert [entry["files"] for entry in listed["checkpoints"]] == [[]]
            rewound = await request(
                client,
                "agent/rewind",
                sessionId=result["sessionId"],
                checkpointId=result["checkpointId"],
            )
            assert (rewound["restored"], rewound["conflicts"]) == ([], [])
            assert (project / "keep.txt").read_text() == "the user saved this meanwhile\n"
        finally:
            released.set()


async def test_the_warm_up_prepares_the_store_before_the_first_ask(
    model: ScriptedModel, tmp_path: Path
) -> None:
    # The first ask's checkpoint is then only its snapshot (no repository to create).
    project, state = tmp_path / "project", tmp_path / "state"
    make_project(project, git=True)
    async with agent_session(server_env(model.base_url, XDG_STATE_HOME=str(state)), [project]):
        store = state / "agent-lsp" / "checkpoints"
        await until(lambda: any(store.glob("*/git/HEAD")))
        assert not any(store.rglob("refs/agent-lsp/*"))  # nothing snapshotted for an ask
        assert not any(store.glob("*/sessions/*.json"))


async def test_a_git_that_never_answers_holds_no_ask_longer_than_the_snapshot_wait(
    model: ScriptedModel, tmp_path: Path
) -> None:
    # Every `git add` hangs (a stuck network file system, a broken git): the warm-up's
    # snapshot, then each ask's. The asks go on after the wait, their checkpoints made
    # of the file tools' journal; the user is told once.
    project = tmp_path / "project"
    make_project(project, git=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_git = shutil.which("git")
    assert real_git is not None
    hanging = bin_dir / "git"
    hanging.write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = add ] && exec sleep 600; done\n'
        f'exec {real_git} "$@"\n'
    )
    hanging.chmod(0o755)
    # The server's temp dir elsewhere: a git in the tests' temp dir would never be chosen.
    (tmp_path / "server-tmp").mkdir()
    env = server_env(
        model.base_url,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        TMPDIR=str(tmp_path / "server-tmp"),
    )
    async with agent_session(env, [project]) as client:
        session_id: str | None = None
        for n in (1, 2):
            model.reply(
                tool_calls=[tool_call("write_file", {"path": f"made{n}.txt", "content": "x\n"})]
            )
            model.reply("Written.")
            started = time.monotonic()
            more = {"sessionId": session_id} if session_id else {}
            result = await ask(client, prompt=f"write made{n}.txt", **more)
            elapsed = time.monotonic() - started
            session_id = result["sessionId"]
            assert result["toolCalls"][0]["ok"], result
            assert elapsed < 20, f"ask {n} took {elapsed:.1f} s (a git call may wait 120 s)"
        entries = (await request(client, "agent/checkpoints", sessionId=session_id))["checkpoints"]
        assert [e["coverage"] for e in entries] == ["fileTools", "fileTools"]
        assert all(any("git did not snapshot" in n for n in e["notes"]) for e in entries)
        assert [[f["path"] for f in e["files"]] for e in entries] == [["made1.txt"], ["made2.txt"]]
        told = [m.message for m in client.messages if "git did not snapshot" in m.message]
        assert len(told) == 1, told
        await request(client, "agent/rewind", sessionId=session_id, checkpointId=entries[0]["id"])
        assert not (project / "made1.txt").exists() and not (project / "made2.txt").exists()
