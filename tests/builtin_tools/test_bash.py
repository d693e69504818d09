"""The bash tool (seed §十五/§十六; spec §7.4, §8.11 #132–#150; port decision 6; §10 rows 11–16).

Real commands through the local backend; a few small in-test backends stand for what a custom
``BashOperations`` may do (stream a fixed sequence, report no exit code, fail)."""

from __future__ import annotations

import itertools
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import trio

from pi_builtin_tools.shell.bash import (
    DESCRIPTION,
    PARAMETERS,
    BashToolOptions,
    create_bash_tool_definition,
    js_number,
    strip_ansi,
)
from pi_builtin_tools.shell.local import LocalBashOperations
from pi_core._errors import CommandTimeout, ConfigError, ToolAborted, ToolError
from pi_core._plugins.contexts import BashSpawnContext
from pi_core._wire.messages import AgentToolResult
from pi_core.testing.bash_contract import pids_in

FULL_OUTPUT = re.compile(r"Full output: (/\S+/pi-bash-[0-9a-f]{16}\.log)\]")


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    """Full-output files go to this test's folder (``tempfile.gettempdir()``)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


@pytest.fixture
def workdir(tmp_path) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    return str(ws)


async def call(
    workdir: str,
    command: str,
    *,
    timeout: float | None = None,
    operations: Any = None,
    updates: list[AgentToolResult] | None = None,
    ctx: Any = None,
    **kwargs: Any,
) -> AgentToolResult:
    tool = create_bash_tool_definition(
        workdir, operations or LocalBashOperations(kill_grace=0.3), **kwargs
    )
    params: dict[str, Any] = {"command": command}
    if timeout is not None:
        params["timeout"] = timeout
    on_update = updates.append if updates is not None else None
    with trio.fail_after(30):
        return await tool.execute("call-1", params, on_update, ctx)


def full_output_path(text: str) -> str:
    match = FULL_OUTPUT.search(text)
    assert match, text
    return match.group(1)


def write_text(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# -- in-test backends -------------------------------------------------------------------------


@dataclass
class ScriptedOperations:
    """Streams ``chunks`` (``float`` items are pauses in seconds), then returns ``exit_code``
    or raises ``error``; records the arguments it got."""

    chunks: list[bytes | float]
    exit_code: int | None = 0
    error: BaseException | None = None
    hang: bool = False
    seen: dict[str, Any] | None = None

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        self.seen = {"command": command, "cwd": cwd, "env": env, "timeout": timeout}
        for chunk in self.chunks:
            if isinstance(chunk, float):
                await trio.sleep(chunk)
            else:
                on_data(chunk)
        if self.hang:
            await trio.sleep_forever()
        if self.error is not None:
            raise self.error
        return self.exit_code


# -- definition ---------------------------------------------------------------------------------


def test_definition_matches_pi(workdir) -> None:
    tool = create_bash_tool_definition(workdir, LocalBashOperations())
    assert tool.name == "bash"
    assert tool.label == "bash"
    assert tool.description == (
        "Execute a bash command in the current working directory. Returns stdout and stderr. "
        "Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, "
        "full output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    assert tool.description == DESCRIPTION
    assert (
        tool.parameters
        == PARAMETERS
        == {
            "type": "object",
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {
                    "type": "number",
                    "description": "Timeout in seconds (optional, no default timeout)",
                },
            },
        }
    )
    assert tool.prompt_snippet == "Execute bash commands (ls, grep, find, etc.)"
    assert tool.prompt_guidelines == [
        "You can inspect PI_* environment variables for current model and session details."
    ]
    hidden = create_bash_tool_definition(
        workdir, LocalBashOperations(), options={"expose_session_environment": False}
    )
    assert hidden.prompt_guidelines == []


# -- outcomes -----------------------------------------------------------------------------------


def wall_time(result: Any) -> float:
    """Pop ``structured_content["wall_time_seconds"]`` (Pi: ``Math.round(ms / 100) / 10``)."""
    seconds = result.structured_content.pop("wall_time_seconds")
    assert isinstance(seconds, float | int) and seconds >= 0
    assert round(seconds * 10) == seconds * 10
    return float(seconds)


async def test_132_echo_keeps_trailing_newline(workdir) -> None:
    result = await call(workdir, "echo 'test output'")
    assert list(result.structured_content) == [
        "output",
        "truncated",
        "exit_code",
        "wall_time_seconds",
    ]
    assert wall_time(result) < 5
    assert result.to_json_dict() == {
        "content": [{"type": "text", "text": "test output\n"}],
        "structuredContent": {"output": "test output\n", "truncated": False, "exit_code": 0},
    }


async def test_wall_time_seconds_is_rounded_to_tenths(workdir) -> None:
    result = await call(workdir, "sleep 0.3")
    assert 0.3 <= wall_time(result) <= 2.0


async def test_no_output(workdir) -> None:
    result = await call(workdir, "true")
    assert result.text == "(no output)"
    assert result.details is None
    assert result.is_error is None


async def test_runs_in_the_workdir(workdir) -> None:
    write_text(os.path.join(workdir, "marker.txt"), "m\n")
    result = await call(workdir, "pwd; ls")
    assert result.text == f"{workdir}\nmarker.txt\n"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("echo a\x00b", "Invalid command: a command cannot contain a NUL byte."),
        (
            "echo \ud800",
            "Invalid command: a command cannot contain a lone surrogate (U+D800 to U+DFFF), "
            "which cannot be passed to a process.",
        ),
    ],
)
async def test_a_command_no_process_can_take_is_a_clear_error(workdir, command, message) -> None:
    with pytest.raises(ToolError) as info:
        await call(workdir, command)
    assert str(info.value) == message


async def test_an_escaped_byte_in_a_command_reaches_the_shell_as_that_byte(workdir) -> None:
    result = await call(workdir, "printf %s \udcff | od -An -tx1")
    assert result.text == " ff\n"


async def test_133_nonzero_exit_is_an_error_result(workdir) -> None:
    result = await call(workdir, "exit 1")
    wall_time(result)
    assert result.to_json_dict() == {
        "content": [{"type": "text", "text": "(no output)\n\nCommand exited with code 1"}],
        "isError": True,
        "structuredContent": {"output": "", "truncated": False, "exit_code": 1},
    }


def test_output_schema_and_replay_policy(workdir) -> None:
    definition = create_bash_tool_definition(workdir, LocalBashOperations())
    assert definition.replay == "never"
    assert definition.output_schema == {
        "type": "object",
        "required": ["output", "truncated", "exit_code", "wall_time_seconds"],
        "properties": {
            "output": {
                "type": "string",
                "description": "Combined stdout and stderr, possibly truncated",
            },
            "truncated": {"type": "boolean"},
            "full_output_path": {"type": "string", "description": "Full output, when truncated"},
            "exit_code": {"type": "number"},
            "wall_time_seconds": {"type": "number"},
        },
    }


async def test_nonzero_exit_keeps_output(workdir) -> None:
    result = await call(workdir, "echo out; sleep 0.1; echo err >&2; exit 3")
    assert result.text == "out\nerr\n\n\nCommand exited with code 3"
    assert result.is_error is True
    assert result.structured_content["exit_code"] == 3


async def test_150_signal_death_is_128_plus_signal(workdir) -> None:
    result = await call(workdir, "echo x; kill -9 $$")
    assert (result.text, result.is_error) == ("x\n\n\nCommand exited with code 137", True)
    assert result.structured_content["exit_code"] == 137


async def test_nonzero_exit_with_truncated_output_keeps_details(workdir) -> None:
    result = await call(workdir, "seq 3000; exit 4")
    path = full_output_path(result.text)
    assert result.text == (
        "\n".join(str(i) for i in range(1001, 3001))
        + f"\n\n[Showing lines 1001-3000 of 3000. Full output: {path}]"
        + "\n\nCommand exited with code 4"
    )
    assert result.is_error is True
    assert result.details["fullOutputPath"] == path
    assert result.details["truncation"]["truncatedBy"] == "lines"


async def test_no_exit_code_is_an_error(workdir) -> None:
    result = await call(workdir, "ignored", operations=ScriptedOperations([], exit_code=None))
    assert (result.text, result.is_error) == (
        "(no output)\n\nCommand terminated without an exit code",
        True,
    )
    result = await call(workdir, "ignored", operations=ScriptedOperations([b"x\n"], exit_code=None))
    assert result.text == "x\n\n\nCommand terminated without an exit code"
    assert result.structured_content is None  # only a command that exited with a code has one


async def test_other_backend_errors_propagate_unchanged(workdir) -> None:
    with pytest.raises(RuntimeError, match=r"^weird failure$"):
        await call(
            workdir, "x", operations=ScriptedOperations([b"a"], error=RuntimeError("weird failure"))
        )


# -- timeout ------------------------------------------------------------------------------------


async def test_134_timeout(workdir) -> None:
    with pytest.raises(ToolError) as info:
        await call(workdir, "sleep 5", timeout=1)
    assert str(info.value) == "Command timed out after 1 seconds"


async def test_timeout_keeps_output(workdir) -> None:
    start = trio.current_time()
    with pytest.raises(ToolError) as info:
        await call(workdir, "echo before; sleep 5", timeout=1)
    assert str(info.value) == "before\n\n\nCommand timed out after 1 seconds"
    assert trio.current_time() - start < 3


async def test_fractional_timeout_text(workdir) -> None:
    with pytest.raises(ToolError) as info:
        await call(workdir, "sleep 5", timeout=0.5)
    assert str(info.value) == "Command timed out after 0.5 seconds"


async def test_c18_timeout_kills_term_ignoring_tree(workdir) -> None:
    """c18-bash-timeout-kills-term-ignoring-tree."""
    start = trio.current_time()
    command = "sh -c 'trap \"\" TERM; exec sleep 97' & sleep 98"
    with pytest.raises(ToolError) as info:
        await call(workdir, command, timeout=2, operations=LocalBashOperations())
    assert str(info.value) == "Command timed out after 2 seconds"
    assert trio.current_time() - start < 6
    # the descendants printed nothing; look for them by their working directory, which is this
    # test's own (other tests and other test runs on the machine may run the same commands)
    real_workdir = str(await trio.Path(workdir).resolve())
    left = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cwd = os.readlink(f"/proc/{name}/cwd")  # fails for a zombie: it has no cwd
                cmdline = read_bytes(f"/proc/{name}/cmdline")
            except OSError:
                continue
            if cwd == real_workdir:
                left.append(cmdline)
    assert left == []


@pytest.mark.parametrize("kind", ["timeout", "aborted"])
async def test_135_truncated_timeout_and_abort_name_the_full_output(workdir, kind) -> None:
    chunks: list[bytes | float] = [f"{i}\n".encode() for i in range(1, 3001)]
    if kind == "timeout":
        ops = ScriptedOperations(chunks, error=CommandTimeout(5))
        with pytest.raises(ToolError) as info:
            await call(workdir, "x", timeout=5, operations=ops)
        text, status = str(info.value), "Command timed out after 5 seconds"
    else:
        ops = ScriptedOperations(chunks, hang=True)
        with trio.move_on_after(0.3):
            with pytest.raises(ToolAborted) as aborted:
                await call(workdir, "x", operations=ops)
        result = aborted.value.partial_result
        assert (result.is_error, result.details) == (True, {})
        text, status = result.text, "Command aborted"
    path = full_output_path(text)
    assert text == (
        "\n".join(str(i) for i in range(1001, 3001))
        + f"\n\n[Showing lines 1001-3000 of 3000. Full output: {path}]\n\n{status}"
    )
    assert "Full output: undefined" not in text
    assert read_bytes(path) == "".join(f"{i}\n" for i in range(1, 3001)).encode()


@pytest.mark.parametrize("bad", [0, -1, math.inf, -math.inf, math.nan])
async def test_invalid_timeout(workdir, bad) -> None:
    ops = ScriptedOperations([b"never"])
    with pytest.raises(ToolError) as info:
        await call(workdir, "echo never", timeout=bad, operations=ops)
    assert str(info.value) == "Invalid timeout: must be a finite number of seconds"
    assert ops.seen is None


async def test_timeout_maximum(workdir) -> None:
    ops = ScriptedOperations([])
    with pytest.raises(ToolError) as info:
        await call(workdir, "x", timeout=2147483.648, operations=ops)
    assert str(info.value) == "Invalid timeout: maximum is 2147483.647 seconds"
    assert ops.seen is None
    await call(workdir, "x", timeout=2147483.647, operations=ops)
    assert ops.seen is not None and ops.seen["timeout"] == 2147483.647


def test_js_number() -> None:
    assert [js_number(v) for v in (1, 1.0, 0.5, 2147483.647, 1e-7, 0.00001, 1e21)] == [
        "1",
        "1",
        "0.5",
        "2147483.647",
        "1e-7",
        "0.00001",
        "1e+21",
    ]


# -- abort --------------------------------------------------------------------------------------


async def test_148_pre_aborted(workdir) -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(ToolAborted) as info:
            await call(workdir, "echo never")
    assert info.value.partial_result.text == "Command aborted"
    assert str(info.value) == "Command aborted"


async def test_148_abort_after_output_kills_the_tree(workdir) -> None:
    """Aborted once both background processes printed their pid (one ignores SIGTERM, one left
    the session): when the tool has raised ``ToolAborted``, both are dead and reaped (the
    backend's cleanup is shielded and waits for the whole tree)."""
    both_started = trio.Event()

    class Updates(list[AgentToolResult]):
        def append(self, item: AgentToolResult) -> None:
            super().append(item)
            if len(pids_in(item.text.encode())) == 2:
                both_started.set()

    updates = Updates()
    command = (
        "sh -c 'trap \"\" TERM; echo pid:$$ >&2; exec sleep 97' & "
        "setsid sh -c 'echo pid:$$ >&2; exec sleep 96' & sleep 98"
    )
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def cancel_when_started() -> None:
                await both_started.wait()
                scope.cancel()

            nursery.start_soon(cancel_when_started)
            with pytest.raises(ToolAborted) as info:
                await call(workdir, command, updates=updates)
    text = info.value.partial_result.text
    pids = pids_in(text.encode())
    assert len(pids) == 2
    assert text == f"pid:{pids[0]}\npid:{pids[1]}\n\n\nCommand aborted"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# -- output -------------------------------------------------------------------------------------


async def test_147_stderr_and_stdout_interleave_in_arrival_order(workdir) -> None:
    result = await call(workdir, "echo a; sleep .05; echo b >&2; sleep .05; echo c")
    assert result.text == "a\nb\nc\n"


async def test_144_split_utf8_chunks(workdir) -> None:
    result = await call(workdir, "x", operations=ScriptedOperations([b"\xe2", b"\x82\xac\n"]))
    assert result.text == "€\n"


async def test_c22_split_multibyte_character_from_a_real_process(workdir) -> None:
    command = (
        "python3 -c \"import os,time; os.write(1, b'cleanup \\xe2'); time.sleep(0.3); "
        "os.write(1, b'\\x80\\x94 end\\n')\""
    )
    result = await call(workdir, command)
    assert (result.text, result.is_error) == ("cleanup — end\n", None)


async def test_invalid_utf8_becomes_replacement_characters(workdir) -> None:
    result = await call(workdir, r"printf 'a\377b\n'")
    assert result.text == "a\ufffdb\n"


async def test_2000_lines_are_not_truncated(workdir) -> None:
    result = await call(workdir, "seq 2000")
    assert result.text == "".join(f"{i}\n" for i in range(1, 2001))
    assert result.details is None


async def test_146_c20_line_truncation_saves_full_output(workdir, private_tmpdir) -> None:
    result = await call(workdir, "seq 1 3000")
    path = full_output_path(result.text)
    assert result.text == (
        "\n".join(str(i) for i in range(1001, 3001))
        + f"\n\n[Showing lines 1001-3000 of 3000. Full output: {path}]"
    )
    assert os.path.dirname(path) == str(private_tmpdir)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_bytes(path) == "".join(f"{i}\n" for i in range(1, 3001)).encode()
    truncation = result.details["truncation"]
    assert result.details["fullOutputPath"] == path
    assert {k: v for k, v in truncation.items() if k != "content"} == {
        "truncated": True,
        "truncatedBy": "lines",
        "totalLines": 3000,
        "totalBytes": 13893,
        "outputLines": 2000,
        "outputBytes": 9999,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 2000,
        "maxBytes": 51200,
    }


async def test_143_4000_lines_with_trailing_newline(workdir) -> None:
    result = await call(workdir, "for i in $(seq -w 1 4000); do echo line-$i; done")
    path = full_output_path(result.text)
    assert result.text == (
        "\n".join(f"line-{i:04d}" for i in range(2001, 4001))
        + f"\n\n[Showing lines 2001-4000 of 4000. Full output: {path}]"
    )
    assert "4001" not in result.text
    assert result.details["truncation"]["totalLines"] == 4000
    assert result.details["truncation"]["outputLines"] == 2000


async def test_byte_limit_tail(workdir) -> None:
    result = await call(workdir, "for i in $(seq 1 80); do printf '%0800d\\n' $i; done")
    path = full_output_path(result.text)
    content = "\n".join(f"{i:0800d}" for i in range(18, 81))
    assert (
        result.text
        == f"{content}\n\n[Showing lines 18-80 of 80 (50.0KB limit). Full output: {path}]"
    )
    assert result.details == {
        "truncation": {
            "content": content,
            "truncated": True,
            "truncatedBy": "bytes",
            "totalLines": 80,
            "totalBytes": 64080,
            "outputLines": 63,
            "outputBytes": 50462,
            "lastLinePartial": False,
            "firstLineExceedsLimit": False,
            "maxLines": 2000,
            "maxBytes": 51200,
        },
        "fullOutputPath": path,
    }


async def test_one_long_line(workdir) -> None:
    result = await call(workdir, "head -c 60000 /dev/zero | tr '\\0' a")
    path = full_output_path(result.text)
    assert result.text == (
        "a" * 51200 + f"\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]"
    )
    assert read_bytes(path) == b"a" * 60000


async def test_one_long_line_ending_with_newline_reports_its_size(workdir) -> None:
    result = await call(workdir, "head -c 60000 /dev/zero | tr '\\0' a; echo")
    path = full_output_path(result.text)
    assert result.text == (
        "a" * 51200 + f"\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]"
    )


async def test_c23_ansi_escape_sequences_are_removed(workdir) -> None:
    command = (
        "printf '\\033[1;31mFAIL\\033[0m test_a\\n\\033[48;2;200;10;140m    \\033[0m swatch\\n"
        "\\033]8;;https://example.com\\033\\\\link\\033]8;;\\033\\\\\\n'"
    )
    result = await call(workdir, command)
    assert result.text == "FAIL test_a\n     swatch\nlink\n"
    # programs get the raw output, escape sequences included (Pi 1.6.0 readFullOutput)
    assert result.structured_content["output"] == (
        "\x1b[1;31mFAIL\x1b[0m test_a\n\x1b[48;2;200;10;140m    \x1b[0m swatch\n"
        "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\\n"
    )


async def test_ansi_colours_and_cursor_moves(workdir) -> None:
    result = await call(
        workdir, "printf '\\033[31mred\\033[0m plain\\n\\033[2K\\033[1Gdone\\033[?25h\\n'"
    )
    assert result.text == "red plain\ndone\n"


async def test_full_output_file_keeps_ansi_raw(workdir) -> None:
    result = await call(
        workdir, "for i in $(seq 1 2500); do printf '\\033[32m%d\\033[0m\\n' $i; done"
    )
    path = full_output_path(result.text)
    assert "\x1b" not in result.text
    assert result.text.startswith("501\n502\n")
    expected = "".join(f"\x1b[32m{i}\x1b[0m\n" for i in range(1, 2501)).encode()
    assert read_bytes(path) == expected


def test_strip_ansi_leaves_plain_text_alone() -> None:
    assert strip_ansi("a [0m b\r\n\tc") == "a [0m b\r\n\tc"
    assert strip_ansi("\x1b]0;title\x07x\x1b(B\x1b7y\x1bPq#0\x1b\\z") == "xyz"


async def test_structured_output_keeps_the_first_and_last_half_mib(workdir) -> None:
    result = await call(workdir, "head -c 1199995 /dev/zero | tr '\\0' x; echo; echo end")
    wall_time(result)
    structured = result.structured_content
    path = full_output_path(result.text)
    assert list(structured) == ["output", "truncated", "full_output_path", "exit_code"]
    assert structured["truncated"] is True
    assert structured["exit_code"] == 0
    assert structured["full_output_path"] == path
    omitted = 1200000 - 1048576
    assert omitted == 151424
    assert structured["output"] == (
        "x" * 524288 + "\n\n[... 151424 bytes omitted ...]\n\n" + "x" * (524288 - 5) + "\nend\n"
    )
    assert len(structured["output"]) == 1048610  # delta §7.2, verified


async def test_structured_output_up_to_one_mib_is_whole_and_has_no_path(workdir) -> None:
    result = await call(workdir, "seq 2500")
    wall_time(result)
    assert result.structured_content == {
        "output": "".join(f"{i}\n" for i in range(1, 2501)),
        "truncated": False,
        "exit_code": 0,
    }
    assert "Full output:" in result.text  # the model text is truncated, the program's is not


async def test_structured_output_cut_on_character_boundaries(workdir) -> None:
    result = await call(workdir, "python3 -c \"print('€' * 400000, end='')\"")
    output = result.structured_content["output"]
    # 1 200 000 bytes: the head stops before a split "€", the tail skips its continuation bytes
    assert output == "€" * (524288 // 3) + "\n\n[... 151424 bytes omitted ...]\n\n" + "€" * (
        524288 // 3
    )
    assert result.structured_content["truncated"] is True


# -- stdin, background children ---------------------------------------------------------------


async def test_c19_commands_reading_stdin_get_end_of_file(workdir) -> None:
    start = trio.current_time()
    assert (await call(workdir, "cat")).text == "(no output)"
    assert (await call(workdir, 'read -r line; echo "got:[$line]"')).text == "got:[]\n"
    result = await call(workdir, 'python3 -c "import sys; print(len(sys.stdin.read()))"')
    assert result.text == "0\n"
    assert trio.current_time() - start < 5


async def test_background_server_does_not_block_and_keeps_running(workdir) -> None:
    start = trio.current_time()
    result = await call(workdir, "sleep 30 & echo pid:$!; echo started")
    (pid,) = pids_in(result.text.encode())
    try:
        assert result.text == f"pid:{pid}\nstarted\n"
        assert trio.current_time() - start < 3
        os.kill(pid, 0)  # still running
    finally:
        os.kill(pid, 9)


async def test_background_child_with_redirected_output_does_not_block(workdir) -> None:
    result = await call(workdir, "nohup sleep 30 >/dev/null 2>&1 & echo pid:$!")
    (pid,) = pids_in(result.text.encode())
    os.kill(pid, 9)
    assert result.text == f"pid:{pid}\n"


# -- updates ------------------------------------------------------------------------------------


class TimedUpdates(list[AgentToolResult]):
    """Updates with the trio time at which each arrived (``times``)."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def append(self, item: AgentToolResult) -> None:
        self.times.append(trio.current_time())
        super().append(item)


async def test_149_first_update_is_empty_then_throttled_snapshots(workdir, autojump_clock) -> None:
    """Virtual time (trio's MockClock) makes the throttle exact: the first chunk emits at once,
    chunks inside the 100 ms window wait for the timer at ``last + 100 ms``, a chunk after the
    window emits at once, and what is pending when the command ends is flushed once."""
    updates = TimedUpdates()
    chunks: list[bytes | float] = [b"a\n", 0.05, b"b\n", 0.02, b"c\n", 0.2, b"d\n", 0.03, b"e\n"]
    start = trio.current_time()
    result = await call(workdir, "x", operations=ScriptedOperations(chunks), updates=updates)
    assert [u.to_json_dict() for u in updates] == [
        {"content": []},
        {"content": [{"type": "text", "text": "a\n"}], "details": {}},
        {"content": [{"type": "text", "text": "a\nb\nc\n"}], "details": {}},
        {"content": [{"type": "text", "text": "a\nb\nc\nd\n"}], "details": {}},
        {"content": [{"type": "text", "text": "a\nb\nc\nd\ne\n"}], "details": {}},
    ]
    assert [round(t - start, 6) for t in updates.times] == [0, 0, 0.1, 0.27, 0.3]
    assert result.text == "a\nb\nc\nd\ne\n"


async def test_149_throttled_snapshots_from_a_real_process(workdir) -> None:
    """With a real process the chunking depends on scheduling ("a" and "b" may arrive in one
    read); what holds whatever the timing: the first update is empty, every later one is a
    snapshot of everything so far (growing, in order), they are at least 100 ms apart except
    the final flush, and the last one has all the output."""
    updates = TimedUpdates()
    result = await call(workdir, "echo a; sleep 0.05; echo b", updates=updates)
    assert [u.to_json_dict() for u in updates] in (
        [
            {"content": []},
            {"content": [{"type": "text", "text": "a\n"}], "details": {}},
            {"content": [{"type": "text", "text": "a\nb\n"}], "details": {}},
        ],
        [
            {"content": []},
            {"content": [{"type": "text", "text": "a\nb\n"}], "details": {}},
        ],
    )
    assert result.text == "a\nb\n"


async def test_142_chatty_output_is_throttled(workdir, autojump_clock) -> None:
    """5000 chunks within one 100 ms window: the first emits at once, the rest are flushed once
    at the end."""
    updates: list[AgentToolResult] = []
    chunks: list[bytes | float] = []
    for i in range(5000):
        chunks += [f"line {i}\n".encode(), 0.0]
    result = await call(workdir, "x", operations=ScriptedOperations(chunks), updates=updates)
    assert [u.text for u in updates[:2]] == ["", "line 0\n"]
    assert updates[0].content == []
    assert len(updates) == 3
    assert updates[2].text == "\n".join(f"line {i}" for i in range(3000, 5000))
    assert updates[2].details["truncation"]["totalLines"] == 5000
    assert result.text.startswith(updates[2].text)


async def test_chatty_output_over_time_gets_one_update_per_window(workdir, autojump_clock) -> None:
    """A chunk every 7 ms for 0.7 s: updates at 0 (first chunk), then one per 100 ms window
    from the timer, then the final flush; each a snapshot of everything so far."""
    updates = TimedUpdates()
    chunks: list[bytes | float] = []
    for i in range(100):
        chunks += [f"{i}\n".encode(), 0.007]
    start = trio.current_time()
    await call(workdir, "x", operations=ScriptedOperations(chunks), updates=updates)
    times = [round(t - start, 6) for t in updates.times]
    assert times == [0, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    # chunk i arrives at 7*i ms; an update at T holds chunks 0..floor(T / 7 ms)
    expected = [""] + [
        "".join(f"{i}\n" for i in range(min(99, int(t * 1000) // 7) + 1)) for t in times[1:]
    ]
    assert [u.text for u in updates] == expected


async def test_updates_are_at_least_100ms_apart(workdir) -> None:
    """A real process writing every 20 ms for 0.8 s or more: whatever the scheduling, the
    updates between the first (empty) one and the final flush reach the receiver at least
    100 ms apart (the interval counts from the delivery of the previous update), each a
    growing snapshot of everything so far, and the last one holds all the output."""
    updates = TimedUpdates()
    await call(workdir, "for i in $(seq 1 40); do echo $i; sleep 0.02; done", updates=updates)
    gaps = [b - a for a, b in itertools.pairwise(updates.times[1:-1])]
    assert len(gaps) >= 2
    assert min(gaps) >= 0.1 - 1e-9
    full = "".join(f"{i}\n" for i in range(1, 41))
    texts = [u.text for u in updates]
    assert texts[0] == ""
    assert all(full.startswith(t) for t in texts)
    assert all(len(a) < len(b) for a, b in itertools.pairwise(texts))
    assert texts[-1] == full


async def test_truncated_updates_carry_truncation_and_path(workdir) -> None:
    updates: list[AgentToolResult] = []
    await call(workdir, "seq 3000", updates=updates)
    last = updates[-1]
    assert last.text == "\n".join(str(i) for i in range(1001, 3001))
    assert set(last.details) == {"truncation", "fullOutputPath"}
    assert last.details["truncation"]["totalLines"] == 3000


async def test_chunks_after_finish_are_ignored(workdir) -> None:
    leaked: list[Callable[[bytes], None]] = []

    class Leaky(ScriptedOperations):
        async def exec(self, command, cwd, *, on_data, env=None, timeout=None):  # type: ignore[override]
            leaked.append(on_data)
            return await super().exec(command, cwd, on_data=on_data, env=env, timeout=timeout)

    result = await call(workdir, "x", operations=Leaky([b"a\n"]))
    leaked[0](b"late\n")  # no error, no effect
    assert result.text == "a\n"


# -- prefix, spawn context, environment ---------------------------------------------------------


async def test_139_command_prefix_sets_variables(workdir) -> None:
    result = await call(
        workdir, "echo $TEST_VAR", options={"commandPrefix": "export TEST_VAR=hello"}
    )
    assert result.text.strip() == "hello"


async def test_140_prefix_output_comes_first(workdir) -> None:
    result = await call(
        workdir, "echo command-output", options=BashToolOptions(command_prefix="echo prefix-output")
    )
    assert result.text == "prefix-output\ncommand-output\n"


async def test_141_no_prefix(workdir) -> None:
    ops = ScriptedOperations([b"no-prefix"])
    result = await call(workdir, "echo no-prefix", operations=ops)
    assert result.text == "no-prefix"
    assert ops.seen is not None and ops.seen["command"] == "echo no-prefix"


def test_unknown_option_is_a_config_error(workdir) -> None:
    with pytest.raises(ConfigError) as info:
        create_bash_tool_definition(workdir, LocalBashOperations(), options={"comand_prefix": "x"})
    assert str(info.value) == "pi.toml: tools.bash.comand_prefix: unknown key"


async def test_145_spawn_hook_env_reaches_the_command(workdir) -> None:
    def hook(context: BashSpawnContext) -> BashSpawnContext:
        context.env["FROM_HOOK"] = "from-local-ops"
        return context

    result = await call(workdir, "echo $FROM_HOOK", spawn_hook=hook)
    assert result.text == "from-local-ops\n"


async def test_spawn_hook_may_replace_command_and_cwd(workdir, tmp_path) -> None:
    other = tmp_path / "other"
    other.mkdir()

    def hook(context: BashSpawnContext) -> BashSpawnContext:
        return BashSpawnContext(
            command=f"echo wrapped; {context.command}", cwd=str(other), env=context.env
        )

    result = await call(workdir, "pwd", spawn_hook=hook)
    assert result.text == f"wrapped\n{other}\n"
    unchanged = await call(workdir, "pwd", spawn_hook=lambda context: None)
    assert unchanged.text == f"{workdir}\n"


async def test_136_missing_cwd(tmp_path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(ToolError) as info:
        await call(missing, "echo x")
    assert str(info.value) == (
        f"Working directory does not exist: {missing}\nCannot execute bash commands."
    )


async def test_138_custom_shell_path_missing(workdir) -> None:
    with pytest.raises(ToolError) as info:
        await call(workdir, "echo x", operations=LocalBashOperations(shell_path="/custom/bash"))
    assert str(info.value) == "Custom shell path not found: /custom/bash"


@dataclass
class Model:
    provider: str
    id: str


@dataclass
class SessionContext:
    session_id: str
    session_file: str | None
    model: Model | None
    thinking_level: str | None


async def test_stale_session_variables_are_replaced(workdir, monkeypatch) -> None:
    for name in (
        "PI_SESSION_ID",
        "PI_SESSION_FILE",
        "PI_PROVIDER",
        "PI_MODEL",
        "PI_REASONING_LEVEL",
    ):
        monkeypatch.setenv(name, "stale")
    monkeypatch.setenv("PI_OTHER", "kept")
    monkeypatch.delenv("PI_DISABLE_THIRD_PARTY_AUTOLOAD")  # the suite's own (tests/conftest.py)
    command = "env | grep '^PI_' | sort"
    bare = await call(workdir, command)
    assert bare.text == "PI_OTHER=kept\n"
    ctx = SessionContext("s-1", "/sessions/s-1.jsonl", Model("anthropic", "claude"), "high")
    exposed = await call(workdir, command, ctx=ctx)
    assert exposed.text == (
        "PI_MODEL=claude\nPI_OTHER=kept\nPI_PROVIDER=anthropic\nPI_REASONING_LEVEL=high\n"
        "PI_SESSION_FILE=/sessions/s-1.jsonl\nPI_SESSION_ID=s-1\n"
    )
    hidden = await call(workdir, command, ctx=ctx, options={"exposeSessionEnvironment": False})
    assert hidden.text == "PI_OTHER=kept\n"


# -- through the loop ---------------------------------------------------------------------------


async def test_abort_through_the_loop_reports_output_then_command_aborted(workdir) -> None:
    from pi_core import AgentContext, LoopConfig
    from pi_core._abort import Abort
    from pi_core._pipeline.pipeline import run_tool_call
    from pi_core._tools.definition import wrap_tool_definition
    from pi_core._wire.messages import ToolCall

    tool = wrap_tool_definition(
        create_bash_tool_definition(workdir, LocalBashOperations(kill_grace=0.3))
    )
    abort = Abort()
    started = trio.Event()

    def on_update(partial: AgentToolResult) -> None:
        if "started" in partial.text:
            started.set()

    async def abort_when_started() -> None:
        await started.wait()
        abort.abort()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_when_started)
        with trio.fail_after(10):
            outcome = await run_tool_call(
                ToolCall(id="c1", name="bash", arguments={"command": "echo started; sleep 30"}),
                AgentContext(tools=[tool]),
                LoopConfig(),
                abort=abort,
                on_update=on_update,
            )
    assert outcome.to_message().to_json_dict() | {"timestamp": 0} == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "bash",
        "content": [{"type": "text", "text": "started\n\n\nCommand aborted"}],
        "details": {},
        "isError": True,
        "timestamp": 0,
    }
