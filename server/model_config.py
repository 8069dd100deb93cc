"""Which model endpoint the agent talks to, and the typed errors it can raise.

Sources, highest first, looked up per setting:

1. ``overrides`` from the front end (editor settings): ``model``, ``baseUrl``,
   ``timeout``, ``maxRetries``. Never the key: an ``apiKey`` override is ignored.
2. The server's process environment.
3. A ``.env`` file read with python-dotenv (``os.environ`` is not modified): the
   file named by ``AGENT_LSP_ENV_FILE``, else ``.env`` in agent-lsp's own folder
   (the parent of ``server/``). A workspace's ``.env`` is never read: an untrusted
   repository could point ``BASE_URL`` at its own server and collect the key.

Names, most specific first: the key from ``MODEL_API_KEY`` then ``OPENAI_API_KEY``;
the base URL from ``BASE_URL`` then ``OPENAI_BASE_URL``; the model from ``MODEL``.
The project's own names beat the generic ``OPENAI_*`` ones across sources (a
``MODEL_API_KEY`` in agent-lsp's ``.env`` beats an ``OPENAI_API_KEY`` exported for
other tools), and for one name the environment beats the file.

There is no default base URL: a silent fallback to a paid endpoint would send the
key somewhere the user did not choose. The model name defaults to
:data:`DEFAULT_MODEL`; change it with ``MODEL`` or the editor's ``agentLsp.model``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

# Cheap, fast and tool-capable; the name only matters for OpenAI itself; other
# providers need their own (deepseek-chat, qwen2.5-coder, ...) via MODEL.
DEFAULT_MODEL: Final = "gpt-4o-mini"
DEFAULT_TIMEOUT: Final = 120.0
DEFAULT_MAX_RETRIES: Final = 2

PROJECT_ROOT: Final = Path(__file__).resolve().parent.parent
ENV_FILE_VARIABLE: Final = "AGENT_LSP_ENV_FILE"

KEY_NAMES: Final = ("MODEL_API_KEY", "OPENAI_API_KEY")
BASE_URL_NAMES: Final = ("BASE_URL", "OPENAI_BASE_URL")
MODEL_NAMES: Final = ("MODEL",)


class _Default:
    def __repr__(self) -> str:
        return "<default .env>"


_DEFAULT_ENV_FILE: Final = _Default()


@dataclass(frozen=True)
class ModelSettings:
    api_key: str = field(repr=False)
    base_url: str
    model: str
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES


class ModelNotConfiguredError(Exception):
    """The endpoint cannot be used yet; the message says what to set and where."""


class ModelRequestError(Exception):
    """A model request failed: HTTP error, timeout, refused connection, bad response.

    ``kind`` is one of ``"status"``, ``"timeout"``, ``"connection"``, ``"malformed"``,
    ``"other"``. The message never contains the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str = "",
        kind: str = "other",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message
        self.kind = kind

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


def load_model_settings(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    env_file: Path | _Default | None = _DEFAULT_ENV_FILE,
) -> ModelSettings:
    """Resolve the settings (see the module docstring for the sources).

    ``environ`` defaults to ``os.environ``; ``env_file=None`` reads no file, a path
    reads that file, the default reads ``AGENT_LSP_ENV_FILE`` or agent-lsp's ``.env``.
    """
    env = os.environ if environ is None else environ
    overrides = overrides or {}
    if "apiKey" in overrides or "api_key" in overrides:
        log.warning("Ignoring an API key passed in the editor settings; see the README.")

    path = _env_file_path(env) if isinstance(env_file, _Default) else env_file
    file_values = _read_env_file(path)

    def lookup(names: Iterable[str]) -> str | None:
        for name in names:
            for source in (env, file_values):
                value = source.get(name)
                if value is not None and value.strip():
                    return value.strip()
        return None

    where = _where(path)
    api_key = lookup(KEY_NAMES)
    if api_key is None:
        raise ModelNotConfiguredError(
            f"No model API key: set MODEL_API_KEY (or OPENAI_API_KEY) in the server's "
            f"environment or in {where}. The key is never read from editor settings "
            f"or the workspace."
        )

    base_url = _text(overrides.get("baseUrl")) or lookup(BASE_URL_NAMES)
    if base_url is None:
        raise ModelNotConfiguredError(
            f"No model base URL: set BASE_URL (or OPENAI_BASE_URL) in the server's "
            f"environment or in {where}, or the editor setting agentLsp.baseUrl "
            f"(for OpenAI itself: https://api.openai.com/v1). There is no default, "
            f"so the key is only ever sent where you chose."
        )
    if not base_url.startswith(("http://", "https://")):
        raise ModelNotConfiguredError(
            f"The model base URL must start with http:// or https://, got {base_url!r}."
        )

    model = _text(overrides.get("model")) or lookup(MODEL_NAMES) or DEFAULT_MODEL
    timeout = _number(overrides.get("timeout"), "agentLsp.timeout", DEFAULT_TIMEOUT)
    max_retries = _count(overrides.get("maxRetries"), "agentLsp.maxRetries", DEFAULT_MAX_RETRIES)
    return ModelSettings(
        api_key=api_key,
        base_url=base_url,
        model=model,
        timeout=timeout,
        max_retries=max_retries,
    )


def create_client(settings: ModelSettings) -> AsyncOpenAI:
    """An SDK client for ``settings`` (imports openai here: it takes ~1 s)."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        api_key=settings.api_key,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )


def translate_model_error(
    exc: BaseException, *, secrets: Iterable[str | None] = (), base_url: str | None = None
) -> ModelRequestError:
    """Turn an openai SDK exception into a :class:`ModelRequestError`.

    ``secrets`` (the API key) are scrubbed from every text defensively: a provider
    that echoes the key in its error message must not put it in a log or the editor.
    """
    import openai

    endpoint = _strip_userinfo(base_url).rstrip("/") if base_url else None
    where = f" from {endpoint}" if endpoint else ""
    if isinstance(exc, openai.APITimeoutError):
        kind, status, provider = "timeout", None, ""
        message = "Model request" + (f" to {endpoint}" if endpoint else "") + " timed out"
    elif isinstance(exc, openai.APIConnectionError):
        kind, status, provider = "connection", None, _cause_text(exc)
        message = "Could not connect to the model endpoint" + (f" {endpoint}" if endpoint else "")
        if provider:
            message += f": {provider}"
    elif isinstance(exc, openai.APIStatusError):
        kind, status, provider = "status", exc.status_code, _provider_message(exc)
        message = f"Model request failed with HTTP {status}{where}"
        if provider:
            message += f": {provider}"
    elif isinstance(exc, openai.APIResponseValidationError):
        kind, status, provider = "malformed", exc.status_code, ""
        message = f"Malformed model response{where}: {exc.message}"
    elif isinstance(exc, json.JSONDecodeError):  # the SDK lets a non-JSON 200 body through
        kind, status, provider = "malformed", None, ""
        message = f"Malformed model response{where}: not valid JSON ({exc.msg})"
    else:
        kind, status, provider = "other", None, str(exc)
        message = f"Model request failed{where}: {type(exc).__name__}: {exc}"
    return ModelRequestError(
        _scrub(message, secrets),
        status=status,
        provider_message=_scrub(provider, secrets),
        kind=kind,
    )


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (of 4+ characters) replaced by ``[redacted]``."""
    return _scrub(text, secrets)


# --- helpers ---------------------------------------------------------------


def _env_file_path(env: Mapping[str, str]) -> Path:
    named = env.get(ENV_FILE_VARIABLE)
    if named and named.strip():
        return Path(named.strip()).expanduser()
    return PROJECT_ROOT / ".env"


def _read_env_file(path: Path | None) -> dict[str, str | None]:
    if path is None or not path.is_file():
        return {}
    from dotenv import dotenv_values

    return dict(dotenv_values(path))


def _where(path: Path | None) -> str:
    if path is None:
        return f"{PROJECT_ROOT / '.env'} (or the file named by {ENV_FILE_VARIABLE})"
    note = "" if path.is_file() else ", which does not exist yet"
    return f"{path}{note} (or the file named by {ENV_FILE_VARIABLE})"


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _number(value: Any, setting: str, default: float) -> float:
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
        raise ModelNotConfiguredError(f"{setting} must be a positive number, got {value!r}.")
    return number


def _count(value: Any, setting: str, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ModelNotConfiguredError(f"{setting} must be a whole number >= 0, got {value!r}.")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or number != int(number):
        raise ModelNotConfiguredError(f"{setting} must be a whole number >= 0, got {value!r}.")
    return int(number)


def _provider_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    message: Any = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
    elif isinstance(body, str):
        message = body
    if not message:
        message = getattr(exc, "message", "") or ""
    return _shorten(str(message))


def _cause_text(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    text = str(cause) if cause is not None else ""
    return _shorten(text) if text else ""


def _shorten(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _strip_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{scheme}://{rest.split('@', 1)[1]}"
    return url


def _scrub(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text
