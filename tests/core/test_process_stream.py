"""``pi_core._backend_kit.process_stream``: the output pipe is enlarged before it is read."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest
import trio

from pi_core._backend_kit import process_stream
from pi_core._backend_kit.process_stream import PIPE_SIZE, READ_SIZE, enlarge_pipe, stream_process


def _pipe_max_size() -> int:
    with open("/proc/sys/fs/pipe-max-size") as f:
        return int(f.read())


def _expected_size() -> int:
    # root may go above pipe-max-size; others get at most pipe-max-size
    return PIPE_SIZE if os.geteuid() == 0 else min(PIPE_SIZE, _pipe_max_size())


def test_sizes() -> None:
    assert (PIPE_SIZE, READ_SIZE) == (1024 * 1024, 1024 * 1024)


def test_enlarge_pipe_sets_one_mib() -> None:
    r, w = os.pipe()
    try:
        assert enlarge_pipe(r) == _expected_size()
        assert fcntl.fcntl(w, fcntl.F_GETPIPE_SZ) == _expected_size()
    finally:
        os.close(r)
        os.close(w)


def test_enlarge_pipe_falls_back_to_pipe_max_size(monkeypatch, tmp_path) -> None:
    limit = tmp_path / "pipe-max-size"
    limit.write_text("131072\n")
    monkeypatch.setattr(process_stream, "_PIPE_MAX_SIZE", str(limit))
    real = fcntl.fcntl
    asked: list[int] = []

    def refusing(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == fcntl.F_SETPIPE_SZ:
            asked.append(arg)
            if arg > 131072:
                raise PermissionError(1, "Operation not permitted")
        return real(fd, cmd, arg)

    monkeypatch.setattr(process_stream.fcntl, "fcntl", refusing)
    r, w = os.pipe()
    try:
        assert enlarge_pipe(r) == 131072
        assert asked == [PIPE_SIZE, 131072]
        assert real(r, fcntl.F_GETPIPE_SZ) == 131072
    finally:
        os.close(r)
        os.close(w)


def test_enlarge_pipe_leaves_the_pipe_when_refused(monkeypatch) -> None:
    monkeypatch.setattr(process_stream, "_PIPE_MAX_SIZE", "/nonexistent/pipe-max-size")
    real = fcntl.fcntl

    def refusing(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == fcntl.F_SETPIPE_SZ:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, cmd, arg)

    monkeypatch.setattr(process_stream.fcntl, "fcntl", refusing)
    r, w = os.pipe()
    try:
        before = real(r, fcntl.F_GETPIPE_SZ)
        assert enlarge_pipe(r) is None
        assert real(r, fcntl.F_GETPIPE_SZ) == before
    finally:
        os.close(r)
        os.close(w)


def test_enlarge_pipe_on_a_regular_file_is_none(tmp_path) -> None:
    with open(tmp_path / "f", "wb") as f:
        assert enlarge_pipe(f.fileno()) is None


@pytest.mark.trio
async def test_stream_process_reads_an_enlarged_pipe() -> None:
    """The pipe is enlarged before the first read; every byte arrives, in order, as bytes."""
    data = bytes(range(256)) * 12288  # 3 MiB
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(bytes(range(256)) * 12288)"],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    fd = process.stdout.fileno()
    received = bytearray()
    sizes: set[int] = set()

    def on_data(chunk: bytes) -> None:
        assert type(chunk) is bytes
        sizes.add(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
        received.extend(chunk)

    async def kill() -> None:
        process.kill()
        await process.wait()

    with trio.fail_after(20):
        code = await stream_process(process, on_data, timeout=None, kill=kill)
    assert code == 0
    assert sizes == {_expected_size()}
    assert bytes(received) == data


@pytest.mark.trio
async def test_chunks_kept_by_on_data_are_not_overwritten_by_later_reads() -> None:
    """The pipe is read into one reused buffer; each chunk handed on is its own ``bytes``, so a
    consumer that keeps chunks (without copying them) still holds what each read returned."""
    script = (
        "import sys, time\n"
        "for i in range(4):\n"
        "    sys.stdout.buffer.write(bytes([65 + i]) * 300_000); sys.stdout.flush(); time.sleep(0.05)\n"
    )
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", script], stdout=subprocess.PIPE
    )
    chunks: list[bytes] = []

    async def kill() -> None:
        process.kill()
        await process.wait()

    with trio.fail_after(20):
        code = await stream_process(process, chunks.append, timeout=None, kill=kill)
    assert code == 0
    assert len(chunks) >= 4
    assert b"".join(chunks) == b"A" * 300_000 + b"B" * 300_000 + b"C" * 300_000 + b"D" * 300_000


@pytest.mark.trio
async def test_output_written_before_the_exit_is_read_whatever_the_timers() -> None:
    """On a loaded machine the reader runs behind: at the exit the pipe may still hold up to
    its size of output, and the reader may not run for longer than ``drain_idle`` or
    ``drain_max``. That output was written before the exit: it is all read (the timers only end
    the reading of what children left running write after the exit). Here the process has
    exited before the reading starts, and both timers are 0."""
    data = bytes(range(256)) * 200  # 51,200 bytes: fits in any pipe
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(bytes(range(256)) * 200)"],
        stdout=subprocess.PIPE,
    )
    # exited, not reaped
    await trio.to_thread.run_sync(os.waitid, os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    received = bytearray()

    async def kill() -> None:
        process.kill()
        await process.wait()

    with trio.fail_after(20):
        code = await stream_process(
            process, received.extend, timeout=None, kill=kill, drain_idle=0, drain_max=0
        )
    assert code == 0
    assert bytes(received) == data
