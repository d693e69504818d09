"""Ctrl-C reaches every tool: a sync ``@tool`` blocked in its worker thread ends at the first
SIGINT with ``Operation aborted`` (the thread is abandoned), and ``pi`` exits 130 at once."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

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
