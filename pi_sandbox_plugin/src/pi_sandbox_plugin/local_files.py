"""A local :class:`~pi_core.operations.FileOperations` for the sandbox plugin (DESIGN §2).

The plugin depends on ``pi_core`` alone, so when ``[sandbox] backend = "local"`` comes with a
path policy it wraps this one (:mod:`pi_sandbox_plugin.guarded_files`) instead of the built-in
``LocalFileOperations``. It behaves the same: blocking calls in trio worker threads, errors are
the ``OSError`` subclasses Python raises, writes are :func:`pi_core.atomic.atomic_write_bytes`,
``rg`` is the ripgrep wheel's (else ``PATH``'s).
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

from pi_core.atomic import atomic_write_bytes
from pi_core.operations import CommandOutput, FileKind, FileStat


@functools.cache
def find_rg() -> str:
    """Path of ``rg``: the ripgrep wheel's beside this Python, else ``PATH``'s.
    ``FileNotFoundError`` when there is none."""
    for candidate in (
        os.path.join(sysconfig.get_path("scripts"), "rg"),
        os.path.join(os.path.dirname(sys.executable), "rg"),
    ):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("rg")
    if found:
        return found
    raise FileNotFoundError(errno.ENOENT, "ripgrep (rg) is not installed: pip install ripgrep")


def _read_range(path: str, offset: int, length: int | None) -> bytes:
    with open(path, "rb") as handle:
        if offset:
            handle.seek(offset)
        return handle.read() if length is None else handle.read(length)


def _kind(mode: int) -> FileKind:
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
        kind=_kind(st.st_mode), size=st.st_size, mode=stat.S_IMODE(st.st_mode), mtime=st.st_mtime
    )


def _access(path: str, mode: int) -> None:
    os.stat(path)
    if not os.access(path, mode):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


async def _kill_group(process: trio.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()


class LocalFiles:
    """:class:`~pi_core.operations.FileOperations` (with ``access``) on this machine's file
    system; see the module docstring."""

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset``."""
        return await trio.to_thread.run_sync(_read_range, path, offset, length)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomic replace (temp file, fsync, rename; mode and symlink target kept)."""
        await trio.to_thread.run_sync(atomic_write_bytes, path, data)

    async def stat(self, path: str) -> FileStat:
        """Kind, size, permission bits and mtime (symlinks followed)."""
        return await trio.to_thread.run_sync(_stat, path)

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """Node's ``fs.access``: ``FileNotFoundError``/``PermissionError`` unless allowed."""
        await trio.to_thread.run_sync(_access, path, mode)

    async def realpath(self, path: str) -> str:
        """``os.path.realpath``."""
        return await trio.to_thread.run_sync(os.path.realpath, path)

    async def list_dir(self, path: str) -> list[str]:
        """Entry names (no ``.``/``..``), unsorted."""
        return await trio.to_thread.run_sync(os.listdir, path)

    async def mkdir(self, path: str) -> None:
        """``mkdir -p``."""
        await trio.to_thread.run_sync(functools.partial(os.makedirs, path, exist_ok=True))

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run ``rg`` with ``args`` in ``cwd`` (stdin closed, own session, killed as a group on
        cancellation)."""
        result = await trio.run_process(
            [find_rg(), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            start_new_session=True,
            deliver_cancel=_kill_group,
        )
        return CommandOutput(
            exit_code=result.returncode, stdout=result.stdout, stderr=result.stderr
        )


__all__ = ["LocalFiles", "find_rg"]
