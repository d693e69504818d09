"""``[sandbox.network] mode = "allow-list"`` on the container backend (issue 25 point 2): a
container pi starts with ``--network none`` reaches only the proxy, through the bridge in its
network namespace; a real client inside (bash's ``/dev/tcp``: the test image has no curl)
gets the allowed host and the 403 for another, and a connection that ignores the proxy gets
nothing."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_support import PODMAN_CLI_ARGS, PODMAN_RUN_ARGS, PodmanSession
from network_support import audit_lines, http_server

from pi_core import AuditLog
from pi_sandbox_plugin.backends.container import ContainerBackend
from pi_sandbox_plugin.network.proxy import NetworkProxy
from pi_sandbox_plugin.network.rules import NetworkPolicy, parse_rule


@pytest.fixture
def server() -> Iterator[int]:
    with http_server() as running:
        yield running.port


def request(target: str) -> str:
    """A bash command sending one proxy request over ``/dev/tcp`` and printing the reply."""
    return (
        "exec 3<>/dev/tcp/127.0.0.1/3128 && "
        f"printf 'GET {target} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3 && "
        "tail -n 1 <&3; echo"
    )


async def test_a_container_reaches_only_the_proxy(
    podman: PodmanSession, server: int, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("the bridge enters the container's network namespace: needs root here")
    audit = AuditLog(tmp_path / "audit.jsonl")
    policy = NetworkPolicy(
        (parse_rule(f"allowed.localhost:{server}", "allow", "sandbox.network.allow"),)
    )
    proxy = NetworkProxy(policy, audit=audit, session_id="s")
    workspace = tempfile.mkdtemp(dir=tmp_path)
    backend = ContainerBackend(
        cli=podman.cli,
        cli_args=PODMAN_CLI_ARGS,
        image=podman.image(),
        workspace=workspace,
        run_args=PODMAN_RUN_ARGS,
        proxy=proxy,
    )
    out = bytearray()
    async with backend:
        code = await backend.exec(
            request(f"http://allowed.localhost:{server}/in")
            + "; "
            + request(f"http://denied.localhost:{server}/")
            + f"; (exec 4<>/dev/tcp/127.0.0.1/{server}) 2>/dev/null || echo direct refused"
            + "; echo $HTTPS_PROXY",
            "/work",
            on_data=out.extend,
        )
    audit.close()
    assert (code, out.decode()) == (
        0,
        f'{{"path": "/in", "host": "allowed.localhost:{server}"}}\n'
        f"blocked by pi network policy: denied.localhost:{server} is not allowed "
        "(not in sandbox.network.allow)\n\n"  # the body ends with a newline, then echo's
        "direct refused\n"
        "http://127.0.0.1:3128\n",
    )
    lines = audit_lines(tmp_path / "audit.jsonl")
    assert [(line["event"], line["host"], line["decision"]) for line in lines] == [
        ("connect", "allowed.localhost", "allow"),
        ("close", "allowed.localhost", "allow"),
        ("connect", "denied.localhost", "deny"),
    ]
