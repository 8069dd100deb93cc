"""A pass-through HTTP proxy that sets sampling fields and records what passed.

The llama.cpp compatibility test puts it between agent-lsp and the real server:
agent-lsp sends no ``temperature`` (the server then samples at 0.8, and a 270M
model sometimes rambles inside a tool call's arguments until its context is
full); the proxy adds ``"temperature": 0`` to each chat request, so the model's
choices are the same every run. Nothing else is changed: the messages reach the
server exactly as agent-lsp sent them, and ``requests`` keeps each request body
and the upstream's status for the test to read.

An answer the upstream breaks off (its chunked body ends without the last chunk) is
relayed broken in the same way, recorded with the status ``"broken"``: the client sees
what it would have seen without the proxy.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

UPSTREAM_TIMEOUT = 900.0


class SamplingProxy:
    """``with SamplingProxy(upstream, {"temperature": 0}) as proxy: proxy.base_url``."""

    def __init__(self, upstream: str, fields: Mapping[str, Any]) -> None:
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:PORT/v1
        self.fields = dict(fields)
        self.requests: list[dict[str, Any]] = []  # {"path", "body", "status"}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> SamplingProxy:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.proxy = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(target=server.serve_forever, name="sampling-proxy", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def forward(self, method: str, path: str, body: bytes | None) -> tuple[int, str, bytes, bool]:
        """The upstream's status, content type (an SSE stream stays one, relayed whole),
        body, and whether that body broke off before its end."""
        record: dict[str, Any] | None = None
        if body is not None:
            payload = json.loads(body)
            if path.endswith("/chat/completions") and isinstance(payload, dict):
                payload.update(self.fields)
                record = {"path": path, "body": payload, "status": None}
                with self._lock:
                    self.requests.append(record)
            body = json.dumps(payload).encode()
        upstream_path = path.removeprefix("/v1")
        request = urllib.request.Request(
            f"{self.upstream}{upstream_path}",
            data=body,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        broken = False
        try:
            with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT) as response:
                status = response.status
                kind = response.headers.get("Content-Type", "application/json")
                try:
                    data = response.read()
                except http.client.IncompleteRead as cut:
                    data, broken = cut.partial, True
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
            kind = error.headers.get("Content-Type", "application/json")
        if record is not None:
            record["status"] = "broken" if broken else status
        return status, kind, data, broken


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._relay("GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._relay("POST", self.rfile.read(length))

    def _relay(self, method: str, body: bytes | None) -> None:
        proxy: SamplingProxy = self.server.proxy  # type: ignore[attr-defined]
        broken = False
        try:
            status, kind, data, broken = proxy.forward(method, self.path, body)
        except OSError as error:  # the upstream is gone: say so as a gateway would
            status, kind = 502, "application/json"
            data = json.dumps({"error": {"message": str(error)}}).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            if broken:  # as the upstream did: chunked, and the connection closed mid-body
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.close_connection = True
                return
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except ConnectionError:
            pass  # the client gave up waiting (its timeout); nothing left to tell it

    def log_message(self, format: str, *args: Any) -> None:
        pass
