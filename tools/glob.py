"""The ``glob`` tool: files matching a pattern, inside the workspace, in bounded time.

Policies (the parts a caller can observe):

- Matching files sorted by path (code-point order, so ``B`` before ``a``), at most
  ``MAX_RESULTS`` with the number of the rest. Pattern semantics are in
  ``tools.globbing``; listing, ignore rules and the symlink policy in ``tools.listing``.
- Bounded: matching is linear in each path whatever the pattern; git (run confined:
  ``tools.workspace_git``) gets ``git_timeout`` seconds, then the walk is used
  instead; the walk gets ``time_budget`` seconds, and when they run out the files
  found so far are returned with a note saying the list is partial. Cancelling the
  call stops the walk.
- Folders that cannot be read are skipped, and a note names them; the call fails only
  when the search folder itself cannot be used.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.workspace import Workspace

from .errors import ToolError, os_error, resolve
from .globbing import Matcher, PatternError, split_pattern
from .listing import GitTimeout, Listing, git_ignores, git_list, is_listable_file, walk
from .sandbox import SandboxPolicy
from .workspace_git import GitRunner

MAX_RESULTS = 200
OUTPUT_CHARS = 100_000
GIT_TIMEOUT = 5.0
TIME_BUDGET = 10.0
_NAMED_UNREADABLE = 5

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Glob relative to path: * and ? stay within one folder level, ** spans "
                "folders, {a,b} gives alternatives. '*.py' = top level only; '**/*.py' = "
                "any depth."
            ),
        },
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "Folder to search, relative to the workspace root (default '.').",
        },
        "include_ignored": {
            "type": "boolean",
            "description": "Also list .git and files ignored by git (default false).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def glob_tool(
    workspace: Workspace,
    *,
    git_timeout: float = GIT_TIMEOUT,
    time_budget: float = TIME_BUDGET,
    policy: SandboxPolicy | None = None,
    git: str | None = None,
) -> ToolDefinition:
    """``policy``: the bash sandbox's, which git's listing runs under (read-only);
    ``git``: that program instead of the one found outside the workspace (tests)."""
    runner = GitRunner.of(workspace.root, policy or SandboxPolicy(), git)
    runner.unusable()  # probes the sandbox now (in the registry's thread), not in a call

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        pattern = arguments["pattern"]
        include_ignored = arguments.get("include_ignored", False)
        try:
            start, base, matcher = await asyncio.to_thread(
                _prepare, workspace, pattern, arguments.get("path", ".")
            )
        except ToolError as exc:
            return exc.text()
        hint = "" if include_ignored else " (.git and git-ignored files were not searched)"
        if base is None:  # a literal folder named by the pattern does not exist
            return f"No files match {pattern!r} in {workspace.relative(start)}{hint}"
        listing: Listing | None = None
        if not include_ignored:
            listing = await _git_listing(runner, workspace.root, base, matcher, git_timeout)
        if listing is None:
            try:
                listing = await asyncio.to_thread(
                    walk,
                    workspace.root,
                    base,
                    matcher,
                    respect_ignores=not include_ignored,
                    cancelled=context.cancelled,
                    deadline=time.monotonic() + time_budget,
                )
            except OSError as exc:  # the search folder itself
                return os_error(exc, workspace.relative(base), "list").text()
        return await asyncio.to_thread(
            _render, workspace, base, pattern, listing, hint, time_budget
        )

    return ToolDefinition(
        name="glob",
        description=(
            "Find files by glob pattern inside the workspace, e.g. '**/*.py' or "
            "'src/**/*.{ts,tsx}'. Returns matching file paths (relative to the workspace "
            f"root), sorted, at most {MAX_RESULTS}. Skips .git and git-ignored files "
            "unless include_ignored is true."
        ),
        parameters=PARAMETERS,
        handler=handler,
        read_only=True,
        title="Find files",
        summary_key="pattern",
        kind="search",
    )


async def _git_listing(
    git: GitRunner, root: Path, base: Path, matcher: Matcher, seconds: float
) -> Listing | None:
    """git's listing of ``base``, or None when the walk must do it (no git work tree, a
    workspace its enclosing repository ignores, a git that does not answer, or no
    sandbox to run it in)."""
    deadline = time.monotonic() + seconds
    try:
        listing = await git_list(git, base, matcher, deadline)
        if listing is not None and not listing.found and await git_ignores(git, root, deadline):
            return None
    except GitTimeout:
        return None
    return listing


def _prepare(workspace: Workspace, pattern: str, path: str) -> tuple[Path, Path | None, Matcher]:
    """(search folder from ``path``, folder to list or None if it does not exist,
    matcher); :class:`ToolError` when they cannot be used."""
    start = resolve(workspace, path)
    shown = workspace.relative(start)
    try:
        if not start.exists():
            raise ToolError(f"folder not found: {shown}")
        if not start.is_dir():
            raise ToolError(f"not a folder: {shown} (path must name a folder)")
    except OSError as exc:
        raise os_error(exc, shown, "list") from None
    try:
        split = split_pattern(pattern)
        base = start
        if split.prefix:
            try:
                base = resolve(workspace, str(start.joinpath(*split.prefix)))
            except ToolError as exc:
                if "escapes workspace" in str(exc):
                    raise ToolError(f"pattern {pattern!r} reaches outside the workspace") from None
                raise
        matcher = Matcher(split.rest)
    except PatternError as exc:
        raise ToolError(f"{exc}: {pattern!r}") from None
    try:
        return start, (base if base.is_dir() else None), matcher
    except OSError as exc:
        raise os_error(exc, workspace.relative(base), "list") from None


def _render(
    workspace: Workspace,
    base: Path,
    pattern: str,
    listing: Listing,
    hint: str,
    time_budget: float,
) -> str:
    where = workspace.relative(base)
    prefix = "" if where == "." else where + "/"
    found = sorted(listing.found)
    shown: list[str] = []
    chars = 0
    examined = 0
    for relpath in found:
        if len(shown) >= MAX_RESULTS or chars >= OUTPUT_CHARS:
            break
        examined += 1
        # git lists deleted-but-tracked files and symlinks to folders too; check what is
        # shown (checking all of a 100k-file listing would cost more than git did).
        if not is_listable_file(base / relpath, workspace.root):
            continue
        line = _printable(prefix + relpath)
        shown.append(line)
        chars += len(line) + 1
    notes = []
    rest = len(found) - examined
    if shown and rest:
        notes.append(
            f"[{len(shown)} files shown, sorted by path; {rest:,} more matches not shown: "
            "narrow the pattern or path]"
        )
    if listing.unreadable:
        names = ", ".join(
            f"{_printable(workspace.relative(folder))} ({why.lower()})"
            for folder, why in sorted(listing.unreadable)[:_NAMED_UNREADABLE]
        )
        more = len(listing.unreadable) - _NAMED_UNREADABLE
        count = len(listing.unreadable)
        notes.append(
            f"[{count} folder{'s' if count != 1 else ''} could not be read and "
            f"{'were' if count != 1 else 'was'} skipped: {names}"
            + (f", and {more} more" if more > 0 else "")
            + "]"
        )
    if listing.out_of_time:
        notes.append(
            f"[the search stopped after {time_budget:g} s: the list is partial; narrow the "
            "pattern or path]"
        )
    if not shown:
        return "\n".join([f"No files match {pattern!r} in {where}{hint}", *notes])
    return "\n".join(shown + notes)


def _printable(name: str) -> str:
    # Names that are not UTF-8 (kept as surrogates by the listing) cannot be JSON text.
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
