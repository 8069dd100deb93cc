"""The settings, declared once (``server.settings.settings``'s classes): the reader's defaults,
bounds and warnings, and every artefact derived from the declaration current — the published
schema, VS Code's package.json, the Neovim help and the Emacs client's table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from jsonschema import Draft202012Validator

from docs import settings_docs
from server.settings.settings import (
    AgentSettings,
    ModelSettings,
    Settings,
    read_settings,
    settings_fields,
)

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = json.loads((REPO / "docs/protocol.schema.json").read_text(encoding="utf-8"))
PACKAGE = json.loads((REPO / "editor-client/vscode/package.json").read_text(encoding="utf-8"))
PROPERTIES = PUBLISHED["$defs"]["Settings"]["properties"]
KEYS = [meta.key for _, meta in settings_fields()]
# What a repository must never choose (docs/protocol.md, Settings): the user's own only.
USER_ONLY = {
    "baseUrl",
    "enabledTools",
    "systemPrompt",
    "editThroughEditor",
    "confirmEdits",
    "sandbox",
    "writableRoots",
    "network",
    "allowedDomains",
    "maxProcesses",
    "maxFileSizeMB",
    "maxMemoryMB",
    "maxCallMemoryMB",
    "approval",
    "allowedCommands",
    "permissionTimeout",
    "mcpServers",
    "instructionFiles",
    "instructionsMaxBytes",
}


def test_every_derived_file_is_current() -> None:
    stale = [str(p.relative_to(REPO)) for p in settings_docs.generate(check=True)]
    assert stale == [], f"{stale} stale: run uv run python docs/protocol_schema.py"


def test_the_published_schema_is_the_declarations_and_valid() -> None:
    assert PUBLISHED["settings"] == {"$ref": "#/$defs/Settings"}
    assert PUBLISHED["$defs"]["Settings"] == settings_docs.schema()
    Draft202012Validator.check_schema(PUBLISHED["$defs"]["Settings"])


def test_each_key_is_declared_once() -> None:
    assert len(KEYS) == len(set(KEYS))


def test_no_settings_give_the_declared_defaults() -> None:
    assert read_settings(None) == read_settings({}) == AgentSettings()
    assert AgentSettings.of(Settings()) == AgentSettings()
    assert read_settings({}).warnings == ()


@pytest.mark.parametrize("key", [k for k in KEYS if "default" in PROPERTIES[k]])
def test_each_declared_default_reads_back_as_the_default(key: str) -> None:
    settings = read_settings({key: PROPERTIES[key]["default"]})
    assert settings == AgentSettings()
    assert settings.warnings == ()


@pytest.mark.parametrize("key", [k for k in KEYS if "maximum" in PROPERTIES[k]])
def test_a_bound_is_accepted_and_a_value_past_it_is_one_warning(key: str) -> None:
    top = PROPERTIES[key]["maximum"]
    assert read_settings({key: top}).warnings == ()
    past = read_settings({key: top * 2 + 1})
    assert past == AgentSettings()  # the default stands
    assert len(past.warnings) == 1
    assert past.warnings[0].startswith(f"agentLsp.{key} must be ")
    assert "default" in past.warnings[0]


def test_a_bad_field_is_one_warning_naming_it_and_its_default() -> None:
    settings = read_settings({"maxTurns": "many", "model": "m"})
    assert settings.model == "m"  # the others are read as usual
    assert settings.max_turns == ModelSettings().max_turns
    assert settings.warnings == (
        "agentLsp.maxTurns must be a positive integer; the default (50) stands",
    )
    assert read_settings({"sandbox": "none"}).warnings == (
        "agentLsp.sandbox must be one of workspace-write, read-only, off; "
        'the default ("workspace-write") stands',
    )
    assert read_settings({"model": 5}).warnings == (
        "agentLsp.model must be a string; the server's default stands",
    )


def test_types_are_strict() -> None:
    # No "5" -> 5, no true -> 1, no "bash" -> ["b", "a", "s", "h"].
    for key, value in [("maxTurns", "5"), ("maxRetries", True), ("enabledTools", "bash")]:
        settings = read_settings({key: value})
        assert settings == AgentSettings(), key
        assert len(settings.warnings) == 1, key


def test_unknown_keys_are_ignored() -> None:
    settings = read_settings({"apiKey": "sk-secret", "noSuchSetting": 1, "model": "m"})
    assert settings.warnings == ()
    assert settings.model == "m"
    assert "sk-secret" not in repr(settings)


def test_the_user_only_settings_are_machine_scoped_everywhere() -> None:
    machine = {k for k in KEYS if PROPERTIES[k].get("scope") == "machine"}
    assert machine == USER_ONLY
    vscode = PACKAGE["contributes"]["configuration"]["properties"]
    for key in KEYS:
        assert (vscode[f"agentLsp.{key}"].get("scope") == "machine") is (key in USER_ONLY), key


@pytest.mark.parametrize("key", KEYS)
def test_a_value_the_schema_refuses_the_reader_refuses(key: str) -> None:
    validator = Draft202012Validator(PROPERTIES[key])
    for bad in (True, "x", 1.5, -1, [1], {"a": 1}, 10**9):
        if not validator.is_valid(bad):
            assert read_settings({key: bad}).warnings, (key, bad)


def test_vscode_keeps_its_own_settings_and_words() -> None:
    vscode = PACKAGE["contributes"]["configuration"]["properties"]
    own = {k for k in vscode if k.removeprefix("agentLsp.") not in KEYS}
    assert own == {
        "agentLsp.server.command",
        "agentLsp.trace.revealOnFirstAsk",
        "agentLsp.sendActiveEditor",
    }
    assert all(vscode[f"agentLsp.{k}"]["markdownDescription"] for k in KEYS)


def test_a_new_setting_reaches_every_derived_file(monkeypatch: pytest.MonkeyPatch) -> None:
    # One field of one class is all a new setting needs to be declared everywhere.
    from server.settings import settings as module

    @attrs.frozen(slots=False)
    class Extra:
        thing_limit: int = module.setting(
            7, "thingLimit", "Things per ask.", scope="machine", positive=True, maximum=9
        )

    groups: Any = (*module.GROUPS, Extra)
    monkeypatch.setattr(module, "GROUPS", groups)
    assert settings_docs.schema()["properties"]["thingLimit"]["default"] == 7
    texts = {p.name: text for p, text in settings_docs.outputs().items()}
    package = json.loads(texts["package.json"])["contributes"]["configuration"]["properties"]
    assert package["agentLsp.thingLimit"]["scope"] == "machine"
    assert "Things per ask." in package["agentLsp.thingLimit"]["markdownDescription"]
    assert "thingLimit  (user)" in texts["agent_lsp.txt"]
    assert "(:thingLimit " in texts["agent-lsp-core.el"]
    assert "| `:thingLimit` |" in texts["README.md"]


def test_vscode_words_name_the_servers_defaults() -> None:
    # VS Code's descriptions are its own prose; a default they quote must be the declared one.
    vscode = PACKAGE["contributes"]["configuration"]["properties"]
    for key in KEYS:
        default = PROPERTIES[key].get("default")
        quoted = re.search(
            r"server's default \(([\d,.]+)\)", vscode[f"agentLsp.{key}"]["markdownDescription"]
        )
        if quoted and isinstance(default, int | float):
            assert float(quoted.group(1).replace(",", "")) == default, key


def test_the_protocol_pages_table_names_every_setting() -> None:
    # docs/protocol.md's table is the prose (links, where a default comes from): keys checked.
    text = (REPO / "docs/protocol.md").read_text(encoding="utf-8")
    table = text[text.index("## Settings (section `agentLsp`)") :].split("\n\n")[1]
    assert set(re.findall(r"^\| `(\w+)` \|", table, re.M)) == set(KEYS)
