"""A small MCP server for the client tests, built on the ``mcp`` SDK's ``MCPServer``: tools with
the results the tests need (long text, an error without text, structured content only, a crash,
a hang) and names that exercise pi's naming rules.

Run as ``python mcp_test_server.py`` (stdio) or ``python mcp_test_server.py --http PORT``
(streamable HTTP at ``http://127.0.0.1:PORT/mcp``). ``MCP_TEST_MODE_FILE`` names a file whose content decides
how it starts: ``exit`` (writes ``test server: refusing to start`` on stderr and exits 3),
``hang`` (never answers), ``hang-call`` (a server of the standard library alone that answers
the handshake and offers ``hang``, whose calls it never answers), ``greet-only`` (offers only ``greet``), anything else or no file: serves over stdio.
"""

from __future__ import annotations

import os
import sys
import time

mode_file = os.environ.get("MCP_TEST_MODE_FILE")
mode = ""
if mode_file and os.path.exists(mode_file):
    with open(mode_file) as file:
        mode = file.read().strip()
if mode == "exit":
    sys.stderr.write("test server: refusing to start\n")
    sys.exit(3)
if mode == "hang":
    time.sleep(3600)
if mode == "hang-call":
    # the standard library only (the SDK's import alone takes over a second of CPU): answers the
    # handshake and the tool list at once, never a tools/call, so a request's timeout measures
    # the request and not the server's start
    import json

    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message or method == "tools/call":
            continue
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "pi-test-server", "version": "1"},
            }
        elif method == "tools/list":
            schema = {"type": "object", "properties": {}}
            result = {
                "tools": [{"name": "hang", "description": "Never answers.", "inputSchema": schema}]
            }
        else:
            result = {}
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n"
        )
        sys.stdout.flush()
    sys.exit(0)

from mcp.server.mcpserver import MCPServer  # noqa: E402 - after the fast start-up modes
from mcp.types import CallToolResult  # noqa: E402

server = MCPServer("pi-test-server")


@server.tool(description="Return N lines of text.")
def lines(count: int) -> str:
    return "\n".join(f"line {i} " + "x" * 40 for i in range(1, count + 1)) + "\n"


@server.tool(description="An error result without text.")
def silent_error() -> CallToolResult:
    return CallToolResult(content=[], is_error=True)


@server.tool(description="Only structured content.")
def structured_only() -> CallToolResult:
    return CallToolResult(content=[], structured_content={"answer": 42, "items": ["a", "é"]})


@server.tool(description="Exit the server process in the middle of the call.")
def crash() -> str:
    sys.stderr.write("test server: crashing now\n")
    sys.stderr.flush()
    os._exit(1)


@server.tool(description="Never answer.")
def hang() -> str:
    time.sleep(3600)
    return "unreachable"


@server.tool(name="a-b", description="Collides with a_b once sanitised.")
def a_dash_b() -> str:
    return "a-b"


@server.tool(name="a_b", description="Collides with a-b once sanitised.")
def a_underscore_b() -> str:
    return "a_b"


@server.tool(name="a_tool_with_a_really_long_name_that_goes_past_the_provider_limit")
def long_name() -> str:
    return "long"


@server.tool(description="Say hello.")
def greet(name: str) -> str:
    return f"hello {name}"


def tool_names() -> list[str]:
    """The names of the registered tools (the SDK has no public synchronous getter)."""
    return [t.name for t in server._tool_manager.list_tools()]


if mode == "greet-only":  # a server upgraded to offer fewer tools
    for name in [name for name in tool_names() if name != "greet"]:
        server.remove_tool(name)

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
