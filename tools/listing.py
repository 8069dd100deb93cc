"""Listing the files ``glob`` matches, without walking what git ignores, in bounded time.

With ignores respected (``include_ignored=False``): when the search folder is in a git
work tree, ``git ls-files --cached --others --exclude-standard`` lists it, so git's own
ignore rules apply (``.gitignore`` at every level, ``.git/info/exclude``, the global
excludes file) and git never descends into ignored folders. Untracked nested
repositories are listed by running the same command inside them; submodules'
contents are not listed. git gets ``git_timeout`` seconds for all of that; a git that
does not answer in time is killed (its whole process group) and the walk below is used
instead. git runs through ``tools.workspace_git``: inside the bash sandbox, read-only,
hardened, so nothing a repository in the workspace names (an fsmonitor, a hook) runs
outside it; where no sandbox can be applied, git is not run and the walk lists.
Outside git, or when the workspace itself is ignored by an enclosing
repository, a walk applies the ``.gitignore`` files from the workspace root down
(``pathspec``'s gitignore semantics), and never enters an ignored folder or ``.git``.
``include_ignored=True`` walks everything, ``.git`` included.

Walks never follow symlinked folders (so they cannot lead outside); a symlinked file
is reported only if it resolves to a regular file inside the workspace. A walk stops
at its deadline (the caller reports partial results) or when the call is cancelled
(``cancelled`` is polled between folders and every ``_CHECK_EVERY`` entries). Folders
that cannot be read (permission denied, EIO) are skipped and reported, by the walk
and from git's own warnings; files or folders removed during the walk are skipped
silently.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.regular_files import read_regular

from .globbing import Matcher
from .workspace_git import GitRunner, GitTimeout

__all__ = ["GitTimeout", "Listing", "git_ignores", "git_list", "is_listable_file", "walk"]

if TYPE_CHECKING:
    import pathspec

_CHECK_EVERY = 1000
MAX_GITIGNORE_BYTES = 1024 * 1024
# git's warning for a folder it cannot read (``--others`` walks the work tree).
_GIT_UNREADABLE = re.compile(rb"could not open directory '(.*)': (.*)$")


@dataclass
class Listing:
    """Matching files (relative to the listed folder) and what kept the list short."""

    found: list[str] = field(default_factory=list)
    # Folders that could not be read (absolute), and why.
    unreadable: list[tuple[Path, str]] = field(default_factory=list)
    out_of_time: bool = False


# --- git ------------------------------------------------------------------------------


async def git_list(
    git: GitRunner,
    folder: Path,
    matcher: Matcher,
    deadline: float,
    inside: tuple[str, ...] = (),
) -> Listing | None:
    """Matching files under ``folder`` that git does not ignore (relative to ``folder``);
    None when ``folder`` is not in a git work tree or git cannot be run. ``inside``: the
    parts from the search folder to ``folder`` (for nested repositories). Raises
    :class:`GitTimeout`."""
    args = ("ls-files", "--cached", "--others", "--exclude-standard", "-z")
    ran = await git.run(folder, *args, deadline=deadline)
    if ran is None or ran[0] != 0:
        return None
    # Parsing and matching a large listing is CPU work: keep it off the event loop.
    found, nested_repos = await asyncio.to_thread(_match_listing, ran[1], matcher, inside)
    listing = Listing(found, await _git_unreadable(git, folder, ran[2], deadline))
    if len(inside) < 32:
        for nested in nested_repos:
            parts = tuple(nested.rstrip("/").split("/"))
            if not matcher.may_contain(inside + parts):
                continue
            inner = await git_list(git, folder / nested, matcher, deadline, inside + parts)
            if inner:
                listing.found.extend(nested + p for p in inner.found)
                listing.unreadable.extend(inner.unreadable)
    return listing


async def _git_unreadable(
    git: GitRunner, folder: Path, stderr: bytes, deadline: float
) -> list[tuple[Path, str]]:
    """The folders git warned it could not read (its warnings name them relative to the
    top of the work tree, not to ``folder``)."""
    warned = [m.groups() for m in map(_GIT_UNREADABLE.search, stderr.splitlines()) if m]
    if not warned:
        return []
    ran = await git.run(folder, "rev-parse", "--show-toplevel", deadline=deadline)
    if ran is None or ran[0] != 0:
        return []
    top = Path(os.fsdecode(ran[1].rstrip(b"\n")))
    return [
        (top / os.fsdecode(name.rstrip(b"/")), why.decode(errors="replace")) for name, why in warned
    ]


def _match_listing(
    listing: bytes, matcher: Matcher, inside: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """(matching files, untracked nested repositories) of ``git ls-files -z`` output."""
    entries = listing.decode("utf-8", "surrogateescape").rstrip("\0").split("\0")
    if entries == [""]:
        return [], []
    if inside:
        prefix = "/".join(inside) + "/"
        found = [e for e in entries if matcher.matches(prefix + e)]
    else:
        found = matcher.filter(entries)
    # "name/" entries are untracked nested repositories: git lists them, not their files.
    nested: list[str] = []
    if b"/\0" in listing or listing.endswith(b"/"):
        nested = [e for e in entries if e.endswith("/")]
        found = [e for e in found if not e.endswith("/")]
    # Unmerged paths are listed once per stage.
    return list(dict.fromkeys(found)), nested


async def git_ignores(git: GitRunner, path: Path, deadline: float) -> bool:
    """Whether the git repository around ``path`` ignores it (e.g. the workspace is a
    folder that an enclosing repository lists in its ``.gitignore``)."""
    ran = await git.run(path, "check-ignore", "-q", "--", str(path), deadline=deadline)
    return ran is not None and ran[0] == 0


# --- the walk -------------------------------------------------------------------------


class _IgnoreRules:
    """The ``.gitignore`` files that apply to one folder, deepest last."""

    def __init__(self, specs: tuple[tuple[int, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.specs = specs

    def below(self, folder: Path, depth: int) -> _IgnoreRules:
        """The rules for ``folder`` (``depth`` parts below the root): these plus its own
        ``.gitignore``, if any."""
        spec = _load_gitignore(folder / ".gitignore")
        return self if spec is None else _IgnoreRules((*self.specs, (depth, spec)))

    def ignores(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        # The deepest file with a matching rule decides; inside it, the last rule.
        for depth, spec in reversed(self.specs):
            rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
            decision = spec.check_file(rel).include
            if decision is not None:
                return decision
        return False


def _load_gitignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    import pathspec  # only the non-git walk needs it; keeps it off the server's start-up

    try:
        data = read_regular(path, MAX_GITIGNORE_BYTES).data
    except OSError:  # absent, unreadable, or a FIFO or device (which would block): no rules
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    lines = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # one malformed line: keep the others (git skips it too)
        good = []
        for ln in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([ln])
            except Exception:
                continue
            good.append(ln)
        return pathspec.GitIgnoreSpec.from_lines(good) if good else None


def walk(
    root: Path,
    folder: Path,
    matcher: Matcher,
    *,
    respect_ignores: bool,
    cancelled: threading.Event,
    deadline: float,
) -> Listing:
    """Matching files under ``folder`` (relative to it) by walking the tree.

    With ``respect_ignores``, ``.gitignore`` files from ``root`` down apply and ``.git``
    is skipped; ignored folders are never entered. Symlinked folders are never
    followed. Stops early (``out_of_time``) at ``deadline``, or when ``cancelled``.
    """
    listing = Listing()
    rules = _IgnoreRules()
    start_parts = folder.relative_to(root).parts
    if respect_ignores:
        rules = rules.below(root, 0)
        here = root
        for i, part in enumerate(start_parts):
            if part == ".git" or rules.ignores(start_parts[: i + 1], is_dir=True):
                return listing
            here = here / part
            rules = rules.below(here, i + 1)

    pending: list[tuple[Path, tuple[str, ...], _IgnoreRules]] = [(folder, (), rules)]
    while pending:
        if cancelled.is_set():
            return listing
        if time.monotonic() >= deadline:
            listing.out_of_time = True
            return listing
        current, rel, rules = pending.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            if not rel:
                raise  # the search folder itself: the caller says so
            continue  # removed (or replaced by a file) since it was listed
        except OSError as exc:
            if not rel:
                raise
            listing.unreadable.append((current, exc.strerror or str(exc)))
            continue
        for count, entry in enumerate(entries, 1):
            if count % _CHECK_EVERY == 0 and (cancelled.is_set() or time.monotonic() >= deadline):
                listing.out_of_time = not cancelled.is_set()
                return listing
            parts = (*rel, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if respect_ignores and (
                        entry.name == ".git" or rules.ignores((*start_parts, *parts), is_dir=True)
                    ):
                        continue
                    if matcher.may_contain(parts):
                        depth = len(start_parts) + len(parts)
                        below = rules.below(Path(entry.path), depth) if respect_ignores else rules
                        pending.append((Path(entry.path), parts, below))
                elif _is_match(entry, parts, start_parts, root, matcher, rules, respect_ignores):
                    listing.found.append("/".join(parts))
            except OSError:
                continue  # removed meanwhile, or its type cannot be read: nothing to list
    return listing


def _is_match(
    entry: os.DirEntry[str],
    parts: tuple[str, ...],
    start_parts: tuple[str, ...],
    root: Path,
    matcher: Matcher,
    rules: _IgnoreRules,
    respect_ignores: bool,
) -> bool:
    """Whether a non-folder entry is a file to list."""
    if not matcher.matches("/".join(parts)):
        return False
    if respect_ignores and (
        entry.name == ".git" or rules.ignores((*start_parts, *parts), is_dir=False)
    ):
        return False
    return entry.is_file(follow_symlinks=False) or (
        entry.is_symlink() and is_listable_file(Path(entry.path), root)
    )


def is_listable_file(path: Path, root: Path) -> bool:
    """A regular file, or a symlink to a regular file inside ``root``."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode):
            return True
        if not stat.S_ISLNK(mode):
            return False
        target = path.resolve(strict=True)
        return (target == root or target.is_relative_to(root)) and stat.S_ISREG(
            os.stat(target).st_mode
        )
    except (OSError, RuntimeError):
        return False
