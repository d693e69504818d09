"""The floor of workload P10: the least a stdio MCP server can do per ``tools/call`` read in
Python, with no SDK, no validation, no policy: read a JSON-RPC line, read the file, write the
result line. ``python tests/benchmarks/mcp_floor_server.py`` is a server for ``mcp_stdio.py``
(``-- python tests/benchmarks/mcp_floor_server.py``); what pi costs above it is the SDK's
dispatch, pi's pipeline and trio."""

from __future__ import annotations

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "initialize":
            result: dict = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "0"},
            }
        else:
            with open(message["params"]["arguments"]["path"], encoding="utf-8") as f:
                text = f.read()
            result = {"content": [{"type": "text", "text": text}]}
        out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
        out.write(b"\n")
        out.flush()


if __name__ == "__main__":
    main()
