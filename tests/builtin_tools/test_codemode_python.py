"""``codemode_python``: Python scripts in pydantic-monty calling tools through the pipeline,
run for real with ``pi call`` (real tools, real worker processes) and in loop runs with a
scripted model (events, abort, store)."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
from test_loop_support import call, make_tool, run, text, tool_use

from pi_builtin_tools.codemode.common import (
    NoWorkerFree,
    ScriptFailure,
    Store,
    codemode_worker_slot,
)
from pi_builtin_tools.codemode.python import create_codemode_python_tool_definition
from pi_core import AgentToolResult, TextContent
from pi_core._abort import Abort
from pi_core._tools.definition import to_agent_tool, wrap_tool_definition

PI = Path(sys.executable).parent / "pi"
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

POLICY = """
from pi_core import BeforeToolCallResult, hookimpl


@hookimpl
def pi_before_tool_call(context):
    command = context.args.get("command", "") if isinstance(context.args, dict) else ""
    if context.tool_call.name == "bash" and "rm " in command:
        return BeforeToolCallResult(block=True, reason="no_rm_policy: rm is not allowed")
    return None
"""


def pi_call(cwd: Path, code: str, *plugins: str, **env: str) -> dict[str, Any]:
    args = [str(PI), "-p", "builtin_tools"]
    for plugin in plugins:
        args += ["-p", plugin]
    proc = subprocess.run(
        [*args, "call", "codemode_python", json.dumps({"code": code}), "--json"],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PI_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTHONPATH": str(cwd),
            **env,
        },
    )
    assert proc.stderr == ""
    message: dict[str, Any] = json.loads(proc.stdout)
    return message


def result_text(message: dict[str, Any]) -> str:
    """The content with the wall time replaced by ``<s>``."""
    text = "".join(c["text"] for c in message["content"] if c["type"] == "text")
    return re.sub(r"Wall time \d+\.\d seconds", "Wall time <s> seconds", text)


def wall_time(message: dict[str, Any]) -> float:
    found = re.search(r"Wall time (\d+\.\d) seconds", message["content"][0]["text"])
    assert found is not None
    return float(found.group(1))


@pytest.fixture
def subreaper() -> Iterator[None]:
    """Make this process the subreaper of what it starts: a monty worker that outlives its
    ``pi call`` becomes our child, where :func:`monty_children` sees it."""
    libc = ctypes.CDLL(None, use_errno=True)
    before = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) is not available")
    try:
        yield
    finally:
        # tests/conftest.py makes the whole session a subreaper: put back what was there
        libc.prctl(PR_SET_CHILD_SUBREAPER, before.value, 0, 0, 0)


def monty_children() -> list[str]:
    """``ps`` lines of this process's live (not zombie) monty workers."""
    ps = subprocess.run(
        ["ps", "-o", "pid,stat,args", "--ppid", str(os.getpid())], capture_output=True, text=True
    )
    return [
        line
        for line in ps.stdout.splitlines()[1:]
        if re.search(r"/monty( |$)", line) and line.split()[1][0] != "Z"
    ]


def test_read_and_bash_results_arrive_concurrently(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello\n")
    code = (
        "import asyncio\n"
        'print("start")\n'
        "a, b, c = await asyncio.gather(\n"
        '    tools.bash(command="sleep 1; echo one"),\n'
        '    tools.read(path="hello.txt"),\n'
        '    tools.bash(command="sleep 1; echo two"),\n'
        ")\n"
        "text(b)\n"
        'text(a["output"] + c["output"])\n'
        'a["exit_code"]\n'
    )
    message = pi_call(tmp_path, code)
    assert result_text(message) == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
        "==> text 1/3 <==\nhello\n"
        "==> text 2/3 <==\none\ntwo\n"
        "==> text 3/3 <==\n0\n"
        "<console_output>\nstart\n</console_output>"
    )
    assert message["isError"] is False
    calls = message["details"]["calls"]
    assert [(c["id"], c["name"], c["status"]) for c in calls] == [
        ("call-1/1", "bash", "ok"),
        ("call-1/2", "read", "ok"),
        ("call-1/3", "bash", "ok"),
    ]
    assert calls[1]["args"] == '{"path":"hello.txt"}'
    nested = message["nestedCalls"]
    assert ([c["id"] for c in nested["calls"]], nested["complete"]) == (
        ["call-1/1", "call-1/2", "call-1/3"],
        True,
    )
    # two one-second commands in parallel: the script takes about one second, not two
    assert wall_time(message) < 1.8


def test_a_third_party_policy_blocks_a_nested_call_with_its_own_reason(tmp_path: Path) -> None:
    (tmp_path / "no_rm_policy.py").write_text(POLICY)
    (tmp_path / "keep.txt").write_text("x")
    code = (
        "try:\n"
        '    await tools.bash(command="rm keep.txt")\n'
        "except RuntimeError as e:\n"
        '    text("blocked: " + str(e))\n'
        'r = await tools.bash(command="echo fine")\n'
        'r["output"]\n'
    )
    message = pi_call(tmp_path, code, "no_rm_policy")
    assert result_text(message) == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
        "==> text 1/2 <==\nblocked: no_rm_policy: rm is not allowed\n"
        "==> text 2/2 <==\nfine\n"
    )
    calls = message["details"]["calls"]
    assert [(c["id"], c["status"], c.get("error")) for c in calls] == [
        ("call-1/1", "error", "no_rm_policy: rm is not allowed"),
        ("call-1/2", "ok", None),
    ]
    assert (tmp_path / "keep.txt").exists()


NO_OS = (
    "PermissionError: codemode_python scripts have no filesystem, network or processes; "
    "call a tool instead (tools.read, tools.bash, ...)"
)


@pytest.mark.parametrize(
    ("code", "last_line"),
    [
        ('open("/etc/hostname").read()', NO_OS),
        ('import os\nos.listdir("/")', NO_OS),
        ('import os\nos.system("id")', "AttributeError: module 'os' has no attribute 'system'"),
        ("import socket", "ModuleNotFoundError: No module named 'socket'"),
        ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
        ('__import__("os")', "NameError: name '__import__' is not defined"),
        ('import os\nos.environ["HOME"]', NO_OS),
        ('from pathlib import Path\nPath("/etc/hostname").read_text()', NO_OS),
        (
            "import asyncio\nawait asyncio.sleep(1)",
            "NotImplementedError: codemode_python scripts have no timers: time.sleep and "
            "asyncio.sleep do not exist here",
        ),
    ],
)
def test_the_sandbox_reaches_nothing_but_tools(tmp_path: Path, code: str, last_line: str) -> None:
    message = pi_call(tmp_path, code)
    text = result_text(message)
    assert message["isError"] is True
    assert text.startswith("Script failed\nWall time <s> seconds\nOutput:\nScript error:\n")
    assert text.endswith(f"\n{last_line}\n\nNo tool calls were made.")


def test_a_script_that_loops_forever_times_out_and_leaves_no_worker(
    tmp_path: Path, subreaper: None
) -> None:
    code = '# @options: {"timeout_ms": 500}\nwhile True:\n    pass\n'
    message = pi_call(tmp_path, code)
    assert result_text(message) == (
        "Script failed\nWall time <s> seconds\nOutput:\nScript error:\n"
        "Script timed out: Execution timed out after 500 ms\n\nNo tool calls were made."
    )
    assert monty_children() == []


def test_a_script_that_allocates_without_bound_ends_with_the_memory_error(
    tmp_path: Path, subreaper: None
) -> None:
    code = "x = [1]\nwhile True:\n    x = x + x\n"
    message = pi_call(tmp_path, code)
    text = result_text(message)
    assert message["isError"] is True
    assert re.search(
        r"\nMemoryError: memory limit exceeded: \d+ bytes > 268435456 bytes\n\n"
        r"No tool calls were made\.$",
        text,
    ), text
    assert monty_children() == []


def test_a_script_error_lists_the_calls_made_before_it(tmp_path: Path) -> None:
    code = 'await tools.bash(command="echo hi")\nraise ValueError("boom")\n'
    message = pi_call(tmp_path, code)
    assert result_text(message) == (
        "Script failed\nWall time <s> seconds\nOutput:\nScript error:\n"
        "Traceback (most recent call last):\n"
        '  File "<python-input-0>", line 2, in <module>\n'
        '    raise ValueError("boom")\n'
        "ValueError: boom\n\n"
        "Tool calls made before the failure (they are not undone): bash (ok)"
    )


def test_a_missing_tool_names_close_ones(tmp_path: Path) -> None:
    message = pi_call(tmp_path, 'await tools.read_file(path="x")')
    assert result_text(message).endswith(
        "AttributeError: tools.read_file does not exist. Did you mean tools.read? "
        "ALL_TOOLS lists every tool; search_tools(query) finds tools by topic. "
        'Check for a member with hasattr(tools, "read_file").'
        "\n\nNo tool calls were made."
    )


# ---------------------------------------------------------------------------------------------
# In a loop run: events, abort, store (the tool with scripted model turns)
# ---------------------------------------------------------------------------------------------


def codemode_tool() -> Any:

    return to_agent_tool(create_codemode_python_tool_definition())


def sleeper(name: str, seconds: float) -> Any:

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        await trio.sleep(seconds)
        return AgentToolResult(content=[TextContent(text=f"{name} done")])

    return make_tool(name, execute)


def script_call(code: str, call_id: str = "c") -> Any:

    return tool_use(call(call_id, "codemode_python", {"code": code}))


async def test_nested_calls_run_concurrently_with_their_events_under_the_script() -> None:

    code = (
        "import asyncio\n"
        "slow, fast = await asyncio.gather(tools.slow(), tools.fast())\n"
        "[slow, fast]\n"
    )
    tools = [codemode_tool(), sleeper("slow", 0.5), sleeper("fast", 0.0)]
    messages, rec, _ = await run([script_call(code), text("ok")], tools)
    events = [e for e in rec.tool_events() if not e.startswith("update:")]
    assert events == ["start:c", "start:c/1", "start:c/2", "end:c/2", "end:c/1", "end:c", "msg:c"]
    assert [e.parent_tool_call_id for e in rec.of("tool_execution_start")] == [None, "c", "c"]
    progress = [
        [(c["id"], c["status"]) for c in e.partial_result.details["calls"]]
        for e in rec.of("tool_execution_update")
        if e.tool_call_id == "c"
    ]
    assert progress[0] == [] and progress[-1] == [("c/1", "ok"), ("c/2", "ok")]
    assert [("c/?", "running")] in progress
    result = next(m for m in messages if m.role == "toolResult")
    assert re.sub(r"\d+\.\d", "<s>", result.content[0].text) == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
    )
    assert result.content[1].text == '["slow done","fast done"]'
    assert [(c["id"], c["status"]) for c in result.details["calls"]] == [
        ("c/1", "ok"),
        ("c/2", "ok"),
    ]
    assert result.nested_calls["calls"][0]["name"] == "slow"


async def test_abort_cancels_the_script_and_its_nested_calls_and_kills_the_worker() -> None:

    abort = Abort()
    cancelled: list[str] = []

    async def forever(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        try:
            await trio.sleep(0.3)
            abort.abort()
            await trio.sleep_forever()
        finally:
            cancelled.append(tool_call_id)
        raise AssertionError("not reached")

    tools = [codemode_tool(), make_tool("forever", forever)]
    with trio.fail_after(20):
        messages, rec, _ = await run(
            [script_call("await tools.forever()"), text("ok")], tools, abort=abort
        )
    assert cancelled == ["c/1"]
    assert [e for e in rec.tool_events() if not e.startswith("update:")] == [
        "start:c",
        "start:c/1",
        "end:c/1",
        "end:c",
        "msg:c",
    ]
    assert next(m for m in messages if m.role == "toolResult").text == "Operation aborted"
    assert monty_children() == []


async def test_abort_kills_a_script_that_computes_forever() -> None:

    abort = Abort()

    async def abort_soon() -> None:
        await trio.sleep(0.5)
        abort.abort()

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(abort_soon)
            messages, _, _ = await run(
                [script_call("while True:\n    pass\n"), text("ok")],
                [codemode_tool()],
                abort=abort,
            )
    assert next(m for m in messages if m.role == "toolResult").text == "Operation aborted"
    assert monty_children() == []


async def test_store_keeps_a_successful_scripts_values_and_exit_ends_successfully() -> None:

    session = SimpleNamespace(state={})
    tool = wrap_tool_definition(
        create_codemode_python_tool_definition(), SimpleNamespace(session=session)
    )
    script = [
        script_call('store("a", {"n": 1})\nstore("gone", 1)', "c1"),
        script_call('store("b", 2)\nraise ValueError("no")', "c2"),
        script_call(
            'store("gone", None)\ntext([load("a"), load("b"), load("gone")])\nexit()\ntext("not reached")',
            "c3",
        ),
        text("ok"),
    ]
    messages, _, _ = await run(script, [tool])
    outputs = [m for m in messages if m.role == "toolResult"]
    assert outputs[1].is_error is True
    assert outputs[2].is_error is False
    assert "".join(c.text for c in outputs[2].content[1:]) == '[{"n":1},null,null]'
    assert session.state == {"codemode": {"store": {"a": '{"n":1}'}}}


def test_output_over_the_budget_is_cut_and_saved(tmp_path: Path) -> None:
    code = '# @options: {"max_output_tokens": 10}\ntext("a" * 50)\ntext("b" * 50)\n'
    message = pi_call(tmp_path, code)
    text = result_text(message)
    path = message["details"]["fullOutputPath"]
    assert text == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
        "Warning: truncated output (original token count: 34)\nTotal output lines: 4\n\n"
        "==> text 1/2 <==\naaa…24 tokens truncated…bbbbbbbbbbbbbbbbbbbb"
        f"\n\n[Full output: {path} (read with offset/limit)]"
    )
    assert Path(path).read_text() == (
        "==> text 1/2 <==\n" + "a" * 50 + "\n==> text 2/2 <==\n" + "b" * 50
    )
    assert Path(path).stat().st_mode & 0o777 == 0o600
    Path(path).unlink()


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (
            "",
            "Expected Python source text (non-empty). Provide Python only, optionally with a "
            'first line `# @options: {"max_output_tokens": 1000}`.',
        ),
        (
            "x = 1\n# @options: {}",
            "The # @options: line must be the first line of the input; found one on line 2",
        ),
        (
            '# @options: {"timeout_ms": 0}\nx',
            "@options field `timeout_ms` must be a positive integer up to 2147483647",
        ),
        (
            '# @options: {"x": 1}\nx',
            "@options only supports `max_output_tokens` and `timeout_ms`; got `x`",
        ),
        (
            "# @options: {}",
            "The @options line must be followed by Python source on subsequent lines",
        ),
    ],
)
def test_source_errors_are_plain_error_results(tmp_path: Path, code: str, error: str) -> None:
    message = pi_call(tmp_path, code)
    assert (message["content"], message["isError"]) == ([{"type": "text", "text": error}], True)


async def test_workers_are_shared_fifo_and_a_script_waits_at_most_60_seconds(
    autojump_clock: Any,
) -> None:

    order: list[str] = []

    async def hold(name: str, seconds: float) -> None:
        async with codemode_worker_slot():
            order.append(name)
            await trio.sleep(seconds)

    async with trio.open_nursery() as nursery:
        for name, seconds in [("a", 50), ("b", 60), ("c", 1), ("d", 1)]:
            nursery.start_soon(hold, name, seconds)  # c takes a's worker at 50 s, d b's at 60 s
            await trio.lowlevel.checkpoint()
    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold, "e", 200)
        await trio.lowlevel.checkpoint()
        nursery.start_soon(hold, "f", 200)
        await trio.sleep(1)
        with pytest.raises(NoWorkerFree) as excinfo:
            async with codemode_worker_slot():
                raise AssertionError("not reached")
        assert trio.current_time() - started == 61
    assert order == ["a", "b", "c", "d", "e", "f"]
    assert str(excinfo.value) == (
        "No codemode worker became free within 60 seconds. All 2 workers, shared by every "
        "session in this process, are held by other scripts. Retry after they finish."
    )


def test_store_limits_and_texts() -> None:

    store = Store({"old": "1"})
    store.set("a", {"x": [1, 2]})
    assert (store.get("a"), store.get("old"), store.get("missing")) == ({"x": [1, 2]}, 1, None)
    with pytest.raises(ScriptFailure) as big:
        store.set("big", "x" * 262_144)
    assert (big.value.kind, big.value.message) == (
        "RangeError",
        'store("big") value has 262146 characters of JSON, more than the limit of 262144. '
        "store() is for small state such as IDs or summaries. Show images with image(), keep "
        "large data in variables, or write it to a file with a tool.",
    )
    for n in range(4):
        store.set(f"k{n}", "x" * 262_000)
    with pytest.raises(ScriptFailure) as full:
        store.set("k4", "x" * 262_000)
    assert full.value.message.startswith(
        "store is full: stored values would exceed 1048576 characters of JSON. "
        "Delete keys with store(key, None)."
    )
    store.set("old", None)
    assert store.writes()["old"] is None and store.writes()["a"] == '{"x":[1,2]}'


def test_a_failed_call_raises_its_error_text_and_scripts_cannot_start_scripts(
    tmp_path: Path,
) -> None:
    code = (
        "try:\n"
        "    await tools.read()\n"
        "except RuntimeError as e:\n"
        "    text(str(e))\n"
        'text([hasattr(tools, "codemode_python"), hasattr(tools, "read")])\n'
    )
    message = pi_call(tmp_path, code)
    assert result_text(message) == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
        '==> text 1/2 <==\nValidation failed for tool "read":\n  - path: missing\n\n'
        "Received arguments:\n{}\n"
        "==> text 2/2 <==\n[false,true]"
    )
    assert message["details"]["calls"][0]["status"] == "error"


def test_a_sandbox_that_cannot_start_is_a_sandbox_failure(tmp_path: Path) -> None:
    message = pi_call(tmp_path, "1", MONTY_BIN=str(tmp_path / "no-monty"))
    assert result_text(message) == (
        "Script failed\nWall time <s> seconds\nOutput:\nScript error:\n"
        f"Script sandbox failed: failed to spawn monty worker: {tmp_path}/no-monty: "
        "No such file or directory (os error 2)\n\nNo tool calls were made."
    )


def test_the_description_lists_the_tools_only_scripts_can_call() -> None:
    from pi_builtin_tools.codemode.python import DESCRIPTION, prepare_codemode_python_loadout
    from pi_core import ToolLoadout

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        raise AssertionError("not called")

    lookup = make_tool("lookup-user", execute, schema={
        "type": "object",
        "properties": {"id": {"type": "integer"}, "verbose": {"type": "boolean"}},
        "required": ["id"],
    })  # fmt: skip
    direct = make_tool("direct", execute)
    exposure: dict[str, Any] = {"lookup-user": "codemode", "direct": "direct"}
    loadout = ToolLoadout(
        declared=[direct],
        callable=[direct, lookup],
        registered=[direct, lookup],
        get_exposure=lambda name: exposure[name],
        get_namespace=lambda name: None,
        get_prompt_guidelines=lambda name: ["Ask for one user at a time."],
    )
    changes = prepare_codemode_python_loadout(loadout)
    assert changes.descriptions == {
        "codemode_python": DESCRIPTION
        + "\n\nNested tools:\n\n### `lookup_user` (`lookup-user`)\nlookup-user\n\n"
        "- Ask for one user at a time.\n\ncodemode_python tool declaration:\n```python\n"
        "async def lookup_user(*, id: int, verbose: bool | None = None) -> str: ...\n```"
    }
    assert changes.hidden_declarations == []


def test_integers_beyond_a_double_reach_tools_and_text_as_infinity(tmp_path: Path) -> None:
    """Python ints have no bound and CPython refuses to write one of over 4,300 digits as text:
    what a script hands over takes JavaScript's numbers (``inf`` beyond a double's range), so the
    validation answers about ``Infinity`` as Pi 1.6's does and ``text()`` writes it, where the run
    used to end in an internal error."""
    (tmp_path / "two.txt").write_text("a\nb\n")
    code = (
        "try:\n"
        '    await tools.read(path="two.txt", offset=10**5000)\n'
        "except RuntimeError as error:\n"
        "    text(str(error))\n"
        "text(10**5000)\ntext([-(10**400), 10**300, 5])\n"
    )
    message = pi_call(tmp_path, code)
    assert result_text(message) == (
        "Script completed\nWall time <s> seconds\nOutput:\n"
        '==> text 1/3 <==\nValidation failed for tool "read":\n'
        "  - offset: expected number, got Infinity\n\n"
        'Received arguments:\n{\n  "path": "two.txt",\n  "offset": null\n}\n'
        "==> text 2/3 <==\nInfinity\n"
        f"==> text 3/3 <==\n[-Infinity,{10**300},5]"
    )


def _order(rec: Any) -> list[tuple[str, str, Any]]:
    """The tool events of a run as ``(type, id, rows)``: a script's update carries its call
    rows as ``(id, status)``."""
    out: list[tuple[str, str, Any]] = []
    for e in rec.events:
        if e.type == "tool_execution_start":
            out.append(("start", e.tool_call_id, None))
        elif e.type == "tool_execution_end":
            out.append(("end", e.tool_call_id, None))
        elif e.type == "tool_execution_update" and e.tool_call_id == "c":
            rows = [(c["id"], c["name"], c["status"]) for c in e.partial_result.details["calls"]]
            out.append(("update", "c", rows))
    return out


PI_ORDER = [
    ("start", "c", None),
    ("update", "c", []),
    ("update", "c", [("c/?", "a", "running")]),
    ("start", "c/1", None),
    ("update", "c", [("c/?", "a", "running"), ("c/?", "b", "running")]),
    ("start", "c/2", None),
    ("end", "c/1", None),
    ("update", "c", [("c/1", "a", "ok"), ("c/?", "b", "running")]),
    ("end", "c/2", None),
    ("update", "c", [("c/1", "a", "ok"), ("c/2", "b", "ok")]),
    ("end", "c", None),
]
"""Pi 1.6.0's events for a script that makes two calls before it waits, in sequential mode
(``tests/e2e/cases16_pi/codemode-events/cm-sequential-all``): each call's row and update, then
its start, in the script's order; then each end and the update that records it."""


@pytest.mark.parametrize("engine", ["codemode", "codemode_python"])
async def test_calls_made_before_the_script_waits_start_in_its_order(engine: str) -> None:
    """Both engines give Pi's order, every time (trio may run new tasks in any order; the
    calls are registered in the script's order and run once the script waits)."""
    from pi_builtin_tools.codemode.javascript import create_codemode_tool_definition
    from pi_core._loop.config import LoopConfig

    if engine == "codemode":
        definition = create_codemode_tool_definition()
        code = "await Promise.all([tools.a(), tools.b()]);"
    else:
        definition = create_codemode_python_tool_definition()
        code = "import asyncio\nawait asyncio.gather(tools.a(), tools.b())\n"
    tools = [to_agent_tool(definition), sleeper("a", 0.0), sleeper("b", 0.0)]
    for _ in range(5):
        script = [tool_use(call("c", engine, {"code": code})), text("ok")]
        _, rec, _ = await run(script, tools, config=LoopConfig(tool_execution="sequential"))
        assert _order(rec) == PI_ORDER


def announcer(name: str) -> Any:
    """A tool that reports progress as soon as it starts (as bash's empty first update), then
    waits on a thread: what it does before that wait belongs to the turn that called it."""

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        if on_update is not None:
            on_update(AgentToolResult(content=[]))
        await trio.to_thread.run_sync(time.sleep, 0.05)
        return AgentToolResult(content=[TextContent(text=f"{name} done")])

    return make_tool(name, execute)


def _order_with_updates(rec: Any) -> list[tuple[str, str, Any]]:
    """:func:`_order` plus the nested calls' own updates (``("update", id, None)``)."""
    out: list[tuple[str, str, Any]] = []
    for e in rec.events:
        if e.type == "tool_execution_update" and e.tool_call_id != "c":
            out.append(("update", e.tool_call_id, None))
        else:
            out.extend(_order(SimpleNamespace(events=[e])))
    return out


def _announcer_order(sequential: bool) -> list[tuple[str, str, Any]]:
    """Pi 1.6.0's order for ``Promise.all([tools.a(), tools.b()])``, ``a`` an announcer and
    ``b`` a tool that answers without waiting: ``a``'s first update comes before the script's
    second call is seen (Pi's host runs a call as its message arrives); ``b`` ends only once
    the script waits, never within the turn that made it."""
    head = [
        ("start", "c", None),
        ("update", "c", []),
        ("update", "c", [("c/?", "a", "running")]),
        ("start", "c/1", None),
        ("update", "c/1", None),
        ("update", "c", [("c/?", "a", "running"), ("c/?", "b", "running")]),
        ("start", "c/2", None),
    ]
    if sequential:  # b waits its turn behind a
        tail = [
            ("end", "c/1", None),
            ("update", "c", [("c/1", "a", "ok"), ("c/?", "b", "running")]),
            ("end", "c/2", None),
            ("update", "c", [("c/1", "a", "ok"), ("c/2", "b", "ok")]),
        ]
    else:
        tail = [
            ("end", "c/2", None),
            ("update", "c", [("c/?", "a", "running"), ("c/2", "b", "ok")]),
            ("end", "c/1", None),
            ("update", "c", [("c/1", "a", "ok"), ("c/2", "b", "ok")]),
        ]
    return [*head, *tail, ("end", "c", None)]


@pytest.mark.parametrize("sequential", [False, True], ids=["parallel", "sequential"])
@pytest.mark.parametrize("engine", ["codemode", "codemode_python"])
async def test_a_call_runs_until_it_waits_before_the_next_call_is_taken(
    engine: str, sequential: bool
) -> None:
    """Both engines take the script's next call only once the call just made waits on
    something (here a thread), so its first update comes first; a call that needs no wait
    still ends only when the script waits."""
    from pi_builtin_tools.codemode.javascript import create_codemode_tool_definition
    from pi_core._loop.config import LoopConfig

    if engine == "codemode":
        definition = create_codemode_tool_definition()
        code = "await Promise.all([tools.a(), tools.b()]);"
    else:
        definition = create_codemode_python_tool_definition()
        code = "import asyncio\nawait asyncio.gather(tools.a(), tools.b())\n"
    tools = [to_agent_tool(definition), announcer("a"), sleeper("b", 0.0)]
    config = LoopConfig(tool_execution="sequential" if sequential else "parallel")
    for _ in range(3):
        script = [tool_use(call("c", engine, {"code": code})), text("ok")]
        _, rec, _ = await run(script, tools, config=config)
        assert _order_with_updates(rec) == _announcer_order(sequential)
