"""Skills: folders with a ``SKILL.md`` (the Agent Skills format of Claude Code and Codex).

Found in the user's ``$XDG_CONFIG_HOME/agent-lsp/skills/NAME/`` and in the workspace's
``.agents/skills/NAME/`` and ``.claude/skills/NAME/``. The system prompt lists each one's
``name``, ``description`` and path, never its body: the model reads the SKILL.md with
``read_file`` when it decides the skill applies (progressive disclosure). A SKILL.md whose
front matter is malformed or lacks a name or description is skipped with a warning that
names the file and the problem. A workspace skill reached through a symlink out of the
workspace is skipped too, and so is a SKILL.md that is not a regular file (a FIFO would block).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tooling.regular_files import SkippedFile, read_regular
from tooling.workspace import Workspace, WorkspaceError

from .frontmatter import FrontMatterError, split

SKILL_FILE = "SKILL.md"
WORKSPACE_DIRS: tuple[str, ...] = (".agents/skills", ".claude/skills")
MAX_SKILLS = 100  # per folder: a listing, not a dump
MAX_SKILL_BYTES = 256 * 1024
MAX_DESCRIPTION_CHARS = 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # its SKILL.md
    shown: str  # the path the model is given
    source: str  # "user" | "workspace"


@dataclass
class Skills:
    skills: list[Skill] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def discover(user_dir: Path | None, workspace: Workspace) -> Skills:
    """The user's skills, then the workspace's; a name seen first wins (call it off the loop)."""
    found = Skills()
    if user_dir is not None:
        _scan(user_dir, None, "user", found)
    for folder in WORKSPACE_DIRS:
        _scan(workspace.root / folder, workspace, "workspace", found)
    seen: set[str] = set()
    unique = []
    for skill in found.skills:
        if skill.name not in seen:
            seen.add(skill.name)
            unique.append(skill)
    found.skills = unique
    return found


def _scan(folder: Path, workspace: Workspace | None, source: str, found: Skills) -> None:
    try:
        entries = sorted(p for p in folder.iterdir() if os.path.lexists(p / SKILL_FILE))
    except OSError:
        return  # no such folder
    for entry in entries[:MAX_SKILLS]:
        path = entry / SKILL_FILE
        shown = str(path)
        if workspace is not None:
            try:
                path = workspace.resolve(str(path))
            except WorkspaceError:
                found.warnings.append(f"skill {shown} leads outside the workspace: skipped")
                continue
            shown = workspace.relative(path)
        elif not path.resolve().is_relative_to(folder.resolve()):
            found.warnings.append(f"skill {shown} leads outside {folder}: skipped")
            continue
        problem = _load(path, shown, source, found.skills)
        if problem:
            found.warnings.append(f"skill {shown} skipped: {problem}")


def _load(path: Path, shown: str, source: str, into: list[Skill]) -> str | None:
    try:
        data = read_regular(path, MAX_SKILL_BYTES).data
    except SkippedFile as exc:
        return f"it is {exc.reason}"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    try:
        meta, _ = split(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except FrontMatterError as exc:
        return str(exc)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name.strip():
        return "its front matter has no name"
    if not isinstance(description, str) or not description.strip():
        return "its front matter has no description"
    description = " ".join(description.split())[:MAX_DESCRIPTION_CHARS]
    into.append(Skill(" ".join(name.split()), description, path, shown, source))
    return None


def render(skills: Sequence[Skill]) -> str:
    if not skills:
        return ""
    lines = [
        "# Skills",
        "",
        "A skill is a folder of instructions (and perhaps scripts or references) for one kind "
        "of task. When the task at hand matches a skill's description, read its SKILL.md with "
        "read_file before you start, and follow it; read the other files it names as needed.",
        "",
    ]
    lines += [f"- {s.name}: {s.description} ({s.shown})" for s in skills]
    return "\n".join(lines)
