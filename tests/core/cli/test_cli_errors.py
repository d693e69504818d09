"""Exit statuses and error lines (DESIGN §5): 2 with exactly one ``pi: error:`` line for input
pi cannot use, never a traceback; 130 after Ctrl-C; stdin is never handed to tools."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import PI, start_waiting


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["call", "echo", "{"],
            "ARGS_JSON is not valid JSON: Expecting property name enclosed in double quotes "
            "(line 1, column 2)",
        ),
        (["call", "echo"], "the following arguments are required: ARGS_JSON"),
        (["call", "echo", "{}", "--bogus"], "unrecognized arguments: --bogus"),
        (
            ["frobnicate"],
            "argument COMMAND: invalid choice: 'frobnicate' (choose from 'plugins', 'tools', 'call', 'replay', 'run', 'checkpoints', 'rewind', 'config', 'export')",
        ),
        (
            [],
            "a command is required: plugins, tools, call, replay, run, checkpoints, rewind, config or export",
        ),
        (["replay", "missing.jsonl"], "cannot read missing.jsonl: No such file or directory"),
        (["replay"], "the following arguments are required: FILE"),
        (["replay", "--json"], "the following arguments are required: FILE"),
        (["call", "echo", "{}", "--cwd", "nowhere"], "--cwd nowhere: no such directory"),
        (
            ["-p", "no_such_module_xyz", "plugins"],
            "plugin 'no_such_module_xyz' failed to load: ModuleNotFoundError: No module named 'no_such_module_xyz'",
        ),
        (
            ["--config", "absent.toml", "plugins"],
            "cannot read config file {cwd}/absent.toml: No such file or directory",
        ),
    ],
)
def test_unusable_input_exits_2_with_one_line(pi, plugin_env: Path, args, message) -> None:
    out = pi(*args)
    assert (out.status, out.out) == (2, "")
    assert out.err == f"pi: error: {message.format(cwd=plugin_env)}\n"


def test_cwd_that_is_a_file(pi, plugin_env: Path) -> None:
    (plugin_env / "f").write_text("")
    out = pi("call", "echo", "{}", "--cwd", "f")
    assert (out.status, out.err) == (2, "pi: error: --cwd f: not a directory\n")


def test_audit_file_that_cannot_be_one(pi, plugin_env: Path) -> None:
    """``--audit FILE`` is checked before the session starts (``AuditLog.check_path``)."""
    (plugin_env / "d").mkdir()
    out = pi("call", "echo", "{}", "--audit", "d")
    assert (out.status, out.out, out.err) == (2, "", "pi: error: --audit d: not a regular file\n")
    out = pi("call", "echo", "{}", "--audit", "/dev/full")
    assert (out.status, out.err) == (2, "pi: error: --audit /dev/full: not a regular file\n")
    out = pi("call", "echo", "{}", "--audit", "missing/audit.jsonl")
    assert (out.status, out.err) == (
        2,
        "pi: error: --audit missing/audit.jsonl: No such file or directory\n",
    )
    assert not (plugin_env / "missing").exists()


def test_invalid_json_line_in_replay_file(pi, plugin_env: Path) -> None:
    (plugin_env / "r.jsonl").write_text('{"role":"assistant","content":[]}\n{oops\n')
    out = pi("replay", "r.jsonl")
    assert (out.status, out.out) == (2, "")
    assert out.err == (
        "pi: error: r.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes"
        " (column 2)\n"
    )


def test_bad_config_value_names_file_and_key(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text("[pi]\nmax_parallel_tools = 0\n")
    out = pi("plugins")
    assert out.status == 2
    assert out.err == (
        f"pi: error: {plugin_env}/pi.toml: pi.max_parallel_tools: Input should be greater than "
        "or equal to 1 (got 0)\n"
    )


def test_config_syntax_error_names_file_and_line(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text('[pi]\ntool_execution = "sequential"\noops = \n')
    out = pi("tools")
    assert out.status == 2
    assert out.err == f"pi: error: {plugin_env}/pi.toml:3: Invalid value (column 8)\n"


def test_config_is_checked_before_plugins_load(pi, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text("[pi]\nspeed = 1\n")
    out = pi("-p", "no_such_module_xyz", "plugins")
    assert out.err == f"pi: error: {plugin_env}/pi.toml: pi.speed: unknown key\n"


def test_plugin_that_raises_while_registering_tools(pi, plugin_env: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(plugin_env))
    (plugin_env / "broken_plugin.py").write_text(
        "from pi_core import hookimpl\n\n"
        "@hookimpl\n"
        "def pi_register_tools(register):\n"
        "    raise RuntimeError('no tools today')\n"
    )
    out = pi("-p", "broken_plugin", "tools")
    assert (out.status, out.out) == (2, "")
    assert out.err == (
        "pi: error: a plugin failed while setting up tools: RuntimeError: no tools today\n"
    )


# --- real processes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["call", "echo", "not json"],
        ["replay", "/nonexistent/file.jsonl"],
        ["--unknown-option", "plugins"],
        ["-p", "no_such_module_xyz", "plugins"],
    ],
)
def test_process_exit_2_one_stderr_line_no_traceback(pi_process, args) -> None:
    out = pi_process(*args)
    assert out.status == 2
    assert out.out == ""
    assert out.err.startswith("pi: error: ")
    assert out.err.count("\n") == 1
    assert "Traceback" not in out.err


def test_process_unknown_option_message(pi_process) -> None:
    out = pi_process("--unknown-option", "plugins")
    assert out.err == "pi: error: unrecognized arguments: --unknown-option\n"


def test_process_bad_config(pi_process, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text("[pi\n")
    out = pi_process("plugins")
    assert (out.status, out.out) == (2, "")
    assert (
        out.err
        == f"pi: error: {plugin_env}/pi.toml:1: Expected ']' at the end of a table declaration (column 4)\n"
    )


def test_process_call_exit_statuses(pi_process) -> None:
    ok = pi_process("-p", "cli_plugin", "call", "echo", '{"value":"x"}', "--json")
    assert (ok.status, ok.err) == (0, "")
    assert json.loads(ok.out)["content"] == [{"type": "text", "text": "x"}]
    missing = pi_process("-p", "cli_plugin", "call", "nope", "{}", "--json")
    assert (missing.status, missing.err) == (1, "")
    assert json.loads(missing.out)["content"] == [{"type": "text", "text": "Tool nope not found"}]


def test_process_output_is_utf8_whatever_the_locale(pi_process, monkeypatch) -> None:
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    out = pi_process("-p", "cli_plugin", "call", "echo", '{"value":"héllo😀"}', "--json")
    assert json.loads(out.out)["content"] == [{"type": "text", "text": "héllo😀"}]


def test_tools_never_read_the_terminal_stdin(plugin_env: Path) -> None:
    """The cases runner gives pi a stdin that stays open and never delivers data: a tool
    reading stdin must see end of file at once instead of hanging."""
    proc = subprocess.Popen(
        [str(PI), "-p", "cli_plugin", "call", "stdin", "{}", "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (0, "")
    assert json.loads(out)["content"] == [{"type": "text", "text": "''"}]


def _start_waiting(args: list[str], marker: Path) -> subprocess.Popen[str]:
    return start_waiting(["-p", "cli_plugin", *args], marker, "the wait tool never started")


def test_ctrl_c_during_call_exits_130_with_the_aborted_result(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    arguments = json.dumps({"marker": str(marker), "seconds": 60})
    proc = _start_waiting(["call", "wait", arguments, "--json"], marker)
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10
    assert (proc.returncode, err) == (130, "")
    message = json.loads(out)
    assert (message["content"], message["isError"]) == (
        [{"type": "text", "text": "Operation aborted"}],
        True,
    )


def test_ctrl_c_during_replay_exits_130_without_traceback(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    replay = plugin_env / "r.jsonl"
    calls = [
        {
            "type": "toolCall",
            "id": "c1",
            "name": "wait",
            "arguments": {"marker": str(marker), "seconds": 60},
        },
    ]
    replay.write_text(
        json.dumps({"role": "assistant", "content": calls, "stopReason": "toolUse"})
        + "\n"
        + json.dumps(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "c2",
                        "name": "echo",
                        "arguments": {"value": "later"},
                    }
                ],
            }
        )
        + "\n"
    )
    proc = _start_waiting(["replay", str(replay), "--json"], marker)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (130, "")
    results = [json.loads(line) for line in out.splitlines()]
    assert [(r["toolCallId"], r["content"][0]["text"]) for r in results] == [
        ("c1", "Operation aborted")
    ]


def test_closed_stdout_ends_quietly_with_141(plugin_env: Path) -> None:
    """``pi replay ... | head -1``: no traceback when the reader goes away."""
    calls = [
        {"type": "toolCall", "id": f"c{i}", "name": "echo", "arguments": {"value": "x" * 20000}}
        for i in range(20)
    ]
    replay = plugin_env / "r.jsonl"
    replay.write_text(json.dumps({"role": "assistant", "content": calls}) + "\n")
    proc = subprocess.Popen(
        [str(PI), "-p", "cli_plugin", "replay", str(replay), "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
    assert proc.wait(timeout=30) == 141
    assert json.loads(first)["toolCallId"] == "c0"
    assert err == b""


def _write_plugin(folder: Path, name: str, source: str, monkeypatch) -> None:
    (folder / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))


def test_misspelt_hook_is_a_plugin_error(pi, plugin_env: Path, monkeypatch) -> None:
    _write_plugin(
        plugin_env,
        "typo_plugin",
        "from pi_core import hookimpl\n\n@hookimpl\ndef pi_register_tool(register):\n    pass\n",
        monkeypatch,
    )
    out = pi("-p", "typo_plugin", "plugins")
    assert (out.status, out.out) == (2, "")
    assert out.err == (
        "pi: error: plugin 'typo_plugin' implements unknown hook 'pi_register_tool' "
        "(did you mean 'pi_register_tools'?)\n"
    )


def test_tool_name_taken_by_two_plugins(pi, plugin_env: Path, monkeypatch) -> None:
    _write_plugin(
        plugin_env,
        "second_echo",
        "from pi_core import hookimpl, tool\n\n"
        "@tool\ndef echo(value: str) -> str:\n    return value\n\n"
        "@hookimpl\ndef pi_register_tools(register):\n    register(echo)\n",
        monkeypatch,
    )
    out = pi("-p", "cli_plugin", "-p", "second_echo", "call", "echo", '{"value":"x"}')
    assert (out.status, out.out) == (2, "")
    assert out.err == (
        "pi: error: tool 'echo' is registered by plugin 'second_echo' and by plugin 'cli_plugin'\n"
    )
