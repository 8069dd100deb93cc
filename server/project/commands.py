"""The user's commands: prompt files a prompt names as ``/NAME arguments``.

``$XDG_CONFIG_HOME/agent-lsp/commands/NAME.md`` and the workspace's
``.agents/commands/NAME.md`` (the workspace's win: the project knows its own). Front
matter: ``description``, optional ``argument-hint``. ``/NAME some text`` becomes the file's
body with ``$ARGUMENTS`` replaced by ``some text`` and ``$1`` … ``$9`` by its words; an
unknown ``/word`` is sent as typed. The built-in commands are client actions (``/compact``,
``/new``, ``/checkpoints``, ``/undo``): listed here so a client can offer them beside the
files, never expanded by the server. A command file is a prompt the user chose to send:
the server runs nothing of it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tooling.regular_files import SkippedFile, read_regular
from tooling.workspace import Workspace, WorkspaceError

from .frontmatter import FrontMatterError, split

WORKSPACE_DIR = ".agents/commands"
MAX_COMMAND_BYTES = 256 * 1024
BUILTINS: tuple[tuple[str, str, str | None], ...] = (
    ("compact", "Compact the conversation now (old outputs elided, older turns summarized)", None),
    ("new", "Start a new conversation", None),
    ("checkpoints", "List this conversation's checkpoints: what each ask changed", None),
    ("undo", "Undo the last ask's changes (or from checkpoint ID on)", "[checkpoint id]"),
)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$([1-9])")


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    source: str  # "builtin" | "user" | "workspace"
    argument_hint: str | None = None
    path: Path | None = None
    body: str = ""


@dataclass
class Commands:
    commands: dict[str, Command] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def listed(self) -> list[Command]:
        return sorted(self.commands.values(), key=lambda c: (c.source != "builtin", c.name))


def discover(user_dir: Path | None, workspace: Workspace | None) -> Commands:
    """The built-ins, the user's files, then the workspace's (call it off the loop)."""
    found = Commands()
    for name, description, hint in BUILTINS:
        found.commands[name] = Command(name, description, "builtin", hint)
    if user_dir is not None:
        _scan(user_dir, None, "user", found)
    if workspace is not None:
        _scan(workspace.root / WORKSPACE_DIR, workspace, "workspace", found)
    return found


def _scan(folder: Path, workspace: Workspace | None, source: str, found: Commands) -> None:
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".md")
    except OSError:
        return
    for file in files:
        name = file.stem
        shown = workspace.relative(file) if workspace is not None else str(file)
        if not _NAME.match(name):
            found.warnings.append(f"command {shown} skipped: its name is not a plain word")
            continue
        if name in found.commands and found.commands[name].source == "builtin":
            found.warnings.append(f"command {shown} skipped: /{name} is a built-in command")
            continue
        path = file
        if workspace is not None:
            try:
                path = workspace.resolve(str(file))
            except WorkspaceError:
                found.warnings.append(f"command {shown} leads outside the workspace: skipped")
                continue
        try:
            text = read_regular(path, MAX_COMMAND_BYTES).data.decode("utf-8")
            meta, body = split(text)
        except SkippedFile as exc:
            found.warnings.append(f"command {shown} skipped: it is {exc.reason}")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            found.warnings.append(f"command {shown} skipped: it cannot be read ({exc})")
            continue
        except FrontMatterError as exc:
            found.warnings.append(f"command {shown} skipped: {exc}")
            continue
        description = meta.get("description")
        hint = meta.get("argument-hint")
        found.commands[name] = Command(
            name,
            " ".join(description.split()) if isinstance(description, str) else _first_line(body),
            source,
            hint if isinstance(hint, str) and hint.strip() else None,
            path,
            body.strip(),
        )


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


def expand(prompt: str, commands: Commands) -> tuple[str, Command | None]:
    """``prompt`` with a leading ``/NAME`` of a prompt file expanded; the command used."""
    if not prompt.startswith("/"):
        return prompt, None
    head, _, arguments = prompt[1:].partition(" ")
    name = head.strip()
    command = commands.commands.get(name)
    if command is None or command.source == "builtin":
        return prompt, None  # sent as typed
    arguments = arguments.strip()
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()

    def value(match: re.Match[str]) -> str:
        if match.group(0) == "$ARGUMENTS":
            return arguments
        index = int(match.group(1))
        return words[index - 1] if index <= len(words) else ""

    # One pass: what is put in is never read again (a "$1" typed as an argument stays).
    body = _PLACEHOLDER.sub(value, command.body)
    if not _PLACEHOLDER.search(command.body) and arguments:
        body = f"{body}\n\n{arguments}"  # a file that names no argument still gets them
    return body, command
