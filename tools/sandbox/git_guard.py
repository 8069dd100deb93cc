"""What git obeys in a workspace: found, listed for read-only mounts, and fingerprinted.

Git runs commands named in files that no diff shows: a repository's ``config`` and
``config.worktree`` (``core.fsmonitor``, ``core.hooksPath``, pagers, filters, aliases), its
hooks, the ``commondir`` that says where the rest of a repository lives (its config
included), and the ``.git`` files that point a checkout at its git dir. The bash sandbox
lets a command write in the workspace, ``.git`` included, so that commits work; a command
could therefore plant something that the user's next ``git status`` runs, outside any
sandbox (``git status`` at the top also runs git in every submodule). This module is the
one owner of what git obeys; its defences share one discovery:

- :func:`protected_paths`: those files that exist, for the sandbox to bind read-only, and
  :func:`pinned_folders`: the git dirs and the folders leading to them, bound onto
  themselves so that no command can rename one aside and plant a fresh one in its place;
- :func:`fingerprint` before and after a call, and :func:`change_note`: what the call
  created, changed or removed (a new repository named as one), for the model to tell the
  user; :func:`coverage_note`: what the watch could not read, said rather than passed over.
  Only the watch covers names that do not exist yet: a mount over a missing file would
  create it in the user's repository;
- :func:`obeys`: whether git would obey one path, for the file tools, which write outside
  the sandbox and so ask the user first (``tools.git_writes``).

Discovery (:func:`git_dirs`) walks, in this order, so that a budget spent early is spent on
what matters most: the workspace's own ``.git`` (a folder, or a file naming one elsewhere);
in every git dir found, ``commondir``'s target, linked worktrees' dirs (``worktrees/*``) and
submodules' (``modules/**``, names may hold slashes, submodules nest as
``modules/a/modules/b``); the checkouts each ``.gitmodules`` names, at any depth; then the
working tree breadth-first, ``MAX_DEPTH`` levels down, for nested repositories (a ``.git``
folder or file, or a bare repository). Symlinked folders are never entered and a git dir's
internals (objects, refs, logs) never listed. Every listing draws on one budget of entries;
when it runs out the result says so (``truncated``) rather than missing things silently.
Breadth-first means what a budget leaves out is the deepest levels, the least likely place
for the user or an editor to run git. Scanning only ``.gitmodules`` would be cheaper but
blind to the nested repository a command creates with ``git init``, one of the attacks.

Cost: listing folders is most of it (on the VM of ``bench/bench_git_guard.py`` about 19 us a
folder, against 3 us for a stat). Given an earlier result (``since``), the scan lists again
only the folders whose ctime moved and stats the others: a folder's ctime moves whenever an
entry is added, removed or renamed in it, and unlike its mtime no command can set it back.
The result is the same with or without ``since``; only its cost differs (this repository:
12 ms fresh, under 3 ms with ``since``; a tree that exhausts the budget: 60-75 ms and 15-25).

Not followed: ``include.path`` files named by a config (a tracked one shows in a diff) and
the global and system configs (outside the workspace, not writable in the sandbox).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Literal, NamedTuple

# Levels below the workspace searched for nested repositories: root/a/b/c/d/.git is found.
MAX_DEPTH = 4
# Directory entries listed per discovery, in all: spent, it costs 60-75 ms on the bench's
# VM fresh, 15-25 ms with ``since`` (the ceiling for a workspace of any size).
ENTRY_BUDGET = 20_000
# Entries read from one hooks folder: git knows about 30 hook names, so more is a planted
# folder; what is beyond the limit is not watched, and the fingerprint says truncated.
HOOKS_LIMIT = 1_000
# Files up to this size are hashed, up to HASH_BUDGET bytes in all per fingerprint (a
# core.hooksPath can name any folder, /usr/bin too); others are compared by their stat.
HASH_LIMIT = 1 << 20
HASH_BUDGET = 8 << 20
# Files git reads in every git dir (``gitdir`` only exists in a linked worktree's).
OBEYED_FILES = ("config", "config.worktree", "commondir", "gitdir")
# A folder under ``modules/`` holding one of these is a submodule's git dir, not a level
# of a submodule name with slashes (``modules/libs/sub``); ``config`` counts so that a
# planted config is watched before the rest of the git dir around it exists.
_GIT_DIR_MARKERS = frozenset({"HEAD", "config", "commondir"})
# A folder holding all three is a bare repository: git run in it obeys its config.
_BARE_MARKERS = frozenset({"HEAD", "objects", "refs"})
# Read-only mounts (protected_paths) past which a git dir's worktrees/ and modules/ are
# mounted whole: a normal repository has a few, a planted tree thousands.
MAX_MOUNTS = 256
# Names the note quotes at most; a removed ``.git/modules`` could name hundreds.
_NOTE_NAMES = 20
# A listing is reused only if the folder's ctime is older than the listing by this much:
# the kernel stamps ctime from a coarse clock (a few ms), so a change made just after a
# listing can carry a ctime from just before it (git's "racy" entries, the same problem).
_RACY_NS = 1_000_000_000

GitDirKind = Literal["workspace", "worktree", "submodule", "nested"]


@dataclass(frozen=True)
class GitDir:
    """A folder git may use as a repository's git dir."""

    path: Path  # resolved
    # workspace: the one a git run in the workspace root uses (its HEAD and index stay
    # writable: commits must work); worktree: another linked worktree's private dir;
    # submodule: under some ``modules/``; nested: any other (a nested or bare repository,
    # what a commondir or another checkout's ``.git`` file names).
    kind: GitDirKind
    # The checkout it serves, when discovery saw its ``.git``: a relative core.hooksPath
    # is relative to it (to the git dir itself in a bare repository).
    work_tree: Path | None = None


class _Listing(NamedTuple):
    """What the scan needs of one working-tree folder, and when it was true."""

    identity: tuple[int, int, int]  # st_dev, st_ino, st_ctime_ns before the listing
    listed_at: int  # time.time_ns() before the listing
    entries: int  # drawn from the budget again when reused, so coverage is the same
    subfolders: tuple[str, ...]  # not symlinks; none at MAX_DEPTH
    has_dot_git: bool
    bare: bool  # holds HEAD, objects and refs


@dataclass(frozen=True)
class GitDirs:
    dirs: tuple[GitDir, ...]
    # ``.git`` files and symlinks naming a git dir: the checkouts' pointers.
    pointers: tuple[Path, ...]
    # The entry budget ran out: nested repositories beyond what was listed are missing.
    truncated: bool
    # It ran out before every git dir a git run at the workspace root obeys was read (its
    # own, commondir, worktrees, modules, the .gitmodules checkouts): only a planted tree
    # gets there (tens of thousands of folders under .git/worktrees), never a normal one.
    root_truncated: bool = False
    # The workspace root it was taken of (resolved).
    root: str = ""
    # The working-tree folders as listed, for the next discovery's ``since``.
    listings: Mapping[str, _Listing] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Fingerprint:
    # What each obeyed file says, by the name the note shows (relative to the workspace
    # root, absolute outside it); a name git would obey but that does not exist is absent.
    digests: Mapping[str, str]
    truncated: bool
    # Part of what a git run at the workspace root obeys was not read: the discovery's
    # root_truncated, or a hooks folder of more than HOOKS_LIMIT entries.
    root_truncated: bool
    # The discovery it was taken over: for protected_paths, and the next one's ``since``.
    found: GitDirs = field(repr=False, compare=False)


def git_dirs(root: Path, *, budget: int = ENTRY_BUDGET, since: GitDirs | None = None) -> GitDirs:
    """Every git dir that a git run in or below ``root`` could obey (see the module doc).

    ``since``, an earlier result for the same root, only makes it cheaper.
    """
    previous = since.listings if since is not None else {}
    return _Discovery(os.path.realpath(root), budget, previous).run()


def protected_paths(root: Path, *, found: GitDirs | None = None) -> list[Path]:
    """The existing files and folders git obeys, for the sandbox to bind read-only.

    For each git dir its config, config.worktree, commondir and hooks folder; another
    linked worktree's private dir whole; every ``.git`` file. Only real files and folders:
    a mount follows a symlink, so it would freeze whatever the link points to, and over a
    missing name it would create it; those are left to the watch. Sorted, so parents come
    before children, and a path inside one already listed is left out.
    """
    found = found if found is not None else git_dirs(root)
    paths: set[str] = set()
    for git_dir in found.dirs:
        if git_dir.kind == "worktree":
            paths.add(str(git_dir.path))
            continue
        for name in ("config", "config.worktree", "commondir", "hooks"):
            paths.add(os.path.join(git_dir.path, name))
    paths.update(map(str, found.pointers))
    if len(paths) > MAX_MOUNTS:
        paths = _collapsed(paths, found)
    listed: set[tuple[str, ...]] = set()
    for parts in sorted(Path(path).parts for path in paths if _is_real(path)):
        if not any(parts[:length] in listed for length in range(1, len(parts))):
            listed.add(parts)
    return [Path(*parts) for parts in sorted(listed)]


def _collapsed(paths: set[str], found: GitDirs) -> set[str]:
    """Fewer mounts for a tree of thousands of worktrees or submodules (a planted one: each
    mount costs bubblewrap more than the last): a git dir's whole ``worktrees`` and
    ``modules`` folders read-only instead of what is in them (then a command can neither
    add a worktree nor update a submodule there)."""
    folders = [
        os.path.join(git_dir.path, name)
        for git_dir in found.dirs
        if git_dir.kind in ("workspace", "nested")
        for name in ("worktrees", "modules")
    ]
    kept = {path for path in paths if not any(_within(path, f) for f in folders)}
    return kept | {folder for folder in folders if any(_within(p, folder) for p in paths)}


def fingerprint(
    root: Path, *, budget: int = ENTRY_BUDGET, since: Fingerprint | None = None
) -> Fingerprint:
    """What every file git obeys in ``root`` says now; compare two with :func:`change_note`.

    ``since``, an earlier fingerprint of the same root (the one before the call, or the
    previous call's after), only makes it cheaper.
    """
    real_root = os.path.realpath(root)
    found = git_dirs(root, budget=budget, since=since.found if since is not None else None)
    truncated = found.truncated
    root_truncated = found.root_truncated
    digests: dict[str, str] = {}
    hash_left = HASH_BUDGET

    def watch(path: str) -> bytes:
        nonlocal hash_left
        digest, data = _digest(path, min(HASH_LIMIT, hash_left))
        hash_left -= len(data)
        if digest is not None:
            digests[_shown(path, real_root)] = digest
        return data

    for pointer in found.pointers:
        watch(str(pointer))
    # Thousands of linked worktrees are a planted tree: watching each costs seconds a call.
    # Their folder is mounted read-only whole then (protected_paths), and the result says
    # what is not watched (root_truncated: "could not check"), so nothing passes silently.
    many = sum(git_dir.kind == "worktree" for git_dir in found.dirs) > MAX_MOUNTS
    root_truncated |= many
    truncated |= many
    for git_dir in found.dirs:
        if many and git_dir.kind == "worktree":
            continue
        texts = {name: watch(os.path.join(git_dir.path, name)) for name in OBEYED_FILES}
        for hooks in _hook_folders(git_dir, texts["config"], texts["config.worktree"]):
            try:
                with os.scandir(hooks) as listing:
                    entries = list(islice(listing, HOOKS_LIMIT + 1))
            except OSError:
                continue
            if len(entries) > HOOKS_LIMIT:
                truncated = root_truncated = True
            for entry in entries[:HOOKS_LIMIT]:
                # Git never runs ``*.sample``: git init writes a dozen in every git dir.
                if not entry.name.endswith(".sample"):
                    watch(entry.path)
    return Fingerprint(digests, truncated, root_truncated, found)


def change_note(before: Fingerprint, after: Fingerprint) -> str | None:
    """The note for the model when a call changed what git obeys, or None."""
    names = sorted(before.digests.keys() | after.digests.keys())
    created = [n for n in names if n not in before.digests]
    removed = [n for n in names if n not in after.digests]
    changed = [
        n
        for n in names
        if n in before.digests and n in after.digests and before.digests[n] != after.digests[n]
    ]
    known = {git_dir.path for git_dir in before.found.dirs}
    real_root = os.path.realpath(before.found.root) if before.found.root else ""
    repositories = [
        _shown(str(git_dir.path), real_root)
        for git_dir in after.found.dirs
        if git_dir.path not in known
    ]
    if before.truncated or after.truncated:
        # Near the budget's edge a repository can drop out of one fingerprint only because
        # the command added files; a removal makes git obey less, so it is not worth a
        # false note, while a creation may be the attack and is reported anyway.
        removed = []
    parts = [
        f"{verb} {_names(group)}"
        for verb, group in (
            ("made a new repository (git dir) at", repositories),
            ("created", created),
            ("changed", changed),
            ("removed", removed),
        )
        if group
    ]
    if not parts:
        return None
    return (
        f"Note: this command {'; '.join(parts)}. Git obeys these files (its configuration, "
        "hooks and where a repository's files are) whenever the user runs git, outside the "
        "sandbox; tell the user about this change in your answer."
    )


def coverage_note(after: Fingerprint, *, again: bool = True) -> str | None:
    """The note for the model when the watch could not check everything, or None.

    The watch fails closed: what it could not read is said, never passed over. When what a
    git run at the workspace root obeys was not all read (a planted tree: nothing normal
    has tens of thousands of worktrees or submodules) it is said after every call. When
    only the search for nested repositories ran out (a large working tree) it is said when
    ``again`` (the caller's choice: the first such call, so a big monorepo does not repeat
    it on every call).
    """
    if after.root_truncated:
        return (
            "Note: agent-lsp could not check what git obeys in this workspace: its git "
            "folder holds more entries (worktrees, submodules or hooks) than the watch reads "
            f"({ENTRY_BUDGET:,} in all), so a change this command made to git's configuration "
            "or hooks may be unseen. Git runs what they name whenever the user runs git, "
            "outside the sandbox. Tell the user this in your answer: they should look at "
            ".git (worktrees/, modules/, hooks/) before running git here."
        )
    if after.truncated and again:
        return (
            "Note: agent-lsp could not check what git obeys in all of this workspace: it has "
            f"more folders than the watch lists ({ENTRY_BUDGET:,} entries, {MAX_DEPTH} levels "
            "down), so a repository a command creates or changes beyond them is not "
            "reported (the workspace's own .git and its submodules are). Tell the user this "
            "once in your answer."
        )
    return None


def pinned_folders(root: Path, *, found: GitDirs | None = None) -> list[Path]:
    """The folders to bind onto themselves so that a command cannot move a git dir aside.

    A mount point cannot be renamed (EBUSY): binding each git dir found inside ``root``,
    each checkout holding a ``.git`` pointer, and every folder between them and ``root``
    means no ``mv .git .git-old`` (nor ``mv .git/modules``, ``mv libs`` above a submodule)
    can put a fresh git dir, with a planted config, where git will look. The read-only
    mounts of :func:`protected_paths` go inside them. ``root`` itself is already a mount.
    Real folders only, sorted parents first.
    """
    found = found if found is not None else git_dirs(root)
    real_root = os.path.realpath(root)
    # A linked worktree's dir is bound read-only whole (protected_paths): a mount already.
    starts = [
        str(git_dir.path) if git_dir.kind != "worktree" else os.path.dirname(git_dir.path)
        for git_dir in found.dirs
    ]
    starts += [os.path.dirname(pointer) for pointer in map(str, found.pointers)]
    folders: set[str] = set()
    for start in starts:
        folder = start
        while folder.startswith(real_root + os.sep) and folder not in folders:
            folders.add(folder)
            folder = os.path.dirname(folder)
    return [
        Path(folder)
        for folder in sorted(folders, key=lambda f: (f.count(os.sep), f))
        if _is_real_dir(folder)
    ]


def obeys(path: Path, root: Path, *, found: GitDirs | None = None) -> str | None:
    """Why git would obey a file written at ``path`` in the workspace ``root``, or None.

    The question the file tools ask before a write (and the answer the user reads):

    - anything inside a git dir (found by discovery, named ``.git``, or a folder that holds
      or with this write would hold ``HEAD`` and ``objects`` and ``refs``, or ``HEAD`` and
      ``commondir``: a new repository): its ``config``, ``config.worktree``, ``commondir``,
      ``gitdir``, hooks, ``info/attributes``, ``modules/**`` and ``worktrees/**``, and
      the rest too, since git reads all of it as the repository (``objects/info/alternates``
      points elsewhere for objects, ``HEAD`` and ``packed-refs`` say what is checked out);
    - a ``.git`` file or folder anywhere (a pointer says where a checkout's repository is);
    - anything in a hooks folder (``hooks/`` or a ``core.hooksPath`` target, in the working
      tree too: husky's ``.husky/``), and a file a hook is a symbolic link to;
    - a file a config includes (``include.path``, ``includeIf.*.path``).

    Not ``.gitmodules`` nor ``.gitattributes``: they name paths, URLs and the names of
    drivers, whose commands only a config defines (git refuses a ``!command`` update and
    the ``ext::`` transport from ``.gitmodules``); both are tracked files, shown in a diff.
    """
    real_root = os.path.realpath(root)
    lexical = os.path.abspath(os.path.join(root, path))
    real = os.path.realpath(lexical)
    for candidate in dict.fromkeys((lexical, real)):
        for base in dict.fromkeys((os.path.abspath(root), real_root)):
            if candidate != base and not candidate.startswith(base.rstrip(os.sep) + os.sep):
                continue
            why = _obeyed_by_name(candidate, base)
            if why is not None:
                return why
    found = found if found is not None else git_dirs(root)
    # The checkouts above the file, whatever the budget reached: their git dirs are read
    # here even when the discovery ran out before them.
    discovery = _Discovery(real_root, ENTRY_BUDGET, {})
    known = {str(git_dir.work_tree) for git_dir in found.dirs if git_dir.work_tree is not None}
    folder = os.path.dirname(real)
    while folder == real_root or folder.startswith(real_root + os.sep):
        if folder not in known:  # found already, with what its git dir leads to
            discovery.checkout(folder, "nested")
        folder = os.path.dirname(folder)
    dirs = {git_dir.path: git_dir for git_dir in found.dirs}
    for git_dir in discovery.dirs.values():
        dirs.setdefault(git_dir.path, git_dir)
    shown = _shown(real, real_root)
    # Thousands of linked worktrees are a planted tree (their dirs are mounted read-only in
    # the sandbox, so only the user could have set a hooksPath there): their configs are
    # not read, or one write would cost seconds.
    many = sum(git_dir.kind == "worktree" for git_dir in dirs.values()) > MAX_MOUNTS
    for git_dir in dirs.values():
        where = str(git_dir.path)
        if _within(real, where):
            return (
                f"{shown} is inside the git dir {_shown(where, real_root)}: git reads "
                "its configuration, hooks and what the repository is from there"
            )
        if many and git_dir.kind == "worktree":
            continue
        configs = [_read_small(os.path.join(where, name)) or b"" for name in _CONFIGS]
        for hooks in _hook_folders(git_dir, *configs):
            real_hooks = os.path.realpath(hooks)
            if _within(real, real_hooks):
                return (
                    f"{shown} is in {_shown(real_hooks, real_root)}, where git looks for "
                    "hooks: git runs them (a commit runs pre-commit)"
                )
            for hook in _links_in(hooks):
                if os.path.realpath(hook) == real:
                    return f"the hook {_shown(hook, real_root)} is a link to {shown}: git runs it"
        for config in configs:
            for included in _config_values(config, b"include", b"path", any_subsection=True):
                target = os.path.realpath(
                    os.path.join(where, os.path.expanduser(os.fsdecode(included)))
                )
                if target == real:
                    return f"the configuration of {_shown(where, real_root)} includes {shown}"
    return None


def _obeyed_by_name(path: str, base: str) -> str | None:
    """What the names on the way from ``base`` to ``path`` say (no discovery needed)."""
    parts = os.path.relpath(path, base).split(os.sep) if path != base else []
    shown = "/".join(parts)
    for index, part in enumerate(parts):
        if part.casefold() == ".git":  # a case-insensitive file system: .GIT is .git
            where = "/".join(parts[: index + 1])
            if index == len(parts) - 1:
                return (
                    f"{shown} is a .git file or folder: it says where a checkout's repository "
                    "is, and git obeys that repository's configuration"
                )
            return (
                f"{shown} is inside the git dir {where}: git reads its configuration, hooks "
                "and what the repository is from there"
            )
    # A folder that is, or with this write becomes, a git dir (git's is_git_directory):
    # from the file's folder up to ``base``, each with the name below it on the way.
    folder = base
    for index, part in enumerate(parts):
        try:
            present = {n for n in ("HEAD", "objects", "refs", "commondir")
                       if os.path.lexists(os.path.join(folder, n))}  # fmt: skip
        except OSError:
            present = set()
        present.add(part)
        if "HEAD" in present and ({"objects", "refs"} <= present or "commondir" in present):
            where = "/".join(parts[:index]) or "the workspace folder"
            return (
                f"{shown} is in {where}, which is or would become a git dir (it holds HEAD, "
                "objects and refs): git obeys the configuration and hooks of a repository "
                "there"
            )
        folder = os.path.join(folder, part)
    return None


_CONFIGS = ("config", "config.worktree")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _links_in(folder: str) -> list[str]:
    """The symbolic links among a hooks folder's first HOOKS_LIMIT entries."""
    try:
        with os.scandir(folder) as listing:
            return [e.path for e in islice(listing, HOOKS_LIMIT) if e.is_symlink()]
    except OSError:
        return []


# -- discovery --------------------------------------------------------------------------


class _Discovery:
    """One walk: string paths throughout (a Path per entry would double its cost)."""

    def __init__(self, root: str, budget: int, previous: Mapping[str, _Listing]) -> None:
        self.root = root
        self.left = budget
        self.truncated = False
        self.previous = previous
        self.listings: dict[str, _Listing] = {}
        self.dirs: dict[str, GitDir] = {}  # resolved path -> git dir, in discovery order
        self.pointers: dict[str, None] = {}  # an ordered set
        self.checkouts: list[str] = []  # folders whose .git was looked at, in order
        self.seen_checkouts: set[str] = set()
        self.gitmodules_read = 0  # how many of them had their .gitmodules read

    def run(self) -> GitDirs:
        self.checkout(self.root, "workspace")
        self.read_gitmodules()
        root_truncated = self.truncated
        self.scan_working_tree()
        self.read_gitmodules()  # those of the nested repositories the scan found
        return GitDirs(
            tuple(self.dirs.values()),
            tuple(map(Path, self.pointers)),
            self.truncated,
            root_truncated,
            self.root,
            self.listings,
        )

    def entries(self, folder: str) -> list[os.DirEntry[str]]:
        """A folder's entries, drawn from the budget; none for a folder that is not there."""
        if self.left <= 0:
            self.truncated = True
            return []
        try:
            with os.scandir(folder) as listing:
                entries = list(islice(listing, self.left + 1))
        except OSError:
            return []
        if len(entries) > self.left:
            self.truncated = True
            del entries[self.left :]
        self.left -= len(entries)
        return entries

    def checkout(self, top: str, kind: GitDirKind) -> None:
        """``top/.git``, whatever it is: a git dir, or a file or symlink naming one."""
        if top in self.seen_checkouts:
            return
        self.seen_checkouts.add(top)
        self.checkouts.append(top)
        dot_git = os.path.join(top, ".git")
        try:
            mode = os.lstat(dot_git).st_mode
        except OSError:
            return
        if stat.S_ISDIR(mode):
            self.git_dir(dot_git, kind, top)
            return
        self.pointers[dot_git] = None
        if stat.S_ISLNK(mode):
            target = os.path.realpath(dot_git)
        else:
            text = _read_small(dot_git)
            # As git's read_gitfile: "gitdir: <path>", relative to the file's folder.
            if text is None or not text.startswith(b"gitdir: "):
                return
            relative = os.fsdecode(text[len(b"gitdir: ") :].strip())
            target = os.path.realpath(os.path.join(top, relative))
        if os.path.isdir(target):
            self.git_dir(target, kind, top)

    def git_dir(self, real: str, kind: GitDirKind, work_tree: str | None) -> None:
        """A git dir and those it leads to: its commondir, worktrees and submodules.

        Paths are resolved ones, so that one git dir has one name: a listing of a resolved
        folder that does not follow symlinks yields resolved paths, and a path read from a
        file (a pointer, a commondir) goes through realpath.
        """
        pending: list[tuple[str, GitDirKind, str | None]] = [(real, kind, work_tree)]
        while pending:
            real, kind, work_tree = pending.pop()
            if real in self.dirs:
                # Found under modules/ or worktrees/ first, by its checkout's .git now.
                if work_tree is not None and self.dirs[real].work_tree is None:
                    self.dirs[real] = replace(self.dirs[real], work_tree=Path(work_tree))
                continue
            self.dirs[real] = GitDir(Path(real), kind, Path(work_tree) if work_tree else None)
            common = _read_small(os.path.join(real, "commondir"))
            if common and common.strip():
                target = os.path.realpath(os.path.join(real, os.fsdecode(common.strip())))
                pending.append((target, "nested", None))
            for worktree in _subfolders(self.entries(os.path.join(real, "worktrees"))):
                pending.append((worktree, "worktree", None))
            folders = _subfolders(self.entries(os.path.join(real, "modules")))
            while folders:
                folder = folders.pop()
                inside = self.entries(folder)
                if any(entry.name in _GIT_DIR_MARKERS for entry in inside):
                    pending.append((folder, "submodule", None))
                else:  # a level of a name with slashes
                    folders += _subfolders(inside)

    def read_gitmodules(self) -> None:
        """The checkouts named by the ``.gitmodules`` of every checkout found so far."""
        while self.gitmodules_read < len(self.checkouts):
            top = self.checkouts[self.gitmodules_read]
            self.gitmodules_read += 1
            text = _read_small(os.path.join(top, ".gitmodules"))
            for match in _GITMODULES_PATH.finditer(text or b""):
                relative = os.path.normpath(os.fsdecode(match[1].strip(b'"')))
                # Git refuses submodule paths that leave the checkout.
                if os.path.isabs(relative) or relative.split(os.sep)[0] == "..":
                    continue
                if self.left <= 0:  # a .gitmodules of a million paths is a planted one
                    self.truncated = True
                    return
                self.left -= 1
                # Resolved: a symlink on the way would give one checkout a second name.
                self.checkout(os.path.realpath(os.path.join(top, relative)), "nested")

    def scan_working_tree(self) -> None:
        """Nested repositories below the root, breadth-first, ``MAX_DEPTH`` levels down."""
        queue = deque([(self.root, 0)])
        while queue:
            folder, depth = queue.popleft()
            listing = self.reused(folder) or self.listed(folder, depth)
            if listing is None:
                continue
            if listing.has_dot_git:
                self.checkout(folder, "nested")  # the root's was looked at first
            if listing.bare and folder != self.root:
                self.git_dir(folder, "nested", folder)  # its internals are not scanned
            else:
                queue.extend((subfolder, depth + 1) for subfolder in listing.subfolders)

    def reused(self, folder: str) -> _Listing | None:
        """The previous listing of ``folder``, if no entry can have changed since."""
        old = self.previous.get(folder)
        if old is None or old.entries > self.left:
            return None
        try:
            info = os.lstat(folder)
        except OSError:
            return None
        if (info.st_dev, info.st_ino, info.st_ctime_ns) != old.identity:
            return None
        if info.st_ctime_ns >= old.listed_at - _RACY_NS:
            return None
        self.left -= old.entries
        self.listings[folder] = old
        return old

    def listed(self, folder: str, depth: int) -> _Listing | None:
        if self.left <= 0:
            self.truncated = True
            return None
        listed_at = time.time_ns()
        subfolders: list[str] = []
        entries = 0
        has_dot_git = False
        markers = 0
        partial = False
        try:
            # scandir would follow a symlink, but this was a real folder when its parent
            # was listed, and no process of the call is left to swap one in since.
            info = os.lstat(folder)
            with os.scandir(folder) as listing:
                for entry in listing:
                    if entries == self.left:
                        partial = self.truncated = True
                        break
                    entries += 1
                    name = entry.name
                    if name == ".git":
                        has_dot_git = True
                        continue  # a git dir's internals are looked at by checkout()
                    if name in _BARE_MARKERS:
                        markers += 1
                    if depth < MAX_DEPTH and entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.path)
        except OSError:
            return None
        self.left -= entries
        listing = _Listing(
            (info.st_dev, info.st_ino, info.st_ctime_ns),
            listed_at,
            entries,
            tuple(subfolders),
            has_dot_git,
            markers == len(_BARE_MARKERS),
        )
        if not partial:  # a partial listing is not one to reuse
            self.listings[folder] = listing
        return listing


def _subfolders(entries: list[os.DirEntry[str]]) -> list[str]:
    return [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]


# A line ``path = libs/sub`` of .gitmodules (any section: git reads only submodule ones,
# but watching one more checkout costs nothing). Best effort: no escapes, no comments.
_GITMODULES_PATH = re.compile(
    rb"^[ \t]*path[ \t]*=[ \t]*(.*?)[ \t\r]*$", re.IGNORECASE | re.MULTILINE
)


def _hook_folders(git_dir: GitDir, *configs: bytes) -> list[str]:
    """Where git looks for this repository's hooks: ``hooks/``, or core.hooksPath."""
    folders = [os.path.join(git_dir.path, "hooks")]
    for config in configs:
        value = _hooks_path(config)
        if value is None:
            continue
        value = os.path.expanduser(os.fsdecode(value))
        base = git_dir.work_tree
        if os.path.isabs(value):
            folders.append(value)
        elif base is not None:
            # Relative to where git runs hooks: the checkout's top (husky's ``.husky/_``,
            # ignored by git, so invisible in a diff).
            folders.append(os.path.join(base, value))
        else:
            continue
        # husky 9: ``.husky/_`` holds wrappers that run ``.husky/<hook>``: those run too.
        if os.path.basename(os.path.normpath(folders[-1])) == "_":
            folders.append(os.path.dirname(os.path.normpath(folders[-1])))
    return folders


def _hooks_path(config: bytes) -> bytes | None:
    """``core.hooksPath`` in a config file's text, the last one winning as in git."""
    values = _config_values(config, b"core", b"hookspath")
    return values[-1] if values else None


def _config_values(
    config: bytes, section: bytes, key: bytes, *, any_subsection: bool = False
) -> list[bytes]:
    """The values of ``section.key`` in a config file's text, in order.

    Best effort (no includes, escapes or continuation lines): the watch of the config file
    itself reports any change to it, this only adds what it names to what is watched.
    ``any_subsection``: ``[includeIf "gitdir:x"]`` counts as ``[include]`` too.
    """
    current = b""
    values: list[bytes] = []
    for line in config.splitlines():
        line = line.strip()
        if line.startswith(b"["):
            end = line.find(b"]")
            if end < 0:
                continue
            current = line[1:end].strip().lower()
            line = line[end + 1 :].strip()  # git allows "[core] hooksPath = x"
        name, equals, rest = line.partition(b"=")
        if any_subsection:
            in_section = re.match(rb"%s(if)?(\s|$)" % re.escape(section), current) is not None
        else:
            in_section = current == section
        if not in_section or not equals or name.strip().lower() != key:
            continue
        rest = rest.strip()
        if rest.startswith(b'"'):
            value = rest[1:].partition(b'"')[0]
        else:
            value = re.split(rb"[#;]", rest, maxsplit=1)[0].strip()
        if value:
            values.append(value)
    return values


# -- files --------------------------------------------------------------------------------


def _read_small(path: str, limit: int = 64 * 1024) -> bytes | None:
    """The start of a small regular file (pointers, commondir, config), or None."""
    try:
        # O_NONBLOCK: a FIFO planted under an obeyed name must not hang the watch.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read(limit)


def _digest(path: str, limit: int) -> tuple[str | None, bytes]:
    """What a file says, for comparison (None when it does not exist), and the bytes hashed.

    The sha256 of its bytes, so a same-size rewrite with its mtime restored is seen. A file
    over ``limit`` or not a regular one by its stat instead, ctime included: a command can
    put an mtime back but not a ctime. A symlink also by its text: git follows it.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return None, b""
    link = ""
    if stat.S_ISLNK(info.st_mode):
        try:
            link = f"symlink to {os.readlink(path)!r}, "
            info = os.stat(path)
        except OSError:
            return f"{link}dangling", b""
    by_stat = (
        f"{link}mode {info.st_mode:o} size {info.st_size} inode {info.st_ino} "
        f"mtime {info.st_mtime_ns} ctime {info.st_ctime_ns}"
    )
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        return by_stat, b""
    data = _read_small(path, limit + 1)
    if data is None or len(data) > limit:  # replaced since the lstat
        return by_stat, b""
    return f"{link}sha256 {hashlib.sha256(data).hexdigest()}", data


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_real(path: str) -> bool:
    """An existing file or folder, not a symlink."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _shown(path: str, root: str) -> str:
    """A path as the note names it: relative to the workspace root, absolute outside it."""
    if path.startswith(root + os.sep):
        return Path(path[len(root) + 1 :]).as_posix()
    return path


def _names(names: list[str]) -> str:
    # Names come from the command's files: quoted when they hold anything unprintable, so a
    # newline in a file name cannot start a line of its own in the model's context.
    shown = [name if name.isprintable() else repr(name) for name in names[:_NOTE_NAMES]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")
