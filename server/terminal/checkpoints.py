"""``agent-lsp sessions`` / ``checkpoints`` / ``diff`` / ``rewind``: a folder's conversations
and a session's asks from the terminal; ``sessions --delete ID`` deletes one (asked on the
terminal first, or ``--yes``).

Like ``agent-lsp ask``, each command starts the server as a child process and speaks
the protocol to it (``agent/checkpoints``, ``agent/diff``, ``agent/rewind``); the
conversation files in the session folder let it cut the conversation back too.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from pygls.exceptions import JsonRpcException

from tooling.display import escape_control

from ..config.paths import default_session_dir
from ..protocol import (
    AGENT_CHECKPOINTS,
    AGENT_DIFF,
    AGENT_END_SESSION,
    AGENT_REWIND,
    AGENT_SESSIONS,
)
from .client import StreamedOutput, _run, connected, workspace_of
from .permissions import is_terminal, read_line

MARKS = {"added": "A", "modified": "M", "deleted": "D"}


def format_checkpoints(checkpoints: list[dict[str, Any]]) -> list[str]:
    """One line per ask, then one per file it changed, e.g. ``  M app.py (+3 -1)``."""
    lines = []
    for checkpoint in checkpoints:
        when = _local_time(checkpoint["time"])
        state = "" if checkpoint["state"] == "done" else f" [{checkpoint['state']}]"
        lines.append(f"{checkpoint['id']:>3}  {when}  {checkpoint['prompt']}{state}")
        for file in checkpoint["files"]:
            counts = []
            if file.get("added"):
                counts.append(f"+{file['added']}")
            if file.get("removed"):
                counts.append(f"-{file['removed']}")
            suffix = f" ({' '.join(counts)})" if counts else ""
            lines.append(f"       {MARKS.get(file['status'], '?')} {file['path']}{suffix}")
        if not checkpoint["files"]:
            lines.append("       (no files changed)")
        lines += [f"       note: {note}" for note in checkpoint.get("notes", [])]
    return lines


def format_sessions(sessions: list[dict[str, Any]]) -> list[str]:
    """One line per conversation, newest first: its id (for ``--session``), when it was last
    used, its asks, its first prompt; ``[interrupted]`` when its last ask never finished."""
    lines = []
    for session in sessions:
        when = datetime.fromtimestamp(session["updated"]).strftime("%Y-%m-%d %H:%M")
        asks = f"{session['turns']} ask{'s' if session['turns'] != 1 else ''}"
        state = " [interrupted]" if session.get("state") == "interrupted" else ""
        lines.append(f"{session['sessionId']}  {when}  {asks:>8}  {session['title']}{state}")
    return lines


def format_rewind(result: dict[str, Any], checkpoint_id: str) -> list[str]:
    dry = result.get("dryRun", False)
    lines = []
    for path in result["restored"]:
        where = " (in the editor, unsaved)" if path in result.get("inEditor", []) else ""
        lines.append(f"{'would restore' if dry else 'restored'}: {path}{where}")
    for conflict in result["conflicts"]:
        lines.append(f"{'would keep' if dry else 'kept'} (changed since): {conflict['path']}: "
                     f"{conflict['reason']}")  # fmt: skip
    if not result["restored"] and not result["conflicts"]:
        lines.append("no files to put back")
    if result["conversationTruncated"]:
        verb = "would be cut" if dry else "cut"
        lines.append(f"conversation {verb} back to before ask {checkpoint_id}")
    return lines


def format_diff(files: list[dict[str, Any]]) -> str:
    parts = []
    for file in files:
        if file.get("binary"):
            parts.append(f"Binary file {file['path']} {file['status']}\n")
        else:
            parts.append(file["diff"])
    return "".join(parts)


def run_checkpoint_command(args: argparse.Namespace) -> int:
    workspace = workspace_of(args)
    if workspace is None:
        return 2
    return _run(
        checkpoint_command(
            args.command,
            workspace,
            session_id=getattr(args, "session", "") or "",
            checkpoint_id=getattr(args, "checkpoint", None),
            dry_run=getattr(args, "dry_run", False),
            session_dir=args.ask_session_dir or default_session_dir(),
            delete=getattr(args, "delete", None),
            yes=getattr(args, "yes", False),
        )
    )


async def checkpoint_command(
    command: str,
    workspace: Path,
    *,
    session_id: str,
    checkpoint_id: str | None = None,
    dry_run: bool = False,
    session_dir: Path | None = None,
    delete: str | None = None,
    yes: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if delete is not None and not yes and not is_terminal(sys.stdin):
        print(
            "agent-lsp: stdin is not a terminal to ask you on: --yes deletes without asking; "
            "nothing was deleted",
            file=err,
            flush=True,
        )
        return 1
    shown = StreamedOutput(out, err)
    async with connected(workspace, session_dir=session_dir, shown=shown) as send:
        try:
            if command == "sessions" and delete is not None:
                result = await send(AGENT_SESSIONS, {"workspaceFolder": workspace.as_uri()})
                found = [s for s in result["sessions"] if s["sessionId"] == delete]
                if not found:
                    print(f"agent-lsp: no conversation {delete} in this folder", file=err)
                    return 1
                title = escape_control(str(found[0].get("title") or ""))
                if not yes:
                    print(
                        f'Delete conversation {delete} "{title}" for good (its saved files and '
                        "its checkpoints: its asks can no longer be undone)? [y/N] ",
                        end="",
                        file=err,
                        flush=True,
                    )
                    answer = await read_line(sys.stdin)
                    if (answer or "").strip().lower()[:1] != "y":
                        out.write("Not deleted.\n")
                        return 1
                await send(AGENT_END_SESSION, {"sessionId": delete})
                text = f'Deleted conversation {delete} "{title}".\n'
            elif command == "sessions":
                result = await send(AGENT_SESSIONS, {"workspaceFolder": workspace.as_uri()})
                lines = format_sessions(result["sessions"])
                text = "\n".join(lines) + "\n" if lines else "no conversations in this folder\n"
            elif command == "checkpoints":
                result = await send(AGENT_CHECKPOINTS, {"sessionId": session_id})
                lines = format_checkpoints(result["checkpoints"])
                text = "\n".join(lines) + "\n" if lines else f"no checkpoints in {session_id}\n"
            elif command == "diff":
                params = {"sessionId": session_id, "checkpointId": checkpoint_id}
                text = format_diff((await send(AGENT_DIFF, params))["files"])
            else:
                params = {"sessionId": session_id, "checkpointId": checkpoint_id, "dryRun": dry_run}
                result = await send(AGENT_REWIND, params)
                text = "\n".join(format_rewind(result, checkpoint_id or "")) + "\n"
        except JsonRpcException as exc:
            print(f"agent-lsp: {exc.message}", file=err, flush=True)
            return 1
    out.write(text)
    out.flush()
    return 0


def _local_time(stamp: str) -> str:
    try:
        return (
            datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            .astimezone()
            .strftime("%Y-%m-%d %H:%M")
        )
    except ValueError:
        return stamp
