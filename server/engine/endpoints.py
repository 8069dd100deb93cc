"""The model endpoints asks use: one SDK client per settings, what each endpoint accepts,
and the checks that tell the user what is wrong with one (the connection, a model the
endpoint does not serve).

Nothing here imports ``openai`` at module level: importing it takes about a second, so
the engine's warm-up does it in a worker thread (:meth:`Endpoints.warm_up`); a client
is built in a worker thread too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import protocol as p
from ..model.connection_check import check_connection, list_model_ids
from ..model.endpoint import ModelSettings, create_client, load_model_settings
from ..model.served_models import is_served, not_served_warning, served_models
from ..model.stream import StreamSupport
from ..model.warmup import rehearse_sdk, responsive_switching

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

# How long an ask that is done waits for its endpoint's model check to report, so a
# one-shot client (the terminal) still shows the warning; the check runs meanwhile.
MODEL_CHECK_GRACE_S = 0.5


class Endpoints:
    """The clients of the endpoints asks have used, kept for the server's lifetime.

    ``warn`` reports a model the endpoint does not serve (a message for the user).
    """

    def __init__(self, environ: Mapping[str, str] | None, warn: Callable[[str], None]) -> None:
        self._environ = environ
        self._warn = warn
        self._clients: dict[ModelSettings, AsyncOpenAI] = {}
        # What each endpoint accepts (does it stream?), learned once per server lifetime.
        self._streaming: dict[ModelSettings, StreamSupport] = {}
        # One check per (base URL, model) for the server's lifetime.
        self._model_checks: dict[tuple[str, str], asyncio.Task[None]] = {}

    async def warm_up(self, overrides: Mapping[str, Any]) -> bool:
        """Import the SDK off the event loop, then start checking the configured endpoint;
        False when the SDK cannot be imported."""
        try:
            await asyncio.to_thread(_import_sdk)
        except Exception:  # an ask will report a broken install properly
            log.exception("could not import the agent's dependencies")
            return False
        try:
            settings = self.settings(overrides)
            # Listing the endpoint's models now (not beside the first ask) also opens
            # the connection the first ask will reuse.
            self.check_model(settings, await self.client(settings))
        except Exception:  # not configured yet: the ask says what to set
            log.debug("model client not created during warm-up", exc_info=True)
        return True

    async def rehearse(self, *, rehearse_requests: bool) -> None:
        """After :meth:`warm_up`, what saves the first ask a few milliseconds more: the
        SDK's request path run once locally (``rehearse_requests``), the protocol's
        (un)structuring code generated."""
        try:
            await asyncio.to_thread(_prepare_sdk, rehearse_requests)
        except Exception:  # an optimisation: never let it break the server
            log.debug("the SDK's rehearsal failed", exc_info=True)

    def settings(self, overrides: Mapping[str, Any]) -> ModelSettings:
        """Resolved model settings; raises ModelNotConfiguredError with what to set."""
        return load_model_settings(overrides, environ=self._environ)

    async def client(self, settings: ModelSettings) -> AsyncOpenAI:
        client = self._clients.get(settings)
        if client is None:
            # Building the SDK client loads TLS certificates: not on the loop.
            client = await asyncio.to_thread(_build_client, settings)
            client = self._clients.setdefault(settings, client)
        return client

    def streaming(self, settings: ModelSettings) -> StreamSupport:
        return self._streaming.setdefault(settings, StreamSupport())

    async def list_models(self, settings: ModelSettings) -> p.ListModelsResult:
        """The models the endpoint lists, and the one asks use."""
        ids = await list_model_ids(await self.client(settings))
        return p.ListModelsResult([p.ModelInfo(name) for name in ids], settings.model)

    async def check_connection(self, overrides: Mapping[str, Any]) -> p.CheckConnectionResult:
        """Whether the endpoint works, in plain words."""
        report = await check_connection(overrides, environ=self._environ)
        checks = [
            p.ConnectionCheck(c.name, c.ok, c.message, c.kind, c.action) for c in report.checks
        ]
        return p.CheckConnectionResult(report.ok, checks)

    def check_model(self, settings: ModelSettings, client: AsyncOpenAI) -> asyncio.Task[None]:
        """Check, once per endpoint and model, that the endpoint serves the model.

        Runs beside the ask's first request, so the ask does not wait for it.
        """
        key = (settings.base_url, settings.model)
        check = self._model_checks.get(key)
        if check is None:
            check = asyncio.create_task(self._report_unserved_model(settings, client))
            check.add_done_callback(_log_failure)
            self._model_checks[key] = check
        return check

    async def _report_unserved_model(self, settings: ModelSettings, client: AsyncOpenAI) -> None:
        served = await served_models(client, http_timeout=settings.timeout)
        if served is None or is_served(settings.model, served):
            return
        self._warn(not_served_warning(settings.model, served, settings.base_url))

    async def aclose(self) -> None:
        checks = [check for check in self._model_checks.values() if not check.done()]
        for check in checks:
            check.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


async def grace(check: asyncio.Task[None]) -> None:
    """Give a model check a moment to report before the ask returns."""
    if not check.done():
        await asyncio.wait({check}, timeout=MODEL_CHECK_GRACE_S)


def _build_client(settings: ModelSettings) -> AsyncOpenAI:
    client = create_client(settings)
    # The SDK imports its resource modules on first attribute access (~50 ms): here,
    # in the worker thread, not in the first request on the event loop.
    _ = client.chat.completions, client.models
    return client


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("The model check failed", exc_info=exc)


def _import_sdk() -> None:
    """What the first ask cannot do without and takes long to load (~1 s: the model
    SDK), and the agent loop; call from a worker thread."""
    with responsive_switching():
        import openai  # noqa: F401

        from ..agent import loop  # noqa: F401


def _prepare_sdk(rehearse_requests: bool) -> None:
    """What saves a first ask a little more (call from a worker thread, after
    :func:`_import_sdk`)."""
    if rehearse_requests:
        rehearse_sdk()  # runs the SDK's request path once, locally
    with responsive_switching():  # an ask may be running meanwhile
        p.warm()
