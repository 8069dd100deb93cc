"""The ``bash`` tool's OS sandbox: the policy, what this system supports, one call's confinement.

Layers, each closing what the one below cannot (as Codex, sandbox-runtime and Flatpak do):

1. **Namespaces** (bubblewrap, ``tools/sandbox/bwrap.py``): new user, PID, IPC, UTS and network
   namespaces per call; ``/`` read-only, the writable folders bound read-write, a private
   read-only ``/tmp``, agent-lsp's own files covered by unreadable mounts, what git obeys
   read-only and git dirs pinned (bound onto themselves: a mount point cannot be renamed);
   the call's processes end with it. No network but loopback unless granted: all of it, or
   named hosts only through a per-call proxy outside (``tools/sandbox/proxy.py``).
2. **Landlock** (Linux >= 5.13; ABI >= 4 for TCP), applied by the launcher
   (``tools/sandbox/landlock_exec.py``, an interpreter) in the new process before it execs
   ``bash``: writes only beneath the writable folders, no reading of agent-lsp's files, no
   TCP unless granted. Only where it carries a promise the namespaces do not: without
   namespaces, in the host's network namespace (none of its own, or a call granted the
   network: the host's abstract sockets), and for the proxy's calls (whose bridge the
   launcher starts inside). Otherwise bubblewrap runs ``bash`` itself.
3. **seccomp** (``tools/sandbox/seccomp_bpf.py``): no ptrace, keyrings, bpf, io_uring, new
   namespaces or mounts, device nodes, TIOCSTI; without a network namespace, no socket
   but ``AF_UNIX``. Compiled here and passed to ``bwrap --seccomp FD``, or loaded by the
   launcher.
4. **Limits** (``tools/sandbox/limits.py``): processes, file size, memory per process and
   per call; set by the server on bubblewrap's sandbox before it starts ``bash``
   (:meth:`Launch.join`), or by the launcher.

A call's first process is usually started ahead, already in its cgroups
(``tools/warm.py``): it sets the limits and execs bubblewrap, or does the
launcher's work itself; the same layers, off the call's path (:meth:`Confinement.warm_form`).

The server itself is never confined. Where namespaces are refused (no bubblewrap, a
container, a distribution that restricts user namespaces) the launcher applies Landlock,
seccomp and the limits alone and supervises the call's processes itself; what that gives
up is :func:`weakened`, told to the user once and shown by ``agent/sandboxStatus``. With
neither namespaces nor Landlock there is no sandbox: every call asks first.

Policies (settings ``sandbox``, ``writableRoots``, ``network``, ``allowedDomains``):
``workspace-write`` (default: write only in the workspace, the ``writableRoots`` and the
call's private temp dir), ``read-only`` (the temp dir only), ``off`` (no confinement).
In both confined modes the policy's ``hidden_paths`` (agent-lsp's own configuration, key
files and state) are not readable, unless they lie in the workspace or a writable root.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import functools
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooling.display import escape_consent
from tooling.permissions import CallPermission

from . import bwrap, git_guard, landlock_exec, seccomp_bpf, warm
from .bwrap import Namespaces
from .limits import CallGroup, Limits, memory_base, pids_base

MODES: tuple[str, ...] = ("workspace-write", "read-only", "off")
# TCP rules arrived in ABI 4 (Linux 6.7); below it Landlock alone cannot refuse TCP.
MIN_ABI = 4
# The launcher and the interpreter that runs it (declared beside the waiters, which start
# them ahead of a call; this module imports that one, not the other way round).
LAUNCHER = warm.LAUNCHER
INTERPRETER = warm.INTERPRETER
# ``python -c LAUNCH TOOLS_DIR OPTION... -- PROGRAM``: the launcher module from that folder
# (appended to sys.path, after the standard library, so no module name can be shadowed).
LAUNCH = (
    "import sys; sys.path.append(sys.argv.pop(1)); import landlock_exec; "
    "sys.exit(landlock_exec.main(sys.argv[1:]))"
)
# Inside a network namespace of its own, the domain proxy's bridge listens here.
PROXY_PORT = 3128


@dataclass(frozen=True)
class SandboxPolicy:
    mode: str = "workspace-write"
    # Extra folders a toolchain writes to (caches); absolute, as the settings gave them.
    writable_roots: tuple[Path, ...] = ()
    network: bool = False
    # What no confined command may read (files or folders, absolute; the server's own).
    hidden_paths: tuple[Path, ...] = ()
    # Hosts every call may reach through the domain proxy (``pypi.org``, ``*.npmjs.org``).
    allowed_domains: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    # With mode "off": ask the user before each command all the same (a session in ACP's
    # "full-access" mode: unconfined, yet every command is a deliberate yes).
    ask_unconfined: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, got {self.mode!r}")


@dataclass(frozen=True)
class SandboxSupport:
    """What this system can enforce."""

    abi: int  # Landlock's ABI, 0 for none
    namespaces: Namespaces | None = None
    # Why the full namespace sandbox is not in force ("" when it is).
    namespace_problem: str = ""
    seccomp: bool = False

    @property
    def available(self) -> bool:
        return self.namespaces is not None or self.abi >= MIN_ABI

    def reason(self) -> str:
        """Why there is no sandbox at all ("" when there is one)."""
        if self.available:
            return ""
        if not sys.platform.startswith("linux"):
            return f"the bash sandbox needs Linux, which {sys.platform} is not"
        landlock = (
            "this Linux kernel offers no Landlock (disabled, or older than 5.13)"
            if self.abi == 0
            else f"this kernel offers Landlock ABI {self.abi}; it needs {MIN_ABI} (Linux 6.7)"
        )
        return f"no namespaces ({self.namespace_problem}) and {landlock}"


@functools.cache
def support() -> SandboxSupport:
    """Probed once per process: one Landlock syscall, and a real sandboxed ``true`` per
    bubblewrap form tried (about 25 ms for the first, which usually works)."""
    abi = landlock_exec.abi_version()
    seccomp = sys.platform.startswith("linux") and seccomp_bpf.supported()
    namespaces, problem = _probe_namespaces(abi, seccomp)
    return SandboxSupport(abi, namespaces, problem, seccomp)


def _probe_namespaces(abi: int, seccomp: bool) -> tuple[Namespaces | None, str]:
    if not sys.platform.startswith("linux"):
        return None, f"{sys.platform} has no Linux namespaces"
    found = bwrap.find()
    if found is None:
        override = os.environ.get(bwrap.ENV_OVERRIDE)
        if override == "none":
            return None, f"namespaces turned off ({bwrap.ENV_OVERRIDE}=none)"
        if override:
            return None, (
                f"{bwrap.ENV_OVERRIDE}={override}: not an absolute path, nor a "
                "program on PATH outside the folders the agent writes"
            )
        return None, "bubblewrap (bwrap) is not installed"
    problem = ""
    with tempfile.TemporaryDirectory(prefix="agent-lsp-probe-") as folder:
        root = Path(folder)
        for ns in bwrap.variants(found):
            if not ns.net and abi < MIN_ABI and not seccomp:
                continue  # nothing would close the network
            direct = ns.net  # as confinement() decides for a call without the proxy
            # No limits: set from outside by a call (Launch.join), which the probe is not.
            trial = Confinement((root,), root, "none", namespaces=ns,
                                landlock=not direct and abi >= 1, seccomp=seccomp,
                                limits=Limits(0, 0, 0, 0), launcher=not direct)  # fmt: skip
            try:
                with trial.launch([shutil.which("true") or "/bin/true"]) as launch:
                    done = subprocess.run(
                        launch.argv, cwd=root, stdin=launch.stdin,
                        capture_output=True, timeout=15, pass_fds=launch.pass_fds,
                    )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                return None, problem or f"{found} could not run ({exc})"
            if done.returncode == 0:
                return ns, problem
            said = done.stderr.decode(errors="replace").strip().splitlines()
            problem = problem or (said[-1] if said else f"{found} exited {done.returncode}")
    return None, problem


def _waiter_writable(roots: Sequence[Path]) -> bool:
    """Whether a call could write what a waiter runs unconfined (the interpreter, its
    standard library, the launcher's folder): then bubblewrap's calls spawn cold, where
    nothing of it runs outside the sandbox. (Without namespaces the launcher runs before
    its confinement anyway, warm or cold: README, "does not cover".)"""
    folders = [os.path.realpath(root).rstrip("/") + "/" for root in roots]
    return any((path + "/").startswith(folder) for path in _waiter_code() for folder in folders)


@functools.cache
def _waiter_code() -> frozenset[str]:
    return frozenset(os.path.realpath(p) for p in (INTERPRETER, sys.base_prefix, LAUNCHER.parent))


@dataclass(frozen=True)
class Confinement:
    """What one confined call may write to and reach, and how it is enforced."""

    roots: tuple[Path, ...]  # the workspace and writableRoots (none when read-only)
    tmp: Path  # the call's private temp dir
    network: str  # "none", "proxy" (allowed hosts only) or "all"
    readable: tuple[Path, ...] = ()  # read as a whole: the workspace when read-only
    hidden: tuple[Path, ...] = ()  # not readable (unless in a root or readable folder)
    protected: tuple[Path, ...] = ()  # inside a root, read-only: what git obeys
    # Inside a root, bound onto themselves so that no command can rename them: git dirs
    # and the folders leading to them (git_guard.pinned_folders).
    pinned: tuple[Path, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # with network "proxy"
    namespaces: Namespaces | None = None
    landlock: bool = True
    seccomp: bool = True
    limits: Limits = field(default_factory=Limits)
    # Our launcher (an interpreter) inside, for what bubblewrap cannot do: Landlock where it
    # carries a promise (no namespaces; no network namespace), the proxy's bridge. Without
    # it (:meth:`launch`), bubblewrap runs the program itself: seccomp on a descriptor.
    launcher: bool = True

    def _hidden_outside(self) -> list[Path]:
        """The hidden paths outside every folder the call may write or read as a whole."""
        folders = [os.path.realpath(f) for f in (*self.roots, *self.readable)]
        return [
            path
            for path in self.hidden
            if not any(is_within(os.path.realpath(path), folder) for folder in folders)
        ]

    @property
    def proxy_socket(self) -> Path:
        return self.tmp / ".agent-lsp-proxy.sock"

    def argv(self, program: Sequence[str]) -> list[str]:
        """The command line of a long-lived server whose standard input is its protocol (a
        language server): through the launcher, as :meth:`launch_sync`, but with no gate
        (``bwrap.GATE`` needs the standard input). Not needed: such a server ends at its
        input's end of file, which the server's end (however abrupt) closes."""
        through = self if self.launcher else dataclasses.replace(self, launcher=True)
        return through._argv(program)

    def launch_sync(self, program: Sequence[str]) -> Launch:
        """A spawn of ``program`` for a thread, with nothing to set from outside: through
        the launcher (an interpreter start, ~20 ms), which sets the seccomp filter and the
        limits itself (:meth:`launch`, faster, needs the event loop's :meth:`Launch.join`).
        Inside bubblewrap behind the gate all the same, "go" written already."""
        through = self if self.launcher else dataclasses.replace(self, launcher=True)
        return Launch.gated(through._argv(program, gate=True), (), ready=True,
                            namespaced=self.namespaces is not None)  # fmt: skip

    def launch(self, program: Sequence[str], *, group: CallGroup | None = None) -> Launch:
        """How to spawn ``program`` confined, in ``group`` (the call's cgroups): a command
        line, its standard input and the descriptors it inherits (close them after the
        spawn: ``with``).

        Without the launcher: ``bwrap [mounts] --seccomp FD --info-fd I --block-fd B --
        /bin/sh -c GATE sh program``: the filter compiled here, passed on a pipe; while
        bubblewrap builds its mounts the server sets the limits of the sandbox's first
        process and moves it into the call's cgroups, then lets it start the program
        (:meth:`Launch.join`, then the gate's "go": ``bwrap.GATE``). No ``preexec_fn`` (it
        would make the server fork rather than vfork, ~10 ms here), no ``prlimit`` inside.
        """
        procs = tuple(group.procs_files()) if group is not None else ()
        counted = group is not None and group.processes
        if self.launcher:
            argv = self._argv(program, procs=procs, counted=counted, seccomp_fd=None, gate=True)
            return Launch.gated(argv, (), ready=True, namespaced=self.namespaces is not None)
        # RLIMIT_NPROC counts per user namespace: set on the sandbox's first process, already
        # in its new one, it counts the call's processes only (and binds root there too).
        limits = self.limits.rlimits(nproc=not counted)
        own_net = self.namespaces is not None and self.namespaces.net
        fd = _seccomp_fd(self.network != "all" and not own_net) if self.seccomp else None
        passed = () if fd is None else (fd,)
        if not limits and (group is None or not group.folders):
            argv = self._argv(program, seccomp_fd=fd, gate=True)
            return Launch.gated(argv, passed, ready=True, namespaced=True)
        # Joining a cgroup waits for the kernel (~12 ms: an RCU grace period): beside
        # bubblewrap's own work, not after it.
        info_read, info_write = os.pipe()
        block_read, block_write = os.pipe()
        argv = self._argv(program, counted=counted, seccomp_fd=fd,
                          sync_fds=(info_write, block_read), gate=True)  # fmt: skip
        launch = Launch.gated(argv, (*passed, info_write, block_read), ready=False,
                              namespaced=True)  # fmt: skip
        launch.info_fd, launch.block_fd = info_read, block_write
        launch.group, launch.limits = group, limits
        return launch

    def warm_form(self) -> str | None:
        """Which waiter (``tools/warm.py``) can run this call, or None (cold): bubblewrap
        alone, counted by a pids cgroup (the waiter's); or the launcher without namespaces."""
        if self.namespaces is None:
            return "launcher" if self.launcher else None
        if self.launcher or _waiter_writable(self.roots):
            return None
        return "bwrap"

    def warm_message(self, program: Sequence[str], env: dict[str, str], cwd: Path) -> bytes:
        """What a waiter of :meth:`warm_form` is handed for ``program``: bubblewrap's command
        line (the filter on descriptor 3, the limits set by the waiter before it execs
        bubblewrap; no ``--info-fd``, nothing set from outside), or the launcher's options
        (run in the waiter, already imported). Its cgroups are the waiter's, joined ahead."""
        if self.namespaces is None:
            argv = self._argv(program, counted=True)
            # [INTERPRETER, -I, -S, -c, LAUNCH, TOOLS_DIR, options..., --, program...]
            return warm.message(argv[6:], env, cwd)
        own_net = self.namespaces.net
        seccomp = _seccomp_program(self.network != "all" and not own_net) if self.seccomp else None
        fd = warm.SECCOMP_FD if seccomp is not None else None
        # The waiter's standard input is the gate's pipe (``warm.spawn``), "go" in it already:
        # the limits are the waiter's own, set before it execs bubblewrap.
        argv = self._argv(program, counted=True, seccomp_fd=fd, gate=True)
        rlimits = self.limits.rlimits(nproc=False)
        return warm.message(argv, env, cwd, rlimits=rlimits, seccomp=seccomp)

    def _argv(
        self,
        program: Sequence[str],
        *,
        procs: Sequence[Path] = (),
        counted: bool = False,
        seccomp_fd: int | None = None,
        sync_fds: tuple[int, int] | None = None,
        gate: bool = False,
    ) -> list[str]:
        """The command line; ``gate``: inside bubblewrap, behind ``bwrap.GATE`` (its standard
        input must then be the server's pipe: :meth:`Launch.gated`, ``warm.spawn``)."""
        argv: list[str] = []
        if self.launcher:
            # -I: no cwd (the workspace) or PYTHON* variables; -S: no site-packages. Imported,
            # not run as a script: a script is compiled on every run (~15 ms for this one), a
            # module is loaded from the bytecode the server's own import left in __pycache__.
            argv = [INTERPRETER, "-I", "-S", "-c", LAUNCH, str(LAUNCHER.parent)]
            if self.landlock:
                for root in (*self.roots, self.tmp):
                    argv += ["--write", str(root)]
                for folder in self.readable:
                    argv += ["--read", str(folder)]
                for path in self.hidden:
                    argv += ["--hide", str(path)]
                if self.network != "all":
                    argv.append("--no-network")
                if self.network == "proxy":
                    argv += ["--connect-port", str(PROXY_PORT)]
            else:
                argv.append("--no-landlock")
            own_net = self.namespaces is not None and self.namespaces.net
            if self.seccomp:
                closed = self.network != "all" and not own_net
                argv += ["--seccomp", "no-sockets" if closed else "sockets"]
            argv += self.limits.launcher_args(nproc=not counted and self.namespaces is not None)
            for path in procs:
                argv += ["--cgroup", str(path)]
            if self.network == "proxy":
                argv += ["--bridge", f"{self.proxy_socket}:{PROXY_PORT}"]
            if self.namespaces is None:
                # Ended with the server (PR_SET_PDEATHSIG), which must still be its parent.
                argv += ["--supervise", "--parent", str(os.getpid())]
            argv.append("--")
        argv += program
        if self.namespaces is not None:
            launcher = (LAUNCHER.parent, Path(INTERPRETER).parent) if self.launcher else ()
            outer = bwrap.arguments(
                self.namespaces,
                share_net=self.network == "all",
                writable=(*self.roots, self.tmp),
                readable=(*self.readable, *launcher),
                # Landlock hides them keeping their names; without it they are covered by
                # mounts of an unreadable file or folder (reads fail with EACCES all the
                # same, which tells the model why).
                hidden=() if self.landlock else self._hidden_outside(),
                protected=self.protected,
                pinned=self.pinned,
                cwd=(*self.roots, *self.readable, self.tmp)[0],
                seccomp_fd=seccomp_fd,
                covers=_covers(),
                cgroup_procs=procs,
                sync_fds=sync_fds,
            )
            argv = [*outer, *(bwrap.gated(argv) if gate else argv)]
        return argv


@dataclass
class Launch:
    """One confined spawn: ``subprocess`` arguments; the descriptors the child inherits,
    closed here once it is spawned (:meth:`close`); and, with cgroups and bubblewrap alone,
    the server's ends of the pipes that :meth:`join` moves the sandbox into them with."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    info_fd: int | None = None  # bubblewrap writes its sandbox's PID here (--info-fd)
    block_fd: int | None = None  # which it waits on before the program starts (--block-fd)
    group: CallGroup | None = None
    limits: tuple[tuple[int, int], ...] = ()  # rlimits of that process (and so the call's)
    # Set by join when a limit could not be set: the program did not run.
    failure: str | None = None
    # The spawn's standard input: inside bubblewrap, the read end of the gate's pipe
    # (``bwrap.GATE``), closed here with the rest once spawned; else /dev/null.
    stdin: int = subprocess.DEVNULL
    # The server's end of that pipe: "go" is written to it once the limits are in place;
    # closing it (the call's end, the server's) ends every process of the sandbox.
    life: int | None = None

    @classmethod
    def gated(
        cls, argv: list[str], passed: tuple[int, ...], *, ready: bool, namespaced: bool
    ) -> Launch:
        """A spawn of ``argv``; inside bubblewrap behind the gate, its pipe made here ("go"
        in it already if ``ready``: nothing to set from outside first)."""
        if not namespaced:
            return cls(argv, passed)
        read, write = os.pipe()
        launch = cls(argv, passed, stdin=read, life=write)
        if ready:
            launch.go()
        return launch

    def go(self) -> None:
        """Let the gate start the program (the pipe is empty: one short write never blocks;
        a sandbox killed from outside meanwhile has nothing left to start)."""
        if self.life is not None:
            with contextlib.suppress(OSError):
                os.write(self.life, bwrap.GO)

    def close(self) -> None:
        for fd in (*self.pass_fds, self.stdin):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pass_fds = ()
        self.stdin = subprocess.DEVNULL

    async def join(self) -> None:
        """After the spawn: set the limits of bubblewrap's sandbox (its PID 1, before it
        starts the program) and move it into the call's cgroups, then let it go on. A limit
        that cannot be set kills it (:attr:`failure`: the program never runs); a cgroup it
        cannot join costs that limit, not the call. If the call is cancelled meanwhile, its
        process group is killed anyway."""
        info, block, self.block_fd = self.info_fd, self.block_fd, None
        if info is None or block is None:
            return
        pid: int | None = None
        done = False
        try:
            pid = await _read_sandbox_pid(info)
            if pid is not None and self.group is not None and self.group.folders:
                # Moving into a cgroup waits for the kernel: not on the event loop.
                self.failure = await asyncio.to_thread(self._settle, pid)
            elif pid is not None:
                self.failure = self._settle(pid)  # a few prlimit(2): microseconds
            done = True
            if pid is not None and self.failure is None:
                self.go()
        finally:
            if not done and pid is not None:
                # Cancelled or timed out before the limits were surely in place (a thread
                # may still be setting them): the program must never start without them.
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                self.failure = self.failure or "the call ended before its limits were set"
            if done or pid is not None:
                with contextlib.suppress(OSError):
                    os.close(block)  # EOF: bubblewrap goes on (or finds its sandbox gone)
            else:
                # Nothing known to kill yet: bubblewrap keeps waiting on it until the caller
                # has killed the call's process group, and abandon closes it then.
                self.block_fd = block
        # info_fd stays open until the call ends (abandon): bubblewrap may still be writing
        # the rest of its JSON, and a closed pipe would kill it (SIGPIPE).

    def _settle(self, pid: int) -> str | None:
        try:
            for which, value in self.limits:
                resource.prlimit(pid, which, (value, value))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            return f"could not set the sandbox's limits ({exc.strerror or exc})"
        if self.group is not None:
            self.group.move(pid)
        return None

    def abandon(self) -> None:
        """The call ended, or its spawn failed: close everything (the gate's pipe last: its
        end kills whatever of the sandbox is left)."""
        self.close()
        for fd in (self.info_fd, self.block_fd, self.life):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.info_fd = self.block_fd = self.life = None

    def __enter__(self) -> Launch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()


_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)\s*[,}\n]')


async def _read_sandbox_pid(fd: int) -> int | None:
    """:func:`_sandbox_pid` on the event loop (no thread hop: it comes within milliseconds)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int | None] = loop.create_future()
    seen = bytearray()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        seen.extend(chunk)
        found = _CHILD_PID.search(seen)
        if (found or not chunk) and not done.done():
            done.set_result(int(found.group(1)) if found else None)

    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)


def _sandbox_pid(fd: int) -> int | None:
    """The PID bubblewrap reports on ``--info-fd`` (its JSON's first field). Read as it
    comes, not to EOF: the sandbox keeps a copy of the pipe open while it waits."""
    seen = b""
    while not (found := _CHILD_PID.search(seen)):
        chunk = os.read(fd, 4096)
        if not chunk:
            return None  # bubblewrap failed before it started the sandbox
        seen += chunk
    return int(found.group(1))


@functools.cache
def _seccomp_program(no_sockets: bool) -> bytes:
    return seccomp_bpf.program(no_sockets=no_sockets)


def _seccomp_fd(no_sockets: bool) -> int:
    """A pipe's read end holding the compiled filter, for ``bwrap --seccomp FD`` (which
    reads it whole and applies it just before exec, to bubblewrap's PID 1 as well)."""
    program = _seccomp_program(no_sockets)
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: within any pipe's buffer
    finally:
        os.close(write)
    return read


_COVERS: list[tuple[str, str]] = []


def _remove_covers(folder: str, hidden_dir: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(hidden_dir, 0o700)  # else not even its owner may remove it
    shutil.rmtree(folder, ignore_errors=True)


def _covers() -> tuple[str, str]:
    """An unreadable empty folder and file (mode 000) that bubblewrap mounts read-only over
    each hidden folder and file: reading, listing or changing them fails. Made once per
    server, in a private folder removed at its end."""
    if not _COVERS:
        folder = tempfile.mkdtemp(prefix="agent-lsp-covers-")
        hidden_dir, hidden_file = os.path.join(folder, "folder"), os.path.join(folder, "file")
        atexit.register(_remove_covers, folder, hidden_dir)
        os.mkdir(hidden_dir, 0)
        os.close(os.open(hidden_file, os.O_CREAT | os.O_WRONLY, 0))
        os.chmod(hidden_dir, 0)
        os.chmod(hidden_file, 0)
        _COVERS.append((hidden_dir, hidden_file))
    return _COVERS[0]


def confinement(
    policy: SandboxPolicy,
    workspace_root: Path,
    call_tmp: Path,
    *,
    network: bool | None = None,
    hosts: Sequence[str] = (),
    git_writable: bool = False,
    found: git_guard.GitDirs | None = None,
) -> Confinement | None:
    """The confinement of one call, or ``None`` when it runs unconfined.

    ``network`` overrides the policy's for this call (a granted escalation); ``hosts``
    are hosts granted to this call on top of ``allowedDomains``; ``git_writable`` (a
    granted escalation) leaves what git obeys writable; ``found``: the workspace's git
    dirs as just discovered (``git_guard``), so they are not looked for twice.
    """
    state = support()
    if policy.mode == "off" or not state.available:
        return None
    writes = policy.mode == "workspace-write"
    roots = (workspace_root, *policy.writable_roots) if writes else ()
    ns = state.namespaces
    allowed = tuple(dict.fromkeys((*policy.allowed_domains, *hosts)))
    if network if network is not None else policy.network:
        net = "all"
    elif allowed and ns is not None and ns.net:
        net = "proxy"
    else:
        net = "none"
    # bubblewrap alone (no interpreter inside) where its mounts and own network namespace
    # give every promise; the launcher where Landlock carries one (the host's network
    # namespace: its abstract sockets, TCP) or the proxy's bridge must listen inside.
    launcher = ns is None or not ns.net or net != "none"
    hidden = policy.hidden_paths
    if not launcher:
        # A hidden path that does not exist yet, in a folder too large to rebuild: Landlock.
        folders = [os.path.realpath(f) for f in (*roots, *(() if writes else (workspace_root,)))]
        outside = [p for p in hidden if not any(is_within(os.path.realpath(p), f) for f in folders)]
        launcher = not bwrap.can_hide(outside)
    protected: tuple[Path, ...] = ()
    pinned: tuple[Path, ...] = ()
    if ns is not None and roots and not git_writable:
        for root in roots:
            root_found = found if root == workspace_root else None
            root_found = root_found if root_found is not None else git_guard.git_dirs(root)
            protected += tuple(git_guard.protected_paths(root, found=root_found))
            pinned += tuple(git_guard.pinned_folders(root, found=root_found))
        # A folder inside a read-only one is a mount point already (and hidden by it).
        covered = {str(path) for path in protected}
        pinned = tuple(
            path
            for path in pinned
            if not any(str(parent) in covered for parent in (path, *path.parents))
        )
    return Confinement(
        roots=roots,
        tmp=call_tmp,
        network=net,
        readable=() if writes else (workspace_root,),
        hidden=policy.hidden_paths,
        protected=protected,
        pinned=pinned,
        allowed_hosts=allowed if net == "proxy" else (),
        namespaces=ns,
        landlock=launcher and state.abi >= (1 if ns is not None else MIN_ABI),
        seccomp=state.seccomp,
        limits=policy.limits,
        launcher=launcher,
    )


def weakened(state: SandboxSupport) -> list[str]:
    """The promises that do not hold in full on this system (empty: all of them do)."""
    if state.namespaces is not None:
        lost = state.namespaces.weakened()
        if state.abi < 1 and not state.namespaces.net:
            lost.append("no Landlock: the namespaces alone confine files")
        return lost + _no_call_memory()
    if not state.available:
        return ["no sandbox at all: every bash call asks first and runs with your rights"]
    lost = [
        "metadata of files outside the workspace can be changed (chmod, chown, timestamps, "
        "extended attributes): Landlock has no right for these",
        "what git obeys (.git/config, hooks, submodule configs) is writable and .git can be "
        "moved aside: a change is reported after the call, not prevented",
        "no private /tmp: other programs' files in /tmp are readable",
        "network is all or nothing: granting named hosts only needs a network namespace",
        "processes a command leaves behind are ended by the launcher, which a kill of the "
        "launcher itself would skip",
        "the environment of the processes that started the server is readable "
        "(/proc/PID/environ): an API key exported there (a shell, a `uv run` wrapper) can be "
        "read by a command; the server hides only its own copy",
    ]
    if not state.seccomp:
        lost.append("no seccomp filter: ptrace, io_uring, UDP and other sockets are open")
    if pids_base() is None:
        lost.append("no process limit (no cgroup and no user namespace to count in)")
    return lost + _no_call_memory()


def _no_call_memory() -> list[str]:
    if memory_base() is not None:
        return []
    return ["no memory limit for a call as a whole (no memory cgroup the server may make): "
            "only each process's own"]  # fmt: skip


@contextlib.asynccontextmanager
async def private_tmp() -> AsyncIterator[Path]:
    """A temp dir of the call's own (mode 0700), removed when the call ends."""
    path = Path(tempfile.mkdtemp(prefix="agent-lsp-bash-"))
    try:
        yield path
    finally:
        try:
            os.rmdir(path)  # the usual case: the command left nothing there
        except OSError:
            # Off the event loop: a command may leave a large tree behind.
            await asyncio.shield(asyncio.to_thread(shutil.rmtree, path, ignore_errors=True))


def describe(policy: SandboxPolicy, workspace_root: Path) -> dict[str, Any]:
    """The sandbox as ``agent/listTools`` (the bash tool's annotations) and
    ``agent/sandboxStatus`` show it: the policy, and the layers in force on this system."""
    state = support()
    enforced = policy.mode != "off" and state.available
    ns = state.namespaces if enforced else None
    access = (
        "all"
        if policy.network or not enforced
        else "allowedDomains"
        if policy.allowed_domains and ns is not None and ns.net
        else "none"
    )
    layers = {
        "namespaces": ns is not None,
        "networkNamespace": ns is not None and ns.net,
        # Inside bubblewrap only where the call is in the host's network namespace (none of
        # its own, or the whole network granted) or goes through the proxy (see confinement).
        "landlock": enforced
        and (
            state.abi >= MIN_ABI
            if ns is None
            else state.abi >= 1 and (not ns.net or access != "none")
        ),
        "seccomp": enforced and state.seccomp,
        "processLimit": (
            "cgroup"
            if pids_base() is not None
            else "rlimit"
            if ns is not None and os.geteuid() != 0
            else None
        )
        if enforced and policy.limits.processes
        else None,
        "callMemoryLimit": "cgroup"
        if enforced and policy.limits.call_memory_mb and memory_base() is not None
        else None,
    }
    described: dict[str, Any] = {
        "mode": policy.mode,
        "enforced": enforced,
        "network": access == "all",
        "networkAccess": access,
        "allowedDomains": list(policy.allowed_domains),
        "writableRoots": (
            [str(workspace_root), *map(str, policy.writable_roots)]
            if policy.mode == "workspace-write"
            else []
        ),
        "landlockAbi": state.abi,
        "hiddenPaths": [str(p) for p in hidden_outside(policy, workspace_root)] if enforced else [],
        "layers": layers,
        "limits": {
            "processes": policy.limits.processes,
            "fileSizeMB": policy.limits.file_size_mb,
            "memoryMB": policy.limits.memory_mb,
            "callMemoryMB": policy.limits.call_memory_mb,
        },
        "bwrap": ns.bwrap if ns is not None else None,
        # Why the full form is not in force: namespaces refused, or a weaker form of them.
        "fallback": (state.namespace_problem or None) if enforced else None,
        "weakened": weakened(state) if enforced else [],
    }
    if policy.mode != "off" and not state.available:
        described["reason"] = state.reason()
    return described


def hidden_outside(policy: SandboxPolicy, workspace_root: Path) -> list[Path]:
    """The hidden paths a confined command cannot read: those outside the folders it may
    write (and the workspace), which stay readable as a whole. Resolved as the launcher
    resolves them, at the time of asking (a few ``lstat``)."""
    folders = [os.path.realpath(f) for f in (workspace_root, *policy.writable_roots)]
    return [
        path
        for path in policy.hidden_paths
        if not any(is_within(os.path.realpath(path), folder) for folder in folders)
    ]


def is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def prompt_text(policy: SandboxPolicy, confined: bool) -> str:
    """A few sentences for the tool description: what the model may expect."""
    if not confined:
        return "It runs with the user's full rights."
    where = (
        "the workspace folder, $TMPDIR"
        if policy.mode == "workspace-write"
        else "$TMPDIR only (the workspace is read-only)"
    )
    if policy.mode == "workspace-write" and policy.writable_roots:
        where += ", " + ", ".join(map(str, policy.writable_roots))
    ns = support().namespaces
    if policy.network:
        net = ""
    elif policy.allowed_domains and ns is not None and ns.net:
        hosts = ", ".join(policy.allowed_domains)
        net = (
            f"; it has no network except HTTP(S) to {hosts} through a proxy set in "
            "HTTP_PROXY/HTTPS_PROXY/ALL_PROXY (other hosts are refused)"
        )
    else:
        net = "; it has no network at all (no TCP, UDP or DNS)"
    own = (
        " except agent-lsp's own configuration and state (the user's API key, saved conversations)"
        if policy.hidden_paths
        else ""
    )
    git = (
        " .git/config, .git/hooks and other files git obeys are read-only (commits work)."
        if ns is not None and policy.mode == "workspace-write"
        else ""
    )
    limits = policy.limits
    return (
        f"It runs in a sandbox: it can read any file{own} but write only in {where} "
        f"($TMPDIR is a private temporary folder removed after the call){net}.{git} "
        "Processes it leaves running end with the call. Caches outside those folders "
        "(uv, pip, npm, $XDG_CACHE_HOME) start empty in $TMPDIR on each call: an installed "
        "environment works offline, a download needs the network."
        + (f" At most {limits.processes} processes." if limits.processes else "")
    )


# Signs in a failed command's output that the sandbox refused something: EACCES/EPERM/EROFS
# as shells, coreutils, Python, Node, git, uv print them, and the ways a closed network
# shows (curl's refused connect, no route, no name resolution, the proxy's refusal).
_DENIAL = re.compile(
    r"Permission denied|Operation not permitted|Read-only file system|\bEACCES\b|\bEPERM\b"
    r"|\bEROFS\b|Errno 1[3]?\b|Errno 30\b|os error 13\b|Couldn't connect to server"
    r"|Failed to connect|Network is unreachable|Could not resolve host"
    r"|Temporary failure in name resolution|Name or service not known|not in the allowed domains",
    re.IGNORECASE,
)


def explain_denial(
    output: str, confinement: Confinement, refused_hosts: Sequence[str] = ()
) -> str | None:
    """A note for the model when a failed confined command looks refused by the sandbox."""
    if not _DENIAL.search(output) and not refused_hosts:
        return None
    # Named in full, or by its last two parts (a relative path, ~ spelled out).
    named = [
        str(path)
        for path in confinement.hidden
        if str(path) in output or f"{path.parent.name}/{path.name}" in output
    ]
    if named:
        return (
            f"Note: {', '.join(named)} {'is' if len(named) == 1 else 'are'} agent-lsp's own "
            "configuration or state (the user's API key, saved conversations): agent-lsp's "
            "sandbox never lets a command read it, on purpose, and retrying will fail "
            "again. Do not try other ways to read it and do not ask for an escalation to "
            "read it; if the task needs a setting from it, ask the user."
        )
    places = "".join(f"{root}, " for root in confinement.roots)
    network = {
        "none": " and no network at all (no TCP, UDP or DNS)",
        "proxy": f" and network only to {', '.join(confinement.allowed_hosts)} through its proxy",
        "all": "",
    }[confinement.network]
    own = ", and no reading of agent-lsp's own configuration and state" * bool(confinement.hidden)
    git = ", and .git/config, .git/hooks and what else git obeys are read-only" * bool(
        confinement.protected
    )
    hosts = (
        f" The proxy refused {', '.join(refused_hosts)}: to reach it, call bash again with "
        f'escalation "network", "network_hosts" naming it, and a justification.'
        if refused_hosts
        else ""
    )
    return (
        "Note: this command ran in agent-lsp's sandbox, which allows writes only in "
        f"{places}$TMPDIR and the usual devices{network}{own}{git}; 'permission denied', "
        "'read-only file system' or a failed connection above is most likely the sandbox, "
        "and retrying the same way will fail again. Change the command to stay inside those "
        "places (e.g. point caches or outputs at $TMPDIR or the workspace). Only if the task "
        'truly needs more, call bash again with escalation "network" (optionally with '
        '"network_hosts": only those hosts), "git-config" or "unsandboxed" and a one-line '
        f"justification: the user is asked and may decline.{hosts}"
    )


def call_permission(
    policy: SandboxPolicy,
    command: str,
    escalation: str | None,
    justification: str | None,
    hosts: Sequence[str] = (),
) -> CallPermission:
    """What one bash call would ask the user, and whether it must (``required``).

    The command is shown whole and escaped (``tooling.display``): a newline shows as ⏎
    and an escape sequence as ``\\e[...``, so a terminal cannot hide a part of what runs.
    """
    shown = escape_consent(command)
    why = justification or ""
    state = support()
    if policy.mode != "off" and not state.available:
        lacking = f"There is no sandbox on this system ({state.reason()})"
        reason = f"{lacking}: the command would run with your full rights." + (
            f" The agent says: {why}" if why else ""
        )
        return CallPermission(f"Run without a sandbox: {shown}", required=True, reason=reason)
    if policy.mode == "off":
        if policy.ask_unconfined:
            reason = "The command would run outside the sandbox, with your full rights." + (
                f" The agent says: {why}" if why else ""
            )
            return CallPermission(f"Run without a sandbox: {shown}", required=True, reason=reason)
        return CallPermission(f"Run: {shown}", reason=why)
    if escalation == "unsandboxed":
        return CallPermission(
            f"Run outside the sandbox: {shown}", required=True, reason=why, escalation=True
        )
    if escalation == "git-config":
        return CallPermission(
            f"Run with git configuration and hooks writable: {shown}",
            required=True,
            reason=why,
            escalation=True,
        )
    if escalation == "network" and not policy.network:
        ns = state.namespaces
        if hosts and ns is not None and ns.net:
            named = ", ".join(hosts)
            if all(any(host_allowed(h, p) for p in policy.allowed_domains) for h in hosts):
                return CallPermission(f"Run: {shown}", reason=why)
            # "Always" covers these hosts for any later command: only the proxy's way out.
            return CallPermission(
                f"Run with network access to {named} only: {shown}",
                required=True,
                reason=why,
                escalation=True,
                grant_scope={"network_hosts": sorted(hosts)},
                grant_title=f"Network access to {named} for any command, through the proxy",
            )
        return CallPermission(
            f"Run with network access: {shown}", required=True, reason=why, escalation=True
        )
    return CallPermission(f"Run: {shown}", reason=why)


def host_allowed(host: str, pattern: str) -> bool:
    from .proxy import host_matches

    return host_matches(host, pattern)


def is_launch_failure(code: int | None, output: str) -> bool:
    """Whether the launcher refused to run the command (the sandbox could not be applied)."""
    return code == landlock_exec.FAILURE_STATUS and output.startswith(landlock_exec.FAILURE_MARKER)
