"""Run ``pi`` as a real process and measure its peak memory (the memory-bound tests).

:func:`run_pi_measured` starts ``python -c WRAPPER ARGS...``: the wrapper runs ``pi``'s
``main`` and, on the way out, writes the process's own peak resident set size (``VmHWM`` of
``/proc/self/status``) to stderr as ``PI_PEAK_KB <n>``. That is the peak of pi alone:
ripgrep, bash and the other children it starts are separate processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

MEMORY_BOUND = 256 * 1024 * 1024
"""The documented bound on pi's peak RSS, whatever the input (``docs/reference/tools.md``)."""

MIB = 1024 * 1024

_WRAPPER = """
import sys
from pi_core._cli import main
try:
    code = main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                sys.stderr.write("PI_PEAK_KB " + line.split()[1] + "\\n")
sys.exit(code)
"""


@dataclass
class Measured:
    """A finished ``pi``: exit ``status``, ``out``/``err`` text (the peak line removed) and
    ``peak`` RSS in bytes."""

    status: int
    out: str
    err: str
    peak: int


def run_pi_measured(*args: str, cwd: Path | str | None = None, timeout: float = 120) -> Measured:
    """Run ``pi ARGS...`` (stdin closed) and return its result and peak RSS."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc (Linux) to read the peak RSS")
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )
    err_lines = done.stderr.decode("utf-8", "replace").splitlines(keepends=True)
    peak_lines = [line for line in err_lines if line.startswith("PI_PEAK_KB ")]
    assert peak_lines, done.stderr[-2000:]
    err = "".join(line for line in err_lines if not line.startswith("PI_PEAK_KB "))
    return Measured(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        err,
        int(peak_lines[-1].split()[1]) * 1024,
    )


def write_repeated(path: Path, unit: bytes, size: int, *, tail: bytes = b"") -> Path:
    """Write ``size`` bytes of ``unit`` repeated (then ``tail``) to ``path``, 1 MiB at a time."""
    block = unit * (MIB // len(unit))
    with path.open("wb") as handle:
        left = size
        while left > 0:
            handle.write(block[:left])
            left -= len(block)
        handle.write(tail)
    return path


__all__ = ["MEMORY_BOUND", "MIB", "Measured", "run_pi_measured", "write_repeated"]
