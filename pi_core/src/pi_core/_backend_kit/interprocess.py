"""What several pi processes on one machine share: a per-user state directory, advisory file
locks keyed by path, and the register of atomic writes in flight (see ``docs/``, "The file
mutation queue").

**The state directory** (:func:`state_dir`): ``$XDG_RUNTIME_DIR/pi`` when ``XDG_RUNTIME_DIR`` is
set, else ``{tempdir}/pi-{uid}``; created with mode ``0700`` and refused (``PermissionError``)
when it is a symlink, not a directory, owned by another user or open to others, so no other user
can take or fake a lock or a register entry.

**Locks** (:func:`path_lock`): ``flock(LOCK_EX)`` on ``lock-{sha256(key)}`` in the state
directory, where ``key`` is the file's real path (the mutation queue's key). Why a lock file
there and not a lock on the target itself: the atomic write renames a new inode over the target,
so a process waiting on the old inode would wake holding a lock on a file nobody reads any more;
a file that does not exist yet has nothing to lock; the target may be read-only, a FIFO (opening
it blocks) or on a remote backend; and a lock file beside the target would litter the
workspace. The holder removes its lock file before it lets go, and a process that wins a lock
on a file that is no longer the one at that name retries, so the directory holds only the locks
in use. The lock is taken by polling ``LOCK_NB`` with ``trio.sleep`` between attempts (1 ms,
doubling to 50 ms): the trio loop never blocks and a cancelled wait leaves at once.

Limits (documented): the lock serialises pi processes **on this machine**; a remote backend's
key is the remote path, so processes on two machines that edit one remote or network-mounted
file (NFS, SMB, sshfs) are not serialised, and a program that does not take the lock (an
editor, ``sed -i``) is not kept out.

**Atomic writes in flight** (:func:`register_temp_file`, :func:`sweep_stale_temp_files`): before
:func:`~pi_core._backend_kit.atomic.atomic_write_bytes` creates its temporary file it leaves a
symlink ``tmp-{pid}-{token}`` → the temporary file's path in the state directory and removes it
once the rename is done. A process killed in between (``kill -9``) leaves both behind; the next
session's sweep removes the temporary files of processes that are no longer running and their
entries, and the lock files nobody holds any more (a killed holder's lock ends with it; only its
file stays). A pid reused by a live process keeps its entries until that process is gone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import stat
import tempfile
from collections.abc import AsyncIterator

import trio

from pi_core._errors import ToolError

_FIRST_DELAY = 0.001
_MAX_DELAY = 0.05


def _state_dir_path() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "pi")
    return os.path.join(tempfile.gettempdir(), f"pi-{os.getuid()}")


def state_dir() -> str:
    """The per-user state directory (see the module doc), created if missing; raises
    ``PermissionError`` when it is not safe to use."""
    path = _state_dir_path()
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise PermissionError(
            errno.EACCES,
            "pi's state directory is not a private directory of this user (mode 0700)",
            path,
        )
    return path


def lock_file_for(key: str) -> str:
    """The lock file of ``key`` (a file's real path) in the state directory."""
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()
    return os.path.join(state_dir(), f"lock-{digest}")


def _try_lock(path: str) -> int | None:
    """The fd holding ``flock(LOCK_EX)`` on the lock file ``path``, or ``None`` when another
    process holds it (or held it and removed the file while we opened it: try again)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:
        current = os.stat(path)
    except FileNotFoundError:
        current = None
    mine = os.fstat(fd)
    if current is None or (current.st_dev, current.st_ino) != (mine.st_dev, mine.st_ino):
        os.close(fd)  # the holder removed it on release: the lock is on a dead file
        return None
    return fd


def _release(path: str, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
    os.close(fd)


@contextlib.asynccontextmanager
async def path_lock(key: str) -> AsyncIterator[None]:
    """Hold the inter-process lock of ``key`` (a file's real path) for the ``async with`` body.

    Waits without blocking the trio loop (polling, see the module doc); cancellation while
    waiting leaves at once. Fails closed: :class:`~pi_core.ToolError` ``Cannot lock {key}
    against other pi processes: {reason} ({path})`` when the state directory or the lock file
    cannot be used (e.g. another user owns the directory), never a mutation without the lock.
    """
    try:
        path = lock_file_for(key)
        delay = _FIRST_DELAY
        while True:
            fd = _try_lock(path)
            if fd is not None:
                break
            await trio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
    except OSError as exc:
        raise ToolError(
            f"Cannot lock {key} against other pi processes: {exc.strerror} ({exc.filename})"
        ) from exc
    try:
        yield
    finally:
        _release(path, fd)


# -- atomic writes in flight -------------------------------------------------------------------


def register_temp_file(token: str, temp_path: str) -> str | None:
    """Record that this process is about to create ``temp_path`` (``token``: its random part);
    returns the entry to pass to :func:`unregister_temp_file`, or ``None`` when the state
    directory cannot be used (the write goes on without a record)."""
    try:
        entry = os.path.join(state_dir(), f"tmp-{os.getpid()}-{token}")
        os.symlink(os.path.abspath(temp_path), entry)
    except OSError:
        return None
    return entry


def unregister_temp_file(entry: str | None) -> None:
    """Remove the record :func:`register_temp_file` made (the write finished or cleaned up)."""
    if entry is not None:
        with contextlib.suppress(OSError):
            os.unlink(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def _sweep_lock(path: str) -> None:
    """Remove the lock file ``path`` if nobody holds it (a killed holder leaves it): taken and
    released as any lock is, so a process waiting on it retries on a new file."""
    with contextlib.suppress(OSError):
        fd = _try_lock(path)
        if fd is not None:
            _release(path, fd)


def sweep_stale_temp_files() -> list[str]:
    """Remove the temporary files of atomic writes whose process is gone, and their records,
    and the lock files nobody holds (a killed holder's); returns the temporary files removed.
    Never raises."""
    removed: list[str] = []
    try:
        directory = state_dir()
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if name.startswith("lock-"):
            _sweep_lock(os.path.join(directory, name))
            continue
        parts = name.split("-", 2)
        if len(parts) != 3 or parts[0] != "tmp" or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or _alive(pid):
            continue
        entry = os.path.join(directory, name)
        try:
            temp = os.readlink(entry)
            base = os.path.basename(temp)
            if base.startswith(".") and base.endswith(f".{parts[2]}.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISREG(os.lstat(temp).st_mode):
                        os.unlink(temp)
                        removed.append(temp)
            os.unlink(entry)
        except OSError:
            continue
    return removed


@functools.cache
def sweep_once() -> None:
    """:func:`sweep_stale_temp_files` once per process (a session's file backend calls it)."""
    sweep_stale_temp_files()


__all__ = [
    "lock_file_for",
    "path_lock",
    "register_temp_file",
    "state_dir",
    "sweep_once",
    "sweep_stale_temp_files",
    "unregister_temp_file",
]
