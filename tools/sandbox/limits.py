"""Resource limits of one sandboxed call: processes, file size, memory.

- **Processes** (default 1,024 tasks, threads included): a cgroup ``pids.max`` where the
  server may create one (root, or a delegated cgroup), which counts exactly the call's
  tasks; else ``RLIMIT_NPROC`` inside a user namespace (the count is per namespace there,
  so only the call's own tasks count). ``RLIMIT_NPROC`` is not used without a user
  namespace, where it would count every process of the user, and it never binds root.
- **File size** (default 8,192 MB per file written): ``RLIMIT_FSIZE``; past it a write
  fails with ``EFBIG`` and the writer gets ``SIGXFSZ``.
- **Memory** (default 8,192 MB per process): ``RLIMIT_DATA``, which counts what a process
  allocates (heap and private writable mappings) but not address space it only reserves,
  so runtimes that reserve large ranges up front (the JVM, V8, Go) still start; an
  allocation past it fails (``MemoryError``, ``Cannot allocate memory``).

- **Memory of the whole call** (default 8,192 MB): a cgroup memory limit (``memory.max``,
  or ``memory.limit_in_bytes`` on cgroup v1) where the server may create one, counting every
  process of the call together (1,024 processes of 8 GB each would otherwise be allowed);
  past it the kernel's OOM killer ends a process of the call (``SIGKILL``).

The cgroups are made ahead of the calls (:class:`CgroupPool`, two per set of limits) and
removed after them off the call's path. A call's first process is usually in them before
the call: a waiting process the server moved there meanwhile (``tools/sandbox/warm.py``,
:attr:`CallGroup.waiter`). Else the server moves bubblewrap's sandbox into them while
bubblewrap builds its mounts (it waits before starting the program), or the launcher
joins them first thing; so everything the command starts is counted. With bubblewrap
alone the server sets the rlimits of the sandbox's first process (``prlimit(2)``) in that
same moment: no interpreter or other program runs inside the sandbox for them.

``0`` turns a limit off. What the kernel says when one is hit is recognised in the output
(:func:`hit`), so the model and the user are told which limit, and which setting raises it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import resource
from dataclasses import dataclass, field
from pathlib import Path

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    processes: int = 1024
    file_size_mb: int = 8192
    memory_mb: int = 8192
    call_memory_mb: int = 8192

    def rlimits(self, *, nproc: bool) -> tuple[tuple[int, int], ...]:
        """``(resource, value)`` for ``setrlimit`` before exec, each no higher than the
        server's own hard limit (which an unprivileged process cannot raise)."""
        wanted = [
            (resource.RLIMIT_NPROC, self.processes if nproc else 0),
            (resource.RLIMIT_FSIZE, self.file_size_mb * MB),
            (resource.RLIMIT_DATA, self.memory_mb * MB),
        ]
        limits = []
        for which, value in wanted:
            if value:
                _, hard = resource.getrlimit(which)
                infinite = hard == resource.RLIM_INFINITY
                limits.append((which, value if infinite else min(value, hard)))
        return tuple(limits)

    def launcher_args(self, *, nproc: bool) -> list[str]:
        """The launcher's options; ``nproc``: use RLIMIT_NPROC for the process limit."""
        argv: list[str] = []
        if nproc and self.processes:
            argv += ["--limit-processes", str(self.processes)]
        if self.file_size_mb:
            argv += ["--limit-file-size", str(self.file_size_mb * MB)]
        if self.memory_mb:
            argv += ["--limit-memory", str(self.memory_mb * MB)]
        return argv


# The editor setting of each limit.
SETTINGS = {
    "processes": "maxProcesses",
    "file_size_mb": "maxFileSizeMB",
    "memory_mb": "maxMemoryMB",
    "call_memory_mb": "maxCallMemoryMB",
}


def hit(limits: Limits, output: str, cgroup_hits: frozenset[str] = frozenset()) -> str | None:
    """A note for a call (its result text) that looks stopped by one of the limits;
    ``cgroup_hits``: what the call's cgroups counted (:meth:`CallGroup.hits`)."""
    if limits.call_memory_mb and "memory" in cgroup_hits:
        what = f"memory limit for the whole call ({limits.call_memory_mb:,} MB)"
        setting = "call_memory_mb"
    elif limits.file_size_mb and _FILE_TOO_LARGE.search(output):
        what, setting = f"file-size limit ({limits.file_size_mb:,} MB per file)", "file_size_mb"
    elif limits.processes and ("processes" in cgroup_hits or _FORK_FAILED.search(output)):
        what, setting = f"process limit ({limits.processes:,} processes)", "processes"
    elif limits.memory_mb and _NO_MEMORY.search(output):
        what, setting = f"memory limit ({limits.memory_mb:,} MB per process)", "memory_mb"
    else:
        return None
    return (
        f"Note: this command hit the sandbox's {what}, so it was stopped or failed. If the "
        f"task truly needs more, tell the user: the setting {SETTINGS[setting]} raises it."
    )


# Killed by SIGXFSZ directly, or through bubblewrap (128 + 25), or a writer that caught it.
_FILE_TOO_LARGE = re.compile(r"\ASIGXFSZ|killed by SIGXFSZ|exit code 153\b|File too large|EFBIG")
_FORK_FAILED = re.compile(r"fork: (retry: )?Resource temporarily unavailable|BlockingIOError")
_NO_MEMORY = re.compile(r"Cannot allocate memory|MemoryError|out of memory", re.IGNORECASE)


# -- the call's cgroups ----------------------------------------------------------------------

# A call's cgroup is named PREFIX + the server's PID + "-" + a counter.
PREFIX = "agent-lsp-"
# Prepared cgroups kept per set of limits: a call takes one, the next is made meanwhile.
POOL_SIZE = 2


def _cgroup_base(controller: str) -> Path | None:
    """A cgroup of ``controller`` ("pids", "memory") this process may create children in."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    limit_file = {"pids": "pids.max", "memory": "memory.max"}[controller]
    for line in mounts:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], after[-1].split(",")
        mount_point = fields[4]
        if fstype == "cgroup" and controller in options:
            marker = f":{controller}:"
            path = next((c.split(":", 2)[2] for c in own if marker in c), None)
        elif fstype == "cgroup2":
            path = next((c.split(":", 2)[2] for c in own if c.startswith("0::")), None)
        else:
            continue
        if path is None:
            continue
        base = Path(mount_point + path.rstrip("/"))
        usable = fstype == "cgroup" or (base / limit_file).exists() or _v2_has(base, controller)
        if usable and os.access(base, os.W_OK):
            return base
    return None


def _v2_has(base: Path, controller: str) -> bool:
    try:
        return controller in (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


_BASES: dict[str, Path | None] = {}


def cgroup_base(controller: str) -> Path | None:
    """Looked up once per controller; the first lookup removes what gone servers left."""
    if controller not in _BASES:
        _BASES[controller] = base = _cgroup_base(controller)
        if base is not None:
            remove_stale(base)
    return _BASES[controller]


def pids_base() -> Path | None:
    return cgroup_base("pids")


def memory_base() -> Path | None:
    return cgroup_base("memory")


def remove_stale(base: Path) -> None:
    """Remove the call cgroups of servers that are gone (killed mid-call, or a removal
    that gave up): ``agent-lsp-PID-*`` whose PID no longer runs. Only empty ones go (rmdir)."""
    try:
        names = [entry.name for entry in os.scandir(base) if entry.name.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # that server still runs
        except ProcessLookupError:
            pass
        except OSError:
            continue
        with contextlib.suppress(OSError):
            (base / name).rmdir()


# A ready group a waiter is being moved into (:meth:`CgroupPool.lend`): no call takes it.
RESERVED = object()


@dataclass
class CallGroup:
    """One call's cgroups: one folder per hierarchy (cgroup v1 has pids and memory apart,
    v2 one folder for both), each with its limit written."""

    folders: list[Path] = field(default_factory=list)
    processes: bool = False  # pids.max is set in one of them
    memory: bool = False  # the memory limit is set in one of them
    # A process already in it, waiting to run the next call (``tools/sandbox/warm.py``).
    waiter: object | None = None

    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files the call's first process writes ``0`` to (joins)."""
        return [folder / "cgroup.procs" for folder in self.folders]

    def move(self, pid: int) -> None:
        """Move process ``pid`` (not yet forked the call's others) into every folder.
        A failure costs the limit, not the call."""
        for path in self.procs_files():
            with contextlib.suppress(OSError):
                path.write_text(str(pid))

    def hits(self) -> frozenset[str]:
        """Which limits the call reached: "processes" (a fork refused), "memory" (a process
        killed by the OOM killer)."""
        found = set()
        for folder in self.folders:
            if self.processes and _counter(folder / "pids.events", "max"):
                found.add("processes")
            if self.memory and (
                _counter(folder / "memory.events", "oom_kill")
                or _counter(folder / "memory.oom_control", "oom_kill")
            ):
                found.add("memory")
        return frozenset(found)

    def remove(self) -> bool:
        """Remove the folders; False while a process of the call is still being reaped."""
        for folder in list(self.folders):
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                return False
            self.folders.remove(folder)
        return True


def _counter(path: Path, name: str) -> bool:
    """Whether ``name N`` in a cgroup's events file has N > 0."""
    try:
        words = path.read_text().split()
    except OSError:
        return False
    return name in words and words[words.index(name) + 1] != "0"


def make_group(limits: Limits, name: str) -> CallGroup | None:
    """The cgroups of one call with its limits, or None where none can be made."""
    group = CallGroup()
    wanted = []
    if limits.processes and pids_base() is not None:
        wanted.append(("pids", pids_base(), {"pids.max": str(limits.processes)}))
    if limits.call_memory_mb and memory_base() is not None:
        total = str(limits.call_memory_mb * MB)
        wanted.append(("memory", memory_base(), {
            "memory.max": total, "memory.limit_in_bytes": total}))  # fmt: skip
    for controller, base, files in wanted:
        folder = base / name  # type: ignore[operator]
        if folder not in group.folders:
            try:
                folder.mkdir()
            except OSError:
                continue
            group.folders.append(folder)
        for file, value in files.items():
            with contextlib.suppress(OSError):
                (folder / file).write_text(value)
                setattr(group, "processes" if controller == "pids" else "memory", True)
                break
    if not group.folders:
        return None
    return group


class CgroupPool:
    """Call cgroups made ahead: taking one is a list pop; the next is made, and a used one
    removed, in a task after the call (:meth:`give_back`), off the path the user waits on."""

    def __init__(self, size: int = POOL_SIZE) -> None:
        self.size = size
        self._ready: dict[Limits, list[CallGroup]] = {}
        self._count = 0
        self._tasks: set[asyncio.Task[None]] = set()
        # Used, not removed yet (their processes being reaped, or their loop gone).
        self._retiring: list[CallGroup] = []

    def _name(self) -> str:
        self._count += 1
        return f"{PREFIX}{os.getpid()}-{self._count}"

    def take(self, limits: Limits, form: str | None = None) -> CallGroup | None:
        """A prepared group for these limits (made now if none is ready: the first call):
        one with a process of ``form`` waiting in it first, then one with none."""
        ready = self._ready.get(_key(limits), [])
        free = [g for g in ready if g.waiter is not RESERVED]
        if free:
            group = next(
                (g for g in free if form and getattr(g.waiter, "form", None) == form),
                next((g for g in free if g.waiter is None), free[-1]),
            )
            ready.remove(group)
            return group
        return self.make(limits)

    def make(self, limits: Limits) -> CallGroup | None:
        """A new group for these limits, or None where none can be made."""
        if pids_base() is None and memory_base() is None:
            return None
        return make_group(_key(limits), self._name())

    def ready(self, limits: Limits) -> list[CallGroup]:
        return list(self._ready.get(_key(limits), ()))

    def lend(self, limits: Limits) -> CallGroup | None:
        """A ready group with no process waiting in it, reserved (no call takes it) until
        :meth:`put_back`: a waiter is moved in meanwhile. It stays in the pool (and is
        removed with it), even if the one moving a waiter in never comes back."""
        for group in self._ready.get(_key(limits), []):
            if group.waiter is None:
                group.waiter = RESERVED
                return group
        return None

    def make_reserved(self, limits: Limits) -> CallGroup | None:
        """:meth:`make`, the new group in the pool at once, reserved as by :meth:`lend` (in
        the thread that makes it: a caller cancelled meanwhile loses nothing)."""
        group = self.make(limits)
        if group is not None:
            group.waiter = RESERVED
            self._ready.setdefault(_key(limits), []).append(group)
        return group

    def put_back(self, group: CallGroup, limits: Limits) -> None:
        """Ready again: with the waiter moved in, or none (the reservation ended)."""
        if group.waiter is RESERVED:
            group.waiter = None
        ready = self._ready.setdefault(_key(limits), [])
        if group not in ready:
            ready.append(group)

    def give_back(self, group: CallGroup | None, limits: Limits) -> None:
        """After a call: remove its group and make the next ones, in the background."""
        if group is not None:
            self._retiring.append(group)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._after(group, _key(limits)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _after(self, group: CallGroup | None, key: Limits) -> None:
        # In a thread: removing a cgroup may wait for the kernel (an RCU grace period), and
        # the event loop is still finishing the call. Empty once the call's processes are
        # reaped, which may trail its exit a little.
        for _ in range(200):
            if group is None or await asyncio.to_thread(group.remove):
                break
            await asyncio.sleep(0.01)
        if group is not None and not group.folders:
            self._retiring.remove(group)
        await asyncio.to_thread(self.fill, key)

    def fill(self, limits: Limits) -> None:
        """Make groups for these limits up to the pool's size."""
        key = _key(limits)
        ready = self._ready.setdefault(key, [])
        while len(ready) < self.size:
            group = make_group(key, self._name())
            if group is None:
                return
            ready.append(group)

    def close(self) -> None:
        """Remove the prepared groups, and used ones still there (the server's end)."""
        for group in [*(g for ready in self._ready.values() for g in ready), *self._retiring]:
            discard = getattr(group.waiter, "discard", None)
            if discard is not None:
                discard()  # it exits, running nothing: the group is empty again
            group.remove()
        self._ready.clear()
        self._retiring.clear()


def _key(limits: Limits) -> Limits:
    """What a group depends on: the process and whole-call memory limits only."""
    return Limits(processes=limits.processes, file_size_mb=0, memory_mb=0,
                  call_memory_mb=limits.call_memory_mb)  # fmt: skip


POOL = CgroupPool()
atexit.register(POOL.close)
