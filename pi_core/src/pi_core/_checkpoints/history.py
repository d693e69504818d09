"""A workspace's recorded sessions: listing their checkpoints and rewinding to one.

Everything here works on the store of a workspace (:class:`~pi_core._checkpoints.store.Store`)
and its :class:`~pi_core._backend_kit.tree.WorkspaceTree`, from any process: ``pi checkpoints``
and ``pi rewind`` run after the session, or while another session runs in the same workspace.
A session whose process died mid-call (``kill -9``) is recovered the first time it is read
(:meth:`~pi_core._checkpoints.recorder.SessionCheckpoints.recover`).

**Rewinding** to a mark (a call's, a turn's) puts back, for each path changed after it, the
state before its first change after the mark, and leaves every other path alone. A path is a
*conflict*, left as it is unless ``force``, when it is not what the session last recorded
(changed since by a person or another process) or when a change the session recorded after the
mark came from outside pi. A rewind is recorded in the session as a call of its own
(``rewind-N``, tool ``rewind``), so rewinding to just before it (``undo``) takes it back.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_core._backend_kit.tree import TreeEntry, WorkspaceTree
from pi_core._checkpoints.recorder import UNRECORDED, SessionCheckpoints
from pi_core._checkpoints.state import State
from pi_core._checkpoints.store import (
    Store,
    db_path,
    digest_of,
    dumps,
    encode_blob,
    loads,
    now,
    path_of,
    session_alive,
)
from pi_core._config import CheckpointSettings
from pi_core._errors import PiError

ChangeKind = Literal["created", "modified", "deleted", "renamed"]

REWIND_TOOL = "rewind"
"""The tool name a rewind is recorded under."""


class CheckpointError(PiError):
    """A checkpoint request cannot be carried out: no recorded session, an unknown session or
    call, a session still running, a rewind a plugin refused. One line; ``pi`` exits 2 (1 for a
    refused rewind)."""


class RewindRefused(CheckpointError):
    """A ``pi_before_rewind`` implementation refused the rewind (``source``: the plugin)."""

    def __init__(self, reason: str, source: str | None = None) -> None:
        super().__init__(reason)
        self.source = source


@dataclass(frozen=True)
class FileChange:
    """One path a call (or a rewind) changed: ``path`` (relative to the workspace, ``/`` at
    the end for a directory), ``change`` (``created``, ``modified``, ``deleted``, ``renamed``
    with ``previous_path``), ``kind`` (``file``, ``dir``, ``symlink``, ``other``) and whether
    the state before the change can be put back (``restorable``: false for a file over
    ``max_file_bytes`` or unreadable when it was recorded)."""

    path: str
    change: ChangeKind
    kind: str
    previous_path: str | None = None
    restorable: bool = True

    @property
    def symbol(self) -> str:
        """``+`` created, ``~`` modified, ``-`` deleted, ``>`` renamed."""
        return {"created": "+", "modified": "~", "deleted": "-", "renamed": ">"}[self.change]

    def label(self) -> str:
        """``+path``, ``~path``, ``-path``, ``>old -> new`` (``!`` after a change that cannot be
        undone)."""
        text = f"{self.symbol}{self.path}"
        if self.previous_path is not None:
            text = f"{self.symbol}{self.previous_path} -> {self.path}"
        return text if self.restorable else text + "!"

    def to_json_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "change": self.change, "kind": self.kind}
        if self.previous_path is not None:
            data["previousPath"] = self.previous_path
        if not self.restorable:
            data["restorable"] = False
        return data


@dataclass(frozen=True)
class Checkpoint:
    """One recorded call: the workspace as it was just before it can be restored
    (``pi rewind --to CALL_ID``). ``changes`` are what the call changed, ``bytes`` what its
    checkpoint stored; ``state`` is ``done``, ``running`` or ``interrupted`` (its process died
    during the call)."""

    session_id: str
    ordinal: int
    call_id: str
    tool: str
    turn: int
    parent_call_id: str | None
    state: str
    changes: tuple[FileChange, ...]
    bytes: int
    started: float

    def to_json_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session": self.session_id,
            "ordinal": self.ordinal,
            "turn": self.turn,
            "toolCallId": self.call_id,
            "tool": self.tool,
            "state": self.state,
            "changes": [c.to_json_dict() for c in self.changes],
            "bytes": self.bytes,
            "started": self.started,
        }
        if self.parent_call_id is not None:
            data["parentToolCallId"] = self.parent_call_id
        return data


@dataclass(frozen=True)
class CheckpointSession:
    """A recorded session of a workspace: ``id``, ``host`` (``run``, ``call``, ``replay``,
    ``mcp``, ``agent``), ``cwd``, ``started``/``ended`` (seconds since the epoch; ``ended``
    ``None`` while it runs or when it crashed), whether it still ``running``, its ``calls``
    (checkpoints) and the ``bytes`` it stored."""

    id: str
    host: str
    cwd: str
    started: float
    ended: float | None
    running: bool
    calls: int
    bytes: int

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": self.host,
            "cwd": self.cwd,
            "started": self.started,
            "ended": self.ended,
            "running": self.running,
            "calls": self.calls,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class PathIssue:
    """A path a rewind leaves alone: ``path`` and the ``reason`` (a conflict: changed outside
    pi; or what makes it impossible to restore)."""

    path: str
    reason: str

    def to_json_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason}


@dataclass
class RewindResult:
    """What a rewind did (or, ``dry_run``, would do): ``changes`` it made to the workspace
    (``created`` = put back, ``deleted`` = removed, ``modified``), ``conflicts`` (changed
    outside pi since the checkpoint: left alone unless ``force``), ``unrestorable`` (content not
    stored, or an error while restoring), ``rewind_id`` (the call id it is recorded under, for
    ``undo``; ``None`` for a dry run or a rewind that changed nothing)."""

    session_id: str
    target: str
    dry_run: bool
    changes: list[FileChange] = field(default_factory=list)
    conflicts: list[PathIssue] = field(default_factory=list)
    unrestorable: list[PathIssue] = field(default_factory=list)
    rewind_id: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every path was (or would be) put back."""
        return not self.conflicts and not self.unrestorable

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "target": self.target,
            "dryRun": self.dry_run,
            "changes": [c.to_json_dict() for c in self.changes],
            "conflicts": [c.to_json_dict() for c in self.conflicts],
            "unrestorable": [c.to_json_dict() for c in self.unrestorable],
            "rewind": self.rewind_id,
        }


@dataclass
class RewindContext:
    """What ``pi_before_rewind`` sees: ``session_id``, ``cwd``, ``target`` (``"before call
    c3"``, ``"the start of turn 2"``, ``"before rewind-1 (undo)"``), the ``changes`` the rewind is about to make, its
    ``conflicts`` and ``force``."""

    session_id: str
    cwd: str
    target: str
    changes: list[FileChange]
    conflicts: list[PathIssue]
    force: bool


BeforeRewind = Callable[[RewindContext], Awaitable["RewindRefused | None"]]


# -- reading sessions --------------------------------------------------------------------------


def session_infos(store: Store) -> list[CheckpointSession]:
    """Every recorded session of the workspace, newest first."""
    counts = dict(
        store.db.execute(
            "SELECT session, count(*) FROM calls WHERE mutates IS NOT NULL GROUP BY session"
        ).fetchall()
    )
    sizes = store.bytes_by_session()
    return [
        CheckpointSession(
            id=row["id"],
            host=row["host"] or "",
            cwd=row["cwd"] or "",
            started=row["started"] or 0.0,
            ended=row["ended"],
            running=session_alive(row),
            calls=int(counts.get(row["id"], 0)),
            bytes=sizes.get(row["id"], 0),
        )
        for row in store.sessions()
    ]


def find_session(store: Store, given: str | None, *, latest_rewind: bool = False) -> dict[str, Any]:
    """The session ``given`` names (its id or a unique prefix of at least 4 characters); by
    default the latest one (``latest_rewind``: the one whose latest rewind is the newest)."""
    sessions = store.sessions()
    if not sessions:
        raise CheckpointError("no checkpoints recorded in this workspace")
    if given is None:
        if latest_rewind:
            row = store.db.execute(
                "SELECT session FROM calls WHERE tool = ? ORDER BY started DESC LIMIT 1",
                (REWIND_TOOL,),
            ).fetchone()
            if row is None:
                raise CheckpointError("no rewind to undo in this workspace")
            return next(s for s in sessions if s["id"] == row[0])
        return sessions[0]
    matches = [s for s in sessions if s["id"] == given]
    if not matches and len(given) >= 4:
        matches = [s for s in sessions if s["id"].startswith(given)]
    if not matches:
        raise CheckpointError(
            f"no session {given!r} in this workspace (see pi checkpoints --sessions)"
        )
    if len(matches) > 1:
        raise CheckpointError(
            f"session {given!r} is ambiguous: {len(matches)} sessions start with it"
        )
    return matches[0]


def recover_if_crashed(
    store: Store, row: dict[str, Any], settings: CheckpointSettings, tree: WorkspaceTree | None
) -> dict[str, Any]:
    """Recover ``row``'s session when its process died before it ended (see the module);
    returns the session's row as it is now."""
    if row["ended"] is not None or session_alive(row) or tree is None:
        return row
    if row.get("location") not in (None, tree.location):
        return row
    SessionCheckpoints.resume(store, row, settings, tree).recover()
    return next(s for s in store.sessions() if s["id"] == row["id"])


def _state(text: str | None) -> State | None:
    return State.from_json(loads(text)) if text else None


def _display(path: str, state: State | None) -> str:
    return path + "/" if state is not None and state.kind == "dir" else path


def summarize(
    net: dict[str, tuple[State | None, State | None]],
) -> list[FileChange]:
    """The :class:`FileChange` list of ``{path: (before, after)}`` (no-change paths left out),
    a deleted and a created file of the same content paired as a rename; in path order."""
    created: dict[str, str] = {}
    deleted: dict[str, str] = {}
    changes: dict[str, FileChange] = {}
    for path, (before, after) in net.items():
        if before is None and after is None:
            continue
        if before is not None and after is not None and before.same(after):
            continue
        restorable = before is None or before.restorable
        if before is None:
            assert after is not None
            changes[path] = FileChange(_display(path, after), "created", after.kind)
            if after.kind == "file" and after.digest:
                created.setdefault(after.digest, path)
        elif after is None:
            changes[path] = FileChange(
                _display(path, before), "deleted", before.kind, None, restorable
            )
            if before.kind == "file" and before.digest:
                deleted.setdefault(before.digest, path)
        else:
            changes[path] = FileChange(
                _display(path, after), "modified", after.kind, None, restorable
            )
    for digest, new in created.items():
        old = deleted.get(digest)
        if old is not None and old in changes and new in changes:
            restorable = changes[old].restorable
            del changes[old]
            changes[new] = FileChange(new, "renamed", "file", old, restorable)
    return [changes[p] for p in sorted(changes)]


def list_session_checkpoints(store: Store, session: dict[str, Any]) -> list[Checkpoint]:
    """The recorded calls of ``session`` in order, with what each changed."""
    sid = session["id"]
    per_call: dict[int, dict[str, tuple[State | None, State | None]]] = {}
    for call, stored, before, after in store.db.execute(
        "SELECT call, path, before, after FROM events WHERE session = ? AND call IS NOT NULL"
        " ORDER BY seq",
        (sid,),
    ):
        path = path_of(stored)
        net = per_call.setdefault(call, {})
        first = net[path][0] if path in net else _state(before)
        net[path] = (first, _state(after))
    sizes = dict(
        store.db.execute(
            "SELECT call, sum(stored) FROM blobs WHERE session = ? GROUP BY call", (sid,)
        ).fetchall()
    )
    found: list[Checkpoint] = []
    for ordinal, cid, parent, turn, tool, state, started in store.db.execute(
        "SELECT ordinal, id, parent, turn, tool, state, started FROM calls WHERE session = ?"
        " ORDER BY ordinal",
        (sid,),
    ):
        found.append(
            Checkpoint(
                session_id=sid,
                ordinal=ordinal,
                call_id=cid,
                tool=tool,
                turn=turn,
                parent_call_id=parent,
                state=state,
                changes=tuple(summarize(per_call.get(ordinal, {}))),
                bytes=int(sizes.get(ordinal) or 0),
                started=started or 0.0,
            )
        )
    return found


# -- rewinding -----------------------------------------------------------------------------------


def target_mark(
    store: Store, session: dict[str, Any], *, to: str | None, turn: int | None, undo: bool
) -> tuple[int, str]:
    """The mark (seq) a rewind goes back to and its description."""
    sid = session["id"]
    if undo:
        row = store.db.execute(
            "SELECT id, mark FROM calls WHERE session = ? AND tool = ? ORDER BY ordinal DESC LIMIT 1",
            (sid, REWIND_TOOL),
        ).fetchone()
        if row is None:
            raise CheckpointError(f"session {sid[:12]} has no rewind to undo")
        return int(row[1]), f"before {row[0]} (undo)"
    if turn is not None:
        # SQLite's integers are 64-bit: a larger turn (``--turn 99999999999999999999``) is one
        # no session has, not an OverflowError
        row = (
            store.db.execute(
                "SELECT mark FROM turns WHERE session = ? AND turn = ?", (sid, turn)
            ).fetchone()
            if turn < 2**63
            else None
        )
        if row is None:
            if turn == 1:
                return 0, "the start of turn 1"
            raise CheckpointError(f"session {sid[:12]} has no turn {turn}")
        return int(row[0]), f"the start of turn {turn}"
    assert to is not None
    rows = store.db.execute(
        "SELECT mark, ordinal FROM calls WHERE session = ? AND id = ?", (sid, to)
    ).fetchall()
    if not rows:
        raise CheckpointError(
            f"no checkpoint for call {to!r} in session {sid[:12]} (calls that cannot change the"
            " workspace have none: see pi checkpoints)"
        )
    if len(rows) > 1:
        raise CheckpointError(
            f"call id {to!r} names {len(rows)} calls in session {sid[:12]}: use --turn"
        )
    return int(rows[0][0]), f"before call {to}"


def current_state(
    tree: WorkspaceTree, rel: str, settings: CheckpointSettings
) -> tuple[State | None, bytes | None]:
    """What is at ``rel`` now, and a file's bytes when they were read (stored for undo)."""
    entry: TreeEntry | None = tree.lstat(rel)
    if entry is None:
        return None, None
    if entry.kind == "file":
        if entry.size > settings.max_file_bytes:
            digest, size = tree.digest(rel)
            return State("file", entry.mode, digest, size=size, unstored="too large"), None
        data = tree.read(rel)
        return State("file", entry.mode, digest_of(data), size=len(data)), data
    if entry.kind == "symlink":
        return State("symlink", 0, target=entry.target), None
    return State(entry.kind, entry.mode), None


@dataclass
class _Step:
    path: str
    desired: State | None
    expected: State | None
    current: State | None
    data: bytes | None


def _matches(files: Sequence[str], path: str) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in files)


def plan_rewind(
    store: Store,
    session: dict[str, Any],
    tree: WorkspaceTree,
    settings: CheckpointSettings,
    mark: int,
    target: str,
    *,
    files: Sequence[str] = (),
    force: bool = False,
    dry_run: bool = False,
) -> tuple[RewindResult, list[_Step]]:
    """What rewinding ``session`` to ``mark`` changes (see the module), and the steps to do it."""
    sid = session["id"]
    wanted: dict[str, list[Any]] = {}
    for call, stored, before, after in store.db.execute(
        "SELECT call, path, before, after FROM events WHERE session = ? AND seq > ? ORDER BY seq",
        (sid, mark),
    ):
        path = path_of(stored)
        if files and not _matches(files, path):
            continue
        entry = wanted.setdefault(path, [_state(before), None, False])
        entry[1] = _state(after)
        if call is None:
            entry[2] = True
    result = RewindResult(session_id=sid, target=target, dry_run=dry_run)
    for (call_id,) in store.db.execute(
        "SELECT id FROM calls WHERE session = ? AND state = ? AND mark >= ? ORDER BY ordinal",
        (sid, UNRECORDED, mark),
    ):
        result.unrestorable.append(
            PathIssue(
                f"(call {call_id})",
                "its changes were not recorded (the workspace was larger than max_files or max_bytes)",
            )
        )
    steps: list[_Step] = []
    for path in sorted(wanted):
        desired, expected, outside = wanted[path]
        if tree.excludes(path):
            continue
        try:
            current, data = current_state(tree, path, settings)
        except OSError as exc:
            result.unrestorable.append(PathIssue(path, f"cannot be read: {exc.strerror or exc}"))
            continue
        if (desired is None and current is None) or (desired is not None and desired.same(current)):
            continue
        if not force:
            if outside:
                result.conflicts.append(PathIssue(path, "changed outside pi after the checkpoint"))
                continue
            if not (current is None and expected is None) and not (
                expected is not None and expected.same(current)
            ):
                result.conflicts.append(PathIssue(path, "changed outside pi since it was recorded"))
                continue
        if desired is not None and not desired.restorable:
            why = {
                "too large": "larger than max_file_bytes when it was recorded: content not stored",
                "unreadable": "could not be read when it was recorded: content not stored",
            }.get(desired.unstored or "", f"a {desired.kind} file cannot be re-created")
            result.unrestorable.append(PathIssue(path, why))
            continue
        steps.append(_Step(path, desired, expected, current, data))
    result.changes = summarize({s.path: (s.current, s.desired) for s in steps})
    return result, steps


def _depth(path: str) -> int:
    return path.count("/")


def apply_steps(tree: WorkspaceTree, store: Store, steps: list[_Step]) -> dict[str, str]:
    """Carry ``steps`` out (removals deepest first, then directories, files and symlinks
    shallowest first, then directory modes deepest first); returns ``{path: error}`` for the
    steps that failed."""
    failed: dict[str, str] = {}

    def attempt(step: _Step, action: Callable[[], None]) -> None:
        if step.path in failed:
            return
        try:
            action()
        except OSError as exc:
            failed[step.path] = exc.strerror or str(exc)

    for step in sorted(steps, key=lambda s: -_depth(s.path)):
        current, desired = step.current, step.desired
        if current is not None and (
            desired is None
            or desired.kind != current.kind
            or (current.kind == "symlink" and desired.kind != "symlink")
        ):
            attempt(step, lambda p=step.path: tree.remove(p))  # type: ignore[misc]
    dirs: list[_Step] = []
    for step in sorted(steps, key=lambda s: (_depth(s.path), s.path)):
        desired = step.desired
        if desired is None:
            continue
        if desired.kind == "dir":
            attempt(step, lambda p=step.path: tree.mkdir(p, 0o700))  # type: ignore[misc]
            dirs.append(step)
        elif desired.kind == "symlink":
            assert desired.target is not None
            attempt(step, lambda p=step.path, t=desired.target: tree.symlink(p, t))  # type: ignore[misc]
        elif desired.kind == "file":
            current = step.current
            if current is not None and current.kind == "file" and current.digest == desired.digest:
                attempt(step, lambda p=step.path, m=desired.mode: tree.chmod(p, m))  # type: ignore[misc]
                continue
            assert desired.digest is not None

            def write(p: str = step.path, d: State = desired) -> None:
                assert d.digest is not None
                parent = p.rpartition("/")[0]
                if parent and tree.lstat(parent) is None:
                    parts = parent.split("/")
                    for i in range(1, len(parts) + 1):
                        sub = "/".join(parts[:i])
                        if tree.lstat(sub) is None:
                            tree.mkdir(sub, 0o755)
                tree.write(p, store.read_blob(d.digest), d.mode)

            try:
                attempt(step, write)
            except Exception as exc:  # the store (a damaged blob): that path fails
                failed[step.path] = str(exc)
    for step in sorted(dirs, key=lambda s: -_depth(s.path)):
        assert step.desired is not None
        attempt(step, lambda p=step.path, m=step.desired.mode: tree.chmod(p, m))  # type: ignore[misc]
    return failed


def record_rewind(
    store: Store, session: dict[str, Any], steps: list[_Step], *, phase: str, rewind: dict[str, Any]
) -> None:
    """Record the rewind as a call of ``session`` (see the module): ``phase="before"`` stores the
    contents it is about to replace and the planned events, durably, before anything changes;
    ``phase="after"`` records how the steps that failed ended and closes the call."""
    sid = session["id"]
    with store.transaction() as db:
        if phase == "before":
            last = db.execute(
                "SELECT coalesce(max(seq), 0) FROM events WHERE session = ?", (sid,)
            ).fetchone()[0]
            ordinal = (
                db.execute(
                    "SELECT coalesce(max(ordinal), 0) FROM calls WHERE session = ?", (sid,)
                ).fetchone()[0]
                + 1
            )
            count = db.execute(
                "SELECT count(*) FROM calls WHERE session = ? AND tool = ?", (sid, REWIND_TOOL)
            ).fetchone()[0]
            turn = db.execute(
                "SELECT coalesce(max(turn), 1) FROM calls WHERE session = ?", (sid,)
            ).fetchone()[0]
            rewind.update(ordinal=ordinal, id=f"rewind-{count + 1}", seq=int(last))
            blobs = [
                encode_blob(s.current.digest, s.data)
                for s in steps
                if s.current is not None and s.current.digest and s.data is not None
            ]
            store.put_blobs(db, blobs, sid, ordinal)
            db.execute(
                "INSERT INTO calls(session, ordinal, id, parent, turn, tool, mutates, mark, state,"
                " started, ended, paths) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (sid, ordinal, rewind["id"], None, turn, REWIND_TOOL, "workspace", int(last),
                 "running", now(), None, dumps([s.path for s in steps])),
            )  # fmt: skip
            seq = int(last)
            digests: set[str] = set()
            for step in steps:
                seq += 1
                for state in (step.current, step.desired):
                    if state is not None and state.digest and state.unstored is None:
                        digests.add(state.digest)
                db.execute(
                    "INSERT INTO events(session, seq, call, path, before, after) VALUES (?,?,?,?,?,?)",
                    (sid, seq, ordinal, db_path(step.path),
                     dumps(step.current.to_json()) if step.current else None,
                     dumps(step.desired.to_json()) if step.desired else None),
                )  # fmt: skip
            rewind["seq"] = seq
            db.executemany(
                "INSERT OR IGNORE INTO refs(session, digest) VALUES (?, ?)",
                [(sid, d) for d in digests],
            )
            db.execute("UPDATE sessions SET seq = ?, updated = ? WHERE id = ?", (seq, now(), sid))
        else:
            seq = int(rewind["seq"])
            for path, (desired, actual) in rewind.get("failed", {}).items():
                seq += 1
                db.execute(
                    "INSERT INTO events(session, seq, call, path, before, after) VALUES (?,?,?,?,?,?)",
                    (sid, seq, rewind["ordinal"], db_path(path),
                     dumps(desired.to_json()) if desired else None,
                     dumps(actual.to_json()) if actual else None),
                )  # fmt: skip
            db.execute(
                "UPDATE calls SET state = 'done', ended = ? WHERE session = ? AND ordinal = ?",
                (now(), sid, rewind["ordinal"]),
            )
            db.execute("UPDATE sessions SET seq = ?, updated = ? WHERE id = ?", (seq, now(), sid))


def lock_keys(tree: WorkspaceTree, steps: list[_Step]) -> list[str]:
    """The mutation queue's keys of the paths a rewind changes (their real paths), sorted: the
    inter-process locks a rewind holds."""
    return sorted({os.path.realpath(os.path.join(tree.root, s.path)) for s in steps})


__all__ = [
    "REWIND_TOOL",
    "BeforeRewind",
    "Checkpoint",
    "CheckpointError",
    "CheckpointSession",
    "FileChange",
    "PathIssue",
    "RewindContext",
    "RewindRefused",
    "RewindResult",
    "apply_steps",
    "current_state",
    "find_session",
    "list_session_checkpoints",
    "lock_keys",
    "plan_rewind",
    "record_rewind",
    "recover_if_crashed",
    "session_infos",
    "summarize",
    "target_mark",
]
