"""The client under test of the MCP conformance suite's client scenarios: ``python
conformance_client.py URL``. It makes pi's own MCP client (``[mcp.servers.conformance]``, its
tools direct, in a config of its own) connect to URL and list the tools (``pi tools --json``),
then call each of the server's tools through ``pi call mcp__conformance__TOOL`` with arguments
made from its schema (a required number gets 1, a string "x", a boolean true). pi's output goes
to stderr; the exit status is that of pi's last call (0 without any)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PI = str(Path(sys.executable).with_name("pi"))
PREFIX = "mcp__conformance__"
SAMPLES = {"number": 1, "integer": 1, "string": "x", "boolean": True}


def main(url: str) -> int:
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "pi.toml"
        text = f'[mcp.servers.conformance]\nurl = {json.dumps(url)}\nexposure = "direct"\n'
        if os.environ.get("MCP_CONFORMANCE_SCENARIO", "").startswith("auth/"):
            text += 'auth = "oauth"\n'
        config.write_text(text)
        base = [PI, "--config", str(config)]
        # the suite's authorization servers approve without a person: curl follows the
        # authorization URL to pi's loopback redirect; the tokens go to a state folder of its own
        os.environ["PI_MCP_OAUTH_OPEN"] = "curl -sSL -o /dev/null"
        os.environ["XDG_STATE_HOME"] = folder
        # and the tool lists to a cache of its own: the suite's servers listen on whatever port
        # is free, so a shared cache could hold another scenario's list for the same URL
        # (clean-clone run: tools_call listed a stale test-tool, then found it "no longer
        # available")
        os.environ["XDG_CACHE_HOME"] = folder
        listed = subprocess.run(
            [*base, "tools", "--json"], capture_output=True, text=True, cwd=folder
        )
        sys.stderr.write(listed.stderr)
        if listed.returncode != 0:
            return listed.returncode
        status = 0
        for tool in json.loads(listed.stdout):
            if not tool["name"].startswith(PREFIX):
                continue
            schema = tool.get("parameters") or {}
            properties = schema.get("properties") or {}
            arguments = {
                name: SAMPLES.get(properties.get(name, {}).get("type"), "x")
                for name in schema.get("required") or []
            }
            called = subprocess.run(
                [*base, "call", tool["name"], json.dumps(arguments)],
                capture_output=True,
                text=True,
                cwd=folder,
            )
            sys.stderr.write(called.stdout + called.stderr)
            status = called.returncode
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
