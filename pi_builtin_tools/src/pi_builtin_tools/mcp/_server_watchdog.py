"""Run one stdio MCP server so that it never outlives pi (standard library only).

Run as ``python -I -S _server_watchdog.py PI_PID COMMAND [ARG...]`` by
:mod:`pi_builtin_tools.mcp.connections`. The server runs in its own session (process group) with this
process's stdin, stdout, stderr, working directory and environment (the SDK's pipes pass
through untouched). This process:

* exits with the server's exit status when it exits (128 + N after signal N);
* on SIGTERM, SIGINT or SIGHUP (the SDK closing the connection, a Ctrl-C) stops the server's
  whole process group: SIGTERM, up to 2 s, then SIGKILL;
* does the same when pi is gone (its parent is no longer ``PI_PID``: pi was killed, even with
  SIGKILL), checked twice a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_SECONDS = 2.0
POLL_SECONDS = 0.5


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group, then SIGKILL after the grace period."""
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    child.poll()


def main() -> int:
    parent = int(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:], start_new_session=True)

    def on_signal(number: int, frame: object) -> None:
        _stop(child)
        os._exit(128 + number)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    while True:
        try:
            code = child.wait(timeout=POLL_SECONDS)
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:  # pi is gone
                _stop(child)
                return 1
            continue
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
