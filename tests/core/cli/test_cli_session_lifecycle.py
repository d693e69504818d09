"""``pi_session_start`` / ``pi_session_end`` in every command-line host: ``pi call``,
``pi replay`` (also ``--verify``), ``pi run`` and ``pi tools`` call each once per session, in
a fixed order with the other hooks, and the end hook on every exit path (a tool's error
result, a failed model call, ``KeyboardInterrupt``, Ctrl-C). ``pi --trace-hooks`` and
``PI_DEBUG_HOOKS=1`` print one line per hook implementation call."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import lifecycle_plugin
import pytest
from cli_helpers import PI, Result, call, write_jsonl

PLUGIN = ("-p", "lifecycle_plugin")

AGENT_START = [
    "pi_on_event agent_start",
    "pi_on_event turn_start",
    "pi_on_event message_start",  # the system message declaring the tools (toolsAdded)
    "pi_on_event message_end",
    "pi_on_event message_start",  # the prompt
    "pi_on_event message_end",
]
ECHO_TURN_END = [
    "pi_on_event tool_execution_start",
    "pi_before_tool_call echo session_state=True",
    "pi_after_tool_call echo is_error=False",
    "pi_on_event tool_execution_end",
    "pi_on_event message_start",  # the tool result
    "pi_on_event message_end",
    "pi_on_event turn_end",
]


@pytest.fixture(autouse=True)
def clean_log(plugin_env: Path) -> None:
    lifecycle_plugin.LOG.clear()


def echo_message(value: str = "a") -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [call("c1", "echo", value=value)],
        "stopReason": "toolUse",
    }


def test_pi_call_runs_one_session_around_the_call(pi: Callable[..., Result]) -> None:
    r = pi(*PLUGIN, "call", "echo", '{"value":"x"}')
    assert (r.status, r.out, r.err) == (0, "x\n", "")
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=call",
        "pi_session_start host=call",
        "pi_before_tool_call echo session_state=True",
        "pi_after_tool_call echo is_error=False",
        "pi_session_end host=call reason=completed same_state=True",
    ]


def test_pi_call_error_result_still_completes_the_session(pi: Callable[..., Result]) -> None:
    r = pi(*PLUGIN, "call", "crash", "{}")
    assert (r.status, r.out) == (1, "crashed\n")
    assert lifecycle_plugin.LOG[-3:] == [
        "pi_before_tool_call crash session_state=True",
        "pi_after_tool_call crash is_error=True",
        "pi_session_end host=call reason=completed same_state=True",
    ]


def test_pi_call_keyboard_interrupt_ends_the_session_interrupted(
    pi: Callable[..., Result],
) -> None:
    r = pi(*PLUGIN, "call", "interrupt", "{}")
    assert (r.status, r.out, r.err) == (130, "", "")
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=call",
        "pi_session_start host=call",
        "pi_before_tool_call interrupt session_state=True",
        "pi_session_end host=call reason=interrupted same_state=True",
    ]


def test_pi_replay_session_wraps_every_event(pi: Callable[..., Result], plugin_env: Path) -> None:
    script = write_jsonl(plugin_env / "r.jsonl", [echo_message()])
    r = pi(*PLUGIN, "replay", str(script), "--json")
    assert r.status == 0
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=replay",
        "pi_session_start host=replay",
        *AGENT_START,
        "pi_on_event message_start",  # the recorded assistant message
        "pi_on_event message_end",
        *ECHO_TURN_END,
        "pi_on_event turn_start",
        "pi_on_event message_start",  # "done"
        "pi_on_event message_end",
        "pi_on_event turn_end",
        "pi_on_event agent_end",
        "pi_session_end host=replay reason=completed same_state=True",
    ]


def test_pi_replay_verify_runs_one_session(pi: Callable[..., Result], plugin_env: Path) -> None:
    recorded = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "echo",
        "content": [{"type": "text", "text": "a"}],
        "isError": False,
        "timestamp": 0,
    }
    script = write_jsonl(plugin_env / "v.jsonl", [echo_message(), recorded])
    r = pi(*PLUGIN, "replay", str(script), "--verify", "--json")
    assert r.status == 0
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=replay",
        "pi_session_start host=replay",
        "pi_before_tool_call echo session_state=True",
        "pi_after_tool_call echo is_error=False",
        "pi_session_end host=replay reason=completed same_state=True",
    ]


def test_pi_run_with_a_scripted_model(pi: Callable[..., Result], plugin_env: Path) -> None:
    bye = {"role": "assistant", "content": [{"type": "text", "text": "bye"}], "stopReason": "stop"}
    write_jsonl(plugin_env / "m.jsonl", [echo_message(), bye])
    r = pi(*PLUGIN, "run", "hi", "--model", "scripted:m.jsonl", "--json")
    assert r.status == 0
    streamed = ["pi_on_event message_start", *["pi_on_event message_update"] * 3]
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=run",
        "pi_session_start host=run",
        *AGENT_START,
        *streamed,
        "pi_on_event message_end",
        *ECHO_TURN_END,
        "pi_on_event turn_start",
        *streamed,
        "pi_on_event message_end",
        "pi_on_event turn_end",
        "pi_on_event agent_end",
        "pi_session_end host=run reason=completed same_state=True",
    ]


def test_pi_run_failed_model_call_ends_the_session_with_error(
    pi: Callable[..., Result], plugin_env: Path
) -> None:
    failed = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "500"}
    write_jsonl(plugin_env / "m.jsonl", [failed])
    r = pi(*PLUGIN, "run", "hi", "--model", "scripted:m.jsonl", "--json")
    assert r.status == 1
    assert lifecycle_plugin.LOG[-2:] == [
        "pi_on_event agent_end",
        "pi_session_end host=run reason=error same_state=True",
    ]


def test_pi_tools_starts_and_ends_its_session(pi: Callable[..., Result]) -> None:
    r = pi(*PLUGIN, "tools", "--json")
    assert [t["name"] for t in json.loads(r.out)] == ["echo", "crash", "interrupt", "wait"]
    assert lifecycle_plugin.LOG == [
        "pi_register_tools host=tools",
        "pi_session_start host=tools",
        "pi_session_end host=tools reason=completed same_state=True",
    ]


def test_ctrl_c_ends_the_session_interrupted(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    log = plugin_env / "lifecycle.log"
    arguments = json.dumps({"marker": str(marker), "seconds": 30})
    proc = subprocess.Popen(
        [str(PI), *PLUGIN, "call", "wait", arguments, "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LIFECYCLE_LOG": str(log)},
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the wait tool never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (130, "")
    assert json.loads(out)["content"] == [{"type": "text", "text": "Operation aborted"}]
    assert log.read_text().splitlines() == [
        "pi_register_tools host=call",
        "pi_session_start host=call",
        "pi_before_tool_call wait session_state=True",
        "pi_after_tool_call wait is_error=True",
        "pi_session_end host=call reason=interrupted same_state=True",
    ]


# -- tracing --------------------------------------------------------------------------------

TRACE_OF_CALL = [
    "pi: hook pi_register_tools plugin=lifecycle_plugin <ms>ms -> None",
    "pi: hook pi_session_start plugin=lifecycle_plugin <ms>ms -> None",
    "pi: hook pi_before_tool_call plugin=lifecycle_plugin <ms>ms -> None",
    "pi: hook pi_after_tool_call plugin=lifecycle_plugin <ms>ms -> None",
    "pi: hook pi_session_end plugin=lifecycle_plugin <ms>ms -> None",
]


def normalised(err: str) -> list[str]:
    """The trace lines of ``err`` with each duration replaced by ``<ms>``."""
    return [re.sub(r" \d+\.\d\dms ", " <ms>ms ", line) for line in err.splitlines()]


def test_trace_hooks_option_prints_one_line_per_implementation_call(
    pi: Callable[..., Result],
) -> None:
    r = pi("--trace-hooks", *PLUGIN, "call", "echo", '{"value":"x"}')
    assert (r.status, r.out) == (0, "x\n")
    assert normalised(r.err) == TRACE_OF_CALL


def test_pi_debug_hooks_environment_variable_traces_too(
    pi: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_DEBUG_HOOKS", "1")
    r = pi(*PLUGIN, "call", "echo", '{"value":"x"}')
    assert normalised(r.err) == TRACE_OF_CALL
    monkeypatch.setenv("PI_DEBUG_HOOKS", "0")
    assert pi(*PLUGIN, "call", "echo", '{"value":"x"}').err == ""


@pytest.mark.parametrize("host", ["replay", "run"])
def test_keyboard_interrupt_in_replay_and_run_ends_the_session_interrupted(
    pi: Callable[..., Result], plugin_env: Path, host: str
) -> None:
    message = {
        "role": "assistant",
        "content": [call("c1", "interrupt")],
        "stopReason": "toolUse",
    }
    script = write_jsonl(plugin_env / "s.jsonl", [message])
    if host == "replay":
        r = pi(*PLUGIN, "replay", str(script), "--json")
    else:
        r = pi(*PLUGIN, "run", "hi", "--model", "scripted:s.jsonl", "--json")
    assert r.status == 130
    assert lifecycle_plugin.LOG[:2] == [
        f"pi_register_tools host={host}",
        f"pi_session_start host={host}",
    ]
    assert lifecycle_plugin.LOG[-2:] == [
        "pi_before_tool_call interrupt session_state=True",
        f"pi_session_end host={host} reason=interrupted same_state=True",
    ]
