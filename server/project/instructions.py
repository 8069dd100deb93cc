"""The project's instructions: ``AGENTS.md`` and its kin, as text for the model.

In order, each whole under a heading that names it: the user's own
``$XDG_CONFIG_HOME/agent-lsp/AGENTS.md``; the first of ``instructionFiles`` (default
``AGENTS.md``, ``CLAUDE.md``, ``.github/copilot-instructions.md``) at the workspace's
root; and, once a tool reads, writes or edits a file in a subfolder that has its own, that
one, added to the conversation then (later text is more specific, so it takes
precedence, as in Codex). Workspace files are read as the tools read them (an unsaved
buffer counts), within the workspace boundary (a symlink out of it is refused), and all of
them together are capped at ``instructionsMaxBytes``; a cut says so. They are text for the
model: nothing in them is run, and they are read again at every ask. A name that is not a
regular file (a FIFO, a device: a tool call may have made one) is not read: the prompt and
the warnings say so where its text would have been.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tooling.documents import EditorDocuments
from tooling.regular_files import SkippedFile, kind_of, read_regular
from tooling.workspace import Workspace, WorkspaceError

from ..config.user_config import display_path

INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
DEFAULT_MAX_BYTES = 32 * 1024
MAX_BYTES = 1024 * 1024
USER_FILE = "AGENTS.md"  # in agent-lsp's configuration folder


@dataclass(frozen=True)
class Instruction:
    path: Path
    name: str  # as the heading names it
    source: str  # "user" | "workspace" | "nested"
    text: str  # what the model is given (cut when ``cut``)
    size: int  # the whole file, in bytes
    cut: bool = False
    skipped: str | None = None  # why it was not read (a FIFO, a device): the prompt says so


@dataclass
class Instructions:
    files: list[Instruction] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def project_instructions(
    user_dir: Path | None,
    workspace: Workspace,
    names: Sequence[str],
    max_bytes: int,
    documents: EditorDocuments | None,
) -> Instructions:
    """The instructions of an ask's system prompt: the user's, then the workspace root's."""
    found = Instructions()
    budget = max_bytes
    if user_dir is not None:
        path = user_dir / USER_FILE
        shown = display_path(path)
        text = None
        try:
            await asyncio.to_thread(_check_regular, path)
            text = await asyncio.to_thread(_read_disk, path)
        except SkippedFile as exc:
            found.warnings.append(f"{shown} is {exc.reason}: not read as instructions")
            found.files.append(Instruction(path, shown, "user", "", 0, skipped=exc.reason))
        except OSError:
            pass  # none
        if text is not None:
            one = _capped(path, shown, "user", text, budget, found.warnings)
            found.files.append(one)
            budget -= len(one.text.encode())
    own = await _first_in(workspace.root, workspace, names, "workspace", budget, documents, found)
    if own is not None:
        found.files.append(own)
    return found


async def nested_instructions(
    target: Path,
    workspace: Workspace,
    names: Sequence[str],
    max_bytes: int,
    documents: EditorDocuments | None,
    seen: set[Path],
) -> Instructions:
    """The instructions of the subfolders between the root and ``target`` (a file a tool
    touched) that ``seen`` does not hold yet, outermost first; each is added to ``seen``."""
    found = Instructions()
    root = workspace.root
    try:
        relative = target.relative_to(root)
    except ValueError:
        return found
    folder = root
    for part in relative.parts[:-1]:
        folder = folder / part
        if folder in seen:
            continue
        seen.add(folder)
        one = await _first_in(folder, workspace, names, "nested", max_bytes, documents, found)
        if one is not None:
            found.files.append(one)
    return found


async def _first_in(
    folder: Path,
    workspace: Workspace,
    names: Sequence[str],
    source: str,
    budget: int,
    documents: EditorDocuments | None,
    found: Instructions,
) -> Instruction | None:
    for name in names:
        candidate = folder / name
        if not os.path.lexists(candidate):
            continue
        shown = workspace.relative(candidate) if candidate != workspace.root else name
        try:
            path = workspace.resolve(str(candidate))
        except WorkspaceError:
            found.warnings.append(f"{shown} leads outside the workspace: not used as instructions")
            return None
        try:
            # Checked before the editor is asked too: an ACP client's read of a FIFO blocks.
            await asyncio.to_thread(_check_regular, path)
        except SkippedFile as exc:
            found.warnings.append(f"{shown} is {exc.reason}: not read as instructions")
            return Instruction(path, shown, source, "", 0, skipped=exc.reason)
        except OSError:
            continue
        text = await documents.read_text(path) if documents is not None else None
        if text is None:
            text = await asyncio.to_thread(_read_disk, path)
        if text is None:
            continue  # unreadable, not text: the next name
        return _capped(path, shown, source, text, budget, found.warnings)
    return None


def _check_regular(path: Path) -> None:
    """Raise SkippedFile for a FIFO, socket or device; IsADirectoryError for a folder (not
    a file at all: the next name is looked at, as for an absent one)."""
    info = os.stat(path)  # never blocks, whatever the file is
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise SkippedFile(path, f"not a regular file ({kind_of(info.st_mode)})")


def _capped(
    path: Path, shown: str, source: str, text: str, budget: int, warnings: list[str]
) -> Instruction:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max(budget, 0):
        return Instruction(path, shown, source, text, len(data))
    kept = data[: max(budget, 0)].decode("utf-8", "ignore")
    warnings.append(
        f"{shown} is {len(data):,} bytes: only its first {len(kept.encode()):,} are given to "
        "the model (instructionsMaxBytes)"
    )
    return Instruction(path, shown, source, kept, len(data), cut=True)


def _read_disk(path: Path) -> str | None:
    try:
        data = read_regular(path, MAX_BYTES + 1).data
    except OSError:  # SkippedFile too: swapped for a FIFO since it was checked
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def render(files: Sequence[Instruction]) -> str:
    """The instructions as the prompt shows them, each under a heading naming its file."""
    parts = []
    for one in files:
        if one.skipped is not None:
            parts.append(f"# Instructions from {one.name}\n\n[not read: {one.skipped}]")
            continue
        body = one.text.rstrip()
        if one.cut:
            body += (
                f"\n[cut: only the first {len(one.text.encode()):,} of {one.size:,} bytes of "
                f"{one.name} are given]"
            )
        parts.append(f"# Instructions from {one.name}\n\n{body}")
    return "\n\n".join(parts)
