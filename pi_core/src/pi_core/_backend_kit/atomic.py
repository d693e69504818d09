"""Atomic file replacement (``docs/explanation/differences.md``).

:func:`atomic_write_bytes` writes a temporary file in the same directory as the target, fsyncs
it, and renames it over the target, so a concurrent reader sees the old or the new content and
never an empty or half-written file, and a process killed mid-write leaves one or the other.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence

from pi_core._backend_kit.interprocess import register_temp_file, unregister_temp_file


def _target_of(path: str) -> str:
    """``path`` with symlinks resolved, so the link's target is replaced and the link is kept."""
    if os.path.islink(path):
        return os.path.realpath(path)
    return path


def atomic_write_bytes(
    path: str,
    data: bytes | Sequence[bytes | memoryview],
    check: Callable[[str, os.stat_result], None] | None = None,
) -> None:
    """Replace the file at ``path`` with ``data`` atomically (blocking; run it in a thread).
    ``data`` may be a sequence of buffers, written one after another (never joined).
    ``check(target, st)``, when given, sees the ``stat`` of the existing file about to be
    replaced (before anything is written) and refuses the write by raising.

    * temporary file ``.{name}.{random}.tmp`` in the target's directory, written, ``fsync``-ed,
      then ``os.replace``-d over the target; the directory is fsync-ed afterwards (best effort);
    * an existing file keeps its permission bits (and owner when running as root); a new file
      gets ``0o666`` minus the umask, as ``open(path, "w")`` would;
    * a symlink is followed: its (final) target is replaced and the link stays a link;
    * only a regular file is replaced: an existing device, FIFO or socket raises
      ``OSError(EINVAL)`` and is left as it is (``/dev/full`` stays a device);
    * the temporary file is recorded in pi's state directory while it exists, so a process
      killed mid-write leaves nothing the next session does not remove
      (:mod:`pi_core._backend_kit.interprocess`);
    * on any failure the temporary file is removed and the ``OSError`` is raised with
      ``filename`` = ``path``: ``IsADirectoryError`` when ``path`` is a directory,
      ``FileNotFoundError`` when its directory is missing, ``PermissionError``, ...
    """
    target = _target_of(path)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)
    if st is not None and check is not None:
        check(target, st)
    directory, name = os.path.split(target)
    token = secrets.token_hex(6)
    tmp = os.path.join(directory, f".{name}.{token}.tmp")
    record = register_temp_file(token, tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        unregister_temp_file(record)
        raise type(exc)(exc.errno, exc.strerror, path) from None
    replaced = False
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if hasattr(os, "geteuid") and os.geteuid() == 0:
                    with contextlib.suppress(OSError):
                        os.fchown(fd, st.st_uid, st.st_gid)
            for chunk in (data,) if isinstance(data, bytes) else data:
                view = memoryview(chunk)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        replaced = True
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, path) from exc
    finally:
        if not replaced:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        unregister_temp_file(record)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


__all__ = ["atomic_write_bytes"]
