"""``agent-lsp config`` as a user runs it: real subprocesses, a terminal, the scripted model."""

from __future__ import annotations

import os
import pty
import select
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.support.lsp_client import REPO, server_env
from tests.support.model_server import ScriptedModel

KEY = "sk-terminal-key-DO-NOT-LEAK-9876"


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    return tmp_path / "xdg"


def env_for(config_home: Path, **extra: str | None) -> dict[str, str]:
    return server_env(None, XDG_CONFIG_HOME=str(config_home), **extra)


def run_config(
    config_home: Path, *args: str, stdin: str = "", **env: str | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", "config", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env_for(config_home, **env),
        cwd=REPO,
        timeout=60,
    )


def config_file(config_home: Path) -> Path:
    return config_home / "agent-lsp" / "config.toml"


def test_set_key_from_stdin_writes_a_private_file_and_show_masks_it(config_home: Path) -> None:
    saved = run_config(config_home, "set-key", stdin=KEY + "\n")
    assert saved.returncode == 0, saved.stderr
    path = config_file(config_home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert tomllib.loads(path.read_text()) == {"api_key": KEY}
    assert KEY not in saved.stdout + saved.stderr
    assert "…9876" in saved.stdout

    run_config(config_home, "set", "base_url", "https://api.deepseek.com/v1")
    shown = run_config(config_home, "show")
    assert shown.returncode == 0, shown.stderr
    assert KEY not in shown.stdout + shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line[:1].islower()}
    assert "…9876 (32 characters)" in lines["api_key"]
    assert lines["api_key"].endswith(f"from {path}")
    assert "https://api.deepseek.com/v1" in lines["base_url"]
    assert lines["model"].split()[1:] == ["gpt-4o-mini", "default"]
    assert "mode 0600" in shown.stdout


def test_set_key_from_a_terminal_does_not_echo(config_home: Path) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: agent-lsp on a real terminal
        os.execve(
            sys.executable,
            [sys.executable, "-m", "server", "config", "set-key"],
            {**env_for(config_home), "PWD": str(REPO)},
        )
    screen = b""
    try:
        screen += read_until(fd, b"API key")
        os.write(fd, KEY.encode() + b"\r")
        screen += read_until(fd, b"mode 0600")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, screen
    assert KEY.encode() not in screen  # typed without echo
    assert tomllib.loads(config_file(config_home).read_text())["api_key"] == KEY


def read_until(fd: int, marker: bytes, timeout: float = 30.0) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while marker not in data:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {marker!r} on the terminal; it shows {data!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            data += chunk
    return data


def test_set_writes_one_value_and_says_when_the_environment_still_wins(config_home: Path) -> None:
    path = config_file(config_home)
    path.parent.mkdir(parents=True)
    path.write_text('# mine\nmodel = "old"\n')
    result = run_config(config_home, "set", "model", "deepseek-chat", MODEL="env-model")
    assert result.returncode == 0, result.stderr
    assert path.read_text() == '# mine\nmodel = "deepseek-chat"\n'
    assert "Note: model still comes from environment MODEL" in result.stdout

    endpoint = run_config(config_home, "set", "--endpoint", "local", "base_url", "http://h/v1")
    assert endpoint.returncode == 0, endpoint.stderr
    assert tomllib.loads(path.read_text())["endpoints"] == {"local": {"base_url": "http://h/v1"}}


@pytest.mark.parametrize(
    ("args", "stdin", "file_text", "expected"),
    [
        (("show",), "", "model = \n", "is not valid TOML"),
        (("set-key",), "\n", None, "no key given; nothing written"),
        (("set", "base_url", "api.example.com"), "", None, "must start with http://"),
        (("check",), "", 'default_endpoint = "gone"\n', "names no endpoint"),
        (("models",), "", None, "No model API key"),
    ],
)
def test_problems_are_one_line_not_a_traceback(
    config_home: Path, args: tuple[str, ...], stdin: str, file_text: str | None, expected: str
) -> None:
    if file_text is not None:
        config_file(config_home).parent.mkdir(parents=True)
        config_file(config_home).write_text(file_text)
    result = run_config(config_home, *args, stdin=stdin)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert expected in output
    assert "Traceback" not in output
    assert len(result.stderr.strip().splitlines()) <= 1


def test_check_and_models_against_the_endpoint(config_home: Path) -> None:
    with ScriptedModel(models=["scripted", "big-model"], api_key=KEY) as model:
        model.reply("OK")
        run_config(config_home, "set-key", stdin=KEY)
        run_config(config_home, "set", "base_url", model.base_url)
        run_config(config_home, "set", "model", "scripted")

        good = run_config(config_home, "check")
        assert good.returncode == 0, good.stdout + good.stderr
        lines = good.stdout.splitlines()
        verdict = lines.index("The endpoint works.")
        names = [line.split(":")[0] for line in lines[:verdict]]
        assert names == ["✓ configuration", "✓ models", "✓ model", "✓ request"]
        assert lines[verdict + 1].startswith("✓ sandbox: namespaces")  # then the bash sandbox
        # The check sent the key from the file and asked the configured model.
        assert model.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"
        assert model.requests[-1]["body"]["model"] == "scripted"

        listed = run_config(config_home, "models")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines() == ["  big-model", "* scripted"]

        refused = run_config(config_home, "check", MODEL_API_KEY="sk-wrong-key-1234")
        assert refused.returncode == 1
        assert "✗ models: The endpoint refused the API key from environment MODEL_API_KEY" in (
            refused.stdout
        )
        assert "sk-wrong-key-1234" not in refused.stdout + refused.stderr
        assert KEY not in good.stdout + refused.stdout + listed.stdout


def test_agent_lsp_ask_uses_the_user_file(config_home: Path, tmp_path: Path) -> None:
    with ScriptedModel(api_key=KEY) as model:
        model.reply("answered with the file's key")
        run_config(config_home, "set-key", stdin=KEY)
        run_config(config_home, "set", "base_url", model.base_url)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        result = subprocess.run(
            [sys.executable, "-m", "server", "ask", "hello", "--workspace", str(workspace)],
            capture_output=True,
            text=True,
            env=env_for(config_home, XDG_STATE_HOME=str(tmp_path / "state")),
            cwd=REPO,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "answered with the file's key"
        assert model.requests[-1]["headers"]["authorization"] == f"Bearer {KEY}"
        assert KEY not in result.stdout + result.stderr
