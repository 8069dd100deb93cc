"""The bash sandbox on the real kernel: real processes confined by Landlock.

Nothing here is skipped: this kernel (and every developer's and CI's) offers Landlock
ABI >= 4, and a sandbox test that does not run would hide a sandbox that does not work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.net import pending_connections
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools import sandbox
from tools.sandbox import SandboxPolicy, landlock_exec
from tools.shell import bash_tool

UV = shutil.which("uv")
# How a refused write shows: the read-only mounts answer first (EROFS), Landlock where
# there are none, or beneath a writable folder (EACCES).
REFUSED = re.compile(r"Permission denied|Read-only file system|PermissionError|Errno 30")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def runtime_for(root: Path, policy: SandboxPolicy | None = None) -> ToolRuntime:
    return ToolRuntime(ToolRegistry([bash_tool(Workspace(root), policy=policy)]))


async def bash(root: Path, command: str, policy: SandboxPolicy | None = None) -> str:
    return await runtime_for(root, policy).execute("bash", json.dumps({"command": command}))


@pytest.fixture
def git_workspace(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


@pytest.fixture
def outsider() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the user's that is not part of any bash call."""
    process = subprocess.Popen(["sleep", "30"])
    yield process
    process.kill()
    process.wait()


def test_this_kernel_can_sandbox() -> None:
    state = sandbox.support()
    assert state.available, f"Landlock ABI {state.abi}: {state.reason()}"
    assert state.abi >= sandbox.MIN_ABI


# -- writes ----------------------------------------------------------------------------


async def test_writes_inside_the_workspace_work(workspace: Path) -> None:
    result = await bash(workspace, "mkdir -p src && echo hi > src/a.txt && mv src/a.txt b.txt")
    assert not is_error(result), result
    assert (workspace / "b.txt").read_text() == "hi\n"


async def test_writes_outside_fail_and_create_nothing(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    in_tmp = Path("/tmp") / f"agent-lsp-test-{uuid.uuid4().hex}"
    for target in ("../outside", "$HOME/.bashrc", str(in_tmp)):
        result = await bash(workspace, f"echo planted > {target}")
        assert result.startswith("Error: exit code 1"), result
        assert REFUSED.search(result), result
    assert not (tmp_path / "outside").exists()
    assert list(home.iterdir()) == []
    assert not in_tmp.exists()


async def test_other_ways_out_are_refused_too(workspace: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (workspace / "inside.txt").write_text("x")
    for command in (
        f"rm -f {victim}",
        f": > {victim}",  # truncate
        f"mv inside.txt {tmp_path}/moved.txt",
        f"ln -s /etc {tmp_path}/link",
        f"mkdir {tmp_path}/newdir",
        f"python3 -c 'import os; os.truncate(\"{victim}\", 0)'",
    ):
        assert is_error(await bash(workspace, command)), command
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.txt", "ws"]
    assert (workspace / "inside.txt").exists()


async def test_the_call_gets_a_private_tmpdir_removed_afterwards(workspace: Path) -> None:
    result = await bash(workspace, 'echo $TMPDIR; echo scratch > "$TMPDIR/f"; cat "$TMPDIR/f"')
    tmp, content = result.splitlines()
    assert content == "scratch"
    assert Path(tmp).name.startswith("agent-lsp-bash-")
    assert not Path(tmp).is_relative_to(workspace)
    assert not Path(tmp).exists()
    assert (await bash(workspace, "echo $TMPDIR")).strip() != tmp  # one per call


async def test_the_usual_devices_stay_writable(workspace: Path) -> None:
    result = await bash(
        workspace, "echo x > /dev/null && head -c 8 /dev/urandom | wc -c && : > /dev/null"
    )
    assert result.strip() == "8"


async def test_a_child_of_a_child_is_confined(workspace: Path, tmp_path: Path) -> None:
    target = tmp_path / "deep.txt"
    inner = f"open({str(target)!r}, 'w').write('x')"
    result = await bash(workspace, f'bash -c "python3 -c \\"{inner}\\"" ; setsid touch {target}')
    assert len(REFUSED.findall(result)) >= 2, result  # python's open, then touch
    assert not target.exists()


async def test_the_command_cannot_lift_the_sandbox(workspace: Path, tmp_path: Path) -> None:
    # A second ruleset that grants everything only narrows the first (rulesets stack).
    target = tmp_path / "escaped.txt"
    launcher = f"{sys.executable} -I -S {sandbox.LAUNCHER}"
    result = await bash(workspace, f"{launcher} --write / -- touch {target}")
    assert is_error(result)
    assert not target.exists()


async def test_read_only_mode_protects_the_workspace(workspace: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    policy = SandboxPolicy("read-only")
    result = await bash(workspace, 'cat keep.txt; echo x > "$TMPDIR/ok" && echo tmp-ok', policy)
    assert result == "keep\ntmp-ok\n"
    result = await bash(workspace, "echo changed > keep.txt", policy)
    assert is_error(result)
    assert (workspace / "keep.txt").read_text() == "keep\n"


async def test_writable_roots_extend_the_workspace(workspace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    policy = SandboxPolicy(writable_roots=(cache,))
    assert not is_error(await bash(workspace, f"echo x > {cache}/entry", policy))
    assert (cache / "entry").exists()


async def test_off_runs_unconfined(workspace: Path, tmp_path: Path) -> None:
    result = await bash(workspace, "echo x > ../outside", SandboxPolicy("off"))
    assert not is_error(result)
    assert (tmp_path / "outside").exists()


# -- network and other processes -----------------------------------------------------------


async def test_tcp_connect_is_refused_and_the_listener_sees_nothing(
    workspace: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    result = await bash(
        workspace,
        f"echo hi > /dev/tcp/127.0.0.1/{port}; "
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'",
    )
    assert is_error(result)
    # Refused by Landlock, or nowhere to go in the call's own network namespace.
    assert "Permission denied" in result or "Connection refused" in result
    assert pending_connections(listener) == 0


async def test_tcp_bind_is_refused_or_unreachable(workspace: Path) -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    code = (
        f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
        "s.listen(); open('listening', 'w').close(); time.sleep(30)"
    )
    call = asyncio.ensure_future(bash(workspace, f'python3 -c "{code}"'))
    try:
        # Refused by Landlock, or bound on the call's own loopback, which the host's is not.
        for _ in range(600):
            if call.done() or (workspace / "listening").exists():
                break
            await asyncio.sleep(0.05)
        if call.done():
            assert "PermissionError" in call.result(), call.result()
        else:
            assert (workspace / "listening").exists()
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", port), 2).close()
    finally:
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call


async def test_network_setting_allows_tcp(workspace: Path, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    policy = SandboxPolicy(network=True)
    result = await bash(workspace, f"echo hi > /dev/tcp/127.0.0.1/{port} && echo sent", policy)
    assert result == "sent\n"
    assert pending_connections(listener) == 1
    assert is_error(await bash(workspace, "echo x > ../outside", policy))  # still confined


async def test_processes_outside_cannot_be_signalled(
    workspace: Path, outsider: subprocess.Popen[bytes]
) -> None:
    result = await bash(workspace, f"kill -TERM {outsider.pid}")
    assert is_error(result)
    # Not even visible from the call's own PID namespace; refused by Landlock without it.
    assert "No such process" in result or "Operation not permitted" in result
    assert outsider.poll() is None


# -- what still works ------------------------------------------------------------------


async def test_git_works_in_the_workspace(git_workspace: Path) -> None:
    workspace = git_workspace
    (workspace / "a.txt").write_text("a\n")
    result = await bash(
        workspace,
        "git status --short && git add a.txt && "
        "git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline",
    )
    assert not is_error(result), result
    assert result.splitlines()[0] == "?? a.txt"
    assert result.splitlines()[-1].endswith(" first")


async def test_python_works(workspace: Path) -> None:
    assert await bash(workspace, "python3 -c 'print(6 * 7)'") == "42\n"


async def test_the_launcher_imports_nothing_from_the_workspace(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The launcher is Python, started in the workspace: modules planted there (and a
    # PYTHONPATH pointing at them) must not run before, or instead of, the ruleset.
    for name in ("ctypes.py", "sitecustomize.py", "usercustomize.py"):
        (workspace / name).write_text("open('imported', 'w')\n")
    monkeypatch.setenv("PYTHONPATH", str(workspace))
    result = await bash(workspace, "echo ran; echo x > ../outside")
    assert result.startswith("Error: exit code 1\nran\n")
    assert REFUSED.search(result.split("../outside: ", 1)[1])
    assert not (workspace / "imported").exists()


@pytest.fixture
def uv_cache() -> Path:
    assert UV is not None, "uv runs this project's tests; it must be on PATH"
    done = subprocess.run([UV, "cache", "dir"], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


UV_PROJECT = (
    '[project]\nname = "demo"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = []\n'
)
REPORT_UV_CACHE = "uv run --offline python -c 'import sys; print(sys.prefix)' && uv cache dir"


async def test_uv_run_works_with_a_private_cache(workspace: Path, uv_cache: Path) -> None:
    (workspace / "pyproject.toml").write_text(UV_PROJECT)
    before = _listing(uv_cache)
    result = await bash(workspace, REPORT_UV_CACHE)
    assert not is_error(result), result
    prefix, cache = result.splitlines()[-2:]
    assert prefix == str(workspace / ".venv")
    # The user's cache is not writable in the sandbox: uv got one in the call's $TMPDIR,
    # so nothing a sandboxed command does can poison what later unsandboxed runs use.
    assert cache.startswith(tempfile.gettempdir() + "/agent-lsp-bash-")
    assert cache.endswith("/cache/uv")
    assert not Path(cache).exists()  # removed with the call's temp dir
    assert _listing(uv_cache) == before


async def test_uv_keeps_its_real_cache_when_it_is_a_writable_root(
    workspace: Path, uv_cache: Path
) -> None:
    (workspace / "pyproject.toml").write_text(UV_PROJECT)
    policy = SandboxPolicy(writable_roots=(uv_cache,))
    result = await bash(workspace, REPORT_UV_CACHE, policy)
    assert not is_error(result), result
    assert result.splitlines()[-2:] == [str(workspace / ".venv"), str(uv_cache)]


async def test_npm_and_pip_get_private_caches(workspace: Path) -> None:
    assert shutil.which("npm"), "npm is installed on the developers' and CI machines"
    result = await bash(
        workspace, "npm cache verify >/dev/null && npm config get cache && pip cache dir"
    )
    assert not is_error(result), result
    npm, pip = result.splitlines()[-2:]
    assert npm.startswith(tempfile.gettempdir() + "/agent-lsp-bash-") and npm.endswith("/npm")
    assert pip.startswith(tempfile.gettempdir() + "/agent-lsp-bash-") and pip.endswith("/pip")


async def test_unsandboxed_calls_keep_the_users_caches(workspace: Path, uv_cache: Path) -> None:
    result = await bash(workspace, "uv cache dir", SandboxPolicy(mode="off"))
    assert result == f"{uv_cache}\n"


async def test_a_cache_the_user_set_in_the_workspace_stays_unless_read_only(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CACHE_DIR", ".pip-cache")  # relative: to the workspace
    assert await bash(workspace, "echo $PIP_CACHE_DIR") == ".pip-cache\n"
    moved = await bash(workspace, "echo $PIP_CACHE_DIR", SandboxPolicy(mode="read-only"))
    assert moved.startswith(tempfile.gettempdir() + "/agent-lsp-bash-")
    assert moved.endswith("/cache/pip\n")


def _listing(folder: Path) -> list[tuple[str, int]]:
    """The cache's top level with modification times: what a write there would change."""
    return sorted((entry.name, entry.stat().st_mtime_ns) for entry in folder.iterdir())


# -- what the model is told ------------------------------------------------------------


async def test_a_refusal_comes_with_an_explanation(workspace: Path) -> None:
    result = await bash(workspace, "touch /etc/agent-lsp-planted")
    assert is_error(result)
    assert "Note: this command ran in agent-lsp's sandbox" in result
    assert str(workspace) in result and "no network at all" in result
    plain = await bash(workspace, "echo no; exit 3")
    assert plain == "Error: exit code 3\nno\n"


async def test_changes_to_git_hooks_and_config_are_reported(
    git_workspace: Path, no_namespaces: None
) -> None:
    # Without namespaces they are writable (with them, read-only: test_sandbox_attacks.py).
    workspace = git_workspace
    result = await bash(workspace, "printf '#!/bin/sh\\n' > .git/hooks/pre-commit")
    assert ".git/hooks/pre-commit" in result and "outside the sandbox" in result
    result = await bash(workspace, "git config core.pager cat")
    assert ".git/config" in result
    assert await bash(workspace, "git status --short") == "(no output)"


def test_the_launcher_refuses_rather_than_running_unconfined(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    launcher = [sys.executable, "-I", "-S", str(sandbox.LAUNCHER)]
    done = subprocess.run(
        [*launcher, "--bogus", "--", "touch", str(marker)], capture_output=True, text=True
    )
    assert done.returncode == landlock_exec.FAILURE_STATUS
    assert done.stderr.startswith(landlock_exec.FAILURE_MARKER)
    assert not marker.exists()


def test_list_tools_shows_the_sandbox(workspace: Path) -> None:
    tool = bash_tool(Workspace(workspace))
    described = ToolRegistry([tool]).describe()[0]
    shown = described["annotations"]["sandbox"]
    assert {key: shown[key] for key in list(shown)[:7]} == {
        "mode": "workspace-write",
        "enforced": True,
        "network": False,
        "networkAccess": "none",
        "allowedDomains": [],
        "writableRoots": [str(workspace)],
        "landlockAbi": sandbox.support().abi,
    }
    assert shown["layers"] == {
        "namespaces": True,
        "networkNamespace": True,
        "landlock": False,  # bubblewrap's mounts give its promises here
        "seccomp": True,
        "processLimit": "cgroup" if os.geteuid() == 0 else "rlimit",
        "callMemoryLimit": "cgroup" if os.geteuid() == 0 else None,
    }
    assert shown["fallback"] is None
    assert shown["weakened"] == ([] if os.geteuid() == 0 else [
        "no memory limit for a call as a whole (no memory cgroup the server may make): "
        "only each process's own"])  # fmt: skip
    assert described["annotations"]["openWorldHint"] is False
    assert "runs in a sandbox" in described["description"]


# -- escalations (the permission flow itself is tested through the server) -------------


async def test_an_escalation_needs_a_justification(workspace: Path) -> None:
    arguments = {"command": "curl -sI https://pypi.org", "escalation": "network"}
    result = await runtime_for(workspace).execute("bash", json.dumps(arguments))
    assert result.startswith("Error: Invalid arguments for bash:")
    assert "justification" in result


async def test_an_escalation_with_no_one_to_ask_is_refused(workspace: Path) -> None:
    arguments = {
        "command": "touch ../escaped",
        "escalation": "unsandboxed",
        "justification": "testing",
    }
    result = await runtime_for(workspace).execute("bash", json.dumps(arguments))
    assert result.startswith("Error: this call needs the user's permission")
    assert "Run outside the sandbox: touch ../escaped" in result
    assert not (workspace.parent / "escaped").exists()


def test_what_a_call_would_ask() -> None:
    policy = SandboxPolicy()
    plain = sandbox.call_permission(policy, "ls  -l", None, None)
    assert (plain.title, plain.required) == ("Run: ls  -l", False)  # exactly what runs
    network = sandbox.call_permission(policy, "npm ci", "network", "install dependencies")
    assert network.title == "Run with network access: npm ci" and network.required
    assert network.reason == "install dependencies"
    # Nothing to ask for what the settings already allow.
    allowed = sandbox.call_permission(SandboxPolicy(network=True), "npm ci", "network", "x")
    assert not allowed.required
    assert not sandbox.call_permission(SandboxPolicy("off"), "rm x", "unsandboxed", "x").required


# -- the call's memory total (issue 33) ---------------------------------------------------


async def test_the_calls_memory_total_stops_what_each_process_may_do_alone(
    workspace: Path,
) -> None:
    from tools.sandbox import limits as sandbox_limits
    from tools.sandbox.limits import Limits

    if sandbox_limits.memory_base() is None:
        pytest.skip("no memory cgroup can be made here (not root, no delegation)")
    # Two processes of 90 MB each: within the per-process limit, past the call's 150 MB.
    policy = SandboxPolicy(limits=Limits(memory_mb=1024, call_memory_mb=150))
    grow = "python3 -c 'import time; b = b\"x\" * (90 << 20); time.sleep(3)'"
    result = await bash(
        workspace, f"{grow} & {grow} & wait -n; a=$?; wait -n; exit $((a | $?))", policy
    )
    assert is_error(result), result
    assert "memory limit for the whole call (150 MB)" in result and "maxCallMemoryMB" in result
    # ...and an ordinary call runs under it.
    assert await bash(workspace, "echo ok", policy) == "ok\n"
    # The call's cgroups are gone once the pool removed them (off the call's path): what
    # is left are the ones prepared for the next calls.
    base = sandbox_limits.memory_base()
    assert base is not None
    prefix = f"{sandbox_limits.PREFIX}{os.getpid()}-"

    def left() -> set[str]:
        return {p for p in os.listdir(base) if p.startswith(prefix)}

    def prepared() -> set[str]:  # and those of calls whose event loop (test) is gone
        pool = sandbox_limits.POOL
        groups = [*(g for ready in pool._ready.values() for g in ready), *pool._retiring]
        return {f.name for g in groups for f in g.folders}

    # Generous: the pool removes groups off the calls' path, and a loaded 2-core CI machine
    # took over 10 s once (the kernel waits for the call's last processes to be reaped).
    for _ in range(1200):
        if left() == prepared():
            break
        await asyncio.sleep(0.05)
    assert left() == prepared()
