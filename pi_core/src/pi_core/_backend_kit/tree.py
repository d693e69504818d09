"""A workspace as checkpoints see it: every entry's kind, permission bits, stat and symlink
target, the bytes of its files, and the changes since the last look.

:class:`WorkspaceTree` is what a backend gives checkpoints for the session's working directory
(``FileOperations.checkpoint_tree(root)``, an optional method: a backend without it does not
support checkpoints). Its methods are blocking and run in a worker thread; paths are relative to
the root, ``/``-separated, never ``.``/``..``. :class:`LocalWorkspaceTree` is the one for a
workspace on this machine (the local backend, bubblewrap's bind-mounted workspace, a container
whose workspace is mounted from here).

**Change tracking.** A :class:`LocalWorkspaceTree` that has been scanned with ``watch=True``
watches every directory it listed with inotify (Linux), so :meth:`LocalWorkspaceTree.changed`
names the paths that may have changed since it was last asked, without reading the tree again:
a shell command that changes nothing costs a read of an empty event queue, whatever the size of
the workspace. Without inotify (another system, the watch limit reached, the event queue
overflowed) ``changed()`` returns ``None`` and the caller scans the whole tree, comparing each
entry's stat (size, mtime, ctime, inode, mode) with what it knew, as git's index does.

**Restoring never follows a symlink.** Every write, removal and mode change opens the path one
component at a time from the root with ``O_NOFOLLOW``, so a directory swapped for a symlink to
somewhere outside the workspace fails the operation (``NotADirectoryError``/``OSError``
``ELOOP``) instead of writing through it; a symlink is restored as a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

EntryKind = Literal["file", "dir", "symlink", "other"]

ALWAYS_EXCLUDED = (".git",)
"""Names excluded from every workspace tree, at any depth (git's own data)."""


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of a workspace: ``kind``, permission ``mode`` bits (``0o7777``), ``size``,
    ``mtime_ns``, ``ctime_ns`` and ``ino`` (the stat that says whether it may have changed) and,
    for a symlink, its ``target`` (never followed)."""

    kind: EntryKind
    mode: int
    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0
    target: str | None = None

    def same_stat(self, other: TreeEntry | None) -> bool:
        """Whether ``other`` has the same kind, mode, size, times and inode (a file whose stat
        is unchanged is taken to be unchanged, as git's index does)."""
        return (
            other is not None
            and self.kind == other.kind
            and self.mode == other.mode
            and self.size == other.size
            and self.mtime_ns == other.mtime_ns
            and self.ctime_ns == other.ctime_ns
            and self.ino == other.ino
            and self.target == other.target
        )


def entry_from_stat(st: os.stat_result, target: str | None = None) -> TreeEntry:
    """The :class:`TreeEntry` of an ``lstat`` result (``target``: a symlink's)."""
    mode = st.st_mode
    kind: EntryKind
    if stat.S_ISREG(mode):
        kind = "file"
    elif stat.S_ISDIR(mode):
        kind = "dir"
    elif stat.S_ISLNK(mode):
        kind = "symlink"
    else:
        kind = "other"
    return TreeEntry(
        kind,
        stat.S_IMODE(mode),
        st.st_size if kind != "dir" else 0,
        st.st_mtime_ns if kind != "dir" else 0,
        st.st_ctime_ns if kind != "dir" else 0,
        st.st_ino,
        target,
    )


_JUDGED_PATHS = 4096
"""Most paths a :class:`PathFilter` remembers the judgement of."""


class PathFilter:
    """Which relative paths a workspace tree leaves out: any component named in
    :data:`ALWAYS_EXCLUDED`, and each pattern of ``patterns``: one without ``/`` matches a
    component at any depth (``node_modules``, ``*.pyc``), one with ``/`` the path from the root
    (``build/out``, ``docs/*.tmp``); shell globs (``*``, ``?``, ``[...]``) allowed; a trailing
    ``/`` is ignored. What a pattern excludes, everything below it is excluded with it."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        names: list[str] = list(ALWAYS_EXCLUDED)
        paths: list[str] = []
        for raw in patterns:
            pattern = raw.strip().strip("/")
            if not pattern:
                continue
            (paths if "/" in pattern else names).append(pattern)
        self.names = tuple(dict.fromkeys(names))
        self.paths = tuple(dict.fromkeys(paths))
        self._literal_names = frozenset(n for n in self.names if not _is_glob(n))
        self._glob_names = tuple(n for n in self.names if _is_glob(n))
        self._judged: dict[str, bool] = {}
        """:meth:`excludes` of the paths asked so far (the checkpoints ask it of a batch's one
        file at each of its calls), at most :data:`_JUDGED_PATHS` of them."""

    def excludes_name(self, name: str) -> bool:
        """Whether a component named ``name`` is excluded wherever it is."""
        if name in self._literal_names:
            return True
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self._glob_names)

    def excludes(self, rel: str) -> bool:
        """Whether ``rel`` (or a directory above it) is excluded."""
        judged = self._judged.get(rel)
        if judged is None:
            judged = self._excludes(rel)
            if len(self._judged) < _JUDGED_PATHS:
                self._judged[rel] = judged
        return judged

    def _excludes(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(self.excludes_name(part) for part in parts):
            return True
        if self.paths:
            prefix = ""
            for part in parts:
                prefix = f"{prefix}/{part}" if prefix else part
                if any(fnmatch.fnmatchcase(prefix, pattern) for pattern in self.paths):
                    return True
        return False

    def _excludes_child(self, parent: str, name: str) -> bool:
        """:meth:`excludes` of ``parent/name`` when ``parent`` is known not to be excluded."""
        if self.excludes_name(name):
            return True
        if self.paths:
            rel = f"{parent}/{name}" if parent else name
            return any(fnmatch.fnmatchcase(rel, pattern) for pattern in self.paths)
        return False


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


@runtime_checkable
class WorkspaceTree(Protocol):
    """What checkpoints read and restore of a workspace (see the module). Every method blocks
    and is called from a worker thread, one call at a time; ``rel`` is a path relative to the
    root. Errors are ``OSError`` with ``errno`` set.

    ``location`` names where the files are (``"local"`` for this machine), so two backends
    that show one directory from different places keep separate checkpoints.
    """

    root: str
    location: str

    def scan(self, rel: str = "", *, watch: bool = False) -> Iterator[tuple[str, TreeEntry]]:
        """Every entry under ``rel`` (``""``: the whole tree; ``rel`` itself not included),
        excluded paths left out, symlinks not followed. ``watch``: also start watching each
        directory listed (:meth:`changed`)."""
        ...

    def lstat(self, rel: str) -> TreeEntry | None:
        """The entry at ``rel`` (not followed), ``None`` when nothing is there."""
        ...

    def read(self, rel: str) -> bytes:
        """The bytes of the regular file at ``rel`` (not followed)."""
        ...

    def digest(self, rel: str) -> tuple[str, int]:
        """The SHA-256 (hex) and size of the regular file at ``rel``, read in pieces (a file
        too large to keep is still hashed)."""
        ...

    def changed(self) -> set[str] | None:
        """The paths that may have changed since the last call (those of directories created
        or moved in stand for everything below them), or ``None`` when that is not known (no
        watch yet, or it was lost): then scan everything."""
        ...

    def excludes(self, rel: str) -> bool:
        """Whether ``rel`` is left out of the tree."""
        ...

    def remove(self, rel: str) -> None:
        """Remove the file, symlink or empty directory at ``rel``; nothing there is fine."""
        ...

    def mkdir(self, rel: str, mode: int) -> None:
        """Create the directory ``rel`` with ``mode`` (an existing directory gets ``mode``)."""
        ...

    def write(self, rel: str, data: bytes, mode: int) -> None:
        """Make ``rel`` a regular file holding ``data`` with ``mode``, atomically (a temporary
        file beside it, synced, renamed over it); whatever was at ``rel`` (a file, a symlink)
        is replaced, never followed."""
        ...

    def symlink(self, rel: str, target: str) -> None:
        """Make ``rel`` a symlink to ``target`` (replacing a file or symlink there)."""
        ...

    def chmod(self, rel: str, mode: int) -> None:
        """Set the permission bits of the file or directory ``rel`` (a symlink has none)."""
        ...

    def close(self) -> None:
        """Stop watching; release what the tree holds."""
        ...


_WATCH_EVENTS = (
    0x00000002  # IN_MODIFY
    | 0x00000004  # IN_ATTRIB
    | 0x00000008  # IN_CLOSE_WRITE
    | 0x00000040  # IN_MOVED_FROM
    | 0x00000080  # IN_MOVED_TO
    | 0x00000100  # IN_CREATE
    | 0x00000200  # IN_DELETE
    | 0x00000400  # IN_DELETE_SELF
    | 0x00000800  # IN_MOVE_SELF
    | 0x01000000  # IN_ONLYDIR
    | 0x02000000  # IN_DONT_FOLLOW
    | 0x04000000  # IN_EXCL_UNLINK
)
_IN_MOVED_FROM = 0x00000040
_IN_MOVE_SELF = 0x00000800
_IN_DELETE_SELF = 0x00000400
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ISDIR = 0x40000000


class _Watcher:
    """inotify watches on the directories of one tree (see the module)."""

    def __init__(self, notify: Any) -> None:
        self.notify = notify
        self.dirs: dict[int, str] = {}
        self.wds: dict[str, int] = {}
        self.lost = False

    @classmethod
    def open(cls) -> _Watcher | None:
        try:
            import inotify_simple
        except ImportError:  # another system than Linux
            return None
        try:
            return cls(inotify_simple.INotify(nonblocking=True))
        except OSError:  # too many inotify instances
            return None

    def add(self, path: str, rel: str) -> None:
        if self.lost:
            return
        try:
            wd = self.notify.add_watch(path, _WATCH_EVENTS)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                return  # gone or unreadable already: the scan reports what it finds
            self.lost = True  # the watch limit (ENOSPC): from now on, scan everything
            return
        old = self.dirs.get(wd)
        if old is not None and old != rel:
            self.wds.pop(old, None)
        self.dirs[wd] = rel
        self.wds[rel] = wd

    def forget(self, rel: str) -> None:
        """Stop watching ``rel`` and every directory below it (moved away or deleted)."""
        prefix = rel + "/"
        for name in [d for d in self.wds if d == rel or d.startswith(prefix) or not rel]:
            wd = self.wds.pop(name)
            self.dirs.pop(wd, None)
            with contextlib.suppress(OSError):
                self.notify.rm_watch(wd)

    def drain(self) -> set[str] | None:
        changed: set[str] = set()
        while True:
            try:
                events = list(self.notify.read(timeout=0))
            except OSError:
                self.lost = True
                break
            if not events:
                break
            for event in events:
                if event.mask & _IN_Q_OVERFLOW:
                    self.lost = True
                    continue
                base = self.dirs.get(event.wd)
                if base is None:
                    continue
                if event.mask & _IN_IGNORED:
                    self.dirs.pop(event.wd, None)
                    if self.wds.get(base) == event.wd:
                        del self.wds[base]
                    continue
                if event.name:
                    path = f"{base}/{event.name}" if base else event.name
                    changed.add(path)
                    if event.mask & _IN_ISDIR and event.mask & _IN_MOVED_FROM:
                        self.forget(path)
                else:
                    changed.add(base)
                    if event.mask & (_IN_MOVE_SELF | _IN_DELETE_SELF) and base:
                        self.forget(base)
                    elif event.mask & (_IN_MOVE_SELF | _IN_DELETE_SELF):
                        self.lost = True  # the root itself moved away
        if self.lost:
            return None
        changed.discard("")
        return changed

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.notify.close()


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):  # a directory opened with O_PATH cannot be synced
        os.fsync(fd)


class LocalWorkspaceTree:
    """A :class:`WorkspaceTree` on this machine's file system (see the module).

    ``root``: the workspace (absolute); ``exclude``: the :class:`PathFilter` patterns.
    """

    location = "local"

    def __init__(self, root: str, exclude: Sequence[str] = ()) -> None:
        self.root = os.path.abspath(root)
        self.filter = PathFilter(exclude)
        self._watcher: _Watcher | None = None
        self._watching = False

    # -- reading ----------------------------------------------------------------------------

    def _abs(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def excludes(self, rel: str) -> bool:
        """Whether ``rel`` is left out (:class:`PathFilter`)."""
        return self.filter.excludes(rel)

    def scan(self, rel: str = "", *, watch: bool = False) -> Iterator[tuple[str, TreeEntry]]:
        """Every entry below ``rel``, depth first; see :meth:`WorkspaceTree.scan`."""
        if watch and self._watcher is None and not self._watching:
            self._watcher = _Watcher.open()
        watcher = self._watcher if watch else None
        if watch:
            self._watching = True
        stack = [rel]
        filt = self.filter
        while stack:
            here = stack.pop()
            path = self._abs(here)
            if watcher is not None:
                watcher.add(path, here)  # before listing: nothing created meanwhile is missed
            try:
                it = os.scandir(path)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            with it:
                for item in it:
                    name = item.name
                    if filt._excludes_child(here, name):
                        continue
                    child = f"{here}/{name}" if here else name
                    try:
                        st = item.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    target = None
                    if stat.S_ISLNK(st.st_mode):
                        try:
                            target = os.readlink(item.path)
                        except OSError:
                            continue
                    entry = entry_from_stat(st, target)
                    yield child, entry
                    if entry.kind == "dir":
                        stack.append(child)

    def lstat(self, rel: str) -> TreeEntry | None:
        """The entry at ``rel``, not followed; ``None`` when missing (or below a file)."""
        path = self._abs(rel)
        try:
            st = os.lstat(path)
            target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
        except (FileNotFoundError, NotADirectoryError):
            return None
        return entry_from_stat(st, target)

    def _chunks(self, rel: str) -> Iterator[bytes]:
        fd = os.open(self._abs(rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", rel)
            while chunk := os.read(fd, 1 << 20):
                yield chunk
        finally:
            os.close(fd)

    def read(self, rel: str) -> bytes:
        """The bytes of the regular file ``rel`` (opened with ``O_NOFOLLOW``, never a FIFO)."""
        fd = os.open(self._abs(rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", rel)
            data = os.read(fd, st.st_size + 1)  # one read for what fits, more if it grew
            if len(data) <= st.st_size:
                return data
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def digest(self, rel: str) -> tuple[str, int]:
        """SHA-256 (hex) and size of the regular file ``rel``, read 1 MiB at a time."""
        hasher = hashlib.sha256()
        size = 0
        for chunk in self._chunks(rel):
            hasher.update(chunk)
            size += len(chunk)
        return hasher.hexdigest(), size

    def changed(self) -> set[str] | None:
        """What inotify reported since the last call (see :meth:`WorkspaceTree.changed`)."""
        if self._watcher is None:
            return None
        found = self._watcher.drain()
        if found is None:  # lost: the next scan(watch=True) watches anew
            self._watcher.close()
            self._watcher = None
            self._watching = False
        return found

    # -- restoring (never through a symlink) -------------------------------------------------

    def _parent(self, rel: str) -> tuple[int, str]:
        """A directory fd of ``rel``'s parent, opened component by component with
        ``O_NOFOLLOW``, and ``rel``'s last component."""
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise OSError(errno.EINVAL, "not a path inside the workspace", rel)
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                try:
                    next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except PermissionError:  # a directory without read permission: still a path
                    next_fd = os.open(part, _PATH_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def remove(self, rel: str) -> None:
        """Remove the file, symlink or empty directory ``rel`` (missing: nothing to do)."""
        try:
            fd, name = self._parent(rel)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            _fsync_dir(fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def mkdir(self, rel: str, mode: int) -> None:
        """Create the directory ``rel`` with ``mode`` (an existing one gets ``mode``)."""
        fd, name = self._parent(rel)
        try:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except FileExistsError:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    raise
            sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            try:
                os.fchmod(sub, mode)
            finally:
                os.close(sub)
            _fsync_dir(fd)
        finally:
            os.close(fd)

    def write(self, rel: str, data: bytes, mode: int) -> None:
        """Atomic replace of ``rel`` by a regular file (see :meth:`WorkspaceTree.write`)."""
        fd, name = self._parent(rel)
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            out = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=fd
            )
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.fchmod(out, mode)
                os.fsync(out)
            finally:
                os.close(out)
            os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            _fsync_dir(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise
        finally:
            os.close(fd)

    def symlink(self, rel: str, target: str) -> None:
        """Make ``rel`` a symlink to ``target`` (atomically replacing a file or symlink)."""
        fd, name = self._parent(rel)
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            os.symlink(target, temp, dir_fd=fd)
            try:
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
                raise
            _fsync_dir(fd)
        finally:
            os.close(fd)

    def chmod(self, rel: str, mode: int) -> None:
        """Set the permission bits of the file or directory ``rel`` (never through a symlink)."""
        fd, name = self._parent(rel)
        try:
            if not stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.chmod(name, mode, dir_fd=fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop watching."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        self._watching = False


def checkpoint_tree_of(
    operations: object, root: str, exclude: Sequence[str] = ()
) -> WorkspaceTree | None:
    """The :class:`WorkspaceTree` that ``operations`` (a ``FileOperations``) gives for ``root``
    through its optional ``checkpoint_tree(root, exclude)`` method, or ``None`` when it has
    none (the backend does not support checkpoints)."""
    method: Callable[..., WorkspaceTree | None] | None = getattr(
        operations, "checkpoint_tree", None
    )
    if method is None:
        return None
    return method(root, exclude)


__all__ = [
    "ALWAYS_EXCLUDED",
    "EntryKind",
    "LocalWorkspaceTree",
    "PathFilter",
    "TreeEntry",
    "WorkspaceTree",
    "checkpoint_tree_of",
    "entry_from_stat",
]
