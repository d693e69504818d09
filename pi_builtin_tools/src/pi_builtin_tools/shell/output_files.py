"""The shell tools' full-output files (``{tempdir}/pi-bash-{16 hex}.log``, named by the truncation
notice): their names, their budget and their removal (``docs/reference/configuration.md``,
``[tools.bash]``).

* **Names.** ``{prefix}-{tag}{8 hex}.log``: the first 8 hex digits are the writing session's
  ``tag``, the rest random (still Pi's ``{prefix}-{16 hex}.log``). A session that writes a file
  holds, until it ends, an exclusive ``flock`` on ``{tempdir}/pi-session-{tag}.lock``: the sign,
  for every other pi process, that the session is alive.
* **Budget.** A file stops growing at its tool's ``[tools.bash] full_output_max_bytes`` (1 GiB)
  and a session's files together at
  :attr:`~FullOutputFiles.max_session_bytes` (``full_output_session_max_bytes``, 4 GiB): the
  output accumulator stops writing (never the command) and keeps counting. No file is started on
  a file system with less than 5% free (:func:`free_space_problem`).
* **Removal.** When a session ends its own files are removed (unless kept: ``keep_full_output``,
  and by default ``pi call`` and ``pi replay``, whose caller reads them afterwards). A session
  that wrote a file then also removes, from the same directory, the full-output files of this
  user's sessions that have ended (no lock held) and are older than
  :attr:`~FullOutputFiles.retention_days` (``full_output_retention_days``, 7 days)
  (:func:`remove_ended`): a live session's files are never touched, whatever their age.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import stat
import time

DEFAULT_FILE_MAX_BYTES = 1 << 30
"""The largest full-output file: 1 GiB (``[tools.bash] full_output_max_bytes``)."""

DEFAULT_SESSION_MAX_BYTES = 4 << 30
"""The bytes a session writes to full-output files in all: 4 GiB
(``[tools.bash] full_output_session_max_bytes``)."""

DEFAULT_RETENTION_DAYS = 7.0
"""Days a kept full-output file of an ended session stays (``full_output_retention_days``)."""

MIN_FREE_FRACTION = 0.05
"""No full-output file is started on a file system with less free space than this (5%)."""

LOCK_PREFIX = "pi-session-"
"""Lock files: ``{tempdir}/pi-session-{tag}.lock``."""

_FILE_NAME = re.compile(r"pi-[a-z0-9-]+?-([0-9a-f]{8})[0-9a-f]{8}\.log")
_LOCK_NAME = re.compile(re.escape(LOCK_PREFIX) + r"([0-9a-f]{8})\.lock")


def free_space_problem(directory: str) -> str | None:
    """Why no full-output file may be started in ``directory``: ``DIRECTORY has less than 5%
    free`` (free as ``df`` counts it: available to users, of used plus available), or ``None``
    (also when the file system cannot be asked)."""
    try:
        fs = os.statvfs(directory)
    except OSError:
        return None
    usable = fs.f_blocks - fs.f_bfree + fs.f_bavail
    if usable > 0 and fs.f_bavail < usable * MIN_FREE_FRACTION:
        return f"{directory} has less than {MIN_FREE_FRACTION:.0%} free"
    return None


class FullOutputFiles:
    """One session's full-output files and their budget (see the module docstring).

    ``keep``: leave the files when the session ends. ``max_session_bytes``: the session's cap
    (each tool caps its own files at its ``full_output_max_bytes``). ``retention_days``: how long
    ended sessions' files stay (:meth:`remove_all`). :attr:`written` counts the bytes written to
    the session's files.
    """

    def __init__(
        self,
        *,
        keep: bool = False,
        max_session_bytes: int = DEFAULT_SESSION_MAX_BYTES,
        retention_days: float = DEFAULT_RETENTION_DAYS,
    ) -> None:
        self.keep = keep
        self.max_session_bytes = max_session_bytes
        self.retention_days = retention_days
        self.written = 0
        """Bytes written to this session's files so far."""
        self.tag = secrets.token_hex(4)
        """The first 8 hex digits of this session's file names."""
        self._paths: list[str] = []
        self._directory: str | None = None
        self._lock: tuple[str, int] | None = None

    @property
    def paths(self) -> list[str]:
        """The files recorded so far (and not yet removed), oldest first."""
        return list(self._paths)

    @property
    def remaining(self) -> int:
        """Bytes the session may still write to its files."""
        return max(0, self.max_session_bytes - self.written)

    def new_path(self, directory: str, prefix: str) -> str:
        """A new file name for this session in ``directory``: ``{prefix}-{tag}{8 hex}.log``.
        The first call takes the session's lock (``pi-session-{tag}.lock``; where it cannot be
        taken, the session's files are treated as an ended session's)."""
        if self._lock is None:
            self._take_lock(directory)
        self._directory = directory
        return os.path.join(directory, f"{prefix}-{self.tag}{secrets.token_hex(4)}.log")

    def _take_lock(self, directory: str) -> None:
        path = os.path.join(directory, f"{LOCK_PREFIX}{self.tag}.lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return
        self._lock = (path, fd)

    def add(self, path: str) -> None:
        """Record ``path`` (a file the tool created)."""
        self._paths.append(path)

    def remove_all(self) -> None:
        """The session's end: delete every recorded file unless :attr:`keep` (a file already
        gone is skipped), release the session's lock, and, when the session wrote a file,
        remove the ended sessions' files past the retention (:func:`remove_ended`)."""
        if not self.keep:
            paths, self._paths = self._paths, []
            for path in paths:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        if self._lock is not None:
            path, fd = self._lock
            self._lock = None
            try:
                os.unlink(path)
            except OSError:
                pass
            os.close(fd)
        if self._directory is not None:
            remove_ended(self._directory, self.retention_days * 86400)


def _session_alive(directory: str, tag: str) -> bool:
    """Whether the session ``tag`` still holds its lock (also ``True`` when it cannot be told)."""
    try:
        fd = os.open(
            os.path.join(directory, f"{LOCK_PREFIX}{tag}.lock"), os.O_RDONLY | os.O_CLOEXEC
        )
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or cannot be told
        return True
    finally:
        os.close(fd)  # also releases the lock just taken
    return False


def remove_ended(directory: str, retention_seconds: float, now: float | None = None) -> list[str]:
    """Remove from ``directory`` the full-output files (``pi-NAME-{16 hex}.log``) and lock files
    of this user's ended sessions (no lock held) last written more than ``retention_seconds``
    before ``now``; returns the paths removed. Other users' files, live sessions' files and
    anything else are left; a file that cannot be removed is skipped."""
    now = time.time() if now is None else now
    uid = os.getuid()
    alive: dict[str, bool] = {}
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        found = _FILE_NAME.fullmatch(entry.name) or _LOCK_NAME.fullmatch(entry.name)
        if found is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
            continue
        if now - info.st_mtime <= retention_seconds:
            continue
        tag = found.group(1)
        if tag not in alive:
            alive[tag] = _session_alive(directory, tag)
        if alive[tag]:
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(entry.path)
    return removed


__all__ = [
    "DEFAULT_FILE_MAX_BYTES",
    "DEFAULT_RETENTION_DAYS",
    "DEFAULT_SESSION_MAX_BYTES",
    "MIN_FREE_FRACTION",
    "FullOutputFiles",
    "free_space_problem",
    "remove_ended",
]
