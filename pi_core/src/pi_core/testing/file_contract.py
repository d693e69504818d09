"""The contract every :class:`~pi_core.FileOperations` backend must pass, as a reusable pytest
suite, the companion of :mod:`pi_core.testing.bash_contract`.

Use it from a test module of the backend's distribution::

    import pytest
    from pi_core.testing.file_contract import FileOperationsContract

    class TestMyBackend(FileOperationsContract):
        @pytest.fixture
        def file_operations(self):
            return MyFileOperations(...)

        @pytest.fixture
        def file_root(self, tmp_path):          # optional: an empty directory as the backend
            return str(tmp_path)                 # sees it

        @pytest.fixture
        def file_shell(self):                   # optional: run ``sh`` where the files are
            async def run(script: str, cwd: str) -> bytes: ...
            return run

The tests set files up with the backend's own ``write_bytes``/``mkdir`` and, for what the
protocol cannot do (symlinks, modes, FIFOs, hard links), with ``file_shell``, a POSIX ``sh``
(coreutils) on the backend's side. They check ranged reads (also far into a huge sparse file),
raw bytes, the atomic replace (temporary file in the same directory, renamed: a hard link keeps
the old content; mode kept; a symlink's target replaced and the link kept; no temporary file
left), ``stat`` kinds, sizes, modes and mtimes, ``realpath`` through symlinks with a missing
rest, ``list_dir``, ``mkdir -p``, ``run_rg``, an optional ``access(path, mode)``, and the
``OSError`` subclasses and ``errno`` values (``ENOENT``, ``ENOTDIR``, ``EISDIR``, ``EEXIST``)
with ``filename`` set to the caller's path, and that a device, FIFO or socket (or a symlink to
one) is neither read nor replaced (``OSError`` ``EINVAL`` at once, the file left as it was). Needs pytest and pytest-trio (``trio_mode``) and
``rg`` on the backend's side.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from pi_core._backend_kit.operations import CommandOutput, FileOperations, FileStat

FileShell = Callable[[str, str], Awaitable[bytes]]
"""``await file_shell(script, cwd) -> stdout``: runs ``sh -c script`` in ``cwd`` on the backend's
side; a non-zero exit fails the test."""


async def local_shell(script: str, cwd: str) -> bytes:
    """The default :data:`FileShell`: ``sh -c script`` on this machine."""
    result = await trio.run_process(
        ["sh", "-c", script],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, (script, result.stderr)
    return bytes(result.stdout)


class FileOperationsContract:
    """The contract suite; subclass it (name starting with ``Test``) and override
    :meth:`file_operations` (and :meth:`file_root`/:meth:`file_shell` for a backend with its
    own file system)."""

    @pytest.fixture
    def file_operations(self) -> FileOperations:
        """The backend under test; override."""
        raise NotImplementedError("override the file_operations fixture")

    @pytest.fixture
    def file_root(self, tmp_path: Any) -> str:
        """An existing, empty directory on the backend's side (an absolute path as the backend
        takes it); override for remote backends."""
        return str(tmp_path)

    @pytest.fixture
    def file_shell(self) -> FileShell:
        """Runs ``sh`` on the backend's side (see :data:`FileShell`); override for remote
        backends."""
        return local_shell

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def join(root: str, *names: str) -> str:
        return "/".join([root.rstrip("/"), *names])

    @staticmethod
    def assert_os_error(info: pytest.ExceptionInfo[OSError], kind: type, code: int, path: str):
        assert type(info.value) is kind, repr(info.value)
        assert info.value.errno == code, repr(info.value)
        assert info.value.filename == path, repr(info.value)

    # -- protocol ---------------------------------------------------------------------------

    def test_implements_the_protocol(self, file_operations: FileOperations) -> None:
        assert isinstance(file_operations, FileOperations)

    # -- read_bytes -------------------------------------------------------------------------

    async def test_read_whole_and_ranges(self, file_operations: FileOperations, file_root: str):
        path = self.join(file_root, "f.bin")
        await file_operations.write_bytes(path, b"0123456789")
        assert await file_operations.read_bytes(path) == b"0123456789"
        assert await file_operations.read_bytes(path, 0) == b"0123456789"
        assert await file_operations.read_bytes(path, 3) == b"3456789"
        assert await file_operations.read_bytes(path, 3, 4) == b"3456"
        assert await file_operations.read_bytes(path, 0, 1) == b"0"
        assert await file_operations.read_bytes(path, 8, 100) == b"89"
        assert await file_operations.read_bytes(path, 10) == b""
        assert await file_operations.read_bytes(path, 20, 5) == b""

    async def test_read_empty_file(self, file_operations: FileOperations, file_root: str):
        path = self.join(file_root, "empty")
        await file_operations.write_bytes(path, b"")
        assert await file_operations.read_bytes(path) == b""
        assert await file_operations.read_bytes(path, 0, 10) == b""

    async def test_raw_bytes_round_trip(self, file_operations: FileOperations, file_root: str):
        path = self.join(file_root, "all-bytes")
        data = bytes(range(256)) * 4 + b"\r\n\x00\xff"
        await file_operations.write_bytes(path, data)
        assert await file_operations.read_bytes(path) == data
        assert await file_operations.read_bytes(path, 250, 10) == data[250:260]

    async def test_large_file_round_trip(self, file_operations: FileOperations, file_root: str):
        path = self.join(file_root, "large.bin")
        data = os.urandom(3 * 1024 * 1024 + 17)
        await file_operations.write_bytes(path, data)
        assert await file_operations.read_bytes(path) == data
        assert await file_operations.read_bytes(path, 2_000_000, 65536) == data[2_000_000:2_065_536]
        assert (await file_operations.stat(path)).size == len(data)

    async def test_read_far_into_a_huge_sparse_file(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_shell("truncate -s 1073741820 sparse && printf tail >> sparse", file_root)
        path = self.join(file_root, "sparse")
        with trio.fail_after(10):
            assert await file_operations.read_bytes(path, (1 << 30) - 4, 4) == b"tail"
            assert await file_operations.read_bytes(path, (1 << 30) - 6) == b"\0\0tail"

    async def test_read_errors(self, file_operations: FileOperations, file_root: str):
        await file_operations.write_bytes(self.join(file_root, "file"), b"x")
        missing = self.join(file_root, "missing")
        with pytest.raises(OSError) as info:
            await file_operations.read_bytes(missing)
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, missing)
        deep = self.join(file_root, "no", "such", "file")
        with pytest.raises(OSError) as info:
            await file_operations.read_bytes(deep, 2, 3)
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, deep)
        with pytest.raises(OSError) as info:
            await file_operations.read_bytes(file_root)
        assert type(info.value) is IsADirectoryError
        assert info.value.errno == errno.EISDIR
        below_file = self.join(file_root, "file", "x")
        with pytest.raises(OSError) as info:
            await file_operations.read_bytes(below_file)
        self.assert_os_error(info, NotADirectoryError, errno.ENOTDIR, below_file)

    async def test_read_through_a_symlink(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_operations.write_bytes(self.join(file_root, "target"), b"via link")
        await file_shell("ln -s target link && ln -s missing dangling", file_root)
        assert await file_operations.read_bytes(self.join(file_root, "link")) == b"via link"
        dangling = self.join(file_root, "dangling")
        with pytest.raises(OSError) as info:
            await file_operations.read_bytes(dangling)
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, dangling)

    # -- write_bytes ------------------------------------------------------------------------

    async def test_write_creates_with_default_mode(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        path = self.join(file_root, "new.txt")
        await file_operations.write_bytes(path, b"hello\n")
        assert await file_shell("cat new.txt", file_root) == b"hello\n"
        expected = await file_shell(": > ref && stat -c %a ref", file_root)
        assert await file_shell("stat -c %a new.txt", file_root) == expected

    async def test_write_replaces_and_keeps_the_mode(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        path = self.join(file_root, "run.sh")
        await file_operations.write_bytes(path, b"old content that is longer")
        await file_shell("chmod 751 run.sh", file_root)
        await file_operations.write_bytes(path, b"new")
        assert await file_operations.read_bytes(path) == b"new"
        assert await file_shell("stat -c %a run.sh", file_root) == b"751\n"
        assert (await file_operations.stat(path)).mode == 0o751

    async def test_write_renames_a_new_file_into_place(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        """A hard link to the old file keeps the old content: the file was replaced by a
        rename, not truncated and rewritten in place."""
        path = self.join(file_root, "f")
        await file_operations.write_bytes(path, b"old")
        await file_shell("ln f hardlink", file_root)
        await file_operations.write_bytes(path, b"new")
        assert await file_operations.read_bytes(path) == b"new"
        assert await file_operations.read_bytes(self.join(file_root, "hardlink")) == b"old"
        assert sorted(await file_operations.list_dir(file_root)) == ["f", "hardlink"]

    async def test_write_follows_a_symlink_and_keeps_it(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_operations.mkdir(self.join(file_root, "real"))
        await file_operations.write_bytes(self.join(file_root, "real", "t.txt"), b"old")
        await file_shell("chmod 640 real/t.txt && ln -s real/t.txt a && ln -s a b", file_root)
        await file_operations.write_bytes(self.join(file_root, "b"), b"through two links")
        assert await file_shell("readlink b; readlink a; cat real/t.txt", file_root) == (
            b"a\nreal/t.txt\nthrough two links"
        )
        assert await file_shell("stat -c %a real/t.txt", file_root) == b"640\n"
        assert sorted(await file_operations.list_dir(self.join(file_root, "real"))) == ["t.txt"]

    async def test_write_through_a_symlinked_directory(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_operations.mkdir(self.join(file_root, "real"))
        await file_shell("ln -s real dirlink", file_root)
        await file_operations.write_bytes(self.join(file_root, "dirlink", "n.txt"), b"n")
        assert await file_shell("cat real/n.txt", file_root) == b"n"

    async def test_write_special_names(self, file_operations: FileOperations, file_root: str):
        names = ["with space", "-dash", "quote'\"$x`", "ünï €", "line\nbreak", ".hidden"]
        for name in names:
            await file_operations.write_bytes(self.join(file_root, name), name.encode())
        for name in names:
            assert await file_operations.read_bytes(self.join(file_root, name)) == name.encode()
        assert sorted(await file_operations.list_dir(file_root)) == sorted(names)

    async def test_write_errors(self, file_operations: FileOperations, file_root: str):
        await file_operations.write_bytes(self.join(file_root, "file"), b"x")
        await file_operations.mkdir(self.join(file_root, "dir"))
        directory = self.join(file_root, "dir")
        with pytest.raises(OSError) as info:
            await file_operations.write_bytes(directory, b"x")
        self.assert_os_error(info, IsADirectoryError, errno.EISDIR, directory)
        missing_parent = self.join(file_root, "missing", "f")
        with pytest.raises(OSError) as info:
            await file_operations.write_bytes(missing_parent, b"x")
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, missing_parent)
        below_file = self.join(file_root, "file", "f")
        with pytest.raises(OSError) as info:
            await file_operations.write_bytes(below_file, b"x")
        self.assert_os_error(info, NotADirectoryError, errno.ENOTDIR, below_file)
        assert sorted(await file_operations.list_dir(file_root)) == ["dir", "file"]
        assert await file_operations.list_dir(directory) == []

    # -- special files: only regular files are read or replaced ------------------------------

    async def _special_files(self, ops: FileOperations, root: str, shell: FileShell) -> list[str]:
        """A FIFO, a character device (``mknod``, when the backend's user may: a copy of
        ``/dev/null`` inside ``root``) and symlinks to each; their paths."""
        await shell(
            "mkfifo fifo && ln -s fifo fifo-link && "
            "{ mknod null c 1 3 2>/dev/null && ln -s null null-link; true; }",
            root,
        )
        names = sorted(n for n in await ops.list_dir(root) if n.startswith(("fifo", "null")))
        return [self.join(root, name) for name in names]

    async def test_read_refuses_special_files_without_blocking(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        """``read_bytes`` of a device, FIFO or socket raises ``OSError(EINVAL)`` at once: a
        FIFO nobody writes is never opened for a blocking read, a device never read."""
        for path in await self._special_files(file_operations, file_root, file_shell):
            with trio.fail_after(20), pytest.raises(OSError) as info:
                await file_operations.read_bytes(path)
            self.assert_os_error(info, OSError, errno.EINVAL, path)
            with trio.fail_after(20), pytest.raises(OSError) as info:
                await file_operations.read_bytes(path, 0, 10)
            self.assert_os_error(info, OSError, errno.EINVAL, path)

    async def test_write_refuses_special_files_and_keeps_them(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        """``write_bytes`` over a device, FIFO or socket (or a symlink to one) raises
        ``OSError(EINVAL)`` and leaves it as it was: never replaced by a regular file, no
        temporary file left."""
        paths = await self._special_files(file_operations, file_root, file_shell)
        before = sorted(await file_operations.list_dir(file_root))
        for path in paths:
            with trio.fail_after(20), pytest.raises(OSError) as info:
                await file_operations.write_bytes(path, b"data")
            self.assert_os_error(info, OSError, errno.EINVAL, path)
            assert (await file_operations.stat(path)).kind == "other"
        kinds = await file_shell(
            "for f in fifo null; do [ -e $f ] && stat -c '%n %F' $f; done; true", file_root
        )
        assert kinds.decode().splitlines()[0] == "fifo fifo"
        assert kinds.decode().splitlines()[1:] in ([], ["null character special file"])
        assert sorted(await file_operations.list_dir(file_root)) == before

    # -- stat -------------------------------------------------------------------------------

    async def test_stat_kinds_and_sizes(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_operations.write_bytes(self.join(file_root, "f"), b"12345")
        await file_operations.mkdir(self.join(file_root, "d"))
        await file_shell("ln -s f lf && ln -s d ld && mkfifo fifo && chmod 600 f", file_root)
        f = await file_operations.stat(self.join(file_root, "f"))
        assert isinstance(f, FileStat)
        assert (f.kind, f.size, f.mode) == ("file", 5, 0o600)
        assert (await file_operations.stat(self.join(file_root, "lf"))).kind == "file"
        assert (await file_operations.stat(self.join(file_root, "lf"))).size == 5
        assert (await file_operations.stat(self.join(file_root, "d"))).kind == "directory"
        assert (await file_operations.stat(self.join(file_root, "ld"))).kind == "directory"
        assert (await file_operations.stat(self.join(file_root, "fifo"))).kind == "other"

    async def test_stat_mtime(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        path = self.join(file_root, "f")
        await file_operations.write_bytes(path, b"x")
        await file_shell("touch -d '2001-02-03 04:05:06.25 UTC' f", file_root)
        assert (await file_operations.stat(path)).mtime == pytest.approx(981173106.25, abs=1e-3)
        before = float(await file_shell("date +%s", file_root))
        await file_operations.write_bytes(path, b"y")
        assert before - 1 <= (await file_operations.stat(path)).mtime <= before + 30
        assert abs((await file_operations.stat(path)).mtime - time.time()) < 3600 * 24 * 365

    async def test_stat_errors(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        await file_operations.write_bytes(self.join(file_root, "file"), b"x")
        await file_shell("ln -s nowhere dangling", file_root)
        for name in ("missing", "dangling"):
            path = self.join(file_root, name)
            with pytest.raises(OSError) as info:
                await file_operations.stat(path)
            self.assert_os_error(info, FileNotFoundError, errno.ENOENT, path)
        below_file = self.join(file_root, "file", "x")
        with pytest.raises(OSError) as info:
            await file_operations.stat(below_file)
        self.assert_os_error(info, NotADirectoryError, errno.ENOTDIR, below_file)

    # -- realpath ---------------------------------------------------------------------------

    async def test_realpath(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        real_root = (await file_shell("pwd -P", file_root)).decode().rstrip("\n")
        await file_operations.mkdir(self.join(file_root, "a", "b"))
        await file_operations.write_bytes(self.join(file_root, "a", "b", "f"), b"x")
        await file_shell("ln -s a/b lb && ln -s lb/f lf && ln -s .. a/b/up", file_root)
        realpath = file_operations.realpath
        assert await realpath(file_root) == real_root
        assert await realpath(self.join(file_root, "lb")) == f"{real_root}/a/b"
        assert await realpath(self.join(file_root, "lf")) == f"{real_root}/a/b/f"
        assert await realpath(self.join(file_root, "lb", "up", "b")) == f"{real_root}/a/b"
        assert await realpath(self.join(file_root, "lb", "new", "x")) == (f"{real_root}/a/b/new/x")
        assert await realpath(self.join(file_root, "a", ".", "b", "..", "b")) == (
            f"{real_root}/a/b"
        )
        assert await realpath("/") == "/"

    # -- list_dir ---------------------------------------------------------------------------

    async def test_list_dir(
        self, file_operations: FileOperations, file_root: str, file_shell: FileShell
    ):
        assert await file_operations.list_dir(file_root) == []
        for name in ("b", ".hidden", "..dots", "a b"):
            await file_operations.write_bytes(self.join(file_root, name), b"")
        await file_operations.mkdir(self.join(file_root, "sub", "deeper"))
        await file_shell("ln -s nowhere dangling && ln -s sub lsub", file_root)
        names = await file_operations.list_dir(file_root)
        assert sorted(names) == sorted(["b", ".hidden", "..dots", "a b", "sub", "dangling", "lsub"])
        assert await file_operations.list_dir(self.join(file_root, "lsub")) == ["deeper"]

    async def test_list_dir_errors(self, file_operations: FileOperations, file_root: str):
        await file_operations.write_bytes(self.join(file_root, "file"), b"x")
        missing = self.join(file_root, "missing")
        with pytest.raises(OSError) as info:
            await file_operations.list_dir(missing)
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, missing)
        file = self.join(file_root, "file")
        with pytest.raises(OSError) as info:
            await file_operations.list_dir(file)
        self.assert_os_error(info, NotADirectoryError, errno.ENOTDIR, file)

    # -- mkdir ------------------------------------------------------------------------------

    async def test_mkdir(self, file_operations: FileOperations, file_root: str):
        nested = self.join(file_root, "x", "y", "z")
        await file_operations.mkdir(nested)
        assert (await file_operations.stat(nested)).kind == "directory"
        await file_operations.mkdir(nested)
        await file_operations.mkdir(self.join(file_root, "x"))
        assert await file_operations.list_dir(self.join(file_root, "x")) == ["y"]

    async def test_mkdir_errors(self, file_operations: FileOperations, file_root: str):
        file = self.join(file_root, "file")
        await file_operations.write_bytes(file, b"x")
        with pytest.raises(OSError) as info:
            await file_operations.mkdir(file)
        assert type(info.value) is FileExistsError
        assert info.value.errno == errno.EEXIST
        below_file = self.join(file_root, "file", "sub")
        with pytest.raises(OSError) as info:
            await file_operations.mkdir(below_file)
        assert type(info.value) is NotADirectoryError
        assert info.value.errno == errno.ENOTDIR

    # -- access (optional) ------------------------------------------------------------------

    async def test_access_when_implemented(self, file_operations: FileOperations, file_root: str):
        access = getattr(file_operations, "access", None)
        if access is None:
            pytest.skip("this backend has no access()")
        path = self.join(file_root, "f")
        await file_operations.write_bytes(path, b"x")
        await access(path, os.R_OK | os.W_OK)
        await access(file_root, os.R_OK)
        missing = self.join(file_root, "missing")
        with pytest.raises(OSError) as info:
            await access(missing, os.R_OK)
        self.assert_os_error(info, FileNotFoundError, errno.ENOENT, missing)

    # -- run_rg -----------------------------------------------------------------------------

    async def _tree(self, ops: FileOperations, root: str) -> None:
        await ops.mkdir(self.join(root, "src", "deep"))
        await ops.write_bytes(self.join(root, "src", "a.py"), b"needle = 1\nother\n")
        await ops.write_bytes(self.join(root, "src", "deep", "b.txt"), b"no match\nneedle\n")
        await ops.write_bytes(self.join(root, ".hidden.txt"), b"needle hidden\n")

    async def test_run_rg_lists_files_relative_to_cwd(
        self, file_operations: FileOperations, file_root: str
    ):
        await self._tree(file_operations, file_root)
        out = await file_operations.run_rg(["--files", "--sort=path", "--hidden"], file_root)
        assert isinstance(out, CommandOutput)
        assert (out.exit_code, out.stdout) == (
            0,
            b".hidden.txt\nsrc/a.py\nsrc/deep/b.txt\n",
        )
        src = self.join(file_root, "src")
        out = await file_operations.run_rg(["--files", "--null", "--sort=path", "--", src], src)
        assert out.stdout == f"{src}/a.py\0{src}/deep/b.txt\0".encode()

    async def test_run_rg_search_exit_codes_and_stderr(
        self, file_operations: FileOperations, file_root: str
    ):
        await self._tree(file_operations, file_root)
        out = await file_operations.run_rg(["-n", "--sort=path", "needle"], file_root)
        assert (out.exit_code, out.stdout, out.stderr) == (
            0,
            b"src/a.py:1:needle = 1\nsrc/deep/b.txt:2:needle\n",
            b"",
        )
        out = await file_operations.run_rg(["absent-word"], file_root)
        assert (out.exit_code, out.stdout, out.stderr) == (1, b"", b"")
        out = await file_operations.run_rg(["--no-config", "("], file_root)
        assert out.exit_code == 2
        assert out.stdout == b""
        assert b"regex parse error" in out.stderr

    async def test_run_rg_json_paths(self, file_operations: FileOperations, file_root: str):
        await self._tree(file_operations, file_root)
        src = self.join(file_root, "src")
        out = await file_operations.run_rg(["--json", "--sort=path", "--", "needle", src], src)
        paths = [
            event["data"]["path"]["text"]
            for event in map(json.loads, out.stdout.splitlines())
            if event["type"] == "match"
        ]
        assert paths == [f"{src}/a.py", f"{src}/deep/b.txt"]

    async def test_run_rg_with_quoting_in_arguments(
        self, file_operations: FileOperations, file_root: str
    ):
        await file_operations.write_bytes(
            self.join(file_root, "q.txt"), b'it\'s a "$HOME" `x` ; done\n'
        )
        pattern = 'it\'s a "$HOME" `x` ; done'
        out = await file_operations.run_rg(["--fixed-strings", "--", pattern], file_root)
        assert (out.exit_code, out.stdout) == (0, b'q.txt:it\'s a "$HOME" `x` ; done\n')


__all__ = ["FileOperationsContract", "FileShell", "local_shell"]
