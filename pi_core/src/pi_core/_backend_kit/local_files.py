"""The local file backend: :class:`LocalFileOperations` (DESIGN §1, §2; seed §十一–§十四).

Implements :class:`pi_core._backend_kit.operations.FileOperations` on this machine's file system; the one
implementation both ``pi_builtin_tools`` (the default backend) and ``pi_sandbox_plugin`` (the
guarded local backend) use. Blocking calls run in trio worker threads so the event loop never
stalls; they are not abandoned on cancellation (a write in flight finishes). ``rg`` comes from
the ``ripgrep`` PyPI wheel (a dependency of the distributions that run it), else ``PATH``.

Also the small helpers other backends share: :func:`find_rg`, :func:`file_kind` (``st_mode`` →
:data:`~pi_core._backend_kit.operations.FileKind`) and :func:`kill_process_group` (trio ``deliver_cancel``).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Sequence

import trio

from pi_core._backend_kit.atomic import atomic_write_bytes
from pi_core._backend_kit.operations import CommandOutput, FileKind, FileStat


@functools.cache
def find_rg() -> str:
    """Path of the ``rg`` binary: the ripgrep wheel's (beside this Python), else ``PATH``'s.

    Raises ``FileNotFoundError`` when there is none.
    """
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), "rg"),
        os.path.join(os.path.dirname(sys.executable), "rg"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("rg")
    if found:
        return found
    raise FileNotFoundError("ripgrep (rg) is not installed: pip install ripgrep")


def _read_range(path: str, offset: int, length: int | None) -> bytes:
    with open(path, "rb") as handle:
        if offset:
            handle.seek(offset)
        return handle.read() if length is None else handle.read(length)


def file_kind(mode: int) -> FileKind:
    """The :data:`~pi_core._backend_kit.operations.FileKind` of an ``st_mode`` value (type bits; any
    integer, e.g. a remote ``stat -c %f``): ``"file"``, ``"directory"``, ``"symlink"`` or
    ``"other"``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _stat(path: str) -> FileStat:
    st = os.stat(path)
    return FileStat(
        kind=file_kind(st.st_mode),
        size=st.st_size,
        mode=stat.S_IMODE(st.st_mode),
        mtime=st.st_mtime,
    )


async def kill_process_group(process: trio.Process) -> None:
    """SIGKILL the process group of ``process`` (started with ``start_new_session=True``, so
    its pid is the group id); the process alone when the group is gone. Usable as trio's
    ``deliver_cancel``."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()


class LocalFileOperations:
    """:class:`~pi_core._backend_kit.operations.FileOperations` on the local file system.

    Errors are the ``OSError`` subclasses Python raises (``errno`` set). ``read_bytes`` reads only
    the requested range; ``write_bytes`` is :func:`pi_core._backend_kit.atomic.atomic_write_bytes`.
    """

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset``; ``IsADirectoryError``
        for a directory."""
        return await trio.to_thread.run_sync(_read_range, path, offset, length)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomic replace (temp file, fsync, rename; mode and symlink target kept)."""
        await trio.to_thread.run_sync(atomic_write_bytes, path, data)

    async def stat(self, path: str) -> FileStat:
        """Kind, size, permission bits and mtime of ``path`` (symlinks followed)."""
        return await trio.to_thread.run_sync(_stat, path)

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """Node's ``fs.access``: raise unless ``path`` exists and can be opened with ``mode``
        (``os.R_OK``/``os.W_OK`` bits): ``FileNotFoundError`` (``ENOENT``), ``PermissionError``
        (``EACCES``), ... The edit tool checks ``R_OK | W_OK`` before reading."""

        def check() -> None:
            os.stat(path)
            if not os.access(path, mode):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

        await trio.to_thread.run_sync(check)

    async def realpath(self, path: str) -> str:
        """``os.path.realpath``: symlinks of the existing prefix resolved, the rest kept."""
        return await trio.to_thread.run_sync(os.path.realpath, path)

    async def list_dir(self, path: str) -> list[str]:
        """Entry names of the directory (no ``.``/``..``), unsorted."""
        return await trio.to_thread.run_sync(os.listdir, path)

    async def mkdir(self, path: str) -> None:
        """``mkdir -p``: ``FileExistsError`` when ``path`` exists and is not a directory."""
        await trio.to_thread.run_sync(functools.partial(os.makedirs, path, exist_ok=True))

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run ``rg`` with ``args`` in ``cwd`` (stdin closed, own session; killed as a group
        on cancellation) and return its exit code and complete output."""
        result = await trio.run_process(
            [find_rg(), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            start_new_session=True,
            deliver_cancel=kill_process_group,
        )
        return CommandOutput(
            exit_code=result.returncode, stdout=result.stdout, stderr=result.stderr
        )


__all__ = ["LocalFileOperations", "file_kind", "find_rg", "kill_process_group"]
