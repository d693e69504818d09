"""The local file backend: :class:`LocalFileOperations`.

Implements :class:`pi_core._backend_kit.operations.FileOperations` on this machine's file system; the one
implementation both ``pi_builtin_tools`` (the default backend) and ``pi_sandbox_plugin`` (the
guarded local backend) use. Blocking calls run in trio worker threads so the event loop never
stalls; they are not abandoned on cancellation (a write in flight finishes). ``rg`` comes from
the ``ripgrep`` PyPI wheel (a dependency of the distributions that run it), else ``PATH``.

Also the small helpers other backends share: :func:`find_rg`, :func:`file_kind` (``st_mode`` →
:data:`~pi_core._backend_kit.operations.FileKind`) and :func:`kill_process_group` (trio ``deliver_cancel``).
"""

from __future__ import annotations

import ctypes
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
from typing import Any

import trio

from pi_core._backend_kit.atomic import atomic_write_bytes
from pi_core._backend_kit.interprocess import sweep_once
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


RG_MAX_OUTPUT_BYTES = 32 * 1024 * 1024
"""Most stdout bytes :meth:`LocalFileOperations.run_rg` keeps (32 MiB); ripgrep is killed past it."""

RG_MAX_STDERR_BYTES = 1024 * 1024
"""Most stderr bytes :meth:`LocalFileOperations.run_rg` keeps (1 MiB)."""

_RG_READ_SIZE = 65536


def _refuse_special(mode: int, path: str) -> None:
    """Raise unless ``mode`` is a regular file's: ``IsADirectoryError`` for a directory,
    ``OSError(EINVAL)`` for a device, FIFO or socket (never read or replaced)."""
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)


def _read_range(path: str, offset: int, length: int | None) -> bytes:
    # stat first, so a device is never opened; O_NONBLOCK, so a FIFO swapped in meanwhile
    # cannot block the open; fstat, so what was opened is the regular file that was checked
    _refuse_special(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _refuse_special(os.fstat(fd).st_mode, path)
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as handle:
            if offset:
                handle.seek(offset)
            return handle.read() if length is None else handle.read(length)
    finally:
        os.close(fd)


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


@functools.cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _access_errno(path: str, mode: int) -> int:
    """Why ``access(path, mode)`` fails, as ``access(2)`` says (``os.access`` only says that it
    does): ``EROFS`` on a read-only file system, ``EPERM`` for an immutable file, ...;
    ``EACCES`` when the reason cannot be had."""
    try:
        if _libc().access(os.fsencode(path), mode) != 0:
            return ctypes.get_errno() or errno.EACCES
    except (OSError, AttributeError):
        pass
    return errno.EACCES


class LocalFileOperations:
    """:class:`~pi_core._backend_kit.operations.FileOperations` on the local file system.

    Errors are the ``OSError`` subclasses Python raises (``errno`` set). ``read_bytes`` reads only
    the requested range; ``write_bytes`` is :func:`pi_core._backend_kit.atomic.atomic_write_bytes`.
    Both refuse a device, FIFO or socket with ``OSError(EINVAL)`` (never opened for a blocking
    read, never replaced). Making one (a session's file backend) removes, once per process, the
    temporary files that atomic writes of killed pi processes left
    (:func:`pi_core._backend_kit.interprocess.sweep_stale_temp_files`).
    """

    def __init__(self) -> None:
        sweep_once()

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset``; ``IsADirectoryError``
        for a directory, ``OSError(EINVAL)`` for a device, FIFO or socket."""
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
        (``EACCES``, ``EPERM`` for an immutable file), ``OSError`` ``EROFS`` on a read-only file
        system, ... (``access(2)``'s errno). The edit tool checks ``R_OK | W_OK`` before
        reading."""

        def check() -> None:
            os.stat(path)
            if not os.access(path, mode):
                code = _access_errno(path, mode)
                raise OSError(code, os.strerror(code), path)

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
        on cancellation) and return its exit code and output.

        Memory stays bounded: past :data:`RG_MAX_OUTPUT_BYTES` of stdout (32 MiB) ripgrep is
        killed and the output returned is cut after its last complete line, with exit code 0
        (the search found matches, more than any tool shows); stderr keeps its first
        :data:`RG_MAX_STDERR_BYTES` (1 MiB)."""
        process = await trio.lowlevel.open_process(
            [find_rg(), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        stdout = bytearray()
        stderr = bytearray()
        overflow = False

        async def read_stdout() -> None:
            nonlocal overflow
            assert process.stdout is not None
            while chunk := await process.stdout.receive_some(_RG_READ_SIZE):
                stdout.extend(chunk)
                if len(stdout) > RG_MAX_OUTPUT_BYTES:
                    overflow = True
                    del stdout[stdout.rfind(b"\n", 0, RG_MAX_OUTPUT_BYTES) + 1 :]
                    await kill_process_group(process)
                    return

        async def read_stderr() -> None:
            assert process.stderr is not None
            while chunk := await process.stderr.receive_some(_RG_READ_SIZE):
                stderr.extend(chunk[: max(0, RG_MAX_STDERR_BYTES - len(stderr))])

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_stdout)
                nursery.start_soon(read_stderr)
            exit_code = await process.wait()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    await kill_process_group(process)
                    await process.wait()
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        await pipe.aclose()
        return CommandOutput(
            exit_code=0 if overflow else exit_code, stdout=bytes(stdout), stderr=bytes(stderr)
        )


__all__ = [
    "RG_MAX_OUTPUT_BYTES",
    "RG_MAX_STDERR_BYTES",
    "LocalFileOperations",
    "file_kind",
    "find_rg",
    "kill_process_group",
]
