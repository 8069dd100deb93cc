"""glob patterns: their semantics, and a matcher whose cost is bounded on any pattern.

Pattern semantics (standard glob, matched against ``/``-separated paths relative to
the search folder, case-sensitive):

- ``*`` any run of characters within one path segment, ``?`` one character,
  ``[abc]`` / ``[a-z]`` / ``[!abc]`` a character class, ``\\x`` a literal ``x``;
- ``**`` as a whole segment: zero or more folders (``**/*.py`` matches ``a.py`` and
  ``x/y/a.py``); a trailing ``**`` matches every file below (``src/**``); ``**``
  inside a segment (``a**b``) is a ``*``;
- ``{a,b}`` alternatives, nestable (``**/*.{ts,tsx}``), at most ``MAX_ALTERNATIVES``;
  braces without a top-level comma are literal, and so is everything from a ``{``
  that is never closed;
- wildcards match names starting with a dot too; only files are matched, not folders;
- a pattern has at most ``MAX_PATTERN_CHARS`` characters.

So ``*.py`` matches only the top level of the search folder. Leading literal folders of
a pattern (``src/app/**/*.py``) are folded into the search folder before listing, and
only there may ``..`` appear; the folded folder must stay inside the workspace. How the
files are listed (git, ``.gitignore``, symlinks) is in ``tools.listing``.

Cost: matching one path is O(len(path) x len(pattern)) per alternative, whatever the
pattern (a naive translation to a backtracking regex makes ``*a*a*a*a*a*a*b`` take
time growing as len(name)**6). Each alternative still compiles to a regular
expression, so matching runs in C, but one in which the engine never reconsiders a
choice once made: a segment ``p0*p1*...*pk`` is split at its stars into pieces of fixed
length (literals, ``?``, classes); ``p0`` is anchored at the start, ``pk`` at the end,
and each middle piece is matched at its leftmost occurrence inside an atomic group
(``(?>...)``). With fixed-length pieces the leftmost occurrence ends earliest, leaving
the most room for the rest, so if it fails no later one could succeed. The same holds
one level up: ``R0/**/R1/**/.../Rk``, each ``Ri`` a run of whole segments (a fixed
number of them), finds each middle run at its leftmost segment position, atomically.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_ALTERNATIVES = 64
MAX_PATTERN_CHARS = 1000
_GLOB_CHARS = frozenset("*?[{\\")


class PatternError(ValueError):
    """A pattern that cannot be used (the message is shown to the model)."""


@dataclass(frozen=True)
class SplitPattern:
    prefix: list[str]  # leading literal folders (may contain "..")
    rest: list[str]  # the segments matched against listed paths


def split_pattern(pattern: str) -> SplitPattern:
    """Separate the literal leading folders of ``pattern`` from the part to match."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS:,} characters")
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
        pattern = "/".join(segments)
        if len(pattern) > MAX_PATTERN_CHARS:
            raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS:,} characters")
        self._alternatives: list[list[str]] = []
        for alternative in expand_braces(pattern):
            segs = _normalise([s for s in alternative.split("/") if s not in ("", ".")])
            if not segs:
                continue
            if ".." in segs:
                raise PatternError(
                    "'..' may only appear in the leading folders of a pattern, before any wildcard"
                )
            self._alternatives.append(segs)
        if not self._alternatives:
            raise PatternError("the pattern names no files")
        try:
            regexes = [_alternative_regex(segs) for segs in self._alternatives]
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


def _normalise(segs: list[str]) -> list[str]:
    """Consecutive ``**`` as one; a trailing ``**`` as ``**/*`` (a file at any depth)."""
    out: list[str] = []
    for seg in segs:
        if not (seg == "**" and out and out[-1] == "**"):
            out.append(seg)
    if out and out[-1] == "**":
        out.append("*")
    return out


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


# --- braces ---------------------------------------------------------------------------

# A parsed pattern: literal text, and groups of alternatives (each a parsed pattern).
_Part = str | list[list["_Part"]]


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}`` -> ``[ab, acd, ace]``, in one left-to-right pass over the pattern."""
    return _expand(_parse_braces(pattern))


def _parse_braces(pattern: str) -> list[_Part]:
    top: list[_Part] = []
    current = top
    # Open groups: (index of the "{", the options so far, the sequence it sits in).
    stack: list[tuple[int, list[list[_Part]], list[_Part]]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            _literal(current, pattern[i : i + 2])  # kept for the segment compiler
            i += 2
            continue
        if c == "{":
            stack.append((i, [], current))
            current = []
        elif c == "," and stack:
            stack[-1][1].append(current)
            current = []
        elif c == "}" and stack:
            _, options, outer = stack.pop()
            options.append(current)
            if len(options) > 1:
                outer.append(options)
            else:  # no top-level comma: literal braces around what is inside
                _literal(outer, "{")
                outer.extend(options[0])
                _literal(outer, "}")
            current = outer
        else:
            _literal(current, c)
        i += 1
    if stack:  # never closed: from the outermost open "{" on, all is literal
        opened, _, outer = stack[0]
        _literal(outer, pattern[opened:])
        return outer
    return top


def _literal(sequence: list[_Part], text: str) -> None:
    if sequence and isinstance(sequence[-1], str):
        sequence[-1] += text
    else:
        sequence.append(text)


def _expand(sequence: list[_Part]) -> list[str]:
    results = [""]
    for part in sequence:
        if isinstance(part, str):
            results = [r + part for r in results]
            continue
        options = [text for option in part for text in _expand(option)]
        if len(results) * len(options) > MAX_ALTERNATIVES:
            raise PatternError(f"the pattern expands to more than {MAX_ALTERNATIVES} alternatives")
        results = [r + o for r in results for o in options]
    return results


# --- compiling ------------------------------------------------------------------------


def _alternative_regex(segs: list[str]) -> str:
    """``R0/**/R1/**/.../Rk`` (see the module docstring): ``R0`` anchored at the start,
    ``Rk`` at the end, each middle run at its leftmost position, atomically."""
    runs: list[list[str]] = [[]]
    for seg in segs:
        if seg == "**":
            runs.append([])
        else:
            runs[-1].append(seg)

    def run_regex(run: list[str]) -> str:
        return "/".join(_segment_regex(s) for s in run)

    if len(runs) == 1:
        return run_regex(runs[0])
    first, *middle, last = runs
    # ``.*/`` (any whole folders) is tried only where a "/" follows, and a run's segment
    # regexes cannot cross a "/": each run is tried at most once per folder boundary.
    parts = [run_regex(first) + "/"] if first else []
    parts += [f"(?>(?:.*?/)??{run_regex(run)}/)" for run in middle]
    parts.append(f"(?:.*/)?{run_regex(last)}")
    return "".join(parts)


def _segment_regex(seg: str) -> str:
    """One segment ``p0*p1*...*pk`` (see the module docstring)."""
    pieces = _pieces(seg)
    if len(pieces) == 1:
        return pieces[0]
    first, *middle, last = pieces
    return first + "".join(f"(?>[^/]*?{p})" for p in middle if p) + "[^/]*" + last


def _pieces(seg: str) -> list[str]:
    """The regexes of the fixed-length pieces between the stars of ``seg``."""
    pieces: list[list[str]] = [[]]
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        i += 1
        if c == "*":
            while i < n and seg[i] == "*":
                i += 1
            pieces.append([])
        elif c == "?":
            pieces[-1].append("[^/]")
        elif c == "\\" and i < n:
            pieces[-1].append(re.escape(seg[i]))
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
                pieces[-1].append(re.escape(c))
                continue
            body, i = seg[i:j], j + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(ch if ch == "-" else re.escape(ch) for ch in body)
            pieces[-1].append(f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]")
        else:
            pieces[-1].append(re.escape(c))
    return ["".join(piece) for piece in pieces]
