"""File operations done by short ``bash`` scripts inside a sandbox.

:class:`ShellFileOperations` implements :class:`pi_core._backend_kit.operations.FileOperations` with nothing
but ``bash``, coreutils (``dd``, ``stat``, ``realpath``, ``mkdir``, ``mktemp``, ``chmod``,
``chown``, ``sync``, ``mv``, ``rm``, ``dirname``, ``basename``) and ``rg`` on the backend's side,
so the file tools see exactly what a bash command of the same backend sees. A backend subclasses
it and implements :meth:`ShellFileOperations.run_script` (run ``bash -c SCRIPT pi-files ARGS...``
in the sandbox, ``LC_ALL=C``, stdin fed from ``stdin`` or closed).

Errors: a script reports an errno either explicitly (exit code :data:`ERRNO_EXIT`, stderr
``pi-errno:ENAME``) or through the ``strerror`` text that ends a coreutils message (``dd: failed
to open '/x': No such file or directory``); both become the matching ``OSError`` subclass with
``errno`` set and ``filename`` = the path asked for. Anything else becomes ``OSError(EIO, ...)``
with the message.
"""

from __future__ import annotations

import errno
import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Sequence

from pi_core.backends import CommandOutput, FileStat, file_kind

ERRNO_EXIT = 111
"""Exit code of a script that printed ``pi-errno:ENAME`` on stderr."""

_PRELUDE = "fail() { printf 'pi-errno:%s\\n' \"$1\" >&2; exit 111; }\n"

READ_SCRIPT = _PRELUDE + (
    '[ -d "$1" ] && fail EISDIR\n'
    '[ -e "$1" ] && ! [ -f "$1" ] && fail EINVAL\n'
    'exec dd if="$1" bs=65536 iflag=skip_bytes,count_bytes,fullblock,nonblock skip="$2" '
    '${3:+"count=$3"} status=none\n'
)
"""``$1`` path, ``$2`` byte offset, ``$3`` length (empty: to the end); the bytes on stdout. A
device, FIFO or socket is refused (``EINVAL``) and never opened; ``dd`` opens with
``O_NONBLOCK``, so a FIFO swapped in after the check cannot block the read."""

STAT_SCRIPT = "exec stat -L -c '%f %s %.9Y' -- \"$1\"\n"
"""``$1`` path; ``RAWMODE_HEX SIZE MTIME`` on stdout (symlinks followed)."""

ACCESS_SCRIPT = _PRELUDE + (
    'stat -L -c "" -- "$1" >/dev/null || exit\n'
    'if (( $2 & 4 )) && ! [ -r "$1" ]; then fail EACCES; fi\n'
    'if (( $2 & 2 )) && ! [ -w "$1" ]; then fail EACCES; fi\n'
    'if (( $2 & 1 )) && ! [ -x "$1" ]; then fail EACCES; fi\n'
)
"""``$1`` path, ``$2`` mode bits (``R_OK`` 4, ``W_OK`` 2, ``X_OK`` 1)."""

REALPATH_SCRIPT = 'exec realpath -m -- "$1"\n'
"""``$1`` path; the resolved path and a newline on stdout."""

LIST_SCRIPT = _PRELUDE + (
    'cd -- "$1" || exit\n'
    "[ -r . ] || fail EACCES\n"
    "shopt -s dotglob nullglob\n"
    "set -- *\n"
    "[ $# -eq 0 ] || printf '%s\\0' \"$@\"\n"
)
"""``$1`` directory; the entry names on stdout, each ended by NUL."""

MKDIR_SCRIPT = 'exec mkdir -p -- "$1"\n'
"""``$1`` directory to create with its parents."""

WRITE_SCRIPT = _PRELUDE + (
    "tmp=\n"
    'trap \'[ -n "$tmp" ] && rm -f -- "$tmp"; cat >/dev/null 2>&1\' EXIT\n'
    "target=$1\n"
    'if [ -L "$target" ]; then target=$(realpath -m -- "$1") || exit; fi\n'
    '[ -d "$target" ] && fail EISDIR\n'
    '[ -e "$target" ] && ! [ -f "$target" ] && fail EINVAL\n'
    'dir=$(dirname -- "$target") && name=$(basename -- "$target") || exit\n'
    'tmp=$(mktemp -- "$dir/.$name.XXXXXXXXXXXX") || exit\n'
    'if [ -e "$target" ]; then\n'
    '  chmod --reference="$target" -- "$tmp" || exit\n'
    '  chown --reference="$target" -- "$tmp" 2>/dev/null\n'
    "else\n"
    '  chmod "$(printf \'%o\' $(( 0666 & ~$(umask) )))" -- "$tmp" || exit\n'
    "fi\n"
    'cat > "$tmp" || exit\n'
    'sync -- "$tmp" || exit\n'
    'mv -f -T -- "$tmp" "$target" || exit\n'
    "tmp=\n"
    'sync -- "$dir" 2>/dev/null\n'
    "exit 0\n"
)
"""``$1`` path, the data on stdin: a device, FIFO or socket is refused (``EINVAL``) and left as
it is; otherwise a temporary file beside the (symlink-resolved) target, mode (and owner) copied, data written and synced, renamed over the target. Whatever happens, stdin is
read to its end before the script exits (``podman exec -i`` can lose the output of a process
that exits before its stdin is consumed)."""

RG_SCRIPT = _PRELUDE + 'cd -- "$1" 2>/dev/null || fail ENOENT\nshift\nexec "$@"\n'
"""``$1`` working directory, then the ``rg`` command line."""

_STRERROR: dict[str, int] = {}
for _code in sorted(errno.errorcode):
    _STRERROR.setdefault(os.strerror(_code), _code)


def script_error(result: CommandOutput, path: str) -> OSError:
    """The ``OSError`` (subclass by errno, ``filename`` = ``path``) a failed script reports."""
    text = result.stderr.decode("utf-8", "replace").strip()
    lines = text.splitlines()
    last = lines[-1] if lines else ""
    code: int | None = None
    if result.exit_code == ERRNO_EXIT and last.startswith("pi-errno:"):
        code = getattr(errno, last.removeprefix("pi-errno:").strip(), None)
    if code is None:
        matches = [(len(m), c) for m, c in _STRERROR.items() if last.endswith(m)]
        if matches:
            code = max(matches)[1]
    if code is None:
        return OSError(errno.EIO, text or f"exit code {result.exit_code}", path)
    return OSError(code, os.strerror(code), path)


class ShellFileOperations(ABC):
    """:class:`~pi_core._backend_kit.operations.FileOperations` over :meth:`run_script` (see the module).

    ``rg``: the ``rg`` program on the backend's side (a name on its ``PATH`` or a path).
    """

    def __init__(self, *, rg: str = "rg") -> None:
        self.rg = rg

    @abstractmethod
    async def run_script(
        self, script: str, args: Sequence[str], *, stdin: bytes | None = None
    ) -> CommandOutput:
        """Run ``bash -c script pi-files *args`` on the backend side with ``LC_ALL=C``; stdin is
        ``stdin`` or closed. Raises ``OSError`` when the backend cannot run it at all."""

    async def _checked(
        self, script: str, args: Sequence[str], path: str, *, stdin: bytes | None = None
    ) -> bytes:
        result = await self.run_script(script, args, stdin=stdin)
        if result.exit_code != 0:
            raise script_error(result, path)
        return result.stdout

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """``length`` bytes (``None``: to the end) from byte ``offset`` (``dd``, reading only that
        range); ``IsADirectoryError`` for a directory, ``OSError(EINVAL)`` for a device, FIFO or
        socket."""
        size = "" if length is None else str(length)
        return await self._checked(READ_SCRIPT, [path, str(offset), size], path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomic replace (temporary file, sync, ``mv``; mode, owner and symlink kept);
        ``IsADirectoryError``, ``OSError`` ``EINVAL`` (a device, FIFO or socket, left as it is),
        ``FileNotFoundError`` (missing directory), ``OSError`` ``EROFS``."""
        await self._checked(WRITE_SCRIPT, [path], path, stdin=data)

    async def stat(self, path: str) -> FileStat:
        """Kind, size, permission bits and mtime (symlinks followed)."""
        out = await self._checked(STAT_SCRIPT, [path], path)
        raw_mode, size, mtime = out.decode().split()
        mode = int(raw_mode, 16)
        return FileStat(
            kind=file_kind(mode), size=int(size), mode=stat.S_IMODE(mode), mtime=float(mtime)
        )

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """Node's ``fs.access``: raise unless ``path`` exists and allows ``mode``
        (``os.R_OK``/``os.W_OK``/``os.X_OK`` bits) for the backend's user."""
        await self._checked(ACCESS_SCRIPT, [path, str(mode)], path)

    async def realpath(self, path: str) -> str:
        """Every symlink resolved (``realpath -m``: missing components kept as they are)."""
        out = await self._checked(REALPATH_SCRIPT, [path], path)
        return os.fsdecode(out.removesuffix(b"\n"))

    async def list_dir(self, path: str) -> list[str]:
        """Entry names of the directory (no ``.``/``..``), unsorted."""
        out = await self._checked(LIST_SCRIPT, [path], path)
        return [os.fsdecode(name) for name in out.split(b"\0")[:-1]]

    async def mkdir(self, path: str) -> None:
        """``mkdir -p``: ``FileExistsError`` when ``path`` exists and is not a directory."""
        await self._checked(MKDIR_SCRIPT, [path], path)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """Run ``rg`` with ``args`` in ``cwd`` on the backend side (stdin closed);
        ``FileNotFoundError`` when ``cwd`` does not exist there."""
        result = await self.run_script(RG_SCRIPT, [cwd, self.rg, *args])
        if result.exit_code == ERRNO_EXIT and result.stderr.startswith(b"pi-errno:"):
            raise script_error(result, cwd)
        return result


__all__ = ["ERRNO_EXIT", "ShellFileOperations", "script_error"]
