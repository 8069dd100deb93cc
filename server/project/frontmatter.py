"""Front matter: the YAML block between ``---`` lines that opens a SKILL.md or a command file.

Parsed with PyYAML's safe loader (plain data: no tags, no objects), so a file from a cloned
repository cannot make the server construct anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

# PyYAML is imported on the first file with front matter, not at the server's start-up
# (~25 ms, on the way to `initialize`: bench/results/startup.md).


class FrontMatterError(ValueError):
    """The file's front matter is not a YAML mapping (the message says what is wrong)."""


def split(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)``; a file without front matter has an empty one."""
    if not text.startswith("---"):
        return {}, text
    first, _, rest = text.partition("\n")
    if first.strip() != "---":
        return {}, text
    head, found, body = _until_fence(rest)
    if not found:
        raise FrontMatterError("the front matter has no closing --- line")
    import yaml

    # libyaml's safe loader where PyYAML was built with it (about 9x faster a file), else
    # the pure-Python one: the same safe subset either way.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(head, Loader=loader) if head.strip() else {}
    except yaml.YAMLError:
        # Again with the pure-Python loader, whose marks point at the line at fault.
        try:
            yaml.load(head, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            raise FrontMatterError(f"the front matter is not valid YAML: {_short(exc)}") from None
        raise FrontMatterError("the front matter is not valid YAML") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError("the front matter must be a mapping of keys to values")
    return data, body


def _until_fence(text: str) -> tuple[str, bool, str]:
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.rstrip() == "---":
            return "\n".join(lines[:index]), True, "\n".join(lines[index + 1 :])
    return text, False, ""


def _short(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} (line {mark.line + 2})" if mark is not None else str(problem)
