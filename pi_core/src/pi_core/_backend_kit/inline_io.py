"""When a short file call may run in the event loop's thread instead of a worker thread.

A worker-thread hop costs a thread wake-up, a wake-up of the event loop and a GIL hand-over:
more than the ``stat`` and the read of a small file that is in the page cache. So the local
backend first tries such a call in the event loop's thread, **without waiting for anything**,
and hands it to a worker thread when it would wait:

* a path is looked up in the event loop's thread only while every mount of this process's
  mount namespace has a type known to answer a lookup from this machine
  (:data:`LOCAL_TYPES`): one network, FUSE or automount file system (``nfs``, ``cifs``,
  ``fuse.sshfs``, ``autofs``, ...), whose lookups can hang, sends every call to the worker
  threads. The mount table is read again at most once a second;
* file data is read with ``preadv2(RWF_NOWAIT)``, which the kernel answers only from the page
  cache: a file whose data is not cached, or a file system that cannot answer so (``tmpfs``,
  ``proc``, ``sysfs``, ...) raises :class:`WouldBlock`, and the whole call runs again in a
  worker thread.

Linux only (``os.RWF_NOWAIT``); elsewhere every call takes the worker thread.
"""

from __future__ import annotations

import os
import time

LOCAL_TYPES = frozenset(
    {
        # file systems on a local device, or in memory
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs",
        "nilfs2", "vfat", "msdos", "exfat", "ntfs3", "hfsplus", "udf", "iso9660", "squashfs",
        "erofs", "overlay", "tmpfs", "ramfs",
        # the kernel's own
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "hugetlbfs",
        "debugfs", "tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl", "efivarfs",
        "binfmt_misc", "nsfs", "selinuxfs", "rpc_pipefs", "nfsd",
    }
)  # fmt: skip
"""Mount types whose lookups never wait on another machine or on a user-space server."""

MOUNTINFO = "/proc/self/mountinfo"
RECHECK_SECONDS = 1.0

_NOWAIT_FLAG: int | None = getattr(os, "RWF_NOWAIT", None)
_checked_at = float("-inf")
_allowed = False


class WouldBlock(Exception):
    """The call would wait: run it in a worker thread."""


def mount_types(mountinfo: str) -> list[str]:
    """The file-system type of each line of a ``/proc/PID/mountinfo`` text (the first field
    after the `` - `` separator)."""
    types = []
    for line in mountinfo.splitlines():
        _, sep, rest = line.partition(" - ")
        if sep:
            types.append(rest.split(" ", 1)[0])
    return types


def all_local(mountinfo: str) -> bool:
    """Whether every mount of a mountinfo text has a type in :data:`LOCAL_TYPES`."""
    types = mount_types(mountinfo)
    return bool(types) and all(kind in LOCAL_TYPES for kind in types)


def inline_allowed() -> bool:
    """Whether a file call may first be tried in the event loop's thread (see the module)."""
    global _checked_at, _allowed
    if _NOWAIT_FLAG is None:
        return False
    now = time.monotonic()
    if now - _checked_at >= RECHECK_SECONDS:
        try:
            with open(MOUNTINFO, encoding="utf-8", errors="replace") as handle:
                _allowed = all_local(handle.read())
        except OSError:
            _allowed = False
        _checked_at = now
    return _allowed


def read_nowait(fd: int, length: int | None, size_hint: int) -> bytes:
    """``length`` bytes (``None``: to the end of the file) from the start of ``fd``, from the
    page cache only: :class:`WouldBlock` when any of them would have to be read from the
    device, or the file system cannot tell (the same bytes as a plain read otherwise)."""
    assert _NOWAIT_FLAG is not None
    # a whole file: its size and one byte more (the buffer is zeroed: no more than needed)
    want = max(size_hint + 1, 4096) if length is None else length
    parts: list[bytes] = []
    offset = 0
    while want > 0:
        buffer = bytearray(want)
        try:
            count = os.preadv(fd, [buffer], offset, _NOWAIT_FLAG)
        except OSError as exc:  # EAGAIN: not cached; EOPNOTSUPP: cannot tell; any other
            raise WouldBlock from exc  # error is the worker thread's to report, as it would
        if count == 0:
            break
        parts.append(bytes(buffer) if count == want else bytes(memoryview(buffer)[:count]))
        offset += count
        if length is None:
            want = 65536
        else:
            want -= count
    return b"".join(parts) if len(parts) != 1 else parts[0]
