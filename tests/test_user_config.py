"""The user configuration file: where it is, what it says, how it is written, its precedence."""

from __future__ import annotations

import logging
import os
import stat
import time
import tomllib
from pathlib import Path

import pytest

from server.config.sources import resolve_model_sources
from server.config.user_config import (
    UserConfigError,
    config_path,
    permission_warning,
    read_user_config,
    set_value,
)
from server.model.endpoint import ModelNotConfiguredError, load_model_settings

KEY = "sk-file-key-DO-NOT-LEAK-0000"


def write_config(home: Path, text: str, mode: int = 0o600) -> Path:
    path = home / "agent-lsp" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- where it is --------------------------------------------------------------------


def test_the_file_is_under_xdg_config_home_else_home_config(tmp_path: Path) -> None:
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    assert config_path(xdg) == tmp_path / "xdg" / "agent-lsp" / "config.toml"
    home = {"HOME": str(tmp_path / "home")}
    assert config_path(home) == tmp_path / "home" / ".config" / "agent-lsp" / "config.toml"
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    relative = {"XDG_CONFIG_HOME": "conf", "HOME": str(tmp_path / "home")}
    assert config_path(relative) == config_path(home)
    assert config_path({}) is None


# --- what it says -------------------------------------------------------------------


def test_top_level_values_and_a_selected_endpoint(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        api_key = "top-key"
        base_url = "https://api.openai.com/v1"
        model = "gpt-4o-mini"

        [endpoints.deepseek]
        api_key = "deepseek-key"
        base_url = "https://api.deepseek.com/v1"
        model = "deepseek-chat"

        [endpoints.local]
        base_url = "http://127.0.0.1:11434/v1"
        """.replace("        ", ""),
    )
    top = read_user_config(path)
    assert (top.api_key, top.base_url, top.model, top.endpoint) == (
        "top-key",
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        None,
    )
    assert top.endpoints == ("deepseek", "local")

    deepseek = read_user_config(path, endpoint="deepseek")
    assert (deepseek.api_key, deepseek.base_url, deepseek.model) == (
        "deepseek-key",
        "https://api.deepseek.com/v1",
        "deepseek-chat",
    )
    assert deepseek.label.endswith("config.toml [endpoints.deepseek]")
    # A selected endpoint is used as a whole: the top-level key never goes to its URL.
    local = read_user_config(path, endpoint="local")
    assert (local.api_key, local.base_url, local.model) == (None, "http://127.0.0.1:11434/v1", None)


def test_default_endpoint_and_the_environment_override(tmp_path: Path) -> None:
    config = tmp_path / "xdg"
    write_config(
        config,
        'default_endpoint = "a"\n[endpoints.a]\napi_key = "ka"\nbase_url = "http://a/v1"\n'
        '[endpoints.b]\napi_key = "kb"\nbase_url = "http://b/v1"\n',
    )
    environ = {"XDG_CONFIG_HOME": str(config)}
    assert load_model_settings(environ=environ, env_file=None).base_url == "http://a/v1"
    chosen = load_model_settings(environ={**environ, "AGENT_LSP_ENDPOINT": "b"}, env_file=None)
    assert (chosen.api_key, chosen.base_url) == ("kb", "http://b/v1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key = [1, 2]\n", "api_key must be a string"),
        ('default_endpoint = "nope"\n', "names no endpoint [endpoints.nope]"),
        ("base_url = \n", "is not valid TOML"),
        ("endpoints = 3\n", "endpoints must be tables"),
    ],
)
def test_a_broken_file_is_one_clear_line(tmp_path: Path, text: str, expected: str) -> None:
    write_config(tmp_path, text)
    with pytest.raises(ModelNotConfiguredError) as caught:
        load_model_settings(environ={"XDG_CONFIG_HOME": str(tmp_path)}, env_file=None)
    message = str(caught.value)
    assert expected in message
    assert str(tmp_path / "agent-lsp" / "config.toml") in message
    assert "\n" not in message


def test_unknown_keys_are_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_config(tmp_path, 'api_key = "k"\nbase_url = "http://x/v1"\ntheme = "dark"\n')
    with caplog.at_level(logging.WARNING):
        config = read_user_config(path)
    assert config.api_key == "k"
    assert "theme" in caplog.text


def test_an_edit_applies_at_the_next_read_even_within_a_second(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'model = "aaa"\n')
    assert read_user_config(path).model == "aaa"
    path.write_text('model = "bbb"\n')  # same size, same inode, maybe the same timestamp
    assert read_user_config(path).model == "bbb"
    old = time.time() - 60  # a settled file is parsed once, then kept while unchanged
    os.utime(path, (old, old))
    assert read_user_config(path).model == "bbb"
    path.write_text('model = "ccc"\n')
    assert read_user_config(path).model == "ccc"


# --- precedence ---------------------------------------------------------------------


def test_editor_beats_environment_beats_user_file_beats_dotenv(tmp_path: Path) -> None:
    write_config(
        tmp_path / "xdg",
        f'api_key = "{KEY}"\nbase_url = "http://file/v1"\nmodel = "file-model"\n',
    )
    dotenv = tmp_path / "agent.env"
    dotenv.write_text("MODEL_API_KEY=dotenv-key\nBASE_URL=http://dotenv/v1\nMODEL=dotenv-model\n")
    base = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}

    from_file = load_model_settings(environ=base, env_file=dotenv)
    assert (from_file.api_key, from_file.base_url, from_file.model) == (
        KEY,
        "http://file/v1",
        "file-model",
    )

    environment = {**base, "MODEL_API_KEY": "env-key", "MODEL": "env-model"}
    settings = load_model_settings(environ=environment, env_file=dotenv)
    assert (settings.api_key, settings.base_url, settings.model) == (
        "env-key",
        "http://file/v1",
        "env-model",
    )

    editor = {"model": "editor-model", "baseUrl": "http://editor/v1", "apiKey": "editor-key"}
    settings = load_model_settings(editor, environ=environment, env_file=dotenv)
    assert (settings.api_key, settings.base_url, settings.model) == (
        "env-key",  # never the editor's
        "http://editor/v1",
        "editor-model",
    )

    # Without the file, the .env decides.
    no_file = load_model_settings(environ={}, env_file=dotenv, user_file=None)
    assert (no_file.api_key, no_file.model) == ("dotenv-key", "dotenv-model")


def test_a_generic_openai_key_never_beats_the_user_file(tmp_path: Path) -> None:
    # An OPENAI_API_KEY exported for other tools must not travel to the file's endpoint.
    write_config(tmp_path, f'api_key = "{KEY}"\nbase_url = "https://api.deepseek.com/v1"\n')
    environ = {"XDG_CONFIG_HOME": str(tmp_path), "OPENAI_API_KEY": "sk-openai-for-other-tools"}
    assert load_model_settings(environ=environ, env_file=None).api_key == KEY


def test_sources_name_where_each_value_came_from(tmp_path: Path) -> None:
    write_config(tmp_path, f'api_key = "{KEY}"\nbase_url = "http://file/v1"\n')
    environ = {
        "XDG_CONFIG_HOME": str(tmp_path),
        "MODEL": "env-model",
        "AGENT_LSP_API_KEY_SOURCE": "ignored: MODEL_API_KEY is not set",
    }
    sources = resolve_model_sources({}, environ=environ, env_file=None)
    assert sources.api_key is not None and sources.api_key.source.endswith("config.toml")
    assert sources.model is not None and sources.model.source == "environment MODEL"
    assert KEY not in repr(sources)

    labelled = {**environ, "MODEL_API_KEY": "k", "AGENT_LSP_API_KEY_SOURCE": "VS Code's secrets"}
    sources = resolve_model_sources({"baseUrl": "http://e/v1"}, environ=labelled, env_file=None)
    assert sources.api_key is not None and sources.api_key.source == "VS Code's secrets"
    assert sources.base_url is not None
    assert sources.base_url.source == "editor setting agentLsp.baseUrl"


def test_a_workspace_config_file_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "repo"
    write_config(workspace / ".config", 'api_key = "evil"\nbase_url = "http://evil/v1"\n')
    write_config(workspace, 'api_key = "evil"\nbase_url = "http://evil/v1"\n')
    monkeypatch.chdir(workspace)
    with pytest.raises(ModelNotConfiguredError, match="No model API key"):
        load_model_settings(environ={"HOME": str(tmp_path / "home")}, env_file=None)


def test_missing_key_message_names_the_commands_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(ModelNotConfiguredError) as caught:
        load_model_settings(environ={"XDG_CONFIG_HOME": str(tmp_path)}, env_file=None)
    message = str(caught.value)
    assert message.startswith("No model API key.")
    assert "VS Code" not in message  # each client words the action (setApiKey) its own way
    assert caught.value.action == "setApiKey"
    assert "agent-lsp config set-key" in message
    assert str(tmp_path / "agent-lsp" / "config.toml") in message


# --- permissions ----------------------------------------------------------------------


def test_a_key_file_other_users_can_read_is_warned_about_once(tmp_path: Path) -> None:
    shared = write_config(tmp_path / "a", f'api_key = "{KEY}"\n', mode=0o644)
    warning = permission_warning(shared)
    assert warning is not None
    assert "chmod 600" in warning and "0644" in warning and KEY not in warning
    assert permission_warning(shared) is None  # once per process

    no_key = write_config(tmp_path / "b", 'model = "m"\n', mode=0o644)
    assert permission_warning(no_key) is None
    private = write_config(tmp_path / "c", f'api_key = "{KEY}"\n', mode=0o600)
    assert permission_warning(private) is None


# --- writing --------------------------------------------------------------------------


def test_set_value_creates_a_private_file_in_a_private_folder(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "agent-lsp" / "config.toml"
    set_value(path, "api_key", KEY)
    assert mode_of(path) == 0o600
    assert mode_of(path.parent) == 0o700
    assert tomllib.loads(path.read_text()) == {"api_key": KEY}
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp file left


def test_set_value_keeps_the_other_lines_and_comments(tmp_path: Path) -> None:
    text = (
        "# my agent-lsp settings\n"
        'model = "old-model"  # the one I like\n'
        "\n"
        "# the local server\n"
        "[endpoints.local]\n"
        'base_url = "http://127.0.0.1:11434/v1"\n'
    )
    path = write_config(tmp_path, text, mode=0o644)
    set_value(path, "model", "new-model")
    set_value(path, "api_key", KEY)
    set_value(path, "model", "qwen", endpoint="local")
    set_value(path, "base_url", "https://api.deepseek.com/v1", endpoint="deepseek")
    new = path.read_text()
    assert new == (
        "# my agent-lsp settings\n"
        'model = "new-model"\n'
        f'api_key = "{KEY}"\n'
        "\n"
        "# the local server\n"
        "[endpoints.local]\n"
        'base_url = "http://127.0.0.1:11434/v1"\n'
        'model = "qwen"\n'
        "\n"
        "[endpoints.deepseek]\n"
        'base_url = "https://api.deepseek.com/v1"\n'
    )
    assert mode_of(path) == 0o600  # a rewritten file is private too


def test_set_value_escapes_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "agent-lsp" / "config.toml"
    tricky = 'a"b\\c\tend\x7f'
    set_value(path, "model", tricky)
    assert tomllib.loads(path.read_text())["model"] == tricky


def test_set_value_refuses_what_it_cannot_edit_safely(tmp_path: Path) -> None:
    text = 'model = """\nmulti\nline"""\n'
    path = write_config(tmp_path, text)
    with pytest.raises(UserConfigError, match="change it by hand"):
        set_value(path, "model", "m")
    assert path.read_text() == text  # untouched
    broken = write_config(tmp_path / "b", "model = \n")
    with pytest.raises(UserConfigError, match="not valid TOML"):
        set_value(broken, "model", "m")
    with pytest.raises(UserConfigError, match="endpoint name"):
        set_value(path, "model", "m", endpoint="a b")


def test_set_value_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "agent-lsp.toml"
    real.parent.mkdir()
    real.write_text('model = "m"\n')
    link = tmp_path / "xdg" / "agent-lsp" / "config.toml"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    set_value(link, "api_key", KEY)
    assert link.is_symlink()
    assert tomllib.loads(real.read_text()) == {"model": "m", "api_key": KEY}
    assert os.readlink(link) == str(real)
