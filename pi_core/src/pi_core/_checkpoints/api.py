"""The checkpoints of a workspace from a program or ``pi``: list sessions and checkpoints,
rewind, undo a rewind, prune (``docs/how-to/undo.md``).

Each function finds the workspace from ``cwd``: the first of ``cwd`` and its parents that has
recorded checkpoints. ``config`` is a loaded config dict (its ``[checkpoints]`` table). A rewind
holds the inter-process lock of every file it restores (the lock the file mutation queue takes,
:func:`~pi_core._backend_kit.interprocess.path_lock`), so a pi process editing one of them waits
for it, and it for them.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from pi_core._backend_kit.interprocess import path_lock
from pi_core._backend_kit.tree import LocalWorkspaceTree, WorkspaceTree
from pi_core._checkpoints.history import (
    BeforeRewind,
    Checkpoint,
    CheckpointError,
    CheckpointSession,
    PathIssue,
    RewindContext,
    RewindResult,
    apply_steps,
    current_state,
    find_session,
    list_session_checkpoints,
    lock_keys,
    plan_rewind,
    record_rewind,
    recover_if_crashed,
    session_infos,
    target_mark,
)
from pi_core._checkpoints.recorder import SessionCheckpoints
from pi_core._checkpoints.store import Store, StoreError, checkpoint_dir, session_alive, store_path
from pi_core._config import CheckpointSettings, checkpoint_settings


def find_workspace(cwd: str, settings: CheckpointSettings) -> str | None:
    """The first of ``cwd`` and its parents whose checkpoints are recorded, or ``None``."""
    directory = checkpoint_dir(settings)
    here = os.path.abspath(cwd)
    while True:
        if os.path.exists(store_path(directory, here)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


class Workspace:
    """A workspace's store and tree, for the functions below (a context manager)."""

    def __init__(self, cwd: str, config: Mapping[str, Any] | None) -> None:
        self.settings = checkpoint_settings(config)
        root = find_workspace(cwd, self.settings)
        if root is None:
            raise CheckpointError(f"no checkpoints recorded for {os.path.abspath(cwd)}")
        self.root = root
        try:
            self.store = Store.open_for(self.settings, root)
        except StoreError as exc:
            raise CheckpointError(str(exc)) from None
        self.exclude = list(self.settings.exclude)
        self.tree = LocalWorkspaceTree(root, self.exclude)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()
        self.tree.close()

    def session(self, given: str | None, *, latest_rewind: bool = False) -> dict[str, Any]:
        """The session ``given`` (recovered if its process died); :attr:`tree` becomes its
        tree, leaving out what it left out when it was recorded."""
        row = find_session(self.store, given, latest_rewind=latest_rewind)
        return self.recover(row)

    def recover(self, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` recovered if its process died, with :attr:`tree` made the session's."""
        exclude = [*self.settings.exclude, *self.store.session_exclude(row["id"])]
        if exclude != self.exclude:
            self.tree.close()
            self.tree, self.exclude = LocalWorkspaceTree(self.root, exclude), exclude
        return recover_if_crashed(self.store, row, self.settings, self.tree)


def checkpoint_sessions(
    cwd: str | os.PathLike[str] = ".", *, config: Mapping[str, Any] | None = None
) -> list[CheckpointSession]:
    """The recorded sessions of the workspace of ``cwd``, newest first."""
    with Workspace(os.fspath(cwd), config) as ws:
        return session_infos(ws.store)


def list_checkpoints(
    cwd: str | os.PathLike[str] = ".",
    *,
    session: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[CheckpointSession, list[Checkpoint]]:
    """The session ``session`` (default: the latest) and its checkpoints, in call order. A
    session whose process died mid-call is recovered first."""
    with Workspace(os.fspath(cwd), config) as ws:
        row = ws.session(session)
        info = next(s for s in session_infos(ws.store) if s.id == row["id"])
        return info, list_session_checkpoints(ws.store, row)


def _raise_file_limit(wanted: int) -> None:
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def rewind_workspace(
    store: Store,
    row: dict[str, Any],
    tree: WorkspaceTree,
    settings: CheckpointSettings,
    *,
    to: str | None = None,
    turn: int | None = None,
    undo: bool = False,
    files: Sequence[str] = (),
    dry_run: bool = False,
    force: bool = False,
    before_rewind: BeforeRewind | None = None,
) -> tuple[RewindResult, dict[str, Any]]:
    """Rewind ``row``'s session (see :mod:`pi_core._checkpoints.history`); returns the result
    and the rewind's record (``{"id", "ordinal", "seq"}``, empty when nothing changed)."""
    if sum(x is not None and x is not False for x in (to, turn, undo or None)) != 1:
        raise CheckpointError("name exactly one of --to CALL_ID, --turn N and --undo")
    if row.get("location") not in (None, tree.location):
        raise CheckpointError(
            f"session {row['id'][:12]} was recorded on {row['location']!r}: it cannot be rewound here"
        )
    mark, target = target_mark(store, row, to=to, turn=turn, undo=undo)
    plan = await trio.to_thread.run_sync(
        lambda: plan_rewind(
            store, row, tree, settings, mark, target, files=files, force=force, dry_run=dry_run
        )
    )
    result, steps = plan
    if dry_run or not steps:
        return result, {}
    if before_rewind is not None:
        refusal = await before_rewind(
            RewindContext(
                row["id"], tree.root, target, list(result.changes), list(result.conflicts), force
            )
        )
        if refusal is not None:
            raise refusal
    keys = lock_keys(tree, steps)
    _raise_file_limit(len(keys) + 256)
    record: dict[str, Any] = {}
    async with contextlib.AsyncExitStack() as locks:
        for key in keys:
            await locks.enter_async_context(path_lock(key))
        # again under the locks: what changed while waiting is seen
        result, steps = await trio.to_thread.run_sync(
            lambda: plan_rewind(store, row, tree, settings, mark, target, files=files, force=force)
        )
        if not steps:
            return result, {}
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(
                lambda: record_rewind(store, row, steps, phase="before", rewind=record)
            )
            failed = await trio.to_thread.run_sync(apply_steps, tree, store, steps)
            outcome: dict[str, Any] = {}
            for step in steps:
                if step.path in failed:
                    try:
                        actual = current_state(tree, step.path, settings)[0]
                    except OSError:
                        actual = None
                    outcome[step.path] = (step.desired, actual)
            record["failed"] = outcome
            await trio.to_thread.run_sync(
                lambda: record_rewind(store, row, steps, phase="after", rewind=record)
            )
            record["states"] = {
                s.path: outcome[s.path][1] if s.path in outcome else s.desired for s in steps
            }
    if failed:
        gone = {p.rstrip("/") for p in failed}
        result.changes = [c for c in result.changes if c.path.rstrip("/") not in gone]
        result.unrestorable += [
            PathIssue(p, f"restoring it failed: {e}") for p, e in sorted(failed.items())
        ]
    result.rewind_id = record.get("id")
    return result, record


async def rewind(
    cwd: str | os.PathLike[str] = ".",
    *,
    session: str | None = None,
    to: str | None = None,
    turn: int | None = None,
    undo: bool = False,
    files: Sequence[str] = (),
    dry_run: bool = False,
    force: bool = False,
    config: Mapping[str, Any] | None = None,
    before_rewind: BeforeRewind | None = None,
) -> RewindResult:
    """Rewind the workspace of ``cwd`` to just before the call ``to`` (a tool call id), to the
    start of turn ``turn``, or take back the latest rewind (``undo``) of ``session`` (default:
    the latest session; with ``undo``, the session of the latest rewind).

    ``files`` limits it to those paths (relative to the workspace; a directory stands for
    everything below it). ``dry_run``: change nothing, say what would change. ``force``:
    overwrite conflicts too. ``before_rewind(context)`` may refuse it (returns a
    :class:`~pi_core._checkpoints.history.RewindRefused`). Raises :class:`CheckpointError` for a
    request that cannot be carried out (no such session or call; the session still running)."""
    with Workspace(os.fspath(cwd), config) as ws:
        row = ws.session(session, latest_rewind=undo and session is None)
        if session_alive(row) and row.get("pid") != os.getpid():
            raise CheckpointError(
                f"session {row['id'][:12]} is still running (process {row['pid']}): rewind it"
                " after it ends"
            )
        rels = [_relative(ws.root, os.fspath(cwd), f) for f in files]
        result, _ = await rewind_workspace(
            ws.store, row, ws.tree, ws.settings, to=to, turn=turn, undo=undo, files=rels,
            dry_run=dry_run, force=force, before_rewind=before_rewind,
        )  # fmt: skip
        return result


def _relative(root: str, cwd: str, given: str) -> str:
    path = os.path.normpath(os.path.join(os.path.abspath(cwd), os.path.expanduser(given)))
    rel = os.path.relpath(path, root)
    if rel == "." or rel.startswith(".."):
        if rel == ".":
            return ""
        raise CheckpointError(f"--files {given}: not inside the workspace {root}")
    return rel.replace(os.sep, "/")


def prune_checkpoints(
    cwd: str | os.PathLike[str] = ".",
    *,
    config: Mapping[str, Any] | None = None,
    everything: bool = False,
    max_bytes: int | None = None,
) -> tuple[list[str], int]:
    """Remove the oldest ended sessions of the workspace of ``cwd`` until its checkpoints take
    at most ``max_bytes`` (default ``[checkpoints] max_bytes``; ``everything``: every ended
    session and the stat cache); returns the ids removed and the bytes left."""
    with Workspace(os.fspath(cwd), config) as ws:
        limit = ws.settings.max_bytes if max_bytes is None else max_bytes
        for row in ws.store.sessions():
            ws.recover(row)
        removed = ws.store.prune(limit, everything=everything)
        return removed, ws.store.total_bytes()


__all__ = [
    "Checkpoints",
    "Workspace",
    "checkpoint_sessions",
    "find_workspace",
    "list_checkpoints",
    "prune_checkpoints",
    "rewind",
    "rewind_workspace",
]


class Checkpoints:
    """A running session's checkpoints (``Session.checkpoints``): :meth:`list` and
    :meth:`rewind` for this session. Rewind between runs, not while its calls run."""

    def __init__(self, recorder: SessionCheckpoints) -> None:
        self.recorder = recorder

    @property
    def session_id(self) -> str:
        """The session's id (what ``pi checkpoints SESSION`` takes)."""
        return self.recorder.session_id

    @property
    def cwd(self) -> str:
        """The workspace."""
        return self.recorder.cwd

    async def _store(self) -> Store:
        recorder = self.recorder
        async with recorder._lock:
            await trio.to_thread.run_sync(recorder._flush)
        return recorder._ensure_store()

    async def list(self) -> list[Checkpoint]:
        """This session's checkpoints so far, in call order (none before its first call that
        may change the workspace)."""
        if self.recorder._store is None and not self.recorder._calls:
            return []
        store = await self._store()
        row = find_session(store, self.recorder.session_id)
        return list_session_checkpoints(store, row)

    async def rewind(
        self,
        *,
        to: str | None = None,
        turn: int | None = None,
        undo: bool = False,
        files: Sequence[str] = (),
        dry_run: bool = False,
        force: bool = False,
        before_rewind: BeforeRewind | None = None,
    ) -> RewindResult:
        """:func:`rewind` on this session (``files`` relative to the workspace)."""
        recorder = self.recorder
        store = await self._store()
        row = find_session(store, recorder.session_id)
        result, record = await rewind_workspace(
            store, row, recorder.tree, recorder.settings, to=to, turn=turn, undo=undo,
            files=files, dry_run=dry_run, force=force, before_rewind=before_rewind,
        )  # fmt: skip
        if record:
            async with recorder._lock:
                recorder.adopt_rewind(record)
        return result
