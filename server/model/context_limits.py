"""How large a model's context window is, and how providers say a request passed it.

The window comes from the ``contextWindow`` setting, else from :data:`KNOWN_WINDOWS`
(a small table of hosted models whose windows are published and stable), else
:data:`DEFAULT_CONTEXT_WINDOW`. Local servers (llama.cpp, vLLM, Ollama) serve
whatever context they were started with, whatever the model's name: set
``contextWindow`` for them. llama.cpp and vLLM say so when a request is too large,
and the window they name is adopted for the rest of the conversation; Ollama cuts
the prompt silently instead (it never reports it), so there the setting matters.

:func:`overflow` recognises the context-length errors of OpenAI, DeepSeek, vLLM,
llama.cpp (and llama-cpp-python), Ollama and LM Studio by HTTP status and error
code or message, and reads the numbers they give (the window, the request's size).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

DEFAULT_CONTEXT_WINDOW: Final = 32_768

# Model-name prefix -> window in tokens; the longest matching prefix wins, after any
# "provider/" routing prefix (OpenRouter's "openai/gpt-4o"). Sources: each provider's
# model documentation; DeepSeek's figure is also the one its error messages state.
KNOWN_WINDOWS: Final[dict[str, int]] = {
    # platform.openai.com/docs/models
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # api-docs.deepseek.com (128K; "This model's maximum context length is 131072 tokens")
    "deepseek-chat": 131_072,
    "deepseek-reasoner": 131_072,
    # docs.anthropic.com (OpenAI-compatible endpoint)
    "claude-": 200_000,
    # ai.google.dev/gemini-api/docs/models (input token limit)
    "gemini-2.0": 1_048_576,
    "gemini-2.5": 1_048_576,
}


@dataclass(frozen=True)
class Window:
    tokens: int
    source: str  # "setting", "known model", "default" or "provider" (learned from an error)


def window_for(model: str, setting: int | None = None) -> Window:
    """The context window for ``model``: the setting, the table, or the default."""
    if setting:
        return Window(setting, "setting")
    name = model.rsplit("/", 1)[-1].lower()
    matches = [prefix for prefix in KNOWN_WINDOWS if name.startswith(prefix)]
    if matches:
        return Window(KNOWN_WINDOWS[max(matches, key=len)], "known model")
    return Window(DEFAULT_CONTEXT_WINDOW, "default")


@dataclass(frozen=True)
class Overflow:
    """A provider's "the request does not fit the context window", with its numbers."""

    window: int | None  # the window the provider states, if it does
    request_tokens: int | None  # the size it counted for the request, if it says


# Error codes / types that mean exactly this (OpenAI, llama.cpp's server).
_CODES: Final = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# Message texts, lower-cased. OpenAI, DeepSeek and vLLM: "This model's maximum context
# length is 131072 tokens. However, you requested 131134 tokens (...)"; vLLM v1: "The
# decoder prompt (length 17772) is longer than the maximum model length of 16384";
# newer OpenAI models: "Your input exceeds the context window of this model"; llama.cpp:
# "the request exceeds the available context size, try increasing it"; llama-cpp-python:
# "Requested tokens (2285) exceed context window of 2048"; Ollama: "the input length
# exceeds the context length"; LM Studio: "Input length 6491 exceeds context length 1500".
_MESSAGES: Final = re.compile(
    r"maximum context length|context length exceeded|exceeds? the context window"
    r"|exceeds? context window|longer than the maximum model length"
    r"|exceeds the available context size|exceeds? (?:the |maximum )?context length"
    r"|context window exceeded|prompt is too long"
)
_WINDOW: Final = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"maximum model length of (\d+)"),
    re.compile(r"context window of (\d+)"),
    re.compile(r"exceeds context length (\d+)"),
    re.compile(r'"?n_ctx"?\s*[:=]\s*(\d+)'),
)
_REQUEST: Final = (
    re.compile(r"\((\d+) in the messages"),  # the prompt part of "you requested N tokens (...)"
    re.compile(r"(?:resulted in|you requested|your request has) (\d+)"),
    re.compile(r"decoder prompt \(length (\d+)\)"),
    re.compile(r"requested tokens \((\d+)\)"),
    re.compile(r"input length (\d+)"),
    re.compile(r'"?n_prompt_tokens"?\s*[:=]\s*(\d+)'),
)


def overflow(status: int | None, code: str | None, message: str) -> Overflow | None:
    """The overflow a failed request reports, or None if it is another failure.

    Only HTTP errors count (llama.cpp answered 500 before it used 400); a code of
    :data:`_CODES` or a message of :data:`_MESSAGES` decides.
    """
    if status is None or status < 400 or status == 429:
        return None
    text = message.lower()
    if (code or "").lower() not in _CODES and not _MESSAGES.search(text):
        return None
    return Overflow(_first_number(_WINDOW, text), _first_number(_REQUEST, text))


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None
