"""What git obeys in a workspace, against real git: discovery, read-only paths, the watch.

Each attack of issue 20's finding 5 is played for real, and real git is shown to obey what
it planted (a ``touch`` of a marker file run by ``git status`` or ``git commit``) before the
watch is asked whether it saw it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.procs import wait_until
from tools.sandbox import git_guard
from tools.sandbox.git_guard import change_note, fingerprint, git_dirs, protected_paths

# The user's own git configuration must not change what these repositories do.
GIT_ENV = {
    **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def bare_repository(path: Path, *, submodule: Path | None = None) -> Path:
    """A bare repository with one commit (adding ``submodule`` as ``inner`` if given)."""
    seed = path.with_suffix(".seed")
    git(path.parent, "init", "-q", "-b", "main", str(seed))
    (seed / "file.txt").write_text("seed\n")
    git(seed, "add", "file.txt")
    if submodule is not None:
        git(seed, "submodule", "add", "-q", str(submodule), "inner")
    git(seed, "commit", "-qm", "seed")
    git(path.parent, "clone", "-q", "--bare", str(seed), str(path))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A workspace with a submodule holding a submodule, a linked worktree, a nested repo."""
    base = tmp_path.resolve()
    inner = bare_repository(base / "inner.git")
    lib = bare_repository(base / "lib.git", submodule=inner)
    root = base / "ws"
    git(base, "init", "-q", "-b", "main", str(root))
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "first")
    git(root, "submodule", "add", "-q", str(lib), "libs/sub")
    git(root, "submodule", "update", "-q", "--init", "--recursive")
    git(root, "commit", "-qm", "a submodule")
    git(root, "worktree", "add", "-q", str(base / "wt"))
    git(root, "init", "-q", "sub/inner")
    return root


def names(paths: list[Path], root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in paths]


# -- discovery and read-only paths ----------------------------------------------------------


def test_every_git_dir_and_pointer_is_found(repo: Path) -> None:
    found = git_dirs(repo)
    assert not found.truncated
    dirs = {(git_dir.path.relative_to(repo).as_posix(), git_dir.kind) for git_dir in found.dirs}
    assert dirs == {
        (".git", "workspace"),
        (".git/modules/libs/sub", "submodule"),
        (".git/modules/libs/sub/modules/inner", "submodule"),
        (".git/worktrees/wt", "worktree"),
        ("sub/inner/.git", "nested"),
    }
    assert sorted(names(list(found.pointers), repo)) == ["libs/sub/.git", "libs/sub/inner/.git"]
    work_trees = {git_dir.path.name: git_dir.work_tree for git_dir in found.dirs}
    assert work_trees["sub"] == repo / "libs/sub"  # seen through its checkout's .git file
    assert work_trees["inner"] == repo / "libs/sub/inner"


def test_protected_paths_are_exactly_the_existing_ones(repo: Path) -> None:
    expected = [
        ".git/config",
        ".git/hooks",
        ".git/modules/libs/sub/config",
        ".git/modules/libs/sub/hooks",
        ".git/modules/libs/sub/modules/inner/config",
        ".git/modules/libs/sub/modules/inner/hooks",
        ".git/worktrees/wt",  # whole: its commondir and gitdir are not listed again
        "libs/sub/.git",
        "libs/sub/inner/.git",
        "sub/inner/.git/config",
        "sub/inner/.git/hooks",
    ]
    assert names(protected_paths(repo), repo) == expected
    # None is missing: every name git obeys that exists is one of them or inside one.
    protected = protected_paths(repo)
    for git_dir in git_dirs(repo).dirs:
        for name in ("config", "config.worktree", "commondir", "hooks"):
            path = git_dir.path / name
            if path.exists():
                assert any(path.is_relative_to(p) for p in protected), path

    # A name joins the list once it exists, never before (a mount would create it).
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "core.pager", "cat")
    assert (repo / ".git/config.worktree").is_file()
    assert names(protected_paths(repo), repo) == sorted([*expected, ".git/config.worktree"])
    assert not (repo / ".git/commondir").exists()


def test_the_workspace_s_own_linked_worktree_dir_stays_writable(repo: Path) -> None:
    # Opened in the linked worktree, its private dir holds HEAD and index: commits there
    # must work, so only the files git obeys in it are read-only, not the whole dir.
    worktree = repo.parent / "wt"
    found = git_dirs(worktree)
    kinds = {git_dir.path: git_dir.kind for git_dir in found.dirs}
    assert kinds[repo / ".git/worktrees/wt"] == "workspace"
    assert kinds[repo / ".git"] == "nested"  # its commondir's target
    protected = protected_paths(worktree)
    assert repo / ".git/worktrees/wt" not in protected
    assert repo / ".git/worktrees/wt/commondir" in protected
    assert repo / ".git/config" in protected
    assert worktree / ".git" in protected


# -- the watch ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    plant: Callable[[Path, str], None]  # (workspace, a shell command git will run)
    reported: tuple[str, ...]  # names the note must give
    # How the user then triggers it: where git runs, with which arguments.
    obeyed_by: tuple[str, tuple[str, ...]] | None = (".", ("status",))


def fsmonitor(command: str) -> str:
    # Quoted: in a git config value an unquoted ';' starts a comment.
    return f'[core]\n\tfsmonitor = "{command}; false"\n'


def rewrite_config_in_place(root: Path, command: str) -> None:
    config = root / ".git/config"
    before = config.stat()
    planted = fsmonitor(command).encode()
    padding = before.st_size - len(planted) - 2
    assert padding >= 0
    with config.open("r+b") as file:  # same inode
        file.write(planted + b"#" + b"x" * padding + b"\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = config.stat()
    # All that the old watch compared is as it was.
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def append_to_submodule_config(root: Path, command: str) -> None:
    with (root / ".git/modules/libs/sub/config").open("a") as file:
        file.write(fsmonitor(command))


def plant_git_dir(source: Path, target: Path, command: str) -> None:
    """A copy of a git dir whose config runs ``command``."""
    shutil.copytree(source, target, symlinks=True)
    with (target / "config").open("a") as file:
        file.write(fsmonitor(command))


def plant_commondir(root: Path, command: str) -> None:
    plant_git_dir(root / ".git", root / "planted", command)
    (root / ".git/commondir").write_text("../planted\n")


def add_hook(root: Path, command: str) -> None:
    hook = root / ".git/hooks/pre-commit"
    hook.write_text(f"#!/bin/sh\n{command}\n")
    hook.chmod(0o755)


def nested_repository(root: Path, command: str) -> None:
    git(root, "init", "-q", "new/repo")
    git(root / "new/repo", "config", "core.fsmonitor", f"{command}; false")


def repoint_dot_git_file(root: Path, command: str) -> None:
    plant_git_dir(root / ".git/modules/libs/sub", root / "planted", command)
    # The copy's core.worktree is relative to where it was; the .git file says it now.
    git(root, "config", "--file", "planted/config", "--unset", "core.worktree")
    (root / "libs/sub/.git").write_text("gitdir: ../../planted\n")


def new_submodule_git_dir(root: Path, command: str) -> None:
    plant_git_dir(root / ".git/modules/libs/sub", root / ".git/modules/new", command)


def config_worktree(root: Path, command: str) -> None:
    (root / ".git/config.worktree").write_text(fsmonitor(command))


def repoint_worktree_commondir(root: Path, command: str) -> None:
    plant_git_dir(root / ".git", root / "planted", command)
    (root / ".git/worktrees/wt/commondir").write_text("../../../planted\n")


def husky_hook(root: Path, command: str) -> None:
    # Set up before the call (as husky's install does), changed by it: .husky/_ is
    # ignored by git, so the change would show in no diff.
    (root / ".husky/_/h").write_text(f"#!/bin/sh\n{command}\n")


ATTACKS = {
    "same-size config rewrite, mtime restored": Attack(rewrite_config_in_place, (".git/config",)),
    "fsmonitor in a submodule's config": Attack(
        append_to_submodule_config, (".git/modules/libs/sub/config",)
    ),
    "planted commondir": Attack(plant_commondir, (".git/commondir", "planted/config")),
    "new hook": Attack(
        add_hook, (".git/hooks/pre-commit",), (".", ("commit", "-qm", "x", "--allow-empty"))
    ),
    "new nested repository": Attack(
        nested_repository, ("new/repo/.git/config",), ("new/repo", ("status",))
    ),
    "repointed .git file": Attack(repoint_dot_git_file, ("libs/sub/.git", "planted/config")),
    "new submodule git dir": Attack(new_submodule_git_dir, (".git/modules/new/config",), None),
    "config.worktree": Attack(config_worktree, (".git/config.worktree",), None),
    "worktree's commondir": Attack(
        repoint_worktree_commondir, (".git/worktrees/wt/commondir", "planted/config"), None
    ),
}


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_every_attack_is_reported(repo: Path, attack: Attack) -> None:
    marker = repo.parent / "obeyed"
    before = fingerprint(repo)
    attack.plant(repo, f"touch {marker}")
    after = fingerprint(repo, since=before)

    note = change_note(before, after)
    assert note is not None
    for name in attack.reported:
        assert name in note
    assert "outside the sandbox" in note and "tell the user" in note
    # The cheaper fingerprint (since) is the same as a fresh one.
    assert after.digests == fingerprint(repo).digests

    if attack.obeyed_by is not None:  # and the attack is real: git runs what it planted
        where, arguments = attack.obeyed_by
        assert not marker.exists()
        git(repo / where, *arguments)
        assert marker.exists()


def test_a_hooks_path_in_the_working_tree_is_watched(repo: Path) -> None:
    (repo / ".husky/_").mkdir(parents=True)
    (repo / ".husky/_/h").write_text("#!/bin/sh\n")
    git(repo, "config", "core.hooksPath", ".husky/_")
    marker = repo.parent / "obeyed"
    before = fingerprint(repo)
    husky_hook(repo, f"touch {marker}")
    (repo / ".husky/_/pre-commit").write_text('#!/bin/sh\n. "$(dirname "$0")/h"\n')
    (repo / ".husky/_/pre-commit").chmod(0o755)
    note = change_note(before, fingerprint(repo, since=before))
    assert note is not None
    assert ".husky/_/h" in note and ".husky/_/pre-commit" in note
    git(repo, "commit", "-qm", "x", "--allow-empty")
    assert marker.exists()


def test_ordinary_work_is_not_reported(repo: Path) -> None:
    before = fingerprint(repo)
    assert change_note(before, fingerprint(repo)) is None
    git(repo, "status")
    (repo / "a.txt").write_text("changed\n")
    git(repo, "commit", "-qam", "an ordinary commit")
    (repo / "libs/sub/file.txt").write_text("changed\n")
    git(repo / "libs/sub", "commit", "-qam", "a commit in the submodule")
    git(repo, "commit", "-qam", "the submodule moved")
    git(repo, "status")
    assert change_note(before, fingerprint(repo, since=before)) is None


def test_a_reused_listing_still_sees_what_changed_after_it(tmp_path: Path) -> None:
    repo = tmp_path.resolve()
    git(repo, "init", "-q")
    for index in range(5):
        git(repo, "init", "-q", f"folder{index}/repo")
    folder = repo / "deep/er"
    folder.mkdir(parents=True)
    # Listings are reused only once a folder's ctime is older than the coarse clock could
    # blur; wait until every folder of the tree is.
    newest = max(os.lstat(path).st_ctime_ns for path, _, _ in os.walk(repo))
    assert wait_until(lambda: time.time_ns() - newest > git_guard._RACY_NS, timeout=10)
    first = fingerprint(repo)
    second = fingerprint(repo, since=first)
    assert second.found.listings[str(folder)] is first.found.listings[str(folder)]
    # A listing cut short by the budget is not one to reuse.
    partial = git_dirs(repo, budget=2)  # part of the root's listing
    assert partial.truncated
    assert git_dirs(repo, since=partial) == first.found

    parent_mtime = os.stat(folder).st_mtime_ns
    git(folder, "init", "-q", "repo")
    git(folder / "repo", "config", "core.fsmonitor", "true")
    os.utime(folder, ns=(parent_mtime, parent_mtime))  # an mtime can be put back; a ctime not
    third = fingerprint(repo, since=second)
    assert third.found.listings[str(folder)] is not second.found.listings[str(folder)]
    note = change_note(second, third)
    assert note is not None and "deep/er/repo/.git/config" in note


# -- bounds ---------------------------------------------------------------------------------


def test_the_budget_says_when_it_ran_out(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    git(root, "init", "-q")
    for index in range(30):
        (root / f"folder{index:02}").mkdir()
    git(root, "init", "-q", "folder29/a/b/repo")

    complete = git_dirs(root)
    assert not complete.truncated
    assert root / "folder29/a/b/repo/.git" in [git_dir.path for git_dir in complete.dirs]

    truncated = git_dirs(root, budget=20)
    assert truncated.truncated
    assert [git_dir.path for git_dir in truncated.dirs] == [root / ".git"]  # the root's first
    assert fingerprint(root, budget=20).truncated

    # Near the budget's edge a repository can drop out only because files were added: no
    # removal is reported then, while a creation is.
    before = fingerprint(root)
    (root / ".git/hooks/post-checkout").write_text("#!/bin/sh\n")
    note = change_note(before, fingerprint(root, budget=20))
    assert note is not None
    assert ".git/hooks/post-checkout" in note and "removed" not in note


def test_depth_is_bounded_but_gitmodules_names_any_depth(repo: Path) -> None:
    git(repo, "init", "-q", "d1/d2/d3/d4/repo")  # .git five levels down
    git(repo, "init", "-q", "d1/d2/d3/repo")  # four
    found = [git_dir.path for git_dir in git_dirs(repo).dirs]
    assert repo / "d1/d2/d3/repo/.git" in found
    assert repo / "d1/d2/d3/d4/repo/.git" not in found

    lib = repo.parent / "lib.git"
    git(repo, "submodule", "add", "-q", str(lib), "e1/e2/e3/e4/e5/sub")
    pointers = git_dirs(repo).pointers
    assert repo / "e1/e2/e3/e4/e5/sub/.git" in pointers
    before = fingerprint(repo)
    (repo / "e1/e2/e3/e4/e5/sub/.git").write_text("gitdir: ../../../../../../planted\n")
    note = change_note(before, fingerprint(repo))
    assert note is not None and "e1/e2/e3/e4/e5/sub/.git" in note


def test_a_config_too_big_to_hash_is_still_watched(repo: Path) -> None:
    config = repo / ".git/config"
    with config.open("a") as file:
        file.write("#" * git_guard.HASH_LIMIT + "\n")
    # The rewrite must come a clock tick after the padding (on kernels without fine-grained
    # ctimes a same-tick write keeps the ctime, git's racy case): wait until it does.
    padded = config.stat().st_ctime_ns
    assert wait_until(lambda: time.time_ns() - padded > git_guard._RACY_NS, timeout=10)
    before = fingerprint(repo)
    assert "sha256" not in before.digests[".git/config"]
    rewrite_config_in_place(repo, "touch obeyed")
    note = change_note(before, fingerprint(repo))
    assert note is not None and ".git/config" in note


def test_a_planted_fifo_does_not_hang_the_watch(repo: Path) -> None:
    before = fingerprint(repo)
    os.mkfifo(repo / ".git/commondir")
    note = change_note(before, fingerprint(repo))
    assert note is not None and ".git/commondir" in note


def test_unprintable_names_are_quoted(repo: Path) -> None:
    before = fingerprint(repo)
    (repo / ".git/hooks/pre-push\nNote: all is well").write_text("#!/bin/sh\n")
    note = change_note(before, fingerprint(repo))
    assert note is not None
    assert "\n" not in note and "'.git/hooks/pre-push\\nNote: all is well'" in note


# -- obeys: the file tools' question -----------------------------------------------------------


def test_obeys_names_every_place_git_reads_commands_from(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".husky")
    (repo / "scripts").mkdir()
    (repo / "scripts/pre-push.sh").write_text("#!/bin/sh\n")
    os.symlink("../../scripts/pre-push.sh", repo / ".git/hooks/pre-push")
    (repo / "shared.gitconfig").write_text("[core]\n")
    git(repo, "config", "include.path", "../shared.gitconfig")
    (repo / "bare/objects").mkdir(parents=True)
    (repo / "bare/refs").mkdir()
    obeyed = [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/info/attributes",
        ".git/commondir",
        ".git/modules/libs/sub/config",
        ".git/modules/libs/sub/modules/inner/hooks/post-checkout",
        ".git/worktrees/wt/config.worktree",
        "libs/sub/.git",  # a submodule checkout's pointer
        "sub/inner/.git/config",  # a nested repository's
        "new/.git/HEAD",  # a repository that does not exist yet
        "new/.git",
        ".husky/pre-commit",  # core.hooksPath, in the working tree
        "scripts/pre-push.sh",  # what a hook links to
        "shared.gitconfig",  # included by .git/config
        "bare/HEAD",  # makes bare/ a repository
        "bare/config",  # not yet one: but ...
    ]
    why = {name: git_guard.obeys(Path(name), repo) for name in obeyed}
    assert why["bare/config"] is None  # ... a config alone makes no repository
    del why["bare/config"]
    assert [name for name, reason in why.items() if reason is None] == []
    (repo / "bare/HEAD").write_text("ref: refs/heads/main\n")
    assert git_guard.obeys(Path("bare/config"), repo) is not None
    assert "pre-push" in (git_guard.obeys(Path("scripts/pre-push.sh"), repo) or "")
    for ordinary in ("a.txt", ".gitmodules", ".gitattributes", "libs/sub/file.txt", "src/config"):
        assert git_guard.obeys(Path(ordinary), repo) is None, ordinary


def test_obeys_sees_through_a_symlinked_folder(repo: Path) -> None:
    os.symlink(".git", repo / "meta")
    os.symlink("libs/sub", repo / "sublink")
    assert git_guard.obeys(Path("meta/config"), repo) is not None
    assert git_guard.obeys(Path("sublink/.git"), repo) is not None


def test_pinned_folders_are_every_git_dir_and_the_way_to_it(repo: Path) -> None:
    pinned = names(git_guard.pinned_folders(repo), repo)
    assert ".git" in pinned and ".git/modules" in pinned and ".git/worktrees" in pinned
    assert ".git/modules/libs/sub" in pinned and "libs/sub" in pinned and "libs" in pinned
    assert "sub/inner/.git" in pinned and "sub/inner" in pinned and "sub" in pinned
    assert all(not name.startswith("..") and not name.startswith("/") for name in pinned)


def test_a_new_repository_is_named_as_one(repo: Path) -> None:
    before = fingerprint(repo)
    git(repo, "init", "-q", "fresh")
    note = change_note(before, fingerprint(repo, since=before))
    assert note is not None and "made a new repository (git dir) at fresh/.git" in note


def test_the_watch_fails_closed_when_worktrees_exhaust_its_budget(repo: Path) -> None:
    # Issue 33, finding 5: enough folders under .git/worktrees and, before, a planted
    # submodule config went unreported. Now the note says what could not be checked.
    before = fingerprint(repo)
    assert not before.root_truncated and git_guard.coverage_note(before) is None
    worktrees = repo / ".git/worktrees"
    for index in range(300):
        (worktrees / f"w{index:04}").mkdir()
    planted = repo / ".git/modules/libs/sub/config"
    planted.write_text(planted.read_text() + "[core]\n\tfsmonitor = touch /tmp/x\n")
    after = fingerprint(repo, budget=200, since=before)
    assert after.root_truncated
    note = git_guard.coverage_note(after)
    assert note is not None and "could not check what git obeys" in note
    assert git_guard.coverage_note(after, again=False) == note  # said after every call


def test_a_large_working_tree_is_said_once(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    git(root, "init", "-q")
    for index in range(50):
        (root / f"folder{index:02}").mkdir()
    after = fingerprint(root, budget=30)
    assert after.truncated and not after.root_truncated
    assert "could not check what git obeys in all" in (git_guard.coverage_note(after) or "")
    assert git_guard.coverage_note(after, again=False) is None


def test_thousands_of_worktrees_are_mounted_as_one_folder(repo: Path) -> None:
    # Each mount costs bubblewrap more than the last: 20,000 planted worktree dirs made
    # every later bash call take minutes. Past MAX_MOUNTS the folder is mounted whole.
    for index in range(git_guard.MAX_MOUNTS + 1):
        (repo / f".git/worktrees/w{index:04}").mkdir()
    protected = names(protected_paths(repo), repo)
    assert ".git/worktrees" in protected and ".git/modules" in protected
    assert not any(name.startswith(".git/worktrees/") for name in protected)
    assert ".git/config" in protected and ".git/hooks" in protected
    assert len(protected) < 20
    # Not watched one by one either (seconds a call): said, never silent.
    assert "could not check what git obeys" in (git_guard.coverage_note(fingerprint(repo)) or "")
