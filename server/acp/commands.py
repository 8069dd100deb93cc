"""The built-in commands an ACP client offers as ``/NAME``: compact, checkpoints, undo.

A prompt whose last text block starts with ``/NAME`` (one of these) runs the command
instead of asking the model (a client may send earlier prompts as leading blocks: the last
one is what the user typed now); its answer is the agent's message. ``/undo`` restores
through the client's ``fs/write_text_file`` where it has it (its buffers, saved or not as
the client does), else on disk. They are the LSP face's ``agent/compact``,
``agent/checkpoints`` and ``agent/rewind`` in the form ACP has for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    TextContentBlock,
    UnstructuredCommandInput,
)

from tooling.display import escape_control

from .. import protocol as p
from ..engine.engine import AgentEngine
from .documents import AcpDocuments

COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    (
        "compact",
        "Compact the conversation now (old tool outputs elided, older turns summarized)",
        None,
    ),
    ("checkpoints", "List this conversation's checkpoints: what each prompt changed", None),
    (
        "undo",
        "Undo the last prompt's changes and cut it from the conversation (or from ID on)",
        "checkpoint id (default: the last one)",
    ),
)


def available_commands(prompt_files: Sequence[p.CommandInfo] = ()) -> list[AvailableCommand]:
    """Ours, then the user's and the workspace's prompt files (``agent/listCommands``: the
    engine expands those when a prompt names one)."""
    listed = [(name, description, hint) for name, description, hint in COMMANDS]
    ours = {name for name, _, _ in COMMANDS}
    listed += [
        (c.name, c.description, c.argument_hint)
        for c in prompt_files
        if c.source != "builtin" and c.name not in ours
    ]
    return [
        AvailableCommand(
            name=name,
            description=description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None,
        )
        for name, description, hint in listed
    ]


def command_of(blocks: list[Any]) -> tuple[str, str] | None:
    """The command a prompt's last text block names, if any."""
    texts = [b.text for b in blocks if isinstance(b, TextContentBlock)]
    return parse_command(texts[-1].strip()) if texts else None


def parse_command(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` when ``text`` is one of the commands, else None."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    known = {command for command, _, _ in COMMANDS}
    return (name, rest.strip()) if name in known else None


async def run_command(
    engine: AgentEngine,
    session_id: str,
    name: str,
    arguments: str,
    documents: AcpDocuments | None = None,
) -> str:
    """The command's answer, in words for the user (Markdown)."""
    if name == "compact":
        result = await engine.compact(session_id)
        return (
            f"Compacted: about {result.tokens_before:,} → {result.tokens_after:,} tokens of "
            f"{result.context_window:,} ({result.elided_outputs} tool outputs elided, "
            f"{result.summarized_messages} messages summarized)."
        )
    checkpoints = (await engine.list_checkpoints(session_id)).checkpoints
    if name == "checkpoints":
        if not checkpoints:
            return "No checkpoints yet: no prompt of this conversation has changed a file."
        lines = ["Checkpoints (undo one and everything after it with `/undo ID`):", ""]
        for checkpoint in checkpoints:
            files = ", ".join(f"{f.path} ({f.status})" for f in checkpoint.files) or "no files"
            prompt = escape_control(checkpoint.prompt)
            lines.append(
                f"- `{checkpoint.id}` {checkpoint.time}: {prompt} — {escape_control(files)}"
            )
            # E.g. files someone else changed during the ask: left out, and undo leaves them.
            lines += [f"  - {escape_control(note)}" for note in checkpoint.notes]
        return "\n".join(lines)
    # undo
    if not checkpoints:
        return "Nothing to undo: this conversation has no checkpoint."
    wanted = arguments or checkpoints[-1].id
    editor = documents if documents is not None and documents.can_edit() else None
    if editor is not None:
        # The plan compares what the client holds now: ask it for the files first.
        planned = await engine.rewind(session_id, wanted, dry_run=True, editor=editor)
        root = engine.conversation(session_id).workspace_root
        paths = [*planned.restored, *(c.path for c in planned.conflicts)]
        await editor.refresh([root / Path(path) for path in paths])
    result = await engine.rewind(session_id, wanted, editor=editor)
    lines = [f"Undid checkpoint `{escape_control(wanted)}` and the prompts after it."]
    if result.restored:
        lines.append("Restored: " + ", ".join(escape_control(p) for p in result.restored))
    if result.in_editor:
        lines.append(
            "Through the editor (as it writes files): "
            + ", ".join(escape_control(p) for p in result.in_editor)
        )
    for conflict in result.conflicts:
        lines.append(f"Not restored: {escape_control(conflict.path)}: {conflict.reason}")
    return "\n".join(lines)
