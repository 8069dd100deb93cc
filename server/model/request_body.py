"""The JSON body of a chat request, built so that a turn costs what changed.

The openai SDK's ``create()`` runs its TypedDict transform over every message (a
recursive copy that checks each key's annotation: 63 ms for 200 messages, 318 ms for
500, on the event loop) and then ``json.dumps`` the whole body again, every turn. A
conversation only grows between turns, and its messages are never edited in place
(compaction, a rewind or a failed ask replace or remove them), so each message is
encoded once: :class:`BodyEncoder` keeps a conversation's encoded messages by identity
and encodes only the new ones; the body is those bytes joined. The SDK then sends it
as it is (``post(..., content=...)``), with its transport, retries, error types and
SSE parsing.

The bytes are what the SDK would send (``openapi_dumps``: compact separators, UTF-8,
no NaN), so no endpoint sees a different request (``tests/test_request_body.py``
compares them with ``create()``'s, field for field).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .messages import Message

# Arguments of create() that are request options, not body fields.
SDK_OPTIONS = ("timeout", "extra_headers", "extra_query", "extra_body")
CONVERSATIONS_KEPT = 8  # conversations whose encoded messages are kept (most recent)


# One encoder for every call: json.dumps with options builds a new one each time (~20 µs,
# more than encoding a short message).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """JSON as the SDK writes a body (``openai._utils._json.openapi_dumps``)."""
    return _JSON.encode(value).encode()


def body_fields(fields: dict[str, Any], **more: Any) -> dict[str, Any]:
    """The body ``create(**fields, **more)`` sends: its fields, ``extra_body`` over them."""
    body = {key: value for key, value in fields.items() if key not in SDK_OPTIONS}
    body.update(more)
    body.update(fields.get("extra_body") or {})
    return body


class _Encoded:
    """One conversation's messages as last sent, with their JSON."""

    __slots__ = ("messages", "parts")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.parts: list[bytes] = []


class BodyEncoder:
    """Request bodies; each conversation's messages are encoded once.

    A conversation is known by its first message after the system prompt (the same
    object from turn to turn); a miss (a new conversation, compaction replaced it) just
    encodes everything, as the first turn does.
    """

    def __init__(self, kept: int = CONVERSATIONS_KEPT) -> None:
        self._kept = kept
        self._conversations: OrderedDict[int, _Encoded] = OrderedDict()

    def encode(self, body: dict[str, Any]) -> bytes:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return dumps(body)
        rest = {key: value for key, value in body.items() if key != "messages"}
        parts = self._parts(messages)
        head = b'{"messages":[' + b",".join(parts) + b"]"
        tail = dumps(rest)
        return head + (b"," + tail[1:] if tail != b"{}" else b"}")

    def _parts(self, messages: list[Any]) -> list[bytes]:
        key = id(messages[1]) if len(messages) > 1 else None
        known = self._conversations.get(key) if key is not None else None
        if known is None or not known.messages or known.messages[1] is not messages[1]:
            known = _Encoded()
        # The system prompt is rebuilt at every ask (the instructions, the environment):
        # encoded apart, so a new one does not make the rest count as new.
        old = known.messages
        first = known.parts[0] if old and old[0] is messages[0] else dumps(messages[0])
        same = 1
        for before, now in zip(old[1:], messages[1:], strict=False):
            if before is not now:
                break
            same += 1
        same = min(same, len(old)) if old else 1
        parts = [first, *known.parts[1:same], *(dumps(m) for m in messages[same:])]
        if key is not None:
            known.messages, known.parts = list(messages), parts
            self._conversations[key] = known
            self._conversations.move_to_end(key)
            while len(self._conversations) > self._kept:
                self._conversations.popitem(last=False)
        return parts
