"""Where each model setting comes from, and the source it came from.

Sources, highest first, looked up per value (``api_key``, ``base_url``, ``model``):

1. editor settings (``agentLsp.baseUrl``, ``agentLsp.model``; never the key);
2. the server's environment: ``MODEL_API_KEY``, ``BASE_URL``, ``MODEL``;
3. the user configuration file (:mod:`server.config.user_config`);
4. agent-lsp's own ``.env`` (the file named by ``AGENT_LSP_ENV_FILE``, else ``.env``
   beside ``server/``), read with python-dotenv without touching ``os.environ``;
5. the generic ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, from the environment then
   that ``.env``: a last fallback, so a key exported for other tools is never paired
   with a URL configured for agent-lsp.

A workspace's files are never read: an untrusted repository could point the base
URL at its own server and collect the key.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tooling.regular_files import read_text_file

from .user_config import ENDPOINT_VARIABLE, UserConfig, config_path, display_path, read_user_config

PROJECT_ROOT: Final = Path(__file__).resolve().parents[2]
ENV_FILE_VARIABLE: Final = "AGENT_LSP_ENV_FILE"
# How to name where MODEL_API_KEY came from (a client that keeps the key itself sets it:
# the key it passes comes from the editor's secret storage, not from a shell).
KEY_SOURCE_VARIABLE: Final = "AGENT_LSP_API_KEY_SOURCE"

MAX_ENV_FILE_BYTES = 1024 * 1024
KEY_NAMES: Final = ("MODEL_API_KEY", "OPENAI_API_KEY")
BASE_URL_NAMES: Final = ("BASE_URL", "OPENAI_BASE_URL")
MODEL_NAMES: Final = ("MODEL",)
_OVERRIDES: Final = {"base_url": "baseUrl", "model": "model"}
_NAMES: Final = {"api_key": KEY_NAMES, "base_url": BASE_URL_NAMES, "model": MODEL_NAMES}


class Default:
    def __repr__(self) -> str:
        return "<default>"


DEFAULT: Final = Default()

# The model when no source names one. Cheap, fast and tool-capable; the name only matters
# for OpenAI itself; other providers need their own (deepseek-chat, qwen2.5-coder, ...) via
# MODEL. Here, beside the sources, for the language server's ``initialize`` (it names the
# model before the model code loads); ``server.model.endpoint`` re-exports it.
DEFAULT_MODEL: Final = "gpt-4o-mini"


@dataclass(frozen=True)
class Sourced:
    value: str = field(repr=False)  # may be the key
    source: str


@dataclass(frozen=True)
class ModelSources:
    api_key: Sourced | None
    base_url: Sourced | None
    model: Sourced | None
    user_config: UserConfig | None  # None: the environment names no home folder
    env_file: Path | None

    def get(self, key: str) -> Sourced | None:
        return {"api_key": self.api_key, "base_url": self.base_url, "model": self.model}[key]


def resolve_model_sources(
    overrides: Mapping[str, Any] | None,
    *,
    environ: Mapping[str, str],
    env_file: Path | Default | None = DEFAULT,
    user_file: Path | Default | None = DEFAULT,
) -> ModelSources:
    """Each value with its source. Raises ``UserConfigError`` for an unreadable user file.

    ``env_file=None`` / ``user_file=None`` read no such file; a path reads that file;
    the default finds it from ``environ``.
    """
    overrides = overrides or {}
    env_path = env_file_path(environ) if isinstance(env_file, Default) else env_file
    dotenv = _read_env_file(env_path)
    user_path = config_path(environ) if isinstance(user_file, Default) else user_file
    user = None
    if user_path is not None:
        user = read_user_config(user_path, endpoint=environ.get(ENDPOINT_VARIABLE))

    def find(key: str) -> Sourced | None:
        editor = _text(overrides.get(_OVERRIDES.get(key, "")))
        if editor is not None:
            return Sourced(editor, f"editor setting agentLsp.{_OVERRIDES[key]}")
        own, *generic = _NAMES[key]
        # (value, how to name its source): the name is built only for the value chosen.
        candidates: list[tuple[str | None, Callable[[], str]]] = [
            (environ.get(own), lambda: _environment_label(own, environ)),
            (user.value(key) if user else None, lambda: user.label if user else ""),
            (dotenv.get(own), lambda: f"{_dotenv_label(env_path)} ({own})"),
        ]
        for name in generic:
            candidates.append((environ.get(name), lambda name=name: f"environment {name}"))
            candidates.append(
                (dotenv.get(name), lambda name=name: f"{_dotenv_label(env_path)} ({name})")
            )
        for value, source in candidates:
            if value is not None and value.strip():
                return Sourced(value.strip(), source())
        return None

    return ModelSources(
        api_key=find("api_key"),
        base_url=find("base_url"),
        model=find("model"),
        user_config=user,
        env_file=env_path,
    )


def missing_key_message(sources: ModelSources) -> str:
    return (
        "No model API key. Run `agent-lsp config set-key` (it writes "
        f"{_user_file_name(sources)}); or set "
        "MODEL_API_KEY (or OPENAI_API_KEY) in the server's environment or in "
        f"{_env_file_name(sources)}. The key is never read from editor settings or the "
        "workspace."
    )


def missing_base_url_message(sources: ModelSources) -> str:
    return (
        "No model base URL: run `agent-lsp config set base_url URL` (it writes "
        f"{_user_file_name(sources)}), or set the editor setting agentLsp.baseUrl, or "
        "BASE_URL (or OPENAI_BASE_URL) in the server's environment or in "
        f"{_env_file_name(sources)} (for OpenAI itself: https://api.openai.com/v1). There "
        "is no default, so the key is only ever sent where you chose."
    )


def env_file_path(environ: Mapping[str, str]) -> Path:
    named = environ.get(ENV_FILE_VARIABLE)
    if named and named.strip():
        return Path(named.strip()).expanduser()
    return PROJECT_ROOT / ".env"


# --- helpers ---------------------------------------------------------------------------


def _read_env_file(path: Path | None) -> dict[str, str | None]:
    if path is None:
        return {}
    try:  # a regular file only, never blocking on a FIFO (tooling.regular_files)
        text = read_text_file(path, MAX_ENV_FILE_BYTES)
    except (OSError, UnicodeDecodeError):
        return {}
    from dotenv import dotenv_values

    return dict(dotenv_values(stream=io.StringIO(text)))


def _environment_label(name: str, environ: Mapping[str, str]) -> str:
    if name == KEY_NAMES[0]:
        described = _text(environ.get(KEY_SOURCE_VARIABLE))
        if described is not None:
            return described[:100]
    return f"environment {name}"


def _dotenv_label(path: Path | None) -> str:
    return f".env file {path}"


def _user_file_name(sources: ModelSources) -> str:
    if sources.user_config is None:
        return "~/.config/agent-lsp/config.toml"
    return display_path(sources.user_config.path)


def _env_file_name(sources: ModelSources) -> str:
    path = sources.env_file
    if path is None:
        return f"{PROJECT_ROOT / '.env'} (or the file named by {ENV_FILE_VARIABLE})"
    note = "" if path.is_file() else ", which does not exist yet"
    return f"{path}{note} (or the file named by {ENV_FILE_VARIABLE})"


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None
