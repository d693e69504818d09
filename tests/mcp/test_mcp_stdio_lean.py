"""The lean stdio loop of ``pi mcp serve`` (:mod:`pi_builtin_tools.mcp.stdio`) answers what the
MCP SDK answers: the same JSON-RPC lines go to ``pi mcp serve`` as it runs and to the same
server driven by the SDK from its first line (``_PI_MCP_STDIO_SDK=1``), and every message that
comes back is the same (after JSON normalisation, in order). A session of the hot methods
imports no ``mcp`` module."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.mcp.test_mcp_serve import PI, clean_env

pytestmark = pytest.mark.slow  # two real pi servers per test, one of them importing the mcp SDK

V = "2025-06-18"


def request(rid: Any, method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def notify(method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def init(rid: Any = 0, version: str = V, capabilities: Any = None) -> list[str]:
    params = {
        "protocolVersion": version,
        "capabilities": {} if capabilities is None else capabilities,
        "clientInfo": {"name": "diff", "version": "1"},
    }
    return [request(rid, "initialize", params), notify("notifications/initialized")]


def call(rid: Any, name: str, arguments: Any, token: Any = None) -> str:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return request(rid, "tools/call", params)


class Server:
    """``pi mcp serve --cwd DIR`` over pipes: send lines, read the messages it answers."""

    def __init__(self, cwd: Path, sdk: bool) -> None:
        env = clean_env()
        env.pop("_PI_MCP_STDIO_SDK", None)
        if sdk:
            env["_PI_MCP_STDIO_SDK"] = "1"
        self.proc = subprocess.Popen(
            [PI, "mcp", "serve", "--cwd", str(cwd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=str(cwd),
        )
        self.buffer = b""
        self.messages: list[Any] = []

    def send(self, line: str | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line if isinstance(line, bytes) else line.encode() + b"\n")
        self.proc.stdin.flush()

    def _read(self, timeout: float) -> bool:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            return False
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        self.messages += [json.loads(line) for line in lines if line.strip()]
        return True

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.messages) < count:
            assert time.monotonic() < deadline, self.messages
            self._read(1.0)

    def wait_for_id(self, rid: Any) -> None:
        deadline = time.monotonic() + 60
        while not any(m.get("id") == rid for m in self.messages):
            assert time.monotonic() < deadline, self.messages
            self._read(1.0)

    def settle(self, seconds: float = 0.3) -> None:
        """Read what comes within ``seconds`` of quiet."""
        while self._read(seconds):
            pass

    def shut(self) -> None:
        """Kill the server if it still runs, and close the pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()

    def close(self) -> list[Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        while self._read(30):
            pass
        assert self.proc.wait(30) == 0
        return self.messages


def run(cwd: Path, steps: list[Any], sdk: bool) -> list[Any]:
    """Send ``steps`` (a line, or an int: wait until that many messages came back, or None:
    let the server settle) and return every message, the last after the input ended."""
    server = Server(cwd, sdk)
    try:
        for step in steps:
            if isinstance(step, int):
                server.wait_for(step)
            elif step is None:
                server.settle()
            elif isinstance(step, tuple):
                server.wait_for_id(step[1])
            else:
                server.send(step)
        return server.close()
    finally:
        server.shut()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    return tmp_path


def timeless(value: Any) -> Any:
    """``value`` without the one field that differs from run to run (bash's wall time)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "wall_time_seconds"}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def normal(messages: list[Any]) -> Any:
    """``messages`` without bash's wall time, each full-output file's name as ``OUTPUT``."""
    text = json.dumps(timeless(messages))
    for message in messages:
        for block in message.get("result", {}).get("content", []):
            if block.get("type") == "resource_link":
                text = text.replace(block["name"], "OUTPUT")
    return json.loads(text)


def same_as_sdk(project: Path, steps: list[Any]) -> list[Any]:
    lean = run(project, steps, sdk=False)
    sdk = run(project, steps, sdk=True)
    assert normal(lean) == normal(sdk)
    return lean


READ_OK = {"content": [{"type": "text", "text": "hello\nworld\n"}], "isError": False}


def test_the_hot_methods(project: Path) -> None:
    steps = [
        *init(),
        1,
        request(1, "ping"),
        request("two", "tools/list"),
        3,
        call(3, "read", {"path": "a.txt"}),
        4,
        call(4, "read", {"path": "missing.txt"}),
        5,
        call(5, "nope", {}),
        6,
        call(6, "read", {"path": 6}),
        7,
        call(7, "read", {"path": "a.txt"}, token="t"),
        8,
        call(8, "bash", {"command": "printf 'one\\n'"}, token=8),
        ("id", 8),
        request(9, "tools/call", {"name": "read", "arguments": {"path": "a.txt"}, "_meta": {}}),
        ("id", 9),
        request(10, "tools/call", {"name": "ls"}),
        ("id", 10),
    ]
    messages = same_as_sdk(project, steps)
    assert [m.get("id") for m in messages[:5]] == [0, 1, "two", 3, 4]
    assert messages[0]["result"]["protocolVersion"] == V
    assert messages[1] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert messages[3] == {"jsonrpc": "2.0", "id": 3, "result": READ_OK}
    assert messages[5]["result"]["content"][0]["text"] == "Tool nope not found"


@pytest.mark.parametrize("version", ["2025-11-25", "2099-01-01", "2025-03-26", "2024-11-05"])
def test_protocol_versions(project: Path, version: str) -> None:
    steps = [
        *init(version=version),
        1,
        request(1, "tools/list"),
        call(2, "read", {"path": "a.txt"}),
        3,
    ]
    messages = same_as_sdk(project, steps)
    negotiated = version if version != "2099-01-01" else "2025-11-25"
    assert messages[0]["result"]["protocolVersion"] == negotiated


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([request(1, "nope")], id="unknown-method"),
        pytest.param(["garbage"], id="not-json"),
        pytest.param(["[" + request(1, "ping") + "]"], id="batch"),
        pytest.param([json.dumps({"jsonrpc": "2.0", "id": 1})], id="no-method"),
        pytest.param([request(1, "tools/call", {"arguments": {}})], id="no-tool-name"),
        pytest.param([request(1, "tools/call", {"name": 5})], id="bad-tool-name"),
        pytest.param([request(None, "ping")], id="null-id"),
        pytest.param([request(1, "resources/list")], id="resources"),
        pytest.param([request(1, "logging/setLevel", {"level": "info"})], id="logging"),
        pytest.param([notify("notifications/cancelled", {"requestId": 99})], id="cancel-unknown"),
        pytest.param([notify("notifications/roots/list_changed")], id="other-notification"),
        pytest.param([json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"})], id="jsonrpc-1"),
        pytest.param([request(1, "initialize", {"protocolVersion": V})], id="second-initialize"),
    ],
)
def test_everything_else_after_initialize(project: Path, lines: list[str]) -> None:
    steps = [
        *init(),
        1,
        *lines,
        None,
        request(42, "ping"),
        call(43, "read", {"path": "a.txt"}),
        ("id", 43),
    ]
    messages = same_as_sdk(project, steps)
    assert messages[-1] == {"jsonrpc": "2.0", "id": 43, "result": READ_OK}


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([request(1, "tools/list")], id="list"),
        pytest.param([request(1, "ping")], id="ping"),
        pytest.param([call(1, "read", {"path": "a.txt"})], id="call"),
        pytest.param([notify("notifications/initialized")], id="initialized"),
        pytest.param([request(1, "initialize", {"protocolVersion": V})], id="bad-initialize"),
        pytest.param(["garbage"], id="not-json"),
    ],
)
def test_before_initialize(project: Path, lines: list[str]) -> None:
    same_as_sdk(
        project, [*lines, None, *init(7), ("id", 7), call(8, "read", {"path": "a.txt"}), ("id", 8)]
    )


def test_cancellation_and_the_end_of_input(project: Path) -> None:
    steps = [
        *init(),
        1,
        call(1, "bash", {"command": "sleep 20"}),
        None,
        notify("notifications/cancelled", {"requestId": 1, "reason": "no"}),
        request(2, "ping"),
        2,
        call(3, "bash", {"command": "echo on"}),
        3,
        call(4, "bash", {"command": "sleep 20"}),
        None,
    ]
    messages = same_as_sdk(project, steps)
    assert [m["id"] for m in messages] == [0, 2, 3, 4]
    assert messages[3]["error"] == {"code": -32000, "message": "Connection closed"}


def test_a_call_running_when_the_sdk_takes_over_is_still_answered_and_cancellable(
    project: Path,
) -> None:
    steps = [
        *init(),
        1,
        call(1, "bash", {"command": "sleep 20"}),
        call(2, "bash", {"command": "sleep 3; echo late"}),
        None,
        request(3, "resources/list"),
        ("id", 3),
        notify("notifications/cancelled", {"requestId": 1}),
        ("id", 2),
        request(5, "ping"),
        ("id", 5),
    ]
    messages = same_as_sdk(project, steps)
    assert [m["id"] for m in messages] == [0, 3, 2, 5]


def test_full_outputs_as_resources(project: Path) -> None:
    steps = [
        *init(),
        1,
        call(1, "bash", {"command": "seq 1 30000"}),
        2,
        request(2, "resources/list"),
        3,
    ]
    messages = same_as_sdk(project, steps)
    link = messages[1]["result"]["content"][-1]
    assert (link["type"], link["uri"]) == ("resource_link", "pi://output/1/" + link["name"])
    assert messages[2]["result"]["resources"][0]["uri"] == link["uri"]


def test_an_oversized_message(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = request(1, "ping", {"pad": "x" * (64 * 1024 * 1024 + 10)})
    same_as_sdk(project, [*init(), 1, big, None, request(2, "ping"), 2])


def test_elicitation_clients_get_the_sdk(project: Path) -> None:
    steps = [*init(capabilities={"elicitation": {}}), 1, call(1, "read", {"path": "a.txt"}), 2]
    same_as_sdk(project, steps)


def test_the_handshake_versions_are_the_sdks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from pi_builtin_tools.mcp.stdio import HANDSHAKE_VERSIONS

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


PROBE = """
import sys
from pi_core._cli import main
sys.argv = ["pi", *sys.argv[1:]]
try:
    status = main()
finally:
    print(sorted(n for n in sys.modules if n == "mcp" or n.startswith(("mcp.", "mcp_types"))),
          file=sys.stderr)
    client = ("client_tools", "connections", "mcp_config", "oauth")
    print(sorted(n for n in sys.modules if n.startswith("pi_builtin_tools.mcp.")
                 and n.rsplit(".", 1)[1] in client), file=sys.stderr)
sys.exit(status)
"""


def test_a_session_of_the_hot_methods_imports_no_mcp_module(project: Path) -> None:
    lines = [*init(), request(1, "tools/list"), call(2, "read", {"path": "a.txt"})]
    env = clean_env()
    env.pop("_PI_MCP_STDIO_SDK", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, "mcp", "serve", "--cwd", str(project)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(line + "\n" for line in lines).encode())
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(3)]
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": READ_OK}
    # neither the SDK nor pi's MCP client (its config reader, connections, OAuth)
    assert err.decode().splitlines()[-2:] == ["[]", "[]"]


def test_a_lone_surrogate_a_client_sent_comes_back_escaped(project: Path) -> None:
    """A lone surrogate (JSON's ``\\ud800``) in an id or a tool name is echoed with the same
    JSON escape (UTF-8 cannot carry it): the server answers and lives on. It exited with a
    traceback (``UnicodeEncodeError`` in the writer), failing every call then running."""
    steps = [
        *init(),
        '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"\\ud800x"}}',
        request(4, "ping"),
        4,
    ]
    messages = run(project, steps, sdk=False)
    by_id = {m["id"]: m for m in messages[1:]}
    assert by_id == {
        "\ud800": {"jsonrpc": "2.0", "id": "\ud800", "result": {}},
        3: {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {
                "content": [{"type": "text", "text": "Tool \ud800x not found"}],
                "isError": True,
            },
        },
        4: {"jsonrpc": "2.0", "id": 4, "result": {}},
    }


def test_a_line_nested_too_deep_for_the_loop_goes_to_the_sdk(project: Path) -> None:
    """1,000 nested arrays: the loop's parser gives up (``RecursionError``) and hands the line
    to the SDK, which answers it as it answers lines it cannot read (not at all); the server
    lives on. It exited with a traceback."""
    deep = "[" * 1000 + "]" * 1000
    line = (
        '{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"read",'
        f'"arguments":{{"path":"a.txt","x":{deep}}}}}}}'
    )
    messages = run(project, [*init(), line, request(35, "ping"), ("id", 35)], sdk=False)
    assert [m.get("id") for m in messages] == [0, 35]


def test_stopping_the_server_answers_every_running_call_alike(project: Path) -> None:
    """SIGINT while two calls run, one with a progress token: both are answered "Connection
    closed", as at the end of the input (the one with a token was not answered)."""
    import signal

    server = Server(project, sdk=False)
    try:
        for line in init():
            server.send(line)
        server.send(call(1, "bash", {"command": "sleep 30"}))
        server.send(call(2, "bash", {"command": "sleep 30"}, token=7))
        server.wait_for(1)
        time.sleep(1.0)  # both running
        server.proc.send_signal(signal.SIGINT)
        while server._read(10):
            pass
        assert server.proc.wait(30) == 130
    finally:
        server.shut()
    closed = {"code": -32000, "message": "Connection closed"}
    answers = {m["id"]: m.get("error") for m in server.messages[1:] if "id" in m}
    assert answers == {1: closed, 2: closed}
