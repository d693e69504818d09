"""Permission checks of the file tools before they touch a file.

Node opens a file to write it, so Pi's ``write`` and ``edit`` fail on a file the caller may not
write (``EACCES: permission denied, open '{abs}'``). Ours replace files atomically by renaming a
temporary file over them, which only needs a writable directory, so the permission check is
explicit: :func:`check_access`.

Decision (documented here and tested): a regular file **with no write bit at all**
(``mode & 0o222 == 0``, e.g. ``chmod 444``) is refused for writing **even when running as
root**, who would otherwise bypass file modes. A read-only mode is how a user protects a file,
and tools run as root in containers and CI; refusing keeps the protection and the text Pi shows
an ordinary user. Otherwise the backend's own ``access`` decides (ordinary ``access(2)``
semantics), or, for a backend without one, ``stat`` (existence only).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

from pi_core import FileOperations
from pi_core.backends import FileStat

_ANY_WRITE_BIT = 0o222


async def check_access(operations: FileOperations, path: str, mode: int) -> FileStat | None:
    """Raise unless ``path`` exists and may be opened with ``mode`` (``os.R_OK``/``os.W_OK``).

    Raises the backend's ``OSError`` (``FileNotFoundError``/``ENOENT``, ``PermissionError``/
    ``EACCES``, ...); with ``os.W_OK``, a regular file without any write bit raises
    ``PermissionError(EACCES, ..., path)`` whoever the caller is (see the module docstring).
    Returns the ``stat`` it took (always with ``os.W_OK``), else ``None``, so the caller can
    refuse what is not a regular file (``kind == "other"``).
    """
    access: Callable[[str, int], Any] | None = getattr(operations, "access", None)
    if callable(access):
        await access(path, mode)
    if mode & os.W_OK or not callable(access):
        st = await operations.stat(path)
        check_write_bits(st, path, mode)
        return st
    return None


def check_write_bits(st: FileStat, path: str, mode: int) -> None:
    """With ``os.W_OK`` in ``mode``, raise ``PermissionError(EACCES)`` for a regular file without
    any write bit (the rule of :func:`check_access`, for a caller that has the ``stat``)."""
    if mode & os.W_OK and st.kind == "file" and not st.mode & _ANY_WRITE_BIT:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


__all__ = ["check_access", "check_write_bits"]
