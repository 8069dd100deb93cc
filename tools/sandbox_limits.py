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

``0`` turns a limit off. What the kernel says when one is hit is recognised in the output
(:func:`hit`), so the model and the user are told which limit, and which setting raises it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    processes: int = 1024
    file_size_mb: int = 8192
    memory_mb: int = 8192

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
}


def hit(limits: Limits, output: str, cgroup_hit: bool) -> str | None:
    """A note for a failed call (its result text) that looks stopped by one of the limits."""
    if limits.file_size_mb and _FILE_TOO_LARGE.search(output):
        what, setting = f"file-size limit ({limits.file_size_mb:,} MB per file)", "file_size_mb"
    elif limits.processes and (cgroup_hit or _FORK_FAILED.search(output)):
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


# -- the pids cgroup -----------------------------------------------------------------------


def _pids_base() -> Path | None:
    """A pids cgroup this process may create children in, or None. Looked up once."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], after[-1].split(",")
        mount_point = fields[4]
        if fstype == "cgroup" and "pids" in options:
            path = next((c.split(":", 2)[2] for c in own if ":pids:" in c), None)
        elif fstype == "cgroup2":
            path = next((c.split(":", 2)[2] for c in own if c.startswith("0::")), None)
        else:
            continue
        if path is None:
            continue
        base = Path(mount_point + path.rstrip("/"))
        if (base / "pids.max").exists() or fstype == "cgroup" or _v2_has_pids(base):
            if os.access(base, os.W_OK):
                return base
    return None


def _v2_has_pids(base: Path) -> bool:
    try:
        return "pids" in (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


_BASE: list[Path | None] = []


def pids_base() -> Path | None:
    if not _BASE:
        _BASE.append(_pids_base())
        if _BASE[0] is not None:
            remove_stale(_BASE[0])
    return _BASE[0]


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


# A call's cgroup is named PREFIX + the server's PID + "-" + a random suffix.
PREFIX = "agent-lsp-"


@contextlib.asynccontextmanager
async def pids_cgroup(limit: int, name: str) -> AsyncIterator[Path | None]:
    """A cgroup for one call with ``pids.max = limit``; yields its ``cgroup.procs`` file,
    or None where none can be made. Removed afterwards (its processes are gone by then)."""
    base = pids_base()
    if base is None or not limit:
        yield None
        return
    group = base / name
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group / "cgroup.procs"
    finally:
        # Empty once the call's processes are reaped, which may trail its exit a little.
        for _ in range(50):
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                await asyncio.sleep(0.01)


def cgroup_limit_hit(procs: Path | None) -> bool:
    """Whether the call's cgroup refused a fork (``pids.events``: ``max N``)."""
    if procs is None:
        return False
    try:
        events = (procs.parent / "pids.events").read_text().split()
    except OSError:
        return False
    return "max" in events and events[events.index("max") + 1] != "0"
