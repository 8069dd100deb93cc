"""agent-lsp's own secrets stay out of the sandbox's reach: key files, saved state, environ.

Real kernel, real processes: the bash tool's launcher confines real commands with Landlock;
the server tests run the real server (and the terminal client) and read what the model
was sent. Nothing here is skipped (this kernel offers Landlock ABI >= 4).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.config.own_secrets import hidden_paths
from tests.support.lsp_client import agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import until
from tests.test_server_process import run_cli
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools.sandbox import SandboxPolicy, landlock_exec
from tools.shell import bash_tool

OWN = "agent-lsp's own configuration or state"


def new_key() -> str:
    return f"sk-test-{uuid.uuid4().hex}"


@dataclass
class Home:
    """A user's home folder with agent-lsp's files and other programs' files beside them."""

    root: Path
    key: str

    @property
    def workspace(self) -> Path:
        return self.root / "proj"

    @property
    def key_file(self) -> Path:
        return self.root / ".config" / "agent-lsp" / "config.toml"

    @property
    def session(self) -> Path:
        return self.root / ".local" / "state" / "agent-lsp" / "sessions" / f"{'a' * 32}.json"

    @property
    def env_file(self) -> Path:
        return self.root / "src" / "agent-lsp" / ".env"

    @property
    def environ(self) -> dict[str, str]:
        return {"HOME": str(self.root), "AGENT_LSP_ENV_FILE": str(self.env_file)}

    def policy(self, mode: str = "workspace-write") -> SandboxPolicy:
        # The paths the server itself would hide for this environment.
        return SandboxPolicy(mode, hidden_paths=hidden_paths(self.environ))

    async def bash(self, command: str, policy: SandboxPolicy | None = None) -> str:
        tool = bash_tool(Workspace(self.workspace), policy=policy or self.policy())
        runtime = ToolRuntime(ToolRegistry([tool]))
        return await runtime.execute("bash", json.dumps({"command": command}))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Home:
    home = Home(tmp_path / "home", new_key())
    home.workspace.mkdir(parents=True)
    write(home.key_file, f'api_key = "{home.key}"  # needle\n')
    write(home.session, json.dumps({"messages": [{"content": f"{home.key} needle"}]}))
    write(home.env_file, f"MODEL_API_KEY={home.key} # needle\n")
    # Their neighbours, which stay readable.
    write(home.root / ".config" / "other-app" / "settings.json", "needle other-app\n")
    write(home.root / ".local" / "state" / "other-app" / "log", "needle other-state\n")
    write(home.root / "src" / "agent-lsp" / "README.md", "needle readme\n")
    write(home.root / "notes.txt", "needle notes\n")
    return home


# -- files -----------------------------------------------------------------------------


async def test_agent_lsps_files_cannot_be_read_and_the_model_is_told_why(home: Home) -> None:
    for path in (home.key_file, home.session, home.env_file):
        result = await home.bash(f"cat {path}")
        assert is_error(result), result
        assert "Permission denied" in result
        assert home.key not in result
        assert OWN in result and "do not ask for an escalation" in result


async def test_a_search_of_home_finds_everything_but_agent_lsps_files(home: Home) -> None:
    result = await home.bash(f"grep -r needle {home.root}")
    assert home.key not in result
    for found in ("other-app", "other-state", "readme", "notes"):
        assert f"needle {found}" in result
    assert result.count("Permission denied") == 3  # the key file, the session, the .env
    # Names and metadata stay visible; contents do not.
    listing = await home.bash(f"ls {home.key_file.parent} && wc -c < {home.key_file}")
    assert listing.startswith("Error: exit code 1\nconfig.toml\n"), listing


async def test_the_workspace_inside_home_stays_fully_usable(home: Home) -> None:
    command = (
        "echo one > a.txt && mkdir -p src/deep && cp a.txt src/deep/b.txt && cat src/deep/b.txt"
        " && printf 'print(40 + 2)' > run.py && python3 run.py && rm a.txt && ls"
        " && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm x"
        " && git log --format=%s"
    )
    result = await home.bash(command)
    assert result.startswith("one\n42\nrun.py\nsrc\nx\n"), result  # then a note on .git
    assert (home.workspace / "src" / "deep" / "b.txt").read_text() == "one\n"


async def test_symlinks_do_not_lead_to_them(home: Home) -> None:
    (home.root / "cfg").symlink_to(home.key_file.parent)
    assert home.key not in await home.bash(f"cat {home.root}/cfg/config.toml")
    # The user file may itself be a link into a dotfiles folder: its target is hidden too.
    dotfiles = home.root / "dotfiles"
    target = write(dotfiles / "agent-lsp.toml", f'api_key = "{home.key}"\n')
    write(dotfiles / "gitconfig", "[user]\n")
    home.key_file.unlink()
    home.key_file.symlink_to(target)
    for path in (home.key_file, target):
        result = await home.bash(f"cat {path}")
        assert is_error(result) and home.key not in result, result
    assert await home.bash(f"cat {dotfiles}/gitconfig") == "[user]\n"


async def test_a_state_folder_created_during_the_call_is_not_readable(home: Home) -> None:
    state = home.root / ".local" / "state" / "agent-lsp"
    for path in sorted(state.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    state.rmdir()
    # The server saves its first conversation while a command runs.
    command = f"touch started; until [ -e go ]; do sleep 0.02; done; cat {home.session}"
    call = asyncio.ensure_future(home.bash(command))
    await until(lambda: (home.workspace / "started").exists() or call.done())
    write(home.session, home.key)
    (home.workspace / "go").touch()
    result = await asyncio.wait_for(call, 30)
    # Refused (Landlock), or not there at all (the folder as it was when the call started).
    assert is_error(result), result
    assert "Permission denied" in result or "No such file or directory" in result, result
    assert home.key not in result


async def test_read_only_mode_hides_them_too(home: Home) -> None:
    write(home.workspace / "keep.txt", "kept\n")
    policy = home.policy("read-only")
    assert await home.bash("cat keep.txt", policy) == "kept\n"
    result = await home.bash(f"cat {home.key_file} {home.env_file}", policy)
    assert is_error(result) and home.key not in result


async def test_with_the_sandbox_off_everything_is_readable(home: Home) -> None:
    # Documented in the README's trust model: "off" hides nothing.
    assert home.key in await home.bash(f"cat {home.key_file}", home.policy("off"))


async def test_inside_the_workspace_the_workspace_wins_and_the_user_is_warned(
    tmp_path: Path,
) -> None:
    # agent-lsp's own checkout opened as the workspace, its .env at the top.
    workspace = tmp_path / "agent-lsp"
    key = new_key()
    env_file = write(workspace / ".env", f"MODEL_API_KEY={key}\n")
    environ = {"HOME": str(tmp_path / "home"), "AGENT_LSP_ENV_FILE": str(env_file)}
    policy = SandboxPolicy(hidden_paths=hidden_paths(environ))
    tool = bash_tool(Workspace(workspace), policy=policy)
    result = await ToolRuntime(ToolRegistry([tool])).execute(
        "bash", json.dumps({"command": "cat .env"})
    )
    assert key in result  # read_file could read it too: the workspace is the agent's
    assert str(env_file) not in tool.annotations["sandbox"]["hiddenPaths"]


async def test_opening_a_folder_that_holds_them_warns_the_user(
    model: ScriptedModel, tmp_path: Path
) -> None:
    workspace = tmp_path / "agent-lsp"
    env_file = write(workspace / ".env", f"MODEL_API_KEY={new_key()}\n")
    env = server_env(model.base_url, AGENT_LSP_ENV_FILE=str(env_file))
    async with agent_session(env, [workspace]) as client:
        await until(lambda: client.messages)
        warning = client.messages[0].message
        assert str(env_file) in warning and "API key" in warning and "narrower" in warning


def test_the_rules_stay_bounded(home: Home) -> None:
    for index in range(50):
        (home.root / f"file{index}").touch()
    hidden = [str(p) for p in home.policy().hidden_paths]
    grants, notes = landlock_exec.read_grants(hidden, [str(home.workspace)])
    paths = [path for path, _ in grants]
    assert notes == []
    assert (f"{home.root}/notes.txt", False) in grants and (
        f"{home.root}/.config/other-app",
        True,
    ) in grants
    # One rule per entry of the folders on the way, never one for what is hidden.
    assert not any(p in hidden or any(h.startswith(p + "/") for h in hidden) for p in paths)
    assert f"{home.root}/notes.txt" in paths and f"{home.root}/.config/other-app" in paths
    on_the_way = {str(parent) for h in hidden for parent in Path(h).parents}
    assert len(paths) <= sum(len(os.listdir(folder)) for folder in on_the_way)
    # A folder on the way with too many entries: none of them is granted (fail closed),
    # while a smaller one still is.
    grants, notes = landlock_exec.read_grants(hidden, [], max_entries=40)
    paths = [path for path, _ in grants]
    assert not any(os.path.dirname(p) == str(home.root) for p in paths)
    expected = f"note: files beneath {home.root} are not readable in this call (more than 40"
    assert any(note.startswith(expected) for note in notes), notes
    assert "/usr" in paths


# -- the server ------------------------------------------------------------------------

# What a prompt-injected model would run: every API_KEY variable of every process it can
# see, found the way an attacker finds them (its parent, ps, a /proc scan), and the proof
# that those environments were readable at all.
ENVIRON_ATTACK = r"""
pid=$$
while [ "$pid" -gt 1 ]; do  # up to the first agent-lsp process: the server, or `agent-lsp ask`
    pid=$(awk '{print $4}' /proc/$pid/stat)
    if grep -qzx server /proc/$pid/cmdline; then  # an argument that is exactly "server"
        echo "server: $(tr '\0' ' ' < /proc/$pid/cmdline)"
        echo "server environ readable: $(tr '\0' '\n' < /proc/$pid/environ | grep -c '^PATH=')"
        [ -n "$first" ] || first=$pid
    fi
done
[ -n "$first" ] || echo "server: not visible"
for pid in $(ps -eo pid= 2>/dev/null) $(ls /proc | grep -E '^[0-9]+$'); do
    tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep API_KEY
done | sort | uniq -c
"""


def tool_output(model: ScriptedModel, call_id: str) -> str:
    for body in model.bodies:
        for message in body["messages"]:
            if message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no tool result {call_id} reached the model")


@pytest.fixture(params=[{}, {"AGENT_LSP_BWRAP": "none"}], ids=["namespaces", "fallback"])
def namespaces_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The server's environment for the full sandbox, or for the one without namespaces."""
    return request.param


async def test_no_process_environment_shows_the_key_to_a_sandboxed_command(
    model: ScriptedModel, tmp_path: Path, namespaces_env: dict[str, str]
) -> None:
    key = new_key()  # the VS Code extension passes the stored key this way
    model.reply(tool_calls=[tool_call("bash", {"command": ENVIRON_ATTACK}, id="attack")])
    model.reply("done")
    env = server_env(model.base_url, MODEL_API_KEY=key, **namespaces_env)
    async with agent_session(env, [tmp_path]) as client:
        await ask(client, prompt="look around")
    output = tool_output(model, "attack")
    if namespaces_env:  # no namespaces: the server is an ancestor, and its /proc readable
        assert "-m server" in output.splitlines()[0]
        assert "server environ readable: 1" in output  # the attack itself worked...
    else:  # a PID namespace of its own: no process outside the call to read
        assert output.startswith("server: not visible"), output
    assert key not in output  # ...and found no key
    assert model.requests[0]["headers"]["authorization"] == f"Bearer {key}"  # still used


def test_nor_does_the_terminal_clients_process(
    model: ScriptedModel, tmp_path: Path, namespaces_env: dict[str, str]
) -> None:
    key = new_key()  # exported for `agent-lsp ask`, which passes it on to its server
    model.reply(tool_calls=[tool_call("bash", {"command": ENVIRON_ATTACK}, id="attack")])
    model.reply("done")
    env = server_env(
        model.base_url, MODEL_API_KEY=key, XDG_STATE_HOME=str(tmp_path / "state"), **namespaces_env
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = run_cli("ask", "look around", "--workspace", str(workspace), env=env)
    assert result.returncode == 0, result.stderr
    output = tool_output(model, "attack")
    if namespaces_env:  # the server, then `agent-lsp ask` above it: both readable
        assert "server ask look around" in output
        assert output.count("server environ readable: 1") == 2
    else:
        assert output.startswith("server: not visible"), output
    assert key not in output
    assert model.requests[0]["headers"]["authorization"] == f"Bearer {key}"


async def test_the_key_file_and_saved_conversations_are_hidden_from_the_agent(
    model: ScriptedModel, tmp_path: Path
) -> None:
    key, marker = new_key(), f"marker-{uuid.uuid4().hex}"
    config, state = tmp_path / "config", tmp_path / "state"
    write(config / "agent-lsp" / "config.toml", f'api_key = "{key}"\n')
    write(config / "other-app" / "rc", "other program's settings\n")
    env = server_env(
        model.base_url, MODEL_API_KEY=None, XDG_CONFIG_HOME=str(config), XDG_STATE_HOME=str(state)
    )
    command = (
        f"cat {config}/other-app/rc; cat $XDG_CONFIG_HOME/agent-lsp/config.toml;"
        f" grep -r {marker[:12]} {state}"
    )
    model.reply("noted")
    model.reply(tool_calls=[tool_call("bash", {"command": command}, id="look")])
    model.reply("done")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with agent_session(env, [workspace]) as client:
        await ask(client, prompt=f"remember {marker}")
        await until(lambda: len(list((state / "agent-lsp" / "sessions").glob("*.json"))) >= 2)
        await ask(client, prompt="look around")
        tools = await client.protocol.send_request_async("agent/listTools", {})
    output = tool_output(model, "look")
    assert output.startswith("Error: exit code")
    assert "other program's settings" in output
    assert key not in output and marker not in output
    assert OWN in output
    assert model.requests[0]["headers"]["authorization"] == f"Bearer {key}"  # the server reads it
    bash = next(t for t in tools["tools"] if t["name"] == "bash")
    hidden = bash["annotations"]["sandbox"]["hiddenPaths"]
    assert str(config / "agent-lsp" / "config.toml") in hidden
    assert str(state / "agent-lsp") in hidden
    assert "agent-lsp's own configuration and state" in bash["description"]
