"""Commands longer than one argv element can hold.

Pi runs a command as ``SHELL -c COMMAND``, and so do pi's backends: the shell's ``$0`` is the
shell, ``"$@"`` is empty, error texts read ``SHELL: -c: line N: ...``. Linux limits one element
of an ``argv`` to 128 KiB (``MAX_ARG_STRLEN``, including its terminating NUL): a longer command
fails to start with ``Argument list too long``. A command that fits (:func:`command_fits_argv`)
is run exactly as Pi runs it; a longer one reaches the shell as a file that the shell sources
with ``. /dev/fd/N`` (:func:`sourcing_command`): same shell, same ``$0``, empty ``"$@"``,
stdin still ``/dev/null``; only the name in the shell's own error messages differs
(``/dev/fd/N: line N: ...`` instead of ``-c: line N: ...``), and the descriptor stays open (at
end of file) in the command's processes. Local backends pass it as an anonymous temporary file
(:func:`long_command_file`); remote ones send it on a stream of their own.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

ARGV_COMMAND_MAX = 128 * 1024 - 1
"""The longest command (bytes, UTF-8) passed as one ``argv`` element."""


def command_bytes(command: str) -> bytes:
    """``command`` as the bytes the shell gets (lone surrogates as ``os.fsencode`` maps them)."""
    return os.fsencode(command)


def command_fits_argv(command: str) -> bool:
    """Whether ``command`` can be one element of an ``argv`` (``SHELL -c COMMAND``)."""
    return len(command_bytes(command)) <= ARGV_COMMAND_MAX


def long_command_file(command: str) -> IO[bytes]:
    """An anonymous temporary file (mode 0600, already unlinked: nothing is left behind even if
    the process is killed) holding ``command``, positioned at its start. The caller passes its
    descriptor to the shell (:func:`sourcing_command`) and closes it after the shell started."""
    file = tempfile.TemporaryFile(prefix="pi-command-")  # the caller closes it
    try:
        file.write(command_bytes(command))
        file.flush()
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return file


def sourcing_command(fd: int) -> str:
    """The short ``-c`` command that runs the command held by descriptor ``fd``."""
    return f". /dev/fd/{fd}"


__all__ = [
    "ARGV_COMMAND_MAX",
    "command_bytes",
    "command_fits_argv",
    "long_command_file",
    "sourcing_command",
]
