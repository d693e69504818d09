"""The file mutation queue: spec §6, scenarios §8.13 (163–165; 168 is in test_write.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

import pi_core
from pi_core._backend_kit.mutation_queue import (
    FileMutationQueue,
    default_queue,
    run_shielded,
    with_file_mutation_queue,
    with_file_mutation_queue_resolving,
)


def test_exported_from_pi_core() -> None:
    assert pi_core.with_file_mutation_queue is with_file_mutation_queue
    assert "with_file_mutation_queue" in pi_core.__all__


async def _in_order(fn, *args, task_status=trio.TASK_STATUS_IGNORED):
    """Run ``fn(*args)`` as a task that starts before the caller goes on (``nursery.start``):
    trio does not run ``start_soon`` tasks in start order, so tests that need call order (as
    the loop's parallel batch does) start tasks this way."""
    task_status.started()
    await fn(*args)


def _job(log: list[str], name: str, delay: float = 0.01):
    async def run() -> str:
        log.append(f"{name}:start")
        await trio.sleep(delay)
        log.append(f"{name}:end")
        return name

    return run


async def test_same_file_serialized(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    """Scenario 163."""
    target = str(tmp_path / "f.txt")
    log: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(_in_order, with_file_mutation_queue, target, _job(log, "first", 0.05))
        await nursery.start(_in_order, with_file_mutation_queue, target, _job(log, "second", 0.01))
    assert log == ["first:start", "first:end", "second:start", "second:end"]
    assert default_queue.statistics() == {"keys": 0, "registered": {}}


async def test_different_files_parallel(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Scenario 164."""
    log: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(
            _in_order, with_file_mutation_queue, str(tmp_path / "a"), _job(log, "a", 0.05)
        )
        await nursery.start(
            _in_order, with_file_mutation_queue, str(tmp_path / "b"), _job(log, "b", 0.01)
        )
    assert log.index("b:start") < log.index("a:end")
    assert log == ["a:start", "b:start", "b:end", "a:end"]


async def test_symlink_alias_shares_queue(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Scenario 165."""
    target = tmp_path / "target.txt"
    target.write_text("x")
    alias = tmp_path / "alias.txt"
    os.symlink(target, alias)
    log: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(
            _in_order, with_file_mutation_queue, str(target), _job(log, "target", 0.05)
        )
        await nursery.start(
            _in_order, with_file_mutation_queue, str(alias), _job(log, "alias", 0.01)
        )
    assert log == ["target:start", "target:end", "alias:start", "alias:end"]


async def test_symlinked_directory_of_new_file_shares_queue(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    log: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(
            _in_order, with_file_mutation_queue, str(real / "new"), _job(log, "1", 0.05)
        )
        await nursery.start(
            _in_order, with_file_mutation_queue, str(tmp_path / "link/new"), _job(log, "2")
        )
    assert log == ["1:start", "1:end", "2:start", "2:end"]


async def test_fifo_in_call_order(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    target = str(tmp_path / "f")
    order: list[int] = []

    def job(i: int):
        async def run() -> None:
            order.append(i)
            await trio.sleep(0.001 * ((i * 7) % 5))

        return run

    async with trio.open_nursery() as nursery:
        for i in range(30):
            await nursery.start(_in_order, with_file_mutation_queue, target, job(i))
    assert order == list(range(30))


async def test_result_and_exception_release_queue(tmp_path: Path) -> None:
    target = str(tmp_path / "f")

    async def boom() -> None:
        raise ValueError("bad")

    async def value() -> int:
        return 42

    with pytest.raises(ValueError, match="bad"):
        await with_file_mutation_queue(target, boom)
    assert await with_file_mutation_queue(target, value) == 42
    assert default_queue.statistics()["keys"] == 0


async def test_cancelled_waiter_leaves_queue_and_order_holds(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A call cancelled while waiting gives up its place; the next still waits for the running
    one (the chain is not broken)."""
    queue = FileMutationQueue()
    target = str(tmp_path / "f")
    key = FileMutationQueue.key_for(target)
    log: list[str] = []
    release = trio.Event()

    async def first() -> None:
        log.append("first:start")
        await release.wait()
        log.append("first:end")

    async def middle() -> None:
        log.append("middle:ran")

    async def last() -> None:
        log.append("last:start")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.run, target, first)
        await trio.sleep(0.001)
        middle_scope = trio.CancelScope()

        async def run_middle() -> None:
            with middle_scope:
                await queue.run(target, middle)

        nursery.start_soon(run_middle)
        await trio.sleep(0.001)
        nursery.start_soon(queue.run, target, last)
        await trio.sleep(0.001)
        assert queue.statistics() == {"keys": 1, "registered": {key: 3}}
        middle_scope.cancel()
        await trio.sleep(0.01)
        assert log == ["first:start"]
        release.set()
    assert log == ["first:start", "first:end", "last:start"]
    assert queue.statistics() == {"keys": 0, "registered": {}}


async def test_cancel_of_running_call_waits_for_shielded_step(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Abort while holding the queue (scenario 168's core): the shielded step finishes before
    the queue moves on, and the caller still sees the cancellation."""
    queue = FileMutationQueue()
    target = str(tmp_path / "f")
    log: list[str] = []
    step_release = trio.Event()

    async def step() -> None:
        log.append("write:start")
        await step_release.wait()
        log.append("write:end")

    async def aborted_call() -> None:
        await run_shielded(step)
        log.append("after-step (must not run)")

    async def second() -> None:
        log.append("second:start")

    with trio.CancelScope() as outer:
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def run_first() -> None:
                with scope:
                    await queue.run(target, aborted_call)
                log.append("first:cancelled")

            nursery.start_soon(run_first)
            await trio.sleep(0.001)
            nursery.start_soon(queue.run, target, second)
            await trio.sleep(0.001)
            scope.cancel()
            await trio.sleep(0.02)
            assert log == ["write:start"]
            step_release.set()
    assert not outer.cancelled_caught
    assert log == ["write:start", "write:end", "first:cancelled", "second:start"]


async def test_run_shielded_returns_value() -> None:
    async def add(a: int, b: int) -> int:
        await trio.lowlevel.checkpoint()
        return a + b

    assert await run_shielded(add, 2, 3) == 5


async def test_resolving_keeps_call_order(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A slow path resolution of the first call does not let the second overtake it."""
    target = str(tmp_path / "f")
    log: list[str] = []

    def resolver(delay: float):
        async def resolve() -> str:
            await trio.sleep(delay)
            return target

        return resolve

    def fn(name: str):
        async def run(path: str) -> None:
            assert path == target
            log.append(name)

        return run

    async with trio.open_nursery() as nursery:
        await nursery.start(
            _in_order, with_file_mutation_queue_resolving, resolver(0.05), fn("first")
        )
        await nursery.start(
            _in_order, with_file_mutation_queue_resolving, resolver(0.0), fn("second")
        )
    assert log == ["first", "second"]


async def test_resolutions_run_together_and_register_in_call_order(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Each call's path resolution starts when the call is made, alongside the earlier calls'
    (a batch's resolutions share worker-thread hops), and the calls still run in call order."""
    target = str(tmp_path / "f")
    log: list[str] = []

    def resolver(name: str, delay: float):
        async def resolve() -> str:
            log.append(f"{name}:resolving")
            await trio.sleep(delay)
            log.append(f"{name}:resolved")
            return target

        return resolve

    def fn(name: str):
        async def run(path: str) -> None:
            log.append(f"{name}:runs")

        return run

    async with trio.open_nursery() as nursery:
        for name, delay in (("first", 0.05), ("second", 0.03), ("third", 0.0)):
            await nursery.start(
                _in_order, with_file_mutation_queue_resolving, resolver(name, delay), fn(name)
            )
    assert log == [
        "first:resolving",
        "second:resolving",
        "third:resolving",
        "third:resolved",
        "second:resolved",
        "first:resolved",
        "first:runs",
        "second:runs",
        "third:runs",
    ]
    assert default_queue.statistics() == {"keys": 0, "registered": {}}


async def test_a_call_cancelled_while_resolving_keeps_the_order_of_the_others(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """A call cancelled before it registered leaves its turn: the call after it still waits
    for the one before it, and the cancelled one never runs."""
    queue = FileMutationQueue()
    target = str(tmp_path / "f")
    log: list[str] = []

    def resolver(delay: float):
        async def resolve() -> str:
            await trio.sleep(delay)
            return target

        return resolve

    def fn(name: str):
        async def run(path: str) -> None:
            log.append(name)

        return run

    middle = trio.CancelScope()

    async def run_middle(task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        with middle:
            await queue.run_resolving(resolver(1.0), fn("middle"))

    async with trio.open_nursery() as nursery:
        await nursery.start(_in_order, queue.run_resolving, resolver(0.05), fn("first"))
        await nursery.start(run_middle)
        await nursery.start(_in_order, queue.run_resolving, resolver(0.0), fn("last"))
        await trio.sleep(0.01)
        assert log == []
        middle.cancel()
        await trio.sleep(0.01)
        assert log == []  # "last" waits for "first", still resolving
    assert log == ["first", "last"]
    assert queue.statistics() == {"keys": 0, "registered": {}}


async def test_resolve_error_queues_nothing(tmp_path: Path) -> None:
    async def resolve() -> str:
        raise OSError(2, "nope")

    async def never(path: str) -> None:
        raise AssertionError("must not run")

    with pytest.raises(OSError):
        await with_file_mutation_queue_resolving(resolve, never)
    assert default_queue.statistics()["keys"] == 0


def test_key_for(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("x")
    os.symlink(real, tmp_path / "alias.txt")
    assert FileMutationQueue.key_for(str(tmp_path / "alias.txt")) == os.path.realpath(real)
    assert FileMutationQueue.key_for(str(tmp_path / "sub/../new.txt")) == os.path.realpath(
        tmp_path / "new.txt"
    )


async def test_explicit_key(autojump_clock: trio.testing.MockClock) -> None:
    """Backends whose files are elsewhere pass their own key."""
    log: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(
            _in_order, lambda: with_file_mutation_queue("/a", _job(log, "a", 0.05), key="remote:/x")
        )
        await nursery.start(
            _in_order, lambda: with_file_mutation_queue("/b", _job(log, "b"), key="remote:/x")
        )
    assert log == ["a:start", "a:end", "b:start", "b:end"]


class _TwoStepOps:
    """A backend of ``stat`` and ``realpath`` only (no ``resolve_for_mutation``)."""

    def __init__(self) -> None:
        from pi_builtin_tools.files.local import LocalFileOperations

        self.local = LocalFileOperations()

    async def stat(self, path: str) -> Any:
        return await self.local.stat(path)

    async def realpath(self, path: str) -> str:
        return await self.local.realpath(path)


@pytest.mark.parametrize("backend", ["local", "two steps"])
async def test_tool_path_queue_keys_on_the_backends_realpath(tmp_path: Path, backend: str) -> None:
    """with_tool_path_mutation_queue: the exact name first (U+00A0 kept when such a file
    exists), space-normalised otherwise, symlinks resolved through the backend; the local
    backend's one-step ``resolve_for_mutation`` gives what ``stat`` and ``realpath`` give."""
    from pi_builtin_tools.files.local import LocalFileOperations
    from pi_core._backend_kit.mutation_queue import with_tool_path_mutation_queue

    ops: Any = LocalFileOperations() if backend == "local" else _TwoStepOps()
    (tmp_path / "a\u00a0b.txt").write_text("x")
    os.symlink("a\u00a0b.txt", tmp_path / "alias.txt")
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(path: str) -> None:
        seen.append((path, default_queue.statistics()))

    await with_tool_path_mutation_queue("alias.txt", str(tmp_path), ops, record)
    await with_tool_path_mutation_queue("new\u00a0file.txt", str(tmp_path), ops, record)
    assert seen == [
        (
            str(tmp_path / "alias.txt"),
            {"keys": 1, "registered": {str(tmp_path / "a\u00a0b.txt"): 1}},
        ),
        (
            str(tmp_path / "new file.txt"),
            {"keys": 1, "registered": {str(tmp_path / "new file.txt"): 1}},
        ),
    ]
