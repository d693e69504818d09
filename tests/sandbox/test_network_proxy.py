"""The network proxy (issue 25 points 2, 3 and 5) with real clients (curl, Python's ssl) through
the real bridge, against real servers on loopback: decisions by host and port, the 403 and SOCKS
refusals naming the rule, names resolved by the proxy (no rebinding into a denied range), the
TLS SNI check, the URL's host over a ``Host`` header, redirects judged again, and the audit
lines."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from network_support import (
    audit_lines,
    http_server,
    make_certificate,
    recording_server,
    server_context,
)

from pi_core import (
    AuditLog,
    NetworkDecision,
    NetworkRequestContext,
    PiPluginManager,
    PluginHooks,
    SessionContext,
    hookimpl,
)
from pi_sandbox_plugin.network.bridge import SOURCE
from pi_sandbox_plugin.network.proxy import (
    NetworkProxy,
    client_hello_sni,
    system_resolve,
)
from pi_sandbox_plugin.network.rules import Destination, NetworkPolicy, Verdict, parse_rule

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def make_policy(allow: list[str], deny: list[str] = (), unknown: str = "deny") -> NetworkPolicy:  # type: ignore[assignment]
    rules = [parse_rule(t, "deny", "sandbox.network.deny") for t in deny]
    rules += [parse_rule(t, "allow", "sandbox.network.allow") for t in allow]
    return NetworkPolicy(tuple(rules), unknown)  # type: ignore[arg-type]


@asynccontextmanager
async def running(
    proxy: NetworkProxy, directory: Path, tool_call_id: str = "c1"
) -> AsyncIterator[int]:
    """Serve ``proxy`` on a Unix socket in ``directory`` and a bridge to it on a free loopback
    port of this machine (the port the sandbox's bridge has inside it); yields that port."""
    async with trio.open_nursery() as nursery:
        path = await nursery.start(proxy.serve, str(directory / "proxy.sock"), tool_call_id)
        bridge = await trio.lowlevel.open_process(
            [sys.executable, "-I", "-S", "-c", SOURCE, path, "0", "sleep", "600"],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert bridge.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await bridge.stdout.receive_some(64)
        try:
            yield int(line)
        finally:
            os.killpg(bridge.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await bridge.wait()
                await bridge.stdout.aclose()
            nursery.cancel_scope.cancel()


async def curl(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        ["curl", "-sS", "--max-time", "20", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=ENV,
    )


@pytest.fixture
def needs_curl(require_program: Callable[[str], str]) -> None:
    require_program("curl")


@pytest.fixture
def server() -> Iterator[int]:
    with http_server() as running_server:
        yield running_server.port


def blocked(host: str, rule: str) -> str:
    return f"blocked by pi network policy: {host} is not allowed ({rule})"


async def test_http_allowed_and_denied_with_the_audit_lines(
    needs_curl: None, server: int, tmp_path: Path
) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    proxy = NetworkProxy(make_policy([f"allowed.localhost:{server}"]), audit=audit, session_id="s1")
    async with running(proxy, tmp_path) as port:
        ok = await curl(
            "-x", f"http://127.0.0.1:{port}", f"http://Allowed.Localhost:{server}/a?b=1"
        )
        no = await curl(
            "-i", "-x", f"http://127.0.0.1:{port}", f"http://denied.localhost:{server}/"
        )
    assert ok.stdout == b'{"path": "/a?b=1", "host": "allowed.localhost:%d"}' % server
    text = blocked(f"denied.localhost:{server}", "not in sandbox.network.allow")
    assert no.stdout.decode() == (
        "HTTP/1.1 403 Forbidden\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"X-Pi-Blocked: {text}\r\n"
        f"Content-Length: {len(text) + 1}\r\n"
        "Connection: close\r\n\r\n"
        f"{text}\n"
    )
    audit.close()
    lines = audit_lines(tmp_path / "audit.jsonl")
    request = len(f"GET /a?b=1 HTTP/1.1\r\nHost: allowed.localhost:{server}\r\n")
    assert lines[0] == {
        "session": "s1",
        "tool_call_id": "c1",
        "phase": "network",
        "event": "connect",
        "connection": 1,
        "protocol": "http",
        "host": "allowed.localhost",
        "port": server,
        "decision": "allow",
        "source": f"sandbox.network.allow 'allowed.localhost:{server}'",
        "addresses": ["127.0.0.1", "::1"],
    }
    assert lines[1]["event"] == "close" and lines[1]["decision"] == "allow"
    assert lines[1]["bytes_down"] > 0 and lines[1]["bytes_up"] > request  # type: ignore[operator]
    assert lines[2] == {
        "session": "s1",
        "tool_call_id": "c1",
        "phase": "network",
        "event": "connect",
        "connection": 2,
        "protocol": "http",
        "host": "denied.localhost",
        "port": server,
        "decision": "deny",
        "source": "not in sandbox.network.allow",
    }
    assert len(lines) == 3


async def test_the_url_decides_not_the_host_header(server: int, tmp_path: Path) -> None:
    proxy = NetworkProxy(make_policy([f"allowed.localhost:{server}"]))
    async with running(proxy, tmp_path) as port:
        request = (
            f"GET http://allowed.localhost:{server}/x HTTP/1.1\r\n"
            "Host: denied.localhost\r\nProxy-Connection: keep-alive\r\n\r\n"
        )
        reply = await trio.to_thread.run_sync(_exchange, port, request.encode())
    assert reply.endswith(b'{"path": "/x", "host": "allowed.localhost:%d"}' % server)


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(request)
        return _read_all(client)


def _read_all(client: socket.socket) -> bytes:
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    return data


async def test_a_redirect_is_judged_again(needs_curl: None, server: int, tmp_path: Path) -> None:
    proxy = NetworkProxy(make_policy([f"allowed.localhost:{server}"]))
    async with running(proxy, tmp_path) as port:
        result = await curl(
            "-L",
            "-x",
            f"http://127.0.0.1:{port}",
            f"http://allowed.localhost:{server}/redirect/other.localhost:{server}/secret",
        )
    assert (
        result.stdout.decode()
        == blocked(f"other.localhost:{server}", "not in sandbox.network.allow") + "\n"
    )


async def test_https_through_connect(require_program: Callable[[str], str], tmp_path: Path) -> None:
    require_program("curl")
    cert, key = make_certificate(require_program("openssl"), tmp_path)
    with http_server(server_context(cert, key)) as tls:
        proxy = NetworkProxy(make_policy([f"allowed.localhost:{tls.port}"]))
        async with running(proxy, tmp_path) as port:
            ok = await curl(
                "--cacert",
                str(cert),
                "-x",
                f"http://127.0.0.1:{port}",
                f"https://allowed.localhost:{tls.port}/tls",
            )
            no = await curl(
                "--cacert",
                str(cert),
                "-x",
                f"http://127.0.0.1:{port}",
                f"https://127.0.0.1:{tls.port}/tls",
            )
    assert ok.stderr == b""
    assert ok.stdout == b'{"path": "/tls", "host": "allowed.localhost:%d"}' % tls.port
    assert no.returncode == 56
    assert no.stderr.decode() == "curl: (56) CONNECT tunnel failed, response 403\n"


async def test_socks5_allowed_denied_and_udp_refused(
    needs_curl: None, server: int, tmp_path: Path
) -> None:
    proxy = NetworkProxy(make_policy([f"allowed.localhost:{server}"]))
    async with running(proxy, tmp_path) as port:
        ok = await curl(
            "--socks5-hostname", f"127.0.0.1:{port}", f"http://allowed.localhost:{server}/s"
        )
        no = await curl(
            "--socks5-hostname", f"127.0.0.1:{port}", f"http://denied.localhost:{server}/s"
        )
        udp = await trio.to_thread.run_sync(_udp_associate, port)
    assert ok.stdout == b'{"path": "/s", "host": "allowed.localhost:%d"}' % server
    assert no.returncode == 97
    assert no.stderr == b"curl: (97) Can't complete SOCKS5 connection to denied.localhost. (2)\n"
    assert udp == b"\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00"


def _udp_associate(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"\x05\x01\x00")
        assert client.recv(2) == b"\x05\x00"
        client.sendall(b"\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x35")  # UDP ASSOCIATE
        return _read_all(client)


async def test_a_tls_handshake_for_another_name_is_refused(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    with recording_server() as upstream:
        proxy = NetworkProxy(
            make_policy([f"allowed.localhost:{upstream.port}"]), audit=audit, session_id="s"
        )
        async with running(proxy, tmp_path) as port:
            outcome = await trio.to_thread.run_sync(
                _fronted_handshake, port, f"allowed.localhost:{upstream.port}", "evil.localhost"
            )
        await trio.sleep(0.1)
        assert upstream.received == []
    assert outcome == "closed"
    audit.close()
    lines = audit_lines(tmp_path / "audit.jsonl")
    assert [(line["event"], line["decision"], line["source"]) for line in lines] == [
        ("connect", "allow", f"sandbox.network.allow 'allowed.localhost:{upstream.port}'"),
        ("close", "deny", "TLS server name 'evil.localhost' is not the tunnel's host"),
    ]


def _fronted_handshake(port: int, target: str, name: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        assert raw.recv(4096) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with context.wrap_socket(raw, server_hostname=name):
                return "handshake"
        except (ssl.SSLError, OSError):
            return "closed"


async def test_a_name_resolving_into_a_denied_range_is_refused(
    needs_curl: None, server: int, tmp_path: Path
) -> None:
    proxy = NetworkProxy(make_policy(["*.localhost"], ["127.0.0.0/8", "::1"]))
    async with running(proxy, tmp_path) as port:
        no = await curl("-x", f"http://127.0.0.1:{port}", f"http://rebound.localhost:{server}/")
    assert (
        no.stdout.decode()
        == blocked(
            f"rebound.localhost:{server}",
            "sandbox.network.deny '127.0.0.0/8', rebound.localhost is 127.0.0.1",
        )
        + "\n"
    )


async def test_an_ip_literal_is_judged_by_ip_entries_only(
    needs_curl: None, server: int, tmp_path: Path
) -> None:
    proxy = NetworkProxy(make_policy(["localhost"]))
    async with running(proxy, tmp_path) as port:
        no = await curl("-x", f"http://127.0.0.1:{port}", f"http://127.0.0.1:{server}/")
    assert (
        no.stdout.decode() == blocked(f"127.0.0.1:{server}", "not in sandbox.network.allow") + "\n"
    )


async def test_a_denied_name_is_never_resolved() -> None:
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        asked.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    proxy = NetworkProxy(make_policy(["ok.example"]), resolve=resolve)
    assert await proxy.judge(Destination("secret.data.example", 443)) == (
        Verdict("deny", "not in sandbox.network.allow"),
        [],
    )
    assert await proxy.judge(Destination("ok.example", 443)) == (
        Verdict("allow", "sandbox.network.allow 'ok.example'"),
        [ipaddress.ip_address("127.0.0.1")],
    )
    assert asked == ["ok.example"]


async def test_ask_is_answered_once_per_session_and_denied_without_anyone() -> None:
    answers: list[Destination] = []

    async def ask(destination: Destination, verdict: Verdict, call: str | None) -> Verdict:
        answers.append(destination)
        return Verdict("allow", f"approved ({verdict.rule})")

    asking = make_policy([], unknown="ask")
    proxy = NetworkProxy(asking, ask=ask)
    first = await proxy.judge(Destination("127.0.0.1", 8080), "c1")
    second = await proxy.judge(Destination("127.0.0.1", 8080), "c2")
    assert (
        first
        == second
        == (
            Verdict("allow", "approved (not in sandbox.network.allow)"),
            [ipaddress.ip_address("127.0.0.1")],
        )
    )
    assert answers == [Destination("127.0.0.1", 8080)]
    nobody = NetworkProxy(asking)
    assert await nobody.judge(Destination("127.0.0.1", 8080)) == (
        Verdict("deny", "not in sandbox.network.allow; nobody to ask"),
        [],
    )


async def test_system_resolve_keeps_localhost_names_local() -> None:
    assert [str(a) for a in await system_resolve("anything.localhost", 80)] == ["127.0.0.1", "::1"]


def test_client_hello_sni_of_a_real_handshake() -> None:
    client, server = socket.socketpair()
    with client, server:
        context = ssl.create_default_context()
        sslobj = context.wrap_bio(
            ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_hostname="Ex.Example"
        )
        with pytest.raises(ssl.SSLWantReadError):
            sslobj.do_handshake()
        record = outgoing.read()
    assert record[0] == 0x16
    assert client_hello_sni(record[5:]) == "Ex.Example"


async def test_pi_network_request_plugins_decide_before_the_lists(
    needs_curl: None,
    server: int,
    tmp_path: Path,
    register_plugin: Callable[..., str],
    plugin_manager: PiPluginManager,
) -> None:
    from pi_sandbox_plugin.network.sources import attach_session

    class Gate:
        @hookimpl
        def pi_network_request(self, context: NetworkRequestContext) -> NetworkDecision | None:
            if context.host == "plugin.localhost":
                return NetworkDecision("allow", f"call {context.tool_call_id} may")
            if context.host == "listed.localhost":
                return NetworkDecision("deny", "not today")
            if context.host == "crlf.localhost":
                return NetworkDecision("deny", "no\r\nSet-Cookie: x=1")
            return None

    register_plugin(Gate(), name="gate")
    session = SessionContext(cwd=str(tmp_path))
    session.network_request = PluginHooks(plugin_manager, {}, session=session).network_request
    proxy = NetworkProxy(make_policy([f"listed.localhost:{server}"]))
    attach_session(proxy, session)
    async with running(proxy, tmp_path, "c7") as port:
        ok = await curl("-x", f"http://127.0.0.1:{port}", f"http://plugin.localhost:{server}/p")
        no = await curl("-x", f"http://127.0.0.1:{port}", f"http://listed.localhost:{server}/")
        crlf = await curl(
            "-i", "-x", f"http://127.0.0.1:{port}", f"http://crlf.localhost:{server}/"
        )
    headers = crlf.stdout.decode().split("\r\n\r\n")[0].split("\r\n")
    text = blocked(f"crlf.localhost:{server}", "plugin gate: no  Set-Cookie: x=1")
    assert f"X-Pi-Blocked: {text}" in headers  # one header line, whatever the reason holds
    assert not any(line.startswith("Set-Cookie") for line in headers)
    assert ok.stdout == b'{"path": "/p", "host": "plugin.localhost:%d"}' % server
    assert (
        no.stdout.decode() == blocked(f"listed.localhost:{server}", "plugin gate: not today") + "\n"
    )


async def test_only_this_user_can_reach_the_proxy(tmp_path: Path) -> None:
    """The proxy listens on no TCP port: its socket (0600) is in a directory only this user
    can enter (0700), one per command of a backend."""
    from pi_sandbox_plugin.backends.bwrap import BwrapBackend
    from pi_sandbox_plugin.network.proxy import serving

    backend = BwrapBackend(str(tmp_path), proxy=NetworkProxy(make_policy([])))
    first, second = backend._socket_path(), backend._socket_path()
    assert os.path.dirname(first) == os.path.dirname(second) and first != second
    async with serving(backend.proxy, first) as path:  # type: ignore[arg-type]
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not await trio.Path(first).exists()
    await backend.aclose()
    assert not await trio.Path(first).parent.exists()


async def test_a_decision_the_audit_log_cannot_record_refuses_the_connection(
    needs_curl: None, server: int, tmp_path: Path, small_filesystem: Any
) -> None:
    from support import fill_up

    disk = small_filesystem(64 * 1024)
    audit = AuditLog(disk / "audit.jsonl")
    await trio.to_thread.run_sync(fill_up, disk)
    proxy = NetworkProxy(make_policy([f"allowed.localhost:{server}"]), audit=audit)
    async with running(proxy, tmp_path) as port:
        refused = await curl(
            "-x", f"http://127.0.0.1:{port}", f"http://allowed.localhost:{server}/"
        )
        audit.on_error = "allow"
        allowed = await curl(
            "-x", f"http://127.0.0.1:{port}", f"http://allowed.localhost:{server}/"
        )
    audit.close()
    assert (
        refused.stdout.decode()
        == blocked(
            f"allowed.localhost:{server}",
            "the audit log could not record it: No space left on device",
        )
        + "\n"
    )
    assert allowed.stdout == b'{"path": "/", "host": "allowed.localhost:%d"}' % server
