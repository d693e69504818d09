"""Where checkpoints are kept: one SQLite database per workspace in :func:`checkpoint_dir`.

**The directory** (:func:`checkpoint_dir`, the one place that decides it): ``[checkpoints] dir``,
else ``$XDG_STATE_HOME/pi/checkpoints``, else ``~/.local/state/pi/checkpoints``; created with
mode ``0700`` (it holds copies of workspace files). Each workspace (a session's working
directory, by its real path) has one database there, ``NAME-HASH.sqlite`` (``NAME``: the
folder's name, ``HASH``: 16 hex digits of the SHA-256 of its real path), opened in WAL mode with
``synchronous=FULL``: every commit is on disk (fsynced) when it returns.

**Blobs** are content-addressed (SHA-256 of the bytes): a content is stored once however many
checkpoints and sessions name it. A blob is stored whole (zlib level 1 when that saves at least
a tenth, else raw) or as a delta against the previous version of the same file: the common
prefix and suffix are kept by reference and only the middle is stored (so 1,000 edits of one
line of a 16 kB file take a few hundred bytes each, not 16 kB). Delta chains are at most
:data:`MAX_DELTA_DEPTH` long.

**Tables**: ``sessions`` (id, host, pid, times, location), ``calls`` (each recorded tool call:
ordinal, id, parent, turn, tool, mark, state, paths), ``turns`` (turn → mark), ``events`` (one
per observed change of one path: seq, call, before and after states), ``tree`` (a running
session's view of the workspace: what recovery compares with after a crash), ``cache`` (the
latest stat and content hash of every path: the stat cache the next session starts from),
``blobs``, ``refs`` (which sessions name which blobs: what pruning keeps).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pi_core._config import CheckpointSettings

MAX_DELTA_DEPTH = 48
"""Most deltas between a stored blob and the whole blob it is rebuilt from."""

DELTA_MAX_BYTES = 8 * 1024 * 1024
"""Contents larger than this are stored whole (no delta search)."""

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY, host TEXT, cwd TEXT, location TEXT, pid INTEGER, started REAL,
    updated REAL, ended REAL, seq INTEGER DEFAULT 0, full INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS calls(
    session TEXT, ordinal INTEGER, id TEXT, parent TEXT, turn INTEGER, tool TEXT,
    mutates TEXT, mark INTEGER, state TEXT, started REAL, ended REAL, paths TEXT,
    PRIMARY KEY(session, ordinal));
CREATE TABLE IF NOT EXISTS turns(session TEXT, turn INTEGER, mark INTEGER,
    PRIMARY KEY(session, turn));
CREATE TABLE IF NOT EXISTS events(
    session TEXT, seq INTEGER, call INTEGER, path TEXT, before TEXT, after TEXT,
    PRIMARY KEY(session, seq));
CREATE TABLE IF NOT EXISTS tree(session TEXT, path TEXT, state TEXT, stat TEXT,
    PRIMARY KEY(session, path));
CREATE TABLE IF NOT EXISTS cache(path TEXT PRIMARY KEY, state TEXT, stat TEXT, digest TEXT);
CREATE TABLE IF NOT EXISTS blobs(
    digest TEXT PRIMARY KEY, size INTEGER, stored INTEGER, codec TEXT, base TEXT,
    prefix INTEGER, suffix INTEGER, depth INTEGER, data BLOB, session TEXT, call INTEGER);
CREATE TABLE IF NOT EXISTS refs(session TEXT, digest TEXT, PRIMARY KEY(session, digest));
CREATE INDEX IF NOT EXISTS blobs_base ON blobs(base);
"""


class StoreError(Exception):
    """The checkpoint store cannot be used (its directory, a damaged database)."""


EXCLUDE_KEY = "exclude:"
"""The ``meta`` key (followed by the session id) of a session's own exclusions."""


def _make_private_dirs(directory: str) -> None:
    """Create ``directory`` and each missing parent with mode 0700 (``os.makedirs`` gives the
    parents the umask's mode: ``$XDG_STATE_HOME/pi`` must stay private, it also holds the
    tokens of ``pi mcp serve``)."""
    missing: list[str] = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)


def checkpoint_dir(settings: CheckpointSettings | None = None) -> str:
    """The directory where pi keeps checkpoints (see the module): ``[checkpoints] dir``, else
    ``$XDG_STATE_HOME/pi/checkpoints``, else ``~/.local/state/pi/checkpoints``. Not created
    here. pi's own state: a tool call must never write there."""
    if settings is not None and settings.dir:
        return settings.dir
    state = os.environ.get("XDG_STATE_HOME")
    if state and os.path.isabs(state):
        return os.path.join(state, "pi", "checkpoints")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "pi", "checkpoints")


def workspace_key(cwd: str) -> str:
    """What names a workspace: the real path of its directory."""
    return os.path.realpath(cwd)


def store_path(directory: str, cwd: str) -> str:
    """The database of the workspace ``cwd`` in ``directory``."""
    key = workspace_key(cwd)
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(key))
    return os.path.join(directory, f"{name or 'root'}-{digest}.sqlite")


def digest_of(data: bytes) -> str:
    """The content address of ``data``: its SHA-256, hex."""
    return hashlib.sha256(data).hexdigest()


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest n with a[:n] == b[:n], in O(log n) comparisons done by memcmp
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, min(len(a), len(b)) - limit
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _pack(data: bytes) -> tuple[str, bytes]:
    if len(data) > 64:
        packed = zlib.compress(data, 1)
        if len(packed) * 10 < len(data) * 9:
            return "zlib", packed
    return "raw", data


@dataclass
class EncodedBlob:
    """A blob as stored: ``codec`` (``raw``, ``zlib``, ``delta``), ``data`` (the whole content,
    or a delta's middle, raw or zlib: ``delta`` middle packed as its first byte says), ``base``,
    ``prefix``, ``suffix``, ``depth``."""

    digest: str
    size: int
    codec: str
    data: bytes
    base: str | None = None
    prefix: int = 0
    suffix: int = 0
    depth: int = 0


def encode_blob(
    digest: str, data: bytes, base: tuple[str, bytes, int] | None = None
) -> EncodedBlob:
    """``data`` as stored: a delta against ``base`` (``(digest, content, depth)``) when that is
    at most half the size, else whole (see the module)."""
    if base is not None and base[2] < MAX_DELTA_DEPTH and len(data) <= DELTA_MAX_BYTES:
        base_digest, old, depth = base
        prefix = _common_prefix(old, data)
        suffix = _common_suffix(old, data, prefix)
        middle = data[prefix : len(data) - suffix]
        if len(middle) * 2 <= len(data):
            codec, packed = _pack(middle)
            marker = b"z" if codec == "zlib" else b"r"
            return EncodedBlob(
                digest, len(data), "delta", marker + packed, base_digest, prefix, suffix, depth + 1
            )
    codec, packed = _pack(data)
    return EncodedBlob(digest, len(data), codec, packed)


class Store:
    """One workspace's checkpoint database (see the module). Not thread-safe: one caller at a
    time (the recorder holds a lock), from any thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        directory = os.path.dirname(path)
        try:
            _make_private_dirs(directory)
            self.db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            self.db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)",
                (str(SCHEMA_VERSION),),
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the checkpoint store {path}: {exc}") from exc
        self._decoded: dict[str, bytes] = {}

    @classmethod
    def open_for(cls, settings: CheckpointSettings, cwd: str) -> Store:
        """The store of the workspace ``cwd``."""
        return cls(store_path(checkpoint_dir(settings), cwd))

    @staticmethod
    def exists_for(settings: CheckpointSettings, cwd: str) -> bool:
        """Whether the workspace ``cwd`` has a store."""
        return os.path.exists(store_path(checkpoint_dir(settings), cwd))

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``): durable when it ends."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- blobs ---------------------------------------------------------------------------------

    def has_blob(self, digest: str) -> bool:
        row = self.db.execute("SELECT 1 FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return row is not None

    def blob_depth(self, digest: str) -> int | None:
        row = self.db.execute("SELECT depth FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return None if row is None else int(row[0])

    def put_blobs(
        self, db: sqlite3.Connection, blobs: Iterable[EncodedBlob], session: str, call: int | None
    ) -> int:
        """Insert ``blobs`` (those already stored are kept); returns the bytes added."""
        added = 0
        for blob in blobs:
            cursor = db.execute(
                "INSERT OR IGNORE INTO blobs(digest, size, stored, codec, base, prefix, suffix,"
                " depth, data, session, call) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    blob.digest,
                    blob.size,
                    len(blob.data),
                    blob.codec,
                    blob.base,
                    blob.prefix,
                    blob.suffix,
                    blob.depth,
                    blob.data,
                    session,
                    call,
                ),
            )
            if cursor.rowcount:
                added += len(blob.data)
        return added

    def read_blob(self, digest: str) -> bytes:
        """The content ``digest`` names; :class:`StoreError` when it is not stored."""
        cached = self._decoded.get(digest)
        if cached is not None:
            return cached
        chain: list[tuple[Any, ...]] = []
        current: str | None = digest
        while current is not None:
            row = self.db.execute(
                "SELECT codec, data, base, prefix, suffix, size FROM blobs WHERE digest = ?",
                (current,),
            ).fetchone()
            if row is None:
                raise StoreError(f"content {current[:12]} is not in the checkpoint store")
            chain.append(row)
            current = row[2] if row[0] == "delta" else None
            if current is not None and current in self._decoded:
                break
        content: bytes | None = self._decoded.get(current) if current is not None else None
        for codec, data, _base, prefix, suffix, size in reversed(chain):
            if codec == "raw":
                content = bytes(data)
            elif codec == "zlib":
                content = zlib.decompress(data)
            else:
                assert content is not None
                middle = bytes(data[1:]) if data[:1] == b"r" else zlib.decompress(data[1:])
                content = content[:prefix] + middle + content[len(content) - suffix :]
            if len(content) != size:
                raise StoreError(f"content {digest[:12]} is damaged in the checkpoint store")
        assert content is not None
        if digest_of(content) != digest:
            raise StoreError(f"content {digest[:12]} is damaged in the checkpoint store")
        if len(content) <= 1 << 20:
            if len(self._decoded) > 64:
                self._decoded.clear()
            self._decoded[digest] = content
        return content

    # -- sessions -------------------------------------------------------------------------------

    def sessions(self) -> list[dict[str, Any]]:
        """Every session of the workspace, newest first."""
        rows = self.db.execute(
            "SELECT id, host, cwd, location, pid, started, updated, ended, seq, full FROM sessions"
            " ORDER BY started DESC, rowid DESC"
        ).fetchall()
        keys = (
            "id",
            "host",
            "cwd",
            "location",
            "pid",
            "started",
            "updated",
            "ended",
            "seq",
            "full",
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def bytes_by_session(self) -> dict[str, int]:
        rows = self.db.execute("SELECT session, sum(stored) FROM blobs GROUP BY session")
        return {row[0]: int(row[1] or 0) for row in rows}

    def total_bytes(self) -> int:
        """The bytes of every stored blob (what ``[checkpoints] max_bytes`` bounds)."""
        row = self.db.execute("SELECT coalesce(sum(stored), 0) FROM blobs").fetchone()
        return int(row[0])

    def session_exclude(self, session: str) -> list[str]:
        """The patterns the session's tree left out beyond ``[checkpoints] exclude`` (those
        of ``pi_checkpoint_exclude``; ``[]`` for none)."""
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (EXCLUDE_KEY + session,)
        ).fetchone()
        return list(loads(row[0]) or []) if row is not None else []

    def delete_session(self, db: sqlite3.Connection, session: str) -> None:
        db.execute("DELETE FROM meta WHERE key = ?", (EXCLUDE_KEY + session,))
        for table in ("calls", "turns", "events", "tree", "refs"):
            db.execute(f"DELETE FROM {table} WHERE session = ?", (session,))
        db.execute("UPDATE blobs SET session = NULL, call = NULL WHERE session = ?", (session,))
        db.execute("DELETE FROM sessions WHERE id = ?", (session,))

    def collect_garbage(self, db: sqlite3.Connection) -> int:
        """Remove the blobs no session, no cache entry and no kept delta names; returns the
        bytes freed."""
        freed = db.execute(
            "WITH RECURSIVE live(d) AS (SELECT digest FROM refs UNION"
            " SELECT b.base FROM blobs b JOIN live ON b.digest = live.d WHERE b.base IS NOT NULL)"
            " SELECT coalesce(sum(stored), 0) FROM blobs WHERE digest NOT IN (SELECT d FROM live)"
        ).fetchone()[0]
        db.execute(
            "WITH RECURSIVE live(d) AS (SELECT digest FROM refs UNION"
            " SELECT b.base FROM blobs b JOIN live ON b.digest = live.d WHERE b.base IS NOT NULL)"
            " DELETE FROM blobs WHERE digest NOT IN (SELECT d FROM live)"
        )
        return int(freed)

    def prune(
        self, max_bytes: int, *, keep: Iterable[str] = (), everything: bool = False
    ) -> list[str]:
        """Remove the oldest sessions (never those in ``keep`` nor one whose process still
        runs) until the blobs take at most ``max_bytes`` (``everything``: remove every such
        session); returns the ids removed."""
        kept = set(keep)
        removed: list[str] = []
        with self.transaction() as db:
            self.collect_garbage(db)
            total = self.total_bytes()
            candidates = [
                s for s in reversed(self.sessions()) if s["id"] not in kept and not session_alive(s)
            ]
            for session in candidates:
                if not everything and total <= max_bytes:
                    break
                self.delete_session(db, session["id"])
                removed.append(session["id"])
                if everything:
                    continue
                self.collect_garbage(db)
                total = self.total_bytes()
            if everything:
                db.execute("DELETE FROM cache")
                db.execute("DELETE FROM refs WHERE session = ''")
                self.collect_garbage(db)
        return removed


def session_alive(session: Mapping[str, Any]) -> bool:
    """Whether ``session`` is still running: not ended, and its process is alive."""
    if session.get("ended") is not None:
        return False
    pid = session.get("pid")
    if not pid:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def db_path(rel: str) -> str | bytes:
    """A path as the database keeps it: text, or the file system's bytes for a name that is
    not UTF-8 (SQLite text must be)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(rel)
    return rel


def path_of(value: str | bytes) -> str:
    """The path :func:`db_path` stored."""
    return os.fsdecode(value) if isinstance(value, bytes) else value


def dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def now() -> float:
    return time.time()


__all__ = [
    "EXCLUDE_KEY",
    "MAX_DELTA_DEPTH",
    "EncodedBlob",
    "Store",
    "StoreError",
    "checkpoint_dir",
    "db_path",
    "digest_of",
    "dumps",
    "encode_blob",
    "loads",
    "now",
    "path_of",
    "session_alive",
    "store_path",
    "workspace_key",
]
