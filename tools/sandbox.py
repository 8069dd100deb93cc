"""The ``bash`` tool's OS sandbox: the policy, what the kernel supports, one call's confinement.

The mechanism is Landlock (Linux >= 5.13; agent-lsp needs ABI >= 4, Linux 6.7, so that TCP
can be refused too), applied by a small launcher (``tools/landlock_exec.py``) in the new
process before it execs ``bash``: the server itself is never confined, and the ruleset is
applied in a fresh single-threaded process rather than in a ``preexec_fn`` (which runs
Python between fork and exec, unsafe while the server's other threads hold locks).

Policies (settings ``sandbox``, ``writableRoots``, ``network``):

- ``workspace-write`` (default): read anywhere, write only in the workspace folder, the
  ``writableRoots``, the call's private temp dir and the usual devices; no TCP.
- ``read-only``: as above, but the workspace is read-only too.
- ``off``: no confinement.

In both confined modes the policy's ``hidden_paths`` (agent-lsp's own configuration, key
files and state, which the server passes in) are not readable at all, unless they lie in
the workspace or a writable root: what the agent may write it may read, and its file tools
read the whole workspace anyway (the server warns when a folder holds them).

``.git`` inside the workspace is writable like the rest of it (Landlock grants are
hierarchical: no rule can take a right away beneath a writable folder), so commits work;
because git obeys ``.git/config`` and runs ``.git/hooks`` later, outside any sandbox, a
call that changes them gets a note in its result (:func:`git_surface`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.permissions import CallPermission

from . import landlock_exec

MODES: tuple[str, ...] = ("workspace-write", "read-only", "off")
# TCP rules arrived in ABI 4 (Linux 6.7); below it "no network" cannot be enforced.
MIN_ABI = 4
LAUNCHER = Path(landlock_exec.__file__).resolve()
# The interpreter itself, not a venv's link to it: the launcher needs the standard library
# only, and skipping the venv's pyvenv.cfg lookup is a millisecond of every call.
INTERPRETER = os.path.realpath(sys.executable)


@dataclass(frozen=True)
class SandboxPolicy:
    mode: str = "workspace-write"
    # Extra folders a toolchain writes to (caches); absolute, as the settings gave them.
    writable_roots: tuple[Path, ...] = ()
    network: bool = False
    # What no confined command may read (files or folders, absolute; the server's own).
    hidden_paths: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, got {self.mode!r}")


@dataclass(frozen=True)
class SandboxSupport:
    """What this system can enforce."""

    abi: int

    @property
    def available(self) -> bool:
        return self.abi >= MIN_ABI

    def reason(self) -> str:
        """Why the sandbox cannot be enforced ("" when it can)."""
        if self.available:
            return ""
        if not sys.platform.startswith("linux"):
            return f"the bash sandbox needs Linux Landlock, which {sys.platform} does not have"
        if self.abi == 0:
            return "this Linux kernel offers no Landlock (disabled, or older than 5.13)"
        return (
            f"this Linux kernel offers Landlock ABI {self.abi}; the bash sandbox needs "
            f"ABI {MIN_ABI} (Linux 6.7) to refuse network connections"
        )


@functools.cache
def support() -> SandboxSupport:
    """Probed once per process (one syscall)."""
    return SandboxSupport(landlock_exec.abi_version())


@dataclass(frozen=True)
class Confinement:
    """What one confined call may write to, and whether it may use TCP."""

    roots: tuple[Path, ...]  # the workspace and writableRoots (none when read-only)
    tmp: Path  # the call's private temp dir
    network: bool
    readable: tuple[Path, ...] = ()  # read as a whole: the workspace when read-only
    hidden: tuple[Path, ...] = ()  # not readable (unless in a root or readable folder)

    def argv(self, program: Sequence[str]) -> list[str]:
        """The launcher command line that runs ``program`` under this confinement."""
        # -I: no cwd (the workspace) or PYTHON* variables; -S: no site-packages.
        argv = [INTERPRETER, "-I", "-S", str(LAUNCHER)]
        for root in (*self.roots, self.tmp):
            argv += ["--write", str(root)]
        for folder in self.readable:
            argv += ["--read", str(folder)]
        for path in self.hidden:
            argv += ["--hide", str(path)]
        if not self.network:
            argv.append("--no-network")
        return [*argv, "--", *program]


def confinement(
    policy: SandboxPolicy, workspace_root: Path, call_tmp: Path, *, network: bool | None = None
) -> Confinement | None:
    """The confinement of one call, or ``None`` when it runs unconfined.

    ``network`` overrides the policy's for this call (a granted escalation).
    """
    if policy.mode == "off" or not support().available:
        return None
    writes = policy.mode == "workspace-write"
    return Confinement(
        roots=(workspace_root, *policy.writable_roots) if writes else (),
        tmp=call_tmp,
        network=policy.network if network is None else network,
        readable=() if writes else (workspace_root,),
        hidden=policy.hidden_paths,
    )


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
    """The sandbox as ``agent/listTools`` shows it (the bash tool's annotations)."""
    state = support()
    enforced = policy.mode != "off" and state.available
    described: dict[str, Any] = {
        "mode": policy.mode,
        "enforced": enforced,
        "network": policy.network or not enforced,
        "writableRoots": (
            [str(workspace_root), *map(str, policy.writable_roots)]
            if policy.mode == "workspace-write"
            else []
        ),
        "landlockAbi": state.abi,
        "hiddenPaths": [str(p) for p in hidden_outside(policy, workspace_root)] if enforced else [],
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
    """One or two sentences for the tool description: what the model may expect."""
    if not confined:
        return "It runs with the user's full rights."
    where = (
        "the workspace folder, $TMPDIR"
        if policy.mode == "workspace-write"
        else "$TMPDIR only (the workspace is read-only)"
    )
    if policy.mode == "workspace-write" and policy.writable_roots:
        where += ", " + ", ".join(map(str, policy.writable_roots))
    net = "" if policy.network else "; it cannot open network connections (TCP)"
    own = (
        " except agent-lsp's own configuration and state (the user's API key, saved conversations)"
        if policy.hidden_paths
        else ""
    )
    return (
        f"It runs in a sandbox: it can read any file{own} but write only in {where} "
        f"($TMPDIR is a private temporary folder removed after the call){net}. "
        "Caches outside those folders (uv, pip, npm, $XDG_CACHE_HOME) start empty in "
        "$TMPDIR on each call: an installed environment works offline, a download needs "
        "the network."
    )


# Signs in a failed command's output that the sandbox refused something: EACCES/EPERM as
# shells, coreutils, Python, Node, git, uv print them, and curl's refused connect.
_DENIAL = re.compile(
    r"Permission denied|Operation not permitted|\bEACCES\b|\bEPERM\b|Errno 13\b|os error 13\b"
    r"|Couldn't connect to server|Failed to connect",
    re.IGNORECASE,
)


def explain_denial(output: str, confinement: Confinement) -> str | None:
    """A note for the model when a failed confined command looks refused by the sandbox."""
    if not _DENIAL.search(output):
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
    network = "" if confinement.network else " and no TCP connections (connect or bind)"
    own = ", and no reading of agent-lsp's own configuration and state" * bool(confinement.hidden)
    return (
        "Note: this command ran in agent-lsp's sandbox, which allows writes only in "
        f"{places}$TMPDIR and the usual devices{network}{own}; 'permission denied' or a refused "
        "connection above is most likely the sandbox, and retrying the same way will fail "
        "again. Change the command to stay inside those places (e.g. point caches or "
        "outputs at $TMPDIR or the workspace). Only if the task truly needs more, call bash "
        'again with escalation "network" or "unsandboxed" and a one-line '
        "justification: the user is asked and may decline."
    )


def call_permission(
    policy: SandboxPolicy, command: str, escalation: str | None, justification: str | None
) -> CallPermission:
    """What one bash call would ask the user, and whether it must (``required``)."""
    shown = " ".join(command.split())
    why = justification or ""
    if policy.mode != "off" and not support().available:
        lacking = f"There is no sandbox on this system ({support().reason()})"
        reason = f"{lacking}: the command would run with your full rights." + (
            f" The agent says: {why}" if why else ""
        )
        return CallPermission(f"Run without a sandbox: {shown}", required=True, reason=reason)
    if policy.mode != "off" and escalation == "unsandboxed":
        return CallPermission(
            f"Run outside the sandbox: {shown}", required=True, reason=why, escalation=True
        )
    if policy.mode != "off" and escalation == "network" and not policy.network:
        return CallPermission(
            f"Run with network access: {shown}", required=True, reason=why, escalation=True
        )
    return CallPermission(f"Run: {shown}", reason=why)


def is_launch_failure(code: int | None, output: str) -> bool:
    """Whether the launcher refused to run the command (the sandbox could not be applied)."""
    return code == landlock_exec.FAILURE_STATUS and output.startswith(landlock_exec.FAILURE_MARKER)


# -- .git ------------------------------------------------------------------------------

GitSurface = dict[str, tuple[int, int, int]]


def git_surface(workspace_root: Path) -> GitSurface:
    """A fingerprint of what git obeys without showing it in a diff: config and hooks.

    A few stats per call; empty when the workspace has no ``.git`` folder of its own.
    """
    git = workspace_root / ".git"
    surface: GitSurface = {}
    paths = [git / "config"]
    try:
        paths += [git / "hooks" / name for name in os.listdir(git / "hooks")]
    except OSError:
        pass
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        surface[path.relative_to(workspace_root).as_posix()] = (
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
        )
    return surface


def git_surface_note(before: GitSurface, after: GitSurface) -> str | None:
    changed = sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
    if not changed:
        return None
    return (
        f"Note: this command changed {', '.join(changed)}. Git obeys .git/config and runs "
        ".git/hooks whenever the user runs git, outside the sandbox; tell the user about "
        "this change in your answer."
    )
