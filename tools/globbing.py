"""The machinery behind ``glob``: pattern compilation and listing files without
walking what git ignores.

Pattern semantics (standard glob, matched against ``/``-separated paths relative to
the search folder, case-sensitive):

- ``*`` any run of characters within one path segment, ``?`` one character,
  ``[abc]`` / ``[a-z]`` / ``[!abc]`` a character class, ``\\x`` a literal ``x``;
- ``**`` as a whole segment: zero or more folders (``**/*.py`` matches ``a.py`` and
  ``x/y/a.py``; a trailing ``src/**`` matches every file under ``src``);
- ``{a,b}`` alternatives, nestable (``**/*.{ts,tsx}``), at most ``MAX_ALTERNATIVES``;
- wildcards match names starting with a dot too; only files are matched, not folders.

So ``*.py`` matches only the top level of the search folder. Leading literal folders of
a pattern (``src/app/**/*.py``) are folded into the search folder before listing, and
only there may ``..`` appear; the folded folder must stay inside the workspace.

Listing (``include_ignored=False``): when the search folder is in a git work tree,
``git ls-files --cached --others --exclude-standard`` lists it, so git's own ignore
rules apply (``.gitignore`` at every level, ``.git/info/exclude``, the global excludes
file) and git never descends into ignored folders. Untracked nested repositories are
listed by running the same command inside them; submodules' contents are not listed.
Outside git, or when the workspace itself is ignored by an enclosing repository, a
walk applies the ``.gitignore`` files from the workspace root down (``pathspec``'s
gitignore semantics), and never enters an ignored folder or ``.git``.
``include_ignored=True`` walks everything, ``.git`` included. Walks never follow
symlinked folders (so they cannot lead outside); a symlinked file is reported only if
it resolves to a regular file inside the workspace.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

MAX_ALTERNATIVES = 64
GIT_TIMEOUT = 60.0
_GLOB_CHARS = frozenset("*?[{\\")
# Variables with which an inherited environment (a git hook, say) would point git at
# another repository than the folder being listed.
_GIT_LOCAL_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
)


if TYPE_CHECKING:
    import pathspec


class PatternError(ValueError):
    """A pattern that cannot be used (the message is shown to the model)."""


@dataclass(frozen=True)
class SplitPattern:
    prefix: list[str]  # leading literal folders (may contain "..")
    rest: list[str]  # the segments matched against listed paths


def split_pattern(pattern: str) -> SplitPattern:
    """Separate the literal leading folders of ``pattern`` from the part to match."""
    if pattern.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", pattern):
        raise PatternError(
            "the pattern must be relative (to 'path', default the workspace root), not absolute"
        )
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    if not segments:
        raise PatternError("the pattern names no files")
    prefix: list[str] = []
    for segment in segments[:-1]:
        if _GLOB_CHARS.intersection(segment):
            break
        prefix.append(segment)
    return SplitPattern(prefix=prefix, rest=segments[len(prefix) :])


class Matcher:
    """A compiled pattern: ``matches(relpath)`` and ``may_contain(folder_parts)``."""

    def __init__(self, segments: list[str]) -> None:
        alternatives = expand_braces("/".join(segments))
        self._alternatives: list[list[str]] = []
        regexes = []
        for alternative in alternatives:
            segs = [s for s in alternative.split("/") if s not in ("", ".")]
            if not segs:
                continue
            if ".." in segs:
                raise PatternError(
                    "'..' may only appear in the leading folders of a pattern, before any wildcard"
                )
            self._alternatives.append(segs)
            regexes.append(_alternative_regex(segs))
        if not regexes:
            raise PatternError("the pattern names no files")
        try:
            self._regex = re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL)
            self._segment_regexes: list[list[re.Pattern[str] | None]] = [
                [None if s == "**" else re.compile(_segment_regex(s), re.DOTALL) for s in segs]
                for segs in self._alternatives
            ]
        except re.error as exc:
            raise PatternError(f"invalid pattern: {exc}") from None

        self._suffixes = _literal_suffixes(self._alternatives)

    def matches(self, relpath: str) -> bool:
        return self._regex.fullmatch(relpath) is not None

    def filter(self, relpaths: Iterable[str]) -> list[str]:
        if self._suffixes:  # ``str.endswith`` is several times cheaper than a regex call
            relpaths = [p for p in relpaths if p.endswith(self._suffixes)]
        return list(filter(self._regex.fullmatch, relpaths))

    def may_contain(self, folder: tuple[str, ...]) -> bool:
        """Whether a file under ``folder`` (relative parts) could match."""
        return any(_may_contain(regexes, folder) for regexes in self._segment_regexes)


def _may_contain(regexes: list[re.Pattern[str] | None], folder: tuple[str, ...]) -> bool:
    """``regexes``: one per pattern segment, None for ``**``."""
    for i, part in enumerate(folder):
        rx = regexes[i]
        if rx is None:
            return True  # "**": anything below may match
        if i == len(regexes) - 1:
            return False  # only the last segment is left, and it names a file
        if rx.fullmatch(part) is None:
            return False
    return True


def _literal_suffixes(alternatives: list[list[str]]) -> tuple[str, ...]:
    """The literal endings every match must have (``**/*.{ts,tsx}`` -> ``.ts``,
    ``.tsx``), or ``()`` when some alternative has none."""
    suffixes = []
    for segs in alternatives:
        last = segs[-1]
        if "\\" in last or last == "**":
            return ()
        tail = re.split(r"[*?\[\]]", last)[-1]
        if not tail:
            return ()
        suffixes.append(tail)
    return tuple(suffixes)


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}`` -> ``[ab, acd, ace]``; braces without a comma stay literal."""
    results: list[str] = []
    pending = [(pattern, 0)]
    while pending:
        text, start = pending.pop()
        span = _first_brace_group(text, start)
        if span is None:
            results.append(text)
        else:
            open_at, close_at, options = span
            if options is None:  # no top-level comma: literal braces, look further on
                pending.append((text, open_at + 1))
                continue
            head, tail = text[:open_at], text[close_at + 1 :]
            pending.extend((head + option + tail, open_at) for option in reversed(options))
        if len(results) + len(pending) > MAX_ALTERNATIVES:
            raise PatternError(f"the pattern expands to more than {MAX_ALTERNATIVES} alternatives")
    return results


def _first_brace_group(text: str, start: int) -> tuple[int, int, list[str] | None] | None:
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth, j, options, piece_start = 0, i, [], i + 1
            while j < len(text):
                d = text[j]
                if d == "\\":
                    j += 2
                    continue
                if d == "{":
                    depth += 1
                elif d == "}":
                    depth -= 1
                    if depth == 0:
                        options.append(text[piece_start:j])
                        return i, j, options if len(options) > 1 else None
                elif d == "," and depth == 1:
                    options.append(text[piece_start:j])
                    piece_start = j + 1
                j += 1
            return None  # unbalanced: the rest is literal
        i += 1
    return None


def _alternative_regex(segs: list[str]) -> str:
    parts = []
    last = len(segs) - 1
    for k, seg in enumerate(segs):
        if seg == "**":
            if k > 0 and segs[k - 1] == "**":
                continue
            # Zero or more whole folders (``.*/`` is faster than ``(?:[^/]+/)*`` and
            # equivalent on real paths, which have no empty segments).
            parts.append("(?:.*/)?[^/]+" if k == last else "(?:.*/)?")
        else:
            parts.append(_segment_regex(seg) + ("" if k == last else "/"))
    return "".join(parts)


def _segment_regex(seg: str) -> str:
    out = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        i += 1
        if c == "*":
            while i < n and seg[i] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i < n:
            out.append(re.escape(seg[i]))
            i += 1
        elif c == "[":
            j = i
            if j < n and seg[j] in "!^":
                j += 1
            if j < n and seg[j] == "]":
                j += 1
            while j < n and seg[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
                continue
            body, i = seg[i:j], j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(ch if ch == "-" else re.escape(ch) for ch in body)
            out.append(f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


# --- listing ------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


async def _run_git(folder: Path, *args: str) -> tuple[int, bytes] | None:
    """``git -C folder ARGS``: (exit code, stdout), or None if git is not installed."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            git,
            "-C",
            str(folder),
            *args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_git_env(),
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT)
    except BaseException:  # timeout or cancellation: never leave git running
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    assert proc.returncode is not None
    return proc.returncode, out


async def git_list(
    folder: Path, matcher: Matcher, inside: tuple[str, ...] = ()
) -> list[str] | None:
    """Matching files under ``folder`` that git does not ignore (relative to
    ``folder``); None when ``folder`` is not in a git work tree. ``inside``: the
    parts from the search folder to ``folder`` (for nested repositories)."""
    ran = await _run_git(folder, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    if ran is None or ran[0] != 0:
        return None
    # Parsing and matching a large listing is CPU work: keep it off the event loop.
    found, nested_repos = await asyncio.to_thread(_match_listing, ran[1], matcher, inside)
    if len(inside) < 32:
        for nested in nested_repos:
            parts = tuple(nested.rstrip("/").split("/"))
            if not matcher.may_contain(inside + parts):
                continue
            inner = await git_list(folder / nested, matcher, inside + parts)
            if inner:
                found.extend(nested + p for p in inner)
    return found


def _match_listing(
    listing: bytes, matcher: Matcher, inside: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """(matching files, untracked nested repositories) of ``git ls-files -z`` output."""
    entries = listing.decode("utf-8", "surrogateescape").rstrip("\0").split("\0")
    if entries == [""]:
        return [], []
    if inside:
        prefix = "/".join(inside) + "/"
        found = [e for e in entries if matcher.matches(prefix + e)]
    else:
        found = matcher.filter(entries)
    # "name/" entries are untracked nested repositories: git lists them, not their files.
    nested: list[str] = []
    if b"/\0" in listing or listing.endswith(b"/"):
        nested = [e for e in entries if e.endswith("/")]
        found = [e for e in found if not e.endswith("/")]
    # Unmerged paths are listed once per stage.
    return list(dict.fromkeys(found)), nested


async def git_ignores(path: Path) -> bool:
    """Whether the git repository around ``path`` ignores it (e.g. the workspace is a
    folder that an enclosing repository lists in its ``.gitignore``)."""
    ran = await _run_git(path, "check-ignore", "-q", "--", str(path))
    return ran is not None and ran[0] == 0


class _IgnoreRules:
    """The ``.gitignore`` files that apply to one folder, deepest last."""

    def __init__(self, specs: tuple[tuple[int, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.specs = specs

    def below(self, folder: Path, depth: int) -> _IgnoreRules:
        """The rules for ``folder`` (``depth`` parts below the root): these plus its own
        ``.gitignore``, if any."""
        spec = _load_gitignore(folder / ".gitignore")
        return self if spec is None else _IgnoreRules((*self.specs, (depth, spec)))

    def ignores(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        # The deepest file with a matching rule decides; inside it, the last rule.
        for depth, spec in reversed(self.specs):
            rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
            decision = spec.check_file(rel).include
            if decision is not None:
                return decision
        return False


def _load_gitignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    import pathspec  # only the non-git walk needs it; keeps it off the server's start-up

    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    lines = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # one malformed line: keep the others (git skips it too)
        good = []
        for ln in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([ln])
            except Exception:
                continue
            good.append(ln)
        return pathspec.GitIgnoreSpec.from_lines(good) if good else None


def walk(
    root: Path,
    folder: Path,
    matcher: Matcher,
    *,
    respect_ignores: bool,
    stop: threading.Event,
) -> list[str]:
    """Matching files under ``folder`` (relative to it) by walking the tree.

    With ``respect_ignores``, ``.gitignore`` files from ``root`` down apply and ``.git``
    is skipped; ignored folders are never entered. Symlinked folders are never
    followed. Unreadable folders are skipped.
    """
    rules = _IgnoreRules()
    start_parts = folder.relative_to(root).parts
    if respect_ignores:
        rules = rules.below(root, 0)
        here = root
        for i, part in enumerate(start_parts):
            if part == ".git" or rules.ignores(start_parts[: i + 1], is_dir=True):
                return []
            here = here / part
            rules = rules.below(here, i + 1)

    found: list[str] = []
    pending: list[tuple[Path, tuple[str, ...], _IgnoreRules]] = [(folder, (), rules)]
    while pending:
        if stop.is_set():
            return found
        current, rel, rules = pending.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            parts = (*rel, name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if respect_ignores and (
                        name == ".git" or rules.ignores((*start_parts, *parts), is_dir=True)
                    ):
                        continue
                    if matcher.may_contain(parts):
                        sub_rules = (
                            rules.below(Path(entry.path), len(start_parts) + len(parts))
                            if respect_ignores
                            else rules
                        )
                        pending.append((Path(entry.path), parts, sub_rules))
                    continue
                relpath = "/".join(parts)
                if not matcher.matches(relpath):
                    continue
                if respect_ignores and (
                    name == ".git" or rules.ignores((*start_parts, *parts), is_dir=False)
                ):
                    continue
                if entry.is_file(follow_symlinks=False) or (
                    entry.is_symlink() and is_listable_file(Path(entry.path), root)
                ):
                    found.append(relpath)
            except OSError:
                continue
    return found


def is_listable_file(path: Path, root: Path) -> bool:
    """A regular file, or a symlink to a regular file inside ``root``."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISREG(mode):
            return True
        if not stat.S_ISLNK(mode):
            return False
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return (target == root or target.is_relative_to(root)) and target.is_file()
