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

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import ReadToolOptions, read_file
from pi_core._errors import ToolError
from pi_core.backends import CommandOutput, FileStat

OPS = LocalFileOperations()


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


@pytest.mark.parametrize(("offset", "limit"), _CASES)
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "cp1252"])
async def test_fast_path_equals_generic_path(
    tmp_path: Path, offset: int | None, limit: int | None, encoding: str
) -> None:
    (tmp_path / "t.txt").write_bytes(_TEXT.encode(encoding))
    options = ReadToolOptions(whole_file_limit=1000, chunk_size=4096)

    async def outcome(ops: Any) -> tuple[str, Any]:
        try:
            result = await read_file(
                "t.txt", str(tmp_path), ops, offset=offset, limit=limit, options=options
            )
        except ToolError as exc:
            return "error", str(exc)
        return result.text, result.details

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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(200):
        (tmp_path / f"f{i}.txt").write_bytes(f"file {i}\n".encode())
    (tmp_path / "d").mkdir()
    hops = 0
    run_sync = trio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal hops
        hops += 1
        return await run_sync(fn, *args, **kwargs)

    monkeypatch.setattr(trio.to_thread, "run_sync", counting)
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
    assert hops <= 10


async def test_a_cancelled_caller_does_not_fail_the_others(tmp_path: Path) -> None:
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
