"""Fixtures shared by the test modules."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.support.model_server import ScriptedModel


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """A scripted OpenAI-compatible model server on 127.0.0.1 for one test."""
    with ScriptedModel() as scripted:
        yield scripted


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A non-blocking TCP listener on 127.0.0.1 (see ``tests.support.net``)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()
