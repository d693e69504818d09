"""The ``pi`` console script's entry point: the first code the script runs.

It is a top-level module on purpose: importing anything under ``pi_core`` first runs
``pi_core/__init__.py``, which imports trio and the loop (about half a second). A Ctrl-C in that
time would print a ``KeyboardInterrupt`` traceback; instead, until :func:`pi_core._cli.main`
is imported, SIGINT ends the process at once with status 130 and prints nothing. Then
Python's own handler is back and the CLI's Ctrl-C handling applies (exit 130).
Only built-in modules are used here (``_signal``, not ``signal``, which imports ``enum``); a
Ctrl-C while the interpreter itself starts (before this module runs) is Python's.
"""

import _signal
import os
import sys


def _interrupted(signum: int, frame: object) -> None:
    os._exit(130)


def main() -> None:
    """Install the silent SIGINT exit, import the CLI, restore the default handler, run it."""
    _signal.signal(_signal.SIGINT, _interrupted)
    from pi_core._cli import main as cli_main

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    sys.exit(cli_main())
