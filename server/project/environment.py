"""The environment block: where the agent runs, told before it tries anything.

A short, delimited block at the start of each ask's system prompt: the OS and kernel, the
shell ``bash`` runs, today's date and time zone, the workspace folders (each with its git
branch and a bounded status summary), and the sandbox and approval policy in force, so
the model knows the network is off before a command fails on it.

Git is asked carefully. The branch comes from reading ``HEAD`` (no process; a regular file
only, and its text given only when it is a valid branch name or commit id). The status
runs ``git status`` with at most :data:`GIT_BUDGET_S` (a hung git is killed, and the block
says the status was skipped), never writes the index (``GIT_OPTIONAL_LOCKS=0``), never
looks into submodules, and runs through ``tools.workspace_git``: inside the bash sandbox,
read-only, with no network, so a filter or fsmonitor that a repository the agent wrote
names runs nowhere outside it (with the sandbox ``off``, hardened but unconfined; with no
sandbox on this system, not at all: the block says the status was skipped). As a second
layer it is not run when the repository's own configuration names programs git would
start for a status (an fsmonitor, a filter, an include).
A summary is kept until ``HEAD`` or the index changes; once older than
:data:`STATUS_MAX_AGE_S` it is still given (with its age) while a fresh one is made in the
background for the next ask, so an ask never waits for a status of an unchanged repository.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shutil
import threading
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tooling.display import escape_control
from tooling.regular_files import SkippedFile, read_regular
from tools.sandbox import SandboxPolicy, support
from tools.workspace_git import GitRunner, GitTimeout

GIT_BUDGET_S = 1.0
STATUS_MAX_AGE_S = 10.0
STATUS_CHARS = 300  # of the status summary per folder
# What in a repository's config makes `git status` start a program of its choosing (a
# byte-order mark, which git skips, counts as white space).
_RISKY_CONFIG = re.compile(r"fsmonitor|^[\s\ufeff]*\[\s*(filter|include|includeif)\b", re.I | re.M)
APPROVALS = {
    "on-request": "on-request (escalations, and commands where no sandbox applies, are asked "
    "about first)",
    "always": "always (every bash, write_file and edit_file call is asked about first)",
    "never": "never (nothing is asked: a call that would need the user's permission is refused)",
}


@dataclass(frozen=True)
class GitSummary:
    text: str
    at: float  # time.monotonic() it was made
    key: tuple[object, ...]


_cache: dict[Path, GitSummary] = {}
_refreshing: set[Path] = set()  # folders whose summary a background thread is making
_lock = threading.Lock()


def environment_block(
    roots: Sequence[Path],
    sandbox: SandboxPolicy,
    approval: str,
    *,
    git: str | None = None,
    now: datetime.datetime | None = None,
) -> str:
    """The block for an ask acting in ``roots[0]`` (call it off the event loop: git)."""
    moment = (now or datetime.datetime.now()).astimezone()
    offset = moment.strftime("%z")
    lines = [
        "<environment>",
        f"OS: {_os()}",
        f"Shell: bash runs each command in a fresh {_bash()} (no state carries over between calls)",
        f"Date: {moment:%A %Y-%m-%d}, time zone {moment.tzname() or offset} "
        f"(UTC{offset[:3]}:{offset[3:]})",
    ]
    for root in roots:
        lines.append(f"Workspace folder: {root} ({git_summary(root, git, sandbox)})")
    lines.append(f"Sandbox: {describe_sandbox(sandbox)}")
    lines.append(f"Approval: {APPROVALS.get(approval, approval)}")
    lines.append("</environment>")
    return "\n".join(lines)


def describe_sandbox(policy: SandboxPolicy) -> str:
    if policy.mode == "off":
        asked = "; every command is asked about first" if policy.ask_unconfined else ""
        return f"none (sandbox off): bash commands run with the user's full rights{asked}"
    if not support().available:
        return "none on this system: every bash command is asked about first"
    if policy.mode == "read-only":
        writes = (
            "bash may write only its own temporary folder ($TMPDIR); the workspace is read-only"
        )
    else:
        extra = ", ".join(str(p) for p in policy.writable_roots)
        writes = "bash may write the workspace" + (f", {extra}" if extra else "")
        writes += " and its own temporary folder ($TMPDIR); everything else is read-only"
    if policy.network:
        network = "network: on"
    elif policy.allowed_domains:
        network = "network: off, except these hosts through a proxy: " + ", ".join(
            policy.allowed_domains
        )
    else:
        network = 'network: off (a command that needs it must ask: escalation "network")'
    return f"{policy.mode}: {writes}; {network}; nothing outlives a call"


def git_summary(root: Path, git: str | None = None, policy: SandboxPolicy | None = None) -> str:
    """``git``: that program instead of the one found outside the workspace (tests);
    ``policy``: the bash sandbox's, which the status runs under (read-only)."""
    runner = GitRunner.of(root, policy or SandboxPolicy(), git)
    try:
        return _summary(root, runner)
    except OSError as exc:  # a folder that cannot be read: the ask goes on without it
        return f"git state unknown ({exc.strerror or exc})"


def _summary(root: Path, git: GitRunner) -> str:
    git_dir = _git_dir(root)
    if git_dir is None:
        return "not a git repository"
    branch = _branch(git_dir)
    if branch.startswith("branch unknown (HEAD is not a regular file"):
        return f"git repository, {branch}; status not read"  # git would block on it too
    key = (_stat(git_dir / "HEAD"), _stat(git_dir / "index"), branch)
    with _lock:
        kept = _cache.get(root)
        if kept is not None and kept.key == key:
            age = time.monotonic() - kept.at
            if age < STATUS_MAX_AGE_S:
                return kept.text
            if root not in _refreshing:  # the next ask gets a fresh one
                _refreshing.add(root)
                threading.Thread(
                    target=_refresh, args=(root, git_dir, git, key), daemon=True
                ).start()
            return f"{kept.text} (as of {age:.0f} s ago)"
    return _refresh(root, git_dir, git, key)


def _refresh(root: Path, git_dir: Path, git: GitRunner, key: tuple[object, ...]) -> str:
    branch = key[-1]
    try:
        text = f"git repository, {branch}; {_status(root, git_dir, git)}"
        with _lock:
            _cache[root] = GitSummary(text, time.monotonic(), key)
        return text
    finally:
        with _lock:
            _refreshing.discard(root)


def _git_dir(root: Path) -> Path | None:
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: PATH"
            try:
                line = _read_small(dot_git).strip()
            except OSError:
                return None
            if line.startswith("gitdir:"):
                target = Path(line[len("gitdir:") :].strip())
                return target if target.is_absolute() else (folder / target).resolve()
            return None
    return None


def _branch(git_dir: Path) -> str:
    try:
        head = _read_small(git_dir / "HEAD").rstrip()
    except SkippedFile as exc:
        return f"branch unknown (HEAD is {exc.reason})"
    except OSError:
        return "branch unknown"
    return describe_head(head)


def describe_head(head: str) -> str:
    """The branch ``HEAD``'s text names, for the prompt: only a well-formed branch name or
    commit id is given (a tool call may have written anything there, lines of instructions
    to the model included); anything else is "branch unknown"."""
    if head.startswith("ref: refs/heads/"):
        name = head[len("ref: refs/heads/") :]
        if valid_ref_name(name):
            return f"branch {name}"
    elif _OBJECT_ID.fullmatch(head):
        return f"detached HEAD at {head[:12]}"
    return "branch unknown (HEAD is not a branch or a commit id)"


_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|^@$|\.$|\.lock$|(^|/)\.")
MAX_REF_CHARS = 200


def valid_ref_name(name: str) -> bool:
    """``git check-ref-format``'s rules for a branch name, and no invisible or format
    character (Unicode C* and Z* categories, the fillers), at most :data:`MAX_REF_CHARS`
    characters."""
    if not name or len(name) > MAX_REF_CHARS or _REF_FORBIDDEN.search(name):
        return False
    if any(part.endswith(".lock") for part in name.split("/")):
        return False
    if escape_control(name) != name:  # a filler (U+3164) is a letter by category
        return False
    return not any(unicodedata.category(ch)[0] in "CZ" for ch in name)


MAX_METADATA_BYTES = 64 * 1024  # HEAD, a .git pointer file, commondir
MAX_CONFIG_BYTES = 1024 * 1024


def _read_small(path: Path) -> str:
    """A git metadata file's text: a regular file only (a FIFO there would hang every ask),
    its first :data:`MAX_METADATA_BYTES`."""
    return read_regular(path, MAX_METADATA_BYTES).data.decode(errors="replace")


def _status(root: Path, git_dir: Path, git: GitRunner) -> str:
    if git.git is None:
        return "status unknown (git is not installed)"
    if why := git.unusable():
        return f"status skipped ({why})"
    if _risky(git_dir):
        return "status not read (the repository's git configuration names programs to run)"
    try:
        done = git.run_sync(root, *STATUS_ARGS, timeout=GIT_BUDGET_S)
    except GitTimeout:
        return f"status skipped (git took longer than {GIT_BUDGET_S:g} s)"
    if done is None:
        return "status unknown (git could not be started)"
    if done[0] != 0:
        return "status unknown (git status failed)"
    entries = [line for line in done[1].decode(errors="replace").splitlines() if line]
    if not entries:
        return "clean working tree"
    untracked = sum(1 for e in entries if e.startswith("??"))
    changed = len(entries) - untracked
    counts = ", ".join(
        part
        for part in (
            f"{changed} changed" if changed else "",
            f"{untracked} untracked" if untracked else "",
        )
        if part
    )
    shown = ""
    for entry in entries:
        if len(shown) + len(entry) + 2 > STATUS_CHARS:
            shown += ", …"
            break
        shown += (", " if shown else "") + entry.strip()
    return f"{counts}: {shown}"


STATUS_ARGS = ("status", "--porcelain=v1", "--no-renames", "--ignore-submodules=all")


def _risky(git_dir: Path) -> bool:
    common = git_dir
    try:
        pointer = _read_small(git_dir / "commondir").strip()
        common = (git_dir / pointer).resolve()
    except SkippedFile:
        return True  # a FIFO or device where git looks: it is not asked at all
    except OSError:
        pass
    for config in {git_dir / "config", git_dir / "config.worktree", common / "config"}:
        try:
            found = read_regular(config, MAX_CONFIG_BYTES)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return True  # there but not readable as a file (a FIFO): git is not asked
        if found.cut:
            return True  # not read whole: not known to be harmless
        text = found.data.decode(errors="replace")
        if _RISKY_CONFIG.search(text):
            return True
    return False


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@cache
def _os() -> str:
    uname = platform.uname()
    pretty = ""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    distro = f" ({pretty})" if pretty else ""
    return f"{uname.system} {uname.release} {uname.machine}{distro}"


@cache
def _bash() -> str:
    return f"bash ({shutil.which('bash') or 'bash'})"
