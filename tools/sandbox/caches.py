"""Per-user caches of a sandboxed ``bash`` call: moved into the call's private temp dir.

Package managers write a cache in the user's home (``~/.cache/uv``, ``~/.cache/pip``,
``~/.npm``), outside what a sandboxed command may write, so ``uv run`` or ``pip`` would be
refused. The cache is not made writable: a cache shared with the user's unsandboxed runs is
something a confined command could poison (a planted wheel or tarball used later, outside
the sandbox). Instead, for a confined call only, each cache whose location is not writable
under the call's confinement is pointed at a folder in the call's ``$TMPDIR`` (empty, and
removed with it). A cache that is writable (the user put it in ``writableRoots``, or set the
variable to a folder in the workspace) stays where it is. Unsandboxed calls are untouched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .confine import Confinement, is_within

CACHE_HOME = "XDG_CACHE_HOME"  # uv, pip, go-build and many more follow it
# A tool's own variable, its folder's name, and whether its default is under the cache
# home ($XDG_CACHE_HOME, else ~/.cache) or the home folder (~/.NAME).
TOOL_CACHES: tuple[tuple[str, str, bool], ...] = (
    ("UV_CACHE_DIR", "uv", True),
    ("PIP_CACHE_DIR", "pip", True),
    ("npm_config_cache", "npm", False),
)


def cache_redirects(env: Mapping[str, str], confinement: Confinement, cwd: Path) -> dict[str, str]:
    """The variables to set in the environment ``env`` of a confined call run in ``cwd``."""
    writable = [os.path.realpath(p) for p in (*confinement.roots, confinement.tmp)]
    private = confinement.tmp / "cache"
    home = env.get("HOME", "")

    def location(value: str | None, default: str) -> str | None:
        chosen = value or default
        if not chosen:
            return None
        return os.path.realpath(os.path.join(cwd, os.path.expanduser(chosen)))

    def is_writable(path: str | None) -> bool:
        return path is not None and any(is_within(path, folder) for folder in writable)

    redirects: dict[str, str] = {}
    cache_home = location(env.get(CACHE_HOME), home and os.path.join(home, ".cache"))
    moved_home = not is_writable(cache_home)
    if moved_home:
        redirects[CACHE_HOME] = str(private)
    for variable, name, under_cache_home in TOOL_CACHES:
        if under_cache_home:
            default = os.path.join(cache_home, name) if cache_home else ""
        else:
            default = os.path.join(home, f".{name}") if home else ""
        where = location(env.get(variable), default)
        if where is None or not is_writable(where):
            redirects[variable] = str(private / name)
        elif moved_home and not env.get(variable):
            # Writable where it is (a writable root): pinned, not moved with the cache home.
            redirects[variable] = where
    return redirects
