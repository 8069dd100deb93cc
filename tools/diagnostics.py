"""The ``diagnostics`` tool, and the problems a file tool's change introduced.

Both read the folder's language features (``tooling.language``, in the call's context):

- ``diagnostics``: the problems of given files (or of every file a server has reported on,
  capped), each as ``path:line:col: severity [source code] message``;
- after ``write_file`` / ``edit_file`` (:func:`problems_before`, :func:`problems_after`):
  the problems the change introduced in that file (new ones only: those not there before,
  told apart by severity, code, source and message, since lines move), capped; "no
  problems" when clean; "the language server did not answer within N ms" when it did not
  publish for the new text within the bound (``diagnosticsWait``). Never silence where a
  server handles the file; nothing at all where none does.
- after ``bash`` (:func:`open_files_before`, :func:`open_files_after`): the same, for each
  file open in the editor that a server handles and whose (mtime_ns, size) the command
  changed (at most ``MAX_WATCHED`` files looked at, ``MAX_REPORTED`` reported on); the
  problems before are those of the editor's text of it, taken before the call.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.language import SEVERITIES, Diagnostic, LanguageError
from tooling.regular_files import read_text_file
from tooling.workspace import Workspace

from .errors import ToolError, resolve

MAX_SHOWN = 20  # problems listed after a change
MAX_LISTED = 200  # problems the diagnostics tool lists
MAX_MESSAGE = 300  # characters of one problem's message
MAX_WATCHED = 50  # open files whose change a bash call looks for
MAX_REPORTED = 10  # changed open files a bash call reports problems for
MAX_WATCHED_BYTES = 1_000_000  # a changed open file larger than this: not reported

# An open file before a bash call: its (mtime_ns, size), None when absent; the editor's
# text of it (None: the editor gave none).
Seen = tuple[tuple[int, int] | None, str | None]


def shown_path(workspace: Workspace, path: Path) -> str:
    """``path`` as the model names files: relative to the folder, else absolute."""
    return workspace.relative(path) if workspace.contains(path) else str(path)


def problem_line(shown: str, diagnostic: Diagnostic) -> str:
    start = diagnostic.span.start
    tag = " ".join(x for x in (diagnostic.source, diagnostic.code) if x)
    message = " ".join(diagnostic.message.split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    tag = f" [{tag}]" if tag else ""
    return f"{shown}:{start.line}:{start.column}: {diagnostic.severity}{tag} {message}"


def _order(diagnostic: Diagnostic) -> tuple[int, int, int]:
    rank = SEVERITIES.index(diagnostic.severity) if diagnostic.severity in SEVERITIES else 0
    return (rank, diagnostic.span.start.line, diagnostic.span.start.column)


async def problems_before(
    context: ToolContext, target: Path, text: str | None, wait: float
) -> list[Diagnostic] | None:
    """The problems of ``target`` before a change (``text``: its content now, None: the
    disk's; a file that does not exist has none); None when no server answers for it."""
    language = context.language
    if language is None or wait <= 0 or not language.handles(target):
        return None
    if text is None and not target.exists():
        return []
    report = await language.diagnostics([target], texts=_texts(target, text), wait=wait)
    return report.diagnostics.get(target)


async def problems_after(
    context: ToolContext,
    workspace: Workspace,
    target: Path,
    text: str,
    before: list[Diagnostic] | None,
    wait: float,
) -> str:
    """What to append to a file tool's result about the problems ``text`` introduced in
    ``target``: "" when no language server handles the file."""
    language = context.language
    if language is None or wait <= 0 or not language.handles(target):
        return ""
    shown = shown_path(workspace, target)
    report = await language.diagnostics([target], texts={target: text}, wait=wait)
    lines = [f"Language server: {problem}" for problem in report.problems]
    found = report.diagnostics.get(target)
    if target in report.unhandled:  # the source learnt that no server handles it
        return "\n" + "\n".join(lines) if lines else ""
    if target in report.failed:
        lines.append("Problems: not known (the language server is not running).")
        return "\n" + "\n".join(lines)
    if found is None:
        lines.append(f"Problems: the language server did not answer within {report.timeout_ms} ms.")
        return "\n" + "\n".join(lines)
    known = Counter(d.identity() for d in before or ())
    new: list[Diagnostic] = []
    for diagnostic in sorted(found, key=_order):
        if known[diagnostic.identity()] > 0:
            known[diagnostic.identity()] -= 1
        else:
            new.append(diagnostic)
    if not new:
        kept = len(found)
        lines.append(
            f"Problems: no problems in {shown}."
            if not kept
            else f"Problems: no new problems in {shown} ({kept} already there before)."
        )
        return "\n" + "\n".join(lines)
    what = "new problem" if len(new) == 1 else "new problems"
    if before is None:
        what = "problem" if len(new) == 1 else "problems"
    lines.append(f"Problems: {len(new)} {what} in {shown}:")
    lines.extend(problem_line(shown, d) for d in new[:MAX_SHOWN])
    if len(new) > MAX_SHOWN:
        lines.append(f"... and {len(new) - MAX_SHOWN} more (the diagnostics tool lists them)")
    return "\n" + "\n".join(lines)


async def open_files_before(
    context: ToolContext, workspace: Workspace, wait: float
) -> dict[Path, Seen] | None:
    """What a bash call compares after it: the open files a language server handles, each
    with its (mtime_ns, size) and the editor's text of it (held in memory: no file is read
    before the call); None when there is nothing to compare (no editor, no source)."""
    language, documents = context.language, context.documents
    if language is None or documents is None or wait <= 0:
        return None
    # The workspace's files only: another open file (agent-lsp's own config, say) must not
    # reach a language server, nor its problems the model, because it changed meanwhile.
    paths = [
        p
        for p in dict.fromkeys(documents.open_paths())
        if workspace.contains(p) and language.handles(p)
    ]
    if not paths:
        return None
    paths = paths[:MAX_WATCHED]
    stamps = await asyncio.to_thread(lambda: {p: _stamp(p) for p in paths})
    return {p: (stamps[p], documents.buffer_text(p)) for p in paths}


async def open_files_after(
    context: ToolContext, workspace: Workspace, seen: dict[Path, Seen] | None, wait: float
) -> str:
    """What to append to a bash result about the problems it introduced in the open files
    it changed: "" when it changed none."""
    language = context.language
    if not seen or language is None:
        return ""
    stamps = await asyncio.to_thread(lambda: {p: _stamp(p) for p in seen})
    changed = [p for p, stamp in stamps.items() if stamp is not None and stamp != seen[p][0]]
    parts = []
    for path in changed[:MAX_REPORTED]:
        new = await asyncio.to_thread(_read, path)
        if new is None:
            continue  # too large or not text now
        old_stamp, old = seen[path]
        before: list[Diagnostic] | None = []  # a file the command created: all are new
        if old_stamp is not None:
            if old is None:
                continue  # its text before is not known
            report = await language.diagnostics([path], texts={path: old}, wait=wait)
            before = report.diagnostics.get(path)
        parts.append(await problems_after(context, workspace, path, new, before, wait))
    if len(changed) > MAX_REPORTED:
        parts.append(
            f"\n... and {len(changed) - MAX_REPORTED} more changed open files "
            "(the diagnostics tool lists their problems)"
        )
    return "".join(parts)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _read(path: Path) -> str | None:
    """What the command left under an open file's name, if a regular file of UTF-8 text: not
    through a symlink (it could name a file the sandbox hid, whose text would go to the
    language server and its words to the model), never blocking (a FIFO put in its place)."""
    try:
        return read_text_file(path, MAX_WATCHED_BYTES, follow_symlinks=False)
    except (OSError, UnicodeDecodeError):  # SkippedFile included: too large, not regular
        return None


def _texts(target: Path, text: str | None) -> dict[Path, str] | None:
    return {target: text} if text is not None else None


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "paths": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 50,
            "description": (
                "Files to check, relative to the workspace root. Empty or absent: every "
                "file a language server has reported on so far."
            ),
        },
    },
    "additionalProperties": False,
}


def diagnostics_tool(workspace: Workspace, *, wait: float = 5.0) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        language = context.language
        if language is None:
            return "Error: no language server answers for this folder"
        try:
            targets = [resolve(workspace, path) for path in arguments.get("paths") or ()]
        except ToolError as exc:
            return exc.text()
        missing = [shown_path(workspace, t) for t in targets if not t.is_file()]
        if missing:
            return f"Error: not a file: {', '.join(missing)}"
        try:
            report = await language.diagnostics(targets, wait=wait)
        except LanguageError as exc:
            return f"Error: {exc}"
        lines = [f"Language server: {problem}" for problem in report.problems]
        lines += [
            f"{shown_path(workspace, p)}: no language server handles this file"
            for p in report.unhandled
        ]
        lines += [
            f"{shown_path(workspace, p)}: the language server did not answer within "
            f"{report.timeout_ms} ms"
            for p in report.unanswered
        ]
        lines += [
            f"{shown_path(workspace, p)}: not known (the language server is not running)"
            for p in report.failed
        ]
        listed = 0
        clean = []
        for path, found in sorted(report.diagnostics.items()):
            shown = shown_path(workspace, path)
            if not found:
                clean.append(shown)
                continue
            for diagnostic in sorted(found, key=_order):
                if listed < MAX_LISTED:
                    lines.append(problem_line(shown, diagnostic))
                listed += 1
        if listed > MAX_LISTED:
            lines.append(f"... and {listed - MAX_LISTED} more")
        if clean:
            lines.append("No problems in: " + ", ".join(clean))
        if not lines:
            return "No problems known (no file checked yet: name the files to check)."
        return "\n".join(lines)

    return ToolDefinition(
        name="diagnostics",
        description=(
            "The problems (errors, warnings) language servers report for files: "
            "path:line:col: severity [source code] message. Give paths to check those "
            "files as they are now; without paths, every file checked so far."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=True,
        title="Diagnostics",
        kind="read",
        compaction_keeps="problems reported (path:line and message)",
    )
