"""The proxy pi runs outside the sandbox for a session: the only way out of a sandbox whose
``[sandbox.network] mode`` is ``"allow-list"``.

It listens on Unix sockets only (one per command, in a directory only this user can enter: no
TCP port anyone else could connect to) and speaks, on the same socket:

* **HTTP**: ``CONNECT host:port`` (a tunnel: HTTPS, git over HTTPS, pip) and absolute-form
  plain-HTTP requests (``GET http://host:port/path``), forwarded in origin form with the URL's
  host as ``Host`` (a different ``Host`` header never decides, and never reaches the server)
  and ``Connection: close``, so every request — a redirect too — comes back to be judged;
* **SOCKS5**: ``CONNECT`` (TCP) without authentication, names or addresses (``socks5h``);
  ``UDP ASSOCIATE`` and ``BIND`` are refused.

Each connection attempt is judged (:meth:`NetworkProxy.judge`): the ``decide`` hook (plugins'
``pi_network_request``) first, else the :class:`~pi_sandbox_plugin.network.rules.NetworkPolicy`;
``ask`` goes to the session's approval path. A name is resolved by the proxy only once it is
allowed (a denied name never reaches DNS), every resolved address is checked against the IP
and CIDR deny rules, and the proxy connects to those addresses, never resolving again. When the
first bytes through a tunnel are a TLS ClientHello (any port), its SNI must name the tunnel's
host: a tunnel to an allowed name cannot carry a handshake for another (domain fronting).

A denied request gets ``403 Forbidden`` with ``X-Pi-Blocked: blocked by pi network policy:
HOST:PORT is not allowed (RULE)`` and the same text as its body; a SOCKS request the reply
``connection not allowed by ruleset`` (2). With an audit log, each attempt writes one line when
it is decided (``"event": "connect"``: written before any byte goes out; a line that cannot be
written refuses the connection unless the log's ``on_error`` is ``"allow"``) and an allowed one a
second when it closes (``"event": "close"`` with ``bytes_up`` and ``bytes_down``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio

from pi_sandbox_plugin.network.rules import (
    Destination,
    IPAddress,
    NetworkPolicy,
    Verdict,
    blocked_message,
    normalize_host,
)

HEAD_LIMIT = 64 * 1024
"""The longest request head (request line and headers) the proxy reads."""

CHUNK = 1024 * 1024
"""Bytes read at once when relaying."""

MAX_RELAYS = 1024
"""Connections relayed at once (each by two threads); more wait for one to end."""

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``resolve(host, port)``: the addresses of a host name (``OSError`` when it has none)."""

Asker = Callable[[Destination, Verdict, str | None], Awaitable[Verdict]]
"""``ask(destination, verdict, tool_call_id)``: a person's answer to an ``ask`` verdict, as an
``allow`` or ``deny`` verdict."""

Hook = Callable[[Destination, str | None], Awaitable[Verdict | None]]
"""``hook(destination, tool_call_id)``: a plugin's verdict, or ``None`` to let the lists decide."""


LOOPBACK: tuple[IPAddress, ...] = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    """The host's resolver (``getaddrinfo``), each address once, in its order; ``localhost``
    and every ``*.localhost`` name are the loopback addresses without asking (RFC 6761)."""
    if host == "localhost" or host.endswith(".localhost"):
        return list(LOOPBACK)
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if address not in found:
            found.append(address)
    return found


class _Reader:
    """Buffered reads from a stream."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def fill(self) -> bool:
        data = await self.stream.receive_some(CHUNK)
        self.buffer += data
        return bool(data)

    async def until(self, marker: bytes, limit: int) -> bytes | None:
        """The bytes up to and including ``marker``; ``None`` at EOF or past ``limit``."""
        while True:
            end = self.buffer.find(marker)
            if end >= 0:
                head = bytes(self.buffer[: end + len(marker)])
                del self.buffer[: end + len(marker)]
                return head
            if len(self.buffer) > limit or not await self.fill():
                return None

    async def exactly(self, count: int) -> bytes | None:
        while len(self.buffer) < count:
            if not await self.fill():
                return None
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def take(self) -> bytes:
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


# -- TLS: the SNI of a ClientHello ---------------------------------------------------------------


class NotClientHello(ValueError):
    """The bytes are not a (complete, well-formed) TLS ClientHello."""


def client_hello_sni(hello: bytes) -> str | None:
    """The ``server_name`` of the TLS ClientHello handshake message ``hello`` (type, length,
    body; the records' payload joined), or ``None`` without one. :class:`NotClientHello` for
    anything malformed."""
    try:
        if hello[0] != 1:
            raise NotClientHello("not a ClientHello")
        body = hello[4 : 4 + int.from_bytes(hello[1:4], "big")]
        at = 2 + 32  # version, random
        at += 1 + body[at]  # session id
        at += 2 + int.from_bytes(body[at : at + 2], "big")  # cipher suites
        at += 1 + body[at]  # compression methods
        if at == len(body):
            return None
        end = at + 2 + int.from_bytes(body[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind = int.from_bytes(body[at : at + 2], "big")
            size = int.from_bytes(body[at + 2 : at + 4], "big")
            data = body[at + 4 : at + 4 + size]
            at += 4 + size
            if kind != 0:
                continue
            names_end = 2 + int.from_bytes(data[0:2], "big")
            pos = 2
            while pos + 3 <= names_end:
                name_type = data[pos]
                length = int.from_bytes(data[pos + 1 : pos + 3], "big")
                name = data[pos + 3 : pos + 3 + length]
                pos += 3 + length
                if name_type == 0:
                    return name.decode("ascii")
            return None
        return None
    except (IndexError, UnicodeDecodeError) as error:
        raise NotClientHello(str(error)) from None


async def read_client_hello(reader: _Reader) -> tuple[bytes, bytes] | None:
    """``(raw bytes read, handshake message)`` when the stream starts with a TLS handshake
    record, ``None`` when it does not (nothing consumed); :class:`NotClientHello` when it starts
    like one but is not."""
    if not reader.buffer and not await reader.fill():
        return None
    if reader.buffer[0] != 0x16:
        return None
    raw = bytearray()
    message = bytearray()
    while True:
        header = await reader.exactly(5)
        if header is None or header[0] != 0x16:
            raise NotClientHello("a TLS handshake record is cut short")
        payload = await reader.exactly(int.from_bytes(header[3:5], "big"))
        if payload is None:
            raise NotClientHello("a TLS handshake record is cut short")
        raw += header + payload
        message += payload
        if len(message) >= 4 and len(message) >= 4 + int.from_bytes(message[1:4], "big"):
            return bytes(raw), bytes(message)
        if len(raw) > 4 * HEAD_LIMIT:
            raise NotClientHello("the ClientHello is too long")


# -- the proxy -----------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One connection attempt, as the audit log records it (``number``: its place among the
    proxy's attempts, the ``connection`` of its lines, so a ``close`` line names its
    ``connect``)."""

    destination: Destination
    tool_call_id: str | None
    number: int = 0
    verdict: Verdict | None = None
    addresses: tuple[IPAddress, ...] = ()
    bytes_up: int = 0
    bytes_down: int = 0


class _Refused(Exception):
    """A connection attempt that ends before any upstream byte: the verdict says why."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.rule)
        self.verdict = verdict


class NetworkProxy:
    """The session's proxy (see the module): ``policy``, the ``resolve``r, ``ask`` (``None``:
    an ``ask`` verdict is denied), the plugins' ``hook``, the ``audit`` log and ``session_id``
    for its lines; ``connect_timeout`` in seconds. :meth:`serve` listens on one Unix socket
    for one command's connections."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        resolve: Resolver = system_resolve,
        ask: Asker | None = None,
        hook: Hook | None = None,
        audit: Any = None,
        session_id: str = "",
        connect_timeout: float = 10.0,
    ) -> None:
        self.policy = policy
        self.resolve = resolve
        self.ask = ask
        self.hook = hook
        self.audit = audit
        self.session_id = session_id
        self._attempts = 0
        self.connect_timeout = connect_timeout
        self.audit_source: Any = None
        self.threads = trio.CapacityLimiter(MAX_RELAYS)
        self.approved: dict[tuple[str, int], Verdict] = {}

    def audit_log(self) -> Any:
        """The log lines go to: ``audit``, else the ``audit`` of ``audit_source`` (the session,
        whose log may open after the proxy is made), else ``None``."""
        if self.audit is not None:
            return self.audit
        return getattr(self.audit_source, "audit", None)

    # -- deciding --------------------------------------------------------------------------------

    async def judge(
        self, destination: Destination, tool_call_id: str | None = None
    ) -> tuple[Verdict, list[IPAddress]]:
        """The verdict on ``destination`` and, when allowed, the addresses to connect to:
        the hook's verdict, else the policy's; an ``ask`` answered (and remembered for the
        session); a name resolved only once allowed, its addresses checked against the deny
        rules. A name that does not resolve is denied (``could not resolve NAME: REASON``)."""
        verdict = await self.hook(destination, tool_call_id) if self.hook is not None else None
        if verdict is None:
            verdict = self.policy.decide(destination)
        if verdict.decision == "ask":
            key = (destination.host, destination.port)
            remembered = self.approved.get(key)
            if remembered is not None:
                verdict = remembered
            elif self.ask is None:
                verdict = Verdict("deny", f"{verdict.rule}; nobody to ask")
            else:
                verdict = await self.ask(destination, verdict, tool_call_id)
                if verdict.decision == "allow":
                    self.approved[key] = verdict
        if verdict.decision != "allow":
            return Verdict("deny", verdict.rule, verdict.reason), []
        address = destination.address
        if address is not None:
            return verdict, [address]
        try:
            addresses = await self.resolve(destination.host, destination.port)
        except OSError as error:
            reason = error.strerror or str(error)
            return Verdict("deny", f"could not resolve {destination.host}: {reason}"), []
        if not addresses:
            return Verdict("deny", f"could not resolve {destination.host}: no address"), []
        rebound = self.policy.address_denial(destination, addresses)
        if rebound is not None:
            return rebound, []
        return verdict, addresses

    def _attempt(self, destination: Destination, tool_call_id: str | None) -> Attempt:
        self._attempts += 1
        return Attempt(destination, tool_call_id, self._attempts)

    async def _record(self, attempt: Attempt, event: str) -> str | None:
        audit = self.audit_log()
        if audit is None or attempt.verdict is None:
            return None
        entry: dict[str, Any] = {
            "time": _now(),
            "session": self.session_id,
            "tool_call_id": attempt.tool_call_id,
            "phase": "network",
            "event": event,
            "connection": attempt.number,
            "protocol": attempt.destination.protocol,
            "host": attempt.destination.host,
            "port": attempt.destination.port,
            "decision": attempt.verdict.decision,
            "source": attempt.verdict.rule,
        }
        if attempt.verdict.reason:
            entry["reason"] = attempt.verdict.reason
        if attempt.addresses:
            entry["addresses"] = [str(a) for a in attempt.addresses]
        if event == "close":
            entry["bytes_up"] = attempt.bytes_up
            entry["bytes_down"] = attempt.bytes_down
        problem: str | None = await audit.record(entry)
        return problem

    async def _decide(self, attempt: Attempt) -> list[IPAddress]:
        """Judge ``attempt`` and write its line; :class:`_Refused` unless it may go out."""
        verdict, addresses = await self.judge(attempt.destination, attempt.tool_call_id)
        attempt.verdict = verdict
        attempt.addresses = tuple(addresses)
        problem = await self._record(attempt, "connect")
        if problem is not None and self.audit_log().on_error != "allow":
            raise _Refused(Verdict("deny", f"the audit log could not record it: {problem}"))
        if verdict.decision != "allow":
            raise _Refused(verdict)
        return addresses

    async def _open(self, attempt: Attempt, addresses: Sequence[IPAddress]) -> trio.SocketStream:
        """A connection to the first of ``addresses`` that answers (no name resolved again)."""
        last: OSError | None = None
        for address in addresses:
            try:
                with trio.fail_after(self.connect_timeout):
                    return await trio.open_tcp_stream(str(address), attempt.destination.port)
            except OSError as error:
                last = error
            except trio.TooSlowError:
                last = TimeoutError(f"no answer in {self.connect_timeout:g} s")
        raise OSError(f"cannot connect to {attempt.destination}: {last}")

    # -- serving ---------------------------------------------------------------------------------

    async def serve(
        self,
        path: str,
        tool_call_id: str | None = None,
        *,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen on a new Unix socket at ``path`` (mode 0600) until cancelled; connections
        are attributed to ``tool_call_id``. ``task_status.started(path)`` once listening."""
        sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            await sock.bind(path)
            os.chmod(path, 0o600)
            sock.listen(128)
        except BaseException:
            sock.close()
            raise
        listener = trio.SocketListener(sock)
        try:

            async def handler(stream: trio.SocketStream) -> None:
                await self.handle(stream, tool_call_id)

            await trio.serve_listeners(
                handler,
                [listener],
                task_status=_Started(task_status, path),
            )
        finally:
            with trio.CancelScope(shield=True):
                await listener.aclose()
            try:
                os.unlink(path)
            except OSError:
                pass

    async def handle(self, stream: trio.abc.Stream, tool_call_id: str | None = None) -> None:
        """One client connection: SOCKS5 when its first byte is 5, else HTTP."""
        reader = _Reader(stream)
        try:
            async with stream:
                if not await reader.fill():
                    return
                if reader.buffer[0] == 5:
                    await self._socks(reader, tool_call_id)
                else:
                    await self._http(reader, tool_call_id)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            return

    # -- HTTP ------------------------------------------------------------------------------------

    async def _reply(self, stream: trio.abc.Stream, status: str, text: str, blocked: bool) -> None:
        body = (text + "\n").encode()
        head = f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        if blocked:  # one header line whatever a plugin's reason holds
            header = "".join(c if c.isprintable() else " " for c in text)
            head += f"X-Pi-Blocked: {header}\r\n"
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        await stream.send_all(head.encode() + body)

    async def _http(self, reader: _Reader, tool_call_id: str | None) -> None:
        import h11

        stream = reader.stream
        head = await reader.until(b"\r\n\r\n", HEAD_LIMIT)
        if head is None:
            await self._reply(stream, "400 Bad Request", "pi proxy: no complete request", False)
            return
        parser = h11.Connection(h11.SERVER)
        parser.receive_data(head)
        try:
            request = parser.next_event()
        except h11.RemoteProtocolError as error:
            await self._reply(stream, "400 Bad Request", f"pi proxy: {error}", False)
            return
        if not isinstance(request, h11.Request):
            await self._reply(stream, "400 Bad Request", "pi proxy: no complete request", False)
            return
        method = request.method.decode("ascii")
        target = request.target.decode("ascii", "replace")
        try:
            if method == "CONNECT":
                destination = _authority(target, None, "https")
                path = ""
            else:
                destination, path = _absolute_url(target)
        except ValueError as error:
            await self._reply(stream, "400 Bad Request", f"pi proxy: {error}", False)
            return
        attempt = self._attempt(destination, tool_call_id)
        try:
            addresses = await self._decide(attempt)
            upstream = await self._open(attempt, addresses)
        except _Refused as refused:
            text = blocked_message(destination, refused.verdict.rule)
            await self._reply(stream, "403 Forbidden", text, True)
            return
        except OSError as error:
            await self._reply(stream, "502 Bad Gateway", f"pi proxy: {error}", False)
            await self._record(attempt, "close")
            return
        async with upstream:
            if method == "CONNECT":
                await stream.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                head = _origin_request(request, destination, path)
                attempt.bytes_up += len(head)
                await upstream.send_all(head)
            await self._relay(reader, upstream, attempt, tunnel=method == "CONNECT")

    async def _sni_problem(self, reader: _Reader, attempt: Attempt) -> str | None:
        """Why the tunnel must close, or ``None``: its first bytes are not TLS, or a ClientHello
        whose SNI is absent or names the tunnel's host (what was read stays in ``reader``)."""
        hello: tuple[bytes, bytes] | None = None
        problem: str | None = None
        try:
            hello = await read_client_hello(reader)
            sni = None if hello is None else client_hello_sni(hello[1])
        except NotClientHello as error:
            problem = f"a malformed TLS ClientHello ({error})"
        else:
            if sni is not None:
                try:
                    name = normalize_host(sni)
                except ValueError:
                    name = sni
                if name != attempt.destination.host:
                    problem = f"TLS server name {sni!r} is not the tunnel's host"
        if hello is not None:
            reader.buffer[0:0] = hello[0]
        return problem

    # -- SOCKS5 ----------------------------------------------------------------------------------

    async def _socks(self, reader: _Reader, tool_call_id: str | None) -> None:
        stream = reader.stream
        greeting = await reader.exactly(2)
        if greeting is None:
            return
        methods = await reader.exactly(greeting[1])
        if methods is None:
            return
        if 0 not in methods:
            await stream.send_all(b"\x05\xff")
            return
        await stream.send_all(b"\x05\x00")
        request = await reader.exactly(4)
        if request is None or request[0] != 5:
            return
        command, kind = request[1], request[3]
        if kind == 1:
            raw = await reader.exactly(4)
            host = None if raw is None else str(ipaddress.IPv4Address(raw))
        elif kind == 4:
            raw = await reader.exactly(16)
            host = None if raw is None else str(ipaddress.IPv6Address(raw))
        elif kind == 3:
            size = await reader.exactly(1)
            raw = None if size is None else await reader.exactly(size[0])
            host = None if raw is None else raw.decode("utf-8", "replace")
        else:
            await stream.send_all(_socks_reply(8))
            return
        port_bytes = await reader.exactly(2)
        if host is None or port_bytes is None:
            return
        if command != 1:
            await stream.send_all(_socks_reply(7))  # only CONNECT: no UDP, no BIND
            return
        try:
            destination = Destination(
                normalize_host(host), int.from_bytes(port_bytes, "big"), "socks5_tcp"
            )
        except ValueError:
            await stream.send_all(_socks_reply(4))
            return
        attempt = self._attempt(destination, tool_call_id)
        try:
            addresses = await self._decide(attempt)
            upstream = await self._open(attempt, addresses)
        except _Refused:
            await stream.send_all(_socks_reply(2))
            return
        except OSError:
            await stream.send_all(_socks_reply(5))
            await self._record(attempt, "close")
            return
        async with upstream:
            await stream.send_all(_socks_reply(0))
            await self._relay(reader, upstream, attempt, tunnel=True)

    # -- relaying --------------------------------------------------------------------------------

    async def _relay(
        self, reader: _Reader, upstream: trio.SocketStream, attempt: Attempt, tunnel: bool = False
    ) -> None:
        """Copy both ways until both are done; then write the ``close`` line. In a ``tunnel``
        the client's first bytes go up only once :meth:`_sni_problem` passed them. The bytes
        after the first are copied by the kernel (:func:`splice_both`, two threads), not by
        the event loop."""
        client = reader.stream
        try:
            if tunnel:
                with trio.move_on_after(FIRST_BYTES_WAIT):
                    problem = await self._sni_problem(reader, attempt)
                    if problem is not None:
                        attempt.verdict = Verdict("deny", problem)
                        return
            pending = reader.take()
            if pending:
                attempt.bytes_up += len(pending)
                await upstream.send_all(pending)
            sockets = (_socket_of(client), upstream.socket)
            up, down = await trio.to_thread.run_sync(
                splice_both,
                sockets[0].fileno(),
                sockets[1].fileno(),
                abandon_on_cancel=True,
                limiter=self.threads,
            )
            attempt.bytes_up += up
            attempt.bytes_down += down
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            for sock in (_socket_of(client), upstream.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the threads of a cancelled relay
                except OSError:
                    pass
            with trio.CancelScope(shield=True):
                await self._record(attempt, "close")


FIRST_BYTES_WAIT = 10.0
"""Seconds a tunnel waits for the client's first bytes (a TLS ClientHello to check) before the
server's bytes may flow: protocols where the server speaks first (SSH, SMTP) start after it."""


def _socket_of(stream: trio.abc.Stream) -> Any:
    return stream.socket  # type: ignore[attr-defined]


def _splice(source: int, target: int) -> int:
    """Copy from ``source`` to ``target`` through a pipe until EOF (``splice(2)``: no copy to
    user space), then half-close ``target``; returns the bytes copied."""
    read, write = os.pipe()
    total = 0
    try:
        while True:
            count = os.splice(source, write, CHUNK)
            if not count:
                break
            total += count
            while count:
                count -= os.splice(read, target, count)
    except OSError:
        pass
    finally:
        os.close(read)
        os.close(write)
        try:
            with socket.socket(fileno=os.dup(target)) as half:
                half.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    return total


def splice_both(client: int, upstream: int) -> tuple[int, int]:
    """Copy ``client`` to ``upstream`` and back until both reach EOF (blocking; both made
    blocking first); returns ``(bytes up, bytes down)``."""
    import threading

    os.set_blocking(client, True)
    os.set_blocking(upstream, True)
    down = [0]
    thread = threading.Thread(target=lambda: down.__setitem__(0, _splice(upstream, client)))
    thread.start()
    up = _splice(client, upstream)
    thread.join()
    return up, down[0]


@asynccontextmanager
async def serving(
    proxy: NetworkProxy, path: str, tool_call_id: str | None = None
) -> AsyncIterator[str]:
    """Serve ``proxy`` on the Unix socket ``path`` for the ``async with`` body (one command's
    run); connections still open when it ends are closed."""
    async with trio.open_nursery() as nursery:
        started = await nursery.start(proxy.serve, path, tool_call_id)
        try:
            yield started
        finally:
            nursery.cancel_scope.cancel()


def current_tool_call_id() -> str | None:
    """The id of the tool call whose ``execute`` runs this code, else ``None``."""
    from pi_core import current_tool_context

    try:
        return current_tool_context().tool_call_id
    except RuntimeError:
        return None


class _Started:
    """A ``task_status`` that reports ``value`` whatever it is started with."""

    def __init__(self, inner: trio.TaskStatus[str], value: str) -> None:
        self.inner = inner
        self.value = value

    def started(self, value: object = None) -> None:
        self.inner.started(self.value)


def _now() -> str:
    """UTC now as the audit log writes it: ``2026-12-01T21:30:00.123Z``."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def _authority(text: str, default_port: int | None, protocol: str) -> Destination:
    """The destination of ``host:port`` (``[v6]:port``); ``ValueError`` when it is not one."""
    parsed = urllib.parse.urlsplit("//" + text)
    try:
        port = parsed.port
    except ValueError:
        raise ValueError(f"not a host:port: {text!r}") from None
    if port is None:
        port = default_port
    if not parsed.hostname or port is None or parsed.username is not None:
        raise ValueError(f"not a host:port: {text!r}")
    return Destination(normalize_host(parsed.hostname), port, protocol)


def _absolute_url(target: str) -> tuple[Destination, str]:
    """The destination and origin-form path of an absolute ``http://`` request target."""
    parsed = urllib.parse.urlsplit(target)
    if parsed.scheme.lower() != "http":
        raise ValueError(
            f"a proxy request names an http:// URL (https goes through CONNECT): {target!r}"
        )
    destination = _authority(parsed.netloc, 80, "http")
    path = parsed.path or "/"
    if parsed.query:
        path += "?" + parsed.query
    return destination, path


_HOP_HEADERS = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"host"}


def _origin_request(request: Any, destination: Destination, path: str) -> bytes:
    """The request head sent to the server: origin form, ``Host`` from the URL, ``Connection:
    close``, hop-by-hop and proxy headers removed."""
    host = f"[{destination.host}]" if ":" in destination.host else destination.host
    if destination.port != 80:
        host += f":{destination.port}"
    lines = [b"%s %s HTTP/1.1" % (request.method, path.encode()), b"Host: " + host.encode()]
    for name, value in request.headers:
        if name.lower() not in _HOP_HEADERS:
            lines.append(name + b": " + value)
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


__all__ = [
    "CHUNK",
    "HEAD_LIMIT",
    "Asker",
    "Attempt",
    "Hook",
    "NetworkProxy",
    "NotClientHello",
    "Resolver",
    "client_hello_sni",
    "current_tool_call_id",
    "read_client_hello",
    "serving",
    "system_resolve",
]
