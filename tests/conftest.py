"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.model_server import ScriptedModel


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """A scripted OpenAI-compatible model server on 127.0.0.1 for one test."""
    with ScriptedModel() as scripted:
        yield scripted
