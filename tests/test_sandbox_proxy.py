"""The per-call domain proxy and its in-sandbox bridge, over real sockets on loopback.

Every request goes the way a sandboxed command's would: a real client (curl, urllib, a
raw socket) -> the bridge (a real subprocess, loaded by file path under ``python -I -S``
as the launcher loads it) on 127.0.0.1 -> the proxy's unix socket -> a real server.
The grant in most tests is ``localhost``: the name reaches the servers, the address
``127.0.0.1`` of the same servers is refused, and the server then sees no connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.net import pending_connections
from tests.support.procs import until
from tools.sandbox import bridge as sandbox_bridge
from tools.sandbox.proxy import (
    INTERNAL_NOTE,
    DomainProxy,
    host_matches,
    proxy_environment,
    valid_domain_pattern,
)

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")
WITHIN = 10.0  # seconds: a bound on each exchange, never a wait

BRIDGE_MAIN = """
import importlib.util, socket, sys
spec = importlib.util.spec_from_file_location("sandbox_bridge", sys.argv[1])
bridge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bridge)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(16)
print(listener.getsockname()[1], flush=True)
bridge.serve(listener, sys.argv[2])
"""


# -- servers ---------------------------------------------------------------------------


@dataclass
class Web:
    """An HTTP server on 127.0.0.1 that records each request's path and headers."""

    port: int
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def web() -> Iterator[Web]:
    record = Web(0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            record.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            body = f"hello {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield record
    server.shutdown()
    server.server_close()


@dataclass
class Echo:
    """A TCP echo server: echoes as data arrives, closes at end of stream."""

    port: int
    accepted: int = 0
    closed: int = 0


@pytest.fixture
async def echo() -> AsyncIterator[Echo]:
    record = Echo(0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record.accepted += 1
        try:
            while data := await reader.read(4096):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            record.closed += 1

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    record.port = server.sockets[0].getsockname()[1]
    yield record
    server.close()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections (bound, never listening)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def proxy_socket(tmp_path: Path) -> Path:
    return tmp_path / "proxy.sock"


@pytest.fixture
def bridge(proxy_socket: Path) -> Iterator[int]:
    """The bridge in its own process; its TCP port on 127.0.0.1."""
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", BRIDGE_MAIN, sandbox_bridge.__file__, str(proxy_socket)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield port
    assert process.poll() is None, "the bridge exited"
    process.kill()
    process.wait()


# -- clients ---------------------------------------------------------------------------


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` to 127.0.0.1:``port``, read everything until the other side closes."""
    async with asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(data)
        answer = await reader.read()
        writer.close()
        return answer


async def connect_tunnel(
    port: int, target: str
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    """``CONNECT target`` through the bridge: the proxy's reply head, and the stream."""
    async with asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        return head, reader, writer


def socks_request(host: str, port: int, command: int = 1) -> bytes:
    name = host.encode()
    return bytes([5, command, 0, 3, len(name)]) + name + port.to_bytes(2, "big")


async def socks(port: int, greeting: bytes, request: bytes = b"") -> bytes:
    """A SOCKS5 handshake through the bridge; the bytes the proxy answered."""
    async with asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(greeting)
        answer = await reader.readexactly(2)
        if answer == b"\x05\x00" and request:
            writer.write(request)
            answer += await reader.readexactly(10)
        writer.close()
        return answer


async def curl(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    assert CURL is not None
    process = await asyncio.create_subprocess_exec(
        CURL,
        "-sS",
        "--max-time",
        str(WITHIN),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=env,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def curl_env(**extra: str) -> dict[str, str]:
    """The test's environment without any proxy variable of its own."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return env | extra


# -- patterns --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "pattern", "expected"),
    [
        ("pypi.org", "pypi.org", True),
        ("PyPI.org.", "pypi.org", True),
        ("pypi.org", "PYPI.ORG.", True),
        ("files.pypi.org", "pypi.org", False),
        ("api.example.com", "*.example.com", True),
        ("a.b.example.com", "*.example.com", True),
        ("example.com", "*.example.com", False),
        ("badexample.com", "*.example.com", False),
        ("evil\x00.example.com", "*.example.com", False),
        ("evil/.example.com", "*.example.com", False),
        ("localhost", "localhost", True),
        ("127.0.0.1", "localhost", False),
        ("::1", "localhost", False),
        ("localhost", "127.0.0.1", False),
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.2", "127.0.0.1", False),
        ("127.1", "127.0.0.1", False),
        ("[::1]", "::1", True),
        ("0:0::1", "[::1]", True),
    ],
)
def test_host_matches(host: str, pattern: str, expected: bool) -> None:
    assert host_matches(host, pattern) is expected


@pytest.mark.parametrize(
    "pattern",
    ["pypi.org", "*.example.com", "localhost", "127.0.0.1", "::1", "[::1]", "PyPI.org.", "a_b.io"],
)
def test_valid_patterns(pattern: str) -> None:
    assert valid_domain_pattern(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("", "empty"),
        ("*", "first label"),
        ("*.com", "top-level domain"),
        ("foo.*.com", "first label"),
        ("https://pypi.org", "not a URL"),
        ("pypi.org/simple", "not a URL"),
        ("pypi.org:443", "port"),
        ("127.1", "non-standard form"),
        ("0x7f000001", "non-standard form"),
        ("bücher.de", "ASCII"),
        ("a..b", "no host name"),
        ("-a.com", "no host name"),
        ("pypi org", "no host name"),
    ],
)
def test_invalid_patterns_say_why(pattern: str, reason: str) -> None:
    problem = valid_domain_pattern(pattern)
    assert problem is not None and reason in problem


def test_the_proxy_takes_no_invalid_pattern(proxy_socket: Path) -> None:
    with pytest.raises(ValueError, match=r"\*\.com"):
        DomainProxy(proxy_socket, ["pypi.org", "*.com"])


def test_proxy_environment_leaves_nothing_to_bypass_it() -> None:
    env = proxy_environment(4000)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy"):
        assert env[name] == "http://127.0.0.1:4000"
    assert env["ALL_PROXY"] == env["all_proxy"] == "socks5h://127.0.0.1:4000"
    assert env["NO_PROXY"] == env["no_proxy"] == ""
    assert proxy_environment()["https_proxy"] == "http://127.0.0.1:3128"


# -- HTTP: absolute-form and CONNECT ---------------------------------------------------


@needs_curl
async def test_curl_reaches_a_granted_name_through_the_environment(
    proxy_socket: Path, bridge: int, web: Web
) -> None:
    env = curl_env(**proxy_environment(bridge))
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        code, out, err = await curl(f"http://localhost:{web.port}/hello", env=env)
    assert (code, out) == (0, "hello /hello"), err
    assert [path for path, _ in web.requests] == ["/hello"]
    assert proxy.refused == []


@needs_curl
async def test_curl_is_refused_the_address_of_a_granted_name(
    proxy_socket: Path, bridge: int, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    env = curl_env(**proxy_environment(bridge))
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        code, out, err = await curl("-w", "\n%{http_code}", f"http://127.0.0.1:{port}/", env=env)
    assert code == 0, err
    body, status = out.rsplit("\n", 1)
    assert status == "403"
    assert f"127.0.0.1:{port} is not in the allowed domains" in body
    assert proxy.refused == [f"127.0.0.1:{port}"]
    assert pending_connections(listener) == 0


@needs_curl
async def test_curl_through_socks5h(
    proxy_socket: Path, bridge: int, web: Web, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    via = ["--proxy", f"socks5h://127.0.0.1:{bridge}"]
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        granted = await curl(*via, f"http://localhost:{web.port}/socks", env=curl_env())
        refused = await curl(*via, f"http://127.0.0.1:{port}/", env=curl_env())
    assert granted[:2] == (0, "hello /socks"), granted[2]
    assert refused[0] != 0
    assert proxy.refused == [f"127.0.0.1:{port}"]
    assert pending_connections(listener) == 0


async def test_urllib_with_a_proxy_handler(
    proxy_socket: Path, bridge: int, web: Web, listener: socket.socket
) -> None:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{bridge}"})
    )

    def fetch(url: str) -> tuple[int, str]:
        try:
            with opener.open(url, timeout=WITHIN) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    port = listener.getsockname()[1]
    async with DomainProxy(proxy_socket, ["localhost"]):
        granted = await asyncio.to_thread(fetch, f"http://localhost:{web.port}/u?q=1")
        refused = await asyncio.to_thread(fetch, f"http://127.0.0.1:{port}/")
    assert granted == (200, "hello /u?q=1")
    assert refused[0] == 403 and "not in the allowed domains" in refused[1]
    assert pending_connections(listener) == 0


async def test_an_absolute_form_request_is_forwarded_in_origin_form(
    proxy_socket: Path, bridge: int, web: Web
) -> None:
    request = (
        f"GET http://localhost:{web.port}/x?y=1 HTTP/1.1\r\n"
        "Host: somewhere.else\r\nProxy-Authorization: Basic c2VjcmV0\r\n"
        "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nX-Kept: yes\r\n\r\n"
    )
    async with DomainProxy(proxy_socket, ["localhost"]):
        answer = await exchange(bridge, request.encode())  # ends: the upstream closed
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"hello /x?y=1")
    [(path, headers)] = web.requests
    assert path == "/x?y=1"
    assert headers["host"] == f"localhost:{web.port}"
    assert headers["connection"] == "close"
    assert headers["x-kept"] == "yes"
    assert not [name for name in headers if name.startswith("proxy-")]


async def test_a_connect_tunnel_is_a_raw_pipe_with_half_close(
    proxy_socket: Path, bridge: int, echo: Echo
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]):
        head, reader, writer = await connect_tunnel(bridge, f"localhost:{echo.port}")
        assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
        writer.write(b"ping")
        writer.write_eof()  # the echo server closes only once it sees the end of stream
        async with asyncio.timeout(WITHIN):
            assert await reader.read() == b"ping"
        writer.close()
    assert echo.accepted == 1


async def test_tunnels_carry_megabytes_and_run_side_by_side(
    proxy_socket: Path, bridge: int, echo: Echo
) -> None:
    """Enough to fill every socket buffer on the way (partial writes, back-pressure)."""
    payloads = [bytes([index]) * 3_000_000 for index in range(4)]

    async def round_trip(payload: bytes) -> bytes:
        head, reader, writer = await connect_tunnel(bridge, f"localhost:{echo.port}")
        assert head.startswith(b"HTTP/1.1 200")

        async def send() -> None:
            writer.write(payload)
            await writer.drain()
            writer.write_eof()

        async with asyncio.timeout(WITHIN):
            _, echoed = await asyncio.gather(send(), reader.read())
        writer.close()
        return echoed

    async with DomainProxy(proxy_socket, ["localhost"]):
        echoed = await asyncio.gather(*(round_trip(payload) for payload in payloads))
    assert echoed == payloads
    assert echo.accepted == len(payloads)


async def test_a_refused_connect_names_the_host_and_connects_nowhere(
    proxy_socket: Path, bridge: int, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        for target in (f"127.0.0.1:{port}", f"127.0.0.1:{port}", "pypi.org:443"):
            answer = await exchange(bridge, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
            status, _, body = answer.partition(b"\r\n")
            assert status.startswith(b"HTTP/1.1 403 Forbidden: ")
            assert f"{target} is not in the allowed domains".encode() in status
            assert body.endswith(
                f"{target} is not in the allowed domains of this sandbox\n".encode()
            )
    assert proxy.refused == [f"127.0.0.1:{port}", "pypi.org:443"]  # each once, in order
    assert pending_connections(listener) == 0


def loopback_name() -> str | None:
    """A name other than ``localhost`` that this machine resolves to loopback only (its
    host name, through /etc/hosts, on most systems), or None."""
    name = socket.gethostname().lower()
    try:
        infos = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
    except OSError:
        return None
    addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    if name == "localhost" or not addresses or not all(a.is_loopback for a in addresses):
        return None
    return name


async def test_a_granted_name_that_resolves_to_loopback_is_refused(
    proxy_socket: Path, bridge: int, listener: socket.socket
) -> None:
    """DNS rebinding (issue 33): the real resolver, a real name resolving to 127.0.0.x."""
    name = loopback_name()
    if name is None:
        pytest.skip("this machine's host name does not resolve to loopback only")
    port = listener.getsockname()[1]
    async with DomainProxy(proxy_socket, [name]) as proxy:
        answer = await exchange(bridge, f"CONNECT {name}:{port} HTTP/1.1\r\n\r\n".encode())
        reply = await socks(bridge, b"\x05\x01\x00", socks_request(name, port))
    status = answer.partition(b"\r\n")[0].decode()
    assert status.startswith("HTTP/1.1 403 Forbidden: "), status
    assert f"{name} resolves to internal addresses only (127." in status
    assert "grant the address itself" in status
    assert reply == b"\x05\x00" + bytes([5, 2, 0, 1, 0, 0, 0, 0, 0, 0])
    assert proxy.refused == [f"{name}:{port} ({INTERNAL_NOTE})"]
    assert pending_connections(listener) == 0


def resolver(table: dict[str, list[str]]) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fd00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
    ],
)
async def test_every_kind_of_internal_address_is_refused_to_a_name(
    proxy_socket: Path, bridge: int, address: str
) -> None:
    table = {"rebind.example": [address]}
    async with DomainProxy(proxy_socket, ["rebind.example"], resolve=resolver(table)) as proxy:
        answer = await exchange(bridge, b"CONNECT rebind.example:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden: rebind.example resolves to internal")
    assert proxy.refused == [f"rebind.example:443 ({INTERNAL_NOTE})"]


async def test_an_internal_address_the_grant_names_itself_is_reached(
    proxy_socket: Path, bridge: int, echo: Echo
) -> None:
    """A name resolving to loopback, granted with that address: connected (to the address
    the grant names, never to another internal one)."""
    table = {"intranet.example": ["10.9.9.9", "127.0.0.1"]}
    granted = ["intranet.example", "127.0.0.1"]
    async with DomainProxy(proxy_socket, granted, resolve=resolver(table)) as proxy:
        head, reader, writer = await connect_tunnel(bridge, f"intranet.example:{echo.port}")
        writer.write(b"ping")
        await writer.drain()
        got = await asyncio.wait_for(reader.readexactly(4), WITHIN)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200")
    assert got == b"ping"
    assert proxy.refused == []


async def test_wildcards_grant_subdomains_only(proxy_socket: Path, bridge: int) -> None:
    async with DomainProxy(proxy_socket, ["*.example.com"]) as proxy:
        assert proxy.allows("api.example.com") and proxy.allows("A.B.Example.COM.")
        assert not proxy.allows("example.com")
        # Refused before any name lookup: no query leaves this machine.
        answer = await exchange(bridge, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
        reply = await socks(bridge, b"\x05\x01\x00", socks_request("notexample.com", 80))
    assert answer.startswith(b"HTTP/1.1 403")
    assert reply == b"\x05\x00" + bytes([5, 2, 0, 1, 0, 0, 0, 0, 0, 0])
    assert proxy.refused == ["example.com:443", "notexample.com:80"]


async def test_an_unreachable_granted_host_gets_502(
    proxy_socket: Path, bridge: int, closed_port: int
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        answer = await exchange(
            bridge, f"CONNECT localhost:{closed_port} HTTP/1.1\r\n\r\n".encode()
        )
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway")
    assert f"localhost:{closed_port}".encode() in answer
    assert proxy.refused == []


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",  # origin-form: we are no web server
        b"hello\r\n\r\n",
        b"GET http://localhost/ HTTP/2\r\n\r\n",
        b"GET https://localhost/ HTTP/1.1\r\n\r\n",  # https goes through CONNECT
        b"GET http://user@localhost/ HTTP/1.1\r\n\r\n",
        b"GET http://local\x01host/ HTTP/1.1\r\n\r\n",
        b"GET http://localhost:99999/ HTTP/1.1\r\n\r\n",
        b"GET http://localhost/ HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET http://localhost/ HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n",  # a bare LF
        b"CONNECT localhost HTTP/1.1\r\n\r\n",
        b"CONNECT localhost:0 HTTP/1.1\r\n\r\n",
        b"CONNECT ::1:443 HTTP/1.1\r\n\r\n",
    ],
)
async def test_malformed_requests_get_400(
    proxy_socket: Path, bridge: int, web: Web, head: bytes
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        answer = await exchange(bridge, head)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request"), answer
    assert web.requests == [] and proxy.refused == []


async def test_a_head_over_the_bound_gets_431(proxy_socket: Path, bridge: int) -> None:
    head = b"GET http://localhost/ HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 70_000 + b"\r\n\r\n"
    async with DomainProxy(proxy_socket, ["localhost"]):
        answer = await exchange(bridge, head)
    assert answer.startswith(b"HTTP/1.1 431")


async def test_a_client_that_never_finishes_its_head_is_dropped(
    proxy_socket: Path, bridge: int
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"], head_timeout=0.3):
        answer = await exchange(bridge, b"GET http://localhost/ HTTP/1.1\r\nX-Slow:")
    assert answer == b""


# -- SOCKS5 ----------------------------------------------------------------------------


async def test_socks_connect_to_a_granted_name(proxy_socket: Path, bridge: int, echo: Echo) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]), asyncio.timeout(WITHIN):
        reader, writer = await asyncio.open_connection("127.0.0.1", bridge)
        writer.write(b"\x05\x02\x02\x00" + socks_request("localhost", echo.port))
        assert await reader.readexactly(12) == b"\x05\x00" + bytes([5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        writer.write(b"over socks")
        writer.write_eof()
        assert await reader.read() == b"over socks"
        writer.close()


async def test_socks_ipv4_address_of_a_granted_name_is_refused(
    proxy_socket: Path, bridge: int, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    request = bytes([5, 1, 0, 1, 127, 0, 0, 1]) + port.to_bytes(2, "big")
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        reply = await socks(bridge, b"\x05\x01\x00", request)
    assert reply[2:4] == bytes([5, 2])  # connection not allowed by ruleset
    assert proxy.refused == [f"127.0.0.1:{port}"]
    assert pending_connections(listener) == 0


@pytest.mark.parametrize(
    ("greeting", "request_", "expected"),
    [
        (b"\x05\x01\x02", b"", b"\x05\xff"),  # username/password only: no acceptable method
        (b"\x05\x01\x00", socks_request("localhost", 80, command=2), b"\x05\x00\x05\x07"),  # BIND
        (b"\x05\x01\x00", bytes([5, 1, 0, 9, 0, 80]), b"\x05\x00\x05\x08"),  # no such ATYP
        (b"\x05\x01\x00", socks_request("bad host", 80), b"\x05\x00\x05\x01"),
    ],
)
async def test_socks_errors(
    proxy_socket: Path, bridge: int, greeting: bytes, request_: bytes, expected: bytes
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]) as proxy:
        reply = await socks(bridge, greeting, request_)
    assert reply[: len(expected)] == expected
    assert proxy.refused == []


async def test_socks_upstream_refused(proxy_socket: Path, bridge: int, closed_port: int) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]):
        reply = await socks(bridge, b"\x05\x01\x00", socks_request("localhost", closed_port))
    assert reply[2:4] == bytes([5, 5])


# -- lifetime --------------------------------------------------------------------------


async def test_leaving_closes_open_tunnels_and_removes_the_socket(
    proxy_socket: Path, bridge: int, echo: Echo, caplog: pytest.LogCaptureFixture
) -> None:
    async with DomainProxy(proxy_socket, ["localhost"]):
        assert stat.S_IMODE(proxy_socket.stat().st_mode) == 0o600
        _, reader, writer = await connect_tunnel(bridge, f"localhost:{echo.port}")
        writer.write(b"still open")
        async with asyncio.timeout(WITHIN):
            assert await reader.readexactly(10) == b"still open"
    assert not proxy_socket.exists()
    async with asyncio.timeout(WITHIN):
        assert await reader.read() == b""  # the client's tunnel ended
    await until(lambda: echo.closed == 1)  # and so did the upstream connection
    writer.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_the_bridge_outlives_a_failed_connection(
    proxy_socket: Path, bridge: int, web: Web
) -> None:
    # No proxy yet: the bridge cannot reach the socket and closes that one connection.
    assert await exchange(bridge, b"") == b""
    async with DomainProxy(proxy_socket, ["localhost"]):
        request = f"GET http://localhost:{web.port}/later HTTP/1.1\r\n\r\n".encode()
        assert (await exchange(bridge, request)).endswith(b"hello /later")
