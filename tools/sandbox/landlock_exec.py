"""Confine this process, then exec the command: the ``bash`` tool's launcher.

Run by path, never imported from the workspace::

    python -I -S landlock_exec.py [--write DIR]... [--read DIR]... [--hide PATH]...
        [--no-network] [--connect-port PORT]... [--no-landlock] [--seccomp sockets|no-sockets]
        [--limit-processes N] [--limit-file-size BYTES] [--limit-memory BYTES]
        [--cgroup CGROUP_PROCS]... [--bridge UNIX_SOCKET:PORT] [--supervise [--parent PID]]
        -- PROGRAM [ARG]...

``-I`` keeps the current directory (the workspace) and every ``PYTHON*`` variable out
of the interpreter, ``-S`` skips site-packages: this file uses the standard library
only (and its two siblings ``seccomp_bpf.py`` and ``bridge.py``, found beside it),
so nothing the command's repository contains can run before the confinement does.

It runs where Landlock carries a promise or the proxy's bridge must listen: inside
bubblewrap's namespaces without a network namespace of their own, or with the proxy
(``tools/sandbox/confine.py`` builds that command line), or directly where namespaces are not
allowed. With a network namespace, bubblewrap runs the command itself (seccomp on a
descriptor, the limits set by the server on its first process) and this launcher is not
used. In this order:

0. ``--cgroup``: join the call's cgroups (the process limit, the call's memory total),
   first, so that every process it starts is counted;
1. ``--bridge``: listen on ``127.0.0.1:PORT`` and fork the process that pipes each
   connection to the domain proxy's Unix socket (only inside a network namespace);
2. the Landlock ruleset, inherited by every process the command starts (the kernel
   offers no way to lift it), unless ``--no-landlock`` (a kernel without it, where the
   namespaces do that work):

   - read and execute anything (``/`` beneath, read rights only) except each ``--hide``
     path (:func:`read_grants`);
   - write, create, remove, rename only beneath each ``--write`` directory (no device
     nodes there) and in the usual devices (``DEVICES``); each ``--write`` and ``--read``
     directory is readable as a whole, even where it holds or lies beneath a hidden path;
   - with ``--no-network``: no TCP ``bind`` or ``connect`` (Landlock ABI >= 4), but
     ``connect`` to each ``--connect-port`` (the bridge's);
   - no signals to, and no abstract Unix sockets of, processes outside (ABI >= 6);
3. the resource limits (``RLIMIT_NPROC``, ``RLIMIT_FSIZE``, ``RLIMIT_DATA``);
4. ``--supervise`` (no PID namespace): become a child subreaper, run the command as a
   child, and kill every process it leaves when it ends or this launcher is stopped;
   ``--parent PID`` (first thing, before step 0): stopped when that process (the server)
   ends, killed outright included (``PR_SET_PDEATHSIG``), and nothing run if it has
   ended already;
5. the seccomp filter (``seccomp_bpf.py``), then ``exec``.

If any step fails the command does not run: the launcher prints a line starting with
``FAILURE_MARKER`` and exits with ``FAILURE_STATUS``. The server imports this module only
for :func:`abi_version`, :func:`read_grants` and the constants.
"""

from __future__ import annotations

import os
import stat
import sys

# No other import at module level: every one is start-up time of every bash call (the
# typing module alone would add a few milliseconds), hence ``object`` in annotations.

# Syscall numbers are the same on every architecture (added after the table merge).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_RULE_NET_PORT = 2  # ABI 4
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (uapi/linux/landlock.h), with the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_FS_ABI1 = (1 << 13) - 1
FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Rights a rule on a non-directory may carry.
_FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV

# Devices every command may open for writing (``> /dev/null``, ``/dev/urandom``...).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")

FAILURE_MARKER = "agent-lsp sandbox:"
FAILURE_STATUS = 125
# A folder on the way to a hidden path is granted entry by entry; past this many entries
# none of them is (reading beneath it is refused), which bounds the rules of one call.
MAX_ENTRIES = 10_000


class LandlockError(Exception):
    """The ruleset could not be built or applied."""


def _libc() -> object:
    # Imported here, not at module level: the server imports this module for its
    # constants, and ctypes costs a few milliseconds of start-up.
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _syscall(libc: object, name: str, number: int, *args: object) -> int:
    import ctypes

    function = libc.syscall  # type: ignore[attr-defined]
    function.restype = ctypes.c_long
    result = int(function(ctypes.c_long(number), *args))
    if result < 0:
        raise LandlockError(f"{name}: {os.strerror(ctypes.get_errno())}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when there is none (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    try:
        return _syscall(_libc(), "landlock_create_ruleset", _SYS_CREATE_RULESET, None,
                        ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))  # fmt: skip
    except (LandlockError, OSError, AttributeError):  # ENOSYS, EOPNOTSUPP, no libc
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem right this ABI knows: all are refused unless a rule grants them."""
    rights = _FS_ABI1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def read_grants(
    hidden: list[str], granted: list[str], *, max_entries: int = MAX_ENTRIES
) -> tuple[list[tuple[str, bool]], list[str]]:
    """Where to grant reading so that nothing beneath a ``hidden`` path is readable.

    Landlock only adds rights, so "everything but S" is spelled out: for each folder A
    on the way from ``/`` to S (S's ancestors), every entry of A except the next folder
    on the way, and never S. Paths are resolved first (Landlock sees the real file, not
    the name a symlink gives it); entries that are symlinks get no rule (what they point
    to is judged where it really is). A hidden path at or beneath a ``granted`` folder
    (the workspace, a writable root, a device) stays readable: the grant wins. One that
    does not exist hides nothing yet, and its deepest existing ancestor is granted entry
    by entry like the others, so what appears there later is not readable in this call.
    Returns the paths to grant read to (each with whether it is a folder: ``d_type``
    tells, no ``stat``) and notes for the command's stderr.
    """
    real_granted = [os.path.realpath(path) for path in granted]
    targets: set[str] = set()
    for path in hidden:
        if not os.path.isabs(path):
            raise LandlockError(f"hidden path {path!r} is not absolute")
        real = os.path.realpath(path)
        if real != "/" and not any(_within(real, folder) for folder in real_granted):
            targets.add(real)
    # A hidden path beneath another is hidden with it (and must not make it an ancestor).
    targets = {t for t in targets if not any(t != o and _within(t, o) for o in targets)}
    if not targets:
        return [("/", True)], []
    ancestors: set[str] = set()
    for target in targets:
        parent = os.path.dirname(target)
        while parent not in ancestors:
            ancestors.add(parent)
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    paths: list[tuple[str, bool]] = []
    notes: list[str] = []
    for folder in sorted(ancestors):
        try:
            with os.scandir(folder) as entries:
                children = []
                for entry in entries:
                    children.append(entry)
                    if len(children) > max_entries:
                        raise OverflowError
        except (FileNotFoundError, NotADirectoryError):
            continue  # not there (yet): nothing beneath it to grant
        except (OSError, OverflowError) as exc:
            # Fail closed: without the list, nothing beneath this folder is granted.
            why = f"more than {max_entries} entries" if isinstance(exc, OverflowError) else (
                exc.strerror or str(exc))  # fmt: skip
            notes.append(f"note: files beneath {folder} are not readable in this call ({why})")
            continue
        for entry in children:
            path = entry.path
            if path in ancestors or path in targets or entry.is_symlink():
                continue
            try:
                paths.append((path, entry.is_dir(follow_symlinks=False)))
            except OSError:
                continue  # gone meanwhile
    return paths, notes


def confine(
    writable: list[str],
    *,
    network: bool,
    readable: list[str] | None = None,
    hidden: list[str] | None = None,
    connect_ports: list[int] | None = None,
) -> tuple[int, list[str]]:
    """Apply the ruleset to this process (and every future child).

    Returns the ABI and notes for the command's stderr (see :func:`read_grants`).
    """
    import ctypes

    class RulesetAttr(ctypes.Structure):
        _fields_ = (
            ("handled_access_fs", ctypes.c_uint64),
            ("handled_access_net", ctypes.c_uint64),
            ("scoped", ctypes.c_uint64),
        )

    class NetPortAttr(ctypes.Structure):
        _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))

    class PathBeneathAttr(ctypes.Structure):
        _pack_ = 1  # __attribute__((packed)) in the uapi header
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    abi = abi_version()
    if abi < 1:
        raise LandlockError("this kernel offers no Landlock")
    if not network and abi < 4:
        raise LandlockError(f"Landlock ABI {abi} cannot refuse TCP connections (needs 4)")
    libc = _libc()
    fs = handled_fs(abi)
    attr = RulesetAttr(fs, 0, 0)
    if not network:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # handled, no rule: refused
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    # Older kernels know a shorter struct; the size says which fields are meant.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _syscall(libc, "landlock_create_ruleset", _SYS_CREATE_RULESET,
                       ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))  # fmt: skip

    # One rule struct and argument tuple, reused: a ruleset may have hundreds of rules
    # (see read_grants), each a syscall through ctypes.
    rule = PathBeneathAttr(0, -1)
    add_rule = libc.syscall  # type: ignore[attr-defined]
    add_rule.restype = ctypes.c_long
    add_args = (
        ctypes.c_long(_SYS_ADD_RULE),
        ctypes.c_int(ruleset),
        ctypes.c_int(_RULE_PATH_BENEATH),
        ctypes.byref(rule),
        ctypes.c_uint32(0),
    )

    def allow(path: str, rights: int, *, folder: bool | None = None) -> None:
        """``folder``: known to be a folder or not (then symlinks are not followed)."""
        flags = os.O_PATH | os.O_CLOEXEC | (0 if folder is None else os.O_NOFOLLOW)
        try:
            fd = os.open(path, flags)
        except OSError:
            return  # a missing device or folder grants nothing
        try:
            if not (stat.S_ISDIR(os.fstat(fd).st_mode) if folder is None else folder):
                rights &= _FS_FILE_RIGHTS
            rule.allowed_access, rule.parent_fd = rights, fd
            if add_rule(*add_args) < 0:
                error = os.strerror(ctypes.get_errno())
                raise LandlockError(f"landlock_add_rule({path}): {error}")
        finally:
            os.close(fd)

    readable = readable or []
    reads, notes = read_grants(hidden or [], [*writable, *readable, *DEVICES])
    try:
        if reads != [("/", True)]:
            allow("/", FS_READ_DIR)  # names and listings everywhere; contents per entry
        for path, folder in reads:
            allow(path, FS_READ, folder=folder)
        for directory in readable:
            allow(directory, FS_READ)
        for device in DEVICES:
            allow(device, fs & (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE))
        for directory in writable:
            # Everything but devices: a block device made there would write past every rule.
            allow(directory, fs & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_IOCTL_DEV))
        for port in connect_ports or []:
            # The domain proxy's bridge on the sandbox's own loopback (network namespace).
            net_rule = NetPortAttr(NET_CONNECT_TCP, port)
            _syscall(libc, "landlock_add_rule", _SYS_ADD_RULE, ctypes.c_int(ruleset),
                     ctypes.c_int(_RULE_NET_PORT), ctypes.byref(net_rule),
                     ctypes.c_uint32(0))  # fmt: skip
        # Required by landlock_restrict_self; also stops setuid programs gaining rights.
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # type: ignore[attr-defined]
            raise LandlockError(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
        _syscall(libc, "landlock_restrict_self", _SYS_RESTRICT_SELF, ctypes.c_int(ruleset),
                 ctypes.c_uint32(0))  # fmt: skip
    finally:
        os.close(ruleset)
    return abi, notes


def main(argv: list[str]) -> int:
    names = ("--write", "--read", "--hide", "--connect-port", "--cgroup")
    lists: dict[str, list[str]] = {name: [] for name in names}
    values: dict[str, str] = {}
    flags: set[str] = set()
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option in lists and args:
            lists[option].append(args.pop(0))
        elif option in _VALUED and args:
            values[option] = args.pop(0)
        elif option in _FLAGS:
            flags.add(option)
        else:
            return _fail(f"unknown launcher option {option!r}")
    command = args[1:]
    if not command:
        return _fail("no command given")
    if "--parent" in values and not _tie_to(int(values["--parent"])):
        return FAILURE_STATUS  # the server is gone: no one to tell, nothing run
    notes: list[str] = []
    for procs in lists["--cgroup"]:
        notes += _join_cgroup(procs)
    try:
        if "--bridge" in values:
            _start_bridge(values["--bridge"])
        if "--no-landlock" not in flags:
            _, landlock_notes = confine(
                lists["--write"],
                network="--no-network" not in flags,
                readable=lists["--read"],
                hidden=lists["--hide"],
                connect_ports=[int(port) for port in lists["--connect-port"]],
            )
            notes += landlock_notes
        _set_limits(values)
        seccomp = values.get("--seccomp")
        program = _seccomp().program(no_sockets=seccomp == "no-sockets") if seccomp else None
    except (LandlockError, OSError, ValueError) as exc:
        return _fail(f"could not confine the command ({exc}); it did not run")
    for note in notes:
        print(f"agent-lsp sandbox {note}", file=sys.stderr, flush=True)
    if "--supervise" in flags:
        return _supervise(command, program)
    return _exec(command, program)


# Options with a value: --parent PID (the server), --bridge UNIX_SOCKET:PORT, --seccomp
# sockets|no-sockets, and the limits (a number each: processes, bytes, bytes).
_VALUED = (
    "--parent",
    "--bridge",
    "--seccomp",
    "--limit-processes",
    "--limit-file-size",
    "--limit-memory",
)


def _join_cgroup(procs: str) -> list[str]:
    """Move this process into one of the call's cgroups: "0" is the writer itself, in
    whatever PID namespace it is. Only that file is writable here (the limit beside it is
    not). A failure costs the limit, not the call."""
    try:
        with open(procs, "w") as file:
            file.write("0")
    except OSError as exc:
        return [f"note: no process or memory limit in this call ({exc.strerror or exc})"]
    return []


_FLAGS = ("--no-network", "--no-landlock", "--supervise")


def _seccomp() -> object:
    """The filter module beside this file (``-I`` leaves this folder off ``sys.path``;
    appended, not prepended, so no standard module name can be shadowed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.append(here)
    import seccomp_bpf  # type: ignore[import-not-found]

    return seccomp_bpf


def _exec(command: list[str], program: bytes | None) -> int:
    """Load the seccomp filter (last: it would refuse nothing we still need), exec."""
    _default_signals()
    try:
        if program is not None:
            _seccomp().load(program)  # type: ignore[attr-defined]
    except Exception as exc:  # SeccompError, OSError: fail closed
        return _fail(f"could not confine the command ({exc}); it did not run")
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached


def _default_signals() -> None:
    """Every signal's default action, none blocked, as a cold spawn of the command gets
    them: this interpreter ignores SIGPIPE and SIGXFSZ, which an exec keeps (``yes | head
    -1`` would end with "Broken pipe", a ``while`` loop writing to a closed pipe never)."""
    import _signal as signal  # the C module: ``signal`` would import enum (~6 ms)

    for number in range(1, signal.NSIG):
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP, the C library's own
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _set_limits(values: dict[str, str]) -> None:
    import resource

    for option, limit in (
        ("--limit-processes", resource.RLIMIT_NPROC),
        ("--limit-file-size", resource.RLIMIT_FSIZE),
        ("--limit-memory", resource.RLIMIT_DATA),
    ):
        if option in values:
            value = int(values[option])
            _, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(limit, (value, value))


def _start_bridge(spec: str) -> None:
    """Listen on the namespace's own loopback and fork the process that pipes each
    connection to the proxy's Unix socket (outside the sandbox). Listening before the
    command starts, so its first connection cannot find the port closed."""
    import _socket  # the C module: ``socket`` would import enum and cost ~15 ms

    path, _, port = spec.rpartition(":")
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(128)
    if os.fork() == 0:  # the bridge: ends with the sandbox's PID namespace
        try:
            os.closerange(0, 3)
            here = os.path.dirname(os.path.abspath(__file__))
            sys.path.append(here)
            import socket

            import bridge  # type: ignore[import-not-found]

            bridge.serve(socket.socket(fileno=listener.detach()), path)
        finally:
            os._exit(0)
    listener.close()


def _tie_to(parent: int) -> bool:
    """A SIGTERM when ``parent`` (the server) ends, killed outright included: the
    supervision then ends every process of the call. False if it has ended already (the
    signal was asked for too late: this launcher has been reparented)."""
    _libc().prctl(1, 15, 0, 0, 0)  # type: ignore[attr-defined]  # PR_SET_PDEATHSIG
    return os.getppid() == parent


def _supervise(command: list[str], program: bytes | None) -> int:
    """Run the command as a child and outlive it: where no PID namespace ends the call's
    processes, this launcher does. As a child subreaper it inherits every orphan (a
    ``setsid`` or ``set -m`` background job included); when the command exits, or this
    process is told to stop, every descendant is killed before it exits."""
    import _signal as signal  # the C module: ``signal`` would import enum (~6 ms)

    libc = _libc()
    libc.prctl(36, 1, 0, 0, 0)  # type: ignore[attr-defined]  # PR_SET_CHILD_SUBREAPER
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        stopping.append(signum)
        _kill_descendants()

    # Before the fork: a stop (the server's end: --parent) arriving just after it would
    # otherwise end this launcher alone and leave the command running unsupervised.
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)
    if stopping:  # the server ended while this launcher was starting: nothing runs
        return 128 + stopping[0]
    child = os.fork()
    if child == 0:
        os._exit(_exec(command, program))  # its signals reset to their defaults first
    if stopping:
        _kill_descendants()
    status = 0
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            status = wait_status
            _kill_descendants()
    if os.WIFSIGNALED(status):
        try:  # SIGKILL and SIGSTOP have no handler to reset (EINVAL)
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        except OSError:
            pass
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status) if not stopping else 128 + stopping[0]


def _kill_descendants() -> None:
    """SIGKILL every descendant, until none is left (they may fork meanwhile)."""
    me = os.getpid()
    while True:
        parents: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z":
                parents.setdefault(int(fields[1]), []).append(int(entry))
        found, todo = [], list(parents.get(me, []))
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += parents.get(pid, [])
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        while True:  # reap what is ours, so the next scan does not see it again
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _fail(message: str) -> int:
    print(f"{FAILURE_MARKER} {message}", file=sys.stderr, flush=True)
    return FAILURE_STATUS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
