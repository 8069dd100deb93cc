"""``agent-lsp checkpoints`` / ``diff`` / ``rewind`` in the terminal, real processes throughout."""

from __future__ import annotations

from pathlib import Path

from tests.support.lsp_client import run_cli, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import wait_until
from tests.support.pty_terminal import PtyTerminal


def test_an_ask_listed_shown_and_undone_from_the_terminal(
    model: ScriptedModel, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first line\n")
    (workspace / "old.txt").write_text("old\n")
    env = server_env(model.base_url)
    model.reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"})])
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "notes.txt", "old_text": "first", "new_text": "1st"}),
            tool_call("bash", {"command": "rm old.txt && echo hi > hello.txt"}),
        ]
    )
    model.reply("Done.")
    where = ("--workspace", str(workspace))
    asked = run_cli("ask", "tidy the notes", *where, env=env)
    assert asked.returncode == 0, asked.stderr
    session = asked.stderr.split("session: ")[1].split()[0]
    assert f"undo with: agent-lsp rewind --session {session} 1" in asked.stderr

    listed = run_cli("checkpoints", "--session", session, *where, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("  1  ") and lines[0].endswith("tidy the notes")
    assert lines[1:] == [
        "       A hello.txt (+1)",
        "       M notes.txt (+1 -1)",
        "       D old.txt (-1)",
    ]

    shown = run_cli("diff", "--session", session, "1", *where, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-first line\n+1st line\n" in shown.stdout

    (workspace / "hello.txt").write_text("the user kept this one\n")
    dry = run_cli("rewind", "--session", session, "1", "--dry-run", *where, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "would restore: notes.txt" in dry.stdout
    assert "would keep (changed since): hello.txt" in dry.stdout
    assert (workspace / "notes.txt").read_text() == "1st line\n"

    done = run_cli("rewind", "--session", session, "1", *where, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "restored: notes.txt",
        "restored: old.txt",
        "kept (changed since): hello.txt: it was changed after the agent's last change to it",
        "conversation cut back to before ask 1",
    ]
    assert (workspace / "notes.txt").read_text() == "first line\n"
    assert (workspace / "old.txt").read_text() == "old\n"
    assert (workspace / "hello.txt").read_text() == "the user kept this one\n"

    model.reply("Starting over.")
    again = run_cli("ask", "hello?", "--session", session, *where, env=env)
    assert again.returncode == 0, again.stderr
    assert [m["role"] for m in model.bodies[-1]["messages"]] == ["system", "user"]


def test_an_unknown_session_is_an_error(tmp_path: Path) -> None:
    result = run_cli("checkpoints", "--session", "0" * 32, "--workspace", str(tmp_path),
                     env=server_env(None))  # fmt: skip
    assert result.returncode == 1
    assert "unknown session" in result.stderr


def test_the_folders_conversations_are_listed_with_an_interrupted_one_marked(
    model: ScriptedModel, tmp_path: Path
) -> None:
    from server.conversations.conversations import Conversation
    from server.conversations.session_files import SessionFiles

    workspace, state = tmp_path / "ws", tmp_path / "state"
    workspace.mkdir()
    env = server_env(model.base_url, XDG_STATE_HOME=str(state))
    model.reply("Hello.")
    asked = run_cli("ask", "say hello", "--workspace", str(workspace), env=env)
    assert asked.returncode == 0, asked.stderr
    done = asked.stderr.split("session: ")[1].split()[0]
    # A server killed during its first ask left this one (saved as the ask started).
    cut = Conversation("cd" * 16, workspace, [{"role": "system", "content": "s"}])
    cut.messages.append({"role": "user", "content": "refactor everything"})
    SessionFiles(state / "agent-lsp" / "sessions").save(cut, state="running")

    listed = run_cli("sessions", "--workspace", str(workspace), env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("cd" * 16) and lines[0].endswith("refactor everything [interrupted]")
    assert lines[1].startswith(done) and lines[1].endswith("1 ask  say hello")


def test_a_conversation_is_deleted_only_once_the_user_says_so(
    model: ScriptedModel, tmp_path: Path
) -> None:
    # Issue 34: deleting a conversation is its own, confirmed, command in every client.
    workspace, state = tmp_path / "ws", tmp_path / "state"
    workspace.mkdir()
    env = server_env(model.base_url, XDG_STATE_HOME=str(state))
    model.reply("Hello.")
    asked = run_cli("ask", "say hello", "--workspace", str(workspace), env=env)
    session = asked.stderr.split("session: ")[1].split()[0]
    where = ("--workspace", str(workspace))
    saved = state / "agent-lsp" / "sessions" / f"{session}.json"
    assert saved.exists()

    no_terminal = run_cli("sessions", "--delete", session, *where, env=env)
    assert no_terminal.returncode == 1
    assert "--yes deletes without asking; nothing was deleted" in no_terminal.stderr
    refused = PtyTerminal(["sessions", "--delete", session, *where], env)
    try:
        assert wait_until(lambda: refused.screen.endswith("[y/N] "), 30), refused.screen
        assert f'Delete conversation {session} "say hello" for good' in refused.screen
        refused.type("n\n")
        assert refused.finish() == (1, "Not deleted.\n")
    finally:
        refused.close()
    assert saved.exists()

    confirmed = PtyTerminal(["sessions", "--delete", session, *where], env)
    try:
        assert wait_until(lambda: confirmed.screen.endswith("[y/N] "), 30), confirmed.screen
        confirmed.type("y\n")
        assert confirmed.finish() == (0, f'Deleted conversation {session} "say hello".\n')
    finally:
        confirmed.close()
    assert not saved.exists()
    listed = run_cli("sessions", *where, env=env)
    assert listed.stdout == "no conversations in this folder\n"
