"""The sandbox's seccomp filter: a small classic-BPF program, built and loaded without libseccomp.

Loaded by the launcher (``tools/sandbox/landlock_exec.py``) just before it execs the command, and
inherited by everything the command starts. It refuses, with ``EPERM`` unless noted:

- ``ptrace``, ``process_vm_readv``/``writev``: no reading or steering another process;
- ``keyctl``, ``add_key``, ``request_key``: the kernel keyrings are not namespaced;
- ``bpf``, ``perf_event_open``, ``userfaultfd``: large kernel attack surface, no use in a build;
- ``io_uring_*``: its operations (``IORING_OP_SOCKET``, ``OPENAT``...) bypass this very filter;
- ``unshare``, ``setns``, ``clone``/``clone3`` with namespace flags, the ``mount`` family,
  ``pivot_root``, ``chroot``: no new namespaces or mounts inside the sandbox (``clone3`` gets
  ``ENOSYS``, as its flags sit behind a pointer: the C library then falls back to ``clone``);
- ``mknod``/``mknodat`` of a character or block device (fifos and sockets stay allowed);
- ``ioctl(TIOCSTI)`` and ``ioctl(TIOCLINUX)``: no typing into a terminal;
- ``open_by_handle_at``, module and ``kexec`` loading, ``acct``, ``swapon``/``swapoff``,
  ``reboot``, ``settimeofday``-style clock changes: nothing a command needs;
- with ``no_sockets`` (when there is no network namespace to do it): ``socket()`` of any
  family but ``AF_UNIX``, so MPTCP, UDP, TCP Fast Open and listeners are refused at the
  source, whatever Landlock's TCP rules cover.

Another architecture's syscalls (i386 on x86_64, the x32 ABI) kill the process: the
numbers below would mean other calls there. Standard library only: the launcher runs it
before anything from the workspace could.
"""

from __future__ import annotations

import os
import struct

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_AND_K = 0x54
_JA = 0x05
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000

# struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6] (low words first: little endian).
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


_S_IFMT, _S_IFCHR, _S_IFBLK = 0o170000, 0o020000, 0o060000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_AF_UNIX = 1
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET.
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
_CLONE_NAMESPACES |= 0x20000000 | 0x40000000

# (audit arch, syscall numbers) per machine. Names in the module docstring's order.
_DENIED = (
    "ptrace process_vm_readv process_vm_writev keyctl add_key request_key bpf "
    "perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register unshare "
    "setns mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount fspick "
    "mount_setattr open_by_handle_at init_module finit_module delete_module kexec_load "
    "kexec_file_load acct swapon swapoff reboot settimeofday clock_settime clock_adjtime adjtimex"
).split()
# fmt: off
_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250,
            "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
            "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "unshare": 272, "setns": 308, "mount": 165,
            "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428,
            "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
            "mount_setattr": 442, "open_by_handle_at": 304, "init_module": 175,
            "finit_module": 313, "delete_module": 176, "kexec_load": 246,
            "kexec_file_load": 320, "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169,
            "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
            "clone": 56, "clone3": 435, "mknod": 133, "mknodat": 259, "ioctl": 16, "socket": 41,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219,
            "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
            "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
            "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430,
            "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
            "open_by_handle_at": 265, "init_module": 105, "finit_module": 273,
            "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "acct": 89,
            "swapon": 224, "swapoff": 225, "reboot": 142, "settimeofday": 170,
            "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "clone": 220,
            "clone3": 435, "mknodat": 33, "ioctl": 29, "socket": 198,
        },
    ),
}
# fmt: on


class SeccompError(Exception):
    """No filter for this machine, or the kernel refused it."""


def supported() -> bool:
    return os.uname().machine in _TABLES


def program(*, no_sockets: bool, machine: str | None = None) -> bytes:
    """The filter as ``struct sock_filter[]`` bytes."""
    machine = machine or os.uname().machine
    if machine not in _TABLES:
        raise SeccompError(f"no seccomp filter for the {machine} architecture")
    arch, numbers = _TABLES[machine]
    # Instructions as (code, jt, jf, k); jt/jf may be label names, resolved below.
    code: list[tuple[int, object, object, int] | str] = []

    def op(c: int, k: int = 0, jt: object = 0, jf: object = 0) -> None:
        code.append((c, jt, jf, k))

    eperm = RET_ERRNO | 1
    op(_LD_W_ABS, _ARCH)
    op(_JEQ_K, arch, jt=1)
    op(_RET_K, RET_KILL_PROCESS)
    op(_LD_W_ABS, _NR)
    if machine == "x86_64":
        op(_JGE_K, 0x40000000, jt="kill")  # the x32 ABI: same numbers, other meanings
    for name in _DENIED:
        op(_JEQ_K, numbers[name], jt="eperm")
    op(_JEQ_K, numbers["clone3"], jt="enosys")
    op(_JEQ_K, numbers["clone"], jt="clone")
    if "mknod" in numbers:
        op(_JEQ_K, numbers["mknod"], jt="mknod")
    op(_JEQ_K, numbers["mknodat"], jt="mknodat")
    op(_JEQ_K, numbers["ioctl"], jt="ioctl")
    if no_sockets:
        op(_JEQ_K, numbers["socket"], jt="socket")
    op(_RET_K, RET_ALLOW)
    code.append("clone")
    op(_LD_W_ABS, _arg(0))
    op(_JSET_K, _CLONE_NAMESPACES, jt="eperm")
    op(_RET_K, RET_ALLOW)
    code.append("mknod")
    op(_LD_W_ABS, _arg(1))
    op(_JA, 0, jt=0, jf=0)  # placeholder, patched to jump over the next load
    code.append("mknodat")
    op(_LD_W_ABS, _arg(2))
    code.append("mode")
    op(_AND_K, _S_IFMT)
    op(_JEQ_K, _S_IFCHR, jt="eperm")
    op(_JEQ_K, _S_IFBLK, jt="eperm")
    op(_RET_K, RET_ALLOW)
    code.append("ioctl")
    op(_LD_W_ABS, _arg(1))  # the request is an unsigned int in the kernel: low word only
    op(_JEQ_K, _TIOCSTI, jt="eperm")
    op(_JEQ_K, _TIOCLINUX, jt="eperm")
    op(_RET_K, RET_ALLOW)
    if no_sockets:
        code.append("socket")
        op(_LD_W_ABS, _arg(0))
        op(_JEQ_K, _AF_UNIX, jt=1)
        op(_RET_K, eperm)
        op(_RET_K, RET_ALLOW)
    code.append("eperm")
    op(_RET_K, eperm)
    code.append("enosys")
    op(_RET_K, RET_ERRNO | 38)
    code.append("kill")
    op(_RET_K, RET_KILL_PROCESS)
    return _assemble(code)


def _assemble(code: list[tuple[int, object, object, int] | str]) -> bytes:
    labels: dict[str, int] = {}
    instructions: list[tuple[int, object, object, int]] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    out = bytearray()
    for index, (c, jt, jf, k) in enumerate(instructions):
        if c == _JA:  # the one unconditional jump: from the mknod load to "mode"
            k = labels["mode"] - index - 1
        offsets = []
        for target in (jt, jf):
            offset = labels[target] - index - 1 if isinstance(target, str) else int(target)  # type: ignore[call-overload]
            if not 0 <= offset <= 255:
                raise SeccompError(f"jump of {offset} instructions does not fit")
            offsets.append(offset)
        out += struct.pack("=HBBI", c, offsets[0], offsets[1], k)
    return bytes(out)


def load(filter_bytes: bytes) -> None:
    """Apply the filter to this thread's process (needs ``no_new_privs`` already set)."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    prog = SockFprog(len(filter_bytes) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    # prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog): older than the seccomp() syscall.
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
        raise SeccompError(f"seccomp filter refused: {os.strerror(ctypes.get_errno())}")
