"""The settings' schema (``server.engine.settings.SCHEMA``, published in
docs/protocol.schema.json) is what ``parse_settings`` reads, and every client names the same
settings: VS Code's package.json with the same types, bounds and machine scope, the Neovim and
Emacs docs with the same keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from server.engine.settings import SCHEMA, AgentSettings, parse_settings

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = json.loads((REPO / "docs/protocol.schema.json").read_text(encoding="utf-8"))
PACKAGE = json.loads((REPO / "editor-client/vscode/package.json").read_text(encoding="utf-8"))
# The VS Code settings only the extension reads (how it starts the server, what it shows).
CLIENT_ONLY = {"server.command", "trace.revealOnFirstAsk", "sendActiveEditor"}


class Recording(Mapping[str, Any]):
    """An empty settings object that notes every key the parser looks up."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.keys.add(key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.keys.add(key)
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_the_schema_names_exactly_what_the_parser_reads() -> None:
    recording = Recording()
    parse_settings(recording)
    assert recording.keys - {"agentLsp"} == set(SCHEMA)


def test_the_published_schema_is_this_one_and_valid() -> None:
    assert PUBLISHED["settings"] == {"$ref": "#/$defs/Settings"}
    assert PUBLISHED["$defs"]["Settings"]["properties"] == SCHEMA
    Draft202012Validator.check_schema(PUBLISHED["$defs"]["Settings"])


@pytest.mark.parametrize("key", sorted(k for k, v in SCHEMA.items() if "default" in v))
def test_each_default_is_the_parsers_default(key: str) -> None:
    assert parse_settings({key: SCHEMA[key]["default"]}) == AgentSettings()
    assert parse_settings({key: SCHEMA[key]["default"]}).warnings == ()


@pytest.mark.parametrize("key", sorted(SCHEMA))
def test_a_value_the_schema_refuses_the_parser_refuses(key: str) -> None:
    validator = Draft202012Validator(SCHEMA[key])
    for bad in (True, "x", 1.5, -1, [1], {"a": 1}, 10**9):
        if not validator.is_valid(bad):
            assert parse_settings({key: bad}).warnings, (key, bad)


@pytest.mark.parametrize("key", sorted(SCHEMA))
def test_vscode_declares_each_setting_as_the_schema_does(key: str) -> None:
    declared = PACKAGE["contributes"]["configuration"]
    declared = declared if isinstance(declared, list) else [declared]
    props = {k: v for section in declared for k, v in section["properties"].items()}
    ours = props.get(f"agentLsp.{key}")
    assert ours is not None, f"package.json does not declare agentLsp.{key}"
    schema = SCHEMA[key]
    if "enum" in schema:
        assert ours["enum"] == schema["enum"]
    else:
        kinds = {ours["type"]} if isinstance(ours["type"], str) else set(ours["type"])
        wanted = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
        # VS Code shows a number left empty as 0 or null: either stands for the default.
        assert kinds - {"null"} == wanted - {"null"}, (key, kinds, wanted)
    for bound in ("maximum",):
        if bound in ours or bound in schema:
            assert ours.get(bound) == schema.get(bound), (key, bound)
    if schema.get("scope") == "machine":
        assert ours.get("scope") == "machine", f"agentLsp.{key} must be machine-scoped"
    if "default" in ours and ours["default"] not in (None, "", 0):
        assert ours["default"] == schema.get("default"), key


def test_vscode_declares_no_server_setting_the_schema_lacks() -> None:
    declared = PACKAGE["contributes"]["configuration"]
    declared = declared if isinstance(declared, list) else [declared]
    keys = {k.removeprefix("agentLsp.") for s in declared for k in s["properties"]}
    assert keys - CLIENT_ONLY == set(SCHEMA)


def _words(path: Path, pattern: str) -> set[str]:
    return set(re.findall(pattern, path.read_text(encoding="utf-8")))


def test_the_neovim_and_emacs_docs_list_every_setting() -> None:
    # Those clients pass the user's table through as it is: their docs are the list.
    nvim = _words(REPO / "editor-client/nvim/doc/agent_lsp.txt", r"\b[a-z][a-zA-Z]+\b")
    emacs = set()
    for source in (REPO / "editor-client/emacs").glob("*.el"):
        emacs |= {w.lstrip(":") for w in _words(source, r":[a-z][a-zA-Z]+\b")}
    assert set(SCHEMA) - nvim == set()
    assert set(SCHEMA) - emacs == set()
