"""The ``bash`` tool's OS sandbox, one package (as Codex's ``linux-sandbox`` crate): this
module is its entry point, what the rest of the tree uses; the parts are its modules.

- ``confine``: the policy, what this system supports (:func:`support`), one call's
  confinement (:func:`confinement`, :class:`Confinement`, :class:`Launch`), the words
  for the model and the user (:func:`describe`, :func:`weakened`, :func:`prompt_text`,
  :func:`explain_denial`) and a call's permission (:func:`call_permission`);
- ``bwrap``: bubblewrap's arguments (namespaces, mounts);
- ``landlock_exec``: the launcher, run by path inside the new process (stdlib only, with
  its siblings ``seccomp_bpf`` and ``bridge``, found beside it);
- ``seccomp_bpf``: the seccomp filter; ``limits``: cgroups and rlimits;
- ``warm``: a call's first process started ahead, in its cgroups;
- ``proxy`` (outside) and ``bridge`` (inside): named hosts only;
- ``caches``: toolchains' caches redirected into the call's temp dir;
- ``git_guard``: what git obeys (the sandbox's mounts, the watch, the file tools' question).
"""

from __future__ import annotations

from . import bwrap, git_guard, landlock_exec, seccomp_bpf, warm
from .caches import cache_redirects
from .confine import (
    INTERPRETER,
    LAUNCHER,
    MIN_ABI,
    MODES,
    PROXY_PORT,
    Confinement,
    Launch,
    SandboxPolicy,
    SandboxSupport,
    call_permission,
    confinement,
    describe,
    explain_denial,
    hidden_outside,
    host_allowed,
    is_launch_failure,
    is_within,
    private_tmp,
    prompt_text,
    support,
    weakened,
)
from .limits import POOL as CGROUPS
from .limits import SETTINGS as LIMIT_SETTINGS
from .limits import CallGroup, Limits, hit
from .proxy import DomainProxy, proxy_environment, valid_domain_pattern
from .warm import POOL as WARM
from .warm import Waiter

__all__ = [
    "CGROUPS",
    "INTERPRETER",
    "LAUNCHER",
    "LIMIT_SETTINGS",
    "MIN_ABI",
    "MODES",
    "PROXY_PORT",
    "WARM",
    "CallGroup",
    "Confinement",
    "DomainProxy",
    "Launch",
    "Limits",
    "SandboxPolicy",
    "SandboxSupport",
    "Waiter",
    "bwrap",
    "cache_redirects",
    "call_permission",
    "confinement",
    "describe",
    "explain_denial",
    "git_guard",
    "hidden_outside",
    "hit",
    "host_allowed",
    "is_launch_failure",
    "is_within",
    "landlock_exec",
    "private_tmp",
    "prompt_text",
    "proxy_environment",
    "seccomp_bpf",
    "support",
    "valid_domain_pattern",
    "warm",
    "weakened",
]
