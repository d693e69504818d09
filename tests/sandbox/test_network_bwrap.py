"""``[sandbox.network] mode = "allow-list"`` on the bwrap backend (issue 25 points 2, 4, 5 and 7),
end to end through ``pi call bash`` with real bubblewrap, the real proxy and real clients inside
the sandbox (curl, Python's urllib) against loopback servers: allowed hosts work, every other
path out is refused (a denied host with the message, a program ignoring the proxy variables with
no route, no DNS, no UDP, no IPv6 path, no host Unix socket), Codex ``network_rule``\\ s and
Claude Code ``allowedDomains`` take effect, ``ask`` without a terminal denies, every attempt is
in the audit log, and the local backend refuses the mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from network_support import (
    audit_lines,
    file_server,
    http_server,
    make_certificate,
    make_wheel,
    server_context,
)
from test_bwrap_backend import bwrap_works  # noqa: F401 - the autouse skip of bwrap tests

PI = Path(sys.executable).with_name("pi")


def pi_bash(root: Path, command: str) -> tuple[str, bool]:
    """``pi call bash`` in ``root``: the result's text and whether it is an error."""
    out = subprocess.run(
        [str(PI), "call", "bash", json.dumps({"command": command}), "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    message: dict[str, Any] = json.loads(out.stdout)
    return "".join(block["text"] for block in message["content"]), message["isError"]


def configure(root: Path, network: str, extra: str = "") -> None:
    (root / "pi.toml").write_text(
        '[sandbox]\nbackend = "bwrap"\n[sandbox.audit]\npath = "audit.jsonl"\n'
        f'[sandbox.network]\nmode = "allow-list"\n{network}\n{extra}'
    )


@pytest.fixture
def server() -> Iterator[int]:
    with http_server() as running:
        yield running.port


def blocked(host: str, rule: str) -> str:
    return f"blocked by pi network policy: {host} is not allowed ({rule})"


def test_allowed_hosts_work_for_curl_and_python_and_the_rest_is_blocked(
    tmp_path: Path, server: int
) -> None:
    configure(tmp_path, f'allow = ["allowed.localhost:{server}"]')
    text, error = pi_bash(
        tmp_path,
        f"curl -sS http://allowed.localhost:{server}/curl; echo; "
        f"python3 -c 'import urllib.request as u; "
        f'print(u.urlopen("http://allowed.localhost:{server}/py").read().decode())\'; '
        f"curl -sS http://denied.localhost:{server}/",
    )
    assert (text, error) == (
        f'{{"path": "/curl", "host": "allowed.localhost:{server}"}}\n'
        f'{{"path": "/py", "host": "allowed.localhost:{server}"}}\n'
        + blocked(f"denied.localhost:{server}", "not in sandbox.network.allow")
        + "\n",
        False,
    )
    network = [line for line in audit_lines(tmp_path / "audit.jsonl") if line["phase"] == "network"]
    assert [
        (line["tool_call_id"], line["event"], line["host"], line["decision"]) for line in network
    ] == [
        ("call-1", "connect", "allowed.localhost", "allow"),
        ("call-1", "close", "allowed.localhost", "allow"),
        ("call-1", "connect", "allowed.localhost", "allow"),
        ("call-1", "close", "allowed.localhost", "allow"),
        ("call-1", "connect", "denied.localhost", "deny"),
    ]


BYPASSES = r"""
import socket, subprocess
def attempt(name, call):
    try:
        call()
        print(name, "GOT THROUGH")
    except OSError as error:
        print(name, type(error).__name__)
def tcp(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((host, port))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("192.0.2.1", 53))
def unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
attempt("raw-loopback", lambda: tcp("127.0.0.1", PORT))
attempt("raw-ipv6", lambda: tcp("::1", PORT, socket.AF_INET6))
attempt("raw-remote", lambda: tcp("192.0.2.1", 80))
attempt("udp", udp)
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
attempt("host-unix-socket", lambda: unix("SOCKET"))
print("run:", sorted(__import__("os").listdir("/run")))
"""


@pytest.fixture
def host_socket() -> Iterator[str]:
    """A listening Unix socket of the host under ``/run`` (skip where ``/run`` is not writable)."""
    path = f"/run/pi-network-test-{os.getpid()}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
    except OSError as error:
        listener.close()
        pytest.skip(f"cannot make a Unix socket under /run: {error}")
    listener.listen(1)
    try:
        yield path
    finally:
        listener.close()
        os.unlink(path)


def test_a_program_ignoring_the_proxy_gets_nothing(
    tmp_path: Path, server: int, host_socket: str
) -> None:
    configure(tmp_path, """allow = ["*.localhost", "127.0.0.1", "::1"]""")
    script = BYPASSES.replace("PORT", str(server)).replace("SOCKET", host_socket)
    (tmp_path / "bypass.py").write_text(script)
    text, error = pi_bash(tmp_path, "python3 bypass.py")
    assert (text, error) == (
        "raw-loopback ConnectionRefusedError\n"
        "raw-ipv6 ConnectionRefusedError\n"
        "raw-remote OSError\n"
        "udp OSError\n"
        "dns gaierror\n"
        "host-unix-socket FileNotFoundError\n"
        "run: []\n",
        False,
    )


def test_codex_network_rules_take_effect_with_their_protocol(tmp_path: Path, server: int) -> None:
    (tmp_path / "net.rules").write_text(
        'network_rule(host = "codex.localhost", protocol = "http", decision = "allow")\n'
        'network_rule(host = "socks.localhost", protocol = "socks5_tcp", decision = "allow")\n'
        'network_rule(host = "no.localhost", protocol = "http", decision = "forbidden")\n'
    )
    configure(
        tmp_path,
        'allow = ["no.localhost"]',
        '[sandbox.codex_rules]\nfiles = ["net.rules"]\n',
    )
    text, _ = pi_bash(
        tmp_path,
        f"curl -sS http://codex.localhost:{server}/c; echo; "
        f"curl -sS http://socks.localhost:{server}/; "
        f"curl -sS --proxy socks5h://127.0.0.1:3128 http://socks.localhost:{server}/s; echo; "
        f"curl -sS http://no.localhost:{server}/",
    )
    assert text == (
        f'{{"path": "/c", "host": "codex.localhost:{server}"}}\n'
        + blocked(f"socks.localhost:{server}", "not in sandbox.network.allow")
        + "\n"
        f'{{"path": "/s", "host": "socks.localhost:{server}"}}\n'
        + blocked(f"no.localhost:{server}", "codex rule net.rules:3 'no.localhost'")
        + "\n"
    )


def test_claude_code_allowed_and_denied_domains_take_effect(tmp_path: Path, server: int) -> None:
    (tmp_path / "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {
                    "network": {
                        "allowedDomains": ["*.claude.localhost"],
                        "deniedDomains": [f"bad.claude.localhost:{server}"],
                    }
                }
            }
        )
    )
    configure(tmp_path, "", '[sandbox.claude_hooks]\nsettings = ["settings.json"]\n')
    text, _ = pi_bash(
        tmp_path,
        f"curl -sS http://ok.claude.localhost:{server}/; echo; "
        f"curl -sS http://bad.claude.localhost:{server}/",
    )
    assert text == (
        f'{{"path": "/", "host": "ok.claude.localhost:{server}"}}\n'
        + blocked(
            f"bad.claude.localhost:{server}",
            f"claude settings settings.json 'bad.claude.localhost:{server}'",
        )
        + "\n"
    )


def test_ask_without_a_terminal_denies(tmp_path: Path, server: int) -> None:
    configure(tmp_path, 'unknown = "ask"')
    text, _ = pi_bash(tmp_path, f"curl -sS http://asked.localhost:{server}/")
    assert text == (
        blocked(f"asked.localhost:{server}", "not in sandbox.network.allow; nobody to ask") + "\n"
    )


def test_ask_with_sandbox_ask_allow_connects(tmp_path: Path, server: int) -> None:
    configure(tmp_path, 'unknown = "ask"')
    toml = (
        (tmp_path / "pi.toml")
        .read_text()
        .replace('backend = "bwrap"\n', 'backend = "bwrap"\nask = "allow"\n')
    )
    (tmp_path / "pi.toml").write_text(toml)
    text, _ = pi_bash(tmp_path, f"curl -sS http://asked.localhost:{server}/a")
    assert text == f'{{"path": "/a", "host": "asked.localhost:{server}"}}'
    connect = next(line for line in audit_lines(tmp_path / "audit.jsonl") if line.get("event"))
    assert connect["source"] == "not in sandbox.network.allow; approved (allow)"


def test_the_local_backend_refuses_allow_list(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text('[sandbox.network]\nmode = "allow-list"\n')
    out = subprocess.run(
        [str(PI), "call", "ls", "{}"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (out.returncode, out.stdout, out.stderr) == (
        2,
        "",
        f'pi: error: {tmp_path / "pi.toml"}: sandbox.network.mode: "allow-list" is enforced '
        'only by backend = "bwrap" or "container", not "local" (its commands could reach any host)\n',
    )


def test_pip_and_git_over_https_through_the_proxy(
    tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    """pip installs from a local HTTPS index and git clones from a local HTTPS server, by name,
    inside the sandbox, unchanged: only the proxy variables lead them out."""
    git = require_program("git")
    python = os.path.realpath(sys.executable)  # the base interpreter: it has pip
    if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip(f"{python} has no pip")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cert, key = make_certificate(require_program("openssl"), workspace)  # the sandbox sees it
    served = tmp_path / "served"
    (served / "simple" / "pitestpkg").mkdir(parents=True)
    wheel = make_wheel(served / "simple" / "pitestpkg", "pitestpkg", "1.0")
    (served / "simple" / "pitestpkg" / "index.html").write_text(
        f'<a href="{wheel.name}">{wheel.name}</a>\n'
    )
    source = tmp_path / "source"
    source.mkdir()
    run = {"check": True, "capture_output": True, "cwd": source}
    subprocess.run([git, "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    (source / "README").write_text("cloned through pi's proxy\n")
    subprocess.run([git, "add", "README"], **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        [git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], **run
    )
    subprocess.run(  # type: ignore[call-overload]
        [git, "clone", "-q", "--bare", str(source), str(served / "repo.git")], **run
    )
    subprocess.run(  # type: ignore[call-overload]
        [git, "update-server-info"], **{**run, "cwd": served / "repo.git"}
    )
    with file_server(served, server_context(cert, key)) as index:
        configure(workspace, f'allow = ["allowed.localhost:{index.port}"]')
        base = f"https://allowed.localhost:{index.port}"
        text, error = pi_bash(
            workspace,
            f"REQUESTS_CA_BUNDLE={cert} {python} -m pip --isolated download -q --no-deps -d dl "
            f"--index-url {base}/simple/ pitestpkg && ls dl; "
            f"GIT_SSL_CAINFO={cert} git clone -q {base}/repo.git clone && cat clone/README",
        )
    assert (text, error) == (
        "pitestpkg-1.0-py3-none-any.whl\ncloned through pi's proxy\n",
        False,
    )


def test_ask_on_the_terminal_lasts_for_the_session(tmp_path: Path, server: int) -> None:
    from test_policy_sources import run_in_terminal

    configure(tmp_path, 'unknown = "ask"')
    command = (
        f"curl -sS http://asked.localhost:{server}/1; echo; "
        f"curl -sS http://asked.localhost:{server}/2; echo; "
        f"curl -sS http://refused.localhost:{server}/"
    )
    status, output = run_in_terminal(
        tmp_path, [str(PI), "call", "bash", json.dumps({"command": command})], [b"y\n", b"n\n"]
    )
    assert status == 0, output
    prompt = (
        f'pi: approval needed for network {{"host": "asked.localhost", "port": {server}, '
        '"protocol": "http"}\r\n'
        "  asked by: sandbox.network\r\n"
        f"  reason: a connection to asked.localhost:{server} (not in sandbox.network.allow)\r\n"
        "Allow? [y]es, [n]o, [a]lways for this session: "
    )
    assert prompt in output
    assert output.count("Allow? ") == 2  # the second request to asked.localhost is remembered
    assert f'{{"path": "/1", "host": "asked.localhost:{server}"}}' in output
    assert f'{{"path": "/2", "host": "asked.localhost:{server}"}}' in output
    assert (
        blocked(f"refused.localhost:{server}", "not in sandbox.network.allow; not approved (deny)")
        in output
    )
