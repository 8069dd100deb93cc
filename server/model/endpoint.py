"""Which model endpoint the agent talks to, and the typed errors it can raise.

Each value (key, base URL, model) comes from the first source that has it; the
sources and their order are in :mod:`server.config.sources`: editor settings
(never the key) > the server's environment > the user configuration file
(:mod:`server.config.user_config`) > agent-lsp's own ``.env``. A workspace's files are
never read: an untrusted repository could point the base URL at its own server
and collect the key.

There is no default base URL: a silent fallback to a paid endpoint would send the
key somewhere the user did not choose. The model name defaults to
:data:`DEFAULT_MODEL`; change it with ``MODEL``, the user file's ``model`` or the
editor's ``agentLsp.model``.
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

from ..config.sources import (
    DEFAULT,
    DEFAULT_MODEL,
    Default,
    missing_base_url_message,
    missing_key_message,
    resolve_model_sources,
)
from ..config.user_config import UserConfigError
from ..protocol import ErrorAction

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from .context_limits import Overflow

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT: Final = 120.0
DEFAULT_MAX_RETRIES: Final = 2


@dataclass(frozen=True)
class ModelSettings:
    api_key: str = field(repr=False)
    base_url: str
    model: str
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES


class ModelNotConfiguredError(Exception):
    """The endpoint cannot be used yet; the message says what to set and where, and
    ``action`` which setting it is (each client words it in its own menus; None: no one
    setting fixes it, e.g. a broken user configuration file)."""

    def __init__(self, message: str, action: ErrorAction | None = None) -> None:
        super().__init__(message)
        self.action = action


class ModelRequestError(Exception):
    """A model request failed: HTTP error, timeout, refused connection, bad response.

    ``kind`` is one of ``"status"``, ``"timeout"``, ``"connection"``, ``"malformed"``,
    ``"other"``. ``overflow`` is set when the provider said the request does not fit
    the model's context window. ``attempts`` and ``elapsed_ms`` say how many requests
    were sent and over how long (retries included). The message never contains the
    API key.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str = "",
        kind: str = "other",
        overflow: Overflow | None = None,
        attempts: int = 1,
        elapsed_ms: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message
        self.kind = kind
        self.overflow = overflow
        self.attempts = attempts
        self.elapsed_ms = elapsed_ms

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


def load_model_settings(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    env_file: Path | Default | None = DEFAULT,
    user_file: Path | Default | None = DEFAULT,
) -> ModelSettings:
    """Resolve the settings (see :mod:`server.config.sources` for the sources).

    ``environ`` defaults to ``os.environ``; ``env_file`` / ``user_file`` ``None`` read
    no such file, a path reads that file, the default finds it from ``environ``.
    """
    env = os.environ if environ is None else environ
    overrides = overrides or {}
    if "apiKey" in overrides or "api_key" in overrides:
        log.warning("Ignoring an API key passed in the editor settings; see the README.")
    try:
        sources = resolve_model_sources(
            overrides, environ=env, env_file=env_file, user_file=user_file
        )
    except UserConfigError as exc:
        raise ModelNotConfiguredError(str(exc)) from None

    if sources.api_key is None:
        raise ModelNotConfiguredError(missing_key_message(sources), ErrorAction.SET_API_KEY)
    api_key = sources.api_key.value
    if sources.base_url is None:
        raise ModelNotConfiguredError(missing_base_url_message(sources), ErrorAction.SET_BASE_URL)
    base_url = sources.base_url.value
    if not base_url.startswith(("http://", "https://")):
        raise ModelNotConfiguredError(
            f"The model base URL must start with http:// or https://, got {base_url!r} "
            f"(from {sources.base_url.source}).",
            ErrorAction.SET_BASE_URL,
        )

    model = sources.model.value if sources.model else DEFAULT_MODEL
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
    overflow = None
    if isinstance(exc, openai.APITimeoutError):
        return timeout_error(base_url)
    if isinstance(exc, openai.APIConnectionError):
        kind, status, provider = "connection", None, _cause_text(exc)
        message = "Could not connect to the model endpoint" + (f" {endpoint}" if endpoint else "")
        if provider:
            message += f": {provider}"
    elif isinstance(exc, openai.APIStatusError):
        kind, status, provider = "status", exc.status_code, _provider_message(exc)
        message = f"Model request failed with HTTP {status}{where}"
        if provider:
            message += f": {provider}"
        overflow = _overflow(exc)
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
        overflow=overflow,
    )


def public_url(url: str) -> str:
    """``url`` as it may be shown: without user:password@ and the trailing slash."""
    return _strip_userinfo(url).rstrip("/")


def timeout_error(base_url: str | None = None) -> ModelRequestError:
    """The error for a request that got no answer in time."""
    endpoint = _strip_userinfo(base_url).rstrip("/") if base_url else None
    message = "Model request" + (f" to {endpoint}" if endpoint else "") + " timed out"
    return ModelRequestError(message, kind="timeout")


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (of 4+ characters) replaced by ``[redacted]``."""
    return _scrub(text, secrets)


# --- helpers ---------------------------------------------------------------


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


def _overflow(exc: Any) -> Overflow | None:
    """A context-length error, read from the whole error body (llama.cpp puts its
    numbers beside the message: ``n_prompt_tokens``, ``n_ctx``)."""
    from .context_limits import overflow

    body = getattr(exc, "body", None)
    text = json.dumps(body, default=str) if isinstance(body, Mapping) else str(body or "")
    code = getattr(exc, "code", None) or getattr(exc, "type", None)
    return overflow(getattr(exc, "status_code", None), code, f"{_provider_message(exc)} {text}")


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
