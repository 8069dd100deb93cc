"""Rewind: put back what a run of asks changed, never what the user changed since.

For every path the undone asks changed, the target is the path's state before the
first of them that changed it, and the agent's result is its state after the last
one. A path is restored only when it still holds the agent's result -- on disk, or in
the editor's buffer when the file is open there; anything else means the user (or
another program) changed it after the agent did, and it is left as it is and reported
as a conflict. Paths the asks never changed are never looked at.

Documents open in the editor are restored through the editor (``workspace/applyEdit``),
so the rewind lands in the buffer, unsaved and undoable there; everything else is
restored on disk: created files removed (and folders left empty by that), deleted
files written back, contents and modes as they were.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from tooling.documents import EditOutcome

from .file_states import FileState, from_text, read_disk, restore, text_of

if TYPE_CHECKING:
    from .store import Checkpoint, FolderCheckpoints

Action = Literal["editor", "disk", "none", "conflict"]
LABEL = "agent-lsp: undo ask"


class RewindEditor(Protocol):
    """What a rewind needs of the editor (``server.lsp.documents.LspDocuments``)."""

    def buffer_text(self, path: Path) -> str | None: ...

    def can_edit(self) -> bool: ...

    async def replace_text(self, path: Path, text: str, *, label: str) -> EditOutcome: ...

    async def delete_document(self, path: Path, *, label: str) -> EditOutcome | None:
        """Delete through the editor (undoable there); None if it cannot."""
        ...


@dataclass
class RewindOutcome:
    restored: list[str] = field(default_factory=list)
    in_editor: list[str] = field(default_factory=list)  # of restored: in a buffer, unsaved
    conflicts: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PathPlan:
    path: str
    target: FileState
    last: FileState
    action: Action = "conflict"
    reason: str = ""
    disk: FileState | None = None  # what was on disk when planned


async def rewind_files(
    folder: FolderCheckpoints,
    undone: list[Checkpoint],
    editor: RewindEditor | None,
    *,
    dry_run: bool,
) -> RewindOutcome:
    plans = await plan(folder, undone, editor)
    outcome = RewindOutcome()
    if dry_run:
        for p in plans:
            if p.action == "conflict":
                outcome.conflicts.append((p.path, p.reason))
            else:
                outcome.restored.append(p.path)
                if p.action == "editor":
                    outcome.in_editor.append(p.path)
        return outcome
    await apply(folder, plans, editor, outcome)
    return outcome


async def plan(
    folder: FolderCheckpoints, undone: list[Checkpoint], editor: RewindEditor | None
) -> list[PathPlan]:
    first: dict[str, FileState] = {}
    last: dict[str, FileState] = {}
    for checkpoint in undone:
        for change in checkpoint.changes:
            first.setdefault(change.path, change.before)
            last[change.path] = change.after
    plans = []
    for path in sorted(first):
        p = PathPlan(path, first[path], last[path])
        await asyncio.to_thread(_decide, folder.root, p, editor)
        plans.append(p)
    return plans


def _decide(root: Path, p: PathPlan, editor: RewindEditor | None) -> None:
    target, last = p.target, p.last
    if (target.exists and not target.oid) or (last.exists and not last.oid):
        p.reason = "it was too large for the checkpoint to keep a copy"
        return
    absolute = root / p.path
    if not _inside(root, absolute):
        p.reason = "its folder now leads outside the workspace"
        return
    disk, _ = read_disk(absolute)
    p.disk = disk
    buffer = editor.buffer_text(absolute) if editor is not None else None
    if buffer is None:
        if _already(disk, target):
            p.action = "none"  # already as it was
        elif disk.same_content(last):
            p.action = "disk"
        else:
            p.reason = _changed_since(disk, last)
        return
    shown, _ = from_text(buffer)
    if shown.same_content(last):
        # The user sees the agent's version: undo it where they see it.
        if editor is not None and editor.can_edit():
            p.action = "editor"
        elif disk.same_content(shown):
            p.action = "disk"  # a clean buffer: the editor reloads it
        else:
            p.reason = (
                "it is open in the editor with unsaved changes, and the editor does not "
                "accept edits from agent-lsp"
            )
    elif disk.same_content(last) and shown.same_content(target):
        p.action = "disk"  # the buffer never showed the agent's change (not reloaded)
    else:
        p.reason = "it was changed in the editor after the agent's last change to it"


def _already(disk: FileState, target: FileState) -> bool:
    exact_mode = target.kind == "file" and target.mode not in (0o644, 0o755)
    return disk.same_content(target) and (not exact_mode or disk.mode == target.mode)


def _changed_since(disk: FileState, last: FileState) -> str:
    if not disk.exists:
        return "it was deleted after the agent's last change to it"
    if not last.exists:
        return "it was created again after the agent deleted it"
    if disk.oid == last.oid:
        return "its permissions were changed after the agent's last change to it"
    return "it was changed after the agent's last change to it"


async def apply(
    folder: FolderCheckpoints,
    plans: list[PathPlan],
    editor: RewindEditor | None,
    outcome: RewindOutcome,
) -> None:
    targets = [p.target for p in plans if p.action in ("editor", "disk") and p.target.exists]
    contents = await folder.contents(targets)
    # Removals first, deepest first (so folders empty out), then writes in path order:
    # a folder an ask created where a file was is gone before the file comes back.
    acting = [p for p in plans if p.action in ("editor", "disk", "none")]
    removals = sorted((p for p in acting if not p.target.exists), key=lambda p: -p.path.count("/"))
    writes = sorted((p for p in acting if p.target.exists), key=lambda p: p.path)
    ordered = removals + writes
    for p in plans:
        if p.action == "conflict":
            outcome.conflicts.append((p.path, p.reason))
    for p in ordered:
        if p.action == "none":
            outcome.restored.append(p.path)
            continue
        data = contents.get(p.target.oid) if p.target.exists else b""
        if data is None:
            outcome.conflicts.append((p.path, "the checkpoint's copy of it is missing"))
            continue
        if p.action == "editor" and editor is not None:
            problem = await _through_editor(folder.root / p.path, p.target, data, editor)
            if problem is None:
                outcome.restored.append(p.path)
                outcome.in_editor.append(p.path)
                continue
            if problem != "disk":
                outcome.conflicts.append((p.path, problem))
                continue
        problem = await asyncio.to_thread(_on_disk, folder.root, p, data)
        if problem is None:
            outcome.restored.append(p.path)
        else:
            outcome.conflicts.append((p.path, problem))
    outcome.conflicts.sort()
    outcome.restored.sort()
    outcome.in_editor.sort()


async def _through_editor(
    path: Path, target: FileState, data: bytes, editor: RewindEditor
) -> str | None:
    """None when the editor applied it; "disk" to restore on disk instead; else why not."""
    if not target.exists:
        result = await editor.delete_document(path, label=LABEL)
        if result is None:
            return "disk"
    else:
        text = text_of(data) if target.kind == "file" else None
        if text is None:
            return "disk"  # binary or a link: not something a text buffer can hold
        result = await editor.replace_text(path, text, label=LABEL)
    if result.applied:
        return None
    return f"the editor did not apply the change ({result.reason})"


def _on_disk(root: Path, p: PathPlan, data: bytes) -> str | None:
    path = root / p.path
    now, _ = read_disk(path)
    if p.disk is not None and not (now.same_content(p.disk) and now.mode == p.disk.mode):
        return "it was changed during the rewind"
    if not _inside(root, path):
        return "its folder now leads outside the workspace"
    try:
        restore(path, p.target, data if p.target.exists else None, root=root)
    except OSError as exc:
        return f"it could not be restored: {exc.strerror or exc}"
    return None


def _inside(root: Path, path: Path) -> bool:
    """Whether the folder holding ``path`` (symlinks resolved) is inside ``root``."""
    try:
        parent = path.parent.resolve()
    except (OSError, RuntimeError):
        return False
    return parent == root or parent.is_relative_to(root)
