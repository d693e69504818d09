"""``pi mcp serve`` driven by MCP clients nobody here wrote: the Python SDK's ``ClientSession``
over stdio and streamable HTTP, and the official MCP Inspector CLI (npm
``@modelcontextprotocol/inspector``, installed with ``npm install --prefix ~/.cache/pi-mcp-npm
@modelcontextprotocol/inspector``). Every server is a real ``pi`` process."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

import pi_core
from mcp import Client, types

pytestmark = pytest.mark.slow  # real pi servers and the npm MCP Inspector

PI = str(Path(sys.executable).with_name("pi"))
NPM_PREFIX = Path.home() / ".cache" / "pi-mcp-npm"
INSPECTOR_CLI = (
    NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
)
CALLABLE_TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"]
DENY_RM = '[sandbox.policy]\ndeny = [["rm"]]\n'
LIFECYCLE_PLUGIN = textwrap.dedent(
    """
    import json, os
    from pi_core import hookimpl

    def _log(context, event):
        with open(os.environ["PI_LIFECYCLE_LOG"], "a") as f:
            f.write(json.dumps({"event": event, "host": context.host, "pid": os.getpid(),
                                "session": context.session_id, "reason": context.reason}) + "\\n")

    @hookimpl
    def pi_session_start(context):
        print("stray output from a plugin")  # must never reach the protocol on stdout
        _log(context, "start")

    @hookimpl
    def pi_session_end(context):
        _log(context, "end")
    """
)


# -- helpers -----------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A session folder with ``a.txt`` and an empty ``pi.toml`` next to it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("hello\n")
    (tmp_path / "pi.toml").write_text("")
    return work


def config_of(project: Path, text: str | None = None) -> str:
    path = project.parent / "pi.toml"
    if text is not None:
        path.write_text(text)
    return str(path)


def clean_env() -> dict[str, str]:
    """This process's environment without the caller's ``PI_*`` settings, but with the suite's
    isolation from third-party plugins (``tests/conftest.py``)."""
    keep = "PI_DISABLE_THIRD_PARTY_AUTOLOAD"
    return {k: v for k, v in os.environ.items() if not k.startswith("PI_") or k == keep}


def server_env(project: Path, **extra: str) -> dict[str, str]:
    env = clean_env()
    env["PYTHONPATH"] = str(project.parent)
    env["PI_LIFECYCLE_LOG"] = str(project.parent / "lifecycle.jsonl")
    env["XDG_STATE_HOME"] = str(project.parent / "state")
    env["XDG_CACHE_HOME"] = str(project.parent / "cache")  # pi's MCP tool lists, per test
    env.update(extra)
    return env


def lifecycle(project: Path) -> list[dict[str, Any]]:
    path = project.parent / "lifecycle.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@contextlib.asynccontextmanager
async def stdio_session(
    project: Path,
    *serve_args: str,
    config: str | None = None,
    plugin: bool = False,
    env: dict[str, str] | None = None,
    **client_options: Any,
) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` (with ``client_options``) on ``pi mcp serve --cwd PROJECT
    SERVE_ARGS`` over stdio (the server's stderr goes to ``stderr.log`` beside PROJECT)."""
    (project.parent / "lifecycle_probe.py").write_text(LIFECYCLE_PLUGIN)
    args = ["--config", config or config_of(project)]
    if plugin:
        args += ["-p", "lifecycle_probe"]
    params = StdioServerParameters(
        command=PI,
        args=[*args, "mcp", "serve", "--cwd", str(project), *serve_args],
        env=server_env(project, **(env or {})),
        cwd=str(project),
    )
    with open(project.parent / "stderr.log", "a") as errlog:  # noqa: ASYNC230 (set-up)
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, **client_options) as session:
                await session.initialize()
                yield session


TOKENS: dict[str, str] = {}
"""The bearer token of each running ``http_server`` by URL (read from the file it names)."""
STARTUP: dict[str, list[str]] = {}
"""What each running ``http_server`` printed on stderr until it served, by URL."""


@contextlib.asynccontextmanager
async def http_server(
    project: Path, *serve_args: str, config: str | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[str]:
    """``pi mcp serve --http 127.0.0.1:0`` as a process; yields the URL it prints (its token,
    when it generated one, is ``TOKENS[url]``). Ends it with SIGTERM and checks its exit status
    is 0 and that its stderr never showed the token."""
    (project.parent / "lifecycle_probe.py").write_text(LIFECYCLE_PLUGIN)
    command = [PI, "--config", config or config_of(project), "-p", "lifecycle_probe"]
    command += ["mcp", "serve", "--cwd", str(project), "--http", "127.0.0.1:0", *serve_args]
    process = await trio.lowlevel.open_process(
        command, stderr=subprocess.PIPE, env=env or server_env(project)
    )
    url = ""
    seen = b""
    try:
        assert process.stderr is not None
        with trio.fail_after(30):
            while b"/mcp\n" not in seen:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, f"pi mcp serve exited: {seen.decode()}"
                seen += chunk
        lines = seen.decode().splitlines()
        assert lines[-1].startswith("pi: MCP server at http://127.0.0.1:"), lines
        url = lines[-1].removeprefix("pi: MCP server at ")
        STARTUP[url] = lines
        port = url.rsplit(":", 1)[1].removesuffix("/mcp")
        token_path = project.parent / "state" / "pi" / f"mcp-serve-{port}.token"
        if "--no-auth" not in serve_args and "--token-env" not in serve_args:
            assert lines[:-1] == [
                f"pi: the bearer token is in {token_path} (send 'Authorization: Bearer TOKEN')"
            ]
            assert oct(token_path.stat().st_mode & 0o777) == "0o600"
            TOKENS[url] = token_path.read_text().strip()
        yield url
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            with trio.move_on_after(15):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            token = TOKENS.pop(url, None)
            STARTUP.pop(url, None)
    assert process.returncode == 0
    if token is not None:
        assert token.encode() not in seen
        assert not token_path.exists()  # removed when the server stops


def bearer(url: str) -> dict[str, str]:
    """The ``Authorization`` header of the ``http_server`` at ``url``."""
    return {"Authorization": f"Bearer {TOKENS[url]}"}


@contextlib.asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None, **client_options: Any):
    """An initialized ``ClientSession`` (with ``client_options``) on ``url`` (with its generated
    token by default)."""
    client = create_mcp_http_client(headers=bearer(url) if headers is None else headers)
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write, **client_options) as session:
            await session.initialize()
            yield session


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def pi_tools(project: Path) -> dict[str, pi_core.AgentTool]:
    pm = pi_core.make_plugin_manager()
    session = pi_core.build_session(pm, project, {})
    return session.tools_by_name


def require_inspector(require_program: Any) -> str:
    node = require_program("node")
    if not INSPECTOR_CLI.exists():
        reason = f"the MCP Inspector CLI is not installed in {NPM_PREFIX}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}, and CI must install it (.ci/run)")
        pytest.skip(reason)
    return node


async def run_pi(*args: str, env: dict[str, str] | None = None) -> trio.CompletedProcess[bytes]:
    with trio.fail_after(60):
        return await trio.run_process(
            [PI, *args], capture_stdout=True, capture_stderr=True, check=False, env=env
        )


def pids_of(project: Path) -> list[int]:
    path = project / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has exited (absent, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in (b"Z", b"X")


# -- stdio: the Python SDK client ------------------------------------------------------------


async def test_stdio_lists_the_callable_tools_with_their_schemas(project: Path) -> None:
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            listed = await session.list_tools()
    assert [t.name for t in listed.tools] == CALLABLE_TOOLS
    tools = pi_tools(project)
    by_name = {t.name: t for t in listed.tools}
    for name in CALLABLE_TOOLS:
        assert by_name[name].description == tools[name].description
        assert by_name[name].input_schema == tools[name].parameters
    assert by_name["bash"].output_schema == tools["bash"].output_schema
    assert by_name["read"].output_schema is None


async def test_stdio_calls_read_edit_and_bash(project: Path) -> None:
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            read = await session.call_tool("read", {"path": "a.txt"})
            edit = await session.call_tool(
                "edit", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "goodbye"}]}
            )
            bash = await session.call_tool("bash", {"command": "cat a.txt; echo err >&2"})
            failed = await session.call_tool("bash", {"command": "exit 3"})
    assert (texts(read), read.is_error) == (["hello\n"], False)
    assert (texts(edit), edit.is_error) == (["Successfully replaced 1 block(s) in a.txt."], False)
    assert (project / "a.txt").read_text() == "goodbye\n"
    assert (texts(bash), bash.is_error) == (["goodbye\nerr\n"], False)
    structured = dict(bash.structured_content or {})
    assert isinstance(structured.pop("wall_time_seconds"), int | float)
    assert structured == {"output": "goodbye\nerr\n", "truncated": False, "exit_code": 0}
    assert (texts(failed), failed.is_error) == (["(no output)\n\nCommand exited with code 3"], True)


async def test_unknown_tool_and_invalid_arguments_are_error_results(project: Path) -> None:
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            unknown = await session.call_tool("nope", {})
            invalid = await session.call_tool("read", {})
            hidden = await session.call_tool("codemode", {"code": "1"})
    assert (texts(unknown), unknown.is_error) == (["Tool nope not found"], True)
    assert (texts(invalid), invalid.is_error) == (
        ['Validation failed for tool "read":\n  - path: missing\n\nReceived arguments:\n{}'],
        True,
    )
    # codemode is model-only, so not callable, so not offered
    assert (texts(hidden), hidden.is_error) == (["Tool codemode not found"], True)


async def test_tools_option_offers_exactly_those_tools(project: Path) -> None:
    with trio.fail_after(60):
        async with stdio_session(project, "--tools", "ls,codemode,read") as session:
            listed = await session.list_tools()
            bash = await session.call_tool("bash", {"command": "echo hi"})
    assert [t.name for t in listed.tools] == ["ls", "codemode", "read"]
    assert (texts(bash), bash.is_error) == (["Tool bash not found"], True)


async def test_codemode_offered_as_one_tool_reaches_the_tools_behind_the_policy(
    project: Path,
) -> None:
    config = config_of(project, DENY_RM)
    script = (
        'const text = await tools.read({path: "a.txt"});'
        'try { await tools.bash({command: "rm a.txt"}); } catch (e) { return [text, String(e)]; }'
    )
    with trio.fail_after(60):
        async with stdio_session(project, "--tools", "codemode", config=config) as session:
            listed = await session.list_tools()
            result = await session.call_tool("codemode", {"code": script})
    assert [t.name for t in listed.tools] == ["codemode"]
    assert result.is_error is False
    assert texts(result)[1] == json.dumps(
        [
            "hello\n",
            'Error: Command blocked by the sandbox command policy: rule ["rm"] denies `rm a.txt`',
        ],
        separators=(",", ":"),
    )
    assert (project / "a.txt").exists()


async def test_policy_blocks_a_call_and_the_audit_log_records_it(project: Path) -> None:
    config = config_of(project, DENY_RM)
    with trio.fail_after(60):
        async with stdio_session(project, "--audit", "audit.jsonl", config=config) as session:
            blocked = await session.call_tool("bash", {"command": "rm -f a.txt"})
            allowed = await session.call_tool("bash", {"command": "echo ok"})
    assert (texts(blocked), blocked.is_error) == (
        ['Command blocked by the sandbox command policy: rule ["rm"] denies `rm -f a.txt`'],
        True,
    )
    assert (texts(allowed), allowed.is_error) == (["ok\n"], False)
    assert (project / "a.txt").exists()
    lines = [json.loads(line) for line in (project / "audit.jsonl").read_text().splitlines()]
    decisions = [(line["tool"], line["arguments"], line["decision"]) for line in lines]
    assert decisions == [
        ("bash", {"command": "rm -f a.txt"}, "deny"),
        ("bash", {"command": "echo ok"}, "allow"),
    ]
    assert lines[0]["reason"] == texts(blocked)[0]


async def test_session_lifecycle_is_the_process_over_stdio(project: Path) -> None:
    with trio.fail_after(60):
        async with stdio_session(project, plugin=True) as session:
            await session.call_tool("ls", {})
            await session.call_tool("ls", {})
            assert [e["event"] for e in lifecycle(project)] == ["start"]
        events = lifecycle(project)
    assert [(e["event"], e["host"], e["reason"]) for e in events] == [
        ("start", "mcp", None),
        ("end", "mcp", "completed"),
    ]
    assert events[0]["session"] == events[1]["session"]
    assert (project.parent / "stderr.log").read_text() == "stray output from a plugin\n"


async def test_sigterm_ends_the_session_and_kills_running_bash(project: Path) -> None:
    command = "echo $$ > pids; sleep 30 & echo $! >> pids; wait"
    failures: list[Exception] = []
    with trio.fail_after(60):
        async with stdio_session(project, plugin=True) as session:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    try:
                        await session.call_tool("bash", {"command": command})
                    except Exception as exc:  # the server is gone: no answer
                        failures.append(exc)

                nursery.start_soon(call)
                while len(pids_of(project)) < 2:  # noqa: ASYNC110 (polls a file)
                    await trio.sleep(0.05)
                os.kill(lifecycle(project)[0]["pid"], signal.SIGTERM)
            pids = pids_of(project)
            with trio.fail_after(10):
                while not all(process_gone(pid) for pid in pids):  # noqa: ASYNC110 (polls /proc)
                    await trio.sleep(0.05)
    assert [str(e) for e in failures] == ["Connection closed"]
    assert [(e["event"], e["reason"]) for e in lifecycle(project)] == [
        ("start", None),
        ("end", "completed"),
    ]


async def test_progress_notifications_carry_bash_output_while_it_runs(project: Path) -> None:
    messages: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        messages.append((value, message))

    command = "for i in 1 2 3; do echo line$i; sleep 0.6; done"
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            result = await session.call_tool(
                "bash", {"command": command}, progress_callback=progress
            )
    assert (texts(result), result.is_error) == (["line1\nline2\nline3\n"], False)
    expected = ["line1\n", "line1\nline2\n", "line1\nline2\nline3\n"]
    assert [m for _, m in messages] == expected
    assert [v for v, _ in messages] == [1, 2, 3]


async def test_cancelled_bash_leaves_no_process(project: Path) -> None:
    command = "echo $$ > pids; sleep 30 & echo $! >> pids; sleep 30 & echo $! >> pids; wait"
    with trio.fail_after(60):
        async with stdio_session(project, "--audit", "audit.jsonl") as session:
            with trio.move_on_after(30) as scope:
                async with trio.open_nursery() as nursery:

                    async def call() -> None:
                        await session.call_tool("bash", {"command": command})

                    nursery.start_soon(call)
                    while len(pids_of(project)) < 3:  # noqa: ASYNC110 (polls a file or /proc)
                        await trio.sleep(0.05)
                    nursery.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            assert not scope.cancelled_caught
            pids = pids_of(project)
            with trio.fail_after(10):
                while not all(process_gone(pid) for pid in pids):  # noqa: ASYNC110 (polls a file or /proc)
                    await trio.sleep(0.05)
            # the session goes on
            after = await session.call_tool("bash", {"command": "echo still here"})
    assert (texts(after), after.is_error) == (["still here\n"], False)


async def test_concurrent_calls_run_in_parallel_and_edits_stay_ordered(project: Path) -> None:
    (project / "many.txt").write_text("".join(f"token{i}\n" for i in range(8)))
    results: dict[str, types.CallToolResult] = {}
    waiter = "while [ ! -e flag ]; do sleep 0.05; done; echo waited"
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            async with trio.open_nursery() as nursery:

                async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
                    results[key] = await session.call_tool(name, arguments)

                nursery.start_soon(call, "waiter", "bash", {"command": waiter, "timeout": 20})
                await trio.sleep(0.5)
                nursery.start_soon(call, "flag", "bash", {"command": "touch flag; echo flagged"})
                for i in range(8):
                    edits = [{"oldText": f"token{i}\n", "newText": f"edited{i}\n"}]
                    nursery.start_soon(
                        call, f"edit{i}", "edit", {"path": "many.txt", "edits": edits}
                    )
    assert texts(results["waiter"]) == ["waited\n"]
    assert texts(results["flag"]) == ["flagged\n"]
    for i in range(8):
        assert texts(results[f"edit{i}"]) == ["Successfully replaced 1 block(s) in many.txt."]
    assert (project / "many.txt").read_text() == "".join(f"edited{i}\n" for i in range(8))


# -- streamable HTTP: the Python SDK client ---------------------------------------------------


# The SDK's HTTP client (httpx2) leaves its SSE response generators for the garbage collector,
# which trio reports: that is the client's doing, not the server's.
SDK_HTTP_CLIENT_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Async generator 'http:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object:pytest.PytestUnraisableExceptionWarning"
    ),
]


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_http_lists_and_calls_tools_one_session_per_mcp_session(project: Path) -> None:
    config = config_of(project, DENY_RM)
    with trio.fail_after(90):
        async with http_server(project, config=config) as url:
            async with http_session(url) as session:
                listed = await session.list_tools()
                read = await session.call_tool("read", {"path": "a.txt"})
                edit = await session.call_tool(
                    "edit", {"path": "a.txt", "edits": [{"oldText": "hello", "newText": "bye"}]}
                )
                bash = await session.call_tool("bash", {"command": "cat a.txt"})
                blocked = await session.call_tool("bash", {"command": "rm a.txt"})
            async with http_session(url) as session:
                again = await session.call_tool("read", {"path": "a.txt"})
            with trio.fail_after(10):  # the client's DELETE ends the session
                while len(lifecycle(project)) < 4:  # noqa: ASYNC110 (polls a file or /proc)
                    await trio.sleep(0.05)
    assert [t.name for t in listed.tools] == CALLABLE_TOOLS
    assert (texts(read), read.is_error) == (["hello\n"], False)
    assert (texts(edit), edit.is_error) == (["Successfully replaced 1 block(s) in a.txt."], False)
    assert (texts(bash), bash.is_error) == (["bye\n"], False)
    assert (texts(blocked), blocked.is_error) == (
        ['Command blocked by the sandbox command policy: rule ["rm"] denies `rm a.txt`'],
        True,
    )
    assert (texts(again), again.is_error) == (["bye\n"], False)
    events = lifecycle(project)
    assert [(e["event"], e["host"], e["reason"]) for e in events] == [
        ("start", "mcp", None),
        ("end", "mcp", "completed"),
        ("start", "mcp", None),
        ("end", "mcp", "completed"),
    ]
    assert events[0]["session"] == events[1]["session"] != events[2]["session"]


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_http_2026_protocol_requests_each_get_a_session(project: Path) -> None:
    # the SDK's high-level Client speaks the 2026-07-28 protocol: no handshake, no MCP session
    with trio.fail_after(90):
        async with http_server(project) as url:
            http = create_mcp_http_client(headers=bearer(url))
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                read = await client.call_tool("read", {"path": "a.txt"})
                bash = await client.call_tool("bash", {"command": "echo modern"})
            with trio.fail_after(10):
                while len(lifecycle(project)) < 6:  # noqa: ASYNC110 (polls a file)
                    await trio.sleep(0.05)
    assert (texts(read), texts(bash)) == (["hello\n"], ["modern\n"])
    events = lifecycle(project)
    # three requests (the Client lists the tools after its first call), three sessions
    by_session: dict[str, list[tuple[str, str, str | None]]] = {}
    for e in events:
        by_session.setdefault(e["session"], []).append((e["event"], e["host"], e["reason"]))
    assert list(by_session.values()) == [[("start", "mcp", None), ("end", "mcp", "completed")]] * 3


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_http_requires_a_generated_bearer_token_by_default(project: Path) -> None:
    with trio.fail_after(90):
        async with http_server(project) as url:
            token = TOKENS[url]
            async with httpx2.AsyncClient() as client:
                anonymous = await client.post(url, json={})
                wrong = await client.post(url, json={}, headers={"Authorization": "Bearer nope"})
                basic = await client.post(url, json={}, headers={"Authorization": "Basic eDp5"})
            async with http_session(url) as session:
                result = await session.call_tool("bash", {"command": "echo authorised"})
    assert len(token) == 43
    assert (anonymous.status_code, wrong.status_code, basic.status_code) == (401, 401, 401)
    assert anonymous.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    missing = {
        "error": "invalid_token",
        "error_description": "this server requires a bearer token: send 'Authorization: Bearer "
        "TOKEN' (pi mcp serve printed the file that holds TOKEN, or it is the value of "
        "--token-env VAR)",
    }
    assert (anonymous.json(), basic.json()) == (missing, missing)
    assert wrong.json() == {
        "error": "invalid_token",
        "error_description": "the bearer token is wrong (the server's token is new each time "
        "it starts)",
    }
    assert texts(result) == ["authorised\n"]


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_http_bearer_token_from_the_environment(project: Path) -> None:
    env = server_env(project, PI_TEST_MCP_TOKEN="s3cret")
    with trio.fail_after(90):
        async with http_server(project, "--token-env", "PI_TEST_MCP_TOKEN", env=env) as url:
            async with httpx2.AsyncClient() as client:
                anonymous = await client.post(url, json={})
                wrong = await client.post(url, json={}, headers={"Authorization": "Bearer nope"})
            async with http_session(url, {"Authorization": "Bearer s3cret"}) as session:
                result = await session.call_tool("bash", {"command": "echo authorised"})
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert texts(result) == ["authorised\n"]
    # no token file for a token pi did not make (the state folder holds the checkpoints)
    assert list((project.parent / "state").rglob("*.token")) == []


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_http_no_auth_admits_anyone_with_a_warning(project: Path) -> None:
    with trio.fail_after(60):
        async with http_server(project, "--no-auth") as url:
            startup = STARTUP[url]
            async with http_session(url, {}) as session:
                result = await session.call_tool("bash", {"command": "echo open"})
    assert startup == [
        f"pi: warning: --no-auth: anyone who can reach {url} can run the offered tools as this "
        "user",
        f"pi: MCP server at {url}",
    ]
    assert texts(result) == ["open\n"]


# -- full outputs as resources ------------------------------------------------------------------


async def read_all(session: ClientSession, uri: str) -> tuple[bytes, list[dict[str, Any]]]:
    """Every range of a resource, following ``_meta.next``; the bytes and the metas."""
    data, metas, next_uri = b"", [], uri
    while next_uri:
        (contents,) = (await session.read_resource(next_uri)).contents
        meta = dict(contents.meta or {})
        metas.append(meta)
        if isinstance(contents, types.TextResourceContents):
            data += contents.text.encode()
        else:
            data += base64.b64decode(contents.blob)
        next_uri = meta.get("next", "")
    return data, metas


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_a_truncated_output_is_a_resource_of_its_session(project: Path) -> None:
    expected = "".join(f"{i}\n" for i in range(1, 200001)).encode()
    with trio.fail_after(120):
        async with http_server(project) as url:
            async with http_session(url) as session:
                result = await session.call_tool("bash", {"command": "seq 1 200000"})
                link = result.content[-1]
                assert isinstance(link, types.ResourceLink)
                listed = await session.list_resources()
                data, metas = await read_all(session, str(link.uri))
                binary = await session.call_tool(
                    "bash", {"command": "printf '\\377\\376'; seq 1 20000"}
                )
                blob_link = binary.content[-1]
                assert isinstance(blob_link, types.ResourceLink)
                (first,) = (await session.read_resource(str(blob_link.uri))).contents
                ranged = (await session.read_resource(f"{link.uri}?offset=6&length=4")).contents
                with pytest.raises(MCPError) as bad_range:
                    await session.read_resource(f"{link.uri}?offset=-1")
            async with http_session(url) as other:  # another MCP session: not its output
                with pytest.raises(MCPError) as foreign:
                    await other.read_resource(str(link.uri))
                others = await other.list_resources()
    name = Path(result.structured_content["full_output_path"]).name
    assert (str(link.uri), link.name, link.size) == (f"pi://output/1/{name}", name, len(expected))
    assert texts(result)[0].endswith(
        f"\n\n[Full output ({len(expected)} bytes) as MCP resource pi://output/1/{name}: "
        "resources/read returns 524288 bytes at a time, ?offset=K for more]"
    )
    assert [(str(r.uri), r.size) for r in listed.resources] == [(str(link.uri), len(expected))]
    assert data == expected
    assert metas == [
        {"offset": 0, "length": 524288, "size": 1288895, "next": f"{link.uri}?offset=524288"},
        {"offset": 524288, "length": 524288, "size": 1288895, "next": f"{link.uri}?offset=1048576"},
        {"offset": 1048576, "length": 240319, "size": 1288895},
    ]
    assert isinstance(first, types.BlobResourceContents)
    assert base64.b64decode(first.blob)[:8] == b"\xff\xfe1\n2\n3\n"
    assert [(type(c).__name__, getattr(c, "text", None)) for c in ranged] == [
        ("TextResourceContents", "4\n5\n")
    ]
    assert bad_range.value.error.message == "offset='-1': must be a whole number of bytes"
    assert foreign.value.error.code == -32002
    assert foreign.value.error.message == (
        f"Resource not found: pi://output/1/{name} is not an output of this MCP session "
        "(outputs expire with their session)"
    )
    assert others.resources == []
    # the structured output is cut to keep the message under 1 MiB, and names the resource
    output = result.structured_content["output"]
    marker = re.search(r"\n\[\.\.\. (\d+) characters omitted to keep this MCP message under 1 MiB: "
                       rf"the full output is the MCP resource pi://output/1/{re.escape(name)} \.\.\.\]\n",
                       output)  # fmt: skip
    assert marker is not None
    assert output[: marker.start()] == expected[:65536].decode()
    assert output[marker.end() :] == expected[-65536:].decode()


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_two_megabytes_of_bash_output_reach_pis_own_client_over_http(
    project: Path,
) -> None:
    with trio.fail_after(120):
        async with http_server(project) as url:
            client_config = project.parent / "client.toml"
            client_config.write_text(
                f'[mcp.servers.pi]\nurl = "{url}"\n'
                'headers = { Authorization = "Bearer ${PI_TEST_TOKEN}" }\n'
            )
            env = server_env(project, PI_TEST_TOKEN=TOKENS[url])
            command = "head -c 2000000 /dev/zero | tr '\\0' x; echo; echo end"
            done = await run_pi(
                "--config",
                str(client_config),
                "call",
                "mcp__pi__bash",
                json.dumps({"command": command}),
                "--json",
                env=env,
            )
    assert (done.returncode, done.stderr.decode()) == (0, "")
    message = json.loads(done.stdout)
    name = Path(re.findall(r"Full output: (\S+)\]", message["content"][0]["text"])[0]).name
    uri = f"pi://output/1/{name}"
    assert (message["content"], message["isError"]) == (
        [
            {
                "type": "text",
                "text": f"end\n\n[Showing lines 2-2 of 2 (50.0KB limit). Full output: /tmp/{name}]"
                f"\n\n[Full output (2000005 bytes) as MCP resource {uri}: resources/read returns "
                "524288 bytes at a time, ?offset=K for more]",
            },
            {
                "type": "text",
                "text": f'[Resource {uri} "{name}" (text/plain, 1.9MB): the full output of a tool '
                'call. Read it with read_mcp_resource (server "pi")]',
            },
        ],
        False,
    )


# -- codemode's default time limit ------------------------------------------------------------


async def test_a_stuck_codemode_script_times_out_by_default_in_mcp_serve(project: Path) -> None:
    hint = (
        " (the default limit of `pi mcp serve`; a script that needs longer sets it: "
        '// @options: {"timeout_ms": N})'
    )
    with trio.fail_after(90):
        async with stdio_session(
            project,
            "--tools",
            "codemode,codemode_python",
            env={"PI_CODEMODE_SERVER_TIMEOUT_MS": "1000"},
        ) as session:
            js = await session.call_tool("codemode", {"code": "while (true) {}"})
            python = await session.call_tool("codemode_python", {"code": "while True:\n    pass"})
            own = await session.call_tool(
                "codemode", {"code": '// @options: {"timeout_ms": 1200}\nwhile (true) {}'}
            )
    assert texts(js)[1:] == [
        f"Script error:\nScript timed out: Execution timed out after 1000 ms{hint}\n\n"
        "No tool calls were made."
    ]
    assert texts(python)[1:] == texts(js)[1:]
    assert texts(own)[1:] == [
        "Script error:\nScript timed out: Execution timed out after 1200 ms\n\n"
        "No tool calls were made."
    ]


@pytest.mark.parametrize(
    ("host", "limit"),
    [("mcp", 300_000), ("run", 300_000), ("call", None), ("replay", None), ("agent", None)],
)
def test_codemode_default_time_limit_by_host(host: str, limit: int | None) -> None:
    from pi_builtin_tools.codemode.common import script_timeout_ms

    session = pi_core.SessionContext(cwd="/", config={}, host=host)
    assert script_timeout_ms(None, session)[0] == limit
    assert script_timeout_ms(5, session) == (5, "")


# -- a cap on each client's sessions ------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
STREAM_HEADERS = {"Accept": "application/json, text/event-stream"}


async def open_raw_session(client: Any, url: str) -> str:
    """Initialize an MCP session with bare HTTP requests; its ``Mcp-Session-Id``."""
    opened = await client.post(url, json=INITIALIZE, headers=STREAM_HEADERS)
    assert opened.status_code == 200, opened.text
    session_id = str(opened.headers["mcp-session-id"])
    headers = {**STREAM_HEADERS, "Mcp-Session-Id": session_id, "Mcp-Protocol-Version": "2025-06-18"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return session_id


async def raw_call(client: Any, url: str, session_id: str, command: str) -> Any:
    headers = {**STREAM_HEADERS, "Mcp-Session-Id": session_id, "Mcp-Protocol-Version": "2025-06-18"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}},
    }
    return await client.post(url, json=call, headers=headers)


async def test_a_client_over_its_session_cap_closes_its_oldest_idle_session(
    project: Path,
) -> None:
    with trio.fail_after(120):
        async with http_server(project, "--max-sessions", "2") as url:
            async with httpx2.AsyncClient(headers=bearer(url), timeout=60) as client:
                first = await open_raw_session(client, url)
                second = await open_raw_session(client, url)
                assert (await raw_call(client, url, first, "echo used")).status_code == 200
                third = await open_raw_session(client, url)  # closes the second: idle longest
                gone = await raw_call(client, url, second, "echo gone")
                kept = await raw_call(client, url, first, "echo kept")
                async with trio.open_nursery() as nursery:  # both sessions busy: no room
                    nursery.start_soon(raw_call, client, url, first, "sleep 2")
                    nursery.start_soon(raw_call, client, url, third, "sleep 3")
                    await trio.sleep(1)
                    refused = await client.post(url, json=INITIALIZE, headers=STREAM_HEADERS)
                # both idle again: the first, whose call ended first, goes
                fourth = await open_raw_session(client, url)
                after = await raw_call(client, url, first, "echo after")
            with trio.fail_after(10):
                while len(lifecycle(project)) < 3:  # noqa: ASYNC110 (polls a file)
                    await trio.sleep(0.05)
    assert len({first, second, third, fourth}) == 4
    assert (gone.status_code, after.status_code) == (404, 404)
    assert (kept.status_code, '"text":"kept\\n"' in kept.text) == (200, True)
    assert refused.status_code == 503
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32000,
            "message": "too many MCP sessions from this client: all 2 (--max-sessions) have a "
            "request running; end one (DELETE) or wait",
        },
    }
    # a pi session starts with its MCP session's first call: the first's and the third's
    events = lifecycle(project)
    assert [(e["event"], e["reason"]) for e in events] == [
        ("start", None),
        ("start", None),
        ("end", "completed"),  # the first, closed to make room for the fourth
        ("end", "completed"),  # the third, at shutdown
    ]
    assert events[0]["session"] == events[2]["session"] != events[3]["session"]


async def test_an_unsupported_protocol_version_header_names_the_supported_ones(
    project: Path,
) -> None:
    with trio.fail_after(60):
        async with http_server(project) as url:
            async with httpx2.AsyncClient(headers=bearer(url), timeout=30) as client:
                session_id = await open_raw_session(client, url)
                headers = {**STREAM_HEADERS, "Mcp-Session-Id": session_id}
                listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
                bad = await client.post(
                    url, json=listing, headers={**headers, "Mcp-Protocol-Version": "1999-01-01"}
                )
    assert bad.status_code == 400
    assert bad.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "unsupported Mcp-Protocol-Version '1999-01-01': this server speaks "
            "2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28",
        },
    }


# -- a client that goes away cancels its calls ------------------------------------------------


def processes_running(marker: str) -> list[int]:
    """The pids whose command line holds ``marker`` (any backend's processes are this host's)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and not process_gone(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def podman_image(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The container backend's test image and container (tests/sandbox/container_support.py)."""
    from container_support import PodmanSession

    session = PodmanSession(
        str(tmp_path_factory.mktemp("podman")), str(tmp_path_factory.mktemp("container-ws"))
    )
    yield session
    session.cleanup()


def backend_config(project: Path, backend: str, require_program: Any, request: Any) -> str | None:
    """The pi.toml of a session on ``backend`` (``local``, ``bwrap``, ``container``)."""
    if backend == "local":
        return None
    if backend == "bwrap":
        require_program("bwrap")
        return config_of(project, '[sandbox]\nbackend = "bwrap"\n')
    require_program("podman")
    require_program("runc")
    podman = request.getfixturevalue("podman_image")
    listed = ", ".join(json.dumps(a) for a in podman.cli_args)
    run_args = ", ".join(json.dumps(a) for a in podman.run_args)
    return config_of(
        project,
        '[sandbox]\nbackend = "container"\n[sandbox.container]\n'
        f'cli = "{podman.cli}"\nimage = "{podman.image()}"\nworkdir = "/work"\n'
        f"cli_args = [{listed}]\nrun_args = [{run_args}]\n",
    )


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
@pytest.mark.parametrize("backend", ["local", "bwrap", "container"])
async def test_a_client_that_disconnects_mid_call_leaves_no_process(
    project: Path, backend: str, require_program: Any, request: Any
) -> None:
    config = backend_config(project, backend, require_program, request)
    marker = f"sleep 30{os.getpid() % 100:02d}.{len(backend)}5"  # a test process runs both
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": f"{marker}; echo never"}},
    }
    with trio.fail_after(120):
        async with http_server(project, config=config) as url:
            async with httpx2.AsyncClient(headers=bearer(url), timeout=60) as client:
                session_id = await open_raw_session(client, url)
                headers = {**STREAM_HEADERS, "Mcp-Session-Id": session_id}
                async with trio.open_nursery() as nursery:

                    async def stream() -> None:
                        async with client.stream("POST", url, json=call, headers=headers) as r:
                            async for _ in r.aiter_bytes():
                                pass

                    nursery.start_soon(stream)
                    while not processes_running(marker):  # noqa: ASYNC110 (polls /proc)
                        await trio.sleep(0.05)
                    nursery.cancel_scope.cancel()  # the connection closes, no cancel sent
            with trio.fail_after(15):
                while processes_running(marker):  # noqa: ASYNC110 (polls /proc)
                    await trio.sleep(0.05)
            async with http_session(url) as session:  # the server goes on
                after = await session.call_tool("bash", {"command": "echo still here"})
    assert (texts(after), after.is_error) == (["still here\n"], False)


@pytest.mark.parametrize("backend", ["bwrap", "container"])
async def test_a_cancelled_call_leaves_no_process_on_sandbox_backends(
    project: Path, backend: str, require_program: Any, request: Any
) -> None:
    config = backend_config(project, backend, require_program, request)
    marker = f"sleep 31{os.getpid() % 100:02d}.{len(backend)}5"  # a test process runs both
    with trio.fail_after(120):
        async with stdio_session(project, config=config) as session:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await session.call_tool("bash", {"command": f"{marker} & {marker}; wait"})

                nursery.start_soon(call)
                while len(processes_running(marker)) < 2:  # noqa: ASYNC110 (polls /proc)
                    await trio.sleep(0.05)
                nursery.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            with trio.fail_after(15):
                while processes_running(marker):  # noqa: ASYNC110 (polls /proc)
                    await trio.sleep(0.05)
            after = await session.call_tool("bash", {"command": "echo still here"})
    assert (texts(after), after.is_error) == (["still here\n"], False)


# -- asking the person through the client (elicitation) ---------------------------------------

ASK_RULES = 'prefix_rule(pattern = ["echo", "ask"], decision = "prompt", justification = "Asks.")\n'


def ask_config(project: Path) -> str:
    (project / "ask.rules").write_text(ASK_RULES)  # relative to the session's folder
    return config_of(project, '[sandbox.codex_rules]\nfiles = ["ask.rules"]\n')


@contextlib.asynccontextmanager
async def served_over(
    transport: str, project: Path, *serve_args: str, **client_options: Any
) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` on ``pi mcp serve SERVE_ARGS`` over ``transport`` (stdio, http)."""
    if transport == "stdio":
        async with stdio_session(project, *serve_args, **client_options) as session:
            yield session
        return
    async with http_server(project, *serve_args, config=config_of(project)) as url:
        async with http_session(url, **client_options) as session:
            yield session


ASKED_REASON = '`echo ask {n}`: prompt by prefix_rule ["echo", "ask"] at ask.rules:1: Asks.'


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_ask_reaches_the_clients_elicitation_and_its_answer_decides(
    project: Path, transport: str
) -> None:
    ask_config(project)
    audit = project.parent / "audit.jsonl"
    answers = [
        types.ElicitResult(action="accept", content={"approve": True}),
        types.ElicitResult(action="accept", content={"approve": False}),
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"approve": True, "for_session": True}),
    ]
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return answers.pop(0)

    results = []
    with trio.fail_after(120):
        async with served_over(
            transport,
            project,
            "--audit",
            str(audit),
            elicitation_callback=elicit,
            client_info=types.Implementation(name="asking-client", version="1.2"),
        ) as session:
            for n in range(1, 7):
                result = await session.call_tool("bash", {"command": f"echo ask {n}"})
                results.append((texts(result), result.is_error))
    source = "codex rule ask.rules:1"
    denied = "Blocked: the user denied this call. " + source + ": " + ASKED_REASON
    assert results == [
        (["ask 1\n"], False),
        ([denied.format(n=2)], True),
        ([denied.format(n=3)], True),
        ([denied.format(n=4)], True),
        (["ask 5\n"], False),
        (["ask 6\n"], False),  # approved for the session: not asked again
    ]
    assert [p.message for p in asked] == [
        f'pi asks whether this call may run:\nbash {{"command": "echo ask {n}"}}\n'
        f"Reason: {ASKED_REASON.format(n=n)} ({source})"
        for n in range(1, 6)
    ]
    assert isinstance(asked[0], types.ElicitRequestFormParams)
    assert asked[0].requested_schema["required"] == ["approve"]
    assert list(asked[0].requested_schema["properties"]) == ["approve", "for_session"]
    client = "MCP client asking-client 1.2"
    approvals = [json.loads(line).get("approval") for line in audit.read_text().splitlines()]
    assert approvals == [
        {
            "answer": answer,
            "allowed": answer != "deny",
            "source": source,
            "reason": ASKED_REASON.format(n=n),
            **({"answered_by": f"{client} (elicitation: {action})"} if action else {}),
        }
        for n, answer, action in [
            (1, "allow", "accept"),
            (2, "deny", "accept"),
            (3, "deny", "decline"),
            (4, "deny", "cancel"),
            (5, "always", "accept"),
            (6, "remembered", None),
        ]
    ]


@SDK_HTTP_CLIENT_WARNINGS[0]
@SDK_HTTP_CLIENT_WARNINGS[1]
async def test_an_unanswered_ask_is_denied_after_the_ask_timeout(project: Path) -> None:
    ask_config(project)
    audit = project.parent / "audit.jsonl"

    async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await trio.sleep(30)
        raise AssertionError("the server stopped waiting")

    with trio.fail_after(60):
        async with stdio_session(
            project, "--audit", str(audit), "--ask-timeout", "0.5", elicitation_callback=never
        ) as session:
            result = await session.call_tool("bash", {"command": "echo ask 1"})
    assert (texts(result), result.is_error) == (
        ["Blocked: the user denied this call. codex rule ask.rules:1: " + ASKED_REASON.format(n=1)],
        True,
    )
    (line,) = audit.read_text().splitlines()
    # the SDK's own clientInfo
    assert (
        json.loads(line)["approval"]["answered_by"] == "MCP client mcp 0.1.0 (no answer in 0.5 s)"
    )


async def test_a_client_without_elicitation_gets_the_denial_with_the_reason(
    project: Path,
) -> None:
    ask_config(project)
    with trio.fail_after(60):
        async with stdio_session(project) as session:
            result = await session.call_tool("bash", {"command": "echo ask 1"})
    assert (texts(result), result.is_error) == (
        [
            "Blocked: this call needs a person's approval and there is no one to ask (no "
            "terminal, no approval callback). codex rule ask.rules:1: " + ASKED_REASON.format(n=1)
        ],
        True,
    )


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--no-auth"],
            "pi: error: --no-auth needs --http (stdio has no bearer token)",
        ),
        (
            ["--http", "9", "--no-auth", "--token-env", "HOME"],
            "pi: error: argument --token-env: not allowed with argument --no-auth",
        ),
        (
            ["--http", "localhost:http"],
            "pi: error: --http localhost:http: the port must be a number from 0 to 65535",
        ),
        (
            ["--http", "9", "--token-env", "PI_TEST_UNSET_TOKEN"],
            "pi: error: --token-env PI_TEST_UNSET_TOKEN: the variable is not set or empty",
        ),
        (
            ["--token-env", "HOME"],
            "pi: error: --token-env needs --http (stdio has no bearer token)",
        ),
        (
            ["--tools", "read,nope"],
            "pi: error: --tools: unknown tool 'nope' (registered tools: "
            "read, bash, powershell, edit, write, grep, find, ls, tool_search, codemode, "
            "codemode_python)",
        ),
        (["--cwd", "missing"], "pi: error: --cwd missing: no such directory"),
        (["--bogus"], "pi: error: unrecognized arguments: --bogus"),
    ],
)
async def test_unusable_command_lines_exit_2_with_one_line(
    project: Path, args: list[str], message: str
) -> None:
    env = clean_env()
    with contextlib.chdir(project):
        done = await run_pi("--config", config_of(project), "mcp", "serve", *args, env=env)
    assert (done.returncode, done.stderr.decode(), done.stdout) == (2, message + "\n", b"")


async def test_an_address_in_use_exits_2_with_one_line(project: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = await run_pi(
            "--config", config_of(project), "mcp", "serve", "--http", f"127.0.0.1:{port}"
        )
    message = f"pi: error: --http 127.0.0.1:{port}: Address already in use\n"
    assert (done.returncode, done.stderr.decode(), done.stdout) == (2, message, b"")


async def test_stdin_lines_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_builtin_tools.mcp import stdio

    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 64)
    read_fd, write_fd = os.pipe()
    data = b'{"a": 1}\n\n' + b"x" * 1000 + b'\n{"b": 2}\n' + b"y" * 300_000 + b'\n{"c": 3}'
    reader = stdio.LineReader(read_fd)
    async with trio.open_nursery() as nursery:

        async def write() -> None:
            async with trio.lowlevel.FdStream(write_fd) as pipe:
                await pipe.send_all(data)

        nursery.start_soon(write)
        lines = [line async for line in reader]
    await reader.aclose()
    # a long line is dropped (unread when it is longer than what one read holds): the SDK
    # sees an object that is no message
    assert lines == ['{"a": 1}', "{}", '{"b": 2}', "{}", '{"c": 3}']


async def test_stdout_messages_wait_for_a_full_pipe_and_never_interleave() -> None:
    """Two tasks flush 1 MiB messages at once into a pipe read slowly: each arrives whole, one
    after the other; once the reader has gone, output is dropped without an error."""
    from pi_builtin_tools.mcp import stdio

    read_fd, write_fd = os.pipe()
    writer = stdio.FdWriter(write_fd)
    messages = [(b"%d" % i) * (1 << 20) + b"\n" for i in (1, 2)]
    received = bytearray()

    async def send(message: bytes) -> None:
        await writer.write(message.decode())
        await writer.flush()

    async with trio.open_nursery() as nursery:
        for message in messages:
            nursery.start_soon(send, message)
        async with trio.lowlevel.FdStream(read_fd) as pipe:
            while len(received) < 2 * len(messages[0]):
                await trio.sleep(0.001)
                received += await pipe.receive_some(1 << 16)
    assert bytes(received) in (messages[0] + messages[1], messages[1] + messages[0])
    await send(b"after the reader went\n")  # EPIPE: dropped
    await writer.aclose()


async def test_waiting_for_stdin_is_cancellable() -> None:
    from pi_builtin_tools.mcp import stdio

    read_fd, write_fd = os.pipe()
    reader = stdio.LineReader(read_fd)
    with trio.move_on_after(0.2) as scope:
        await reader.__anext__()
    assert scope.cancelled_caught
    os.write(write_fd, b'{"a": 1}\n')
    assert await reader.__anext__() == '{"a": 1}'
    os.close(write_fd)
    with pytest.raises(StopAsyncIteration):
        await reader.__anext__()
    await reader.aclose()


# -- the official MCP Inspector CLI ------------------------------------------------------------


async def inspector(node: str, *args: str, cwd: Path) -> Any:
    with trio.fail_after(90):
        done = await trio.run_process(
            [node, str(INSPECTOR_CLI), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=str(cwd),
            env=clean_env(),
        )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


async def test_inspector_cli_over_stdio(project: Path, require_program: Any) -> None:
    node = require_inspector(require_program)
    server = [PI, "--config", config_of(project), "mcp", "serve", "--cwd", str(project)]
    listed = await inspector(node, *server, "--method", "tools/list", cwd=project)
    read = await inspector(
        node,
        *server,
        "--method",
        "tools/call",
        "--tool-name",
        "read",
        "--tool-arg",
        "path=a.txt",
        cwd=project,
    )
    edit = await inspector(
        node,
        *server,
        "--method",
        "tools/call",
        "--tool-name",
        "edit",
        "--tool-arg",
        "path=a.txt",
        'edits=[{"oldText": "hello", "newText": "inspected"}]',
        cwd=project,
    )
    bash = await inspector(
        node,
        *server,
        "--method",
        "tools/call",
        "--tool-name",
        "bash",
        "--tool-arg",
        "command=cat a.txt",
        cwd=project,
    )
    assert [t["name"] for t in listed["tools"]] == CALLABLE_TOOLS
    assert read == {"content": [{"type": "text", "text": "hello\n"}], "isError": False}
    assert edit == {
        "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in a.txt."}],
        "isError": False,
    }
    assert bash["content"] == [{"type": "text", "text": "inspected\n"}]
    assert bash["isError"] is False


async def test_inspector_cli_over_http(project: Path, require_program: Any) -> None:
    node = require_inspector(require_program)
    config = config_of(project, DENY_RM)
    async with http_server(project, "--no-auth", config=config) as url:
        http = [url, "--transport", "http"]
        listed = await inspector(node, *http, "--method", "tools/list", cwd=project)
        read = await inspector(
            node,
            *http,
            "--method",
            "tools/call",
            "--tool-name",
            "read",
            "--tool-arg",
            "path=a.txt",
            cwd=project,
        )
        edit = await inspector(
            node,
            *http,
            "--method",
            "tools/call",
            "--tool-name",
            "edit",
            "--tool-arg",
            "path=a.txt",
            'edits=[{"oldText": "hello", "newText": "inspected"}]',
            cwd=project,
        )
        blocked = await inspector(
            node,
            *http,
            "--method",
            "tools/call",
            "--tool-name",
            "bash",
            "--tool-arg",
            "command=rm a.txt",
            cwd=project,
        )
    assert [t["name"] for t in listed["tools"]] == CALLABLE_TOOLS
    assert read == {"content": [{"type": "text", "text": "hello\n"}], "isError": False}
    assert edit["content"] == [
        {"type": "text", "text": "Successfully replaced 1 block(s) in a.txt."}
    ]
    assert blocked == {
        "content": [
            {
                "type": "text",
                "text": 'Command blocked by the sandbox command policy: rule ["rm"] denies '
                "`rm a.txt`",
            }
        ],
        "isError": True,
    }
    assert (project / "a.txt").read_text() == "inspected\n"
