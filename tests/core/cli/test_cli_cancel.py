"""Ctrl-C reaches every tool: a sync ``@tool`` blocked in its worker thread ends at the first
SIGINT with ``Operation aborted`` (the thread is abandoned), and ``pi`` exits 130 at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import PI


def test_first_ctrl_c_ends_a_blocked_sync_tool_with_operation_aborted(plugin_env: Path) -> None:
    marker = plugin_env / "started"
    arguments = json.dumps({"marker": str(marker), "seconds": 30})
    proc = subprocess.Popen(
        [str(PI), "-p", "sync_tool_plugin", "call", "nap", arguments, "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the nap tool never started"
        time.sleep(0.02)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert time.monotonic() - started < 1.0
    assert (proc.returncode, err) == (130, "")
    message = json.loads(out)
    assert (message["content"], message["isError"]) == (
        [{"type": "text", "text": "Operation aborted"}],
        True,
    )


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_during_the_diff_of_a_large_rewrite_aborts_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """The diff of a block of thousands of rewritten lines (blank lines common to both sides,
    so Myers' search is long) runs off the event loop: SIGINT ends ``pi`` at once, with
    ``Operation aborted``, and the file is as it was."""
    old_block = "".join(f"value_{i} = compute({i})\n\n" for i in range(6_000))
    new_block = "".join(f"VALUE_{i} = recompute({i})\n\n" for i in range(6_000))
    target = tmp_path / "big.py"
    original = "# header\n" + old_block + "# footer\n"
    target.write_text(original)
    edits = [{"oldText": old_block, "newText": new_block}]
    arguments = tmp_path / "arguments.json"
    arguments.write_text(json.dumps({"path": "big.py", "edits": edits}))
    proc = subprocess.Popen(
        [str(PI), "call", "edit", f"@{arguments}", "--cwd", str(tmp_path), "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # start-up (well under a second of CPU: 0.6 s for a whole small edit), then well into the
    # diff (over 24 s of CPU): wait on the process's own CPU time, not the clock, so a loaded
    # machine that slows start-up does not send the signal before the call began
    deadline = time.monotonic() + 60
    while _cpu_seconds(proc.pid) < 2.0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "pi used less than 2 s of CPU in 60 s"
        time.sleep(0.05)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert time.monotonic() - started < 5.0
    assert (proc.returncode, err) == (130, "")
    message = json.loads(out)
    assert (message["content"], message["isError"]) == (
        [{"type": "text", "text": "Operation aborted"}],
        True,
    )
    assert target.read_text() == original


AFTER_RUN_PROBE = """
import os, signal, sys, time
import pi_core._cli as cli

class Stdin:
    def close(self):  # Ctrl-C while main closes stdin, after the command is over
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)

def run(argv, stdin=None):
    if sys.argv[1] == "raise":
        raise KeyboardInterrupt  # a Ctrl-C between run's own handling and its return
    print("the result")
    return 0

cli._prepare_process = Stdin
cli.run = run
cli.main()
"""


@pytest.mark.parametrize("case", ["close", "raise"])
def test_ctrl_c_after_the_command_exits_130_without_a_traceback(case: str) -> None:
    """Once ``run`` has returned (or its Ctrl-C handling let a ``KeyboardInterrupt`` out), a
    Ctrl-C ends the process at once with 130: what was printed stays, and no traceback follows."""
    proc = subprocess.run(
        [sys.executable, "-c", AFTER_RUN_PROBE, case], capture_output=True, text=True, timeout=30
    )
    assert (proc.returncode, proc.stderr) == (130, "")
    assert proc.stdout == ("the result\n" if case == "close" else "")
