"""The read tool's one-hop path on the local backend (``docs/explanation/performance.md`` P1/P2):
``LocalFileOperations.read_head`` (resolve, stat and read the start in one worker-thread call),
``scan_bytes`` (the rest of a large file in one call, one reused buffer) and the lane that runs
many ``read_head`` calls per thread hop. Results are exactly those of the generic path (a backend
with only ``stat``/``read_bytes``)."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files import read as read_module
from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import ReadToolOptions, read_file
from pi_core._backend_kit import inline_io, local_files
from pi_core._errors import ToolError
from pi_core.backends import CommandOutput, FileStat

OPS = LocalFileOperations()


@pytest.fixture
def threads_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file call takes a worker-thread hop (none is tried in the event loop's thread)."""
    monkeypatch.setattr(local_files, "inline_allowed", lambda: False)


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts worker-thread hops: ``hops[0]``."""
    count = [0]
    run_sync = trio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return await run_sync(fn, *args, **kwargs)

    monkeypatch.setattr(trio.to_thread, "run_sync", counting)
    return count


class PlainOps:
    """A backend with the protocol's methods only (no ``read_head``/``scan_bytes``)."""

    def __init__(self) -> None:
        self.inner = LocalFileOperations()
        self.calls: list[str] = []

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        self.calls.append("read_bytes")
        return await self.inner.read_bytes(path, offset, length)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await self.inner.write_bytes(path, data)

    async def stat(self, path: str) -> FileStat:
        self.calls.append("stat")
        return await self.inner.stat(path)

    async def realpath(self, path: str) -> str:
        return await self.inner.realpath(path)

    async def list_dir(self, path: str) -> list[str]:
        return await self.inner.list_dir(path)

    async def mkdir(self, path: str) -> None:
        await self.inner.mkdir(path)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        return await self.inner.run_rg(args, cwd)


# -- read_head ---------------------------------------------------------------------------------


async def test_read_head_small_file_whole(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\n")
    path, info, data = await OPS.read_head("a.txt", str(tmp_path), whole_limit=100, head_size=4)
    assert path == str(tmp_path / "a.txt")
    assert isinstance(info, FileStat) and (info.kind, info.size) == ("file", 8)
    assert data == b"one\ntwo\n"


async def test_read_head_large_file_gives_the_head(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"0123456789")
    _, info, data = await OPS.read_head("a.txt", str(tmp_path), whole_limit=9, head_size=4)
    assert isinstance(info, FileStat) and info.size == 10
    assert data == b"0123"


async def test_read_head_empty_file_reads_a_head(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_bytes(b"")
    _, info, data = await OPS.read_head("e.txt", str(tmp_path), whole_limit=9, head_size=4)
    assert isinstance(info, FileStat) and info.size == 0
    assert data == b""


async def test_read_head_uses_the_path_fallbacks(tmp_path: Path) -> None:
    (tmp_path / "it\u2019s.txt").write_bytes(b"curly")
    path, _, data = await OPS.read_head("it's.txt", str(tmp_path), whole_limit=99, head_size=9)
    assert path == str(tmp_path / "it\u2019s.txt")
    assert data == b"curly"


async def test_read_head_missing_file_names_the_space_normalised_path(tmp_path: Path) -> None:
    path, info, data = await OPS.read_head(
        "no\u00a0such.txt", str(tmp_path), whole_limit=9, head_size=4
    )
    assert path == str(tmp_path / "no such.txt")
    assert isinstance(info, FileNotFoundError) and info.errno == errno.ENOENT
    assert info.filename == str(tmp_path / "no such.txt")
    assert data is None


async def test_read_head_directory_and_fifo_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "p")
    _, info, data = await OPS.read_head("d", str(tmp_path), whole_limit=9, head_size=4)
    assert isinstance(info, FileStat) and info.kind == "directory" and data is None
    _, info, data = await OPS.read_head("p", str(tmp_path), whole_limit=9, head_size=4)
    assert isinstance(info, FileStat) and info.kind == "other" and data is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
async def test_read_head_unreadable_file_returns_the_read_error(tmp_path: Path) -> None:
    target = tmp_path / "secret.txt"
    target.write_bytes(b"x")
    target.chmod(0)
    _, info, data = await OPS.read_head("secret.txt", str(tmp_path), whole_limit=9, head_size=4)
    assert isinstance(info, FileStat)
    assert isinstance(data, PermissionError) and data.errno == errno.EACCES


async def test_subclass_overriding_read_bytes_is_still_used(tmp_path: Path) -> None:
    """A subclass that changes ``read_bytes`` or ``stat`` gets no fast path: what it changes
    applies to the read tool."""

    class Shouting(LocalFileOperations):
        async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
            return (await super().read_bytes(path, offset, length)).upper()

    (tmp_path / "a.txt").write_bytes(b"quiet\n" * 3)
    ops = Shouting()
    assert await ops.read_head("a.txt", str(tmp_path), whole_limit=99, head_size=9) is None
    assert await ops.scan_bytes(str(tmp_path / "a.txt"), 0, 4, lambda chunk: None) is False
    result = await read_file("a.txt", str(tmp_path), ops)
    assert result.text == "QUIET\nQUIET\nQUIET\n"
    streamed = await read_file(
        "a.txt", str(tmp_path), ops, options=ReadToolOptions(whole_file_limit=0, chunk_size=4)
    )
    assert streamed.text == "QUIET\nQUIET\nQUIET\n"


# -- scan_bytes --------------------------------------------------------------------------------


async def test_scan_bytes_feeds_the_rest_in_one_reused_buffer(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5
    (tmp_path / "b.bin").write_bytes(data)
    seen: list[bytes] = []
    buffers: set[int] = set()

    def consume(chunk: bytearray) -> None:
        seen.append(bytes(chunk))
        buffers.add(id(chunk))

    assert await OPS.scan_bytes(str(tmp_path / "b.bin"), 10, 300, consume) is True
    assert b"".join(seen) == data[10:]
    assert [len(s) for s in seen] == [300, 300, 300, 300, 70]
    assert len(buffers) <= 2  # the buffer, and one copy for the short last chunk


async def test_scan_bytes_stops_when_consume_says_so(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"x" * 1000)
    sizes: list[int] = []

    def consume(chunk: bytearray) -> bool:
        sizes.append(len(chunk))
        return len(sizes) == 2

    await OPS.scan_bytes(str(tmp_path / "b.bin"), 0, 100, consume)
    assert sizes == [100, 100]


async def test_scan_bytes_refuses_a_fifo_without_opening_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    with pytest.raises(OSError) as info:
        await OPS.scan_bytes(str(tmp_path / "p"), 0, 100, lambda chunk: None)
    assert info.value.errno == errno.EINVAL


# -- the same results as the generic path -----------------------------------------------------

_TEXT = "".join(f"line {i} {'é' if i % 7 == 0 else 'e'} {'x' * (i % 13)}\n" for i in range(5000))
_CASES = [
    (None, None),
    (1, 10),
    (2500, None),
    (4999, 5),
    (5000, None),
    (5001, None),
    (10, 2000),
    (0, 3),
]


async def _small_chunk_outcome(
    ops: Any, folder: Path, offset: int | None, limit: int | None
) -> tuple[str, Any]:
    """The read tool's text and details (or error text) for ``t.txt`` in ``folder``, read in
    4 KiB chunks (whole only up to 1,000 bytes)."""
    options = ReadToolOptions(whole_file_limit=1000, chunk_size=4096)
    try:
        result = await read_file(
            "t.txt", str(folder), ops, offset=offset, limit=limit, options=options
        )
    except ToolError as exc:
        return "error", str(exc)
    return result.text, result.details


@pytest.mark.parametrize(("offset", "limit"), _CASES)
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "cp1252"])
async def test_fast_path_equals_generic_path(
    tmp_path: Path, offset: int | None, limit: int | None, encoding: str
) -> None:
    (tmp_path / "t.txt").write_bytes(_TEXT.encode(encoding))

    async def outcome(ops: Any) -> tuple[str, Any]:
        return await _small_chunk_outcome(ops, tmp_path, offset, limit)

    plain = PlainOps()
    assert await outcome(OPS) == await outcome(plain)
    assert plain.calls.count("read_bytes") > 2  # the generic path streamed it


async def test_errors_are_the_generic_paths(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "p")
    for name in ("missing.txt", "d", "p"):
        texts = []
        for ops in (OPS, PlainOps()):
            with pytest.raises(ToolError) as info:
                await read_file(name, str(tmp_path), ops)
            texts.append(str(info.value))
        assert texts[0] == texts[1]
    assert texts == ["Cannot read p: not a regular file (a device, FIFO or socket)."] * 2


# -- the lane ------------------------------------------------------------------------------


async def test_many_concurrent_reads_share_few_thread_hops(
    tmp_path: Path, threads_only: None, hops: list[int]
) -> None:
    for i in range(200):
        (tmp_path / f"f{i}.txt").write_bytes(f"file {i}\n".encode())
    (tmp_path / "d").mkdir()
    ops = LocalFileOperations()
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await ops.read_head(f"f{i}.txt", str(tmp_path), whole_limit=99, head_size=9)

    async def missing() -> None:
        results[-1] = await ops.read_head("nope", str(tmp_path), whole_limit=99, head_size=9)

    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(one, i)
        nursery.start_soon(missing)
    assert [results[i][2] for i in range(200)] == [f"file {i}\n".encode() for i in range(200)]
    assert isinstance(results[-1][1], FileNotFoundError)
    assert 1 <= hops[0] <= 10


async def test_a_cancelled_caller_does_not_fail_the_others(
    tmp_path: Path, threads_only: None
) -> None:
    for i in range(20):
        (tmp_path / f"f{i}.txt").write_bytes(f"file {i}\n".encode())
    ops = LocalFileOperations()
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        results[i] = await ops.read_head(f"f{i}.txt", str(tmp_path), whole_limit=99, head_size=9)

    async def cancelled() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            await ops.read_head("f0.txt", str(tmp_path), whole_limit=99, head_size=9)
            await trio.lowlevel.checkpoint()
        results[-1] = scope.cancelled_caught

    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancelled)
        for i in range(20):
            nursery.start_soon(one, i)
    assert results.pop(-1) is True
    assert {i: r[2] for i, r in results.items()} == {i: f"file {i}\n".encode() for i in range(20)}


def test_path_candidates_of_ascii_paths() -> None:
    """An ASCII argument has one spelling before the read fallbacks (the short cut in
    ``path_candidates``); a non-ASCII cwd still gets its NFD candidate."""
    from pi_core._backend_kit.paths import path_candidates

    assert path_candidates("a.txt", "/w") == ["/w/a.txt"]
    assert path_candidates("shot 1.00 PM.png", "/w") == [
        "/w/shot 1.00 PM.png",
        "/w/shot 1.00\u202fPM.png",
    ]
    assert path_candidates("it's", "/w") == ["/w/it's", "/w/it\u2019s"]
    assert path_candidates("a", "/caf\u00e9") == ["/caf\u00e9/a", "/cafe\u0301/a"]
    assert path_candidates("a\u00a0b", "/w") == ["/w/a\u00a0b", "/w/a b"]
    assert path_candidates("a.txt", "/w", for_read=False) == ["/w/a.txt"]


# -- calls tried in the event loop's thread (inline_io) -----------------------------------------

_LOCAL_MOUNTS = (
    "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
    "30 28 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64\n"
    "41 28 0:36 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw,lowerdir=/a\n"
)


@pytest.mark.parametrize(
    ("extra", "local"),
    [
        ("", True),
        ("50 28 0:50 / /mnt/share rw,relatime - nfs4 srv:/export rw,vers=4.2\n", False),
        ("51 28 0:51 / /home/u/remote rw - fuse.sshfs u@h:/ rw,user_id=0\n", False),
        ("52 28 0:52 / /net rw - autofs /etc/auto.net rw,fd=7\n", False),
        ("53 28 0:53 / /mnt/win rw - cifs //h/s rw,vers=3.0\n", False),
        ("54 28 0:54 / /mnt/odd\\040name rw - weirdfs none rw\n", False),
    ],
)
def test_all_local_needs_every_mount_type_known_local(extra: str, local: bool) -> None:
    assert inline_io.all_local(_LOCAL_MOUNTS + extra) is local


def test_mount_types_reads_the_field_after_the_separator() -> None:
    assert inline_io.mount_types(_LOCAL_MOUNTS) == ["proc", "ext4", "tmpfs", "overlay"]
    assert inline_io.all_local("") is False  # no table read: no inline call


def _mount_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> Path:
    table = tmp_path / "mountinfo"
    table.write_text(text)
    monkeypatch.setattr(inline_io, "MOUNTINFO", str(table))
    monkeypatch.setattr(inline_io, "_checked_at", float("-inf"))
    return table


def test_the_mount_table_is_read_again_after_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if getattr(os, "RWF_NOWAIT", None) is None:
        pytest.skip("no RWF_NOWAIT on this platform: every file call takes a worker thread")
    now = [1000.0]
    monkeypatch.setattr(inline_io.time, "monotonic", lambda: now[0])
    table = _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS)
    assert inline_io.inline_allowed() is True
    table.write_text(_LOCAL_MOUNTS + "50 28 0:50 / /mnt rw - nfs srv:/e rw\n")
    now[0] += 0.5
    assert inline_io.inline_allowed() is True  # read at most once a second
    now[0] += 0.5
    assert inline_io.inline_allowed() is False
    table.unlink()
    now[0] += 1.0
    assert inline_io.inline_allowed() is False  # an unreadable table: worker threads


def _nowait_supported(path: Path) -> bool:
    """Whether the file system of ``path`` (cached) answers a read without waiting."""
    if getattr(os, "RWF_NOWAIT", None) is None:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        inline_io.read_nowait(fd, None, 0)
    except inline_io.WouldBlock:
        return False
    finally:
        os.close(fd)
    return True


@pytest.mark.parametrize("size", [0, 10, 65535, 65536, 65537, 300_000])
@pytest.mark.parametrize("length", [None, 4, 65536, 70_000])
def test_read_nowait_gives_the_bytes_a_plain_read_gives(
    tmp_path: Path, size: int, length: int | None
) -> None:
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "f").write_bytes(data)
    if not _nowait_supported(tmp_path / "f"):
        pytest.skip("the temporary folder's file system cannot read without waiting (RWF_NOWAIT)")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        got = inline_io.read_nowait(fd, length, size)
    finally:
        os.close(fd)
    assert got == (data if length is None else data[:length])


async def test_a_cached_file_is_read_without_a_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hops: list[int]
) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\n")
    if not _nowait_supported(tmp_path / "a.txt"):
        pytest.skip("the temporary folder's file system cannot read without waiting (RWF_NOWAIT)")
    _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS)
    real = str((tmp_path / "a.txt").resolve())
    ops = LocalFileOperations()
    got = await ops.read_head("a.txt", str(tmp_path), whole_limit=100, head_size=4)
    missing = await ops.read_head("nope", str(tmp_path), whole_limit=100, head_size=4)
    resolved = await ops.resolve_for_mutation("a.txt", str(tmp_path))
    assert hops[0] == 0
    assert got[2] == b"one\ntwo\n" and isinstance(missing[1], FileNotFoundError)
    assert resolved == (str(tmp_path / "a.txt"), real)


async def test_a_network_mount_sends_every_read_to_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hops: list[int]
) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\n")
    _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS + "50 28 0:50 / /mnt rw - nfs4 s:/e rw\n")
    ops = LocalFileOperations()
    assert (await ops.read_head("a.txt", str(tmp_path), whole_limit=100, head_size=4))[2] == (
        b"one\n"
    )
    await ops.resolve_for_mutation("a.txt", str(tmp_path))
    assert hops[0] == 2


def _drop_from_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_read_nowait_of_data_not_in_the_page_cache_would_block(tmp_path: Path) -> None:
    (tmp_path / "cold.txt").write_bytes(b"x" * 100_000)
    if not _nowait_supported(tmp_path / "cold.txt"):
        pytest.skip("the temporary folder's file system cannot read without waiting (RWF_NOWAIT)")
    _drop_from_page_cache(tmp_path / "cold.txt")
    fd = os.open(tmp_path / "cold.txt", os.O_RDONLY)
    try:
        with pytest.raises(inline_io.WouldBlock):
            inline_io.read_nowait(fd, None, 100_000)
    finally:
        os.close(fd)


async def test_data_not_in_the_page_cache_is_read_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hops: list[int]
) -> None:
    data = b"x" * 100_000
    (tmp_path / "cold.txt").write_bytes(data)
    if not _nowait_supported(tmp_path / "cold.txt"):
        pytest.skip("the temporary folder's file system cannot read without waiting (RWF_NOWAIT)")
    _drop_from_page_cache(tmp_path / "cold.txt")
    _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS)
    got = await LocalFileOperations().read_head(
        "cold.txt", str(tmp_path), whole_limit=200_000, head_size=4
    )
    assert got[2] == data
    assert hops[0] == 1


async def test_a_policy_check_runs_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``check_opened`` may block (the sandbox's may walk the workspace): a read with one is
    never tried in the event loop's thread."""
    import threading

    (tmp_path / "a.txt").write_bytes(b"one\n")
    _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS)
    threads: list[threading.Thread] = []
    ops = LocalFileOperations(
        check_opened=lambda path, fd, st: threads.append(threading.current_thread())
    )
    got = await ops.read_head("a.txt", str(tmp_path), whole_limit=100, head_size=4)
    assert got[2] == b"one\n"
    assert len(threads) == 1 and threads[0] is not threading.main_thread()


async def test_a_fifo_swapped_in_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO is refused by its ``stat`` and opened, if at all, without waiting for a writer."""
    os.mkfifo(tmp_path / "p")
    _mount_table(monkeypatch, tmp_path, _LOCAL_MOUNTS)
    with trio.fail_after(5):
        _, info, data = await LocalFileOperations().read_head(
            "p", str(tmp_path), whole_limit=100, head_size=4
        )
    assert isinstance(info, FileStat) and info.kind == "other" and data is None


# -- the rest of a large file, counted (count_newlines) ----------------------------------------


@pytest.mark.parametrize("use_wc", [True, False])
@pytest.mark.parametrize(
    ("content", "offset"),
    [
        (b"a\nbb\nccc\n", 0),
        (b"a\nbb\nccc\n", 2),
        (b"a\nbb\nccc", 5),
        (b"a\nbb\nccc", 8),  # the last byte only
        (b"a\nbb\nccc\n", 9),  # at the end: nothing follows
        (b"a\nbb\n", 50),  # past the end
        (b"", 0),
        (b"\n" * 300_000 + b"tail", 17),
        (b"x" * 200_000, 1),
    ],
)
async def test_count_newlines_counts_the_rest_from_the_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, offset: int, use_wc: bool
) -> None:
    (tmp_path / "f").write_bytes(content)
    if use_wc:
        if local_files._wc() is None:
            pytest.skip("no wc on PATH")
        monkeypatch.setattr(local_files, "WC_MIN_BYTES", 0)
    else:
        monkeypatch.setattr(local_files, "_wc", lambda: None)
    rest = content[offset:]
    got = await LocalFileOperations().count_newlines(str(tmp_path / "f"), offset, 4096)
    assert got == (len(rest), rest.count(b"\n"), rest[-1] if rest else None)


async def test_count_newlines_counts_itself_when_wc_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_bytes(b"one\ntwo\nthree")
    monkeypatch.setattr(local_files, "WC_MIN_BYTES", 0)
    for broken in ("/bin/false", str(tmp_path / "missing-wc"), "/bin/echo"):
        monkeypatch.setattr(local_files, "_wc", lambda broken=broken: broken)
        got = await LocalFileOperations().count_newlines(str(tmp_path / "f"), 4)
        assert got == (9, 1, ord("e")), broken


async def test_count_newlines_checks_what_it_opened_and_refuses_special_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "f").write_bytes(b"a\nb\n")
    os.mkfifo(tmp_path / "p")
    seen: list[str] = []

    def refuse(path: str, fd: int, st: os.stat_result) -> None:
        seen.append(path)
        raise PermissionError(errno.EACCES, "denied", path)

    with pytest.raises(PermissionError):
        await LocalFileOperations(check_opened=refuse).count_newlines(str(tmp_path / "f"), 0)
    assert seen == [str(tmp_path / "f")]
    with pytest.raises(OSError) as special:
        await OPS.count_newlines(str(tmp_path / "p"), 0)
    assert special.value.errno == errno.EINVAL
    with pytest.raises(IsADirectoryError):
        await OPS.count_newlines(str(tmp_path), 0)


class CountingOps(LocalFileOperations):
    """The local backend, its ``count_newlines`` calls recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.counted: list[int] = []

    async def count_newlines(
        self, path: str, offset: int, chunk_size: int = 1 << 20, **options: Any
    ) -> tuple[int, int, int | None] | None:
        self.counted.append(offset)
        return await super().count_newlines(path, offset, chunk_size, **options)


_BIG_CASES = [
    (None, None),
    (3, None),
    (4000, None),
    (3999, None),
    (1, 5),
    (10, 3000),
    (2900, 50),
    (4100, 10),
    (0, 0),
]


@pytest.mark.parametrize(("offset", "limit"), _BIG_CASES)
@pytest.mark.parametrize("ending", [b"\n", b"", b"\n\n"])
async def test_a_counted_rest_gives_the_generic_paths_result(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    offset: int | None,
    limit: int | None,
    ending: bytes,
) -> None:
    """A file whose rest is counted by the backend reads as the generic path (every chunk fed
    to the scanner) reads it, with each selection, limit and ending: the totals, the
    "more lines" and "Showing lines" notices."""
    lines = [f"{i:05d} " + "w" * (i % 90) for i in range(4000)]
    (tmp_path / "t.txt").write_bytes("\n".join(lines).encode() + ending)
    monkeypatch.setattr(read_module, "COUNT_REST_MIN_BYTES", 1)
    monkeypatch.setattr(local_files, "WC_MIN_BYTES", 0)
    counting = CountingOps()
    assert await _small_chunk_outcome(counting, tmp_path, offset, limit) == (
        await _small_chunk_outcome(PlainOps(), tmp_path, offset, limit)
    )
    if offset is None or offset < 3900:
        assert counting.counted  # the rest was counted, not fed


async def test_a_large_file_at_the_real_thresholds_reads_as_the_generic_path(
    tmp_path: Path,
) -> None:
    """24 MiB of lines, no threshold changed: the rest past the selection is counted (by
    ``wc`` where there is one) and the result is the generic path's."""
    line = b"%07d the quick brown fox jumps over the lazy dog\n"
    (tmp_path / "big.txt").write_bytes(b"".join(line % i for i in range(24 * 2**20 // 56)))
    counting = CountingOps()
    for offset, limit in ((None, None), (100_000, None), (5, 10)):
        fast = await read_file("big.txt", str(tmp_path), counting, offset=offset, limit=limit)
        plain = await read_file("big.txt", str(tmp_path), PlainOps(), offset=offset, limit=limit)
        assert fast.content == plain.content and fast.details == plain.details
    assert len(counting.counted) == 3


def _kmsg_readable() -> bool:
    try:
        os.close(os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _kmsg_readable(), reason="/proc/kmsg cannot be opened here (root only)")
async def test_a_kernel_file_that_waits_for_news_fails_instead_of_hanging() -> None:
    """``/proc/kmsg`` is a "regular" file of size 0 whose read waits for the next kernel
    message: the read tool gives EAGAIN at once (it used to hold a worker thread, and the
    call, until a message came; Ctrl-C could not end it)."""
    with trio.fail_after(10):
        try:
            await read_file("/proc/kmsg", "/", LocalFileOperations())
        except ToolError as exc:  # no message waiting (a message would be its text)
            assert str(exc) == "EAGAIN: resource temporarily unavailable, read '/proc/kmsg'"


# -- the programs pi starts on its own behalf ----------------------------------------------------


def _fake_program(folder: Path, name: str, output: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{output}'\ntouch '{folder}/ran'\n")
    path.chmod(0o755)
    return path


def test_find_program_skips_empty_and_relative_path_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_program(tmp_path / "work", "wc", "7 99")
    _fake_program(tmp_path / "work" / "bin", "wc", "7 99")
    monkeypatch.chdir(tmp_path / "work")
    real = local_files.find_program("wc")
    for path in (f":{os.environ['PATH']}", f".:{os.environ['PATH']}", f"bin:{os.environ['PATH']}"):
        monkeypatch.setenv("PATH", path)
        assert local_files.find_program("wc") == real
        assert real is None or os.path.isabs(real)
    monkeypatch.setenv("PATH", f"{tmp_path / 'work'}:{os.environ['PATH']}")
    assert local_files.find_program("wc") == str(tmp_path / "work" / "wc")  # absolute: used
    monkeypatch.setenv("PATH", "")
    assert local_files.find_program("wc") is None


async def test_a_wc_that_counts_other_bytes_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``wc`` whose byte count is not the rest's size (a stand-in, or the file changed) is
    ignored: the rest is counted by pi itself."""
    fake = _fake_program(tmp_path / "bin", "wc", "7 99999999")
    (tmp_path / "f").write_bytes(b"x\n" * 1000)
    monkeypatch.setattr(local_files, "WC_MIN_BYTES", 0)
    monkeypatch.setattr(local_files, "_wc", lambda: str(fake))
    assert await OPS.count_newlines(str(tmp_path / "f"), 10) == (1990, 995, ord("\n"))
    assert (tmp_path / "bin" / "ran").exists()  # it ran, and was not believed


# -- a file replaced while it is read ----------------------------------------------------------


class SwappingOps(LocalFileOperations):
    """The local backend that renames ``replacement`` over the file after its start was read
    (the first ``swaps`` reads), as an editor's save or ``cp x t && mv t file`` does."""

    def __init__(self, replacement: Path, target: Path, swaps: int) -> None:
        super().__init__()
        self.replacement, self.target, self.swaps = replacement, target, swaps
        self.heads = 0

    async def read_head(self, path: str, cwd: str, **kwargs: Any) -> Any:
        got = await super().read_head(path, cwd, **kwargs)
        self.heads += 1
        if self.swaps > 0:
            self.swaps -= 1
            data = self.replacement.read_bytes()
            staged = self.target.with_name("staged")
            staged.write_bytes(data)
            staged.replace(self.target)
        return got


def _lines(count: int, word: str) -> bytes:
    return b"".join(b"%07d %s\n" % (i, word.encode()) for i in range(count))


async def test_a_file_replaced_between_opens_is_read_again_whole(tmp_path: Path) -> None:
    """The start of one file and the line count of another are never mixed: the read starts
    again and gives the new file's result, as a read of it alone does."""
    old, new = _lines(50_000, "old"), _lines(80_000, "new")
    (tmp_path / "new.bin").write_bytes(new)
    (tmp_path / "f.txt").write_bytes(old)
    options = ReadToolOptions(whole_file_limit=1000, chunk_size=4096)
    ops = SwappingOps(tmp_path / "new.bin", tmp_path / "f.txt", swaps=1)
    got = await read_file("f.txt", str(tmp_path), ops, offset=2, limit=3, options=options)
    alone = await read_file("f.txt", str(tmp_path), OPS, offset=2, limit=3, options=options)
    assert got.content == alone.content
    assert got.content[0].text.endswith("[79997 more lines in file. Use offset=5 to continue.]")  # type: ignore[union-attr]
    assert ops.heads == 2


async def test_a_file_replaced_at_every_read_gives_estale(tmp_path: Path) -> None:
    (tmp_path / "new.bin").write_bytes(_lines(80_000, "new"))
    (tmp_path / "f.txt").write_bytes(_lines(50_000, "old"))
    options = ReadToolOptions(whole_file_limit=1000, chunk_size=4096)
    ops = SwappingOps(tmp_path / "new.bin", tmp_path / "f.txt", swaps=99)
    with pytest.raises(ToolError) as caught:
        await read_file("f.txt", str(tmp_path), ops, offset=2, limit=3, options=options)
    assert str(caught.value) == (f"ESTALE: stale file handle, read '{tmp_path / 'f.txt'}'")
    assert ops.heads == 3
