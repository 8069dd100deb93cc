"""Confine this process with Landlock, then exec the command: the ``bash`` tool's launcher.

Run by path, never imported from the workspace::

    python -I -S landlock_exec.py [--write DIR]... [--read DIR]... [--hide PATH]...
                                  [--no-network] -- PROGRAM [ARG]...

``-I`` keeps the current directory (the workspace) and every ``PYTHON*`` variable out
of the interpreter, ``-S`` skips site-packages: this file uses the standard library
only, so nothing the command's repository contains can run before the ruleset does.

The ruleset, applied to this fresh single-threaded process and inherited by every
process the command starts (the kernel offers no way to lift it):

- read and execute anything (``/`` beneath, read rights only) except each ``--hide``
  path (:func:`read_grants`);
- write, create, remove, rename only beneath each ``--write`` directory and in the
  usual devices (``DEVICES``); each ``--write`` and ``--read`` directory is readable
  as a whole, even where it holds or lies beneath a hidden path;
- with ``--no-network``: no TCP ``bind`` or ``connect`` (Landlock ABI >= 4);
- no signals to, and no abstract Unix sockets of, processes outside the sandbox
  (ABI >= 6).

If the ruleset cannot be applied the command does not run: the launcher prints a line
starting with ``FAILURE_MARKER`` and exits with ``FAILURE_STATUS``. The server imports
this module only for :func:`abi_version` and the constants.
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
            allow(directory, fs)
        # Required by landlock_restrict_self; also stops setuid programs gaining rights.
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # type: ignore[attr-defined]
            raise LandlockError(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
        _syscall(libc, "landlock_restrict_self", _SYS_RESTRICT_SELF, ctypes.c_int(ruleset),
                 ctypes.c_uint32(0))  # fmt: skip
    finally:
        os.close(ruleset)
    return abi, notes


def main(argv: list[str]) -> int:
    lists: dict[str, list[str]] = {"--write": [], "--read": [], "--hide": []}
    network = True
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option in lists and args:
            lists[option].append(args.pop(0))
        elif option == "--no-network":
            network = False
        else:
            return _fail(f"unknown launcher option {option!r}")
    command = args[1:]
    if not command:
        return _fail("no command given")
    try:
        _, notes = confine(
            lists["--write"], network=network, readable=lists["--read"], hidden=lists["--hide"]
        )
    except (LandlockError, OSError) as exc:
        return _fail(f"could not confine the command ({exc}); it did not run")
    for note in notes:
        print(f"agent-lsp sandbox {note}", file=sys.stderr, flush=True)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached


def _fail(message: str) -> int:
    print(f"{FAILURE_MARKER} {message}", file=sys.stderr, flush=True)
    return FAILURE_STATUS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
