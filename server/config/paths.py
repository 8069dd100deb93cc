"""Where agent-lsp keeps its state: one place for the folders the server and its clients name.

The server keeps conversations and checkpoints there; the terminal client passes the
session folder to the server it starts (``--session-dir``) and never reads the files
itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def state_dir(environ: Mapping[str, str]) -> Path:
    """agent-lsp's state folder: ``$XDG_STATE_HOME/agent-lsp`` (else ``~/.local/state``)."""
    home = environ.get("HOME") or str(Path.home())
    state = environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    return Path(state) / "agent-lsp"


def default_session_dir() -> Path:
    return state_dir(os.environ) / "sessions"
