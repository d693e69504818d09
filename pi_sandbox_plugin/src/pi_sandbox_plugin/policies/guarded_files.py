"""A :class:`~pi_core._backend_kit.operations.FileOperations` wrapper that enforces the path policy at the
moment of each operation.

:class:`GuardedFileOperations` resolves the path with the wrapped backend's own ``realpath``
right before each operation, checks the resolved path (and the path as named) with the
:class:`~pi_sandbox_plugin.policies.path_policy.PathPolicy`, and then operates on the
**resolved** path.
So a symlink created earlier in the same batch (by bash, or a write that made a link) is
followed by the check exactly as the operation would follow it: it cannot lead outside the
allowed roots or onto a denied file.

=============  ==============================================================================
operation      check
=============  ==============================================================================
read_bytes     read, on the resolved path
stat           read (metadata is information too); with a backend's ``stat_probed`` (resolve
               and stat in one hop) the resolved path it reports is judged before the
               result is given
access         read for ``R_OK``, write for ``W_OK``
list_dir       read on the directory; entries matching a denied glob are left out, and
               (with ``identities``) entries that are a denied or hidden file by identity
write_bytes    write, on the resolved path (the link's target is what would be replaced);
               ``write_chunks`` the same
read_head      the wrapped one-hop read when the policy restricts no read
               (:meth:`~pi_sandbox_plugin.policies.path_policy.PathPolicy.reads_unrestricted`:
               only pi's own files protected, none hidden), never for a name that is one of
               pi's output files; else "not available" (``None``): the read tool uses the
               checked ``stat`` and ``read_bytes``, so no denied file is ever opened
scan_bytes     the wrapped one only when the policy restricts no read; else ``False``
count_newlines the wrapped one only when the policy restricts no read; else ``None`` (the
               read tool feeds the rest to its scanner)
mkdir          write
realpath       none (it reads no file content)
run_rg         read on ``cwd`` and on every search path (with ``identities``: by identity
               too); ``--glob=!PATTERN`` exclusions for the denied globs; the output is
               filtered so no denied file (and no file outside the read roots; with
               ``identities``, no denied file under another name) is reported: ``--json``
               events, ``--null --line-number`` records, ``--files`` lists
=============  ==============================================================================

``identities`` (a :class:`~pi_sandbox_plugin.policies.file_identity.FileIdentities`, for a
file system of this machine) adds the checks by device and inode (hard links, bind mounts);
the reads and writes themselves are checked on the descriptor by the local backend it was
given to (``LocalFileOperations(check_opened=..., check_replaced=...)``), or by the masks of
the bwrap sandbox they run in.

**pi's full-output files** (:meth:`PathPolicy.is_output_file`: the bash tool's
``{tempdir}/pi-bash-{16 hex}.log``, written by the pi process on this machine whatever the
backend) are read, stat-ed and resolved on this machine's file system (``host``), so the read
tool finds them with every backend (a bwrap sandbox has a private ``/tmp``, a remote backend
another machine's).

A refusal raises :class:`PathDenied` (a ``PermissionError``, ``EACCES``, ``filename`` = the path
as named), so a tool reports ``EACCES: permission denied, ...``; the before-hook of the plugin
gives the model the clear reason before the call.

A command running *concurrently* that swaps a checked directory for a symlink between the
check and the operation: on this machine's file systems (``identities``) the local backend
checks the descriptor it opened (its kernel name and identity), and bwrap's file operations run
in a sandbox that reaches nothing bash cannot. A hard link is not a symlink: ``realpath``
cannot see where it came from, the identity checks do. On ssh, container and Ray backends the
paths are judged by name only.
"""

from __future__ import annotations

import base64
import errno
import os
import posixpath
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from pi_core import FileOperations, parse_json
from pi_core.backends import (
    CommandOutput,
    FileStat,
    LocalFileOperations,
    iter_rg_records,
    path_candidates,
)
from pi_sandbox_plugin.policies.path_policy import PathDecision, PathPolicy

if TYPE_CHECKING:
    from pi_sandbox_plugin.policies.file_identity import FileIdentities

T = TypeVar("T")

_FOLLOW_FLAGS = ("-L", "--follow")
_FILES_FLAG = "--files"
_PATTERN_GIVEN = ("-e", "-f", "--regexp", "--file", "--type-list")


class PathDenied(PermissionError):
    """A file operation the path policy refuses: ``errno`` ``EACCES``, ``strerror`` the reason,
    ``filename`` the path as the tool named it."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(errno.EACCES, reason, path)
        self.reason = reason


def _search_paths(args: Sequence[str], cwd: str) -> list[str]:
    """The absolute search paths of an ``rg`` command line: the positional arguments after
    ``--`` (without ``--``: none known), minus the pattern unless ``--files``/``-e``/``-f``."""
    if "--" not in args:
        return []
    index = list(args).index("--")
    positionals = list(args[index + 1 :])
    options = args[:index]
    pattern_given = any(
        a in _PATTERN_GIVEN or a == _FILES_FLAG or a.startswith(("--regexp=", "--file="))
        for a in options
    )
    if not pattern_given and positionals:
        positionals = positionals[1:]
    return [posixpath.normpath(posixpath.join(cwd, p)) for p in positionals]


def _with_excludes(args: Sequence[str], excludes: list[str]) -> list[str]:
    if not excludes:
        return list(args)
    if "--" in args:
        index = list(args).index("--")
        return [*args[:index], *excludes, *args[index:]]
    return [*excludes, *args]


def _json_path(event: Any) -> str | None:
    if not isinstance(event, dict):
        return None
    data = event.get("data")
    path = data.get("path") if isinstance(data, dict) else None
    if not isinstance(path, dict):
        return None
    if isinstance(path.get("text"), str):
        return str(path["text"])
    if isinstance(path.get("bytes"), str):
        return base64.b64decode(path["bytes"]).decode("utf-8", "surrogateescape")
    return None


class GuardedFileOperations:
    """``inner`` (any :class:`~pi_core._backend_kit.operations.FileOperations`) with ``policy`` enforced at
    each operation; see the module docstring. ``inner`` paths are the session's (for a remote
    backend, the one that maps them)."""

    def __init__(
        self,
        inner: FileOperations,
        policy: PathPolicy,
        host: FileOperations | None = None,
        identities: FileIdentities | None = None,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.host: FileOperations = host if host is not None else LocalFileOperations()
        self.identities = identities

    def checkpoint_tree(self, root: str, exclude: Sequence[str] = ()) -> Any:
        """The inner backend's workspace tree for checkpoints (``None`` when it has none)."""
        method = getattr(self.inner, "checkpoint_tree", None)
        return None if method is None else method(root, exclude)

    def _output_file(self, path: str) -> bool:
        """Whether ``path`` is one of pi's full-output files on this machine."""
        return self.policy.is_output_file(posixpath.normpath(path))

    # -- checks ----------------------------------------------------------------------------

    async def _resolve(self, path: str) -> str:
        return posixpath.normpath(await self.inner.realpath(path))

    @staticmethod
    def _require(decision: PathDecision, path: str) -> None:
        if not decision.allowed:
            raise PathDenied(decision.reason, path)

    async def _readable(self, path: str) -> str:
        real = await self._resolve(path)
        self._require(self.policy.check_read(real, posixpath.normpath(path)), path)
        return real

    async def _writable(self, path: str) -> str:
        real = await self._resolve(path)
        self._require(self.policy.check_write(real, posixpath.normpath(path)), path)
        return real

    @staticmethod
    async def _as_named(call: Callable[[], Awaitable[T]], real: str, path: str) -> T:
        """Run ``call`` (on ``real``); an ``OSError`` naming ``real`` names ``path`` instead."""
        try:
            return await call()
        except OSError as error:
            if error.filename == real and real != path:
                error.filename = path
            raise

    # -- FileOperations ----------------------------------------------------------------------

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        """The wrapped ``read_bytes`` on the resolved path, if it may be read (pi's output
        files: this machine's)."""
        if self._output_file(path):
            return await self.host.read_bytes(path, offset, length)
        real = await self._readable(path)
        return await self._as_named(lambda: self.inner.read_bytes(real, offset, length), real, path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """The wrapped ``write_bytes`` on the resolved path, if it may be written."""
        real = await self._writable(path)
        await self._as_named(lambda: self.inner.write_bytes(real, data), real, path)

    async def write_chunks(self, path: str, chunks: Sequence[bytes | memoryview]) -> None:
        """The wrapped ``write_chunks`` (``write_bytes`` of the joined chunks without one) on
        the resolved path, if it may be written."""
        real = await self._writable(path)
        write_chunks = getattr(self.inner, "write_chunks", None)
        if not callable(write_chunks):
            await self._as_named(lambda: self.inner.write_bytes(real, b"".join(chunks)), real, path)
            return
        await self._as_named(lambda: write_chunks(real, chunks), real, path)

    async def read_head(
        self, path: str, cwd: str, *, whole_limit: int, head_size: int, for_read: bool = True
    ) -> tuple[str, FileStat | OSError, bytes | OSError | None] | None:
        """The wrapped one-hop ``read_head`` when the policy restricts no read
        (:meth:`PathPolicy.reads_unrestricted`: only pi's own files are protected, none
        hidden) and none of the names it tries is one of pi's output files; ``None`` otherwise
        (the read tool then uses the checked ``stat`` and ``read_bytes``). A one-hop read
        would open a file before the policy saw its resolved path: a denied file must not be
        opened at all (a file watched for access, a canary, alarms on the open itself)."""
        read_head = getattr(self.inner, "read_head", None)
        if not callable(read_head) or not self.policy.reads_unrestricted():
            return None
        if any(self._output_file(c) for c in path_candidates(path, cwd, for_read=for_read)):
            return None
        found: tuple[str, FileStat | OSError, bytes | OSError | None] | None = await read_head(
            path, cwd, whole_limit=whole_limit, head_size=head_size, for_read=for_read
        )
        return found

    async def scan_bytes(
        self,
        path: str,
        offset: int,
        chunk_size: int,
        consume: Callable[[bytearray], Any],
        **options: Any,
    ) -> bool:
        """The wrapped ``scan_bytes`` when the policy restricts no read (see
        :meth:`read_head`); ``False`` otherwise (the read tool uses ``read_bytes``)."""
        scan_bytes = getattr(self.inner, "scan_bytes", None)
        if not callable(scan_bytes) or not self.policy.reads_unrestricted():
            return False
        return bool(await scan_bytes(path, offset, chunk_size, consume, **options))

    async def count_newlines(
        self, path: str, offset: int, chunk_size: int = 1 << 20, **options: Any
    ) -> tuple[int, int, int | None] | None:
        """The wrapped ``count_newlines`` when the policy restricts no read (see
        :meth:`read_head`); ``None`` otherwise (the read tool reads the rest itself)."""
        count_newlines = getattr(self.inner, "count_newlines", None)
        if not callable(count_newlines) or not self.policy.reads_unrestricted():
            return None
        counted: tuple[int, int, int | None] | None = await count_newlines(
            path, offset, chunk_size, **options
        )
        return counted

    async def stat(self, path: str) -> FileStat:
        """The wrapped ``stat`` of the resolved path, if it may be read (pi's output files:
        this machine's)."""
        if self._output_file(path):
            return await self.host.stat(path)
        probed = getattr(self.inner, "stat_probed", None)
        found = await probed(path) if callable(probed) else None
        if found is None or found[0] is None:
            real = await self._readable(path)
            return await self._as_named(lambda: self.inner.stat(real), real, path)
        # resolved and stat-ed in one hop: the resolved path judged before the result is used
        resolved, info = found
        self._require(
            self.policy.check_read(posixpath.normpath(resolved), posixpath.normpath(path)), path
        )
        if isinstance(info, OSError):
            raise info
        return info

    async def access(self, path: str, mode: int = os.R_OK) -> None:
        """The wrapped ``access`` (``stat`` for a backend without one) of the resolved path,
        after the read (``R_OK``) and write (``W_OK``) checks."""
        if self._output_file(path) and not mode & os.W_OK:
            await self.host.stat(path)
            return
        real = await self._resolve(path)
        named = posixpath.normpath(path)
        if mode & os.R_OK or not mode & os.W_OK:
            self._require(self.policy.check_read(real, named), path)
        if mode & os.W_OK:
            self._require(self.policy.check_write(real, named), path)
        access: Callable[[str, int], Awaitable[None]] | None = getattr(self.inner, "access", None)
        if access is not None and callable(access):
            checker = access
            await self._as_named(lambda: checker(real, mode), real, path)
        else:
            await self._as_named(lambda: self.inner.stat(real), real, path)

    async def realpath(self, path: str) -> str:
        """The wrapped ``realpath`` (no check: it reads no content); a pi output file is its
        own."""
        if self._output_file(path):
            return posixpath.normpath(path)
        return await self.inner.realpath(path)

    async def list_dir(self, path: str) -> list[str]:
        """The wrapped ``list_dir`` of the resolved directory, if it may be read, without the
        entries a denied glob matches."""
        real = await self._readable(path)
        names = await self._as_named(lambda: self.inner.list_dir(real), real, path)
        kept = [
            name
            for name in names
            if self.policy.denied_by(posixpath.join(path, name)) is None
            and self.policy.denied_by(posixpath.join(real, name)) is None
        ]
        identities = self.identities
        if identities is None or not identities.needed(True) or not kept:
            return kept
        refused = await trio.to_thread.run_sync(
            identities.refused, [(name, posixpath.join(real, name)) for name in kept]
        )
        return [name for name in kept if name not in refused]

    async def mkdir(self, path: str) -> None:
        """The wrapped ``mkdir`` of the resolved path, if it may be written."""
        real = await self._writable(path)
        await self._as_named(lambda: self.inner.mkdir(real), real, path)

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        """The wrapped ``run_rg``, after read checks of ``cwd`` and the search paths, with the
        denied globs excluded and denied files filtered from the output (see the module)."""
        pairs: list[tuple[str, str]] = []
        for path in [posixpath.normpath(cwd), *_search_paths(args, cwd)]:
            real = await self._resolve(path)
            self._require(self.policy.check_read(real, path), path)
            pairs.append((path, real))
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        identities = self.identities
        if identities is not None and identities.needed(True):
            decisions = await trio.to_thread.run_sync(
                lambda: [identities.path_decision(real, "reading", path) for path, real in pairs]
            )
            for (path, _), decision in zip(pairs, decisions, strict=True):
                self._require(decision, path)
        output = await self.inner.run_rg(_with_excludes(args, self.policy.rg_exclude_globs()), cwd)
        follow = any(a in _FOLLOW_FLAGS for a in args)
        cache: dict[str, bool] = {}
        resolved_names: dict[str, str] = {}

        async def allowed(name: str) -> bool:
            named = posixpath.normpath(posixpath.join(cwd, name))
            if named not in cache:
                real = named
                if follow:
                    real = await self._resolve(named)
                else:
                    for lexical, resolved in pairs:
                        if named == lexical or named.startswith(lexical.rstrip("/") + "/"):
                            real = resolved + named[len(lexical) :]
                            break
                cache[named] = self.policy.check_read(real, named).allowed
                if cache[named]:
                    resolved_names[named] = real
            return cache[named]

        stdout = output.stdout
        mode = _output_mode(args)
        errors = [(line, _file_error(line)) for line in output.stderr.split(b"\n")]
        if identities is not None and identities.needed(True):
            # first the names by path, then what they are by identity (one thread hop)
            if mode is not None:
                await _filter(mode, stdout, allowed)
            for _, name in errors:
                if name is not None:
                    await allowed(name)
            refused = await trio.to_thread.run_sync(identities.refused, resolved_names.items())
            for named in refused:
                cache[named] = False
        if mode is not None:
            stdout = await _filter(mode, stdout, allowed)
        # ripgrep's complaint about a file it may not read (a masked name in a sandbox) names
        # a refused file: left out, and the exit code is the search's without it
        kept = [line for line, name in errors if name is None or await allowed(name)]
        exit_code = output.exit_code
        if len(kept) < len(errors) and exit_code == 2 and not b"".join(kept).strip():
            found = b'"type":"match"' in stdout if mode == "json" else bool(stdout)
            exit_code = 0 if found else 1
        return CommandOutput(
            exit_code=exit_code,
            stdout=stdout,
            stderr=b"\n".join(kept),
            truncated=output.truncated,
        )


_RG_FILE_ERROR = re.compile(r"(?:rg: )?(.+?): [^:]*\(os error \d+\)")


def _file_error(line: bytes) -> str | None:
    """The file a line of ripgrep's stderr complains about (``rg: PATH: Permission denied (os
    error 13)``), or ``None``."""
    found = _RG_FILE_ERROR.fullmatch(line.decode("utf-8", "surrogateescape"))
    return found.group(1) if found else None


def _output_mode(args: Sequence[str]) -> str | None:
    """How ripgrep's output names files: ``"json"``, ``"lines"`` (``--null --line-number``),
    ``"files"`` (``--files``; ``"files0"`` with ``--null``), or ``None`` (not filtered)."""
    if "--json" in args:
        return "json"
    if "--null" in args and "--line-number" in args:
        return "lines"
    if _FILES_FLAG in args:
        return "files0" if ("--null" in args or "-0" in args) else "files"
    return None


async def _filter(mode: str, stdout: bytes, allowed: Callable[[str], Awaitable[bool]]) -> bytes:
    """``stdout`` of ripgrep in ``mode`` (:func:`_output_mode`) without what ``allowed``
    refuses."""
    if mode == "json":
        return await _filter_json(stdout, allowed)
    if mode == "lines":
        return await _filter_lines(stdout, allowed)
    separator = b"\0" if mode == "files0" else b"\n"
    kept = [
        record
        for record in stdout.split(separator)
        if record and await allowed(record.decode("utf-8", "surrogateescape"))
    ]
    return b"".join(record + separator for record in kept)


async def _filter_lines(stdout: bytes, allowed: Callable[[str], Awaitable[bool]]) -> bytes:
    """``rg --null --line-number`` output (grep's ``PATH\\0LINE:TEXT`` records) without the
    records of refused files, and without ripgrep's own notices (they name files too)."""
    kept = bytearray()
    for record in iter_rg_records(stdout):
        if record.path is not None and await allowed(
            record.path.decode("utf-8", "surrogateescape")
        ):
            kept += stdout[record.start : record.end]
    return bytes(kept)


async def _filter_json(stdout: bytes, allowed: Callable[[str], Awaitable[bool]]) -> bytes:
    """``rg --json`` output without the events (begin, match, context, end) of refused files."""
    kept = []
    for line in stdout.split(b"\n"):
        if line.strip():
            try:
                name = _json_path(parse_json(line))
            except ValueError:
                name = None
            if name is not None and not await allowed(name):
                continue
        kept.append(line)
    return b"\n".join(kept)


__all__ = ["GuardedFileOperations", "PathDenied"]
