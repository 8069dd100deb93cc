"""A scripted OpenAI-compatible Chat Completions server for tests and benchmarks.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer``, one daemon thread
per connection, Nagle off, HTTP/1.1 keep-alive) that the real ``openai`` SDK talks
to. It serves ``POST /v1/chat/completions`` (and ``/chat/completions``) and
``GET /v1/models`` (the ids in ``models``), and records every chat request in
``.requests`` as ``{"path", "headers", "body"}`` (header names lower-cased), and every
HTTP request, models listings and refused ones included, in ``.http_log`` as
``{"method", "path", "headers"}``. With ``api_key`` set, a request whose
``Authorization`` is not ``Bearer <api_key>`` gets HTTP 401 as OpenAI answers it.

In-process use::

    with ScriptedModel() as model:
        model.reply(tool_calls=[tool_call("read_file", {"path": "a.txt"})])
        model.reply("The file says hello.")
        client = AsyncOpenAI(api_key="test", base_url=model.base_url, max_retries=0)
        ...
        assert model.requests[1]["body"]["messages"][-1]["role"] == "tool"

Replies are consumed in order. When the queue is empty the ``responder`` (a
callable ``request_body -> Reply | None``) answers; with no responder, or when it
returns ``None``, the server answers HTTP 500 "script exhausted" so a test that
makes more requests than it scripted fails loudly. ``latency`` adds a fixed delay
to every reply (``delay`` adds to one); delays never block other requests.

Like real providers, the server checks tool-call pairing (every assistant
``tool_calls`` id answered by a following ``role="tool"`` message, no stray tool
messages) and answers HTTP 400 otherwise (``strict=False`` turns this off). It
also enforces rules of particular providers that an agent must not break, each
on by default and named in :data:`PROVIDER_RULES` (pass ``rules=`` a smaller set,
or ``--no-rule NAME`` on the command line, to switch one off):

- ``assistant-content`` (llama.cpp's server): every assistant message has a string
  ``content``; a missing one is HTTP 500 ``'dict object' has no attribute 'content'``,
  a null one HTTP 500 ``... Input should be a valid string ...``.
- ``no-reasoning-content`` (DeepSeek): a request message carrying
  ``reasoning_content`` is HTTP 400.

Replies can carry ``reasoning_content`` (as DeepSeek's reasoner sends) and any
``finish_reason`` (``"length"``: cut at the token limit). ``models=None`` answers
``GET /v1/models`` with 404, as endpoints that do not list; ``model_listings``
counts the listings asked for.

``context_limit=N`` (``--context-limit N``) makes it a model with a context window
of N tokens by its own count (:func:`prompt_tokens`, the figure its ``usage``
reports): a larger request gets HTTP 400 with OpenAI's ``context_length_exceeded``
body, word for word. ``alternation=True`` (``--alternation``) also refuses what
strict chat templates (Gemma's, Mistral's) refuse: a system message after the
first message, a conversation that does not start with a user message, two user
messages or two assistant messages in a row. Every refused request is in
``.refused`` as ``{"status", "error"}``.

A request with ``"stream": true`` is answered with Server-Sent Events, as OpenAI
streams (chunked transfer encoding, keep-alive): the role and first piece in the
first chunk, ``reasoning_content`` pieces, then ``content`` pieces of
``chunk_size`` characters, then each tool call (id, type and name in its first
fragment, its arguments in ``chunk_size`` pieces, ``index`` = its position), a
chunk with the ``finish_reason``, a usage chunk (``choices: []``) when the request
asks for ``stream_options.include_usage``, and ``data: [DONE]``; ``chunk_delay``
seconds pass between events (a text longer than :data:`MAX_PIECES` pieces goes in
longer ones). A reply can give its own ``chunk_size`` and
``chunk_delay``, its raw ``stream_deltas`` (one chunk each), ``break_after`` (the
connection is dropped after that many events), and a ``body`` is sent as the
stream's events (a list: one each). ``stream`` picks how the server treats
streaming: ``"sse"`` (default), ``"refuse"`` (HTTP 400 naming ``stream``, as some
endpoints do), ``"plain"`` (ignores it: a JSON completion), ``"no-stream-options"``
(HTTP 400 when ``stream_options`` is sent), ``"empty-with-tools"`` (a streamed request
that offers tools gets HTTP 200 and an event stream with no event at all, as
llama-cpp-python's ``chatml-function-calling`` does: "Automatic streaming tool choice
is not supported" is raised inside its generator). Each streamed answer is recorded in
``.streams`` (:class:`StreamRecord`: when each event left, whether the client hung
up before the end), so a test can see a cancelled stream's connection close.

Responders shipped here:

- :class:`ScriptResponder` -- rules from a JSON script (the CLI's ``--script``).
- :func:`instant_responder` -- for loop-overhead benchmarks: while fewer than
  ``tool_turns`` tool results follow the last user message it calls ``tool_name``,
  then it answers ``answer``; stateless, so concurrent conversations are fine.
  With ``tool_turns=1`` it alternates a no-op tool call and a final answer. A
  request that offers no tools is answered ``answer`` at once.

Command line (editor E2E tests, benchmarks)::

    python -m tests.support.model_server --script FILE.json [--port N] [--latency S]
        [--instant [--instant-tool NAME] [--instant-args JSON] [--instant-turns N]]
        [--record FILE.jsonl] [--models ID,ID] [--api-key KEY] [--record-http FILE.jsonl]
        [--context-limit N] [--alternation] [--no-rule NAME ...]
        [--stream MODE] [--chunk-size N] [--chunk-delay S] [--stream-log FILE.jsonl]

prints ``READY http://127.0.0.1:PORT/v1`` as its first stdout line (flushed) and
serves until killed. ``--record`` appends each chat request body as one JSON line,
``--record-http`` each HTTP request's ``{"method", "path", "headers"}``,
``--stream-log`` each streamed answer's :class:`StreamRecord`.
The script is a JSON list of rules (or ``{"rules": [...], "latency": S}``)::

    [
      {"match": "list the files",
       "replies": [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
                   {"content": "There are two files."}]},
      {"match": "^echo:", "echo": true},
      {"match": "*", "replies": [{"content": "fallback", "delay": 0.2}]}
    ]

A rule matches when ``match`` is a substring of the latest *user* message in the
request, or a regular expression ``re.search`` finds in it (``"*"``, ``""`` or no
``match`` matches anything); the first matching rule answers. Follow-up turns of
one ask carry tool messages after that user message, so they reach the same rule.
Each rule has a cursor: its replies are used in order, and once they run out it
answers its last reply's content without tool calls (or ``"(script exhausted)"``).
An ``"echo": true`` rule answers with the user message itself. Reply objects take
``content``, ``tool_calls`` (``{"name", "arguments", "id"?}``; ``"type": "custom"``
makes an unsupported-type call), ``delay``, ``status``, ``error_message``,
``usage``, ``finish_reason``, ``reasoning_content``, ``chunk_size``,
``chunk_delay``. No matching rule and no ``--instant`` -> HTTP 500.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import select
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")
OMIT_USAGE = "omit"  # pass as ``usage`` to send a response without a usage block
EXHAUSTED_TEXT = "(script exhausted)"
ASSISTANT_CONTENT = "assistant-content"
NO_REASONING_CONTENT = "no-reasoning-content"
PROVIDER_RULES = frozenset({ASSISTANT_CONTENT, NO_REASONING_CONTENT})
STREAM_MODES = ("sse", "refuse", "plain", "no-stream-options", "empty-with-tools")
DEFAULT_CHUNK_SIZE = 4  # characters per streamed piece (about a token)
MAX_PIECES = 10_000  # per streamed field; longer texts get longer pieces

ToolCallSpec = tuple[str, str, Mapping[str, Any] | str] | Mapping[str, Any]
Responder = Callable[[dict[str, Any]], "Reply | None"]


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def tool_call(
    name: str, args: Mapping[str, Any] | str | None = None, id: str | None = None
) -> tuple[str, str, Mapping[str, Any] | str]:
    """A ``(id, name, arguments)`` tuple for :meth:`ScriptedModel.reply`.

    A mapping is sent as JSON; a string is sent verbatim (for malformed JSON).
    """
    return (id or new_call_id(), name, {} if args is None else args)


@dataclass
class Reply:
    """One scripted answer. Build with :func:`make_reply` to normalise tool calls."""

    content: str | None = None
    # Normalised: {"id", "type": "function", "function": {"name", "arguments"}} or custom.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error_message: str | None = None
    delay: float = 0.0
    usage: Mapping[str, Any] | str | None = None
    finish_reason: str | None = None
    body: Any = None  # sent verbatim instead of a built completion (dict/list -> JSON)
    reasoning_content: str | None = None  # DeepSeek's reasoner sends its thinking here
    # Streaming (requests with "stream": true); None: the server's setting.
    chunk_size: int | None = None
    chunk_delay: float | None = None
    stream_deltas: list[dict[str, Any]] | None = None  # sent as they are, one chunk each
    break_after: int | None = None  # drop the connection after this many events

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reply:
        """A reply from a script object (``{"content", "tool_calls", "delay", ...}``)."""
        known = {"content", "tool_calls", "status", "error_message", "delay", "usage"}
        known |= {"finish_reason", "body", "error", "reasoning_content"}
        known |= {"chunk_size", "chunk_delay", "stream_deltas", "break_after"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"Unknown reply field(s): {', '.join(sorted(unknown))}")
        return make_reply(
            data.get("content"),
            tool_calls=data.get("tool_calls"),
            status=int(data.get("status", 200)),
            error_message=data.get("error_message", data.get("error")),
            delay=float(data.get("delay", 0.0)),
            usage=data.get("usage"),
            finish_reason=data.get("finish_reason"),
            body=data.get("body"),
            reasoning_content=data.get("reasoning_content"),
            chunk_size=data.get("chunk_size"),
            chunk_delay=data.get("chunk_delay"),
            stream_deltas=data.get("stream_deltas"),
            break_after=data.get("break_after"),
        )


# The answer of an endpoint that streams nothing when offered tools (see ``stream``).
_EMPTY_STREAM = Reply()


def make_reply(
    content: str | None = None,
    *,
    tool_calls: Iterable[ToolCallSpec] | None = None,
    status: int = 200,
    error_message: str | None = None,
    delay: float = 0.0,
    usage: Mapping[str, Any] | str | None = None,
    finish_reason: str | None = None,
    body: Any = None,
    reasoning_content: str | None = None,
    chunk_size: int | None = None,
    chunk_delay: float | None = None,
    stream_deltas: list[dict[str, Any]] | None = None,
    break_after: int | None = None,
) -> Reply:
    return Reply(
        content=content,
        tool_calls=[_normalise_call(spec) for spec in tool_calls or ()],
        status=status,
        error_message=error_message,
        delay=delay,
        usage=usage,
        finish_reason=finish_reason,
        body=body,
        reasoning_content=reasoning_content,
        chunk_size=chunk_size,
        chunk_delay=chunk_delay,
        stream_deltas=stream_deltas,
        break_after=break_after,
    )


def _normalise_call(spec: ToolCallSpec) -> dict[str, Any]:
    if isinstance(spec, tuple):
        call_id, name, args = spec
        kind = "function"
    elif isinstance(spec, Mapping):
        call_id = spec.get("id") or new_call_id()
        name = spec["name"]
        kind = spec.get("type", "function")
        args = spec.get("arguments", spec.get("input", {}))
    else:
        raise TypeError(f"tool call must be a (id, name, args) tuple or a dict, got {spec!r}")
    text = args if isinstance(args, str) else json.dumps(args)
    if kind == "function":
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
    return {"id": call_id, "type": kind, kind: {"name": name, "input": text}}


class ScriptedModel:
    """The server; a context manager (or call :meth:`start` / :meth:`stop`)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        strict: bool = True,
        rules: Iterable[str] = PROVIDER_RULES,
        host: str = "127.0.0.1",
        port: int = 0,
        record: TextIO | None = None,
        models: Iterable[str] | None = ("scripted",),
        models_delay: float = 0.0,
        api_key: str | None = None,
        record_http: TextIO | None = None,
        context_limit: int | None = None,
        alternation: bool = False,
        stream: str = "sse",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        chunk_delay: float = 0.0,
    ) -> None:
        if stream not in STREAM_MODES:
            raise ValueError(f"stream must be one of {', '.join(STREAM_MODES)}, not {stream!r}")
        self.responder = responder
        self.latency = latency
        self.strict = strict
        self.rules = frozenset(rules)
        unknown = self.rules - PROVIDER_RULES
        if unknown:
            raise ValueError(f"Unknown provider rule(s): {', '.join(sorted(unknown))}")
        self.models = None if models is None else list(models)  # None: GET /models is a 404
        self.models_delay = models_delay  # seconds before GET /models answers
        self.api_key = api_key
        self.context_limit = context_limit
        self.alternation = alternation
        self.refused: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.http_log: list[dict[str, Any]] = []
        self._record_http = record_http
        self.stream = stream
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay
        self.streams: list[StreamRecord] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._record = record
        self.stream_log: TextIO | None = None  # one JSON line per finished stream
        self._address = (host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------

    def start(self) -> ScriptedModel:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(self._address, _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-model",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes replies still sleeping on a delay
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedModel is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting -------------------------------------------------------

    def reply(
        self,
        content: str | None = None,
        *,
        tool_calls: Iterable[ToolCallSpec] | None = None,
        status: int = 200,
        error_message: str | None = None,
        delay: float = 0.0,
        usage: Mapping[str, Any] | str | None = None,
        finish_reason: str | None = None,
        body: Any = None,
        reasoning_content: str | None = None,
        chunk_size: int | None = None,
        chunk_delay: float | None = None,
        stream_deltas: list[dict[str, Any]] | None = None,
        break_after: int | None = None,
        times: int = 1,
    ) -> None:
        """Queue the next answer (see :func:`make_reply`; ``usage=OMIT_USAGE`` sends none).

        ``times`` queues it repeatedly, e.g. an error for every retry the SDK makes
        (clients built with the default ``max_retries=2`` send a 5xx/429 request 3 times).
        """
        for _ in range(times):
            self.enqueue(
                make_reply(
                    content,
                    tool_calls=tool_calls,
                    status=status,
                    error_message=error_message,
                    delay=delay,
                    usage=usage,
                    finish_reason=finish_reason,
                    body=body,
                    reasoning_content=reasoning_content,
                    chunk_size=chunk_size,
                    chunk_delay=chunk_delay,
                    stream_deltas=stream_deltas,
                    break_after=break_after,
                )
            )

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    # --- inspection --------------------------------------------------------

    @property
    def model_listings(self) -> int:
        """How many ``GET /models`` requests arrived."""
        with self._lock:
            return sum(
                1 for e in self.http_log if e["method"] == "GET" and e["path"] in MODELS_PATHS
            )

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received so far."""
        with self._lock:
            return [request["body"] for request in self.requests]

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` chat requests have arrived (False on timeout)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate()`` holds, re-checked whenever a request or a
        stream event happens (False on timeout)."""
        with self._arrived:
            return self._arrived.wait_for(predicate, timeout)

    # --- serving (handler threads) -------------------------------------------

    def _admit(self, method: str, path: str, headers: dict[str, str]) -> bool:
        """Log the request; False when ``api_key`` is set and the request lacks it."""
        entry = {"method": method, "path": path, "headers": headers}
        with self._arrived:
            self.http_log.append(entry)
            self._arrived.notify_all()
            if self._record_http is not None:
                self._record_http.write(json.dumps(entry) + "\n")
                self._record_http.flush()
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    def _answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[Reply, float]:
        with self._arrived:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self._arrived.notify_all()
        if self._record is not None:
            with self._lock:
                self._record.write(json.dumps(body) + "\n")
                self._record.flush()

        refusal = _request_problem(body, strict=self.strict, rules=self.rules)
        if refusal is None and self.alternation:
            problem = _alternation_problem(body["messages"])
            refusal = _error_reply(400, problem, "invalid_request_error") if problem else None
        if refusal is None and self.context_limit is not None:
            refusal = _context_refusal(body, self.context_limit)
        if refusal is None and (stream_problem := self._stream_refusal(body)):
            refusal = _error_reply(400, stream_problem, "invalid_request_error")
        if refusal is not None:
            with self._lock:
                self.refused.append({"status": refusal.status, "error": refusal.body["error"]})
            return refusal, 0.0
        if self.stream == "empty-with-tools" and body.get("stream") and body.get("tools"):
            return _EMPTY_STREAM, 0.0  # no reply used: the client asks again plainly
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self.responder is not None:
            try:
                reply = self.responder(body)
            except Exception as exc:  # a broken responder must fail the test loudly
                return _error_reply(500, f"responder raised {exc!r}", "server_error"), 0.0
        if reply is None:
            last = _latest_user_text(body.get("messages", []))
            message = (
                f"script exhausted: no scripted reply left for request #{len(self.requests)} "
                f"(last user message: {last[:200]!r})"
            )
            return _error_reply(500, message, "server_error"), 0.0
        return reply, self.latency + reply.delay

    def _wait(self, delay: float) -> bool:
        """Sleep ``delay`` seconds; False if the server is stopping meanwhile."""
        return delay <= 0 or not self._stopping.wait(delay)

    def _stream_refusal(self, body: dict[str, Any]) -> str | None:
        if not body.get("stream"):
            return None
        if self.stream == "refuse":
            return "stream: streaming is not supported by this endpoint; send stream=false"
        if self.stream == "no-stream-options" and "stream_options" in body:
            return "Unrecognized request argument supplied: stream_options"
        return None

    def streams_sse(self, body: Mapping[str, Any]) -> bool:
        return bool(body.get("stream")) and self.stream != "plain"

    def _stream_started(self, index: int) -> StreamRecord:
        record = StreamRecord(request=index)
        with self._arrived:
            self.streams.append(record)
            self._arrived.notify_all()
        return record

    def _stream_event(self, record: StreamRecord, *, sent: float | None = None) -> None:
        with self._arrived:
            if sent is not None:
                record.sent.append(sent)
            self._arrived.notify_all()

    def _stream_ended(self, record: StreamRecord) -> None:
        self._stream_event(record)
        if self.stream_log is not None:
            with self._lock:
                self.stream_log.write(json.dumps(dataclasses.asdict(record)) + "\n")
                self.stream_log.flush()


def _error_reply(status: int, message: str, kind: str) -> Reply:
    return Reply(status=status, error_message=message, body={"error": _error(message, kind)})


def _error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"message": message, "type": kind, "param": None, "code": code}


def completion_body(reply: Reply, request: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions response the openai SDK parses."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.get("model") or "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if reply.usage != OMIT_USAGE:
        body["usage"] = (
            dict(reply.usage) if isinstance(reply.usage, Mapping) else _usage(reply, request)
        )
    return body


def prompt_tokens(request: Mapping[str, Any]) -> int:
    """A request's size in tokens by this server's count: its messages as JSON, 4
    characters a token (rough and deterministic: enough to sum, compare and limit)."""
    return max(1, len(json.dumps(request.get("messages", []))) // 4)


def _context_refusal(request: Mapping[str, Any], limit: int) -> Reply | None:
    """OpenAI's answer to a request over the context window, or None if it fits."""
    used = prompt_tokens(request)
    if used <= limit:
        return None
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {used} tokens. Please reduce the length of the messages."
    )
    error = {
        "message": message,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    return Reply(status=400, error_message=message, body={"error": error})


def _alternation_problem(messages: list[Any]) -> str | None:
    """What a strict chat template refuses in the order of roles, or None."""
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            if index > 0:
                return f"System message at position {index}: only the first may be one."
        elif role in ("user", "assistant"):
            if previous is None and role != "user":
                return "Conversation must start with a user message (after the system one)."
            if role == previous:
                return (
                    "Conversation roles must alternate user/assistant/user/assistant/... "
                    f"(two {role} messages in a row at position {index})"
                )
        if role != "system":
            previous = role
    return None


def _usage(reply: Reply, request: Mapping[str, Any]) -> dict[str, int]:
    prompt = prompt_tokens(request)
    produced = len(reply.content or "") + sum(len(json.dumps(c)) for c in reply.tool_calls)
    completion = max(1, produced // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@dataclass
class StreamRecord:
    """One streamed answer as the server sent it (times from ``time.monotonic()``)."""

    request: int  # index into ``ScriptedModel.requests``
    sent: list[float] = field(default_factory=list)  # when each event left, [DONE] included
    completed: bool = False  # every event sent
    disconnected: bool = False  # the client closed the connection before the end


def stream_events(reply: Reply, request: Mapping[str, Any], chunk_size: int) -> list[str]:
    """The ``data:`` payloads of a streamed answer, ``[DONE]`` last (see the docstring)."""
    if reply.body is not None:
        items = reply.body if isinstance(reply.body, list) else [reply.body]
        return [item if isinstance(item, str) else json.dumps(item) for item in items]
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": str(request.get("model") or "scripted"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return json.dumps({**base, "choices": [choice]})

    size = max(1, reply.chunk_size or chunk_size)
    deltas = list(reply.stream_deltas) if reply.stream_deltas is not None else []
    if reply.stream_deltas is None:
        for piece in _pieces(reply.reasoning_content, size):
            deltas.append({"content": None, "reasoning_content": piece})
        for piece in _pieces(reply.content, size):
            deltas.append({"content": piece})
        for index, call in enumerate(reply.tool_calls):
            kind = call["type"]
            if kind != "function":
                deltas.append({"tool_calls": [{"index": index, **call}]})
                continue
            head = {"index": index, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            deltas.append({"tool_calls": [head]})
            for piece in _pieces(call["function"]["arguments"], size):
                fragment = {"index": index, "function": {"arguments": piece}}
                deltas.append({"tool_calls": [fragment]})
        # The role comes with the first piece, so the first chunk carries text.
        deltas = [{"role": "assistant", **(deltas[0] if deltas else {"content": ""})}, *deltas[1:]]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    events = [chunk(delta) for delta in deltas]
    events.append(chunk({}, finish))
    options = request.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage") and reply.usage != OMIT_USAGE:
        usage = dict(reply.usage) if isinstance(reply.usage, Mapping) else _usage(reply, request)
        events.append(json.dumps({**base, "choices": [], "usage": usage}))
    return [*events, "[DONE]"]


def _pieces(text: str | None, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters, or larger ones for a long text (at most
    MAX_PIECES pieces: a 40 MB argument is not streamed as ten million chunks)."""
    if not text:
        return []
    size = max(size, -(-len(text) // MAX_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _request_problem(body: Any, *, strict: bool, rules: frozenset[str]) -> Reply | None:
    """The error a real provider would answer this request with, or None."""
    problem = _shape_problem(body)
    if problem is None and strict:
        problem = _pairing_problem(body["messages"])
    if problem is not None:
        return _error_reply(400, problem, "invalid_request_error")
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    if NO_REASONING_CONTENT in rules and any("reasoning_content" in m for m in messages):
        # DeepSeek: the reasoner's thinking must not be sent back.
        return _error_reply(
            400,
            "The reasoning_content is an intermediate result for display purposes only and "
            "will not be included in the context for inference. Please remove the "
            "reasoning_content from your input and try again.",
            "invalid_request_error",
        )
    if ASSISTANT_CONTENT in rules:
        for index, message in enumerate(body["messages"]):
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            # llama-cpp-python's server (0.3.36), word for word: a null content fails its
            # request validation, a missing one its chat template (StrictUndefined).
            if "content" not in message:
                text = "'dict object' has no attribute 'content'"
            elif not isinstance(message["content"], str):
                text = (
                    "1 validation error:\n  {'type': 'string_type', 'loc': ('body', 'messages', "
                    f"{index}, 'ChatCompletionRequestAssistantMessage', 'content'), "
                    f"'msg': 'Input should be a valid string', 'input': {message['content']!r}}}"
                )
            else:
                continue
            return _error_reply(500, text, "internal_server_error")
    return None


def _shape_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    if not body.get("model"):
        return "'model' is required"
    if "tools" in body and not body["tools"]:
        return "'tools' must not be empty when present"
    return None


def _pairing_problem(messages: list[Any]) -> str | None:
    waiting: list[str] = []  # tool_call ids of the last assistant message not yet answered
    answerable: set[str] = set()
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (tool_call_id {call_id!r})."
                )
            if call_id in waiting:
                waiting.remove(call_id)
            continue
        if waiting:
            return _unanswered(waiting)
        answerable = set()
        if role == "assistant" and message.get("tool_calls"):
            waiting = [call.get("id") for call in message["tool_calls"]]
            answerable = set(waiting)
    if waiting:
        return _unanswered(waiting)
    return None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{', '.join(map(str, ids))}"
    )


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return ""


def _latest_user_text(messages: Iterable[Any]) -> str:
    for message in reversed(list(messages)):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _message_text(message)
    return ""


def _tool_results_since_user(messages: list[Any]) -> int:
    count = 0
    for message in reversed(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role == "user":
            break
        if role == "tool":
            count += 1
    return count


def _tool_turns_since_user(messages: list[Any]) -> int:
    """Tool turns after the last user message: the number in the last call's id
    (``instant_responder`` numbers them), else the tool results counted."""
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("role") == "user":
            break
        calls = message.get("tool_calls") or ()
        if message.get("role") == "assistant" and calls:
            number = str(calls[-1].get("id", "")).rpartition("_t")[2]
            if number.isdigit():
                return int(number)
            break
    return _tool_results_since_user(messages)


# --- responders -----------------------------------------------------------------


def instant_responder(
    tool_name: str = "noop",
    arguments: Mapping[str, Any] | str | None = None,
    *,
    tool_turns: int = 1,
    answer: str = "done",
) -> Responder:
    """Call ``tool_name`` until ``tool_turns`` tool results follow the user message, then answer.

    The calls it makes are numbered in their ids (``call_<hex>_t<n>``), so the count
    survives a client that compacts its history (drops or summarizes earlier turns).
    """

    def respond(body: dict[str, Any]) -> Reply:
        # A request offering no tools (a summary request) gets text: nothing to call.
        done = _tool_turns_since_user(body.get("messages", []))
        if body.get("tools") and done < tool_turns:
            call_id = f"{new_call_id()}_t{done + 1}"
            return make_reply(tool_calls=[tool_call(tool_name, arguments, id=call_id)])
        return make_reply(answer)

    return respond


@dataclass
class _Rule:
    match: str
    pattern: re.Pattern[str] | None
    replies: list[Reply]
    echo: bool
    cursor: int = 0

    def matches(self, text: str) -> bool:
        if self.match in ("", "*") or self.match in text:
            return True
        return self.pattern is not None and self.pattern.search(text) is not None


class ScriptResponder:
    """Answers from script rules (see the module docstring); None when no rule matches."""

    def __init__(self, rules: Iterable[Mapping[str, Any]], *, fallback: Responder | None = None):
        self._rules = [self._rule(rule) for rule in rules]
        self._fallback = fallback
        self._lock = threading.Lock()

    @staticmethod
    def _rule(data: Mapping[str, Any]) -> _Rule:
        unknown = set(data) - {"match", "replies", "echo"}
        if unknown:
            raise ValueError(f"Unknown rule field(s): {', '.join(sorted(unknown))}")
        match = str(data.get("match") or "")
        try:
            pattern = re.compile(match) if match else None
        except re.error:
            pattern = None  # not a regex: substring matching only
        replies = [Reply.from_dict(reply) for reply in data.get("replies", [])]
        return _Rule(match, pattern, replies, bool(data.get("echo", False)))

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        text = _latest_user_text(body.get("messages", []))
        rule = next((rule for rule in self._rules if rule.matches(text)), None)
        if rule is None:
            return self._fallback(body) if self._fallback is not None else None
        if rule.echo:
            return make_reply(text)
        with self._lock:
            if rule.cursor < len(rule.replies):
                rule.cursor += 1
                return rule.replies[rule.cursor - 1]
        last = rule.replies[-1].content if rule.replies else None
        return make_reply(last or EXHAUSTED_TEXT)


def load_script(path: Path) -> tuple[list[dict[str, Any]], float]:
    """(rules, latency) from a script file: a list of rules or {"rules", "latency"}."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return data, 0.0
    if isinstance(data, dict) and isinstance(data.get("rules"), list):
        return data["rules"], float(data.get("latency", 0.0))
    raise ValueError(f"{path}: expected a list of rules or an object with 'rules'")


# --- HTTP plumbing --------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a reply sleeping on its delay never blocks shutdown
    request_queue_size = 128
    owner: ScriptedModel

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (timeouts, cancelled requests) are expected here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as with a real provider
    disable_nagle_algorithm = True  # else ~40 ms per response (Nagle + delayed ACK)
    server: _Server

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        model = self.server.owner
        headers = {name.lower(): value for name, value in self.headers.items()}
        if not model._admit("POST", path, headers):
            self._refuse_key()
            return
        if path not in CHAT_PATHS:
            self._send(404, {"error": _error(f"Unknown path {path}", "invalid_request_error")})
            return
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError as exc:
            self._send(400, {"error": _error(f"Invalid JSON body: {exc}", "invalid_request_error")})
            return
        reply, delay = model._answer(path, headers, body)
        if not model._wait(delay):
            self.close_connection = True
            return
        if reply.status < 400 and model.streams_sse(body):
            self._stream(model, reply, body)
        elif reply.body is not None:
            self._send(reply.status, reply.body)
        elif reply.status >= 400:
            message = reply.error_message or f"Scripted error {reply.status}"
            kind = "rate_limit_error" if reply.status == 429 else "server_error"
            if 400 <= reply.status < 500 and reply.status != 429:
                kind = "invalid_request_error"
            self._send(reply.status, {"error": _error(message, kind)})
        else:
            self._send(reply.status, completion_body(reply, body))

    def _stream(self, model: ScriptedModel, reply: Reply, body: dict[str, Any]) -> None:
        """Send ``reply`` as Server-Sent Events, one HTTP chunk per event."""
        record = model._stream_started(len(model.requests) - 1)
        events = stream_events(reply, body, model.chunk_size)
        head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n"
            "\r\n"
        ).encode("latin-1")
        if reply is _EMPTY_STREAM:  # the head and the body's end, no event between
            self.wfile.write(head + b"0\r\n\r\n")
            self.wfile.flush()
            model._stream_ended(record)
            return
        delay = model.chunk_delay if reply.chunk_delay is None else reply.chunk_delay
        started = time.monotonic()
        try:
            for index, event in enumerate(events):
                # Paced from the start (not after each write), so N events take N * delay.
                if index and not self._pause(model, started + index * delay):
                    record.disconnected = not model._stopping.is_set()
                    self.close_connection = True
                    return
                if reply.break_after is not None and index >= reply.break_after:
                    self.close_connection = True  # dropped mid-stream, as a crashed server
                    return
                data = f"data: {event}\n\n".encode()
                frame = f"{len(data):x}\r\n".encode() + data + b"\r\n"
                if index == len(events) - 1:
                    frame += b"0\r\n\r\n"  # the body ends with [DONE]: nothing to drain
                self.wfile.write((head if index == 0 else b"") + frame)
                self.wfile.flush()
                model._stream_event(record, sent=time.monotonic())
            record.completed = True
        except OSError:  # broken pipe, reset: the client went away
            record.disconnected = True
            self.close_connection = True
        finally:
            model._stream_ended(record)

    def _pause(self, model: ScriptedModel, deadline: float) -> bool:
        """Wait until ``deadline``; False once the client has hung up (seen at once: a
        closed socket turns readable) or the server is stopping."""
        while not model._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            readable, _, _ = select.select([self.connection], [], [], min(remaining, 0.05))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
        return False

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        owner = self.server.owner
        if not owner._admit("GET", path, {k.lower(): v for k, v in self.headers.items()}):
            self._refuse_key()
        elif path in MODELS_PATHS and owner.models is not None:
            if not owner._wait(owner.models_delay):
                self.close_connection = True
                return
            models = [
                {"id": name, "object": "model", "created": 0, "owned_by": "tests"}
                for name in owner.models
            ]
            self._send(200, {"object": "list", "data": models})
        else:
            self._send(404, {"error": _error(f"Unknown path {path}", "invalid_request_error")})

    def _refuse_key(self) -> None:
        # As OpenAI answers a wrong key (its message shows a masked key; ours none).
        error = _error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        self._send(401, {"error": error})

    def _send(self, status: int, payload: Any) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        head = (
            f"HTTP/1.1 {status} {self.responses.get(status, ('Scripted',))[0]}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n"
            "\r\n"
        )
        # One write: headers and body leave in a single segment.
        self.wfile.write(head.encode("latin-1") + data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # stdout/stderr stay quiet; inspect ``.requests`` instead


# --- command line ----------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.model_server",
        description="Scripted OpenAI-compatible Chat Completions server.",
    )
    parser.add_argument("--script", type=Path, help="JSON rules (see the module docstring)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--latency", type=float, default=None, help="seconds added to every reply")
    parser.add_argument(
        "--instant",
        action="store_true",
        help="answer unmatched requests with "
        "a tool call then a final answer (loop-overhead benchmarks)",
    )
    parser.add_argument("--instant-tool", default="noop", help="tool the --instant mode calls")
    parser.add_argument("--instant-args", default="{}", help="JSON arguments for that tool")
    parser.add_argument("--instant-turns", type=int, default=1, help="tool turns per ask")
    parser.add_argument("--record", type=Path, help="append each request body as a JSON line")
    parser.add_argument("--models", default="scripted", help="ids GET /models lists (a,b,c)")
    parser.add_argument("--api-key", help="answer 401 unless Authorization is Bearer KEY")
    parser.add_argument(
        "--record-http", type=Path, help="append each HTTP request's method, path and headers"
    )
    parser.add_argument(
        "--context-limit", type=int, help="refuse requests over N tokens as OpenAI does"
    )
    parser.add_argument(
        "--alternation", action="store_true", help="refuse what strict chat templates refuse"
    )
    parser.add_argument(
        "--no-rule",
        action="append",
        default=[],
        choices=sorted(PROVIDER_RULES),
        help="switch off a provider rule (see the module docstring); repeatable",
    )
    parser.add_argument(
        "--stream",
        choices=STREAM_MODES,
        default="sse",
        help="how requests with stream: true are answered (default: sse)",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=DEFAULT_CHUNK_SIZE,
        help="characters per streamed piece",
    )
    parser.add_argument(
        "--chunk-delay", type=float, default=0.0, help="seconds between streamed events"
    )
    parser.add_argument(
        "--stream-log",
        type=Path,
        help="append each streamed answer's record (send times, monotonic clock) as a JSON line",
    )
    options = parser.parse_args(argv)
    if options.script is None and not options.instant:
        parser.error("give --script FILE.json and/or --instant")

    fallback = None
    if options.instant:
        fallback = instant_responder(
            options.instant_tool,
            json.loads(options.instant_args),
            tool_turns=options.instant_turns,
        )
    latency = 0.0
    responder: Responder | None = fallback
    if options.script is not None:
        rules, latency = load_script(options.script)
        responder = ScriptResponder(rules, fallback=fallback)
    if options.latency is not None:
        latency = options.latency

    record = options.record.open("a", encoding="utf-8") if options.record else None
    record_http = options.record_http.open("a", encoding="utf-8") if options.record_http else None
    model = ScriptedModel(
        responder,
        latency=latency,
        rules=PROVIDER_RULES - set(options.no_rule),
        port=options.port,
        record=record,
        models=[name for name in options.models.split(",") if name],
        api_key=options.api_key,
        record_http=record_http,
        context_limit=options.context_limit,
        alternation=options.alternation,
        stream=options.stream,
        chunk_size=options.chunk_size,
        chunk_delay=options.chunk_delay,
    )
    stream_log = options.stream_log.open("a", encoding="utf-8") if options.stream_log else None
    model.stream_log = stream_log
    model.start()
    print(f"READY {model.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
        for log_file in (record, record_http, stream_log):
            if log_file is not None:
                log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
