"""Ignore rules a workspace's shadow repository cannot find by itself.

The shadow repository reads the ``.gitignore`` files inside the workspace on its own.
What it cannot see: the user's ``.git/info/exclude``, ``.gitignore`` files of folders
*above* the workspace when it is a subfolder of a repository, and the user's global
excludes file (its default location, ``$XDG_CONFIG_HOME/git/ignore``; git config is
not read). Those are gathered here -- read only, never written -- and rebased onto the
workspace root. Rebasing keeps patterns that apply at any depth (no ``/`` inside,
or a leading ``**/``) and anchored patterns under the workspace's own path; the rare
anchored pattern with wildcards in the folders above the workspace is left out.
Agent-lsp's own state folder is excluded when it lies inside the workspace (a
workspace that is the home folder), so checkpoints never snapshot themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

from tooling.regular_files import read_regular

MAX_RULES_BYTES = 1024 * 1024


def inherited_excludes(root: Path, state_dir: Path) -> list[str]:
    lines: list[str] = []
    repo_root, git_dir = _enclosing_repository(root)
    if repo_root is not None and git_dir is not None:
        prefix = root.relative_to(repo_root).as_posix()
        prefix = "" if prefix == "." else prefix
        lines += rebase(_read_lines(git_dir / "info" / "exclude"), prefix)
        folder = root.parent
        while repo_root in (folder, *folder.parents):
            rel = root.relative_to(folder).as_posix()
            lines += rebase(_read_lines(folder / ".gitignore"), rel)
            if folder == repo_root:
                break
            folder = folder.parent
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    lines += rebase(_read_lines(Path(config) / "git" / "ignore"), "")
    state = state_dir.resolve()
    if state != root and state.is_relative_to(root):
        lines.append("/" + _escape(state.relative_to(root).as_posix()) + "/")
    return lines


def rebase(patterns: list[str], prefix: str) -> list[str]:
    """Gitignore ``patterns`` of a folder, as seen from its subfolder ``prefix``."""
    out = []
    for line in patterns:
        if not line.strip() or line.startswith("#"):
            continue
        if not prefix:
            out.append(line)
            continue
        negate = line.startswith("!")
        body = line[1:] if negate else line
        dir_only = body.endswith("/")
        core = body.rstrip("/")
        if "/" not in core or core.startswith("**/"):
            out.append(line)  # matches at any depth, so inside the subfolder too
            continue
        core = core.lstrip("/")
        if core.startswith(prefix + "/"):
            rebased = "/" + core[len(prefix) + 1 :] + ("/" if dir_only else "")
            out.append(("!" if negate else "") + rebased)
    return out


def _enclosing_repository(root: Path) -> tuple[Path | None, Path | None]:
    """(the work tree's top folder, its git folder) of the repository holding ``root``."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git
        if dot_git.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
            git_dir = _pointed_git_dir(dot_git)
            return folder, git_dir
    return None, None


def _pointed_git_dir(dot_git: Path) -> Path | None:
    text = _read_lines(dot_git)
    if not text or not text[0].startswith("gitdir:"):
        return None
    git_dir = Path(text[0][len("gitdir:") :].strip())
    if not git_dir.is_absolute():
        git_dir = dot_git.parent / git_dir
    # A linked worktree keeps info/exclude in the common folder.
    common = _read_lines(git_dir / "commondir")
    if common:
        shared = Path(common[0].strip())
        git_dir = shared if shared.is_absolute() else git_dir / shared
    return git_dir


def _read_lines(path: Path) -> list[str]:
    try:
        data = read_regular(path, MAX_RULES_BYTES).data
    except OSError:  # absent, unreadable, or a FIFO or device (which would block): no rules
        return []
    return data.decode("utf-8", "replace").splitlines()


def _escape(path: str) -> str:
    return "".join("\\" + ch if ch in "*?[]!#\\ " else ch for ch in path)
