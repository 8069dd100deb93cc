"""The system prompt: one place for its wording.

The server uses :func:`system_prompt`, which takes the user's configured
override (if any) and substitutes ``{workspace}`` with the workspace folder.
"""

from __future__ import annotations

from pathlib import Path

WORKSPACE_PLACEHOLDER = "{workspace}"

_DEFAULT = """\
You are a coding agent working inside the user's editor. The project is the folder \
{workspace}; your tools act on that folder only (relative paths are resolved against it).

Do the work with your tools instead of describing what you would do: look at the \
relevant files before changing them, make small targeted edits, and run commands to \
check your changes when that is useful. If a tool returns an error, read it and adjust \
your next call rather than repeating the same one. Do not touch anything the task does \
not need.

When you are done, reply with a short summary of what you found or changed, naming \
the files involved and anything the user should still check. Cite places in files as \
`path:line` with the path relative to the project folder (e.g. `src/app.py:12`), so the \
editor can link them."""


def default_system_prompt(workspace_root: Path) -> str:
    return _DEFAULT.replace(WORKSPACE_PLACEHOLDER, str(workspace_root))


def system_prompt(workspace_root: Path, override: str | None = None) -> str:
    """The configured override (with ``{workspace}`` filled in) or the default.

    Plain replacement, not ``str.format``: other braces in a user's prompt stay as typed.
    An empty or blank override counts as unset.
    """
    if override is None or not override.strip():
        return default_system_prompt(workspace_root)
    return override.replace(WORKSPACE_PLACEHOLDER, str(workspace_root))
