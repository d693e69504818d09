"""MCP servers as pi tools, end to end: real ``pi`` processes with real MCP servers.

The servers: ``@modelcontextprotocol/server-everything`` and ``server-filesystem`` from npm
(installed with ``npm install --prefix ~/.cache/pi-mcp-npm @modelcontextprotocol/server-filesystem
@modelcontextprotocol/server-everything``; the tests skip without them, and fail under ``CI=true``),
and ``mcp_test_server.py`` (the ``mcp`` SDK's ``MCPServer``) for results the public servers do not
give: long text, an error without text, a crash, a hang.

Each test runs ``pi`` with its own ``XDG_CACHE_HOME`` (the tool-list cache) and
``PI_CODING_AGENT_DIR`` (Pi's user ``mcp.json``), so nothing of the user's leaks in.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support import command_line, descendants

pytestmark = pytest.mark.slow  # real MCP servers (npm and the mcp SDK) below real pi processes

NPM_PREFIX = Path(os.environ.get("PI_MCP_NPM_PREFIX", Path.home() / ".cache" / "pi-mcp-npm"))
NPM_SERVERS = NPM_PREFIX / "node_modules" / "@modelcontextprotocol"
TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
SNIPPETS = Path(__file__).parents[2] / "docs" / "snippets"
PI = Path(sys.executable).with_name("pi")


def _require_npm_servers() -> Path:
    missing = [
        name
        for name in ("server-everything", "server-filesystem")
        if not (NPM_SERVERS / name / "dist" / "index.js").is_file()
    ]
    if missing:
        reason = (
            f"npm packages missing in {NPM_PREFIX}: {', '.join('@modelcontextprotocol/' + m for m in missing)} "
            f"(npm install --prefix {NPM_PREFIX} @modelcontextprotocol/server-filesystem "
            "@modelcontextprotocol/server-everything)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install them")
        pytest.skip(reason)
    return NPM_SERVERS


@pytest.fixture
def npm_servers(require_program: Callable[[str], str]) -> Path:
    """The folder of the npm MCP servers (skip, or fail under CI, when absent)."""
    require_program("node")
    return _require_npm_servers()


class Pi:
    """Runs ``pi`` in ``cwd`` with a private cache and Pi agent dir."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.cache = tmp_path / "cache"
        self.agent_dir = tmp_path / "agent"
        self.agent_dir.mkdir()
        self.env = {
            **os.environ,
            "XDG_CACHE_HOME": str(self.cache),
            "PI_CODING_AGENT_DIR": str(self.agent_dir),
            "MCP_TEST_MODE_FILE": str(tmp_path / "mode"),
            "NO_COLOR": "1",
        }
        self.mode_file = tmp_path / "mode"

    def config(self, text: str) -> None:
        (self.cwd / "pi.toml").write_text(text)

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PI), *args],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def call(
        self, tool: str, arguments: Any, *extra: str, options: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], str]:
        """``pi EXTRA... call --json OPTIONS... TOOL ARGS``: the result message and stderr."""
        done = self.run(*extra, "call", "--json", *options, tool, json.dumps(arguments))
        lines = done.stdout.strip().splitlines()
        assert len(lines) == 1, (done.stdout, done.stderr)
        message = json.loads(lines[0])
        assert done.returncode == (1 if message["isError"] else 0)
        return message, done.stderr

    def tools(self) -> list[dict[str, Any]]:
        done = self.run("tools", "--json")
        assert done.returncode == 0, done.stderr
        infos: list[dict[str, Any]] = json.loads(done.stdout)
        return infos

    def codemode(self, script: str) -> str:
        done = self.run("call", "codemode", json.dumps({"code": script}))
        assert done.returncode == 0, (done.stdout, done.stderr)
        return done.stdout


def stdio_server(name: str, command: str, *args: str, extra: str = "") -> str:
    """A ``[mcp.servers.NAME]`` table."""
    return (
        f"[mcp.servers.{name}]\ncommand = {json.dumps(command)}\n"
        f"args = {json.dumps(list(args))}\n{extra}\n"
    )


def test_server(extra: str = "timeout = 60\n") -> str:
    # 60 s: the SDK server's start (its imports take over a second of CPU) on a machine whose
    # cores pytest -n saturates; the tests that time a timeout set their own
    return stdio_server("t", sys.executable, str(TEST_SERVER), extra=extra)


test_server.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def pi(tmp_path: Path) -> Pi:
    return Pi(tmp_path)


def texts(message: dict[str, Any]) -> list[str]:
    return [block["text"] for block in message["content"] if block["type"] == "text"]


def no_test_server_left() -> None:
    """No process of ``mcp_test_server.py`` runs any more."""
    assert _test_server_pids() == []


# -- the public servers ------------------------------------------------------------------------


def everything_and_fs(npm: Path, data: Path) -> str:
    return stdio_server(
        "everything", "node", str(npm / "server-everything" / "dist" / "index.js")
    ) + stdio_server(
        "fs",
        "node",
        str(npm / "server-filesystem" / "dist" / "index.js"),
        str(data),
        extra='exposure = "direct"\ntool_exposure = { "write_file" = "hidden", "*_directory*" = "deferred" }',
    )


def test_pi_tools_lists_mcp_tools_named_labelled_and_exposed_as_pi_1_6(
    pi: Pi, npm_servers: Path
) -> None:
    pi.config(everything_and_fs(npm_servers, pi.cwd))
    infos = {info["name"]: info for info in pi.tools()}
    echo = infos["mcp__everything__echo"]
    assert (
        echo["label"],
        echo["description"],
        echo["exposure"],
        echo["active"],
        echo["callable"],
    ) == (
        "everything/echo",
        "Echoes back the input string",
        "deferred",  # MCP exposure "codemode" (the default) is pi's "deferred"
        False,
        True,
    )
    assert echo["namespace"] == "mcp__everything"  # where the tool comes from
    assert "namespace" not in infos["read"]
    plain = pi.run("tools").stdout
    assert plain.split("mcp__everything__echo ", 1)[1].split("\n")[:3] == [
        "[parallel] deferred, inactive, callable by nested calls and pi call",
        "  namespace: mcp__everything",
        "  Echoes back the input string",
    ]
    # The server's schema passes through as it lists it (its description of `message` comes and
    # goes with the zod version npm resolves for the pinned server package).
    assert list(echo["parameters"]["properties"]) == ["message"]
    assert echo["parameters"]["properties"]["message"]["type"] == "string"
    # "-" in MCP names becomes "_"
    assert infos["mcp__everything__get_structured_content"]["label"] == (
        "everything/get-structured-content"
    )
    assert [
        (name, infos[name]["exposure"], infos[name]["active"])
        for name in (
            "mcp__fs__read_text_file",
            "mcp__fs__write_file",
            "mcp__fs__list_directory",
            "mcp__fs__create_directory",
        )
    ] == [
        ("mcp__fs__read_text_file", "direct", True),
        ("mcp__fs__write_file", "hidden", False),
        ("mcp__fs__list_directory", "deferred", False),
        ("mcp__fs__create_directory", "deferred", False),
    ]
    # server-everything has resources: the resource tools, with its exposure
    assert [
        (infos[n]["label"], infos[n]["exposure"])
        for n in ("list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource")
    ] == [
        ("list_mcp_resources", "deferred"),
        ("list_mcp_resource_templates", "deferred"),
        ("read_mcp_resource", "deferred"),
    ]
    assert infos["read_mcp_resource"]["description"] == (
        "Read a specific resource from an MCP server given the server name and resource URI."
    )


def test_pi_call_reaches_mcp_tools_whatever_their_exposure(pi: Pi, npm_servers: Path) -> None:
    data = pi.cwd / "data"
    data.mkdir()
    (data / "hello.txt").write_text("hello from a file\n")
    pi.config(everything_and_fs(npm_servers, data))
    message, _ = pi.call("mcp__everything__echo", {"message": "hi"})
    assert (message["content"], message["details"], message["isError"]) == (
        [{"type": "text", "text": "Echo: hi"}],
        {"server": "everything", "tool": "echo"},
        False,
    )
    message, _ = pi.call("mcp__fs__read_text_file", {"path": str(data / "hello.txt")})
    assert texts(message) == ["hello from a file\n"]
    # hidden: never declared to a model, but `pi call` reaches any registered tool
    message, _ = pi.call("mcp__fs__write_file", {"path": str(data / "new.txt"), "content": "x"})
    assert message["isError"] is False
    assert (data / "new.txt").read_text() == "x"
    # the server's own isError result
    missing = data / "missing.txt"
    message, _ = pi.call("mcp__fs__read_text_file", {"path": str(missing)})
    assert (texts(message), message["details"], message["isError"]) == (
        [f"ENOENT: no such file or directory, open '{missing}'"],
        {"server": "fs", "tool": "read_text_file"},
        True,
    )
    # pi validates the arguments against the MCP tool's input schema before the server sees them
    message, _ = pi.call("mcp__everything__get_sum", {"a": 1})
    assert message["isError"] is True
    assert texts(message)[0].startswith('Validation failed for tool "mcp__everything__get_sum"')


def test_embedded_resources_links_images_and_structured_content_map_as_pi_1_6(
    pi: Pi, npm_servers: Path
) -> None:
    pi.config(everything_and_fs(npm_servers, pi.cwd))
    message, _ = pi.call(
        "mcp__everything__get_resource_reference", {"resourceType": "Text", "resourceId": 2}
    )
    got = texts(message)
    assert got[0] == "Returning resource reference for Resource 2:"
    assert re.fullmatch(
        r"Resource 2: This is a plaintext resource created at .+", got[1]
    )  # unwrapped
    assert got[2] == "You can access this resource using the URI: demo://resource/dynamic/text/2"
    message, _ = pi.call("mcp__everything__get_resource_links", {"count": 2})
    assert texts(message) == [
        "Here are 2 resource links to resources available in this server:",
        '[Resource demo://resource/dynamic/blob/1 "Blob Resource 1" (text/plain): Resource 1: '
        'plaintext resource. Read it with read_mcp_resource (server "everything")]',
        '[Resource demo://resource/dynamic/text/2 "Text Resource 2" (text/plain): Resource 2: '
        'plaintext resource. Read it with read_mcp_resource (server "everything")]',
    ]
    message, _ = pi.call("mcp__everything__get_tiny_image", {})
    assert [block["type"] for block in message["content"]] == ["text", "image", "text"]
    assert message["content"][1]["mimeType"] == "image/png"
    # structured_content (never sent to the model) is the whole CallToolResult without _meta:
    # codemode scripts get it
    out = pi.codemode(
        "const r = await tools.mcp__everything__get_structured_content({location: 'Chicago'});\n"
        "return JSON.stringify([Object.keys(r), Object.keys(r.structuredContent), "
        "r.content[0].text === JSON.stringify(r.structuredContent)]);"
    )
    assert json.loads(out.split("Output:\n", 1)[1].strip()) == [
        ["content", "structuredContent"],
        ["temperature", "conditions", "humidity"],
        True,
    ]


def test_resource_tools_list_and_read_resources(pi: Pi, npm_servers: Path) -> None:
    pi.config(everything_and_fs(npm_servers, pi.cwd))
    message, _ = pi.call("list_mcp_resources", {"server": "everything"})
    listing = json.loads(texts(message)[0])
    assert listing["server"] == "everything"
    assert listing["resources"][0] == {
        "server": "everything",
        "name": "architecture.md",
        "uri": "demo://resource/static/document/architecture.md",
        "description": "Static document file exposed from /docs: architecture.md",
        "mimeType": "text/markdown",
    }
    assert message["details"] == {"server": "everything", "tool": "list_mcp_resources"}
    message, _ = pi.call(
        "read_mcp_resource",
        {"server": "everything", "uri": "demo://resource/static/document/features.md"},
    )
    assert texts(message)[0].startswith("# Everything Server - Features\n")
    message, _ = pi.call("read_mcp_resource", {"server": "fs", "uri": "file:///x"})
    assert texts(message) == [
        'MCP server "fs" has no resources. Servers with resources: everything'
    ]
    message, _ = pi.call("list_mcp_resources", {"cursor": "abc"})
    assert texts(message) == ["cursor can only be used when a server is specified"]


def test_a_policy_plugin_blocks_one_mcp_tool_and_the_audit_log_records_it(
    pi: Pi, npm_servers: Path, tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "no_sums.py").write_text(
        "from pi_core import BeforeToolCallResult, hookimpl\n\n"
        "@hookimpl\n"
        "def pi_before_tool_call(context):\n"
        '    if context.tool_call.name == "mcp__everything__get_sum":\n'
        '        return BeforeToolCallResult(block=True, reason="sums are not allowed here")\n'
    )
    pi.env["PYTHONPATH"] = str(plugins)
    pi.config(everything_and_fs(npm_servers, pi.cwd))
    message, _ = pi.call(
        "mcp__everything__get_sum",
        {"a": 1, "b": 2},
        "-p",
        "no_sums",
        options=("--audit", "audit.jsonl"),
    )
    assert (texts(message), message["details"], message["isError"]) == (
        ["sums are not allowed here"],
        {},
        True,
    )
    line = json.loads((pi.cwd / "audit.jsonl").read_text())
    assert {k: line[k] for k in ("tool", "arguments", "phase", "decision", "source", "reason")} == {
        "tool": "mcp__everything__get_sum",
        "arguments": {"a": 1, "b": 2},
        "phase": "before",
        "decision": "deny",
        "source": "no_sums",
        "reason": "sums are not allowed here",
    }
    message, _ = pi.call("mcp__everything__get_sum", {"a": 1, "b": 2}, "-p", "no_sums")
    assert texts(message) == ["sums are not allowed here"]
    message, _ = pi.call("mcp__everything__echo", {"message": "ok"}, "-p", "no_sums")
    assert texts(message) == ["Echo: ok"]


# -- results pi maps (the test server) ------------------------------------------------------------


def test_names_over_64_characters_or_colliding_get_the_sha256_suffix(pi: Pi) -> None:
    pi.config(test_server())
    labels = {
        info["label"]: info["name"] for info in pi.tools() if info["name"].startswith("mcp__t__")
    }
    assert labels == {
        "t/lines": "mcp__t__lines",
        "t/silent_error": "mcp__t__silent_error",
        "t/structured_only": "mcp__t__structured_only",
        "t/crash": "mcp__t__crash",
        "t/hang": "mcp__t__hang",
        # sha256("t\0a-b")[:8] = cf6af05a, sha256("t\0a_b")[:8] = 4e5d5071
        "t/a-b": "mcp__t__a_b_cf6af05a",
        "t/a_b": "mcp__t__a_b_4e5d5071",
        # 55 characters + "_" + 8 hex digits = 64
        "t/a_tool_with_a_really_long_name_that_goes_past_the_provider_limit": (
            "mcp__t__a_tool_with_a_really_long_name_that_goes_past_t_7943e873"
        ),
        "t/greet": "mcp__t__greet",
    }
    infos = {info["name"]: info for info in pi.tools()}
    assert infos["mcp__t__a_tool_with_a_really_long_name_that_goes_past_t_7943e873"][
        "description"
    ] == ("MCP tool a_tool_with_a_really_long_name_that_goes_past_the_provider_limit from server t")


def test_text_over_20_kb_is_cut_in_the_middle_and_saved_in_full(pi: Pi) -> None:
    pi.config(test_server())
    message, _ = pi.call("mcp__t__lines", {"count": 1000})
    full = "".join(f"line {i} " + "x" * 40 + "\n" for i in range(1, 1001))
    raw = full.encode()
    assert len(raw) == 49893
    path = message["details"]["fullOutputPath"]
    assert message["details"] == {"server": "t", "tool": "lines", "fullOutputPath": path}
    assert Path(path).read_text() == full
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    head, tail = raw[:10240].decode(), raw[len(raw) - 10240 :].decode()
    assert texts(message) == [
        "Warning: truncated output (original token count: 12474)\n"
        "Total output lines: 1000\n\n"
        f"{head}…{len(raw) - 20480} chars truncated…{tail}"
        f"\n\n[Full output: {path} (read it with offset/limit)]"
    ]
    os.unlink(path)
    message, _ = pi.call("mcp__t__lines", {"count": 10})
    assert "fullOutputPath" not in message["details"]


def test_error_without_text_and_structured_content_without_blocks(pi: Pi) -> None:
    pi.config(test_server())
    message, _ = pi.call("mcp__t__silent_error", {})
    assert (texts(message), message["details"], message["isError"]) == (
        ["MCP tool t/silent_error returned an error"],
        {"server": "t", "tool": "silent_error"},
        True,
    )
    message, _ = pi.call("mcp__t__structured_only", {})
    assert texts(message) == ['{\n  "answer": 42,\n  "items": [\n    "a",\n    "é"\n  ]\n}']


def test_a_server_that_crashes_mid_session_is_restarted_once(pi: Pi) -> None:
    pi.config(test_server())
    script = (
        "const out = [];\n"
        'for (const step of ["greet", "crash", "greet", "crash", "greet"]) {\n'
        "  try {\n"
        '    const r = await tools["mcp__t__" + step](step === "greet" ? {name: "pi"} : {});\n'
        '    out.push(step + ": " + r.content[0].text);\n'
        '  } catch (e) { out.push(step + ": " + e.message); }\n'
        "}\n"
        'return out.join("\\n");'
    )
    out = pi.codemode(script)
    assert out.split("Output:\n", 1)[1] == (
        "greet: hello pi\n"
        'crash: MCP server "t": MCP connection closed\n'
        "test server: crashing now\n"
        "greet: hello pi\n"
        'crash: MCP server "t": MCP connection closed\n'
        "test server: crashing now\n"
        'greet: MCP server "t" exited again after a restart; it stays stopped for this session\n'
    )
    no_test_server_left()


def test_a_request_that_hangs_is_an_error_after_the_timeout(pi: Pi) -> None:
    # the server's start has the same timeout as a request: a server without the SDK's imports
    # (they take over a second of CPU), so a loaded machine still starts it well within 4 s
    pi.mode_file.write_text("hang-call")
    pi.config(test_server("timeout = 4\n"))
    message, _ = pi.call("mcp__t__hang", {})
    assert (texts(message), message["isError"]) == (
        ['MCP server "t": MCP request timed out after 4000ms'],
        True,
    )
    no_test_server_left()


def test_a_server_that_exits_at_once_or_hangs_at_start_is_an_error_naming_it(pi: Pi) -> None:
    # The tool list is cached with a start timeout a loaded machine meets (the timeout is not
    # part of the cache key); the failures below are timed with 2 s.
    pi.config(test_server("timeout = 30\n"))
    assert "mcp__t__greet" in {info["name"] for info in pi.tools()}  # caches the tool list
    pi.config(test_server("timeout = 2\n"))
    pi.mode_file.write_text("exit")
    message, _ = pi.call("mcp__t__greet", {"name": "x"})
    assert (texts(message), message["isError"]) == (
        ['MCP server "t" failed to connect: MCP connection closed\ntest server: refusing to start'],
        True,
    )
    pi.mode_file.write_text("hang")
    message, _ = pi.call("mcp__t__greet", {"name": "x"})
    assert texts(message) == [
        'MCP server "t" failed to connect: MCP request timed out after 2000ms'
    ]
    no_test_server_left()
    # without a cached tool list the server has no tools: a warning, and `Tool ... not found`
    pi.env["XDG_CACHE_HOME"] = str(pi.cache) + "-empty"
    message, stderr = pi.call("mcp__t__greet", {"name": "x"})
    assert texts(message) == ["Tool mcp__t__greet not found"]
    assert stderr == (
        'pi: mcp: MCP server "t" failed to connect: MCP request timed out after 2000ms '
        "(no tools registered; see pi mcp list)\n"
    )
    no_test_server_left()


def test_pi_mcp_list_shows_state_and_tools(pi: Pi) -> None:
    pi.mode_file.write_text("")
    pi.config(
        test_server('timeout = 60\ntool_exposure = { "greet" = "direct", "a*" = "hidden" }\n')
        + stdio_server("off", "nowhere", extra="enabled = false")
        + stdio_server("gone", "/nonexistent/mcp-server", extra='exposure = "deferred"')
    )
    done = pi.run("mcp", "list")
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == (
        "t: connected, 9 tools (codemode, pi.toml)\n"
        f"  {sys.executable} {TEST_SERVER}\n"
        "  mcp__t__lines [deferred]\n"
        "  mcp__t__silent_error [deferred]\n"
        "  mcp__t__structured_only [deferred]\n"
        "  mcp__t__crash [deferred]\n"
        "  mcp__t__hang [deferred]\n"
        "  mcp__t__a_b_cf6af05a [hidden]\n"
        "  mcp__t__a_b_4e5d5071 [hidden]\n"
        "  mcp__t__a_tool_with_a_really_long_name_that_goes_past_t_7943e873 [hidden]\n"
        "  mcp__t__greet [direct]\n"
        "  offers resources\n"
        "off: disabled (codemode, pi.toml)\n"
        "  nowhere\n"
        "gone: failed (deferred, pi.toml)\n"
        "  /nonexistent/mcp-server\n"
        "  cannot start the server: no such file or directory: /nonexistent/mcp-server (the "
        "command or its cwd)\n"
    )
    done = pi.run("mcp", "list", "--json")
    report = json.loads(done.stdout)
    assert [(s["name"], s["state"]) for s in report["servers"]] == [
        ("t", "connected"),
        ("off", "disabled"),
        ("gone", "failed"),
    ]
    assert report["servers"][0]["tools"][-1] == {
        "name": "mcp__t__greet",
        "mcpName": "greet",
        "exposure": "direct",
    }
    no_test_server_left()


def test_pi_mcp_list_with_a_missing_cwd_exits_2_with_one_line(pi: Pi) -> None:
    (pi.cwd / "file").write_text("")
    done = pi.run("mcp", "list", "--cwd", "missing")
    assert (done.returncode, done.stderr, done.stdout) == (
        2,
        "pi: error: --cwd missing: no such directory\n",
        "",
    )
    done = pi.run("mcp", "list", "--json", "--cwd", "file")
    assert (done.returncode, done.stderr, done.stdout) == (
        2,
        "pi: error: --cwd file: not a directory\n",
        "",
    )


def test_pi_mcp_list_without_servers(pi: Pi) -> None:
    done = pi.run("mcp", "list")
    assert (done.returncode, done.stdout) == (
        0,
        "No MCP servers configured. Add [mcp.servers.NAME] to pi.toml, or servers to "
        "~/.pi/agent/mcp.json.\n",
    )


def test_pi_mcp_json_files_are_read_with_pi_s_rules(pi: Pi) -> None:
    (pi.agent_dir / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "t": {
                        "command": sys.executable,
                        "args": [str(TEST_SERVER)],
                        "env": {"MCP_TEST_MODE_FILE": "${MODE_FILE_FOR_TEST}"},
                        "exposure": "direct",
                    },
                    "old": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                }
            }
        )
    )
    pi.env["MODE_FILE_FOR_TEST"] = str(pi.mode_file)
    pi.mode_file.write_text("exit")  # proves ${MODE_FILE_FOR_TEST} reached the server
    done = pi.run("mcp", "list")
    assert done.stdout.splitlines()[0] == "t: failed (direct, user)"
    assert done.stdout.splitlines()[-1] == (
        f'config error: {pi.agent_dir / "mcp.json"}: server "old": legacy SSE transport is not '
        "supported; use the streamable HTTP URL"
    )
    pi.mode_file.write_text("")
    # the project file overrides only enabled/exposure/toolExposure, and only when allowed
    (pi.cwd / ".pi").mkdir()
    (pi.cwd / ".pi" / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {"enabled": False}}}))
    assert pi.run("mcp", "list").stdout.splitlines()[0] == "t: connected, 9 tools (direct, user)"
    pi.config("[mcp]\nproject_mcp_json = true\n")
    assert pi.run("mcp", "list").stdout.splitlines()[:3] == [
        "t: disabled (direct, user)",
        f"  {sys.executable} {TEST_SERVER}",
        f"  project override: {pi.cwd / '.pi' / 'mcp.json'}",
    ]
    no_test_server_left()


def test_an_invalid_mcp_table_is_a_one_line_config_error(pi: Pi) -> None:
    pi.config('[mcp.servers.x]\ncommand = "a"\ncomand = "b"\n')
    done = pi.run("tools")
    assert (done.returncode, done.stderr) == (
        2,
        f"pi: error: {pi.cwd / 'pi.toml'}: mcp.servers.x.comand: unknown key\n",
    )


def test_a_streamable_http_server_with_headers_from_the_environment(pi: Pi) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP test server did not start"
                time.sleep(0.1)
        pi.config(
            f'[mcp.servers.h]\nurl = "http://127.0.0.1:{port}/mcp"\n'
            'headers = { Authorization = "Bearer ${PI_TEST_TOKEN}" }\n'
        )
        pi.env["PI_TEST_TOKEN"] = "secret"
        message, _ = pi.call("mcp__h__greet", {"name": "http"})
        assert (texts(message), message["details"]) == (
            ["hello http"],
            {"server": "h", "tool": "greet"},
        )
        del pi.env["PI_TEST_TOKEN"]
        message, _ = pi.call("mcp__h__greet", {"name": "http"})
        assert texts(message) == [
            'MCP server "h" failed to connect: Failed to resolve MCP server "h" header '
            '"Authorization" from environment variable: PI_TEST_TOKEN'
        ]
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_pi_run_declares_direct_mcp_tools_activates_codemode_and_reports_progress(
    pi: Pi, npm_servers: Path
) -> None:
    everything = str(npm_servers / "server-everything" / "dist" / "index.js")
    pi.config(
        stdio_server(
            "everything",
            "node",
            everything,
            extra='tool_exposure = { "trigger-long-running-operation" = "direct" }',
        )
    )
    call = {
        "type": "toolCall",
        "id": "c1",
        "name": "mcp__everything__trigger_long_running_operation",
        "arguments": {"duration": 1, "steps": 2},
    }
    (pi.cwd / "model.jsonl").write_text(
        json.dumps({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        + "\n"
        + json.dumps(
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}
        )
        + "\n"
    )
    done = pi.run("run", "--model", "scripted:model.jsonl", "--json", "go")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    declared = next(e for e in events if e["type"] == "message_end")["message"]["toolsAdded"]
    names = [tool["name"] for tool in declared]
    # direct: declared at once; the other (codemode-exposure) tools through codemode, activated
    assert "mcp__everything__trigger_long_running_operation" in names
    assert "codemode" in names
    assert "mcp__everything__echo" not in names
    updates = [e["partialResult"] for e in events if e["type"] == "tool_execution_update"]
    details = {"server": "everything", "tool": "trigger-long-running-operation"}
    assert updates == [
        {"content": [{"type": "text", "text": "Progress 1/2"}], "details": details},
        {"content": [{"type": "text", "text": "Progress 2/2"}], "details": details},
    ]
    end = next(e for e in events if e["type"] == "tool_execution_end")["result"]
    text = "Long running operation completed. Duration: 1 seconds, Steps: 2."
    assert end["content"] == [{"type": "text", "text": text}]
    assert end["structuredContent"] == {"content": [{"type": "text", "text": text}]}


def test_the_how_to_s_policy_sees_the_mcp_annotations(pi: Pi, npm_servers: Path) -> None:
    data = pi.cwd / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    pi.env["PYTHONPATH"] = str(SNIPPETS)
    pi.config(everything_and_fs(npm_servers, data))
    message, _ = pi.call(
        "mcp__fs__move_file",
        {"source": str(data / "a.txt"), "destination": str(data / "b.txt")},
        "-p",
        "mcp_policy",
    )
    assert (texts(message), message["isError"]) == (
        ["fs/move_file changes files; ask the user to run it"],
        True,
    )
    assert (data / "a.txt").exists()
    message, _ = pi.call(
        "mcp__fs__read_text_file", {"path": str(data / "a.txt")}, "-p", "mcp_policy"
    )
    assert texts(message) == ["a\n"]


def test_a_tool_the_server_no_longer_offers_and_the_refreshed_cache(pi: Pi) -> None:
    pi.config(test_server())
    assert "mcp__t__lines" in {info["name"] for info in pi.tools()}
    pi.mode_file.write_text("greet-only")
    message, _ = pi.call("mcp__t__lines", {"count": 1})
    assert texts(message) == ['MCP tool "t/lines" is no longer available.']
    # that session saw the server's tools: the next one registers only those
    assert [i["name"] for i in pi.tools() if i["name"].startswith("mcp__t__")] == ["mcp__t__greet"]
    no_test_server_left()


# -- the hooks, in process (the Python API) --------------------------------------------------------


async def test_pi_register_tools_pi_session_start_and_pi_session_end_with_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_core import AgentContext, ToolCall, build_session, make_plugin_manager, run_tool_call

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    pm = make_plugin_manager(autoload=False, plugins=["mcp"])
    config = {
        "mcp": {
            "servers": {
                "t": {"command": sys.executable, "args": [str(TEST_SERVER)], "exposure": "direct"}
            }
        }
    }
    session = build_session(pm, tmp_path, config)  # pi_register_tools lists the tools
    state = session.session_context.state["mcp"]
    assert "mcp__t__greet" in session.tools_by_name
    assert state.connections == {}  # listed, then stopped: started again on first use
    async with session:  # pi_session_start, ..., pi_session_end
        call = ToolCall(id="c1", name="mcp__t__greet", arguments={"name": "api"})
        context = AgentContext(tools=session.tools)
        outcome = await run_tool_call(call, context, session.loop_config())
        assert (outcome.result.content[0].text, outcome.is_error) == ("hello api", False)
        assert state.connections["t"].state == "connected"
    assert state.connections["t"].state == "closed"
    no_test_server_left()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_server_does_not_outlive_a_killed_pi(pi: Pi, sig: signal.Signals) -> None:
    """pi killed in the middle of a call (no clean-up at all with SIGKILL): the server, which
    ignores the end of its stdin while the hanging tool runs, is stopped by its watchdog."""
    pi.config(test_server("timeout = 60\n"))
    proc = subprocess.Popen(
        [str(PI), "call", "mcp__t__hang", "{}"],
        cwd=pi.cwd,
        env=pi.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):  # until the server runs (a hang fails the test at its timeout)
            if _test_server_pids():
                break
            time.sleep(0.1)
        assert _test_server_pids()
        time.sleep(1)  # the call reached the hanging tool
    finally:
        proc.send_signal(sig)
        proc.wait(30)
    for _ in range(100):
        if not _test_server_pids():
            break
        time.sleep(0.1)
    no_test_server_left()


def _test_server_pids() -> list[int]:
    """Living ``mcp_test_server.py`` processes of this test process (its descendants: orphans
    stay below it, ``tests/conftest.py``), not those another ``pytest -n`` worker runs."""
    return [
        pid
        for pid in descendants(os.getpid(), living=True)
        if str(TEST_SERVER).encode() in command_line(pid)
    ]
