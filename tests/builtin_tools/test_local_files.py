"""LocalFileOperations: the FileOperations protocol on the local file system."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from pi_builtin_tools.files.local import LocalFileOperations, find_rg
from pi_core._backend_kit.operations import CommandOutput, FileOperations, FileStat

OPS = LocalFileOperations()


def test_implements_protocol() -> None:
    assert isinstance(OPS, FileOperations)


async def test_read_bytes_ranges(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    target.write_bytes(b"0123456789")
    assert await OPS.read_bytes(str(target)) == b"0123456789"
    assert await OPS.read_bytes(str(target), 3) == b"3456789"
    assert await OPS.read_bytes(str(target), 3, 4) == b"3456"
    assert await OPS.read_bytes(str(target), 8, 100) == b"89"
    assert await OPS.read_bytes(str(target), 20, 5) == b""


def _sparse(target: Path) -> None:
    with open(target, "wb") as handle:
        handle.truncate(1 << 30)
        handle.seek((1 << 30) - 4)
        handle.write(b"tail")


async def test_read_range_of_huge_sparse_file(tmp_path: Path) -> None:
    target = tmp_path / "sparse.bin"
    _sparse(target)
    assert await OPS.read_bytes(str(target), (1 << 30) - 4, 4) == b"tail"


async def test_read_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await OPS.read_bytes(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError):
        await OPS.read_bytes(str(tmp_path))


async def test_write_bytes_atomic_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "x.sh"
    target.write_bytes(b"old")
    target.chmod(0o700)
    await OPS.write_bytes(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    with pytest.raises(IsADirectoryError):
        await OPS.write_bytes(str(tmp_path), b"x")


async def test_stat(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"abc")
    target.chmod(0o640)
    info = await OPS.stat(str(target))
    assert (info.kind, info.size, info.mode) == ("file", 3, 0o640)
    assert info.mtime == target.stat().st_mtime
    assert (await OPS.stat(str(tmp_path))).kind == "directory"
    os.symlink(target, tmp_path / "link")
    assert (await OPS.stat(str(tmp_path / "link"))) == FileStat("file", 3, 0o640, info.mtime)
    assert (await OPS.stat("/dev/null")).kind == "other"
    with pytest.raises(FileNotFoundError):
        await OPS.stat(str(tmp_path / "missing"))


async def test_realpath_list_mkdir(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert await OPS.realpath(str(tmp_path / "link" / "new.txt")) == str(
        tmp_path / "real" / "new.txt"
    )
    await OPS.mkdir(str(tmp_path / "a" / "b" / "c"))
    await OPS.mkdir(str(tmp_path / "a" / "b"))
    assert sorted(await OPS.list_dir(str(tmp_path))) == ["a", "link", "real"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        await OPS.mkdir(str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError):
        await OPS.list_dir(str(tmp_path / "file"))


def test_rg_is_the_one_on_path() -> None:
    """ripgrep is the one on PATH (here the PyPI wheel's: its scripts folder comes first)."""
    import shutil

    assert find_rg() == shutil.which("rg")


async def test_run_rg(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    out = await OPS.run_rg(["--line-number", "world", "a.txt"], str(tmp_path))
    assert out == CommandOutput(exit_code=0, stdout=b"2:world\n", stderr=b"")
    none = await OPS.run_rg(["nothing-here", "a.txt"], str(tmp_path))
    assert (none.exit_code, none.stdout) == (1, b"")
    bad = await OPS.run_rg(["(", "a.txt"], str(tmp_path))
    assert bad.exit_code == 2 and b"regex parse error" in bad.stderr


async def test_run_rg_stdin_closed(tmp_path: Path) -> None:
    """rg without a path never waits on an inherited stdin: it ends at once."""
    with trio.fail_after(10):
        out = await OPS.run_rg(["x"], str(tmp_path))
    assert out.stdout == b"" and out.exit_code in (1, 2)


async def test_io_does_not_block_the_loop(tmp_path: Path) -> None:
    """Reads run in worker threads: another task keeps ticking meanwhile."""
    target = tmp_path / "big"
    target.write_bytes(b"x" * (32 << 20))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        data = await OPS.read_bytes(str(target))
        nursery.cancel_scope.cancel()
    assert len(data) == 32 << 20
    assert ticks > 1


def test_plugin_provides_local_backend_and_file_tools(tmp_path: Path) -> None:
    from pi_builtin_tools import plugin
    from pi_core._plugins.contexts import BackendContext, RegisterToolsContext

    assert isinstance(
        plugin.pi_file_operations(BackendContext(cwd=str(tmp_path))), LocalFileOperations
    )
    registered: list[object] = []
    plugin.pi_register_tools(
        registered.append, RegisterToolsContext(cwd=str(tmp_path), file_operations=OPS)
    )
    names = [getattr(tool, "name", None) for tool in registered]
    assert {"read", "write"} <= set(names)
