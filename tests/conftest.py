"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.model_server import ScriptedModel

# Test folders (tmp_path) stand for a user's home, projects and caches, which do not live in
# /tmp; a sandboxed call has a private /tmp of its own and would not see them there. So
# the tests' temporary folders live under /var/tmp (tests that need /tmp say so).
_BASE = Path("/var/tmp") / f"agent-lsp-tests-{os.getuid()}"
_BASE.mkdir(mode=0o700, exist_ok=True)
os.environ["TMPDIR"] = str(_BASE)
tempfile.tempdir = None  # forget a default computed before this file was imported


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """A scripted OpenAI-compatible model server on 127.0.0.1 for one test."""
    with ScriptedModel() as scripted:
        yield scripted


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The folder the editor has open: an empty ``project`` folder of the test's own.

    A module whose tests need files in it overrides this fixture with one that asks for it
    (``def workspace(workspace: Path)``) and adds them, so the folder is made in one place.
    """
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A non-blocking TCP listener on 127.0.0.1 (see ``tests.support.net``)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture
def no_namespaces(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's sandbox as where user namespaces are refused: Landlock and seccomp
    only (``AGENT_LSP_BWRAP=none``; a server started meanwhile inherits it)."""
    from tools import sandbox

    monkeypatch.setenv("AGENT_LSP_BWRAP", "none")
    sandbox.support.cache_clear()
    yield
    monkeypatch.delenv("AGENT_LSP_BWRAP")
    sandbox.support.cache_clear()
