"""``agent-lsp ask``'s sandbox and approval flags, through the real terminal client process.

Each flag becomes the setting of the same name (docs/protocol.md) that the client sends its
server in ``initialize``; what the model's bash calls may then do is checked on the real
kernel, and what the model was told in the tool result it got back.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from server import cli
from server.agent import permissions
from tests.support.lsp_client import server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.net import pending_connections
from tools import sandbox


@pytest.fixture
def env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    return server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"))


def ask(env: dict[str, str], workspace: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """One ``agent-lsp ask`` without a terminal, run from the workspace's parent folder."""
    return subprocess.run(
        [sys.executable, "-I", "-m", "server", "ask", "go", "--workspace", str(workspace), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace.parent,
        timeout=60,
    )


def bash_then_done(model: ScriptedModel, command: str, **extra: str) -> None:
    model.reply(tool_calls=[tool_call("bash", {"command": command, **extra})])
    model.reply("done")


def tool_result(model: ScriptedModel) -> str:
    """What the model was told about its bash call (the last message of its second turn)."""
    return model.bodies[1]["messages"][-1]["content"]


def test_read_only_keeps_the_workspace_unchanged(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    bash_then_done(model, "echo x > made.txt")
    done = ask(env, workspace, "--sandbox", "read-only")
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert not (workspace / "made.txt").exists()
    assert "Note: this command ran in agent-lsp's sandbox" in tool_result(model)


def test_sandbox_off_lets_a_command_write_anywhere(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    bash_then_done(model, "echo x > ../outside.txt")
    done = ask(env, workspace, "--sandbox", "off")
    assert done.returncode == 0, done.stderr
    assert (workspace.parent / "outside.txt").read_text() == "x\n"
    assert "permission needed" not in done.stderr


def test_a_writable_root_given_relative_to_the_current_folder(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    cache = workspace.parent / "cache"
    cache.mkdir()
    bash_then_done(model, f"echo x > {cache}/made.txt && echo wrote")
    done = ask(env, workspace, "--writable-root", "cache", "--writable-root", "project")
    assert done.returncode == 0, done.stderr
    assert (cache / "made.txt").read_text() == "x\n"
    assert tool_result(model) == "wrote\n"


def test_a_writable_root_that_is_no_folder_is_refused_before_starting(
    workspace: Path, env: dict[str, str]
) -> None:
    done = ask(env, workspace, "--writable-root", "missing")
    assert done.returncode == 2
    missing = workspace.parent / "missing"
    assert done.stderr == f"agent-lsp: --writable-root is not a directory: {missing}\n"


def test_network_lets_a_sandboxed_command_connect(
    model: ScriptedModel, workspace: Path, env: dict[str, str], listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    bash_then_done(model, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
    done = ask(env, workspace, "--network")
    assert done.returncode == 0, done.stderr
    assert tool_result(model) == "connected\n"
    assert pending_connections(listener) == 1  # the kernel completed it: the listener saw it


def test_approval_never_refuses_an_escalation_without_asking(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    escalated = {"escalation": "unsandboxed", "justification": "write the report"}
    bash_then_done(model, "echo x > ../report.txt", **escalated)
    done = ask(env, workspace, "--approval", "never", "--approve")
    assert done.returncode == 0, done.stderr
    assert not (workspace.parent / "report.txt").exists()
    assert "permission needed" not in done.stderr  # not even --approve was consulted
    assert 'approval: "never"' in tool_result(model)


def test_approval_always_asks_except_for_allowed_commands(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    model.reply(tool_calls=[tool_call("bash", {"command": "echo allowed"})])
    model.reply(tool_calls=[tool_call("bash", {"command": "touch asked.txt"})])
    model.reply("done")
    flags = ("--approval", "always", "--allow-command", "echo", "--allow-command", "git status")
    done = ask(env, workspace, *flags)
    assert done.returncode == 0, done.stderr
    assert model.bodies[1]["messages"][-1]["content"] == "allowed\n"
    # Not an allowed command: asked, and with no terminal to answer on, rejected.
    assert done.stderr.count("permission needed:") == 1
    assert "permission needed: Run: touch asked.txt" in done.stderr
    assert not (workspace / "asked.txt").exists()
    assert "the user declined" in model.bodies[2]["messages"][-1]["content"]


def test_the_flags_offer_exactly_the_settings_values() -> None:
    assert cli.SANDBOX_MODES == sandbox.MODES
    assert cli.APPROVAL_MODES == permissions.APPROVAL_MODES


def test_allow_domain_reaches_that_host_only(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    import http.server
    import threading

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"hi\n")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        bash_then_done(
            model,
            f"curl -sS http://localhost:{port}/ && curl -sS --fail http://127.0.0.1:{port}/",
        )
        done = ask(env, workspace, "--allow-domain", "localhost")
        assert done.returncode == 0, done.stderr
        assert tool_result(model).startswith("Error: exit code")
        assert "hi\n" in tool_result(model) and "The proxy refused 127.0.0.1" in tool_result(model)
    finally:
        server.shutdown()
        server.server_close()


def test_a_limit_flag_becomes_the_limit(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    bash_then_done(model, "head -c 3M /dev/zero > big")
    done = ask(env, workspace, "--max-file-size-mb", "1")
    assert done.returncode == 0, done.stderr
    assert "file-size limit (1 MB per file)" in tool_result(model)
    assert (
        "--max-processes must be a positive number"
        in ask(env, workspace, "--max-processes", "0").stderr
    )


def test_a_weaker_sandbox_is_said_on_stderr(
    model: ScriptedModel, workspace: Path, env: dict[str, str]
) -> None:
    model.reply("done")
    done = ask({**env, "AGENT_LSP_BWRAP": "none"}, workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("The bash sandbox runs on Landlock, seccomp and resource limits") == 1


RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(RUFF is None, reason="ruff is a dev dependency of the venv")
def test_a_lint_error_of_a_write_is_shown_under_its_trace_line(
    model: ScriptedModel, workspace: Path, env: dict[str, str], tmp_path: Path
) -> None:
    # The user's [language_servers.ruff]; the server runs confined like a bash call.
    config = tmp_path / "config"
    (config / "agent-lsp").mkdir(parents=True)
    (config / "agent-lsp" / "config.toml").write_text(
        f'[language_servers.ruff]\ncommand = {RUFF!r}\nargs = ["server"]\nextensions = [".py"]\n'
    )
    # A clean write first: it starts ruff, so the second waits for its answer only (the
    # terminal keeps diagnosticsWait's default, 1.5 s, and a loaded machine starts slowly).
    writes = [("clean.py", "print('hello')\n"), ("app.py", "import os\n")]
    for n, (path, content) in enumerate(writes):
        model.reply(
            tool_calls=[tool_call("write_file", {"path": path, "content": content}, id=f"w{n}")]
        )
    model.reply("done")
    done = ask({**env, "XDG_CONFIG_HOME": str(config)}, workspace)
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    lines = done.stderr.splitlines()
    trace = next(n for n, line in enumerate(lines) if " ✓ write_file app.py (" in line)
    assert lines[trace + 1] == "  Problems: 1 new problem in app.py:", done.stderr
    assert lines[trace + 2].startswith("  app.py:1:8: warning [Ruff F401]"), done.stderr
