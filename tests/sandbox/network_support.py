"""Loopback servers standing in for the internet in the network tests: an HTTP server, an HTTPS
server (a certificate made with ``openssl`` for ``localhost``, ``allowed.localhost``, ``other.localhost`` and 127.0.0.1)
and a raw TCP server that records what it receives. Names under ``.localhost`` are loopback for
the proxy's resolver (RFC 6761); nothing leaves the machine."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.startswith("/redirect/"):
            target = self.path.removeprefix("/redirect/")
            self.send_response(302)
            self.send_header("Location", "http://" + target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/bytes/"):
            size = int(self.path.removeprefix("/bytes/"))
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b"x" * 65536
            while size > 0:
                self.wfile.write(chunk[: min(size, len(chunk))])
                size -= len(chunk)
            return
        body = json.dumps({"path": self.path, "host": self.headers.get("Host")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@dataclass
class Server:
    port: int
    received: list[bytes] = field(default_factory=list)


@contextmanager
def _serving(handler: Any, tls: ssl.SSLContext | None) -> Iterator[Server]:
    """A threaded HTTP(S) server of ``handler`` on a free port of 127.0.0.1, stopped after."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def http_server(tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    """A threaded HTTP (or, with ``tls``, HTTPS) server on 127.0.0.1 answering ``GET`` with
    ``{"path", "host"}`` as JSON, ``/redirect/HOST:PORT/PATH`` with a 302 and ``/bytes/N``
    with ``N`` bytes."""
    with _serving(_Handler, tls) as server:
        yield server


@contextmanager
def file_server(directory: Path, tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    """A threaded static file server of ``directory`` on 127.0.0.1 (HTTPS with ``tls``): a
    package index, a git repository served by the dumb HTTP protocol."""
    import functools

    with _serving(functools.partial(_QuietFiles, directory=str(directory)), tls) as server:
        yield server


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


def make_wheel(directory: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel ``NAME-VERSION-py3-none-any.whl`` (one module printing
    ``hello from NAME``)."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f'print("hello from {name}")\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@contextmanager
def recording_server() -> Iterator[Server]:
    """A TCP server on 127.0.0.1 that records every byte it receives (and answers nothing)."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = Server(listener.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    server.received.append(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        listener.close()


def make_certificate(openssl: str, directory: Path) -> tuple[Path, Path]:
    """``(certificate, key)``: self-signed, for ``localhost``, ``allowed.localhost``, ``other.localhost`` and 127.0.0.1."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,DNS:allowed.localhost,DNS:other.localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def audit_lines(path: Path) -> list[dict[str, object]]:
    """The audit log's lines without their ``time``, by connection (the file's order within
    one: its ``connect`` line, then its ``close``). Lines of different connections may be
    written in either order: a client can open the next connection before the proxy has seen
    the last one close."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        assert str(line.pop("time")).endswith("Z")
    return sorted(lines, key=lambda line: int(line.get("connection", 0)))
