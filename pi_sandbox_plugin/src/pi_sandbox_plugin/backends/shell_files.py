"""File operations done by short ``bash`` scripts inside a sandbox.

:class:`ShellFileOperations` implements :class:`pi_core._backend_kit.operations.FileOperations` with nothing
but ``bash``, coreutils (``dd``, ``stat``, ``realpath``, ``mkdir``, ``mktemp``, ``chmod``,
``chown``, ``sync``, ``mv``, ``rm``, ``dirname``, ``basename``) and ``rg`` on the backend's side,
so the file tools see exactly what a bash command of the same backend sees. A backend subclasses
it and implements :meth:`ShellFileOperations.run_script` (run ``bash -c SCRIPT pi-files ARGS...``
in the sandbox, ``LC_ALL=C``, stdin fed from ``stdin`` or closed).

Each process started costs (a ``podman exec`` is about 0.2 s of CPU), so the read tool's first
step is **one** script (:meth:`ShellFileOperations.read_head`: the path candidates resolved,
stat-ed and the start of the file read), and a guard's ``realpath`` + ``stat`` is one too
(:meth:`ShellFileOperations.stat_probed`); both report the resolved paths so the path guard
judges them before it uses what they found.

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
from collections.abc import Callable, Sequence

from pi_core.backends import CommandOutput, FileStat, file_kind, path_candidates, resolve_to_cwd

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

_REALPATH_OR_EMPTY = (
    "r=$(realpath -m -- \"$c\" 2>/dev/null && printf x) && r=${r%?} && r=${r%$'\\n'} || r=\n"
)

STAT_PROBE_SCRIPT = "c=$1\n" + _REALPATH_OR_EMPTY + "printf '%s\\0' \"$r\"\n" + STAT_SCRIPT
"""``$1`` path; its ``realpath -m`` (empty when that fails) and a NUL, then what
:data:`STAT_SCRIPT` prints (its error and exit code too)."""

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

HEAD_SCRIPT = _PRELUDE + (
    "limit=$1 head=$2\n"
    "shift 2\n"
    'for c in "$@"; do\n' + _REALPATH_OR_EMPTY + "  s=$(stat -L -c '%f %s %.9Y' -- \"$c\" 2>&1)\n"
    "  rc=$?\n"
    '  printf \'%s\\0%s\\0%s\\0\' "$r" "$rc" "$s"\n'
    "  [ $rc -eq 0 ] || continue\n"
    "  set -- $s\n"
    "  (( (16#$1 & 0170000) == 0100000 )) || exit 0\n"
    "  n=$head\n"
    "  (( $2 > 0 && $2 <= limit )) && n=\n"
    '  [ -d "$c" ] && fail EISDIR\n'
    '  [ -e "$c" ] && ! [ -f "$c" ] && fail EINVAL\n'
    '  exec dd if="$c" bs=65536 iflag=count_bytes,fullblock,nonblock ${n:+"count=$n"} status=none\n'
    "done\n"
    "exit 0\n"
)
"""``$1`` whole-file limit, ``$2`` head size, then the candidate paths: each candidate in turn
is resolved (``realpath -m``; empty when that fails) and stat-ed (as :data:`STAT_SCRIPT`) and
reported on stdout as ``REALPATH\\0STATUS\\0TEXT\\0`` (``TEXT``: the stat line, or stat's
error message); the first that exists ends the list and, when it is a regular file, its bytes
follow (checked and read as :data:`READ_SCRIPT`: the whole file when ``0 < size <= limit``,
else its first ``head`` bytes; a failure is the script's error)."""

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


HeadResult = tuple[str, FileStat | OSError, bytes | OSError | None]
"""What ``read_head`` gives the read tool: ``(path, info, data)`` (see
:meth:`pi_core.backends.LocalFileOperations.read_head`)."""


def head_candidates(path: str, cwd: str, for_read: bool) -> tuple[list[str], int] | None:
    """The names a head read of ``path`` tries (:func:`pi_core.backends.path_candidates`) and
    the index of the one whose error a missing file reports (the space-normalised path);
    ``None`` when that is not one of them (never, in practice)."""
    candidates = path_candidates(path, cwd, for_read=for_read)
    fallback = resolve_to_cwd(path, cwd)
    return (candidates, candidates.index(fallback)) if fallback in candidates else None


def parse_head(
    stdout: bytes,
    names: Sequence[str],
    fallback: int,
    *,
    parse_stat: Callable[[bytes], FileStat],
    probe_error: Callable[[int, bytes, str], OSError],
    read_error: Callable[[str], OSError] | None,
) -> HeadResult | None:
    """The read tool's ``(path, info, data)`` from a head script's ``stdout``
    (``REALPATH\\0STATUS\\0TEXT\\0`` per probe, then the data; see :data:`HEAD_SCRIPT`):
    the first of ``names`` (the candidates as the caller names them) that exists, else the one
    at index ``fallback`` (the name a missing file reports) with its error. ``parse_stat`` reads
    a stat line, ``probe_error(status, text, name)`` makes a failed stat's error;
    ``read_error``: the error of the read, given the name read (the script failed), ``None``
    when it succeeded. ``None`` when the output is not complete (the script failed before its
    report ended)."""
    missing: list[OSError] = []
    at = 0
    for name in names:
        fields = []
        for _ in range(3):
            end = stdout.find(b"\0", at)
            if end < 0:
                return None
            fields.append(stdout[at:end])
            at = end + 1
        _real, status, text = fields
        code = int(status)
        found = parse_stat(text) if code == 0 else probe_error(code, text, name)
        if isinstance(found, FileStat):
            data: bytes | OSError | None = None
            if found.kind == "file":
                data = read_error(name) if read_error is not None else stdout[at:]
            elif read_error is not None:
                return None
            return name, found, data
        missing.append(found)
    if read_error is not None or fallback >= len(missing):
        return None
    return names[fallback], missing[fallback], None


def _parse_stat_line(out: bytes) -> FileStat:
    raw_mode, size, mtime = out.decode().split()
    mode = int(raw_mode, 16)
    return FileStat(
        kind=file_kind(mode), size=int(size), mode=stat.S_IMODE(mode), mtime=float(mtime)
    )


def _stat_error(status: int, text: bytes, path: str) -> OSError:
    return script_error(CommandOutput(exit_code=status, stdout=b"", stderr=text), path)


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
        return _parse_stat_line(await self._checked(STAT_SCRIPT, [path], path))

    def _overrides_io(self) -> bool:
        cls = type(self)
        return (
            cls.read_bytes is not ShellFileOperations.read_bytes
            or cls.stat is not ShellFileOperations.stat
        )

    async def stat_probed(self, path: str) -> tuple[str | None, FileStat | OSError] | None:
        """:meth:`realpath` and :meth:`stat` of ``path`` in **one** script
        (:data:`STAT_PROBE_SCRIPT`): ``(real, stat)``, ``real`` ``None`` when ``realpath``
        failed, ``stat`` the :class:`FileStat` or the ``OSError`` :meth:`stat` raises. A guard
        judges ``real`` before it lets ``stat`` out. ``None`` when a subclass overrides
        ``stat`` or ``realpath`` (the caller uses those)."""
        cls = type(self)
        if cls.stat is not ShellFileOperations.stat or (
            cls.realpath is not ShellFileOperations.realpath
        ):
            return None
        result = await self.run_script(STAT_PROBE_SCRIPT, [path])
        real, _, line = result.stdout.partition(b"\0")
        found = script_error(result, path) if result.exit_code else _parse_stat_line(line)
        return (os.fsdecode(real) if real else None), found

    async def read_head(
        self, path: str, cwd: str, *, whole_limit: int, head_size: int, for_read: bool = True
    ) -> HeadResult | None:
        """The read tool's first step (as :meth:`pi_core.backends.LocalFileOperations.
        read_head`: the same candidates, results and errors as ``resolve_existing_path``,
        ``stat`` and ``read_bytes`` give) in **one** script. ``None`` when a subclass
        overrides ``stat`` or ``read_bytes`` (the caller uses those, so what the subclass
        changes applies)."""
        found = head_candidates(path, cwd, for_read)
        if found is None:
            return None
        candidates, fallback = found
        return await self.read_head_at(
            candidates, candidates, fallback, whole_limit=whole_limit, head_size=head_size
        )

    async def read_head_at(
        self,
        paths: Sequence[str],
        names: Sequence[str],
        fallback: int,
        *,
        whole_limit: int,
        head_size: int,
    ) -> HeadResult | None:
        """The head read of :meth:`read_head` over the backend's ``paths`` (one script:
        :data:`HEAD_SCRIPT`), reported with the caller's ``names`` (same order); ``fallback``:
        the index of the name a missing file reports. ``None`` when a subclass overrides
        ``stat`` or ``read_bytes``, or the script failed before its report ended."""
        if self._overrides_io():
            return None
        result = await self.run_script(HEAD_SCRIPT, [str(whole_limit), str(head_size), *paths])
        return parse_head(
            result.stdout,
            names,
            fallback,
            parse_stat=_parse_stat_line,
            probe_error=_stat_error,
            read_error=(lambda name: script_error(result, name)) if result.exit_code else None,
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


__all__ = [
    "ERRNO_EXIT",
    "HeadResult",
    "ShellFileOperations",
    "head_candidates",
    "parse_head",
    "script_error",
]
