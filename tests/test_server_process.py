"""The server as a process: stdout hygiene, exit on EOF, the command line and terminal client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from server.conversations.session_files import INTERRUPTED_NOTE
from tests.support.framing import StrictReader, send
from tests.support.lsp_client import REPO, run_cli, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import pids_with, unique_tag, wait_until


def start_raw_server(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], StrictReader]:
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "server", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=REPO,
    )
    assert proc.stdout is not None
    return proc, StrictReader(proc.stdout)


def initialize(proc: subprocess.Popen[bytes], reader: StrictReader, folder: Path) -> None:
    uri = folder.as_uri()
    send(
        proc,
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "capabilities": {},
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "ws"}],
            },
        },
    )
    reader.wait_for(lambda m: m.get("id") == 1)
    send(proc, {"method": "initialized", "params": {}})


def test_nothing_but_frames_reach_stdout(model: ScriptedModel, tmp_path: Path) -> None:
    # Tool output that writes straight to the *server's* fd 1 (and a stray
    # unterminated write) must not corrupt the stream.
    command = "printf 'JUNK-NO-NEWLINE' > /proc/$PPID/fd/1; printf 'more junk\\n' >&1"
    model.reply(tool_calls=[tool_call("bash", {"command": command})])
    model.reply("done")
    proc, reader = start_raw_server(server_env(model.base_url))
    try:
        initialize(proc, reader, tmp_path)
        send(proc, {"id": 2, "method": "agent/ask", "params": {"prompt": "pollute"}})
        answer = reader.wait_for(lambda m: m.get("id") == 2)
        assert answer["result"]["answer"] == "done"
        send(proc, {"id": 3, "method": "agent/listTools", "params": {}})
        assert len(reader.wait_for(lambda m: m.get("id") == 3)["result"]["tools"]) == 5
        assert reader.error is None
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def server_running_bash(
    model: ScriptedModel, folder: Path, command: str, tag: str
) -> Iterator[tuple[subprocess.Popen[bytes], StrictReader]]:
    """A raw server whose ask (id 2) is running ``command`` (tagged ``tag``) in bash."""
    model.reply(tool_calls=[tool_call("bash", {"command": command})])
    proc, reader = start_raw_server(server_env(model.base_url))
    try:
        initialize(proc, reader, folder)
        send(proc, {"id": 2, "method": "agent/ask", "params": {"prompt": "long"}})
        assert wait_until(lambda: bool(pids_with(tag)), 10)
        yield proc, reader
    finally:
        proc.kill()
        proc.wait()


def test_stdin_eof_ends_the_server_and_its_children(model: ScriptedModel, tmp_path: Path) -> None:
    tag = unique_tag()
    marker = tmp_path / "marker"
    command = f"(sleep 1.5; touch {marker}) & sleep 60 # {tag}"
    with server_running_bash(model, tmp_path, command, tag) as (proc, _reader):
        assert proc.stdin is not None
        proc.stdin.close()  # the editor died
        proc.wait(timeout=10)
        assert wait_until(lambda: not pids_with(tag), 3)
        # Every process of the call is gone (the subshell that would touch it included).
        assert not marker.exists()


def test_shutdown_and_exit(model: ScriptedModel, tmp_path: Path) -> None:
    proc, reader = start_raw_server(server_env(model.base_url))
    try:
        initialize(proc, reader, tmp_path)
        send(proc, {"id": 9, "method": "shutdown"})
        reader.wait_for(lambda m: m.get("id") == 9)
        send(proc, {"method": "exit"})
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_version_and_help() -> None:
    env = server_env(None)
    version = run_cli("--version", env=env)
    assert version.returncode == 0
    assert version.stdout.startswith("agent-lsp ")
    usage = run_cli("--help", env=env)
    assert usage.returncode == 0
    assert "--stdio" in usage.stdout
    assert "--tcp" in usage.stdout
    assert "ask" in usage.stdout


def test_terminal_client_end_to_end(model: ScriptedModel, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from the file\n")
    model.reply(tool_calls=[tool_call("read_file", {"path": "hello.txt"})])
    model.reply("The file greets you.")
    env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))
    result = run_cli("ask", "what does hello.txt say?", "--workspace", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The file greets you.\n"
    lines = [line for line in result.stderr.splitlines() if "read_file" in line]
    assert len(lines) == 2
    assert "→ read_file hello.txt" in lines[0]
    assert "✓ read_file hello.txt" in lines[1]
    assert model.bodies[0]["messages"][-1]["content"] == "what does hello.txt say?"


def test_terminal_client_writes_the_answer_as_it_streams(
    model: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "hello.txt").write_text("hello from the file\n")
    model.reply(
        "Let me read it.",
        reasoning_content="Reading will tell.",
        tool_calls=[tool_call("read_file", {"path": "hello.txt"})],
    )
    answer = "".join(f"Part {i} of the answer. " for i in range(30))
    model.reply(answer, chunk_size=6, chunk_delay=0.02)  # ~110 chunks over ~2 s
    env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "server", "ask", "read it", "--workspace", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=REPO,
    )
    assert proc.stdout is not None
    reads: list[tuple[bytes, bool]] = []  # (bytes, had the model finished streaming?)
    while chunk := os.read(proc.stdout.fileno(), 4096):
        reads.append((chunk, len(model.streams) > 1 and model.streams[1].completed))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()

    stdout = b"".join(chunk for chunk, _ in reads).decode()
    assert stdout == "Let me read it.\n" + answer + "\n"  # every turn's text, each once
    # Part of the answer was on stdout while the model was still writing the rest.
    assert any(b"Part 0" in chunk for chunk, finished in reads if not finished)
    errors = stderr.decode()
    assert "Reading will tell." in errors  # reasoning goes to stderr (not dimmed: a pipe)
    assert "\x1b[" not in errors
    assert "✓ read_file hello.txt" in errors


def test_terminal_client_reports_the_unconfigured_model(tmp_path: Path) -> None:
    env = server_env(None, XDG_STATE_HOME=str(tmp_path / "state"))
    result = run_cli("ask", "hi", "--workspace", str(tmp_path), env=env)
    assert result.returncode == 1
    assert result.stderr.count("No model API key.") == 1
    assert "agent-lsp config set-key" in result.stderr  # what a terminal user can run
    assert result.stdout == ""


def test_terminal_client_continues_a_session_across_runs(
    model: ScriptedModel, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    sessions = tmp_path / "sessions"
    env = server_env(model.base_url)
    model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})])
    model.reply("It says alpha.")
    args = ("--workspace", str(workspace), "--session-dir", str(sessions))
    first = run_cli("ask", "read a.txt", *args, env=env)
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.split("session: ")[1].split()[0]
    saved = sessions / f"{session_id}.json"
    assert saved.exists()
    assert saved.stat().st_mode & 0o077 == 0  # private: it holds prompts and tool output

    model.reply("Yes, alpha.")
    second = run_cli("ask", "sure?", "--session", session_id, *args, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Yes, alpha.\n"
    sent = model.bodies[-1]["messages"]
    assert any(m["role"] == "tool" and "alpha" in m["content"] for m in sent)

    unknown = run_cli("ask", "x", "--session", "0" * 32, *args, env=env)
    assert unknown.returncode == 1
    assert "sessionId" in unknown.stderr


def test_shutdown_cancels_running_asks_and_kills_their_tools(
    model: ScriptedModel, tmp_path: Path
) -> None:
    tag = unique_tag()
    with server_running_bash(model, tmp_path, f"sleep 60; : {tag}", tag) as (proc, reader):
        send(proc, {"id": 3, "method": "shutdown"})
        reader.wait_for(lambda m: m.get("id") == 3)
        # By the time shutdown answers, the ask is cancelled and its tool is gone.
        assert reader.wait_for(lambda m: m.get("id") == 2)["error"]["code"] == -32800
        assert not pids_with(tag)
        send(proc, {"method": "exit"})
        assert proc.wait(timeout=10) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminating_signal_kills_the_tools_too(
    model: ScriptedModel, tmp_path: Path, signum: int
) -> None:
    tag = unique_tag()
    with server_running_bash(model, tmp_path, f"sleep 60; : {tag}", tag) as (proc, _reader):
        proc.send_signal(signum)
        proc.wait(timeout=10)
        assert wait_until(lambda: not pids_with(tag), 3)


PLANTED = "import pathlib; pathlib.Path({marker!r}).write_text('ran'); print('planted answer')\n"


def test_the_terminal_client_never_runs_code_from_the_working_folder(
    model: ScriptedModel, tmp_path: Path
) -> None:
    # A cloned repository that happens to hold packages named like ours.
    repo = tmp_path / "cloned"
    marker = tmp_path / "planted-code-ran"
    for package in ("server", "tools", "tooling"):
        (repo / package).mkdir(parents=True)
        (repo / package / "__init__.py").write_text(PLANTED.format(marker=str(marker)))
    (repo / "server" / "__main__.py").write_text(PLANTED.format(marker=str(marker)))
    model.reply("The real agent answered.")
    entry_point = Path(sys.executable).parent / "agent-lsp"  # as installed by uv
    result = subprocess.run(
        [str(entry_point), "ask", "hi", "--workspace", "."],
        capture_output=True,
        text=True,
        env=server_env(model.base_url),
        cwd=repo,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The real agent answered.\n"
    assert not marker.exists()


def test_a_server_that_dies_mid_ask_is_reported_in_one_line(
    model: ScriptedModel, tmp_path: Path
) -> None:
    # bash's parent is the server: the agent kills it under the terminal client. The sandbox
    # forbids signalling processes outside it, so the call runs unsandboxed (--approve).
    kill = {"command": "kill -KILL $PPID", "escalation": "unsandboxed", "justification": "test"}
    model.reply(tool_calls=[tool_call("bash", kill)])
    env = server_env(model.base_url)
    result = run_cli("ask", "hi", "--workspace", str(tmp_path), "--approve", env=env)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    reports = [line for line in result.stderr.splitlines() if line.startswith("agent-lsp:")]
    (line,) = [line for line in reports if not line.startswith("agent-lsp: permission needed")]
    assert "server" in line and "exited with code -9" in line


def test_a_server_whose_client_is_gone_ends_even_if_a_thread_never_does() -> None:
    # What serve_stdio arms once the client is gone (and the first SIGTERM/SIGHUP): a
    # process whose exit would wait for a thread blocked for good still ends, on time.
    script = (
        "import threading; from server.stdio import exit_within\n"
        "threading.Thread(target=threading.Event().wait).start()  # joined at exit: forever\n"
        "exit_within(0.5, 7)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, timeout=30, capture_output=True, text=True
    )
    assert proc.returncode == 7, proc.stderr
    assert "exiting" in proc.stderr


def test_a_first_ask_cut_short_by_kill_9_is_listed_interrupted_and_can_be_undone(
    model: ScriptedModel, tmp_path: Path
) -> None:
    project, state = tmp_path / "project", tmp_path / "state"
    project.mkdir()
    (project / "notes.txt").write_text("the user's text\n")
    tag = unique_tag()
    command = f"echo 'the agent was here' > notes.txt; sleep 60 # {tag}"
    model.reply(tool_calls=[tool_call("bash", {"command": command})])
    env = server_env(model.base_url, XDG_STATE_HOME=str(state))
    proc, reader = start_raw_server(env)
    try:
        initialize(proc, reader, project)
        send(proc, {"id": 2, "method": "agent/ask", "params": {"prompt": "rewrite the notes"}})
        notes = project / "notes.txt"
        assert wait_until(lambda: notes.read_text() == "the agent was here\n", 10)
        assert wait_until(lambda: bool(pids_with(tag)), 10)  # still asking
        proc.kill()  # no clean-up of any kind
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
    assert (project / "notes.txt").read_text() == "the agent was here\n"

    model.reply("Here is what I found.")
    proc, reader = start_raw_server(env)
    try:
        initialize(proc, reader, project)
        send(proc, {"id": 3, "method": "agent/sessions", "params": {}})
        (listed,) = reader.wait_for(lambda m: m.get("id") == 3)["result"]["sessions"]
        assert (listed["state"], listed["title"]) == ("interrupted", "rewrite the notes")
        session = listed["sessionId"]
        send(proc, {"id": 4, "method": "agent/sessionHistory", "params": {"sessionId": session}})
        entries = reader.wait_for(lambda m: m.get("id") == 4)["result"]["entries"]
        assert [(e["role"], e["content"]) for e in entries] == [
            ("user", "rewrite the notes"),
            ("assistant", INTERRUPTED_NOTE),
        ]
        # Loaded now (its history was asked for): still interrupted, until its next ask.
        send(proc, {"id": 41, "method": "agent/sessions", "params": {}})
        (loaded,) = reader.wait_for(lambda m: m.get("id") == 41)["result"]["sessions"]
        assert loaded["state"] == "interrupted"
        send(proc, {"id": 5, "method": "agent/checkpoints", "params": {"sessionId": session}})
        (checkpoint,) = reader.wait_for(lambda m: m.get("id") == 5)["result"]["checkpoints"]
        assert checkpoint["state"] == "interrupted"
        assert [f["path"] for f in checkpoint["files"]] == ["notes.txt"]
        params = {"sessionId": session, "checkpointId": checkpoint["id"]}
        send(proc, {"id": 6, "method": "agent/rewind", "params": params})
        reader.wait_for(lambda m: m.get("id") == 6)
        assert (project / "notes.txt").read_text() == "the user's text\n"
        # The conversation goes on; the model sees the cut ask and no two prompts in a row.
        send(
            proc,
            {"id": 7, "method": "agent/ask", "params": {"prompt": "again", "sessionId": session}},
        )
        answer = reader.wait_for(lambda m: m.get("id") == 7, 30)
        assert answer["result"]["answer"] == "Here is what I found.", answer
        roles = [m["role"] for m in model.bodies[-1]["messages"]]
        assert roles[-1] == "user" and "user" not in roles[-2:-1]
    finally:
        proc.kill()
        proc.wait()
