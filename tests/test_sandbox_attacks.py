"""Issue 20's findings, each tried again from inside a plain sandboxed call (default settings).

Every test here failed on the Landlock-only sandbox. They run on this machine's full
sandbox (bubblewrap namespaces, Landlock, seccomp); the ones whose promise also holds where
namespaces are refused run a second time there (``no_namespaces``: Landlock, seccomp and
the supervising launcher). README "What it does not cover" lists what the fallback gives up.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lsp_client import agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.net import pending_connections
from tests.support.procs import pids_with, unique_tag, until
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools import sandbox
from tools.sandbox import SandboxPolicy
from tools.sandbox.limits import Limits
from tools.shell import bash_tool

ROOT = os.geteuid() == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def bash(
    root: Path, command: str, policy: SandboxPolicy | None = None, **extra: object
) -> str:
    runtime = ToolRuntime(ToolRegistry([bash_tool(Workspace(root), policy=policy)]))
    return await runtime.execute("bash", json.dumps({"command": command, **extra}))


def python(code: str) -> str:
    """A bash command running ``code`` with python3 (quoted for bash)."""
    return "python3 -c " + "'" + code.replace("'", "'\\''") + "'"


@pytest.fixture(params=["namespaces", "fallback"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Both ways the sandbox is built: the full one, and without namespaces."""
    if request.param == "fallback":
        request.getfixturevalue("no_namespaces")
        assert sandbox.support().namespaces is None
    else:
        assert sandbox.support().namespaces is not None, sandbox.support().namespace_problem
    yield request.param


# -- 1, 2: the network, by every way Landlock's TCP rules did not cover ---------------------


MPTCP = 262
MSG_FASTOPEN = 0x20000000


async def test_mptcp_connect_reaches_nothing(
    workspace: Path, listener: socket.socket, mode: str
) -> None:
    port = listener.getsockname()[1]
    code = (
        f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, {MPTCP}); "
        f"s.connect(('127.0.0.1', {port})); s.sendall(b'secret'); print('sent')"
    )
    result = await bash(workspace, python(code))
    assert is_error(result) and "sent" not in result, result
    assert pending_connections(listener) == 0


async def test_tcp_fast_open_sendto_reaches_nothing(
    workspace: Path, listener: socket.socket, mode: str
) -> None:
    port = listener.getsockname()[1]
    code = (
        "import socket; s = socket.socket(); "
        f"s.sendto(b'secret', {MSG_FASTOPEN}, ('127.0.0.1', {port})); print('sent')"
    )
    result = await bash(workspace, python(code))
    assert is_error(result) and "sent" not in result, result
    assert pending_connections(listener) == 0


async def test_listen_without_bind_opens_no_port_outside(workspace: Path, mode: str) -> None:
    port_file, done = workspace / "port", workspace / "done"
    code = (
        "import socket, time, os; s = socket.socket(); s.listen(); "
        "open('port.tmp', 'w').write(str(s.getsockname()[1])); os.rename('port.tmp', 'port')\n"
        "for _ in range(500):\n    os.path.exists('done') and exit(0); time.sleep(0.02)"
    )
    call = asyncio.ensure_future(bash(workspace, python(code)))
    await until(lambda: port_file.exists() or call.done(), within=20)
    if port_file.exists():  # listening inside its own namespace: invisible from here
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", int(port_file.read_text())), timeout=5)
    done.touch()
    result = await call
    if mode == "fallback":
        assert is_error(result) and not port_file.exists(), result  # no socket at all


async def test_udp_reaches_nothing_outside(workspace: Path, mode: str) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    port = receiver.getsockname()[1]
    try:
        code = (
            "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.sendto(b'secret', ('127.0.0.1', {port})); print('sent')"
        )
        await bash(workspace, python(code))
        # Loopback delivers a datagram before sendto returns: none has come.
        with pytest.raises(BlockingIOError):
            receiver.recv(64)
    finally:
        receiver.close()


async def test_dns_lookups_fail(workspace: Path, mode: str) -> None:
    code = "import socket; print(socket.getaddrinfo('pypi.org', 443))"
    result = await bash(workspace, python(code))
    assert is_error(result), result
    assert "gaierror" in result or "Operation not permitted" in result, result


# -- 3, 4: metadata and devices outside the workspace ----------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text("precious\n")
    path.chmod(0o600)
    return path


async def test_metadata_of_a_file_outside_cannot_change(workspace: Path, victim: Path) -> None:
    before = victim.stat()
    commands = [
        f"chmod 4777 {victim}",
        f"touch -d 2001-01-01 {victim}",
        python(f"import os; os.setxattr({str(victim)!r}, 'user.planted', b'1')"),
    ]
    if ROOT:
        commands.append(f"chown nobody {victim}")
    for command in commands:
        result = await bash(workspace, command)
        assert is_error(result) and "Read-only file system" in result, (command, result)
    after = victim.stat()
    assert stat.S_IMODE(after.st_mode) == 0o600
    assert (after.st_uid, after.st_mtime_ns) == (before.st_uid, before.st_mtime_ns)
    assert os.listxattr(victim) == []


@pytest.mark.skipif(not ROOT, reason="device nodes need root (CAP_MKNOD)")
async def test_no_device_node_can_be_made(workspace: Path, mode: str) -> None:
    result = await bash(workspace, "mknod blk b 7 0 || mknod chr c 1 1")
    assert is_error(result) and "Operation not permitted" in result, result
    assert list(workspace.iterdir()) == []


# -- 5: what git obeys ------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture
def repo(workspace: Path, tmp_path: Path) -> Path:
    """A repository with a submodule, a linked worktree and a nested repository."""
    upstream = tmp_path / "upstream"
    git("init", "-q", str(upstream), cwd=tmp_path)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "u",
        cwd=upstream)  # fmt: skip
    git("init", "-q", ".", cwd=workspace)
    git("submodule", "add", "-q", str(upstream), "sub", cwd=workspace)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "first", cwd=workspace)
    git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=workspace)
    git("init", "-q", "nested", cwd=workspace)
    return workspace


PLANT = "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> "


async def test_what_git_obeys_is_read_only_and_commits_still_work(repo: Path) -> None:
    targets = [
        ".git/config",
        ".git/modules/sub/config",
        ".git/worktrees/linked/config.worktree",
        "nested/.git/config",
        "sub/.git",  # the submodule checkout's pointer to its git dir
    ]
    before = {t: (repo / t).read_bytes() if (repo / t).exists() else None for t in targets}
    for target in targets:
        result = await bash(repo, PLANT + target)
        assert is_error(result) and "Read-only file system" in result, (target, result)
    for hook in (".git/hooks/pre-commit", ".git/modules/sub/hooks/post-checkout"):
        result = await bash(repo, f"printf '#!/bin/sh\\n' > {hook} && chmod +x {hook}")
        assert is_error(result), result
        assert not (repo / hook).exists()
    # A same-size rewrite with its time put back: refused too, not just unseen.
    result = await bash(repo, "sed -i 's/bare = false/bare = fals0/' .git/config")
    assert is_error(result)
    assert {t: (repo / t).read_bytes() if (repo / t).exists() else None for t in targets} == before
    (repo / "a.txt").write_text("a\n")
    committed = await bash(
        repo,
        "git add a.txt && git -c user.name=t -c user.email=t@e commit -qm second "
        "&& git log --oneline",
    )
    assert not is_error(committed) and "second" in committed, committed


async def test_what_cannot_be_made_read_only_is_reported(repo: Path, mode: str) -> None:
    # A commondir that did not exist (nothing to mount over) would point git elsewhere.
    result = await bash(repo, "echo ../elsewhere > .git/commondir")
    assert not is_error(result)
    assert ".git/commondir" in result and "outside the sandbox" in result, result


async def test_a_grant_makes_git_configuration_writable(repo: Path) -> None:
    tool = bash_tool(Workspace(repo))
    from tooling.context import ToolContext

    arguments = {
        "command": "git config core.pager cat",
        "escalation": "git-config",
        "justification": "set a pager",
    }
    result = await tool.handler(arguments, ToolContext())
    assert not is_error(result), result
    assert "pager = cat" in (repo / ".git/config").read_text()
    assert ".git/config" in result  # still reported


# -- 6: survivors ----------------------------------------------------------------------------


def survivors_command(tag: str, then: str = "") -> str:
    return (
        f"set -m; (exec -a {tag} sleep 300) & "
        f"setsid bash -c 'exec -a {tag} sleep 300' & "
        f"nohup bash -c '(exec -a {tag} sleep 300) &' >/dev/null 2>&1; {then} echo started"
    )


async def test_nothing_outlives_the_call(workspace: Path, mode: str) -> None:
    tag = unique_tag()
    result = await bash(workspace, survivors_command(tag))
    assert "started" in result
    await until(lambda: not pids_with(tag), within=5)


async def test_nothing_outlives_a_cancelled_call(workspace: Path, mode: str) -> None:
    tag = unique_tag()
    call = asyncio.ensure_future(bash(workspace, survivors_command(tag, then="sleep 60;")))
    await until(lambda: len(pids_with(tag)) >= 3, within=20)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: not pids_with(tag), within=5)


SERVER_SCRIPT = (
    "import asyncio, json, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from tooling.registry import ToolRegistry\n"
    "from tooling.runtime import ToolRuntime\n"
    "from tooling.workspace import Workspace\n"
    "from tools.shell import bash_tool\n"
    "rt = ToolRuntime(ToolRegistry([bash_tool(Workspace(sys.argv[2]))]))\n"
    "asyncio.run(rt.execute('bash', json.dumps({'command': sys.argv[3]})))\n"
)


def kill_server_when(workspace: Path, seen: int) -> None:
    """A server making one call, killed outright once ``seen`` processes carry the call's
    tag (the server itself counts one), then nothing tagged may be left."""
    from tests.support.procs import wait_until

    tag = unique_tag()
    repo = str(Path(__file__).resolve().parents[1])
    command = survivors_command(tag, then="sleep 60;")
    server = subprocess.Popen(
        [os.sys.executable, "-c", SERVER_SCRIPT, repo, str(workspace), command]
    )
    try:
        assert wait_until(lambda: len(pids_with(tag)) >= seen, 20)
        server.kill()
        server.wait()
        assert wait_until(lambda: not pids_with(tag), 10), pids_with(tag)
    finally:
        server.kill()
        server.wait()


def test_nothing_outlives_the_server(tmp_path: Path, mode: str) -> None:
    """The server killed outright mid-call: bubblewrap dies with it, and its namespace
    (without namespaces: the launcher, told by the kernel, ends what the call started)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    kill_server_when(workspace, seen=5)  # the command and its three survivors running


def test_nothing_outlives_a_server_killed_during_the_sandbox_set_up(
    tmp_path: Path, mode: str
) -> None:
    """Killed as soon as the sandbox's first process exists: bubblewrap's PID 1 ties itself
    to bubblewrap only at the end of its set-up (and a launcher was tied to nothing), so a
    server gone before then left the command to start later, on its own, without the
    limits the server had not set yet (the CI lost that race). Several times: the moment
    the kill lands varies."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for _ in range(4):
        # The server and bubblewrap's two (its set-up under way), or the launcher starting.
        kill_server_when(workspace, seen=3 if mode == "namespaces" else 2)


def test_the_gate_runs_nothing_without_the_servers_go(tmp_path: Path) -> None:
    """A sandbox whose server ends before saying "go" (its limits not set yet) exits
    with nothing run: the pipe's end of file is not a go, as bubblewrap's --block-fd is."""
    if sandbox.support().namespaces is None:
        pytest.skip(sandbox.support().namespace_problem)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    confinement = sandbox.confinement(SandboxPolicy(), workspace, tmp_path)
    assert confinement is not None and not confinement.launcher
    marker = workspace / "ran"
    with confinement.launch(["/bin/sh", "-c", f"touch {marker}"]) as launch:
        assert launch.life is not None and launch.info_fd is not None  # limits to set first
        proc = subprocess.Popen(launch.argv, cwd=workspace, stdin=launch.stdin,
                                pass_fds=launch.pass_fds)  # fmt: skip
        launch.close()
        # The server's end before any "go" (its end of --info-fd kept: bubblewrap writing
        # there would die of SIGPIPE, sparing the gate the test).
        for fd in (launch.life, launch.block_fd):
            assert fd is not None
            os.close(fd)
        launch.life = launch.block_fd = None
        assert proc.wait(timeout=30) == 125
    assert not marker.exists()


async def test_the_gates_watcher_is_no_child_of_the_command(workspace: Path, mode: str) -> None:
    """A program that waits for all its children (an init, ``os.wait()`` in a loop) does not
    wait for the gate's watcher: it is PID 1's child, not the program's."""
    result = await bash(workspace, python("import os; os.wait()"), timeout_seconds=20)
    assert "ChildProcessError" in result and "timed out" not in result, result


def test_the_gate_refuses_to_run_outside_its_own_pid_namespace(tmp_path: Path) -> None:
    """Run as any process but the namespace's second, the gate exits before its watcher
    exists (whose ``kill -9 -1`` would reach every process it may signal). Tried inside a
    PID namespace of its own all the same, as its third process: a broken check kills
    nothing of the test's."""
    from tools.sandbox import bwrap

    ns = sandbox.support().namespaces
    if ns is None:
        pytest.skip(sandbox.support().namespace_problem)
    marker = tmp_path / "ran"
    inner = f'printf "go\\n" | /bin/sh -c "$0" sh /bin/touch {marker}; echo "gate: $?"'
    done = subprocess.run(
        [ns.bwrap, "--unshare-user", "--unshare-pid", "--dev-bind", "/", "/", "--proc", "/proc",
         "--", "/bin/sh", "-c", inner, bwrap.GATE],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert "gate: 125" in done.stdout, (done.stdout, done.stderr)
    assert not marker.exists()


# -- limits -----------------------------------------------------------------------------------


async def test_the_process_limit_stops_a_fork_bomb(workspace: Path, mode: str) -> None:
    policy = SandboxPolicy(limits=Limits(processes=40))
    result = await bash(workspace, "for i in $(seq 200); do sleep 5 & done; wait", policy)
    assert is_error(result)
    assert "process limit (40 processes)" in result and "maxProcesses" in result, result


async def test_the_file_size_limit_stops_a_huge_write(workspace: Path, mode: str) -> None:
    policy = SandboxPolicy(limits=Limits(file_size_mb=1))
    result = await bash(workspace, "head -c 3M /dev/zero > big", policy)
    assert is_error(result) and "file-size limit (1 MB per file)" in result, result
    assert (workspace / "big").stat().st_size <= 1024 * 1024


async def test_the_memory_limit_stops_a_large_allocation(workspace: Path, mode: str) -> None:
    policy = SandboxPolicy(limits=Limits(memory_mb=200))
    result = await bash(workspace, python("b = bytearray(400 * 1024 * 1024)"), policy)
    assert is_error(result) and "memory limit (200 MB per process)" in result, result
    # ...and an ordinary program still runs under it.
    assert await bash(workspace, python("print(sum(range(10**6)))"), policy) == "499999500000\n"


# -- network to named hosts only, through the proxy -----------------------------------------


@pytest.fixture
def web() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on the host's loopback; yields its port and the paths it served."""
    import http.server
    import threading

    served: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.append(self.path)
            body = b"hello from the host\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], served
    server.shutdown()
    server.server_close()


async def test_a_granted_host_is_reached_through_the_proxy_and_no_other(
    workspace: Path, web: tuple[int, list[str]]
) -> None:
    port, served = web
    policy = SandboxPolicy(allowed_domains=("localhost",))
    result = await bash(
        workspace, f"curl -sS --max-time 20 http://localhost:{port}/granted", policy
    )
    assert result == "hello from the host\n", result
    refused = await bash(workspace, f"curl -sS --fail http://127.0.0.1:{port}/refused", policy)
    assert is_error(refused) and "The proxy refused 127.0.0.1" in refused, refused
    assert served == ["/granted"]
    # Python's own client and pip's follow the same variables.
    code = f"import urllib.request as u; print(u.urlopen('http://localhost:{port}/py').read())"
    assert "hello from the host" in await bash(workspace, python(code), policy)
    assert served == ["/granted", "/py"]


def loopback_host_name() -> str:
    """This machine's host name, when it resolves to loopback only (else the test skips)."""
    name = socket.gethostname().lower()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, 80)}
    except OSError:
        addresses = set()
    if (
        name == "localhost"
        or not addresses
        or not all(a.startswith("127.") or a == "::1" for a in addresses)
    ):
        pytest.skip("this machine's host name does not resolve to loopback only")
    return name


async def test_a_granted_name_that_resolves_to_loopback_is_refused(
    workspace: Path, web: tuple[int, list[str]]
) -> None:
    """DNS rebinding (issue 33): this machine's host name resolves to 127.0.0.x; granted
    by name, it reaches nothing on loopback (granting the address itself would)."""
    name = loopback_host_name()
    port, served = web
    policy = SandboxPolicy(allowed_domains=(name,))
    refused = await bash(workspace, f"curl -sS --fail http://{name}:{port}/rebound", policy)
    assert is_error(refused), refused
    assert f"The proxy refused {name}:{port} (it resolves to internal addresses only" in refused
    assert served == []


async def test_through_the_server_a_rebound_granted_name_is_refused_and_the_model_told(
    model: ScriptedModel, workspace: Path, web: tuple[int, list[str]]
) -> None:
    """The same through agent/ask: allowedDomains names the host, the call's curl is
    refused, the model is told why, and the loopback server sees nothing."""
    name = loopback_host_name()
    port, served = web
    command = f"curl -sS --fail http://{name}:{port}/rebound"
    model.reply(tool_calls=[tool_call("bash", {"command": command}, id="fetch")])
    model.reply("done")
    settings = {"allowedDomains": [name]}
    async with agent_session(server_env(model.base_url), [workspace], settings=settings) as client:
        await ask(client, prompt="fetch it")
    [result] = [m["content"] for m in model.bodies[1]["messages"] if m.get("tool_call_id")]
    assert f"The proxy refused {name}:{port} (it resolves to internal addresses only" in result
    assert served == []


async def test_a_host_granted_to_one_call_only_for_that_call(
    workspace: Path, web: tuple[int, list[str]]
) -> None:
    port, served = web
    tool = bash_tool(Workspace(workspace))
    from tooling.context import ToolContext

    arguments = {
        "command": f"curl -sS http://localhost:{port}/once",
        "escalation": "network",
        "network_hosts": ["localhost"],
        "justification": "fetch",
    }
    permission = tool.permission(arguments)  # type: ignore[misc]
    assert permission.title == f"Run with network access to localhost only: {arguments['command']}"
    assert permission.grant_scope == {"network_hosts": ["localhost"]}
    assert await tool.handler(arguments, ToolContext()) == "hello from the host\n"
    later = await bash(workspace, f"curl -sS http://localhost:{port}/later")
    assert is_error(later) and served == ["/once"]


async def test_a_writable_root_that_does_not_exist_breaks_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    policy = SandboxPolicy(writable_roots=(tmp_path / "not-yet",))
    assert await bash(workspace, "echo ok", policy) == "ok\n"


def test_cgroups_left_by_a_server_that_is_gone_are_removed() -> None:
    from tools.sandbox import limits as sandbox_limits

    base = sandbox_limits.pids_base()
    if base is None:
        pytest.skip("no pids cgroup can be made here (not root, no delegation)")
    gone = subprocess.Popen(["true"])
    gone.wait()  # a PID that no longer runs
    stale, ours = base / f"agent-lsp-{gone.pid}-dead", base / f"agent-lsp-{os.getpid()}-live"
    stale.mkdir()
    ours.mkdir()
    try:
        sandbox_limits.remove_stale(base)
        assert not stale.exists() and ours.exists()
    finally:
        for folder in (stale, ours):
            if folder.exists():
                folder.rmdir()
