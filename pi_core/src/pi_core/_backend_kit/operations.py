"""Backend protocols: where bash commands run and where file tools do their I/O.

A backend plugin (SSH, containers, bubblewrap) implements these and returns an instance from
``pi_bash_operations`` / ``pi_file_operations``; it depends on ``pi_core`` alone. Both are shaped
so a remote backend can implement them over a shell connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable


@runtime_checkable
class BashOperations(Protocol):
    """Runs one shell command.

    ``exec(command, cwd, *, on_data, env, timeout)`` runs ``command`` in ``cwd`` with ``env``
    (``None``: the backend's own environment), stdin closed, and streams stdout and stderr,
    merged in arrival order, as raw ``bytes`` chunks to ``on_data``. It returns the exit code:
    the code, or ``128 + N`` when the command died of signal ``N``; ``None`` only when the backend
    cannot know (the bash tool reports that as an error). ``timeout`` is in seconds (``None``: no
    limit); past it the whole process tree is killed and :class:`~pi_core._errors.CommandTimeout`
    is raised. On trio cancellation the backend kills the whole process tree (shielded) and
    re-raises ``trio.Cancelled``.
    """

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None: ...


FileKind = Literal["file", "directory", "symlink", "other"]


@dataclass(frozen=True)
class FileStat:
    """What ``FileOperations.stat`` reports: ``kind``, ``size`` in bytes, permission ``mode``
    bits and ``mtime`` in seconds since the epoch (symlinks are followed).

    ``key`` (optional, not compared): the file's ``(device, inode)`` where the backend knows
    it; the read tool hands the stat back to ``scan_bytes``/``count_newlines`` as the keyword
    ``same_as`` (so a backend that sets ``key`` accepts it there), so a file replaced by
    another one between two opens of one read is noticed (``OSError(ESTALE)``)."""

    kind: FileKind
    size: int
    mode: int
    mtime: float
    key: tuple[int, int] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CommandOutput:
    """What ``FileOperations.run_rg`` returns: exit code and the complete stdout/stderr bytes.

    ``truncated`` is set when the backend stopped ripgrep at its output bound, so ``stdout``
    holds only the part ripgrep wrote first (which part depends on ripgrep's order)."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False


@runtime_checkable
class FileOperations(Protocol):
    """The file I/O of read, write, edit, ls, find and grep.

    Paths are absolute paths on the backend's file system. Failures raise ``OSError``
    subclasses with ``errno`` set (``FileNotFoundError``, ``IsADirectoryError``,
    ``NotADirectoryError``, ``PermissionError``), so tools can word Pi's Node-style errors.
    ``read_bytes`` and ``write_bytes`` of a device, FIFO or socket (symlinks followed) raise
    ``OSError`` with ``errno.EINVAL`` at once: it is never opened for a blocking read and never
    replaced (``pi_core.testing.file_contract`` checks it).

    Optional methods, looked up with ``getattr`` (a backend need not have them; the tools then
    use the methods below): ``access(path, mode)`` (``access(2)``), and the read tool's
    one-hop pair ``read_head(path, cwd, *, whole_limit, head_size)`` and
    ``scan_bytes(path, offset, chunk_size, consume)`` with ``count_newlines(path, offset,
    chunk_size)`` for the rest of a large file, and grep's windowed search
    ``run_rg_fed(args, cwd, chunks, consume)`` (ripgrep fed on its stdin), and find's bulk
    listing ``list_dirs(paths)``
    (:class:`~pi_core._backend_kit.local_files.LocalFileOperations` documents them).
    """

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset`` of the file at ``path``."""
        ...

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Replace the file atomically (temporary file in the same directory, fsync, rename),
        keeping its mode and following a symlink to replace its target."""
        ...

    async def stat(self, path: str) -> FileStat:
        """Kind, size, mode and mtime of ``path`` (following symlinks)."""
        ...

    async def realpath(self, path: str) -> str:
        """``path`` with every symlink resolved (the longest existing prefix, then the rest)."""
        ...

    async def list_dir(self, path: str) -> list[str]:
        """Names of the entries of the directory ``path`` (no ``.``/``..``), unsorted."""
        ...

    async def mkdir(self, path: str) -> None:
        """Create ``path`` and any missing parents; an existing directory is fine."""
        ...

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run ripgrep with ``args`` in ``cwd`` where the files are; stdin closed."""
        ...


__all__ = ["BashOperations", "CommandOutput", "FileKind", "FileOperations", "FileStat"]
