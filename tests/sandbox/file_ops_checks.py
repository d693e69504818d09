"""FileOperations checks for the sandbox backends that run file tools on their own side (bwrap,
container), used until ``pi_core.file_contract`` exists. Subclass :class:`FileOpsChecks` (name
starting with ``Test``) and provide the ``file_ops`` fixture (the backend) and ``file_root`` (an
empty writable directory as the backend sees it). Every check goes through the backend only."""

from __future__ import annotations

import errno
import stat
import time

import pytest

from pi_core.operations import BashOperations, FileOperations


class FileOpsChecks:
    @pytest.fixture
    def file_ops(self) -> FileOperations:
        raise NotImplementedError("override the file_ops fixture")

    @pytest.fixture
    def file_root(self) -> str:
        raise NotImplementedError("override the file_root fixture")

    async def test_write_then_read_ranges(self, file_ops: FileOperations, file_root: str) -> None:
        path = f"{file_root}/a.txt"
        data = b"hello\x00\xff world\n" * 3
        await file_ops.write_bytes(path, data)
        assert await file_ops.read_bytes(path) == data
        assert await file_ops.read_bytes(path, 6) == data[6:]
        assert await file_ops.read_bytes(path, 2, 5) == data[2:7]
        assert await file_ops.read_bytes(path, 0, 0) == b""
        assert await file_ops.read_bytes(path, len(data) + 10) == b""

    async def test_large_ranged_read(self, file_ops: FileOperations, file_root: str) -> None:
        path = f"{file_root}/big.bin"
        data = bytes(range(256)) * 4096 * 3  # 3 MiB
        await file_ops.write_bytes(path, data)
        assert await file_ops.read_bytes(path, 100_001, 200_000) == data[100_001:300_001]
        assert await file_ops.read_bytes(path) == data

    async def test_write_replaces_and_keeps_mode(
        self, file_ops: FileOperations, file_root: str
    ) -> None:
        path = f"{file_root}/script.sh"
        await file_ops.write_bytes(path, b"old contents that are longer\n")
        created = await file_ops.stat(path)
        assert (created.kind, created.mode) == ("file", 0o644)
        await file_ops.write_bytes(path, b"new\n")
        assert await file_ops.read_bytes(path) == b"new\n"
        assert sorted(await file_ops.list_dir(file_root)) == ["script.sh"]  # no temporary left

    async def test_write_follows_a_symlink(self, file_ops: FileOperations, file_root: str) -> None:
        await file_ops.write_bytes(f"{file_root}/target.txt", b"old")
        result = await self.shell(file_ops, f"ln -s target.txt {file_root}/link.txt")
        assert result == 0
        await file_ops.write_bytes(f"{file_root}/link.txt", b"via link")
        assert await file_ops.read_bytes(f"{file_root}/target.txt") == b"via link"
        assert await file_ops.realpath(f"{file_root}/link.txt") == f"{file_root}/target.txt"

    async def shell(self, file_ops: FileOperations, command: str) -> int | None:
        """Run ``command`` through the backend's bash (the backends are BashOperations too)."""
        assert isinstance(file_ops, BashOperations)
        return await file_ops.exec(command, "/", on_data=lambda chunk: None)

    async def test_stat(self, file_ops: FileOperations, file_root: str) -> None:
        before = time.time()
        await file_ops.write_bytes(f"{file_root}/f", b"12345")
        st = await file_ops.stat(f"{file_root}/f")
        assert (st.kind, st.size) == ("file", 5)
        assert before - 5 < st.mtime < time.time() + 5
        directory = await file_ops.stat(file_root)
        assert directory.kind == "directory"
        assert stat.S_IMODE(directory.mode) == directory.mode

    async def test_mkdir_and_list(self, file_ops: FileOperations, file_root: str) -> None:
        await file_ops.mkdir(f"{file_root}/x/y/z")
        await file_ops.mkdir(f"{file_root}/x/y")
        await file_ops.write_bytes(f"{file_root}/x/.hidden", b"")
        await file_ops.write_bytes(f"{file_root}/x/name with space\nand newline", b"")
        assert sorted(await file_ops.list_dir(f"{file_root}/x")) == [
            ".hidden",
            "name with space\nand newline",
            "y",
        ]
        assert await file_ops.list_dir(f"{file_root}/x/y/z") == []

    async def test_errors_carry_errno(self, file_ops: FileOperations, file_root: str) -> None:
        missing = f"{file_root}/missing"
        await file_ops.write_bytes(f"{file_root}/file", b"x")
        cases = [
            (lambda: file_ops.read_bytes(missing), FileNotFoundError, errno.ENOENT, missing),
            (lambda: file_ops.read_bytes(file_root), IsADirectoryError, errno.EISDIR, file_root),
            (lambda: file_ops.stat(missing), FileNotFoundError, errno.ENOENT, missing),
            (lambda: file_ops.list_dir(missing), FileNotFoundError, errno.ENOENT, missing),
            (
                lambda: file_ops.list_dir(f"{file_root}/file"),
                NotADirectoryError,
                errno.ENOTDIR,
                f"{file_root}/file",
            ),
            (
                lambda: file_ops.write_bytes(file_root, b"x"),
                IsADirectoryError,
                errno.EISDIR,
                file_root,
            ),
            (
                lambda: file_ops.write_bytes(f"{missing}/new", b"x"),
                FileNotFoundError,
                errno.ENOENT,
                f"{missing}/new",
            ),
            (
                lambda: file_ops.mkdir(f"{file_root}/file"),
                FileExistsError,
                errno.EEXIST,
                f"{file_root}/file",
            ),
        ]
        for call, kind, code, path in cases:
            with pytest.raises(kind) as info:
                await call()
            assert (info.value.errno, info.value.filename) == (code, path)

    async def test_realpath_keeps_missing_components(
        self, file_ops: FileOperations, file_root: str
    ) -> None:
        await file_ops.mkdir(f"{file_root}/real")
        await self.shell(file_ops, f"ln -s real {file_root}/alias")
        assert await file_ops.realpath(f"{file_root}/alias/not/yet") == f"{file_root}/real/not/yet"

    async def test_run_rg(self, file_ops: FileOperations, file_root: str) -> None:
        await file_ops.write_bytes(f"{file_root}/one.py", b"alpha\nneedle here\n")
        await file_ops.write_bytes(f"{file_root}/two.txt", b"nothing\n")
        out = await file_ops.run_rg(["--line-number", "--no-heading", "needle", "."], file_root)
        assert (out.exit_code, out.stdout, out.stderr) == (0, b"./one.py:2:needle here\n", b"")
        none = await file_ops.run_rg(["absent-word"], file_root)
        assert (none.exit_code, none.stdout) == (1, b"")
        files = await file_ops.run_rg(["--files", "--sort", "path"], file_root)
        assert files.stdout == b"one.py\ntwo.txt\n"
        with pytest.raises(FileNotFoundError):
            await file_ops.run_rg(["x"], f"{file_root}/missing")


__all__ = ["FileOpsChecks"]
