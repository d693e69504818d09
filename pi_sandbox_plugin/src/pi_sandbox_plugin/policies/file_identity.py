"""Denied files and pi's own files recognised by what they are (device and inode), whatever
name leads to them: a hard link, a bind mount, ``/proc/self/fd/N``, ``/dev/fd/N``, a symlink
swapped in while a tool was opening the file.

The path policy (:mod:`pi_sandbox_plugin.policies.path_policy`) judges names. A name is not the file: a
hard link gives ``.env``'s inode a second name that no ``deny_paths`` pattern matches, a bind
mount shows it at a second place, and a component swapped for a symlink between the check and
the ``open`` leads elsewhere. :class:`FileIdentities` closes these for the file systems of this
machine (the ``local`` and ``bwrap`` backends):

* **what was opened** (:meth:`FileIdentities.check_opened`, called by
  :class:`~pi_core.backends.LocalFileOperations` on the descriptor that is then read, before a
  byte is read): the kernel's own name of the descriptor (``/proc/self/fd/N``) must be the
  path that was checked, else that name is checked too (a symlink swapped in, a deleted file);
  then the file's identity is checked as below;
* **identity** (:meth:`FileIdentities.decision`): a file whose identity is one of pi's own
  files (:attr:`pi_core.SessionContext.protected_files`) is refused as that file; a file with
  more than one name (``st_nlink > 1``), or shown through a bind mount, or opened under another
  name, is looked up in the **index** of the denied files' identities; a file with one name,
  on no bind mount, opened at the name that was checked, *is* the file the name check judged,
  so it costs nothing more (one ``readlink``);
* **the index** (built on its first use, so a session that never meets a file with several
  names never builds it): every entry under the workspace and under the fixed folder of each
  absolute pattern (``~/.aws`` of ``~/.aws/**``; at most :data:`WALK_LIMIT` entries, never
  following a symlink, never in ``/proc``, ``/sys``, ``/dev``), recording the identity of each
  entry a pattern matches (and of everything below a matched folder), and the other names found
  of each denied file with several links. It is rebuilt when the mount table changes
  (``poll`` on ``/proc/self/mountinfo``), when a file with several names changed since it was
  built (``link(2)`` updates the inode's ``ctime``), when an entry no longer names the inode
  it recorded (an inode number reused), and, for the bwrap masks, when a denied file's link
  count changed;
* **bwrap's masks** (:meth:`FileIdentities.mask_plan`): every name of every denied file found
  (the matched entries, their other hard-link names, and the places a bind mount shows them),
  pi's hidden files; pi's other own files are mounted read-only. A denied file with more links
  than names found cannot be hidden under its other names: the sandbox refuses to start and
  says so (:attr:`MaskPlan.problems`).

What it cannot see: denied entries past :data:`WALK_LIMIT`; a renamed file (it is judged by
its new name); files on another machine or in a container (ssh, container, Ray: their paths are
judged by name only).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import posixpath
import re
import select
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pi_core import ProtectedFile
from pi_sandbox_plugin.policies.guarded_files import PathDenied
from pi_sandbox_plugin.policies.path_policy import (
    ALLOWED,
    PathDecision,
    PathPolicy,
    protected_reason,
)

WALK_LIMIT = 50_000
"""Most directory entries the index walks (the workspace first, then the patterns' folders)."""

MOUNTINFO = "/proc/self/mountinfo"

_SKIPPED = ("/proc", "/sys", "/dev")
_GLOB = re.compile(r"[*?\[]")
_CTIME_SLACK_NS = 50_000_000  # the file system's clock may lag the one that timed the build
_OCTAL = re.compile(r"\\([0-7]{3})")

Identity = tuple[int, int]


def _under(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def _identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino)


# -- the mount table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``: the ``device`` (``major:minor``), the ``root``
    of the file system it shows and the mount ``point``."""

    device: str
    root: str
    point: str


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a ``mountinfo`` text (octal escapes of spaces and tabs decoded)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        root, point = (_OCTAL.sub(lambda m: chr(int(m.group(1), 8)), f) for f in fields[3:5])
        mounts.append(Mount(fields[2], root, point))
    return mounts


class MountTable:
    """This process's mounts, read again only when the kernel says they changed (``poll`` on
    ``/proc/self/mountinfo``); without that file, no mounts and never a change."""

    def __init__(self, path: str = MOUNTINFO) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._poll: select.poll | None = None
        self.mounts: list[Mount] = []
        self.bind_points: tuple[str, ...] = ()
        try:
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLPRI | select.POLLERR)
        self._read()

    def _read(self) -> None:
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self._fd, 65536):
            chunks.append(chunk)
        self.mounts = parse_mountinfo(b"".join(chunks).decode("utf-8", "surrogateescape"))
        self.bind_points = tuple(m.point for m in self.mounts if m.root != "/")

    def close(self) -> None:
        """Stop watching (the descriptor is closed; no more changes are seen)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd, self._poll = None, None

    def changed(self) -> bool:
        """Whether the mount table changed since the last call (then it is read again)."""
        if self._poll is None:
            return False
        with self._lock:
            if self._poll is None or not self._poll.poll(0):
                return False
            self._read()
            return True

    def shown_by_bind_mount(self, path: str) -> bool:
        """Whether ``path`` is at or below a mount showing part of a file system (a bind
        mount of a folder or a file: its root is not ``/``)."""
        return any(_under(path, point) for point in self.bind_points)

    def aliases(self, path: str) -> list[str]:
        """The other places the mounts show ``path`` (absolute, resolved) at: for the mount
        ``path`` is on, every other mount of the same device whose root holds it."""
        home = max(
            (m for m in self.mounts if _under(path, m.point)),
            key=lambda m: len(m.point),
            default=None,
        )
        if home is None:
            return []
        inside = path[len(home.point.rstrip("/")) :] if home.point != "/" else path
        on_device = home.root.rstrip("/") + inside if inside else home.root
        found = []
        for mount in self.mounts:
            if mount.device != home.device or mount is home or not _under(on_device, mount.root):
                continue
            rest = on_device[len(mount.root.rstrip("/")) :] if mount.root != "/" else on_device
            alias = mount.point.rstrip("/") + rest if rest else mount.point
            if alias != path:
                found.append(alias)
        return found


# -- the index of the denied files ---------------------------------------------------------------


@dataclass(frozen=True)
class DeniedFile:
    """A file or folder a ``deny_paths`` ``pattern`` denies, by the ``path`` it was found at."""

    path: str
    pattern: str
    directory: bool = False


@dataclass
class _Index:
    built_ns: int
    files: dict[Identity, DeniedFile] = field(default_factory=dict)
    links: dict[Identity, int] = field(default_factory=dict)
    names: dict[Identity, list[str]] = field(default_factory=dict)
    tops: list[str] = field(default_factory=list)
    complete: bool = True
    rebuilt_for: set[tuple[int, int, int]] = field(default_factory=set)


def _fixed_folder(pattern: str) -> str:
    """The part of an absolute pattern before its first glob component (``/h/.aws`` of
    ``/h/.aws/**``)."""
    parts = []
    for part in pattern.rstrip("/").split("/")[1:]:
        if _GLOB.search(part):
            break
        parts.append(part)
    return "/" + "/".join(parts)


class _Matcher:
    """``deny_paths`` on the absolute paths the walk finds: the pattern's text or ``None``."""

    def __init__(self, policy: PathPolicy) -> None:
        self.workspace = policy.real_workspace.rstrip("/") + "/"
        self.relative = [p for p in policy.deny_patterns if not p.absolute]
        self.absolute = [p for p in policy.deny_patterns if p.absolute]

    def __call__(self, path: str) -> str | None:
        if path.startswith(self.workspace):
            rel = path[len(self.workspace) :]
            for pattern in self.relative:
                if pattern.matches(rel):
                    return pattern.text
        for pattern in self.absolute:
            if pattern.matches(path.lstrip("/")):
                return pattern.text
        return None


def _build_index(policy: PathPolicy, limit: int) -> _Index:
    index = _Index(built_ns=time.time_ns() - _CTIME_SLACK_NS)
    match = _Matcher(policy)
    roots = [policy.real_workspace]
    for deny in policy.deny_patterns:
        if deny.absolute:
            text = deny.text.strip()
            if text == "~" or text.startswith("~/"):
                text = policy.home.rstrip("/") + text[1:]
            roots.append(posixpath.normpath(_fixed_folder(text)))
    roots = [r for i, r in enumerate(roots) if not any(_under(r, o) for o in roots[:i])]
    others: dict[int, list[str]] = {}
    seen = 0

    def record(path: str, pattern: str, st: os.stat_result, top: bool) -> None:
        directory = stat.S_ISDIR(st.st_mode)
        if not (directory or stat.S_ISREG(st.st_mode)):
            return
        key = _identity(st)
        index.files.setdefault(key, DeniedFile(path, pattern, directory))
        if top:
            index.tops.append(path)
        if not directory:
            index.links[key] = st.st_nlink
            index.names.setdefault(key, []).append(path)

    for root in roots:
        if any(_under(root, skipped) for skipped in _SKIPPED):
            continue
        try:
            st = os.lstat(root)
        except OSError:
            continue
        pattern = match(root)
        if pattern is not None:
            record(root, pattern, st, True)
        if not stat.S_ISDIR(st.st_mode) and not (root == policy.real_workspace):
            continue
        queue = collections.deque([(root, pattern)])
        while queue and index.complete:
            directory, inherited = queue.popleft()
            try:
                entries = os.scandir(directory)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        index.complete = False
                        break
                    path = entry.path
                    pattern = inherited or match(path)
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if pattern is not None:
                            record(path, pattern, entry.stat(follow_symlinks=False), not inherited)
                        elif entry.is_file(follow_symlinks=False):
                            others.setdefault(entry.inode(), []).append(path)
                    except OSError:
                        continue
                    if is_dir and not any(_under(path, s) for s in _SKIPPED):
                        queue.append((path, pattern))
    for key, nlink in index.links.items():
        if nlink <= len(index.names[key]):
            continue
        for path in others.get(key[1], []):
            with contextlib.suppress(OSError):
                if _identity(os.lstat(path)) == key:
                    index.names[key].append(path)
    return index


# -- the checks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskPlan:
    """What a bwrap sandbox must do: ``hidden`` paths (each an empty read-only folder or
    ``/dev/null``), ``read_only`` paths (pi's own files under a writable mount), and
    ``problems``: why some denied file cannot be hidden (the sandbox must not start)."""

    hidden: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


class FileIdentities:
    """The identity checks of one session on this machine's file system (see the module):
    ``policy`` gives the patterns, the workspace and pi's own files (``policy.protected``);
    ``limit``: the index's walk; ``mountinfo``: the mount table watched. Thread-safe: the
    checks run in worker threads."""

    def __init__(
        self, policy: PathPolicy, *, limit: int = WALK_LIMIT, mountinfo: str = MOUNTINFO
    ) -> None:
        self.policy = policy
        self.limit = limit
        self.mountinfo = mountinfo
        self._lock = threading.RLock()
        self._index: _Index | None = None
        self.builds = 0
        """How many times the index was built (for tests and statistics)."""

    @functools.cached_property
    def mounts(self) -> MountTable:
        """The mount table, read on first use (a session that never asks pays nothing)."""
        return MountTable(self.mountinfo)

    async def aclose(self) -> None:
        """Close the mount table's descriptor (at the end of the session)."""
        if "mounts" in self.__dict__:
            self.mounts.close()

    # -- the index ---------------------------------------------------------------------------

    def _fresh(self) -> _Index:
        if self.mounts.changed() or self._index is None:
            self._index = _build_index(self.policy, self.limit)
            self.builds += 1
        return self._index

    def _rebuild(self) -> _Index:
        self._index = None
        return self._fresh()

    def denied_file(self, st: os.stat_result) -> DeniedFile | None:
        """The denied file that ``st`` (a ``stat`` result) is, by identity, or ``None``. Not
        in the index, a file with several names that changed since the index was built (a new
        link to a denied file made since) has the index built again, once per change."""
        key = _identity(st)
        with self._lock:
            index = self._fresh()
            found = index.files.get(key)
            change = (st.st_dev, st.st_ino, st.st_ctime_ns)
            if (
                found is None
                and st.st_nlink > 1
                and not stat.S_ISDIR(st.st_mode)
                and st.st_ctime_ns >= index.built_ns
                and change not in index.rebuilt_for
            ):
                rebuilt_for = index.rebuilt_for | {change}
                index = self._rebuild()
                index.rebuilt_for |= rebuilt_for
                found = index.files.get(key)
            if found is not None and not self._still(found, key):
                found = self._rebuild().files.get(key)
            return found

    @staticmethod
    def _still(found: DeniedFile, key: Identity) -> bool:
        try:
            return _identity(os.lstat(found.path)) == key
        except OSError:
            return False

    # -- decisions ---------------------------------------------------------------------------

    def _protected(self, st: os.stat_result, reading: bool) -> ProtectedFile | None:
        key = _identity(st)
        for path, protected in list(self.policy.protected.items()):
            if reading and not protected.hidden:
                continue
            with contextlib.suppress(OSError):
                if _identity(os.stat(path)) == key:
                    return protected
        return None

    def needed(self, reading: bool) -> bool:
        """Whether a check can refuse anything: denied patterns, or (for a read) a hidden
        file of pi's, or (for a write) any."""
        if self.policy.deny_patterns:
            return True
        return any(not reading or p.hidden for p in list(self.policy.protected.values()))

    def decision(
        self,
        path: str,
        st: os.stat_result,
        verb: str,
        *,
        named: str | None = None,
        look: bool = False,
    ) -> PathDecision:
        """May the file ``st`` (found at ``path``, absolute and resolved) be read or written
        (``verb``: ``"reading"``, ``"writing"``)? By identity: one of pi's own files, or a
        denied file found under another name. The index is asked only when the file may have
        another name: several links, shown by a bind mount, or ``look``. ``named``: the path
        as the tool named it (for the reason)."""
        shown = f"'{named or path}'"
        own = self._protected(st, verb == "reading")
        if own is not None:
            if own.path != path:
                shown += f" (the same file as '{own.path}')"
            return PathDecision(False, protected_reason(verb, shown, own))
        if not self.policy.deny_patterns:
            return ALLOWED
        several = st.st_nlink != 1 and not stat.S_ISDIR(st.st_mode)
        if not (several or look or self.mounts.shown_by_bind_mount(path)):
            return ALLOWED
        found = self.denied_file(st)
        if found is None or found.path == path:
            return ALLOWED
        return PathDecision(
            False,
            f"{verb.capitalize()} {shown} (the same file as '{found.path}') is denied by the "
            f"sandbox path policy (deny_paths pattern {found.pattern!r})",
        )

    def path_decision(self, path: str, verb: str, named: str | None = None) -> PathDecision:
        """:meth:`decision` for the file at ``path`` (``stat``, symlinks followed; a missing
        file is allowed: there is nothing to judge). Blocking."""
        if not self.needed(verb == "reading"):
            return ALLOWED
        try:
            st = os.stat(path)
        except OSError:
            return ALLOWED
        return self.decision(path, st, verb, named=named)

    def refused(self, paths: Iterable[tuple[str, str]]) -> set[str]:
        """Of ``(named, resolved)`` pairs (search results, directory entries), the named ones
        :meth:`path_decision` refuses for reading. Blocking: one ``stat`` each."""
        if not self.needed(True):
            return set()
        return {
            named for named, real in paths if not self.path_decision(real, "reading", named).allowed
        }

    def check_opened(self, path: str, fd: int, st: os.stat_result) -> None:
        """:class:`~pi_core.backends.LocalFileOperations`' ``check_opened``: raise
        :class:`~pi_sandbox_plugin.policies.guarded_files.PathDenied` unless the file open on ``fd``
        (``st``: its ``fstat``), opened as ``path``, may be read (see the module)."""
        if not self.policy.deny_patterns:  # pi's hidden files: by identity alone
            decision = self.decision(path, st, "reading")
            if not decision.allowed:
                raise PathDenied(decision.reason, path)
            return
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            opened = None
        moved = opened != path
        if st.st_nlink == 0:
            raise PathDenied(
                f"Reading '{path}' is denied by the sandbox path policy: the file it opened "
                "has been deleted, so its name cannot be checked",
                path,
            )
        if moved and opened is not None:
            decision = self.policy.check_read(opened, path)
            if not decision.allowed:
                raise PathDenied(decision.reason, path)
        decision = self.decision(opened or path, st, "reading", named=path, look=moved)
        if not decision.allowed:
            raise PathDenied(decision.reason, path)

    def check_replaced(self, path: str, st: os.stat_result) -> None:
        """:class:`~pi_core.backends.LocalFileOperations`' ``check_replaced``: raise
        :class:`~pi_sandbox_plugin.policies.guarded_files.PathDenied` unless the existing file ``st`` at
        ``path`` may be replaced."""
        if not self.needed(False):
            return
        decision = self.decision(path, st, "writing")
        if not decision.allowed:
            raise PathDenied(decision.reason, path)

    # -- bwrap -------------------------------------------------------------------------------

    def mask_plan(self, writable: Sequence[str] = ()) -> MaskPlan:
        """What a bwrap sandbox hides and mounts read-only (see :class:`MaskPlan`): every name
        found of every denied file (and where a bind mount shows it), pi's hidden files; pi's
        other own files that exist below one of the ``writable`` mounts. Blocking: a few
        ``lstat`` calls, and the index's walk when it must be rebuilt."""
        hidden: dict[str, None] = {}
        problems = []
        if self.policy.deny_patterns:
            with self._lock:
                index = self._fresh()
                if self._links_changed(index):
                    index = self._rebuild()
                tops = list(index.tops)
                for key, names in index.names.items():
                    extra = [n for n in names if not any(_under(n, t) for t in tops)]
                    tops.extend(extra)
                    found = index.files[key]
                    if index.links[key] > len(names):
                        problems.append(
                            f"'{found.path}' (deny_paths pattern {found.pattern!r}) has "
                            f"{index.links[key]} names (hard links) and only {len(names)} "
                            "were found in the workspace and the patterns' folders: a "
                            "sandboxed command could read it under another name; remove "
                            "the other links"
                        )
                for path in tops:
                    hidden[path] = None
                    for alias in self.mounts.aliases(path):
                        if os.path.lexists(alias):
                            hidden[alias] = None
        read_only = []
        for path, protected in list(self.policy.protected.items()):
            if protected.hidden:
                if os.path.lexists(path):
                    hidden[path] = None
            elif os.path.exists(path) and any(_under(path, w) for w in writable):
                read_only.append(path)
        return MaskPlan(tuple(hidden), tuple(read_only), tuple(problems))

    @staticmethod
    def _links_changed(index: _Index) -> bool:
        for key, names in index.names.items():
            try:
                st = os.lstat(names[0])
            except OSError:
                return True
            if _identity(st) != key or st.st_nlink != index.links[key]:
                return True
        return False


__all__ = [
    "MOUNTINFO",
    "WALK_LIMIT",
    "DeniedFile",
    "FileIdentities",
    "MaskPlan",
    "Mount",
    "MountTable",
    "parse_mountinfo",
]
