"""Warm spawns (issue 37): a sandboxed call run by a process started ahead, already in the
call's cgroups (``tools/sandbox/warm.py``). Real kernel, real processes, both forms: with
namespaces (the waiter execs bubblewrap) and without (it runs the launcher's work)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.procs import pids_with, unique_tag, until, wait_until
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools import sandbox
from tools.sandbox import limits as sandbox_limits
from tools.sandbox import warm as sandbox_warm
from tools.shell import bash_tool

REPO = str(Path(__file__).resolve().parents[1])


@pytest.fixture(params=["namespaces", "fallback"])
def form(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "fallback":
        request.getfixturevalue("no_namespaces")
        assert sandbox.support().namespaces is None
        yield "launcher"
        return
    assert sandbox.support().namespaces is not None, sandbox.support().namespace_problem
    if sandbox_limits.pids_base() is None:
        pytest.skip("bubblewrap's waiter needs a pids cgroup (not root, no delegation)")
    yield "bwrap"


def waiting(form: str) -> list[int]:
    """The PIDs of the waiters of ``form`` ready for a call with the default limits."""
    groups = sandbox_limits.POOL.ready(sandbox_limits.Limits())
    found = [g.waiter for g in groups] + list(sandbox_warm.POOL._loose.values())
    return [w.pid for w in found if isinstance(w, sandbox_warm.Waiter) and w.form == form]


@pytest.fixture
def runtime(workspace: Path) -> ToolRuntime:
    return ToolRuntime(ToolRegistry([bash_tool(Workspace(workspace))]))


async def bash(runtime: ToolRuntime, command: str, **extra: object) -> str:
    return await runtime.execute("bash", json.dumps({"command": command, **extra}))


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The PIDs of the waiters handed a call."""
    seen: list[int] = []
    start = sandbox_warm.Waiter.start

    def spy(self: sandbox_warm.Waiter, message: bytes) -> bool:
        seen.append(self.pid)
        return start(self, message)

    monkeypatch.setattr(sandbox_warm.Waiter, "start", spy)
    return seen


async def warmed(runtime: ToolRuntime, form: str) -> int:
    """Run a call (which leaves a waiter behind it); the waiter's PID once it is ready."""
    assert await bash(runtime, "echo warm") == "warm\n"
    await until(lambda: waiting(form), within=20)
    return waiting(form)[0]


async def test_a_call_after_another_runs_in_its_waiter_confined_and_limited(
    runtime: ToolRuntime, workspace: Path, form: str, used: list[int]
) -> None:
    pid = await warmed(runtime, form)
    # Already in the call's cgroups before the call (inside, a cgroup namespace shows "/").
    if sandbox_limits.pids_base() is not None:
        assert f":pids:/{sandbox_limits.PREFIX}" in Path(f"/proc/{pid}/cgroup").read_text()
    command = (
        "echo inside > here; grep -E '^[0-9]+:pids:' /proc/self/cgroup; ulimit -f; "
        "touch /usr/agent-lsp-warm 2>&1; echo $TMPDIR"
    )
    result = await bash(runtime, command)
    assert used == [pid], (used, pid)
    assert (workspace / "here").read_text() == "inside\n"
    assert "cannot touch '/usr/agent-lsp-warm'" in result, result
    assert not Path("/usr/agent-lsp-warm").exists()
    lines = result.splitlines()
    if sandbox_limits.pids_base() is not None:
        inside = lines[0].split(":", 2)[2]
        assert inside == "/" if form == "bwrap" else inside.startswith("/agent-lsp-"), result
    assert lines[1] == str(8192 * 1024 * 1024 // 1024), result  # ulimit -f: KB
    assert "/agent-lsp-bash-" in lines[-1]  # its private temp dir
    # Exit status and signals come back as from a cold spawn.
    await until(lambda: waiting(form), within=20)
    assert (await bash(runtime, "echo out; exit 7")).startswith("Error: exit code 7\nout")
    await until(lambda: waiting(form), within=20)
    assert "killed by SIGKILL" in await bash(runtime, "kill -9 $$")


async def test_a_timed_out_warm_call_leaves_no_process(
    runtime: ToolRuntime, form: str, used: list[int]
) -> None:
    await warmed(runtime, form)
    tag = unique_tag()
    command = f"(exec -a {tag} sleep 300) & setsid bash -c 'exec -a {tag} sleep 300' & wait"
    result = await bash(runtime, command, timeout_seconds=1.5)
    assert used and result.startswith("Error: command timed out"), result
    await until(lambda: not pids_with(tag), within=5)


async def test_a_cancelled_warm_call_leaves_no_process(
    runtime: ToolRuntime, form: str, used: list[int]
) -> None:
    await warmed(runtime, form)
    tag = unique_tag()
    command = f"(exec -a {tag} sleep 300) & setsid bash -c 'exec -a {tag} sleep 300' & wait"
    call = asyncio.ensure_future(bash(runtime, command))
    await until(lambda: len(pids_with(tag)) >= 2, within=20)
    assert used
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: not pids_with(tag), within=5)


@pytest.mark.parametrize("kind", ["bwrap", "launcher"])
@pytest.mark.parametrize("given", [b"", b'{"go": true, "argv": ["/bin/sh", "-c", "touch ', b"{}"])
def test_a_waiter_runs_nothing_but_a_whole_message(tmp_path: Path, kind: str, given: bytes) -> None:
    """End of file (the server gone), a message cut short, or one that is not a call: the
    waiter exits and nothing runs."""
    marker = tmp_path / "ran"
    waiter = sandbox_warm.spawn(kind)
    try:
        text = given + str(marker).encode() if given.endswith(b"touch ") else given
        os.write(waiter.control, text)
        os.close(waiter.control)
        waiter.control = -1
        _, status = os.waitpid(waiter.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert os.read(waiter.output, 4096) == b""
        assert not marker.exists()
    finally:
        waiter.discard()


@pytest.mark.parametrize("bwrap", ["", "none"])
def test_no_waiter_outlives_the_server_killed_outright(tmp_path: Path, bwrap: str) -> None:
    """The server killed with SIGKILL while a waiter waits: the waiter reads end of file
    (the kernel closed the server's end) and exits, running nothing."""
    if not bwrap and sandbox_limits.pids_base() is None:
        pytest.skip("bubblewrap's waiter needs a pids cgroup (not root, no delegation)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = (
        "import asyncio, json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tooling.registry import ToolRegistry\n"
        "from tooling.runtime import ToolRuntime\n"
        "from tooling.workspace import Workspace\n"
        "from tools.sandbox import warm as sandbox_warm\n"
        "from tools.shell import bash_tool\n"
        "async def main():\n"
        "    rt = ToolRuntime(ToolRegistry([bash_tool(Workspace(sys.argv[2]))]))\n"
        "    await rt.execute('bash', json.dumps({'command': 'true'}))\n"
        "    while not sandbox_warm.POOL._alive:\n"
        "        await asyncio.sleep(0.01)\n"
        "    print(*[w.pid for w in sandbox_warm.POOL._alive], flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != sandbox.bwrap.ENV_OVERRIDE}
    if bwrap:
        env[sandbox.bwrap.ENV_OVERRIDE] = bwrap
    server = subprocess.Popen(
        [sys.executable, "-c", script, REPO, str(workspace)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        pids = [int(p) for p in server.stdout.readline().split()]
        assert pids
        server.kill()
        server.wait()
        assert wait_until(lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), 5), pids
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("bwrap", ["", "none"])
def test_nothing_of_a_warm_call_outlives_the_server_killed_outright(
    tmp_path: Path, bwrap: str
) -> None:
    """The server killed with SIGKILL in the middle of a call its waiter runs: the call's
    processes end with it, as a cold call's do."""
    if not bwrap and sandbox_limits.pids_base() is None:
        pytest.skip("bubblewrap's waiter needs a pids cgroup (not root, no delegation)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tag = unique_tag()
    script = (
        "import asyncio, json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tooling.registry import ToolRegistry\n"
        "from tooling.runtime import ToolRuntime\n"
        "from tooling.workspace import Workspace\n"
        "from tools.sandbox import warm as sandbox_warm\n"
        "from tools.shell import bash_tool\n"
        "async def main():\n"
        "    rt = ToolRuntime(ToolRegistry([bash_tool(Workspace(sys.argv[2]))]))\n"
        "    await rt.execute('bash', json.dumps({'command': 'true'}))\n"
        "    while not sandbox_warm.POOL._alive:\n"
        "        await asyncio.sleep(0.01)\n"
        "    await asyncio.sleep(0.5)\n"
        "    await rt.execute('bash', json.dumps({'command': sys.argv[3]}))\n"
        "asyncio.run(main())\n"
    )
    command = (
        f"set -m; (exec -a {tag} sleep 300) & setsid bash -c 'exec -a {tag} sleep 300' & "
        f"nohup bash -c '(exec -a {tag} sleep 300) &' >/dev/null 2>&1; sleep 60"
    )
    env = {k: v for k, v in os.environ.items() if k != sandbox.bwrap.ENV_OVERRIDE}
    if bwrap:
        env[sandbox.bwrap.ENV_OVERRIDE] = bwrap
    server = subprocess.Popen([sys.executable, "-c", script, REPO, str(workspace), command],
                              env=env)  # fmt: skip
    try:
        assert wait_until(lambda: len(pids_with(tag)) >= 3, 30)
        server.kill()
        server.wait()
        assert wait_until(lambda: not pids_with(tag), 5), pids_with(tag)
    finally:
        server.kill()
        server.wait()


async def test_a_waiter_of_another_form_is_ended_and_the_call_runs_cold(
    runtime: ToolRuntime, workspace: Path, form: str
) -> None:
    """A call the waiter cannot run (another form: a proxy's call, say) ends it first: it
    leaves the cgroup empty, and the call runs cold in it."""
    pid = await warmed(runtime, form)
    other = "launcher" if form == "bwrap" else "bwrap"
    group = sandbox_limits.POOL.take(sandbox_limits.Limits(), form)
    assert group is not None and getattr(group.waiter, "pid", None) == pid
    assert sandbox_warm.POOL.claim(group, other, sandbox_limits.Limits()) is None
    assert group.waiter is None and not os.path.exists(f"/proc/{pid}")
    assert group.remove()
    assert not is_error(await bash(runtime, "true"))


async def test_a_bare_bwrap_name_never_runs_a_file_of_the_workspace(
    runtime: ToolRuntime,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    used: list[int],
) -> None:
    """``AGENT_LSP_BWRAP=bwrap`` with a ``./bwrap`` planted in the workspace (by a call, or
    a cloned repository): bubblewrap is found outside, by absolute path, and the waiter
    (which runs from the call's folder, with no PATH search) never runs the planted one."""
    if sandbox_limits.pids_base() is None:
        pytest.skip("bubblewrap's waiter needs a pids cgroup (not root, no delegation)")
    marker = tmp_path / "planted-ran"
    planted = workspace / "bwrap"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    planted.chmod(0o755)
    monkeypatch.setenv(sandbox.bwrap.ENV_OVERRIDE, "bwrap")
    sandbox.support.cache_clear()
    try:
        found = sandbox.support().namespaces
        assert found is not None and os.path.isabs(found.bwrap), found
        assert await bash(runtime, "echo one") == "one\n"
        await until(lambda: waiting("bwrap"), within=20)
        used.clear()
        assert await bash(runtime, "echo two") == "two\n"
        assert used, "the second call ran warm"
        assert not marker.exists()
    finally:
        monkeypatch.delenv(sandbox.bwrap.ENV_OVERRIDE)
        sandbox.support.cache_clear()


def test_a_waiter_runs_no_relative_program(tmp_path: Path) -> None:
    """Handed a command line whose program is not an absolute path, the bubblewrap-form
    waiter runs nothing (it would be a file of the call's folder)."""
    (tmp_path / "prog").write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    (tmp_path / "prog").chmod(0o755)
    waiter = sandbox_warm.spawn("bwrap")
    try:
        assert waiter.start(sandbox_warm.message(["prog"], {}, tmp_path))
        _, status = os.waitpid(waiter.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 125
        assert b"not an absolute path" in os.read(waiter.output, 4096)
        assert not (tmp_path / "ran").exists()
    finally:
        waiter.discard()


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
async def test_a_call_gets_every_signal_default_and_none_blocked(
    runtime: ToolRuntime,
    form: str,
    used: list[int],
    warm: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No signal ignored or blocked in the command, warm or cold (the waiter and the
    launcher are Python, which ignores SIGPIPE and SIGXFSZ): a writer into a closed pipe
    dies of SIGPIPE, as in a terminal."""
    await warmed(runtime, form)
    used.clear()  # the warming call may have run in a waiter of an earlier test
    if not warm:
        monkeypatch.setattr(sandbox_warm.Waiter, "start", lambda self, message: False)
    result = await bash(runtime, "grep -E 'SigIgn|SigBlk' /proc/self/status")
    assert bool(used) == warm, used
    masks = dict(line.split(":\t") for line in result.splitlines())
    # 32 and 33 are the C library's own (no process can change them: `uv run` ignores them).
    assert (int(masks["SigBlk"], 16), int(masks["SigIgn"], 16) & 0x7FFFFFFF) == (0, 0), result
    for _ in range(2):
        await until(lambda: waiting(form), within=20)
        command = "while true; do echo x; done | head -1; yes | head -1; echo ${PIPESTATUS[0]}"
        assert await bash(runtime, command, timeout_seconds=20) == "x\ny\n141\n"


def test_a_reaped_waiter_is_never_signalled_by_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A waiter that died and was reaped (``running``) and is then discarded: no signal
    goes to its PID, which the kernel may have given to another process meanwhile."""
    waiter = sandbox_warm.spawn("launcher")
    os.kill(waiter.pid, 9)
    assert wait_until(lambda: not waiter.running(), 10)
    assert waiter.reaped
    sent: list[int] = []
    monkeypatch.setattr(sandbox_warm.os, "kill", lambda pid, sig: sent.append(pid))
    monkeypatch.setattr(sandbox_warm.signal, "pidfd_send_signal", lambda *a: sent.append(-1))
    waiter.discard()
    assert sent == [] and waiter.pidfd == -1
    # One not yet reaped is ended through its pidfd, and reaped.
    other = sandbox_warm.spawn("launcher")
    monkeypatch.undo()
    other.discard()
    assert other.reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(other.pid, os.WNOHANG)


async def test_a_claimed_waiter_ends_when_the_call_fails_before_handing_it(
    runtime: ToolRuntime, form: str, used: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something raising between the claim of a waiter and its start (the caches'
    redirection, say): the waiter ends with the call, left in no cgroup and no pool."""
    from tools import shell

    pid = await warmed(runtime, form)
    used.clear()  # the warming call may have run in a waiter of an earlier test

    def broken(*args: object) -> dict[str, str]:
        raise RuntimeError("cache redirects failed")

    monkeypatch.setattr(shell, "cache_redirects", broken)
    with pytest.raises(RuntimeError, match="cache redirects failed"):
        await bash(runtime, "echo never")
    assert not used
    assert not os.path.exists(f"/proc/{pid}")
    assert pid not in [w.pid for w in sandbox_warm.POOL._alive]


@pytest.mark.parametrize("kind", ["bwrap", "launcher"])
def test_a_waiter_dies_with_the_server_even_without_end_of_file(kind: str) -> None:
    """The server killed outright while another process still holds the write end of its
    waiter's message pipe (no end of file comes): the waiter ends anyway (the kernel's
    ``PR_SET_PDEATHSIG``), rather than wait to run a call the server never sees."""
    script = (
        "import os, sys, time\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tools.sandbox import warm as sandbox_warm\n"
        "waiter = sandbox_warm.spawn(sys.argv[2])\n"
        "holder = os.fork()\n"
        "if holder == 0:\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(waiter.pid, holder, flush=True)\n"
        "time.sleep(60)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", script, REPO, kind], stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    holder = 0
    try:
        assert server.stdout is not None
        pid, holder = map(int, server.stdout.readline().split())

        def gone() -> bool:
            try:
                return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
            except OSError:
                return True

        server.kill()
        server.wait()
        assert wait_until(gone, 5), pid
    finally:
        server.kill()
        server.wait()
        if holder:
            os.kill(holder, 9)


@pytest.mark.parametrize(
    "root", [REPO, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), "/"]
)
def test_no_waiter_where_a_call_could_write_what_it_runs(tmp_path: Path, root: str) -> None:
    """A workspace or writable root holding the interpreter, its standard library or the
    launcher's folder: bubblewrap's calls spawn cold (a call could plant code that the
    next waiter, outside the sandbox, would run)."""
    ns = sandbox.bwrap.Namespaces("/usr/bin/bwrap")
    safe = sandbox.Confinement((tmp_path,), tmp_path, "none", namespaces=ns, launcher=False)
    assert safe.warm_form() == "bwrap"
    exposed = sandbox.Confinement((tmp_path, Path(root)), tmp_path, "none", namespaces=ns,
                                  launcher=False)  # fmt: skip
    assert exposed.warm_form() is None
