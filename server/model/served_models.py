"""Whether the endpoint serves the configured model (``GET /models``).

Ollama, vLLM and llama.cpp list the models they serve. llama.cpp's server answers
every request with the one model it loaded, whatever name the request gives, so
a mistyped or defaulted model name would otherwise go unnoticed. Endpoints that
do not list (HTTP 404, no key for it, a timeout) are simply not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .connection_check import SET_MODEL_HINT, list_model_ids
from .endpoint import ModelRequestError, public_url

if TYPE_CHECKING:
    from openai import AsyncOpenAI

SHOWN_NAMES = 8


async def served_models(client: AsyncOpenAI, *, http_timeout: float) -> list[str] | None:
    """The model ids the endpoint lists, or None when it lists none (or cannot).

    ``http_timeout`` is generous (the requestTimeout): llama-cpp-python's server answers
    the list only once the completion it is computing is done.
    """
    try:
        return await list_model_ids(client, http_timeout=http_timeout) or None
    except ModelRequestError:
        return None


def is_served(model: str, served: Sequence[str]) -> bool:
    """Whether ``model`` is one of ``served``, under the aliases endpoints accept."""
    # Ollama lists "qwen2.5-coder:latest" and serves it as "qwen2.5-coder"; Gemini's
    # OpenAI-compatible endpoint lists "models/gemini-2.0-flash".
    return any(name in (model, f"{model}:latest", f"models/{model}") for name in served)


def not_served_warning(model: str, served: Sequence[str], base_url: str) -> str:
    """What to tell the user when ``model`` is not among ``served``."""
    shown = ", ".join(served[:SHOWN_NAMES])
    if len(served) > SHOWN_NAMES:
        shown += f" and {len(served) - SHOWN_NAMES} more"
    return (
        f"The model endpoint {public_url(base_url)} does not list the configured model {model!r}; "
        f"it serves: {shown}. Choose one with {SET_MODEL_HINT}: some servers answer "
        f"with their own model whatever name is asked for."
    )
