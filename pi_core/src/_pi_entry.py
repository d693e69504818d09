"""The ``pi`` console script's entry point: the first code the script runs.

It is a top-level module on purpose: importing anything under ``pi_core`` first runs
``pi_core/__init__.py``, which imports trio and the loop (about half a second). A Ctrl-C in that
time would print a ``KeyboardInterrupt`` traceback; instead, until :func:`pi_core._cli.main`
is imported, SIGINT ends the process at once with status 130 and prints nothing. Then
Python's own handler is back and the CLI's Ctrl-C handling applies (exit 130).
Only built-in modules are used here (``_signal``, not ``signal``, which imports ``enum``), and
the module itself imports only those the interpreter has loaded already (``_signal``, ``os``,
``sys``): ``gc`` is imported after the handler is in place, so no Python code runs between this
module's start and the handler. A Ctrl-C while the interpreter itself starts (before this module
runs: its own start-up, ``site``, the installer's launcher) is Python's: the process is killed
by SIGINT (status 130 in a shell; Python may print the ``KeyboardInterrupt`` of the launcher),
the start-up fails (``Fatal Python error: init_import_site``, exit status 1), or, rarely, Python
drops the interrupt (``Exception ignored in: <function _get_module_lock.<locals>.cb ...>``) and
pi runs on.

The cyclic garbage collector is off while the CLI is imported: the import allocates some
hundred thousand objects (classes, functions, the schemas of the wire models) and almost none
of them are garbage, yet every 700 allocations a collection would walk the young ones, and each
tenth of those the older ones too. After the import the collector is on again, and the objects
the import made are frozen (:func:`gc.freeze`): later collections, and the one at exit, leave
them out. Together 7% of the instructions of a ``pi replay`` of one ``read``, and a fifth of
its wall time (``docs/explanation/performance.md``, P7).

Under glibc, :func:`_tune_malloc` fixes two thresholds of ``malloc`` for this process (and only
for the ``pi`` command: a program that imports ``pi_core`` keeps its own): blocks up to 4 MiB come
from the heap, and up to 16 MiB of free memory at its top is kept rather than given back to the
system. A large output arrives in chunks of a few hundred KiB to 1 MiB, each of another size;
with glibc's defaults the heap grew and shrank around them, and every new page was zero-filled
and faulted in again (20,000-40,000 page faults per GiB of ``bash`` output).
"""

import _signal
import os
import sys

MMAP_THRESHOLD = 4 * 1024 * 1024
"""``M_MMAP_THRESHOLD``: larger blocks are mapped on their own and unmapped when freed."""

TRIM_THRESHOLD = 16 * 1024 * 1024
"""``M_TRIM_THRESHOLD``: free memory at the top of the heap kept for later blocks."""


def _interrupted(signum: int, frame: object) -> None:
    os._exit(130)


def _tune_malloc() -> bool:
    """Set glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (see the module docstring);
    ``False`` where the C library is not glibc or refuses."""
    try:
        os.confstr("CS_GNU_LIBC_VERSION")
        import ctypes  # trio imports it too: no extra cost

        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return False
    # M_MMAP_THRESHOLD is -3 and M_TRIM_THRESHOLD -1 in glibc's <malloc.h>; mallopt returns 1.
    return bool(mallopt(-3, MMAP_THRESHOLD) == 1 and mallopt(-1, TRIM_THRESHOLD) == 1)


def main() -> None:
    """Install the silent SIGINT exit, import the CLI with the collector off, restore the default
    handler, run it. A SIGINT ignored when the process started stays ignored throughout."""
    try:
        # SIGINT ignored from the start (a background job of a shell script): it stays ignored,
        # as the shell and Python itself leave it; pi then takes no Ctrl-C at all
        ignored = _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN
        if not ignored:
            _signal.signal(_signal.SIGINT, _interrupted)
    except KeyboardInterrupt:  # one that came before: signal() runs a pending handler first
        os._exit(130)
    import gc  # not loaded at start-up: its import runs Python code, so after the handler

    _tune_malloc()
    gc.disable()
    try:
        from pi_core._cli import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    if not ignored:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    sys.exit(cli_main())
