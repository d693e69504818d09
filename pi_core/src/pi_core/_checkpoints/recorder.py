"""Recording one session's checkpoints: :class:`SessionCheckpoints`.

The recorder keeps the session's view of the workspace (the *index*: every path it has seen,
with its state and the stat that says whether it may have changed) and a numbered list of
*events*, one per change it observes: ``(seq, call, path, before, after)``. Each recorded call
has a *mark*, the seq of the last event before its own changes: rewinding to the call undoes
every event after its mark, in any workspace, whatever made the change.

When it looks (see ``docs/explanation/checkpoints.md``):

* a call whose tool declares ``mutates="workspace"`` (a shell): before it runs, everything that
  changed since the last look (a full scan the first time, seeded with the stat cache the last
  session left; then only what inotify reports, or a scan compared by stat); the call's mark;
  made durable (fsync) before the command starts; after it, the same look again, whose changes
  are the call's;
* a call whose tool declares ``mutates="paths"``: the files its ``write`` path arguments name,
  before it runs; then each file at its turn in the file mutation queue (before and after the
  change, with the content a batch has staged for it), made durable before bytes land on disk.

A change seen before a call's own look (made by a person, another process or a call that
overlaps) is recorded too: attributed to the other mutating call running then, else to no call
("outside pi"). Attribution can be shared between calls that overlap; the state at each mark is
exact.
"""

from __future__ import annotations

import contextvars
import hashlib
import itertools
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import trio

from pi_core._backend_kit.paths import resolve_to_cwd
from pi_core._backend_kit.tree import TreeEntry, WorkspaceTree
from pi_core._checkpoints.state import State
from pi_core._checkpoints.store import (
    EXCLUDE_KEY,
    EncodedBlob,
    Store,
    db_path,
    digest_of,
    dumps,
    encode_blob,
    loads,
    now,
    path_of,
)
from pi_core._config import CheckpointSettings
from pi_core._tools.definition import PathArgument

Mutates = Literal["paths", "workspace"]

RACY_NS = 50_000_000
"""A file whose mtime is this close to the moment it was read is read again next time (its
stat alone cannot show a change made within the same clock tick), unless inotify watches it."""

INLINE_BYTES = 256 * 1024
"""A file up to this size is read in the trio thread when a file call looks at it."""

_RECENT_BYTES = 32 * 1024 * 1024
"""The most bytes of recent contents kept in memory as delta bases."""


@dataclass(slots=True)
class _Item:
    state: State | None
    """``None``: known to be absent."""
    stat: TreeEntry | None
    """``None``: unknown (read again at the next look)."""
    staged: bool = False
    """The mutation queue has staged content that has not landed: the disk is behind."""


@dataclass
class CallRecord:
    """One tool call as checkpoints know it."""

    ordinal: int
    id: str
    tool: str
    parent: str | None
    turn: int
    mutates: str | None
    mark: int
    started: float
    paths: list[str] = field(default_factory=list)
    state: str = "running"
    ended: float | None = None
    queued: set[str] = field(default_factory=set)
    moved_mark: bool = False


_current: contextvars.ContextVar[CallRecord | None] = contextvars.ContextVar(
    "pi_checkpoint_call", default=None
)


UNRECORDED = "unrecorded"
"""The state of a shell call in a workspace of more than ``max_files`` entries: its changes
are not recorded (a rewind across it says so)."""


class CheckpointFailed(Exception):
    """A checkpoint could not be recorded (the call does not run)."""


class SessionCheckpoints:
    """One session's recorder (see the module). ``tree`` is the workspace as the session's
    backend shows it; ``settings`` the ``[checkpoints]`` table. The store is opened at the
    first call that may change the workspace, so a session that only reads costs nothing."""

    def __init__(
        self,
        *,
        cwd: str,
        session_id: str,
        host: str,
        settings: CheckpointSettings,
        tree: WorkspaceTree,
        exclude: Sequence[str] = (),
    ) -> None:
        self.cwd = os.path.abspath(cwd)
        self.session_id = session_id
        self.host = host
        self.settings = settings
        self.tree = tree
        self.exclude = list(exclude)
        """The patterns ``tree`` leaves out beyond ``[checkpoints] exclude`` (the plugins'
        ``pi_checkpoint_exclude``): kept with the session, so that a later process recovers and
        rewinds it leaving out the same paths (:func:`session_exclude`)."""
        self.turn = 0
        self._real_roots = tuple(dict.fromkeys((os.path.realpath(self.cwd), self.cwd)))
        self._store: Store | None = None
        self._lock = trio.Lock()
        self._index: dict[str, _Item] = {}
        self._children: dict[str, set[str]] = {}
        self._full = False
        self._seed: dict[str, tuple[State, TreeEntry]] | None = None
        self._seq = 0
        self._events: list[tuple[int, int | None, str, str | None, str | None]] = []
        self._event_digests: set[str] = set()
        self._blobs: dict[str, tuple[bytes, str | None, int | None]] = {}
        self._known: set[str] = set()
        self._depths: dict[str, int] = {}
        self._recent: dict[str, bytes] = {}
        self._recent_bytes = 0
        self._dirty_items: set[str] = set()
        self._calls: list[CallRecord] = []
        self._first_running = 0  # no call before this index of _calls is running
        self._by_id: dict[str, CallRecord] = {}
        self._quiet: dict[str, tuple[str, str | None, int, int]] = {}
        self._dirty_calls: set[int] = set()
        self._turns: dict[int, int] = {}
        self._dirty_turns: set[int] = set()
        self._session_written = False
        self._closed = False
        self._observing: int | None = None
        self._last_staged: tuple[str, tuple[Any, ...], State] | None = None
        """``(rel, pieces, state)`` of the staged content :meth:`_look_staged` saw last: the
        next call of a group is handed the same pieces, already hashed."""
        self.too_large = False
        """The workspace has more than ``max_files`` entries, or more content to keep than
        ``max_bytes``: shell calls are not recorded."""

    @classmethod
    def resume(
        cls, store: Store, row: dict[str, Any], settings: CheckpointSettings, tree: WorkspaceTree
    ) -> SessionCheckpoints:
        """The recorder of a stored session, as it was at its last flush (recovery after a
        crash: :meth:`recover`)."""
        self = cls(
            cwd=row["cwd"], session_id=row["id"], host=row["host"], settings=settings, tree=tree
        )
        self._store = store
        self._session_written = True
        self._full = bool(row.get("full"))
        sid = row["id"]
        db = store.db
        self._seq = int(
            db.execute(
                "SELECT coalesce(max(seq), 0) FROM events WHERE session = ?", (sid,)
            ).fetchone()[0]
        )
        for r in db.execute(
            "SELECT ordinal, id, parent, turn, tool, mutates, mark, state, started, ended, paths"
            " FROM calls WHERE session = ? ORDER BY ordinal",
            (sid,),
        ):
            record = CallRecord(
                ordinal=r[0], id=r[1], parent=r[2], turn=r[3], tool=r[4], mutates=r[5],
                mark=r[6], state=r[7], started=r[8], ended=r[9], paths=loads(r[10]) or [],
            )  # fmt: skip
            self._calls.append(record)
            self._by_id[record.id] = record
        for turn, mark in db.execute("SELECT turn, mark FROM turns WHERE session = ?", (sid,)):
            self._turns[turn] = mark
            self.turn = max(self.turn, turn)
        for stored, state, stat in db.execute(
            "SELECT path, state, stat FROM tree WHERE session = ?", (sid,)
        ):
            path = path_of(stored)
            item = _Item(
                State.from_json(loads(state)) if state else None,
                _entry_from_json(loads(stat)) if stat else None,
            )
            self._index[path] = item
            self._children.setdefault(path.rpartition("/")[0], set()).add(path)
        for before, after in db.execute(
            "SELECT before, after FROM events WHERE session = ?", (sid,)
        ):
            for text in (before, after):
                state = State.from_json(loads(text)) if text else None
                if state is not None and state.digest and state.unstored is None:
                    self._event_digests.add(state.digest)
                    self._known.add(state.digest)
        return self

    def recover(self) -> None:
        """After a crash (sync): compare the workspace with the session's view at its last
        flush, record the difference as the running call's changes (that call becomes
        ``interrupted``) and end the session."""
        running = [c for c in self._calls if c.state == "running" and c.mutates is not None]
        call = running[0].ordinal if running else None
        self._observing = call
        if self._full:
            self._rescan("", call)
        else:
            paths = set(self._index)
            for record in running:
                paths.update(record.paths)
            for rel in sorted(paths):
                if not self.tree.excludes(rel):
                    self._apply(rel, self.tree.lstat(rel), call, children=False)
        for record in self._calls:
            if record.state == "running":
                record.state = "interrupted"
                record.ended = now()
                self._dirty_calls.add(record.ordinal)
        self._close(close_store=False)
        self.tree.close()

    # -- the pipeline's side ---------------------------------------------------------------------

    def begin_turn(self) -> None:
        """A new turn starts (the loop calls this before each model request)."""
        self.turn += 1
        self._turns[self.turn] = self._seq
        self._dirty_turns.add(self.turn)

    def open_call(
        self,
        tool_call_id: str,
        tool: str,
        parent: str | None,
        mutates: str | None,
        args: Any = None,
        path_arguments: Sequence[PathArgument] = (),
    ) -> CallRecord | None:
        """Note a call about to run; a :class:`CallRecord` for one that may change the
        workspace (``mutates``), ``None`` for one that cannot (kept in memory only, as the
        parent its nested calls may name)."""
        turn = max(self.turn, 1)
        if mutates is None:
            self._quiet[tool_call_id] = (tool, parent, turn, self._seq)
            return None
        paths: list[str] = []
        if mutates == "paths" and isinstance(args, dict):
            for declared in path_arguments:
                if not declared.write:
                    continue
                value = args.get(declared.name, declared.default)
                if isinstance(value, str) and value:
                    rel = self._rel(resolve_to_cwd(value, self.cwd))
                    if rel is not None:
                        paths.append(rel)
        return self._add_call(tool_call_id, tool, parent, turn, mutates, self._seq, paths)

    def _add_call(
        self,
        call_id: str,
        tool: str,
        parent: str | None,
        turn: int,
        mutates: str | None,
        mark: int,
        paths: list[str] | None = None,
    ) -> CallRecord:
        """Record a call (its parents first, when they are not recorded yet)."""
        if parent is not None and parent not in self._by_id:
            quiet = self._quiet.pop(parent, ("?", None, max(self.turn, 1), self._seq))
            self._add_call(parent, quiet[0], quiet[1], quiet[2], None, quiet[3])
        record = CallRecord(
            ordinal=len(self._calls) + 1,
            id=call_id,
            tool=tool,
            parent=parent,
            turn=turn,
            mutates=mutates,
            mark=mark,
            started=now(),
            paths=paths or [],
        )
        self._calls.append(record)
        self._by_id[call_id] = record
        self._dirty_calls.add(record.ordinal)
        return record

    def bind(self, record: CallRecord | None) -> contextvars.Token[CallRecord | None]:
        """Make ``record`` the call the mutation queue's reports belong to (around execute)."""
        return _current.set(record)

    def unbind(self, token: contextvars.Token[CallRecord | None]) -> None:
        _current.reset(token)

    async def before_call(self, record: CallRecord) -> None:
        """Look before the call runs (see the module); raises :class:`CheckpointFailed`."""
        try:
            async with self._lock:
                others = self._other_running(record)
                if record.mutates == "workspace":
                    await trio.to_thread.run_sync(self._look_everywhere, others, record)
                    record.mark = self._seq
                    if self.too_large:
                        record.state = UNRECORDED
                    await trio.to_thread.run_sync(self._flush)
                else:
                    await self._look_at_paths(record.paths, others, record)
                    record.mark = self._seq
        except Exception as exc:
            record.state = "failed"
            record.ended = now()
            self._dirty_calls.add(record.ordinal)
            raise CheckpointFailed(
                f"Checkpoint failed, the call did not run: {_reason(exc)} (set [checkpoints]"
                " enabled = false to run without checkpoints)"
            ) from exc

    async def after_call(self, record: CallRecord) -> None:
        """Look after the call (shielded by the caller); its changes are the call's. A failure
        here does not change the call's result: the call is listed as ``incomplete``."""
        if record.state in ("failed", UNRECORDED):
            return
        async with self._lock:
            state = "done"
            try:
                if record.mutates == "workspace":
                    await trio.to_thread.run_sync(self._look_everywhere, record.ordinal, record)
                else:
                    rest = [p for p in record.paths if p not in record.queued]
                    if rest:
                        await self._look_at_paths(rest, record.ordinal, record)
            except Exception:
                state = "incomplete"
            record.state = state
            record.ended = now()
            self._dirty_calls.add(record.ordinal)
            if self._events:
                try:
                    await trio.to_thread.run_sync(self._flush)
                except Exception:
                    record.state = "incomplete"

    # -- the mutation queue's side (MutationObserver) ----------------------------------------------

    async def _look_queued(
        self, key: str, staged: Any, after: bool
    ) -> tuple[CallRecord, str] | None:
        """Look at ``key`` for the current call (``staged``: what the queue staged, ``None``:
        the disk); the changes are the call's when ``after``, else those of whoever else runs."""
        record = _current.get()
        rel = self._rel(key)
        if record is None or rel is None:
            return None
        call = record.ordinal if after else self._other_running(record)
        if staged is None:
            await self._look_at_paths([rel], call, record)
        else:
            self._look_staged(rel, staged, call, record)
        return record, rel

    async def before_mutation(self, key: str, staged: Any) -> None:
        """The queue is about to run a mutation of ``key`` for the current call."""
        async with self._lock:
            found = await self._look_queued(key, staged, after=False)
            if found is None:
                return
            record, rel = found
            record.queued.add(rel)
            if rel not in record.paths:
                record.paths.append(rel)
            if not record.moved_mark:  # the moment just before its first change
                record.moved_mark = True
                record.mark = self._seq
            self._dirty_calls.add(record.ordinal)

    async def after_mutation(self, key: str, staged: Any) -> None:
        """The queue ran a mutation of ``key`` for the current call."""
        async with self._lock:
            found = await self._look_queued(key, staged, after=True)
            item = self._index.get(found[1]) if found is not None else None
            if staged is not None and item is not None:
                item.staged = True

    async def flush(self) -> None:
        """Make what was recorded durable (before bytes land on disk)."""
        async with self._lock:
            if self._pending():
                await trio.to_thread.run_sync(self._flush)

    def landed(self, key: str, ok: bool) -> None:
        """Staged content of ``key`` was written (or not): read the disk again next time."""
        rel = self._rel(key)
        item = self._index.get(rel) if rel is not None else None
        if item is not None:
            item.staged = False
            item.stat = None

    def adopt_rewind(self, record: dict[str, Any]) -> None:
        """A rewind of this session was recorded in the store (``record``: its ``id``,
        ``ordinal``, ``seq`` and the ``states`` it left): follow it."""
        self._seq = max(self._seq, int(record["seq"]))
        rewound = CallRecord(
            ordinal=int(record["ordinal"]),
            id=record["id"],
            tool="rewind",
            parent=None,
            turn=max(self.turn, 1),
            mutates="workspace",
            mark=int(record["seq"]),
            started=now(),
            state="done",
            ended=now(),
        )
        self._calls.append(rewound)
        for rel, state in record.get("states", {}).items():
            self._set(rel, _Item(state, None))

    # -- the end ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Record the session's end, keep its stat cache for the next session, prune the
        workspace's checkpoints to ``max_bytes`` and release the store and the watches."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            async with self._lock:
                try:
                    if self._store is not None:
                        await trio.to_thread.run_sync(self._close)
                finally:
                    self.tree.close()

    # -- helpers ------------------------------------------------------------------------------

    def _rel(self, path: str) -> str | None:
        for root in self._real_roots:
            if path.startswith(root + "/"):
                rel = path[len(root) + 1 :].rstrip("/")
                if rel and not self.tree.excludes(rel):
                    return rel
                return None
        return None

    def _other_running(self, record: CallRecord) -> int | None:
        # a call never runs again once it has ended: start past those ended before every
        # running one (a batch of 1,000 edits would otherwise scan all earlier calls per edit)
        calls = self._calls
        first = self._first_running
        while first < len(calls) and calls[first].state != "running":
            first += 1
        self._first_running = first
        for other in itertools.islice(calls, first, None):
            if other is not record and other.state == "running" and other.mutates is not None:
                return other.ordinal
        return None

    async def _look_at_paths(self, rels: list[str], call: int | None, record: CallRecord) -> None:
        """:meth:`_look_at` ``rels``: in this thread when that is a few system calls on this
        machine (what a batch of edits does for each call), in a worker thread when a file
        must be read that is larger than :data:`INLINE_BYTES` or the tree is remote."""
        if self._store is None:
            await trio.to_thread.run_sync(self._ensure_store)
        if self.tree.location == "local":
            heavy = False
            for rel in rels:
                old = self._index.get(rel)
                try:
                    entry = self.tree.lstat(rel)
                except (OSError, ValueError):
                    continue
                if (
                    entry is not None
                    and entry.kind == "file"
                    and entry.size > INLINE_BYTES
                    and not (old is not None and entry.same_stat(old.stat))
                ):
                    heavy = True
                    break
            if not heavy:
                self._look_at(rels, call, record)
                return
        await trio.to_thread.run_sync(self._look_at, rels, call, record)

    def _pending(self) -> bool:
        return bool(
            self._events
            or self._blobs
            or self._dirty_items
            or self._dirty_calls
            or self._dirty_turns
            or not self._session_written
        )

    # -- looking (sync: a worker thread, or the trio thread for staged content) ------------------

    def _set(self, rel: str, item: _Item) -> None:
        if rel not in self._index:
            parent = rel.rpartition("/")[0]
            self._children.setdefault(parent, set()).add(rel)
        self._index[rel] = item
        self._dirty_items.add(rel)

    def _descendants(self, rel: str) -> list[str]:
        found: list[str] = []
        stack = [rel]
        while stack:
            for child in self._children.get(stack.pop(), ()):
                found.append(child)
                stack.append(child)
        return found

    def _event(self, rel: str, before: State | None, after: State | None, call: int | None) -> None:
        self._seq += 1
        for state in (before, after):
            if state is not None and state.digest is not None and state.unstored is None:
                self._event_digests.add(state.digest)
        self._events.append(
            (
                self._seq,
                call,
                rel,
                before.to_text() if before is not None else None,
                after.to_text() if after is not None else None,
            )
        )

    def _remember(self, digest: str, data: bytes) -> None:
        if len(data) > _RECENT_BYTES // 4 or digest in self._recent:
            return
        self._recent[digest] = data
        self._recent_bytes += len(data)
        while self._recent_bytes > _RECENT_BYTES:
            oldest = next(iter(self._recent))
            self._recent_bytes -= len(self._recent.pop(oldest))

    def _keep(self, digest: str, data: bytes, base: str | None) -> None:
        if digest not in self._known and digest not in self._blobs:
            self._blobs[digest] = (data, base, self._observing)
        self._remember(digest, data)

    def _state_of(self, rel: str, entry: TreeEntry, old: _Item | None) -> State:
        if entry.kind == "file":
            if old is not None and old.state is not None and entry.same_stat(old.stat):
                return old.state
            if self._seed is not None:
                seeded = self._seed.get(rel)
                if seeded is not None and entry.same_stat(seeded[1]):
                    self._known.add(seeded[0].digest or "")
                    return seeded[0]
            base = old.state.digest if old is not None and old.state is not None else None
            if entry.size > self.settings.max_file_bytes:
                try:
                    digest, size = self.tree.digest(rel)
                except OSError:
                    return State("file", entry.mode, size=entry.size, unstored="unreadable")
                return State("file", entry.mode, digest, size=size, unstored="too large")
            try:
                data = self.tree.read(rel)
            except OSError:
                return State("file", entry.mode, size=entry.size, unstored="unreadable")
            digest = digest_of(data)
            self._keep(digest, data, base)
            return State("file", entry.mode, digest, size=len(data))
        if entry.kind == "symlink":
            return State("symlink", 0, target=entry.target)
        return State(entry.kind, entry.mode)

    def _stat_for(self, entry: TreeEntry) -> TreeEntry | None:
        """The stat kept for ``entry``: ``None`` (read again) when it is racy and unwatched."""
        if (
            entry.kind == "file"
            and not self._watched()
            and time.time_ns() - entry.mtime_ns < RACY_NS
        ):
            return None
        return entry

    def _watched(self) -> bool:
        return bool(getattr(self.tree, "_watcher", None))

    def _apply(
        self, rel: str, entry: TreeEntry | None, call: int | None, *, children: bool
    ) -> None:
        """Bring ``rel`` up to date with ``entry`` (what is there now), recording events."""
        old = self._index.get(rel)
        if old is not None and old.staged:
            return
        if entry is None:
            if old is None:
                if not self._full:
                    self._set(rel, _Item(None, None))
                return
            if old.state is not None:
                self._gone_below(rel, call)
                self._event(rel, old.state, None, call)
                self._set(rel, _Item(None, None))
            return
        state = self._state_of(rel, entry, old)
        if old is None and not self._full:
            pass  # first sight: the baseline, not a change
        elif old is None or old.state is None:
            self._event(rel, None, state, call)
        elif not old.state.same(state):
            if old.state.kind == "dir" and state.kind != "dir":
                self._gone_below(rel, call)
            self._event(rel, old.state, state, call)
        if old is None or old.state != state or old.stat != entry:
            self._set(rel, _Item(state, self._stat_for(entry)))
        if children and entry.kind == "dir":
            self._rescan(rel, call)

    def _gone_below(self, rel: str, call: int | None) -> None:
        for child in sorted(self._descendants(rel), key=lambda p: -p.count("/")):
            item = self._index[child]
            if item.state is not None and not item.staged:
                self._event(child, item.state, None, call)
                self._set(child, _Item(None, None))

    def _rescan(
        self, rel: str, call: int | None, found: Iterable[tuple[str, TreeEntry]] | None = None
    ) -> None:
        """Compare everything below ``rel`` with the index (the whole tree for ``""``);
        ``found``: the entries, when they have been listed already."""
        seen: set[str] = set()
        for child, entry in self.tree.scan(rel, watch=True) if found is None else found:
            seen.add(child)
            self._apply(child, entry, call, children=False)
        for child in sorted(self._descendants(rel), key=lambda p: -p.count("/")):
            if child in seen:
                continue
            item = self._index[child]
            if item.state is not None and not item.staged and not self.tree.excludes(child):
                self._event(child, item.state, None, call)
                self._set(child, _Item(None, None))

    def _look_everywhere(self, call: int | None, record: CallRecord) -> None:
        self._observing = record.ordinal
        self._ensure_store()
        if self.too_large:
            return
        if not self._full:
            found: list[tuple[str, TreeEntry]] = []
            content = 0
            limit = self.settings.max_file_bytes
            for item in self.tree.scan("", watch=True):
                found.append(item)
                if item[1].kind == "file" and item[1].size <= limit:
                    content += item[1].size
                if len(found) > self.settings.max_files or content > self.settings.max_bytes:
                    self.too_large = True  # give up before reading any content
                    self.tree.close()
                    return
            self._seed = self._load_seed()
            try:
                self._rescan("", call, found)
            finally:
                self._seed = None
            self._full = True
            return
        changed = self.tree.changed()
        if changed is None:
            self._rescan("", call)
            return
        done: list[str] = []
        for rel in sorted(changed, key=lambda p: (p.count("/"), p)):
            if any(rel.startswith(d + "/") for d in done) or self.tree.excludes(rel):
                continue
            entry = self.tree.lstat(rel)
            self._apply(rel, entry, call, children=True)
            if entry is not None and entry.kind == "dir":
                done.append(rel)

    def _look_at(self, rels: Iterable[str], call: int | None, record: CallRecord) -> None:
        self._observing = record.ordinal
        self._ensure_store()
        for rel in rels:
            try:
                entry = self.tree.lstat(rel)
            except (OSError, ValueError):
                continue  # a name no file can have, a folder pi cannot enter: the tool says so
            self._apply(rel, entry, call, children=False)

    def _look_staged(self, rel: str, staged: Any, call: int | None, record: CallRecord) -> None:
        """``rel`` holds ``staged`` (bytes or pieces the queue staged, not yet on disk). Content
        over ``max_file_bytes`` is hashed piece by piece and not kept (never joined)."""
        self._observing = record.ordinal
        old = self._index.get(rel)
        pieces = [staged] if isinstance(staged, bytes | bytearray | memoryview) else list(staged)
        last = self._last_staged
        if (
            last is not None
            and last[0] == rel
            and old is not None
            and old.state is last[2]
            and len(last[1]) == len(pieces)
            and all(a is b for a, b in zip(last[1], pieces, strict=True))
        ):
            return  # the same immutable pieces as the state recorded last: no change
        self._last_staged = None
        size = sum(len(piece) for piece in pieces)
        mode = old.state.mode if old is not None and old.state is not None else 0o644
        base = old.state.digest if old is not None and old.state is not None else None
        data: bytes | None = None
        if size > self.settings.max_file_bytes:
            hasher = hashlib.sha256()
            for piece in pieces:
                hasher.update(piece)
            state = State("file", mode, hasher.hexdigest(), size=size, unstored="too large")
        else:
            data = (
                pieces[0] if len(pieces) == 1 and isinstance(pieces[0], bytes) else b"".join(pieces)
            )
            state = State("file", mode, digest_of(data), size=size)
        if old is not None and old.state is not None and old.state.same(state):
            return
        if data is not None and state.digest is not None:
            self._keep(state.digest, data, base)
        self._event(rel, old.state if old is not None else None, state, call)
        self._set(rel, _Item(state, None, staged=old.staged if old is not None else False))
        if all(
            isinstance(piece, bytes) or (isinstance(piece, memoryview) and piece.readonly)
            for piece in pieces
        ):
            self._last_staged = (rel, tuple(pieces), state)

    # -- the store (sync) ------------------------------------------------------------------------

    def _ensure_store(self) -> Store:
        if self._store is None:
            self._store = Store.open_for(self.settings, self.cwd)
        return self._store

    def _load_seed(self) -> dict[str, tuple[State, TreeEntry]]:
        store = self._ensure_store()
        seed: dict[str, tuple[State, TreeEntry]] = {}
        for stored, state, stat in store.db.execute("SELECT path, state, stat FROM cache"):
            path = path_of(stored)
            loaded = State.from_json(loads(state)) if state else None
            entry = _entry_from_json(loads(stat)) if stat else None
            if loaded is not None and entry is not None and loaded.digest is not None:
                seed[path] = (loaded, entry)
        return seed

    def _encode(self, digest: str, data: bytes, base: str | None) -> EncodedBlob:
        store = self._ensure_store()
        base_info: tuple[str, bytes, int] | None = None
        if base is not None and base in self._recent:
            depth = self._depths.get(base)
            if depth is None:
                depth = store.blob_depth(base)
            if depth is not None:
                base_info = (base, self._recent[base], depth)
        blob = encode_blob(digest, data, base_info)
        self._depths[digest] = blob.depth
        return blob

    def _flush(self) -> None:
        store = self._ensure_store()
        if not self._pending():
            return
        by_call: dict[int | None, list[EncodedBlob]] = {}
        for digest, (data, base, call) in self._blobs.items():
            by_call.setdefault(call, []).append(self._encode(digest, data, base))
        with store.transaction() as db:
            db.execute(
                "INSERT INTO sessions(id, host, cwd, location, pid, started, updated, seq, full)"
                " VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET updated = excluded.updated,"
                " seq = excluded.seq, full = excluded.full",
                (
                    self.session_id,
                    self.host,
                    self.cwd,
                    self.tree.location,
                    os.getpid(),
                    self._calls[0].started if self._calls else now(),
                    now(),
                    self._seq,
                    int(self._full),
                ),
            )
            if not self._session_written and self.exclude:
                db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (EXCLUDE_KEY + self.session_id, dumps(self.exclude)),
                )
            for call, blobs in by_call.items():
                store.put_blobs(db, blobs, self.session_id, call)
            db.executemany(
                "INSERT INTO events(session, seq, call, path, before, after) VALUES (?,?,?,?,?,?)",
                [(self.session_id, e[0], e[1], db_path(e[2]), e[3], e[4]) for e in self._events],
            )
            for ordinal in sorted(self._dirty_calls):
                r = self._calls[ordinal - 1]
                db.execute(
                    "INSERT OR REPLACE INTO calls(session, ordinal, id, parent, turn, tool, mutates,"
                    " mark, state, started, ended, paths) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        self.session_id,
                        r.ordinal,
                        r.id,
                        r.parent,
                        r.turn,
                        r.tool,
                        r.mutates,
                        r.mark,
                        r.state,
                        r.started,
                        r.ended,
                        dumps(r.paths),
                    ),
                )
            db.executemany(
                "INSERT OR REPLACE INTO turns(session, turn, mark) VALUES (?,?,?)",
                [(self.session_id, t, self._turns[t]) for t in sorted(self._dirty_turns)],
            )
            rows = []
            digests = set()
            for rel in self._dirty_items:
                item = self._index[rel]
                if item.state is not None and item.state.digest and item.state.unstored is None:
                    digests.add(item.state.digest)
                rows.append(
                    (
                        self.session_id,
                        db_path(rel),
                        item.state.to_text() if item.state is not None else None,
                        _entry_text(item.stat) if item.stat is not None else None,
                    )
                )
            db.executemany(
                "INSERT OR REPLACE INTO tree(session, path, state, stat) VALUES (?,?,?,?)", rows
            )
            digests.update(self._event_digests)
            db.executemany(
                "INSERT OR IGNORE INTO refs(session, digest) VALUES (?, ?)",
                [(self.session_id, d) for d in digests],
            )
        self._known.update(self._blobs)
        self._blobs.clear()
        self._events.clear()
        self._dirty_calls.clear()
        self._dirty_turns.clear()
        self._dirty_items.clear()
        self._session_written = True

    def _close(self, close_store: bool = True) -> None:
        store = self._ensure_store()
        for record in self._calls:
            if record.state == "running":
                record.state = "done"
                record.ended = record.ended or now()
                self._dirty_calls.add(record.ordinal)
        self._flush()
        with store.transaction() as db:
            db.execute(
                "UPDATE sessions SET ended = ?, updated = ? WHERE id = ?",
                (now(), now(), self.session_id),
            )
            if self._full:
                db.execute("DELETE FROM cache")
            else:
                db.execute(
                    "DELETE FROM cache WHERE path IN (SELECT path FROM tree WHERE session = ?"
                    " AND (state IS NULL OR stat IS NULL))",
                    (self.session_id,),
                )
            # the session's view (written by the flush above) is the next session's stat cache
            db.execute(
                "INSERT OR REPLACE INTO cache(path, state, stat, digest) SELECT path, state, stat,"
                " CASE WHEN json_extract(state, '$.x') IS NULL THEN json_extract(state, '$.h') END"
                " FROM tree WHERE session = ? AND state IS NOT NULL AND stat IS NOT NULL",
                (self.session_id,),
            )
            db.execute("DELETE FROM refs WHERE session = ''")
            db.execute(
                "INSERT OR IGNORE INTO refs(session, digest) SELECT '', digest FROM cache"
                " WHERE digest IS NOT NULL"
            )
            db.execute("DELETE FROM tree WHERE session = ?", (self.session_id,))
            db.execute("DELETE FROM refs WHERE session = ?", (self.session_id,))
            db.executemany(
                "INSERT OR IGNORE INTO refs(session, digest) VALUES (?, ?)",
                [(self.session_id, d) for d in self._event_digests],
            )
        if store.total_bytes() > self.settings.max_bytes:
            store.prune(self.settings.max_bytes, keep=[self.session_id])
        if close_store:
            store.close()


def _entry_text(entry: TreeEntry) -> str:
    """``entry`` as a JSON list (written without the ``json`` module unless it has a target)."""
    if entry.target is not None:
        fields = [entry.kind, entry.mode, entry.size, entry.mtime_ns, entry.ctime_ns, entry.ino]
        return dumps([*fields, entry.target]) or ""
    return (
        f'["{entry.kind}",{entry.mode},{entry.size},{entry.mtime_ns},{entry.ctime_ns},'
        f"{entry.ino},null]"
    )


def _entry_from_json(value: list[Any]) -> TreeEntry:
    return TreeEntry(*value)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


__all__ = ["UNRECORDED", "CallRecord", "CheckpointFailed", "Mutates", "SessionCheckpoints"]
