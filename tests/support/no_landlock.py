"""Run a command on what looks, from inside, like a system with no sandbox at all.

    python tests/support/no_landlock.py PROGRAM [ARG]...

Installs a seccomp filter that makes the three Landlock syscalls fail with ENOSYS (what
an old kernel, or a container runtime that filters them, answers), and turns off the
namespace layer (``AGENT_LSP_BWRAP=none``, as where bubblewrap is missing), then execs the
program; the filter is inherited by everything it starts. Linux x86_64/aarch64 only.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JGT_K = 0x25  # BPF_JMP | BPF_JGT | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_FIRST, _LAST = 444, 446  # landlock_create_ruleset .. landlock_restrict_self


class _Filter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter)))


def hide_landlock() -> None:
    program = (_Filter * 5)(
        _Filter(_LD_W_ABS, 0, 0, 0),  # the syscall number
        _Filter(_JGE_K, 0, 2, _FIRST),  # below 444: allow
        _Filter(_JGT_K, 1, 0, _LAST),  # above 446: allow
        _Filter(_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.ENOSYS),
        _Filter(_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
    )
    fprog = _Program(len(program), program)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    hide_landlock()
    os.environ["AGENT_LSP_BWRAP"] = "none"
    os.execvp(sys.argv[1], sys.argv[1:])
