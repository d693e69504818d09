"""The ``pi`` console script's entry point: the first code the script runs.

It is a top-level module on purpose: importing anything under ``pi_core`` first runs
``pi_core/__init__.py``, which imports trio and the loop (about half a second). A Ctrl-C in that
time would print a ``KeyboardInterrupt`` traceback; instead, until :func:`pi_core._cli.main`
is imported, SIGINT ends the process at once with status 130 and prints nothing. Then
Python's own handler is back and the CLI's Ctrl-C handling applies (exit 130).
Only built-in modules are used here (``_signal``, not ``signal``, which imports ``enum``); a
Ctrl-C while the interpreter itself starts (before this module runs) is Python's.

The cyclic garbage collector is off while the CLI is imported: the import allocates some
hundred thousand objects (classes, functions, the schemas of the wire models) and almost none
of them are garbage, yet every 700 allocations a collection would walk the young ones, and each
tenth of those the older ones too. After the import the collector is on again, and the objects
the import made are frozen (:func:`gc.freeze`): later collections, and the one at exit, leave
them out. Together 7% of the instructions of a ``pi replay`` of one ``read``
(``docs/explanation/performance.md``, P7).
"""

import _signal
import gc
import os
import sys


def _interrupted(signum: int, frame: object) -> None:
    os._exit(130)


def main() -> None:
    """Install the silent SIGINT exit, import the CLI with the collector off, restore the default
    handler, run it."""
    _signal.signal(_signal.SIGINT, _interrupted)
    gc.disable()
    try:
        from pi_core._cli import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    sys.exit(cli_main())
