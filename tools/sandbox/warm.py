"""Warm spawns: a sandboxed call's first process, started ahead and already in its cgroups.

What a confined call paid on its path without this: moving its first process
into the call's cgroups (the kernel waits for an RCU grace period, ~8-14 ms here) and,
without namespaces, an interpreter start for the launcher (~17 ms) with its Landlock
through ``ctypes``. A **waiter** takes both off the path: after a call (and before the
next one, while nothing waits) the server starts one small process, its own direct child
(``posix_spawn``: a vfork, no copy of the server), in a session of its own, its stdin
``/dev/null``, its stdout and stderr one pipe the server keeps the other end of, and moves
it into a fresh call cgroup. It imports what it will need (the launcher and its seccomp
compiler, for the form without namespaces), then blocks reading one message on a pipe from
the server. A call hands it its command line, environment and folder; it then

- with namespaces (bubblewrap alone): sets the limits bubblewrap's sandbox inherits
  (``RLIMIT_FSIZE``, ``RLIMIT_DATA``: the process count is the cgroup's ``pids.max``),
  puts the compiled seccomp filter on a pipe at descriptor 3 and execs bubblewrap with
  ``--seccomp 3``: the same command line, mounts and filter as the cold form, without
  ``--info-fd``/``--block-fd`` (nothing to set from outside any more);
- without namespaces: runs the launcher's ``main`` in itself (already imported: Landlock,
  seccomp, the limits, ``--supervise``), then execs the command.

The server keeps being the parent of the call's first process, as with a cold spawn: it
sees its exit through a pidfd, stops its process group on timeout or cancel, and
bubblewrap's ``--die-with-parent`` ties it to the server. Promises kept:

- A waiter never runs anything but a whole message from the server: an end of file
  before one (the server gone, killed outright included: the kernel closes its end), a
  truncated or unreadable one, ends it with nothing run.
- It inherits no descriptor of the server's but the three and its message pipe (it
  closes the rest first thing; the server's are close-on-exec anyway).
- One call per waiter: after it, the cgroup is removed as before and a new waiter made.
- The server killed outright mid-call: bubblewrap dies with it (``--die-with-parent``), as
  a cold call's does, and the gate's watcher ends its sandbox (``bwrap.GATE``: the
  waiter's standard input is the gate's pipe; the server holds the other end until the
  call ends) (and before bubblewrap runs, the waiter gets a SIGKILL:
  ``PR_SET_PDEATHSIG``, set first thing, then the server checked to be its parent
  still); without namespaces the waiter, supervising the call, gets a SIGTERM
  (``PR_SET_PDEATHSIG``) and ends every process the command left, which the launcher
  started per call does not do.
- A waiter that died, could not be moved, or a message that does not fit its pipe: the
  call takes the cold path, unchanged.

Why a waiter per call rather than one long-lived "zygote" forking the calls' processes: the
zygote's children would be the server's grandchildren, so their exit status, the
``--die-with-parent`` tie and the end of the zygote itself would all need their own
channel and checks (``PR_SET_PDEATHSIG`` fires on the death of the forking *thread*). A
waiter keeps the cold spawn's process tree exactly; what it costs is one interpreter start
per call (~15-20 ms of CPU), paid after the previous call, where no one waits. ``clone3``
with ``CLONE_INTO_CGROUP`` would avoid the move too, but only on cgroup v2, and still
leaves the fallback's interpreter start.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import bwrap, landlock_exec
from .limits import POOL as CGROUPS
from .limits import CallGroup, Limits

LAUNCHER = Path(landlock_exec.__file__).resolve()
# The interpreter itself, not a venv's link to it: the launcher needs the standard library
# only, and skipping the venv's pyvenv.cfg lookup is a millisecond of every call.
INTERPRETER = os.path.realpath(sys.executable)

# bubblewrap reads the seccomp filter from this descriptor (the waiter puts it there).
SECCOMP_FD = 3
# The waiter: ``python -I -S -c WAITER FORM TOOLS_DIR SERVER_PID``; its message arrives on
# fd 3.
WAITER = r"""
import os, sys
os.closerange(4, 0x7FFFFFFF)
form = sys.argv[1]
import ctypes
# The server's end (killed outright included, PR_SET_PDEATHSIG): bubblewrap's waiter is
# killed (whatever it is doing: bubblewrap's --die-with-parent takes over once it runs); the
# launcher's stops the supervision it will do (a SIGTERM, on which it ends every process
# the command left). Then the server must still be the parent: it may have died before.
ctypes.CDLL(None).prctl(1, 15 if form == "launcher" else 9, 0, 0, 0)
if os.getppid() != int(sys.argv[3]):
    os._exit(0)
if form == "launcher":
    sys.path.append(sys.argv[2])
    import landlock_exec, seccomp_bpf, _signal, _socket
    compiled = {n: seccomp_bpf.program(no_sockets=n) for n in (False, True)}
    seccomp_bpf.program = lambda *, no_sockets, machine=None: compiled[no_sockets]
import json, resource
data = bytearray()
while True:
    try:
        chunk = os.read(3, 1 << 20)
    except InterruptedError:
        continue
    if not chunk:
        break
    data += chunk
os.close(3)
try:
    message = json.loads(data)
    if message["go"] is not True:
        raise ValueError(message)
    argv, env, cwd = message["argv"], message["env"], message["cwd"]
except Exception:
    os._exit(0)
def fail(text):
    print(message["marker"], text, file=sys.stderr, flush=True)
    os._exit(message["status"])
try:
    os.chdir(cwd)
except OSError as exc:
    fail(f"could not enter {cwd} ({exc.strerror}); the command did not run")
if form == "launcher":
    os.environ.clear()
    os.environ.update(env)
    sys.exit(landlock_exec.main(argv))
try:
    for which, value in message["rlimits"]:
        resource.setrlimit(which, (value, value))
    if message["seccomp"] is not None:
        read, write = os.pipe()
        os.write(write, bytes.fromhex(message["seccomp"]))
        os.close(write)
        if read != 3:
            os.dup2(read, 3)
            os.close(read)
        else:
            os.set_inheritable(3, True)
except OSError as exc:
    fail(f"could not set the sandbox's limits ({exc.strerror or exc}); the command did not run")
if not argv[0].startswith("/"):
    # No PATH search: a bare name would be a file of the call's folder (the workspace).
    fail(f"{argv[0]!r} is not an absolute path; the command did not run")
import _signal
# The command gets every signal as a cold spawn gives it: this interpreter ignores SIGPIPE
# and SIGXFSZ (kept across exec: `yes | head -1` would end with "Broken pipe").
for number in range(1, _signal.NSIG):
    try:
        _signal.signal(number, _signal.SIG_DFL)
    except (OSError, ValueError):
        pass
_signal.pthread_sigmask(_signal.SIG_SETMASK, ())
try:
    os.execve(argv[0], argv, env)
except OSError as exc:
    print(f"{argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
    os._exit(127)
"""

# The two forms a waiter can take: bubblewrap alone, or the launcher (no namespaces).
FORMS = ("bwrap", "launcher")


@dataclass(eq=False)
class Waiter:
    """One waiting process: its PID, a pidfd on it, the server's end of its message pipe
    and of its output pipe, and its form (``FORMS``)."""

    pid: int
    pidfd: int
    control: int
    output: int
    form: str
    # The server's end of the gate's pipe (bubblewrap's form: ``bwrap.GATE``, "go" written
    # at once: the limits are the waiter's own). Closed when the call ends: that ends every
    # process of its sandbox.
    life: int = -1
    # Reaped already (its PID may be another process's by now: never signalled again).
    reaped: bool = False
    # Handed its call and seen as the call's process (``tools/shell.py``): not discarded.
    adopted: bool = False

    def running(self) -> bool:
        """Still waiting (not exited, not killed); reaps it if it is gone."""
        if self.reaped:
            return False
        try:
            if self.pidfd >= 0:
                done = os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG) is not None
            else:
                done = os.waitpid(self.pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            done = True
        self.reaped = done
        return not done

    def start(self, message: bytes) -> bool:
        """Hand it the call: the whole message, then end of file. False (and nothing runs)
        if it does not fit the pipe at once or the waiter is gone."""
        try:
            room = fcntl.fcntl(self.control, fcntl.F_GETPIPE_SZ)
            if len(message) > room:
                return False
            os.set_blocking(self.control, False)
            written = os.write(self.control, message)
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.close(self.control)
            self.control = -1
        # A part only: the waiter reads unreadable JSON and exits, running nothing.
        return written == len(message)

    def discard(self) -> None:
        """End it unused (its end of file first: it exits on its own, running nothing).
        Signalled through its pidfd, and by PID only while not reaped: a reaped waiter's
        PID may have been given to another process meanwhile."""
        for fd in (self.control, self.output, self.life):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.control = self.output = self.life = -1
        if not self.reaped:
            with contextlib.suppress(OSError):
                if self.pidfd >= 0:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                    os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED)
                else:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
            self.reaped = True
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
        self.pidfd = -1


def spawn(form: str) -> Waiter:
    """Start one waiter of ``form`` (not yet in any cgroup). Bubblewrap's form has the
    gate's pipe for its standard input (``bwrap.GATE``), "go" in it already."""
    control_read, control_write = os.pipe()
    output_read, output_write = os.pipe()
    if form == "bwrap":
        devnull, life = os.pipe()
        os.write(life, bwrap.GO)
    else:
        devnull, life = os.open(os.devnull, os.O_RDONLY), -1
    try:
        # Room for a large environment in one write (the limit for unprivileged users).
        with contextlib.suppress(OSError):
            fcntl.fcntl(control_write, fcntl.F_SETPIPE_SZ, 1 << 20)
        pid = os.posix_spawn(
            INTERPRETER,
            [INTERPRETER, "-I", "-S", "-c", WAITER, form, str(LAUNCHER.parent), str(os.getpid())],
            {},
            file_actions=[
                (os.POSIX_SPAWN_DUP2, devnull, 0),
                (os.POSIX_SPAWN_DUP2, output_write, 1),
                (os.POSIX_SPAWN_DUP2, output_write, 2),
                (os.POSIX_SPAWN_DUP2, control_read, 3),
            ],
            setsid=True,
            # No signal ignored or blocked from the server's (the waiter is Python: it
            # ignores SIGPIPE and SIGXFSZ again itself, and resets all before its exec).
            setsigdef=signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP},
            setsigmask=(),
        )
    except BaseException:
        for fd in (control_write, output_read, life):
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in (control_read, output_write, devnull):
            os.close(fd)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        waiter = Waiter(pid, -1, control_write, output_read, form, life)
        waiter.discard()
        raise
    return Waiter(pid, pidfd, control_write, output_read, form, life)


def move(group: CallGroup, pid: int) -> bool:
    """Move ``pid`` into every folder of ``group``: all, or False (the waiter is not used)."""
    try:
        for path in group.procs_files():
            path.write_text(str(pid))
    except OSError:
        return False
    return True


def message(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    *,
    rlimits: Sequence[tuple[int, int]] = (),
    seccomp: bytes | None = None,
) -> bytes:
    """What a call hands its waiter."""
    return json.dumps({
        "go": True, "argv": list(argv), "env": env, "cwd": str(cwd),
        "rlimits": [list(pair) for pair in rlimits],
        "seccomp": seccomp.hex() if seccomp is not None else None,
        "marker": landlock_exec.FAILURE_MARKER, "status": landlock_exec.FAILURE_STATUS,
    }).encode()  # fmt: skip


class WarmPool:
    """One waiter per form and set of limits, in one of the call cgroups the cgroup pool
    keeps ready (``CallGroup.waiter``); made after a call, off its path."""

    def __init__(self) -> None:
        # Being made, by a task of the loop that will use it (a closed loop's never ends).
        self._making: dict[tuple[str, Limits], asyncio.Task[None]] = {}
        # Forms that cannot be made here (bubblewrap alone without a pids cgroup).
        self._broken: set[tuple[str, Limits]] = set()
        # Every waiter not yet used or discarded: all end with the server (close).
        self._alive: set[Waiter] = set()
        # Where no cgroup can be made at all: the launcher's waiters, in none.
        self._loose: dict[tuple[str, Limits], Waiter] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def claim(self, group: CallGroup | None, form: str | None, limits: Limits) -> Waiter | None:
        """The waiter in ``group`` (taken from the cgroup pool for this call; with no group,
        one in none) if it can run it, else None (the call spawns cold in that group; a
        waiter of another form, or one that died, is ended first: it runs nothing and
        leaves the group)."""
        held: object | None
        if group is None:
            held = self._loose.pop((form or "", _key(limits)), None)
        else:
            held, group.waiter = group.waiter, None
        if not isinstance(held, Waiter):  # none, or RESERVED (being moved in)
            return None
        waiter = held
        self._alive.discard(waiter)
        if waiter.form == form and waiter.running():
            return waiter
        waiter.discard()
        return None

    def prepare(self, form: str | None, limits: Limits) -> None:
        """Put a waiter of this form in a ready cgroup for these limits, in the background."""
        key = (form or "", _key(limits))
        if form is None or key in self._broken or self._closed:
            return
        waiting = (g.waiter for g in CGROUPS.ready(limits))
        if key in self._loose or any(isinstance(w, Waiter) and w.form == form for w in waiting):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        making = self._making.get(key)
        if making is not None and not making.done() and not making.get_loop().is_closed():
            return
        task = loop.create_task(self._make(form, key[1]))
        self._making[key] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _make(self, form: str, limits: Limits) -> None:
        key = (form, limits)
        waiter: Waiter | None = None
        group: CallGroup | None = None
        try:
            waiter = spawn(form)
            self._alive.add(waiter)
            # Reserved while it is moved in (no call may take it half-made).
            group = CGROUPS.lend(limits) or await asyncio.to_thread(CGROUPS.make_reserved, limits)
            if group is None and form == "launcher" and not self._closed:
                self._loose[key], waiter = waiter, None  # no cgroup here: none to be in
                return
            if group is None or (form == "bwrap" and not group.processes):
                # The process count must come from a cgroup: RLIMIT_NPROC set before
                # bubblewrap would count every process of the user.
                self._broken.add(key)
                return
            if self._closed or not await asyncio.to_thread(move, group, waiter.pid):
                return
            group.waiter, waiter = waiter, None
        except OSError:
            pass
        finally:
            # Also when its loop closed under it (the coroutine closed, no loop running).
            if group is not None:
                CGROUPS.put_back(group, limits)
            if waiter is not None:
                self._alive.discard(waiter)
                waiter.discard()
            making = self._making.get(key)
            if making is not None and (making.done() or making.get_loop().is_closed()
                                       or making is _current_task()):  # fmt: skip
                del self._making[key]

    def close(self) -> None:
        """The server's end: every waiter ends, running nothing."""
        self._closed = True
        for waiter in self._alive:
            waiter.discard()
        self._alive.clear()


def _current_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _key(limits: Limits) -> Limits:
    """A waiter depends on the cgroup's limits only (the rest comes with the message)."""
    return Limits(processes=limits.processes, file_size_mb=0, memory_mb=0,
                  call_memory_mb=limits.call_memory_mb)  # fmt: skip


POOL = WarmPool()
atexit.register(POOL.close)
