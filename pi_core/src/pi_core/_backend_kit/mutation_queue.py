"""The file mutation queue: edits and writes of one file run one after another.

``await with_file_mutation_queue(path, fn)`` runs ``await fn()`` once every earlier call for the
same file has finished, and returns its result (or raises its exception). Calls for different
files run in parallel. Edit and write use it, and a third-party tool that modifies files can
join it the same way.

Across processes: the shared :data:`default_queue` also holds an OS advisory lock on the key
while ``fn`` runs (:func:`pi_core._backend_kit.interprocess.path_lock`: ``flock`` on a lock file
in pi's per-user state directory, never beside the file), so several pi processes on one
machine editing one file run one after another and lose no update. Limits: only pi processes of
this machine take it (not two machines sharing a network file system or a remote backend's
host, not an editor).

Key: ``os.path.realpath`` of the absolute path: the real path for an existing file (a symlink
and its target share one queue) and the resolved absolute path otherwise. A backend whose files
are elsewhere (SSH, containers) passes its own ``key`` (e.g. its ``realpath``).

Order: calls register in the order they were made. Each call takes its turn when it is made
(before it awaits anything); a tool whose path takes awaiting to resolve uses
:func:`with_file_mutation_queue_resolving`, whose resolution runs at once, alongside the
resolution of the calls made before and after it (a batch of edits resolves its paths in a few
worker-thread hops), and registers only once every earlier call has registered or given up, so
resolution cannot reorder calls.

One way to key a tool's ``path`` argument: :func:`with_tool_path_mutation_queue` resolves it with
:func:`pi_core._backend_kit.paths.resolve_existing_path` (``for_read=False``: the exact name first, then
special spaces as U+0020) and keys on the backend's ``realpath`` of the result. ``edit`` and
``write`` both use it, so an edit and a write of the same file (even one whose name really
contains U+00A0) always share one queue.

Observers (checkpoints): a :class:`MutationObserver` made current with :func:`observe_mutations`
(the pipeline does, around a tool call that declares ``mutates="paths"``) is told of each
mutation at its turn in the queue, which is the last moment before the file changes and, in a
batch of calls on one file, the moment that puts each call's prior state in source order:
``before_mutation(key, staged)`` before ``fn`` runs (``staged``: what earlier calls of its
group staged, ``None``: read the file), ``after_mutation(key, staged)`` after it, and ``flush()``
before any bytes land on disk (a write-ahead rule: a crash never leaves a change without the
record of what was there before).

Cancellation: a call still waiting leaves the queue at once. A call whose ``fn`` is running
keeps the queue until ``fn`` returns or raises; steps that must finish even on abort (the write
in flight) run under :func:`run_shielded`, so an aborted write settles before the next caller of
the same file starts (``docs/explanation/mutation-queue.md``).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Any, Protocol, TypeVar

import trio

from pi_core._backend_kit.interprocess import path_lock
from pi_core._backend_kit.operations import FileOperations
from pi_core._backend_kit.paths import resolve_existing_path
from pi_core._errors import ToolError

T = TypeVar("T")


class MutationObserver(Protocol):
    """What is told of each file mutation run through the queue (see the module): checkpoints.

    ``key`` is the queue key (the file's real path on the backend). ``staged``: in a call of a
    group (:func:`stage_file_write`), the content the group has staged (``bytes`` or a sequence
    of bytes-like pieces, the file's bytes in order), ``None`` when nothing is staged (the file
    on disk is current)."""

    async def before_mutation(self, key: str, staged: Any) -> None:
        """Before ``fn`` runs, in its turn: record the file's prior state."""
        ...

    async def after_mutation(self, key: str, staged: Any) -> None:
        """After ``fn`` returned or raised (shielded): record the new state (``staged``: what
        this call staged; ``None``: read the file)."""
        ...

    async def flush(self) -> None:
        """Make what was recorded durable: called before bytes land on disk."""
        ...

    def landed(self, key: str, ok: bool) -> None:
        """The group's staged content was written (``ok``) or not: the file on disk is what
        it is now."""
        ...


_observer: contextvars.ContextVar[MutationObserver | None] = contextvars.ContextVar(
    "pi_mutation_observer", default=None
)


@contextlib.contextmanager
def observe_mutations(observer: MutationObserver | None) -> Iterator[None]:
    """Make ``observer`` current for the body (its tasks inherit it): every mutation queued
    from there is reported to it."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


async def _observed(key: str, fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()`` reported to the current observer: before (made durable), after."""
    observer = _observer.get()
    if observer is None:
        return await fn()
    await observer.before_mutation(key, None)
    await observer.flush()
    try:
        return await fn()
    finally:
        with trio.CancelScope(shield=True):
            await observer.after_mutation(key, None)


class _Group:
    """Consecutive calls of one key that share one write (group commit, see
    :func:`stage_file_write`): the content staged by the last of them, the write that lands it,
    the key's inter-process lock held from the first call to that write, the observers told of
    its calls, and how it ended."""

    __slots__ = ("content", "error", "key", "landed", "lands", "lock", "locked", "observers")

    def __init__(self) -> None:
        self.key = ""
        self.observers: list[MutationObserver] = []
        self.content: Any = None
        self.lands: Callable[[Any], Awaitable[None]] | None = None
        self.lock = contextlib.AsyncExitStack()
        self.locked = False
        self.landed = trio.Event()
        self.error: BaseException | None = None


class _Turn:
    """A call's place in the registration order (see :meth:`FileMutationQueue._register_in_turn`):
    a node of the chain of calls not yet registered."""

    __slots__ = ("done", "next", "prev")

    def __init__(self, prev: _Turn | None) -> None:
        self.prev = prev
        self.next: _Turn | None = None
        self.done = trio.Event()


class _Entry:
    """One registered call: a node of its key's FIFO chain."""

    __slots__ = ("done", "group", "inherited", "key", "next", "prev")

    def __init__(self, key: str, prev: _Entry | None, group: Hashable | None = None) -> None:
        self.key = key
        self.prev = prev
        self.next: _Entry | None = None
        self.done = trio.Event()
        self.group = group
        self.inherited: _Group | None = None


_current: contextvars.ContextVar[_Group | None] = contextvars.ContextVar(
    "pi_file_mutation_group", default=None
)


def staged_file_content() -> Any:
    """Inside a call queued with ``group=...``: the file's content as the earlier calls of its
    group left it, not yet written (read this instead of the file); ``None`` when nothing is
    staged (read the file) or outside such a call."""
    group = _current.get()
    return None if group is None else group.content


def stage_file_write(content: Any, write: Callable[[Any], Awaitable[None]]) -> None:
    """Inside a call queued with ``group=...``: make ``content`` the file's new content and let
    the queue land it with ``await write(content)``. ``content`` is what the calls of one group
    agree on (bytes, a list of pieces): a ``group`` value names the tool and the backend.

    Group commit: when the next call queued on the same file is of the same group, it starts at
    once and sees ``content`` through :func:`staged_file_content`; the last call of the run of
    such calls lands the final content with one ``write`` (shielded from cancellation; when that
    call has been cancelled — an abort — nothing is written and the calls report the abort). The
    inter-process lock is held from the first call to that write, and every call that staged
    returns only once the write has landed, so a result never claims an edit that is not on
    disk; if the write raises, every one of them raises that exception. Outside such a call,
    raises :class:`RuntimeError`."""
    group = _current.get()
    if group is None:
        raise RuntimeError("stage_file_write() outside a call queued with group=")
    group.content = content
    group.lands = write


class FileMutationQueue:
    """Per-key FIFO serialisation of async callables. :data:`default_queue` is the shared one.

    Each key holds a chain of entries; an entry runs when every entry registered before it on
    the same key has finished or given up waiting (cancelled before its turn). With
    ``interprocess=True`` an entry also holds the key's OS lock while it runs (see the module).
    """

    def __init__(self, *, interprocess: bool = False) -> None:
        self._tails: dict[str, _Entry] = {}
        self._last_turn: _Turn | None = None
        self._interprocess = interprocess

    @staticmethod
    def key_for(path: str) -> str:
        """The queue key of ``path``: realpath of the absolute path (non-existing parts kept)."""
        return os.path.realpath(os.path.abspath(path))

    def _register(self, key: str, group: Hashable | None = None) -> _Entry:
        entry = _Entry(key, self._tails.get(key), group)
        if entry.prev is not None:
            entry.prev.next = entry
        self._tails[key] = entry
        return entry

    def _unlink(self, entry: _Entry) -> None:
        if entry.next is not None:
            entry.next.prev = entry.prev
        if entry.prev is not None:
            entry.prev.next = entry.next
        if self._tails.get(entry.key) is entry:
            if entry.prev is None:
                del self._tails[entry.key]
            else:
                self._tails[entry.key] = entry.prev
        entry.done.set()

    async def _run_entry(self, entry: _Entry, fn: Callable[[], Awaitable[T]]) -> T:
        if entry.group is not None:
            return await self._run_grouped(entry, fn)
        try:
            while entry.prev is not None:
                await entry.prev.done.wait()
            if not self._interprocess:
                return await _observed(entry.key, fn)
            async with path_lock(entry.key):
                return await _observed(entry.key, fn)
        finally:
            self._unlink(entry)

    async def _run_grouped(self, entry: _Entry, fn: Callable[[], Awaitable[T]]) -> T:
        """Run a call of a group (see :func:`stage_file_write`): join the group the previous
        call handed over or open one, run ``fn``, then hand the group to the next call if it is
        of the same group, else land what was staged; return once it has landed."""
        group: _Group | None = None
        staged = False
        try:
            while entry.prev is not None:
                await entry.prev.done.wait()
            group, entry.inherited = entry.inherited or _Group(), None
            if self._interprocess and not group.locked:
                await group.lock.enter_async_context(path_lock(entry.key))
                group.locked = True
            group.key = entry.key
            observer = _observer.get()
            if observer is not None:
                if observer not in group.observers:
                    group.observers.append(observer)
                await observer.before_mutation(
                    entry.key, group.content if group.lands is not None else None
                )
            before = group.lands
            group.lands = None
            token = _current.set(group)
            try:
                result = await fn()
            finally:
                _current.reset(token)
                staged = group.lands is not None
                if not staged:
                    group.lands = before
                elif observer is not None:
                    with trio.CancelScope(shield=True):
                        await observer.after_mutation(entry.key, group.content)
        finally:
            if group is None and entry.inherited is not None:  # cancelled before its turn
                group, entry.inherited = entry.inherited, None
            try:
                if group is not None and not self._pass_on(entry, group):
                    aborted = trio.current_effective_deadline() == -math.inf
                    with trio.CancelScope(shield=True):
                        await self._land(group, aborted=aborted)
            finally:
                self._unlink(entry)
        if staged:
            await group.landed.wait()
            if group.error is not None:
                raise group.error
        return result

    @staticmethod
    def _pass_on(entry: _Entry, group: _Group) -> bool:
        """Hand ``group`` to the next call when it is of the same group (it has not started:
        it waits for this one); whether it was handed on."""
        successor = entry.next
        if successor is None or successor.group != entry.group:
            return False
        successor.inherited = group
        return True

    @staticmethod
    async def _land(group: _Group, *, aborted: bool = False) -> None:
        """Write what the group staged, record how it went, release the lock. ``aborted`` (the
        call that would land it was cancelled): write nothing, so no call of the group reports
        an abort for an edit that is on disk."""
        wrote = False
        try:
            if group.lands is not None and aborted:
                group.error = ToolError("Operation aborted")
            elif group.lands is not None:
                for observer in group.observers:
                    await observer.flush()
                await group.lands(group.content)
                wrote = True
        except BaseException as exc:  # every call that staged re-raises it
            group.error = exc
        finally:
            group.content = None
            for observer in group.observers:
                observer.landed(group.key, wrote)
            group.observers = []
            await group.lock.aclose()
            group.landed.set()

    async def run(
        self,
        path: str,
        fn: Callable[[], Awaitable[T]],
        *,
        key: str | None = None,
        group: Hashable | None = None,
    ) -> T:
        """Run ``await fn()`` after every earlier call with the same key; see the module doc.
        ``group``: calls of equal ``group`` queued one after another on a key may share one
        write (:func:`stage_file_write`)."""

        async def find() -> tuple[str, str]:
            return path, key if key is not None else self.key_for(path)

        entry, _ = await self._register_in_turn(find, group)
        return await self._run_entry(entry, fn)

    async def run_resolving(
        self,
        resolve: Callable[[], Awaitable[str]],
        fn: Callable[[str], Awaitable[T]],
        *,
        key: Callable[[str], Awaitable[str]] | None = None,
        group: Hashable | None = None,
    ) -> T:
        """Like :meth:`run` for a path that takes awaiting to find (e.g. through a backend's
        ``stat``): ``await resolve()`` runs at once, then ``key`` (default :meth:`key_for`)
        maps the resolved path to the queue key; the call registers in the order the calls
        were made, once every earlier one has registered (or given up), so calls still queue
        in call order; then ``await fn(path)`` runs in turn and its result is returned. An
        exception of ``resolve`` or ``key`` propagates and nothing is queued."""

        async def find() -> tuple[str, str]:
            path = await resolve()
            return path, self.key_for(path) if key is None else await key(path)

        return await self.run_found(find, fn, group=group)

    async def run_found(
        self,
        find: Callable[[], Awaitable[tuple[str, str]]],
        fn: Callable[[str], Awaitable[T]],
        *,
        group: Hashable | None = None,
    ) -> T:
        """:meth:`run_resolving` with one step that finds both the path and its queue key
        (``await find()`` gives ``(path, key)``): a backend that resolves both in one
        round trip."""
        entry, path = await self._register_in_turn(find, group)
        return await self._run_entry(entry, lambda: fn(path))

    async def _register_in_turn(
        self, find: Callable[[], Awaitable[tuple[str, str]]], group: Hashable | None
    ) -> tuple[_Entry, str]:
        """Take a turn now (call order), ``await find()`` alongside the other calls' finding,
        then register on the key found once every earlier turn is over. A call cancelled or
        failing before it registers leaves its turn and queues nothing; the calls after it
        then wait for the ones before it."""
        turn = _Turn(self._last_turn)
        if turn.prev is not None:
            turn.prev.next = turn
        self._last_turn = turn
        try:
            path, key = await find()
            while turn.prev is not None:
                await turn.prev.done.wait()
            return self._register(key, group), path
        finally:
            if turn.next is not None:
                turn.next.prev = turn.prev
            if turn.prev is not None:
                turn.prev.next = turn.next
            if self._last_turn is turn:
                self._last_turn = turn.prev
            turn.done.set()

    def statistics(self) -> dict[str, Any]:
        """``{"keys": number of files with registered calls, "registered": {key: calls}}``."""
        registered: dict[str, int] = {}
        for key, tail in self._tails.items():
            count = 0
            node: _Entry | None = tail
            while node is not None:
                count += 1
                node = node.prev
            registered[key] = count
        return {"keys": len(self._tails), "registered": registered}


default_queue = FileMutationQueue(interprocess=True)
"""The process-wide queue that edit, write and third-party tools share (with the OS lock)."""


async def with_file_mutation_queue(
    path: str, fn: Callable[[], Awaitable[T]], *, key: str | None = None
) -> T:
    """Run ``await fn()`` serialised with every other mutation of the same file.

    ``path``: the file (absolute, or relative to the process cwd); ``key`` overrides the queue
    key (backends whose files are not local). Returns ``fn``'s result; raises its exception.
    """
    return await default_queue.run(path, fn, key=key)


async def with_file_mutation_queue_resolving(
    resolve: Callable[[], Awaitable[str]],
    fn: Callable[[str], Awaitable[T]],
    *,
    key: Callable[[str], Awaitable[str]] | None = None,
) -> T:
    """Resolve a path and queue on it, keeping call order (see
    :meth:`FileMutationQueue.run_resolving`)."""
    return await default_queue.run_resolving(resolve, fn, key=key)


async def with_tool_path_mutation_queue(
    raw_path: str,
    cwd: str,
    operations: FileOperations,
    fn: Callable[[str], Awaitable[T]],
    *,
    group: Hashable | None = None,
) -> T:
    """Run ``await fn(path)`` in the queue of the file a tool's ``path`` argument names.

    ``path`` is ``resolve_existing_path(raw_path, cwd, operations, for_read=False)`` (port
    decision 9); the key is ``operations.realpath(path)`` (symlinks resolved, the missing rest
    kept; ``path`` itself if that fails). This is the one way every mutating tool (edit, write,
    third-party tools) keys the queue. A backend with the optional
    ``resolve_for_mutation(raw_path, cwd)`` finds both in one step (``None``: it cannot, the
    two steps above are taken). ``group``: see :meth:`FileMutationQueue.run` and
    :func:`stage_file_write`. Returns ``fn``'s result; raises its exception.
    """
    resolve_for_mutation = getattr(operations, "resolve_for_mutation", None)

    async def find() -> tuple[str, str]:
        if callable(resolve_for_mutation):
            found = await resolve_for_mutation(raw_path, cwd)
            if found is not None:
                return found
        path = await resolve_existing_path(raw_path, cwd, operations, for_read=False)
        try:
            return path, await operations.realpath(path)
        except OSError:
            return path, path

    return await default_queue.run_found(find, fn, group=group)


async def run_shielded(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await fn(*args)`` shielded from cancellation, then raise ``Cancelled`` if the caller was
    cancelled meanwhile: the step finishes (a write lands whole) and the abort is still seen
    right after it (as Pi, abort is checked after every awaited file-system step)."""
    with trio.CancelScope(shield=True):
        result = await fn(*args)
    await trio.lowlevel.checkpoint_if_cancelled()
    return result


__all__ = [
    "FileMutationQueue",
    "MutationObserver",
    "default_queue",
    "observe_mutations",
    "run_shielded",
    "stage_file_write",
    "staged_file_content",
    "with_file_mutation_queue",
    "with_file_mutation_queue_resolving",
    "with_tool_path_mutation_queue",
]
