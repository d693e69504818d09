"""Run the ``pi`` script on a pseudo-terminal and keep the exact bytes it wrote (importable: the
CLI tests' folder is on ``sys.path``)."""

from __future__ import annotations

import os
import pty
import subprocess
import termios
from pathlib import Path

from cli_helpers import PI


def run_on_pty(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> tuple[int, bytes]:
    """``pi ARGS`` with a pseudo-terminal as stdout and stderr; returns the exit status and
    the exact bytes written (output post-processing off, so ``\\n`` stays ``\\n``)."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no ONLCR: the bytes pi writes are the bytes read here
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen(
        [str(PI), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    os.close(slave)
    data = b""
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(master)
        status = proc.wait(timeout=timeout)
    return status, data
