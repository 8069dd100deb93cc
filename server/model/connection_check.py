"""Does the configured endpoint work? The models it serves, and a check in plain words.

Protocol-free: the language server (``agent/listModels``, ``agent/checkConnection``)
and ``agent-lsp config check`` / ``config models`` call these functions. The key
stays here: it is sent to the endpoint and never appears in a result (every
message is scrubbed of it).

The check, in order (it stops where going on cannot tell more):

1. ``configuration``: a key and a base URL are set (and where they came from);
2. ``models``: ``GET /models`` answers (reachable, the key accepted, a list);
3. ``model``: the configured model is among them (an endpoint may serve a model
   it does not list, so the request below has the last word);
4. ``request``: one tiny chat request answers.

A failed check carries a ``kind``, what to fix, so that a client picks its button
without reading the words: one of :data:`Kind` (docs/protocol.md lists them); and the
:class:`~server.protocol.ErrorAction` of that kind (``action``), which each client words in
its own menus (the words here name no editor).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from ..config.sources import ModelSources, resolve_model_sources
from ..config.user_config import UserConfigError
from ..protocol import ErrorAction
from .endpoint import (
    ModelNotConfiguredError,
    ModelRequestError,
    ModelSettings,
    create_client,
    load_model_settings,
    scrub,
    translate_model_error,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

LIST_TIMEOUT: Final = 15.0
REQUEST_TIMEOUT: Final = 30.0
PROBE_PROMPT: Final = "Reply with the single word OK."
# How to set each value without an editor; a failed check's ``action`` lets each client
# add its own way (a command, a menu).
SET_KEY_HINT: Final = "`agent-lsp config set-key`"
SET_URL_HINT: Final = "`agent-lsp config set base_url URL` or the editor setting agentLsp.baseUrl"
SET_MODEL_HINT: Final = "`agent-lsp config set model NAME` or the editor setting agentLsp.model"
# The action that fixes a failed check of each kind.
ACTIONS: Final[Mapping[str, ErrorAction]] = {
    "unreachable": ErrorAction.SET_BASE_URL,
    "url": ErrorAction.SET_BASE_URL,
    "auth": ErrorAction.SET_API_KEY,
    "model": ErrorAction.SET_MODEL,
}

# What a failed check asks the user to fix:
# - unreachable: nothing answers at the base URL (refused, unknown host, timeout);
# - url: no base URL, or something answers there but not the API (no model list, a 404);
# - auth: no key, or the endpoint refused it (401/403);
# - model: the endpoint does not serve the model;
# - other: nothing to set (rate limit, a server error, a broken user file...): the words say.
Kind = Literal["unreachable", "url", "auth", "model", "other"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str
    kind: Kind | None = None  # a failed check's; None when it passed

    @property
    def action(self) -> ErrorAction | None:
        """What the user does to fix it (None: passed, or no one setting fixes it)."""
        return ACTIONS.get(self.kind) if self.kind else None


@dataclass(frozen=True)
class CheckReport:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)


async def list_model_ids(client: AsyncOpenAI, *, http_timeout: float = LIST_TIMEOUT) -> list[str]:
    """The ids ``GET /models`` lists, sorted; raises :class:`ModelRequestError`."""
    base_url = str(client.base_url)
    try:
        text = await client.with_options(timeout=http_timeout, max_retries=0).get(
            "/models", cast_to=str
        )
        body = json.loads(text)
    except Exception as exc:
        if _is_sdk_error(exc) or isinstance(exc, json.JSONDecodeError):
            raise translate_model_error(exc, secrets=[client.api_key], base_url=base_url) from None
        raise
    ids = _model_ids(body)
    if ids is None:
        raise ModelRequestError(
            f"{_endpoint(base_url)}/models answered, but not with a model list", kind="malformed"
        )
    return ids


async def check_connection(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    client_factory: Callable[[ModelSettings], AsyncOpenAI] = create_client,
    list_timeout: float = LIST_TIMEOUT,
    request_timeout: float = REQUEST_TIMEOUT,
) -> CheckReport:
    """Run the check for these editor ``overrides`` and environment."""
    env = os.environ if environ is None else environ
    sources: ModelSources | None = None  # what is set, and where: also says what is missing
    try:
        sources = resolve_model_sources(overrides, environ=env)
        settings = load_model_settings(overrides, environ=env)
    except (ModelNotConfiguredError, UserConfigError) as exc:
        kind = _configuration_kind(sources)
        return CheckReport((Check("configuration", False, str(exc), kind),))
    # Building the SDK client loads TLS certificates: not on the loop.
    client = await asyncio.to_thread(client_factory, settings)
    try:
        checks = await _probe(
            settings,
            sources,
            client.with_options(max_retries=0),
            list_timeout=list_timeout,
            request_timeout=request_timeout,
        )
    finally:
        await client.close()
    secrets = [settings.api_key]
    return CheckReport(
        tuple(Check(c.name, c.ok, scrub(c.message, secrets), c.kind) for c in checks)
    )


def _configuration_kind(sources: ModelSources | None) -> Kind:
    """Which setting the configuration lacks (load_model_settings checks them in this order);
    no ``sources``: the user file itself is broken, and its words say where."""
    if sources is None:
        return "other"
    if sources.api_key is None:
        return "auth"
    if sources.base_url is None or not sources.base_url.value.startswith(("http://", "https://")):
        return "url"
    return "other"  # e.g. a timeout setting that is not a number


# --- the steps ---------------------------------------------------------------------------


async def _probe(
    settings: ModelSettings,
    sources: ModelSources,
    client: AsyncOpenAI,
    *,
    list_timeout: float,
    request_timeout: float,
) -> list[Check]:
    url, model = _endpoint(settings.base_url), settings.model
    key_from = sources.api_key.source if sources.api_key else "?"
    model_from = f"from {sources.model.source}" if sources.model else "the default"
    checks = [
        Check(
            "configuration",
            True,
            f"Key from {key_from}; endpoint {url} (from "
            f"{sources.base_url.source if sources.base_url else '?'}); model {model} "
            f"({model_from}).",
        )
    ]

    models: list[str] | None = None
    listing_error: ModelRequestError | None = None
    try:
        models = await list_model_ids(client, http_timeout=list_timeout)
    except ModelRequestError as exc:
        listing_error = exc
        stop = _unreachable(exc, url, list_timeout, key_from)
        if stop is not None:
            kind, message = stop
            return [*checks, Check("models", False, message, kind)]

    request_error: ModelRequestError | None = None
    started = time.monotonic()
    try:
        await _tiny_request(client, model, http_timeout=request_timeout)
    except ModelRequestError as exc:
        request_error = exc
    elapsed = time.monotonic() - started

    # models
    if models is not None:
        checks.append(Check("models", True, f"{url} lists {_count(len(models), 'model')}."))
    elif request_error is None:
        checks.append(
            Check(
                "models",
                True,
                f"{url} does not list its models ({_said(listing_error)}); it answers "
                f"requests, so type the model's name instead of choosing it from a list.",
            )
        )
    else:
        checks.append(
            Check(
                "models",
                False,
                f"{url}/models did not give a model list ({_said(listing_error)}). Check "
                f"the base URL: it usually ends in /v1 (e.g. https://api.openai.com/v1). "
                f"Set it with {SET_URL_HINT}.",
                "url",
            )
        )

    # model
    listed = models is not None and model in models
    model_failed = request_error is not None and _about_the_model(request_error, models)
    if models is not None:
        if listed:
            checks.append(Check("model", True, f"{model} is one of them."))
        elif request_error is None:
            checks.append(
                Check("model", True, f"{model} is not in the list, but it answers requests.")
            )
        else:
            checks.append(
                Check(
                    "model",
                    False,
                    f"{model} is not a model this endpoint serves; it lists "
                    f"{_sample(models)}. Choose one with {SET_MODEL_HINT}.",
                    "model",
                )
            )
    elif model_failed:
        checks.append(
            Check(
                "model",
                False,
                f"The endpoint does not know the model {model} ({_said(request_error)}). "
                f"Choose another with {SET_MODEL_HINT}.",
                "model",
            )
        )

    # request
    if request_error is None:
        checks.append(
            Check("request", True, f"{model} answered a test request in {elapsed:.1f} s.")
        )
    else:
        kind, message = _request_failure(
            request_error, url, model, request_timeout, key_from, models
        )
        checks.append(Check("request", False, message, kind))
    return checks


async def _tiny_request(client: AsyncOpenAI, model: str, *, http_timeout: float) -> None:
    create: Callable[..., Awaitable[Any]] = client.with_options(
        timeout=http_timeout
    ).chat.completions.create
    try:
        response = await create(model=model, messages=[{"role": "user", "content": PROBE_PROMPT}])
    except Exception as exc:
        if _is_sdk_error(exc) or isinstance(exc, json.JSONDecodeError):
            raise translate_model_error(
                exc, secrets=[client.api_key], base_url=str(client.base_url)
            ) from None
        raise
    if not getattr(response, "choices", None):
        raise ModelRequestError("the endpoint answered without a choice", kind="malformed")


def _unreachable(
    error: ModelRequestError, url: str, timeout: float, key_from: str
) -> tuple[Kind, str] | None:
    """Kind and message when nothing more can be learnt (no answer, or the key refused)."""
    if error.kind == "connection":
        detail = f" ({error.provider_message})" if error.provider_message else ""
        return "unreachable", (
            f"Nothing answers at {url}{detail}. Check the base URL ({SET_URL_HINT}) and, "
            f"for a local server, that it is running."
        )
    if error.kind == "timeout":
        return "unreachable", (
            f"{url} did not answer within {timeout:g} s. Check the base URL, your network "
            f"or proxy; a local server may still be loading its model."
        )
    if error.status in (401, 403):
        return "auth", (
            f"The endpoint refused the API key from {key_from} ({_said(error)}). Set a valid "
            f"key: {SET_KEY_HINT}."
        )
    return None


def _request_failure(
    error: ModelRequestError,
    url: str,
    model: str,
    timeout: float,
    key_from: str,
    models: list[str] | None,
) -> tuple[Kind, str]:
    stop = _unreachable(error, url, timeout, key_from)
    if stop is not None:
        return stop
    if _about_the_model(error, models):
        return "model", f"The test request for {model} failed ({_said(error)})."
    if error.status == 404:
        return "url", (
            f"{url}/chat/completions does not exist ({_said(error)}): the base URL is "
            f"probably wrong; it usually ends in /v1. Set it with {SET_URL_HINT}."
        )
    if error.status == 429:
        return "other", (
            f"The endpoint is rate-limiting or out of quota ({_said(error)}): check your "
            f"plan or billing, or try again later."
        )
    if error.status is not None and error.status >= 500:
        return "other", f"The endpoint failed ({_said(error)}); try again later."
    return "other", f"The test request failed: {error.message}."


def _about_the_model(error: ModelRequestError, models: list[str] | None) -> bool:
    """Whether a failed request is about the model name (404/400 saying so)."""
    if error.status not in (400, 404, 422):
        return False
    if models is not None and error.status == 404:
        return True  # the URL is right (it listed models): the model is what is missing
    return "model" in error.provider_message.lower()


def _said(error: ModelRequestError | None) -> str:
    if error is None:
        return "no answer"
    if error.status is not None:
        said = f"HTTP {error.status}"
        detail = error.provider_message.rstrip(". ")
        return f"{said}: {detail}" if detail else said
    return error.message


def _sample(models: list[str], limit: int = 8) -> str:
    if not models:
        return "none"
    shown = ", ".join(models[:limit])
    return shown + (f" and {len(models) - limit} more" if len(models) > limit else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _endpoint(base_url: str) -> str:
    return base_url.rstrip("/")


def _model_ids(body: Any) -> list[str] | None:
    """Ids from an OpenAI-style ``{"data": [{"id"}]}`` (or a bare list, or Ollama's ``models``)."""
    items: Any = body
    if isinstance(body, dict):
        items = body.get("data", body.get("models"))
    if not isinstance(items, list):
        return None
    ids = set()
    for item in items:
        if isinstance(item, dict):
            name = item.get("id") or item.get("name") or item.get("model")
        else:
            name = item
        if isinstance(name, str) and name.strip():
            ids.add(name.strip())
    return sorted(ids)


def _is_sdk_error(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.OpenAIError)
