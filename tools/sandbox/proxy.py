"""Network to named hosts only: the per-call proxy outside the ``bash`` sandbox.

A sandboxed call runs in a network namespace with nothing but loopback. When the user
grants named hosts (``allowedDomains``, or a permission such as "allow pypi.org always"),
the call gets a :class:`DomainProxy` here, outside, listening on a unix socket that is
bind-mounted into the sandbox; inside, ``tools/sandbox/bridge.py`` listens on
127.0.0.1:3128 and pipes each TCP connection to that socket, and the command's
environment (:func:`proxy_environment`) points every usual client at the bridge.

One socket speaks both protocols, told apart by the first byte: 0x05 is SOCKS5 (what
``ALL_PROXY=socks5h://`` clients send), anything else HTTP/1.1 (``CONNECT host:port``
for https, absolute-form ``GET http://host/path`` for plain http). The proxy resolves
names itself, so the sandbox needs no DNS and can resolve nothing it may not reach.

Patterns (:func:`valid_domain_pattern`, :func:`host_matches`): a host name
(``pypi.org``), ``*.example.com`` (every subdomain, not the apex) or an IP literal
(only that address, written as an address: a granted name never grants the address it
resolves to, nor the reverse, so ``localhost`` does not grant ``127.0.0.1``). A pattern
allows every port of its host.

A granted name is connected only to the public addresses it resolves to (DNS rebinding: a
name the user granted for its web site may be made to resolve to 127.0.0.1, the
router, or a cloud's metadata service at 169.254.169.254). An internal address (loopback,
private, link-local, shared, unspecified, multicast, reserved, and those written as
IPv4-mapped IPv6) is reached through a name only when the grant also names that address
itself (``["git.corp.example", "10.1.2.3"]``), or for the exact name ``localhost``
granted as such, whose addresses are loopback by definition (RFC 6761). A name whose
addresses are all internal is refused like an ungranted one, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

MAX_HEAD = 64 * 1024  # a request head (request line and headers) larger than this gets 431
HEAD_TIMEOUT = 10.0  # seconds for a client to send its whole request head or SOCKS handshake
_CHUNK = 64 * 1024
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION = re.compile(r"HTTP/1\.[01]")
_STRAY = re.compile(r"[\r\n\x00]")  # each would let a header line smuggle another
# Hop-by-hop headers of the client's connection to us, never forwarded (RFC 9110 §7.6.1).
_HOP_HEADERS = ("connection", "keep-alive", "host", "te", "upgrade")

# SOCKS5 reply codes (RFC 1928 §6).
_SOCKS_OK = 0x00
_SOCKS_FAILURE = 0x01
_SOCKS_NOT_ALLOWED = 0x02
_SOCKS_HOST_UNREACHABLE = 0x04
_SOCKS_REFUSED = 0x05
_SOCKS_BAD_COMMAND = 0x07
_SOCKS_BAD_ADDRESS = 0x08


def _normalize(host: str) -> str:
    """Case, IPv6 brackets and one trailing dot do not make another host."""
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.removesuffix(".") if host != "." else host


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _name_problem(name: str) -> str | None:
    """Why ``name`` (normalized, not an IP literal) is no host name, or None."""
    if not name:
        return "it is empty"
    if not name.isascii():
        return "write a non-ASCII name in its ASCII form (xn--...)"
    if len(name) > 253:
        return "it is longer than 253 characters"
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return "it is no host name (letters, digits, '-' and '_' in dot-separated labels)"
    # The resolver would read "127.1" or "0x7f000001" as an address: a name must not be one.
    with contextlib.suppress(OSError):
        socket.inet_aton(name)
        return "it is an IPv4 address in a non-standard form; write it as a.b.c.d"
    return None


def valid_domain_pattern(pattern: str) -> str | None:
    """None if ``pattern`` can be granted, else why not (a phrase for the user)."""
    if "/" in pattern:
        return "a pattern is a host name, not a URL"
    host = _normalize(pattern)
    if _ip(host) is not None:
        return None
    if host.startswith("*."):
        base = host[2:]
        if "*" in base:
            return "'*' may only be the first label, as in *.example.com"
        if (problem := _name_problem(base)) is not None:
            return problem
        if "." not in base:
            return f"'{pattern}' would allow a whole top-level domain"
        return None
    if "*" in host:
        return "'*' may only be the first label, as in *.example.com"
    if ":" in host:
        return "a pattern has no port: it allows every port of its host"
    return _name_problem(host)


def internal_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` is no public unicast address (see the module's doc)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def host_matches(host: str, pattern: str) -> bool:
    """Whether a request for ``host`` is covered by ``pattern`` (see the module's doc)."""
    host, pattern = _normalize(host), _normalize(pattern)
    host_ip, pattern_ip = _ip(host), _ip(pattern)
    if host_ip is not None or pattern_ip is not None:
        return host_ip is not None and host_ip == pattern_ip
    if _name_problem(host) is not None:
        return False
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])  # ".example.com": a subdomain, never the apex
    return host == pattern


def proxy_environment(port: int = 3128) -> dict[str, str]:
    """The variables that send the usual clients through the bridge on 127.0.0.1:``port``."""
    http = f"http://127.0.0.1:{port}"
    socks = f"socks5h://127.0.0.1:{port}"  # "h": the proxy resolves the name
    return {
        # curl and git (libcurl) read only the lower-case http_proxy; Python (urllib,
        # requests, pip), uv, Go and cargo read either case.
        "HTTP_PROXY": http,
        "HTTPS_PROXY": http,
        "http_proxy": http,
        "https_proxy": http,
        # For what has no scheme-specific variable (curl's other protocols, uv, gRPC).
        "ALL_PROXY": socks,
        "all_proxy": socks,
        # Empty, not unset: an inherited "localhost,127.0.0.1" would let those bypass the
        # proxy, and inside the sandbox nothing is reachable without it.
        "NO_PROXY": "",
        "no_proxy": "",
        # Tools whose own configuration files would otherwise win over the variables above
        # (pip.conf's proxy, .npmrc's proxy, cargo's http.proxy, yarn berry's httpProxy).
        "PIP_PROXY": http,
        "npm_config_proxy": http,
        "npm_config_https_proxy": http,
        "npm_config_noproxy": "",
        "CARGO_HTTP_PROXY": http,
        "YARN_HTTP_PROXY": http,
        "YARN_HTTPS_PROXY": http,
        # Node's own fetch() and http module honour the variables only when asked (22.21+).
        "NODE_USE_ENV_PROXY": "1",
        # rsync:// through an HTTP CONNECT proxy.
        "RSYNC_PROXY": f"127.0.0.1:{port}",
    }


@dataclass(frozen=True)
class _Request:
    """What a client asked for, parsed; ``forward`` is the head to send upstream first."""

    host: str  # normalized
    port: int
    protocol: Literal["socks", "connect", "http"]
    forward: bytes = b""

    @property
    def target(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


Resolver = Callable[[str, int], Awaitable[list[str]]]


INTERNAL_NOTE = "it resolves to internal addresses only: only a grant of the address reaches them"


class InternalAddressError(OSError):
    """A granted name resolved to internal addresses only (DNS rebinding)."""


async def _system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class DomainProxy:
    """An HTTP and SOCKS5 proxy on a unix socket that connects only to allowed hosts.

    ``async with proxy:`` listens (the socket is created 0600: the sandboxed command runs
    as the same user, seen through its user namespace); leaving it closes the listener and
    every open connection and removes the socket.
    """

    def __init__(
        self,
        socket_path: Path,
        allowed: Sequence[str],
        *,
        connect_timeout: float = 10.0,
        head_timeout: float = HEAD_TIMEOUT,
        resolve: Resolver = _system_resolver,
    ) -> None:
        for pattern in allowed:
            if (problem := valid_domain_pattern(pattern)) is not None:
                raise ValueError(f"not a domain pattern: {pattern!r}: {problem}")
        self.socket_path = Path(socket_path)
        self.allowed = tuple(allowed)
        normalized = [_normalize(pattern) for pattern in allowed]
        # Internal addresses a name may reach: those the grant writes out itself.
        self._granted_addresses = {ip for p in normalized if (ip := _ip(p)) is not None}
        self._localhost = "localhost" in normalized
        self._resolve = resolve
        # "host:port" of each refused request, first time only, for the shell to report.
        self.refused: list[str] = []
        self._connect_timeout = connect_timeout
        self._head_timeout = head_timeout
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[object]] = set()
        self._addresses: dict[str, list[str]] = {}  # host -> its addresses, resolved once
        self._closing = False

    def allows(self, host: str) -> bool:
        return any(host_matches(host, pattern) for pattern in self.allowed)

    async def __aenter__(self) -> DomainProxy:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Set on the socket before bind, the mode is the file's from its creation on:
            # there is no moment when another user could connect.
            os.fchmod(sock.fileno(), 0o600)
            sock.bind(str(self.socket_path))
        except BaseException:
            sock.close()
            raise
        self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=MAX_HEAD)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._closing = True
        if self._server is not None:
            self._server.close()
        while self._handlers:  # a connection accepted just before close() may start late
            tasks = list(self._handlers)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        self.socket_path.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        writers = [writer]
        try:
            if self._closing:
                return
            try:
                async with asyncio.timeout(self._head_timeout):
                    request = await _read_request(reader, writer)
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                return  # a client that does not finish its request gets no answer
            if request is None:
                return  # answered already (400, SOCKS error)
            if not self.allows(request.host):
                self._refuse(request, writer)
                return
            try:
                async with asyncio.timeout(self._connect_timeout):
                    up_reader, up_writer = await self._connect(request.host, request.port)
            except InternalAddressError as failure:
                self._refuse(request, writer, str(failure), note=INTERNAL_NOTE)
                return
            except (TimeoutError, OSError) as failure:
                log.debug("proxy: %s unreachable: %s", request.target, failure)
                writer.write(_failure_reply(request, failure))
                return
            writers.append(up_writer)
            writer.write(_success_reply(request))
            up_writer.write(request.forward)
            await _pipe(
                reader, writer, up_reader, up_writer, one_exchange=request.protocol == "http"
            )
        except asyncio.CancelledError:
            for each in writers:  # leaving: drop what the peers did not read yet
                each.transport.abort()
            if not self._closing:
                raise
            # Our own shutdown: end as done, not cancelled; asyncio 3.11 would log the
            # cancelled connection task as an unhandled error (3.12 checks first).
        finally:
            for each in writers:
                each.close()
            self._handlers.discard(task)

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect to the first address of ``host`` that answers.

        A name is resolved once per proxy, that is per call: an install makes dozens of
        requests to the same few hosts, and each lookup is a trip through the executor.
        """
        addresses = self._addresses.get(host)
        if addresses is None:
            found = list(dict.fromkeys(await self._resolve(host, port)))
            addresses = [a for a in found if self._may_reach(host, a)]
            if found and not addresses:
                shown = ", ".join(found[:4])
                raise InternalAddressError(
                    f"{host} resolves to internal addresses only ({shown}): a granted name "
                    "reaches public addresses; grant the address itself to allow it"
                )
            self._addresses[host] = addresses
        failure: OSError = OSError(f"{host} has no address")
        for address in addresses:
            try:
                return await asyncio.open_connection(address, port)  # a literal: no lookup
            except OSError as error:
                failure = error
        raise failure

    def _may_reach(self, host: str, address: str) -> bool:
        ip = _ip(address.split("%", 1)[0])
        if ip is None:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if not internal_address(ip) or ip in self._granted_addresses:
            return True
        return self._localhost and _normalize(host) == "localhost" and ip.is_loopback

    def _refuse(
        self, request: _Request, writer: asyncio.StreamWriter, why: str = "", note: str = ""
    ) -> None:
        log.debug("proxy: refused %s", request.target)
        shown = f"{request.target} ({note})" if note else request.target
        if shown not in self.refused:
            self.refused.append(shown)
        if request.protocol == "socks":
            writer.write(_socks_reply(_SOCKS_NOT_ALLOWED))
            return
        message = why or f"{request.target} is not in the allowed domains of this sandbox"
        # In the reason phrase too: Python's http.client (pip, urllib) shows that, not the
        # body, for a refused CONNECT ("Tunnel connection failed: 403 Forbidden: ...").
        writer.write(_http_reply(403, f"Forbidden: {message}", message))


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> _Request | None:
    first = await reader.readexactly(1)
    if first == b"\x05":
        return await _read_socks(reader, writer)
    return await _read_http(first, reader, writer)


async def _read_socks(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> _Request | None:
    """RFC 1928: the no-authentication method and CONNECT only."""
    methods = await reader.readexactly((await reader.readexactly(1))[0])
    if 0x00 not in methods:
        writer.write(b"\x05\xff")
        return None
    writer.write(b"\x05\x00")
    version, command, _, kind = await reader.readexactly(4)
    if kind == 0x01:
        host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif kind == 0x03:
        raw = await reader.readexactly((await reader.readexactly(1))[0])
        host = raw.decode("ascii", "replace")  # U+FFFD then fails the name check below
    elif kind == 0x04:
        host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    else:
        writer.write(_socks_reply(_SOCKS_BAD_ADDRESS))
        return None
    port = int.from_bytes(await reader.readexactly(2), "big")
    if command != 0x01:
        writer.write(_socks_reply(_SOCKS_BAD_COMMAND))
        return None
    host = _normalize(host)
    if version != 0x05 or port == 0 or (_ip(host) is None and _name_problem(host)):
        writer.write(_socks_reply(_SOCKS_FAILURE))
        return None
    return _Request(host, port, "socks")


async def _read_http(
    first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> _Request | None:
    try:
        head = first + await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        writer.write(_http_reply(431, "Request Header Fields Too Large", "request head too large"))
        return None
    request, problem = _parse_http(head[:-4].decode("latin-1"))
    if request is None:
        writer.write(_http_reply(400, "Bad Request", problem))
    return request


def _parse_http(head: str) -> tuple[_Request | None, str]:
    """The request of an HTTP head, or None and why it is not one this proxy serves."""
    line, *fields = head.split("\r\n")
    if _STRAY.search(head.replace("\r\n", "")):
        return None, "stray CR, LF or NUL in the request head"
    parts = line.split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        return None, "not an HTTP/1.x request"
    method, target, version = parts
    headers = []
    for field in fields:
        name, colon, _ = field.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            return None, "malformed header line"
        headers.append((name.lower(), field))
    if method == "CONNECT":
        authority = _authority(target)
        if authority is None:
            return None, "CONNECT needs host:port"
        return _Request(*authority, "connect"), ""
    if not target.lower().startswith("http://"):
        return None, "send http:// URLs in absolute form, and https through CONNECT"
    try:
        url = urlsplit(target)
        port = url.port or 80
    except ValueError:
        return None, "malformed URL"
    host = _normalize(url.hostname or "")
    if "@" in url.netloc or (_ip(host) is None and _name_problem(host)):
        return None, "malformed host in the URL"
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    # Origin-form upstream; Host from the URL (RFC 9112 §3.2.2); one exchange per
    # connection, so that a second request on it cannot reach a host never checked.
    lines = [f"{method} {path} {version}", f"Host: {url.netloc}"]
    lines += [
        field
        for name, field in headers
        if not name.startswith("proxy-") and name not in _HOP_HEADERS
    ]
    lines += ["Connection: close", "", ""]
    return _Request(host, port, "http", "\r\n".join(lines).encode("latin-1")), ""


def _authority(target: str) -> tuple[str, int] | None:
    host, colon, port = target.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    if host.startswith("["):
        if not host.endswith("]") or _ip(host[1:-1]) is None:
            return None
    elif ":" in host:
        return None
    host = _normalize(host)
    if _ip(host) is None and _name_problem(host):
        return None
    return host, int(port)


def _http_reply(status: int, reason: str, body: str) -> bytes:
    payload = f"agent-lsp proxy: {body}\n".encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode() + payload


def _socks_reply(code: int) -> bytes:
    return bytes([0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])  # bound address 0.0.0.0:0


def _success_reply(request: _Request) -> bytes:
    if request.protocol == "socks":
        return _socks_reply(_SOCKS_OK)
    if request.protocol == "connect":
        return b"HTTP/1.1 200 Connection established\r\n\r\n"
    return b""  # a forwarded request: the upstream's response is the answer


def _failure_reply(request: _Request, failure: BaseException) -> bytes:
    if request.protocol == "socks":
        refused = isinstance(failure, ConnectionRefusedError)
        return _socks_reply(_SOCKS_REFUSED if refused else _SOCKS_HOST_UNREACHABLE)
    if isinstance(failure, TimeoutError):
        return _http_reply(504, "Gateway Timeout", f"{request.target} did not answer in time")
    return _http_reply(502, "Bad Gateway", f"cannot connect to {request.target}: {failure}")


async def _pipe(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    *,
    one_exchange: bool,
) -> None:
    """Copy both ways, passing each end-of-stream on (half-close), until both are done.

    With ``one_exchange`` (a forwarded http request) the connection ends with the
    response: the request asked the upstream for ``Connection: close``.
    """

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()

    to_client = asyncio.create_task(copy(up_reader, client_writer))
    to_upstream = asyncio.create_task(copy(client_reader, up_writer))
    try:
        await (to_client if one_exchange else asyncio.gather(to_client, to_upstream))
    except OSError:
        pass  # a reset on either side ends both
    finally:
        for task in (to_client, to_upstream):
            task.cancel()
        await asyncio.gather(to_client, to_upstream, return_exceptions=True)
