"""A private git repository that snapshots a workspace without touching it.

The repository lives outside the workspace (``git --git-dir=SHADOW --work-tree=WS``),
so the user's own ``.git`` -- index, HEAD, stash, hooks, config -- is never read for
configuration nor written. Git runs with a clean environment: nothing inherited
points it elsewhere (``GIT_DIR`` and friends are dropped), no system or global config
is read (``HOME`` is the shadow's folder), no hook or fsmonitor runs, ``stdin`` is
``/dev/null``, every call has a time limit and is killed with its process group when
it runs over.

Why this git, unlike glob's and the environment's (``tools.workspace_git``), runs
unconfined: it executes nothing a repository in the workspace names. Its only
configuration is the shadow's own ``config`` in the state folder (which no sandboxed call
can write: it is among agent-lsp's hidden paths) and the ``-c`` options of
:data:`SAFETY`, given on every call, which turn hooks, fsmonitor, ssh and remote
protocols off whatever that file says; ``--git-dir`` is explicit, so git never discovers
a ``.git`` in the work tree, never reads its config, ``commondir`` or hooks; a nested
repository is recorded as a link (its ``HEAD`` read, nothing run); the in-tree
``.gitattributes`` cannot name a filter (``info/attributes`` turns every filter off); git
itself is found outside the workspace (``tools.programs``) and its ``PATH`` lacks the
folders the agent may write. ``info/attributes`` turns off every content conversion that in-tree
``.gitattributes`` could ask for (line endings, filters such as LFS, ``ident``,
working-tree encodings), so a blob holds the file's exact bytes and its id is the
plain git blob hash of them (see :func:`blob_id`).

A snapshot is ``git add -A`` into the shadow's own index followed by ``write-tree``:
it honours the workspace's ``.gitignore`` files and ``.git/info/exclude`` and never
enters an ignored folder; with a warm index it costs about what ``git status`` does.
Files inside nested repositories are not snapshotted (git records the nested
repository as a link); the file tools' journal covers the agent's edits there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools import programs

GIT_TIMEOUT = 120.0  # seconds for one git call (a first snapshot of a huge tree)
# A quick call (init, config, diff-tree, ls-tree, refs, cat-file): a git that does not
# answer is killed after this; an ask waits for none of them longer than its snapshot
# wait (``recorder.SNAPSHOT_WAIT``).
QUICK_TIMEOUT = 10.0

# Folders that are rebuilt, never edited, and often huge: never snapshotted even where
# no .gitignore names them (a plain folder with a virtualenv or node_modules).
DEFAULT_EXCLUDES = (
    "node_modules/",
    ".venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
)
# Every content conversion in-tree .gitattributes could request, off: blobs are bytes.
ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"
# Settings of the shadow repository itself (there is no other config: HOME points away).
CONFIG = (
    ("core.bare", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.quotePath", "false"),
    ("core.logAllRefUpdates", "false"),  # no reflogs: dropped checkpoints can be pruned
    ("core.untrackedCache", "true"),
    ("index.version", "4"),
    ("core.splitIndex", "true"),  # an add rewrites a small file, not all 100,000 entries
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("gc.pruneExpire", "1.hour.ago"),
    ("maintenance.auto", "false"),
    ("advice.addEmbeddedRepo", "false"),
    ("advice.detachedHead", "false"),
)
# Given on every call as well, so not even an edited shadow config can run a program.
SAFETY = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.sshCommand=false",
    "-c",
    "protocol.allow=never",
)

GITLINK = 0o160000
SYMLINK = 0o120000


class GitError(Exception):
    """Git failed, hung or is missing (the environment refused, not a bug of ours)."""


def blob_id(data: bytes) -> str:
    """Git's object id of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class TreeEntry:
    mode: int  # git's mode: 0o100644, 0o100755, 0o120000 (0o160000 nested repository)
    oid: str


@dataclass(frozen=True)
class RawChange:
    path: str
    before: TreeEntry | None
    after: TreeEntry | None


@dataclass(frozen=True)
class Snapshot:
    tree: str
    # Paths git could not read (permission denied, vanished mid-walk): not covered.
    skipped: tuple[str, ...] = ()


class ShadowRepo:
    def __init__(self, git: str, git_dir: Path, work_tree: Path, home: Path) -> None:
        self._git = git
        self.git_dir = git_dir
        self.work_tree = work_tree
        self._home = home
        self._env = _clean_env(home, work_tree)

    # -- setup -----------------------------------------------------------------------

    async def ensure(self, extra_excludes: Sequence[str] = ()) -> None:
        """Create the repository if needed and refresh its ignore and attribute rules."""
        if not (self.git_dir / "HEAD").is_file():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            await self._run("init", "--bare", "--quiet", str(self.git_dir), repo=False)
            for key, value in CONFIG:
                await self._run("config", key, value)
            for hook in (self.git_dir / "hooks").glob("*"):
                hook.unlink(missing_ok=True)  # samples only, but nothing should be there
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        _write_if_changed(info / "attributes", ATTRIBUTES)
        excludes = [*DEFAULT_EXCLUDES, *extra_excludes]
        _write_if_changed(info / "exclude", "".join(f"{line}\n" for line in excludes))

    # -- snapshots -------------------------------------------------------------------

    async def snapshot(self, time_limit: float = GIT_TIMEOUT) -> Snapshot:
        """Stage the work tree into the shadow index and write its tree."""
        add = ("add", "--all", "--ignore-errors", "--", ".")
        code, _, err = await self._run(*add, check=False, time_limit=time_limit)
        if code != 0 and b"index.lock" in err:
            # Left by a git of a server that was killed mid-snapshot (the caller holds the
            # repository's lock, so no git of a live server is using the index): once.
            self._drop_stale_index_lock()
            code, _, err = await self._run(*add, check=False, time_limit=time_limit)
        skipped = tuple(_unreadable_paths(err))
        if code != 0 and not (code == 1 and skipped):
            raise GitError(f"git add failed ({code}): {_first_line(err)}")
        _, out, _ = await self._run("write-tree", time_limit=time_limit)
        return Snapshot(out.decode().strip(), skipped)

    async def untrack_ignored(self) -> None:
        """Drop index entries that ignore rules now exclude (``add`` keeps tracked files)."""
        _, out, _ = await self._run("ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
        paths = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
        if paths:
            data = "".join(f"{p}\0" for p in paths).encode("utf-8", "surrogateescape")
            await self._run(
                "rm", "--cached", "--quiet", "-r", "--pathspec-from-file=-",
                "--pathspec-file-nul", input=data,
            )  # fmt: skip

    async def diff(self, before: str, after: str) -> list[RawChange]:
        """What differs between two trees (files, links; nested repositories left out)."""
        if before == after:
            return []
        _, out, _ = await self._run(
            "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--raw", before, after
        )
        fields = out.decode("utf-8", "surrogateescape").split("\0")
        changes: list[RawChange] = []
        for i in range(0, len(fields) - 1, 2):
            meta, path = fields[i], fields[i + 1]
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old_oid, new_oid, _status = meta[1:].split(" ", 4)
            old = _entry(int(old_mode, 8), old_oid)
            new = _entry(int(new_mode, 8), new_oid)
            if old is not None or new is not None:
                changes.append(RawChange(path, old, new))
        return changes

    async def entries(self, tree: str, paths: Iterable[str]) -> dict[str, TreeEntry]:
        """The entries of ``paths`` in ``tree`` (missing ones left out)."""
        wanted = list(paths)
        if not wanted:
            return {}
        _, out, _ = await self._run("ls-tree", "-z", "--full-tree", tree, "--", *wanted)
        found: dict[str, TreeEntry] = {}
        for record in out.decode("utf-8", "surrogateescape").split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            mode, _kind, oid = meta.split(" ")
            entry = _entry(int(mode, 8), oid)
            if entry is not None:
                found[path] = entry
        return found

    async def read_blobs(
        self, oids: Iterable[str], *, max_size: int | None = None
    ) -> dict[str, bytes]:
        """The contents of blobs by id (ids the repository lacks, or over ``max_size``
        bytes, are left out: sizes are checked first, so big blobs are never read)."""
        wanted = list(dict.fromkeys(oids))
        if max_size is not None and wanted:
            query = "".join(f"{oid}\n" for oid in wanted).encode()
            _, out, _ = await self._run("cat-file", "--batch-check", input=query)
            sizes = {}
            for line in out.decode().splitlines():
                oid, _, rest = line.partition(" ")
                if not rest.endswith("missing"):
                    sizes[oid] = int(rest.rsplit(" ", 1)[1])
            wanted = [oid for oid in wanted if sizes.get(oid, max_size + 1) <= max_size]
        if not wanted:
            return {}
        data = "".join(f"{oid}\n" for oid in wanted).encode()
        _, out, _ = await self._run("cat-file", "--batch", input=data)
        blobs: dict[str, bytes] = {}
        pos = 0
        for oid in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode()
            pos = end + 1
            if header.endswith(" missing"):
                continue
            _, _, size = header.split(" ")
            blobs[oid] = out[pos : pos + int(size)]
            pos += int(size) + 1
        return blobs

    # -- reachability and space --------------------------------------------------------

    async def set_refs(self, updates: dict[str, str | None]) -> None:
        """Point refs at objects (keeping them from gc), or delete them (None)."""
        if not updates:
            return
        lines = [
            f"update {ref} {oid}\n" if oid else f"delete {ref}\n" for ref, oid in updates.items()
        ]
        await self._run("update-ref", "--stdin", input="".join(lines).encode())

    async def refs(self, prefix: str) -> dict[str, str]:
        _, out, _ = await self._run("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in out.decode().splitlines() if line)

    async def pack(self) -> None:
        """Pack loose objects when there are many (a first snapshot writes one per file)."""
        await self._run(
            "-c", "gc.auto=6700", "gc", "--auto", "--quiet", check=False, time_limit=600, nice=True
        )

    async def collect(self) -> None:
        """Reclaim the space of objects no ref reaches (older than an hour: a snapshot
        being taken right now is never pruned under it)."""
        await self._run("gc", "--quiet", check=False, time_limit=600, nice=True)

    # -- running git -------------------------------------------------------------------

    async def _run(
        self,
        *args: str,
        repo: bool = True,
        check: bool = True,
        input: bytes | None = None,
        time_limit: float = QUICK_TIMEOUT,
        nice: bool = False,
    ) -> tuple[int, bytes, bytes]:
        where = [f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}"] if repo else []
        command = [self._git, *SAFETY, *where, *args]
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.work_tree if self.work_tree.is_dir() else self._home,
                env=self._env,
                start_new_session=True,  # its own process group, killed whole on timeout
            )
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror or exc}") from None
        if nice:  # maintenance: let snapshots and the user's work go first
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, process.pid, 10)
        try:
            out, err = await asyncio.wait_for(process.communicate(input), time_limit)
        except BaseException as exc:  # timeout or cancellation: never leave git running
            _kill_group(process)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(process.wait(), 5)
            self._drop_stale_index_lock()
            if isinstance(exc, TimeoutError):
                raise GitError(f"git {args[0]} did not finish within {time_limit:.0f} s") from None
            raise
        code = process.returncode if process.returncode is not None else -1
        if check and code != 0:
            raise GitError(f"git {args[0]} failed ({code}): {_first_line(err)}")
        return code, out, err

    def _drop_stale_index_lock(self) -> None:
        # A killed git leaves index.lock behind; callers hold the repository's lock, so no
        # other git of ours is using the index now.
        (self.git_dir / "index.lock").unlink(missing_ok=True)


def _entry(mode: int, oid: str) -> TreeEntry | None:
    if mode == 0 or mode == GITLINK:
        return None
    return TreeEntry(mode, oid)


def _clean_env(home: Path, work_tree: Path) -> dict[str, str]:
    """Only what git needs: nothing inherited can point it at another repository or
    config (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_*, a hook's environment...), and no
    ``PATH`` entry inside the work tree or a temp dir."""
    env = {
        "PATH": programs.trusted_path((work_tree,)),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
        "LC_ALL": "C",
    }
    if tmp := os.environ.get("TMPDIR"):
        env["TMPDIR"] = tmp
    return env


_OPEN_FAILED = re.compile(r'^error: open\("(.*)"\): (.*)$')
_NOT_INDEXED = re.compile(r"^error: unable to index file '(.*)'$")
_NO_COMMIT = re.compile(r"^error: '(.*?)/?' does not have a commit checked out$")


def _unreadable_paths(stderr: bytes) -> list[str]:
    """What ``git add --ignore-errors`` could not add, each as "path: why"."""
    found = []
    for line in stderr.decode("utf-8", "replace").splitlines():
        if match := _OPEN_FAILED.match(line):  # error: open("x"): Permission denied
            found.append(f"{match[1]}: {match[2].lower()}")
        elif match := _NOT_INDEXED.match(line):
            found.append(f"{match[1]}: unreadable")
        elif match := _NO_COMMIT.match(line):  # an empty nested repository
            found.append(f"{match[1]}: a git repository with no commit yet")
    return found


def _first_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[0][:300] if lines else "no message"


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    path.write_text(text)
