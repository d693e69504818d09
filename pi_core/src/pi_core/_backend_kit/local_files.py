"""The local file backend: :class:`LocalFileOperations`.

Implements :class:`pi_core._backend_kit.operations.FileOperations` on this machine's file system; the one
implementation both ``pi_builtin_tools`` (the default backend) and ``pi_sandbox_plugin`` (the
guarded local backend) use. Blocking calls run in trio worker threads so the event loop never
stalls; they are not abandoned on cancellation (a write in flight finishes). The read tool's
``stat`` and read of a file whose data is in the page cache, and a mutating call's path lookup,
run in the event loop's thread when they cannot wait (:mod:`pi_core._backend_kit.inline_io`). ``rg`` is the one
on ``PATH``, else the ``ripgrep`` PyPI wheel's (a dependency of the distributions that run it).

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
from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any

import trio

from pi_core._backend_kit.atomic import atomic_write_bytes
from pi_core._backend_kit.inline_io import WouldBlock, inline_allowed, read_nowait
from pi_core._backend_kit.interprocess import sweep_once
from pi_core._backend_kit.operations import CommandOutput, FileKind, FileStat
from pi_core._backend_kit.paths import path_candidates, resolve_to_cwd
from pi_core._backend_kit.process_stream import enlarge_pipe
from pi_core._backend_kit.tree import LocalWorkspaceTree


def find_program(name: str) -> str | None:
    """``shutil.which(name)`` over the **absolute** folders of ``PATH`` only: an empty entry
    or a relative one (``.``, ``bin``) names the current folder of the moment, where a file of
    the workspace would run as the program pi starts on its own behalf (``rg``, ``wc``, the
    shell). ``None`` when there is none."""
    folders = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(d)]
    return shutil.which(name, path=os.pathsep.join(folders)) if folders else None


@functools.cache
def find_rg() -> str:
    """Path of the ``rg`` binary, found as Pi finds it: the user's ``rg`` on ``PATH``, else the
    one pi ships (the ``ripgrep`` wheel's, beside this Python), as Pi falls back to the one it
    downloads (``PATH``'s absolute folders only: :func:`find_program`). So grep's error texts are those of the ripgrep the user has (grep passes them
    on as they are). Looked up once per process.

    Raises ``FileNotFoundError`` when there is none.
    """
    found = find_program("rg")
    if found:
        return found
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), "rg"),
        os.path.join(os.path.dirname(sys.executable), "rg"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
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


OpenedCheck = Callable[[str, int, os.stat_result], None]
"""``check(path, fd, st)``: called in the worker thread with each descriptor
:class:`LocalFileOperations` opened for reading (``path`` as opened, the descriptor, its
``fstat``), before a byte is read; raising (an ``OSError``) refuses the read."""


def _read_range(
    path: str, offset: int, length: int | None, check: OpenedCheck | None = None
) -> bytes:
    # stat first, so a device is never opened; O_NONBLOCK, so a FIFO swapped in meanwhile
    # cannot block the open; fstat, so what was opened is the regular file that was checked
    fd, _ = _stat_and_open(path, check)
    try:
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


def _file_stat(st: os.stat_result) -> FileStat:
    return FileStat(
        kind=file_kind(st.st_mode),
        size=st.st_size,
        mode=stat.S_IMODE(st.st_mode),
        mtime=st.st_mtime,
        key=(st.st_dev, st.st_ino),
    )


def _stat(path: str) -> FileStat:
    return _file_stat(os.stat(path))


def _entry_kind(entry: os.DirEntry[str]) -> FileKind:
    """The kind of a directory entry itself (a symbolic link is ``"symlink"``, not followed)."""
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "directory"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _list_dirs(paths: Sequence[str]) -> list[list[tuple[str, FileKind]] | None]:
    """:meth:`LocalFileOperations.list_dirs` in one worker-thread call."""
    out: list[list[tuple[str, FileKind]] | None] = []
    for path in paths:
        try:
            with os.scandir(path) as entries:
                out.append([(entry.name, _entry_kind(entry)) for entry in entries])
        except OSError:
            out.append(None)
    return out


def _open_regular(
    path: str, check: OpenedCheck | None = None, same_as: tuple[int, int] | None = None
) -> tuple[int, os.stat_result]:
    """An fd of the regular file ``path`` opened for reading and its ``fstat`` (see
    :func:`_read_range`), its type already checked by the caller's ``stat``: ``O_NONBLOCK`` so
    a FIFO swapped in since cannot block the open, ``fstat`` so what was opened is a regular
    file (and what ``check`` is shown); with ``same_as`` (``(device, inode)``),
    ``OSError(ESTALE)`` when the name now holds another file. It stays non-blocking: a read of
    a regular file's data never waits for ``O_NONBLOCK``'s sake, and a "regular" file of the
    kernel that waits for news (``/proc/kmsg``, tracing's ``trace_pipe``) fails with
    ``EAGAIN`` instead of holding a worker thread, and the call, until news comes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        _refuse_special(st.st_mode, path)
        if same_as is not None and (st.st_dev, st.st_ino) != same_as:
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE), path)
        if check is not None:
            check(path, fd, st)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _stat_and_open(
    path: str, check: OpenedCheck | None = None, same_as: tuple[int, int] | None = None
) -> tuple[int, os.stat_result]:
    """:func:`_open_regular` after a ``stat`` of ``path``, so a device is never opened."""
    _refuse_special(os.stat(path).st_mode, path)
    return _open_regular(path, check, same_as)


def _read_fd(fd: int, length: int | None, size_hint: int) -> bytes:
    """``length`` bytes (``None``: to the end of the file) from the fd's position."""
    if length is None:
        parts = []
        while part := os.read(fd, max(size_hint + 1, 65536)):
            parts.append(part)
            size_hint = 65536
        return b"".join(parts) if len(parts) != 1 else parts[0]
    parts, left = [], length
    while left > 0 and (part := os.read(fd, left)):
        parts.append(part)
        left -= len(part)
    return b"".join(parts) if len(parts) != 1 else parts[0]


def _read_head(
    candidates: Sequence[str],
    fallback: str,
    whole_limit: int,
    head_size: int,
    check: OpenedCheck | None = None,
    read: Callable[[int, int | None, int], bytes] = _read_fd,
) -> tuple[str, FileStat | OSError, bytes | OSError | None]:
    """:meth:`LocalFileOperations.read_head` in one worker-thread call (in the event loop's
    thread with ``read=read_nowait``, which raises :class:`WouldBlock` rather than wait)."""
    path, st = fallback, None
    failed: dict[str, OSError] = {}
    for candidate in candidates:
        try:
            st = os.stat(candidate)
        except OSError as exc:
            failed[candidate] = exc
            continue
        path = candidate
        break
    if st is None:
        try:
            st = os.stat(path) if path not in failed else None
        except OSError as exc:
            return path, exc, None
        if st is None:  # the fallback is a candidate: its error, without a second stat
            return path, failed[path], None
    info = _file_stat(st)
    if info.kind in ("directory", "other"):
        return path, info, None
    try:
        fd, opened = _open_regular(path, check)
        try:
            if (opened.st_dev, opened.st_ino) != info.key:  # the name holds another file now
                info = _file_stat(opened)  # the one read
            whole = 0 < info.size <= whole_limit
            data = read(fd, None if whole else head_size, info.size)
        finally:
            os.close(fd)
    except OSError as exc:
        return path, info, exc
    return path, info, data


def _scan_file(
    path: str,
    offset: int,
    chunk_size: int,
    consume: Callable[[bytearray], bool | None],
    check: OpenedCheck | None = None,
    same_as: tuple[int, int] | None = None,
) -> None:
    """:meth:`LocalFileOperations.scan_bytes` in one worker-thread call: one buffer of
    ``chunk_size`` bytes, refilled with ``readv`` (no allocation per chunk)."""
    fd, _ = _stat_and_open(path, check, same_as)
    try:
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        buffer = bytearray(chunk_size)
        while True:
            count = os.readv(fd, [buffer])
            if count == 0:
                return
            if consume(buffer if count == chunk_size else buffer[:count]):
                return
    finally:
        os.close(fd)


WC_MIN_BYTES = 8 * 1024 * 1024
"""From this many bytes on, :meth:`LocalFileOperations.count_newlines` has ``wc -lc`` count
(coreutils counts with vector instructions, several times ``bytes.count``'s speed); below it,
or without a working ``wc``, it counts itself."""


@functools.cache
def _wc() -> str | None:
    return find_program("wc")


def _count_with_wc(fd: int, expected: int) -> tuple[int, int] | None:
    """``(newlines, bytes)`` from the fd's position to its end, as ``wc -lc`` reads it on its
    stdin (this very descriptor: no name is opened again); ``None`` when ``wc`` is missing,
    fails, says something else, or counts other than the ``expected`` bytes (the file
    changed meanwhile, or it is not the ``wc`` it claims to be)."""
    wc = _wc()
    if wc is None:
        return None
    try:
        done = subprocess.run(
            [wc, "-lc"],
            stdin=fd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "")},
            check=False,
        )
    except OSError:
        return None
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 2 or not all(f.isdigit() for f in fields):
        return None
    newlines, length = int(fields[0]), int(fields[1])
    if length != expected or newlines > length:
        return None
    return newlines, length


def _count_rest(
    path: str,
    offset: int,
    chunk_size: int,
    check: OpenedCheck | None = None,
    same_as: tuple[int, int] | None = None,
) -> tuple[int, int, int | None]:
    """:meth:`LocalFileOperations.count_newlines` in one worker-thread call."""
    fd, st = _stat_and_open(path, check, same_as)
    try:
        size = st.st_size
        counted = None
        if size - offset >= WC_MIN_BYTES:
            os.lseek(fd, offset, os.SEEK_SET)
            counted = _count_with_wc(fd, size - offset)
        if counted is None:
            os.lseek(fd, offset, os.SEEK_SET)
            newlines = length = 0
            buffer = bytearray(chunk_size)
            while count := os.readv(fd, [buffer]):
                newlines += buffer.count(b"\n", 0, count)
                length += count
            counted = newlines, length
        newlines, length = counted
        last = os.pread(fd, 1, offset + length - 1) if length else b""
        return length, newlines, last[0] if last else None
    finally:
        os.close(fd)


def _resolve_for_mutation(candidates: Sequence[str], fallback: str) -> tuple[str, str]:
    """:meth:`LocalFileOperations.resolve_for_mutation` in one worker-thread call."""
    path = fallback
    for candidate in candidates:
        try:
            os.stat(candidate)
        except OSError:
            continue
        path = candidate
        break
    try:
        return path, os.path.realpath(path)
    except OSError:
        return path, path


class _Job:
    """One blocking call queued on a :class:`_Lane`."""

    __slots__ = ("call", "done", "error", "taken", "task", "value")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = False
        self.taken = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.task: trio.lowlevel.Task | None = None  # set while its caller sleeps

    def wake(self) -> None:
        if self.task is not None:
            task, self.task = self.task, None
            trio.lowlevel.reschedule(task)


def _run_jobs(jobs: list[_Job]) -> None:
    for job in jobs:
        try:
            job.value = job.call()
        except BaseException as exc:  # handed to its caller, as trio.to_thread does
            job.error = exc
        job.done = True


def _no_abort(_: Any) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


class _Lane:
    """Runs short blocking calls (a ``stat`` and the read of a small file) in worker threads,
    **many per thread hop**: a call queued while ``hops`` hops are in flight waits and leaves
    with the next one, so a batch of 1,000 reads costs far fewer than 1,000 hand-offs (each a
    thread wake-up, a wake-up of the event loop and a GIL hand-over).

    Cancellation is deferred while a call is queued or running, as with
    ``trio.to_thread.run_sync`` (a call is never abandoned): a cancelled caller returns once
    its batch is done. A call that blocks holds up the calls of its own batch only.

    A call given with a ``nowait`` variant runs that first, in the event loop's thread, when
    :func:`~pi_core._backend_kit.inline_io.inline_allowed`; the variant raises
    :class:`~pi_core._backend_kit.inline_io.WouldBlock` instead of waiting (data not in the page
    cache), and the call then takes a hop as any other."""

    def __init__(self, hops: int = 4) -> None:
        self._hops = hops
        self._in_flight = 0
        self._pending: list[_Job] = []

    async def run(self, call: Callable[[], Any], nowait: Callable[[], Any] | None = None) -> Any:
        if nowait is not None and inline_allowed():
            try:
                return nowait()
            except WouldBlock:
                pass
        job = _Job(call)
        self._pending.append(job)
        while not job.done:
            if not job.taken and self._in_flight < self._hops:
                await self._hop()
            else:
                job.task = trio.lowlevel.current_task()
                await trio.lowlevel.wait_task_rescheduled(_no_abort)
        if job.error is not None:
            raise job.error
        return job.value

    async def _hop(self) -> None:
        batch, self._pending = self._pending, []
        for job in batch:
            job.taken = True
        self._in_flight += 1
        try:
            # shielded: the batch holds other callers' jobs, so a cancelled driver still runs
            # it (its own cancellation is delivered at its next checkpoint)
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(_run_jobs, batch)
        finally:
            self._in_flight -= 1
            for job in batch:
                if not job.done:  # the hop itself failed (never in practice)
                    job.error, job.done = RuntimeError("file job not run"), True
                job.wake()
            if self._pending:  # the first waiting caller drives the next hop
                self._pending[0].wake()


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


def _check_access(path: str, mode: int) -> os.stat_result:
    """``access(2)`` of ``path`` with ``mode`` (its errno as :meth:`LocalFileOperations.access`
    gives it); the ``stat`` it starts with (``ENOENT`` first)."""
    st = os.stat(path)
    if not os.access(path, mode):
        code = _access_errno(path, mode)
        raise OSError(code, os.strerror(code), path)
    return st


def _read_for_update(
    path: str, mode: int, limit: int, check: OpenedCheck | None = None
) -> tuple[FileStat, bytes | OSError | None]:
    st = _file_stat(_check_access(path, mode))
    if st.kind != "file" or st.size > limit:
        return st, None
    try:
        return st, _read_range(path, 0, limit + 1, check)
    except OSError as exc:
        return st, exc


async def _keep_stderr(process: trio.Process, into: bytearray) -> None:
    """Read ripgrep's stderr to its end, keeping the first :data:`RG_MAX_STDERR_BYTES`."""
    assert process.stderr is not None
    while chunk := await process.stderr.receive_some(_RG_READ_SIZE):
        into.extend(chunk[: max(0, RG_MAX_STDERR_BYTES - len(into))])


async def _reap(process: trio.Process) -> None:
    """Shielded: kill ripgrep's group if it still runs, wait for it, close its pipes."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            await kill_process_group(process)
            await process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                await pipe.aclose()


class LocalFileOperations:
    """:class:`~pi_core._backend_kit.operations.FileOperations` on the local file system.

    Errors are the ``OSError`` subclasses Python raises (``errno`` set). ``read_bytes`` reads only
    the requested range; ``write_bytes`` is :func:`pi_core._backend_kit.atomic.atomic_write_bytes`.
    Both refuse a device, FIFO or socket with ``OSError(EINVAL)`` (never opened for a blocking
    read, never replaced). Making one (a session's file backend) removes, once per process, the
    temporary files that atomic writes of killed pi processes left
    (:func:`pi_core._backend_kit.interprocess.sweep_stale_temp_files`).

    ``check_opened`` (:data:`OpenedCheck`), when given, sees every descriptor opened for
    reading (``read_bytes``, ``read_head``, ``scan_bytes``, ``read_for_update``) before a byte
    is read, and refuses the read by raising: a policy checks *what was opened* (device and
    inode), whatever name or race led there. ``check_replaced`` (``check(path, st)``) sees the
    ``stat`` of the existing file a ``write_bytes``/``write_chunks`` is about to replace (the
    symlink's target for a symlink) and refuses the write by raising; a write opens only its
    new temporary file and renames it over the name, so it never writes into the file the name
    held.
    """

    rg_max_output_bytes = RG_MAX_OUTPUT_BYTES
    """Most stdout bytes :meth:`run_rg` keeps (for :meth:`run_rg_fed`'s caller, which must know
    when a search by :meth:`run_rg` would have been cut)."""

    # class defaults too, so a subclass whose __init__ does not call this one's still works
    check_opened: OpenedCheck | None = None
    check_replaced: Callable[[str, os.stat_result], None] | None = None

    def __init__(
        self,
        *,
        check_opened: OpenedCheck | None = None,
        check_replaced: Callable[[str, os.stat_result], None] | None = None,
    ) -> None:
        self.check_opened = check_opened
        self.check_replaced = check_replaced
        sweep_once()

    @functools.cached_property
    def _lane(self) -> _Lane:
        return _Lane()

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset``; ``IsADirectoryError``
        for a directory, ``OSError(EINVAL)`` for a device, FIFO or socket."""
        return await trio.to_thread.run_sync(_read_range, path, offset, length, self.check_opened)

    def checkpoint_tree(self, root: str, exclude: Sequence[str] = ()) -> LocalWorkspaceTree:
        """The workspace ``root`` as checkpoints read and restore it (optional method of a
        ``FileOperations``: :class:`~pi_core._backend_kit.tree.LocalWorkspaceTree`)."""
        return LocalWorkspaceTree(root, exclude)

    async def read_head(
        self, path: str, cwd: str, *, whole_limit: int, head_size: int, for_read: bool = True
    ) -> tuple[str, FileStat | OSError, bytes | OSError | None] | None:
        """Resolve, stat and read the start of a file in **one** worker-thread call, or none when
        it is done in the event loop's thread without waiting (the page cache holds the data and
        no ``check_opened`` is set: :mod:`~pi_core._backend_kit.inline_io`). The read tool's
        first step; optional: a backend without it gets the same from
        ``resolve_existing_path``, ``stat`` and ``read_bytes``.

        ``path`` is resolved against ``cwd`` as
        :func:`~pi_core._backend_kit.paths.resolve_existing_path` does (the first candidate that
        exists, else the space-normalised path). Returns ``(resolved, stat, data)``: ``stat`` is
        the :class:`FileStat` or the ``OSError`` of ``stat``; ``data`` is ``None`` when there
        was nothing to read (``stat`` failed, a directory or a special file), else the whole file when
        ``0 < size <= whole_limit``, otherwise its first ``head_size`` bytes, or the
        ``OSError`` of the read (``IsADirectoryError``/``EINVAL`` as :meth:`read_bytes`).

        ``None`` when a subclass overrides ``stat`` or ``read_bytes``: the caller uses those,
        so what the subclass changes still applies."""
        if self._overrides_io():
            return None
        candidates = path_candidates(path, cwd, for_read=for_read)
        fallback = candidates[0] if path.isascii() else resolve_to_cwd(path, cwd)
        check = self.check_opened
        call = functools.partial(_read_head, candidates, fallback, whole_limit, head_size, check)
        # a policy's check may block (it may walk the workspace): only a read without one is
        # tried in the event loop's thread
        nowait = None if check is not None else functools.partial(call, read=read_nowait)
        return await self._lane.run(call, nowait)

    async def resolve_for_mutation(self, path: str, cwd: str) -> tuple[str, str] | None:
        """``(resolved, key)`` of a mutating tool's ``path`` argument in **one** worker-thread
        call shared with the other calls waiting (optional: a backend without it gets the same
        from ``resolve_existing_path(path, cwd, ops, for_read=False)`` and ``realpath``, see
        :func:`~pi_core._backend_kit.mutation_queue.with_tool_path_mutation_queue`).

        ``None`` when a subclass overrides ``stat`` or ``realpath``: the caller uses those."""
        cls = type(self)
        if cls.stat is not LocalFileOperations.stat or (
            cls.realpath is not LocalFileOperations.realpath
        ):
            return None
        candidates = path_candidates(path, cwd, for_read=False)
        fallback = resolve_to_cwd(path, cwd)
        call = functools.partial(_resolve_for_mutation, candidates, fallback)
        return await self._lane.run(call, call)  # lookups only: no data to wait for

    async def scan_bytes(
        self,
        path: str,
        offset: int,
        chunk_size: int,
        consume: Callable[[bytearray], bool | None],
        *,
        same_as: FileStat | None = None,
    ) -> bool:
        """Feed the file from byte ``offset`` to its end, ``chunk_size`` bytes at a time, to
        ``consume`` in **one** worker-thread call (optional: a backend without it is read with
        :meth:`read_bytes` chunk by chunk); ``consume`` returning true stops the scan.

        ``consume`` runs in the worker thread and gets one reused buffer: it must copy what it
        keeps. Memory: one buffer of ``chunk_size`` bytes, whatever the file's size. Errors as
        :meth:`read_bytes`; with ``same_as`` (a :class:`FileStat` of this backend), also
        ``OSError(ESTALE)`` when the name now holds another file. Returns ``False`` (nothing
        read) when a subclass overrides ``read_bytes``: the caller reads with it instead."""
        if self._overrides_io():
            return False
        await trio.to_thread.run_sync(
            _scan_file,
            path,
            offset,
            chunk_size,
            consume,
            self.check_opened,
            same_as.key if same_as is not None else None,
        )
        return True

    async def count_newlines(
        self,
        path: str,
        offset: int,
        chunk_size: int = 1 << 20,
        *,
        same_as: FileStat | None = None,
    ) -> tuple[int, int, int | None] | None:
        """``(bytes, newlines, last byte)`` of the file from byte ``offset`` to its end, in one
        worker-thread call (optional: the read tool counts what it no longer needs to see;
        a backend without it feeds it the rest with :meth:`scan_bytes` or :meth:`read_bytes`).
        The last byte is ``None`` when nothing follows ``offset``. From
        :data:`WC_MIN_BYTES` on, ``wc -lc`` counts, reading the descriptor this call opened
        (and ``check_opened`` saw); otherwise, or when ``wc`` fails, ``chunk_size`` bytes at a
        time in one reused buffer. Errors as :meth:`scan_bytes`; ``None`` when a subclass
        overrides ``read_bytes`` or ``stat``."""
        if self._overrides_io():
            return None
        counted: tuple[int, int, int | None] = await trio.to_thread.run_sync(
            _count_rest,
            path,
            offset,
            chunk_size,
            self.check_opened,
            same_as.key if same_as is not None else None,
        )
        return counted

    def _overrides_io(self) -> bool:
        cls = type(self)
        return cls.read_bytes is not LocalFileOperations.read_bytes or (
            cls.stat is not LocalFileOperations.stat
        )

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomic replace (temp file, fsync, rename; mode and symlink target kept)."""
        await trio.to_thread.run_sync(atomic_write_bytes, path, data, self.check_replaced)

    async def write_chunks(self, path: str, chunks: Sequence[bytes | memoryview]) -> None:
        """:meth:`write_bytes` of the concatenation of ``chunks``, without building it (edit
        writes a large file as its head, the new text and its tail); a subclass that overrides
        ``write_bytes`` gets them joined."""
        if type(self).write_bytes is not LocalFileOperations.write_bytes:
            await self.write_bytes(path, b"".join(chunks))
            return
        await trio.to_thread.run_sync(atomic_write_bytes, path, chunks, self.check_replaced)

    async def stat(self, path: str) -> FileStat:
        """Kind, size, permission bits and mtime of ``path`` (symlinks followed)."""
        return await trio.to_thread.run_sync(_stat, path)

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """Node's ``fs.access``: raise unless ``path`` exists and can be opened with ``mode``
        (``os.R_OK``/``os.W_OK`` bits): ``FileNotFoundError`` (``ENOENT``), ``PermissionError``
        (``EACCES``, ``EPERM`` for an immutable file), ``OSError`` ``EROFS`` on a read-only file
        system, ... (``access(2)``'s errno). The edit tool checks ``R_OK | W_OK`` before
        reading."""

        await trio.to_thread.run_sync(_check_access, path, mode)

    async def read_for_update(
        self, path: str, mode: int, limit: int
    ) -> tuple[FileStat, bytes | OSError | None] | None:
        """:meth:`access` with ``mode``, :meth:`stat` and :meth:`read_bytes` of a regular file of
        at most ``limit`` bytes, in **one** worker-thread call (the edit tool's first steps;
        optional: a backend without it gets the same from those three).

        Raises what :meth:`access` or :meth:`stat` raise. Returns ``(stat, data)``: ``data`` is
        the whole file, the ``OSError`` of the read (as :meth:`read_bytes`), or ``None`` when
        nothing was read (not a regular file, or larger than ``limit``). ``None`` when a
        subclass overrides ``access``, ``stat`` or ``read_bytes``: the caller uses those."""
        if self._overrides_io() or type(self).access is not LocalFileOperations.access:
            return None
        return await trio.to_thread.run_sync(_read_for_update, path, mode, limit, self.check_opened)

    async def realpath(self, path: str) -> str:
        """``os.path.realpath``: symlinks of the existing prefix resolved, the rest kept."""
        return await trio.to_thread.run_sync(os.path.realpath, path)

    async def list_dir(self, path: str) -> list[str]:
        """Entry names of the directory (no ``.``/``..``), unsorted."""
        return await trio.to_thread.run_sync(os.listdir, path)

    async def list_dirs(self, paths: Sequence[str]) -> list[list[tuple[str, FileKind]] | None]:
        """For each directory of ``paths``, its entries as ``(name, kind)``, ``kind`` that of
        the entry itself (a symbolic link is ``"symlink"``, not followed), or ``None`` when it
        cannot be listed; all in **one** worker-thread call (the find tool's walk; optional: a
        backend without it gets the same from :meth:`list_dir`, :meth:`stat` and
        :meth:`realpath`)."""
        return await trio.to_thread.run_sync(_list_dirs, list(paths))

    async def mkdir(self, path: str) -> None:
        """``mkdir -p``: ``FileExistsError`` when ``path`` exists and is not a directory."""
        await trio.to_thread.run_sync(functools.partial(os.makedirs, path, exist_ok=True))

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run ``rg`` with ``args`` in ``cwd`` (stdin closed, own session; killed as a group
        on cancellation) and return its exit code and output.

        Memory stays bounded: past :data:`RG_MAX_OUTPUT_BYTES` of stdout (32 MiB) ripgrep is
        killed and the output returned is cut after its last complete line, with exit code 0
        (the search found matches, more than any tool shows) and ``truncated`` set; stderr
        keeps its first :data:`RG_MAX_STDERR_BYTES` (1 MiB)."""
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

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_stdout)
                nursery.start_soon(_keep_stderr, process, stderr)
            exit_code = await process.wait()
        finally:
            await _reap(process)
        return CommandOutput(
            exit_code=0 if overflow else exit_code,
            stdout=bytes(stdout),
            stderr=bytes(stderr),
            truncated=overflow,
        )

    async def run_rg_fed(
        self,
        args: Sequence[str],
        cwd: str,
        chunks: AsyncIterable[bytes | memoryview],
        consume: Callable[[bytes | bytearray], bool],
    ) -> CommandOutput | None:
        """Run ``rg`` with ``args`` in ``cwd`` as :meth:`run_rg` does, but with ``chunks``
        written to its stdin (closed after the last one) and its stdout handed to ``consume``
        as it arrives (optional: grep's windowed search of a file with long lines).

        ``consume`` returning true stops the search: ripgrep is killed, ``chunks`` is not read
        further and the result has ``truncated`` set. Otherwise the result has ripgrep's exit
        code. ``stdout`` is always empty (it went to ``consume``); stderr keeps its first
        :data:`RG_MAX_STDERR_BYTES`. An exception raised by ``chunks`` or ``consume`` kills
        ripgrep and propagates. Memory: what ``chunks`` and ``consume`` hold, and the pipes.

        ``None`` (nothing run) when a subclass overrides ``run_rg``, ``read_bytes`` or
        ``stat``: what the subclass changes would not apply here, so the caller uses those."""
        if self._overrides_io() or type(self).run_rg is not LocalFileOperations.run_rg:
            return None
        process = await trio.lowlevel.open_process(
            [find_rg(), *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        stderr = bytearray()
        stopped = False
        failure: list[BaseException] = []

        async def write_stdin(scope: trio.CancelScope) -> None:
            assert isinstance(process.stdin, trio.lowlevel.FdStream)
            enlarge_pipe(process.stdin.fileno())  # fewer wake-ups than the default 64 KiB
            try:
                async for chunk in chunks:
                    await process.stdin.send_all(chunk)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # ripgrep is gone: its exit code tells why
            except Exception as error:  # handed to the caller once ripgrep is stopped
                failure.append(error)
                scope.cancel()
                return
            await process.stdin.aclose()

        async def read_stdout(scope: trio.CancelScope) -> None:
            nonlocal stopped
            assert process.stdout is not None
            try:
                while chunk := await process.stdout.receive_some(_RG_READ_SIZE):
                    if consume(chunk):
                        stopped = True
                        scope.cancel()
                        return
            except Exception as error:
                failure.append(error)
                scope.cancel()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(write_stdin, nursery.cancel_scope)
                nursery.start_soon(read_stdout, nursery.cancel_scope)
                nursery.start_soon(_keep_stderr, process, stderr)
            if failure:
                raise failure[0]
            if stopped:
                await kill_process_group(process)
            exit_code = await process.wait()
        finally:
            await _reap(process)
        return CommandOutput(
            exit_code=0 if stopped else exit_code,
            stdout=b"",
            stderr=bytes(stderr),
            truncated=stopped,
        )


__all__ = [
    "RG_MAX_OUTPUT_BYTES",
    "RG_MAX_STDERR_BYTES",
    "LocalFileOperations",
    "OpenedCheck",
    "file_kind",
    "find_rg",
    "kill_process_group",
]
