"""Streaming one local process's output pipe, for every :class:`~pi_core._backend_kit.operations.BashOperations`
backend that runs a local process (the local bash backend; the sandbox's ``bwrap`` and
``podman exec`` clients).

:func:`stream_process` reads the process's merged output pipe, hands each chunk to ``on_data``
as raw bytes, waits for the exit, applies the timeout, and calls the backend's ``kill`` (shielded)
on timeout, cancellation or an exception from ``on_data``. :func:`unwrap_exception_group` turns
what a strict trio nursery wrapped back into the one exception inside.

A Linux pipe holds 64 KiB, so a fast command would cost one wake-up (and one ``on_data``) per
64 KiB; :func:`enlarge_pipe` asks for a 1 MiB pipe first (at most
``/proc/sys/fs/pipe-max-size``; the default stays when the kernel refuses), so that a reader
behind a fast writer takes up to :data:`READ_SIZE` per wake-up.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import termios
from collections.abc import Awaitable, Callable, Iterator

import trio

from pi_core._errors import CommandTimeout

READ_SIZE = 1024 * 1024
"""Bytes asked for per read of the output pipe."""

PIPE_SIZE = 1024 * 1024
"""Pipe buffer asked for by :func:`enlarge_pipe`."""

_PIPE_MAX_SIZE = "/proc/sys/fs/pipe-max-size"


def enlarge_pipe(fd: int, size: int = PIPE_SIZE) -> int | None:
    """Ask for a pipe buffer of ``size`` bytes on pipe ``fd``; when the kernel refuses (an
    unprivileged process above ``/proc/sys/fs/pipe-max-size`` or its user's pipe quota), ask for
    ``pipe-max-size``; when that is refused too, leave the pipe as it is. Returns the new
    buffer size, or ``None`` when it was not changed (``fd`` not a pipe, no such ``fcntl``)."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return None
    try:
        return fcntl.fcntl(fd, set_size, size)
    except OSError:
        pass
    try:
        with open(_PIPE_MAX_SIZE, "rb") as f:
            max_size = int(f.read())
    except (OSError, ValueError):
        return None
    if max_size >= size:
        return None
    try:
        return fcntl.fcntl(fd, set_size, max_size)
    except OSError:
        return None


def pending_bytes(fd: int) -> int:
    """The bytes waiting to be read in pipe ``fd`` (``FIONREAD``; 0 when it cannot be told)."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return 0


def _chunk_reader(stream: trio.abc.ReceiveStream) -> Callable[[], Awaitable[bytes | bytearray]]:
    """What reads the next chunk of ``stream``: for a pipe (a stream with ``fileno``), a ``readv``
    into one reused buffer, the chunk copied out at its size (``receive_some`` allocates a new
    ``READ_SIZE`` buffer for every read and shrinks it: at a GiB of output that is a quarter of a
    million fresh pages to fault in, measured at 0.5-0.8 s of system time per GiB); otherwise
    ``receive_some``."""
    fileno = getattr(stream, "fileno", None)
    if fileno is None:
        return lambda: stream.receive_some(READ_SIZE)
    fd = fileno()
    buffer = bytearray(READ_SIZE)
    view = memoryview(buffer)

    async def receive() -> bytes:
        await trio.lowlevel.checkpoint()
        while True:
            try:
                count = os.readv(fd, [buffer])
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    raise trio.ClosedResourceError("file was already closed") from None
                raise trio.BrokenResourceError from exc
            else:
                return bytes(view[:count])

    return receive


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@contextlib.contextmanager
def unwrap_exception_group() -> Iterator[None]:
    """Re-raise what a strict trio nursery wrapped: a group holding only ``trio.Cancelled``
    becomes one ``Cancelled``; a group holding one other exception (plus any ``Cancelled``)
    becomes that exception; anything else stays a group. So callers can write
    ``except CommandTimeout`` and ``except trio.Cancelled``."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        others = [exc for exc in leaves if not isinstance(exc, trio.Cancelled)]
        if len(others) > 1 or not leaves:
            raise
        exc = others[0] if others else leaves[0]
        context = exc.__context__
        try:
            raise exc  # the group was only a wrapper: keep exc's own context
        finally:
            exc.__context__ = context


async def stream_process(
    process: trio.Process,
    on_data: Callable[[bytes], None],
    *,
    timeout: float | None,
    kill: Callable[[], Awaitable[None]],
    drain_idle: float = 0.1,
    drain_max: float = 1.0,
    settle: float | None = 2.0,
    drain_after_timeout: bool = False,
) -> int | None:
    """Stream ``process.stdout`` to ``on_data`` until the process exits; return its exit code
    (``128 + N`` when it died of signal ``N``). A pipe is enlarged first (:func:`enlarge_pipe`).

    After the exit, everything the process's tree had written when it exited (what the pipe held
    then: at most its size) is read whatever the time it takes (on a loaded machine, the reader
    may be seconds behind); output written after the exit (a child left running with the pipe)
    is still read until end of file, ``drain_idle`` seconds without data or ``drain_max``
    seconds after the exit. ``kill`` (awaited shielded) must end the process and everything it
    started; it runs on timeout (then :class:`~pi_core._errors.CommandTimeout` is raised),
    cancellation (``trio.Cancelled`` re-raised) and an exception from ``on_data`` (re-raised).
    After ``kill`` the pipe is read (and dropped) up to ``settle`` seconds until end of file, so
    the killed processes are gone when this returns (``settle=None``: not read; the caller's
    ``kill`` waits for them itself). ``drain_after_timeout``: after a timeout's ``kill``, still
    hand output to ``on_data`` as after a normal exit (what the killed tree printed while dying).
    """
    stream = process.stdout
    assert stream is not None
    fileno = getattr(stream, "fileno", None)
    fd = fileno() if fileno is not None else None
    if fd is not None:
        enlarge_pipe(fd)
    receive = _chunk_reader(stream)
    eof = trio.Event()
    caught_up = trio.Event()  # end of file, or every byte written before the exit was read
    received = 0
    owed: int | None = None  # bytes written before the exit (known once it exited)
    last_data = trio.current_time()
    timed_out = False
    killed = False

    async def pump() -> None:
        nonlocal last_data, received
        while True:
            chunk = await receive()
            if not chunk:
                eof.set()
                caught_up.set()
                return
            received += len(chunk)
            on_data(bytes(chunk))  # the same object when it is bytes already
            last_data = trio.current_time()  # after on_data: its own time is not idleness
            if owed is not None and received >= owed:
                caught_up.set()

    async def do_kill() -> None:
        nonlocal killed
        killed = True
        with trio.CancelScope(shield=True):
            await kill()

    try:
        with unwrap_exception_group():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump)
                if timeout is not None and timeout > 0:
                    with trio.move_on_after(timeout) as scope:
                        await process.wait()
                    if scope.cancelled_caught and process.returncode is None:
                        timed_out = True
                        await do_kill()
                else:
                    await process.wait()
                exited_at = trio.current_time()
                if drain_after_timeout or not timed_out:
                    # What the pipe holds now was written before the exit: no timer cuts it.
                    owed = received + (pending_bytes(fd) if fd is not None else 0)
                    if received >= owed:
                        caught_up.set()
                    await caught_up.wait()
                while not eof.is_set() and (drain_after_timeout or not timed_out):
                    deadline = min(last_data + drain_idle, exited_at + drain_max)
                    if trio.current_time() >= deadline:
                        break
                    with trio.move_on_at(deadline):
                        await eof.wait()
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                await do_kill()
            if killed and settle is not None and not eof.is_set():
                with trio.move_on_after(settle), contextlib.suppress(trio.ClosedResourceError):
                    while await stream.receive_some(READ_SIZE):
                        pass
            await stream.aclose()

    if timed_out:
        raise CommandTimeout(timeout if timeout is not None else 0)
    code = process.returncode
    if code is None:
        return None
    return 128 - code if code < 0 else code


__all__ = [
    "PIPE_SIZE",
    "READ_SIZE",
    "enlarge_pipe",
    "pending_bytes",
    "stream_process",
    "unwrap_exception_group",
]
