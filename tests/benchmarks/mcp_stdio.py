"""Workload P10: ``N`` ``tools/call`` reads over MCP stdio, one after another, against a server
started by this script (its start included): the client side of the timing, the same for every
server. Prints the number of results that were not errors and exits 0 when all ``N`` succeed.

Usage::

    python tests/benchmarks/mcp_stdio.py --calls 2000 --tool read --file a.txt -- pi mcp serve --cwd DIR
    python tests/benchmarks/mcp_stdio.py --calls 2000 --tool read_text_file --file DIR/a.txt \\
        -- node .../server-filesystem/dist/index.js DIR

Time the whole process from outside (``/usr/bin/time``, or a whole-process A/B timer). The
client is plain JSON-RPC lines on the server's stdin and stdout (MCP's stdio transport), with
no SDK, so what is measured is the server's cost per message.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--tool", default="read")
    parser.add_argument("--file", required=True, help="the path argument of every read")
    parser.add_argument("server", nargs=argparse.REMAINDER, help="-- COMMAND ARG...")
    args = parser.parse_args()
    command = args.server[1:] if args.server[:1] == ["--"] else args.server
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    out, inp = proc.stdin, proc.stdout

    def send(message: dict) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    def answer(request_id: int) -> dict:
        while True:
            line = inp.readline()
            if not line:
                raise SystemExit(f"the server closed its output (status {proc.wait()})")
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    send(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    )
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ok = 0
    for i in range(1, args.calls + 1):
        params = {"name": args.tool, "arguments": {"path": args.file}}
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        result = answer(i).get("result") or {}
        ok += bool(result.get("content")) and not result.get("isError")
    out.close()
    proc.wait(timeout=30)
    print(ok)
    return 0 if ok == args.calls else 1


if __name__ == "__main__":
    sys.exit(main())
