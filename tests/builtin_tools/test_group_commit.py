"""Group commit in the file mutation queue (``group=``, ``staged_file_content``,
``stage_file_write``): calls of one group queued one after another on a file share one write,
each sees the previous one's content, and none returns before that write has landed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from pi_core._backend_kit.mutation_queue import FileMutationQueue
from pi_core.backends import LocalFileOperations, stage_file_write, staged_file_content

PI = Path(sys.executable).parent / "pi"


async def _started(fn, *args, task_status=trio.TASK_STATUS_IGNORED):
    task_status.started()
    await fn(*args)


def _appender(log: list[str], name: str, *, fail_write: bool = False):
    """A group call that appends ``name`` to the staged text (or ``base``) and stages it."""

    async def write(content: str) -> None:
        log.append(f"write {content}")
        await trio.sleep(0.01)
        if fail_write:
            raise OSError(28, "No space left on device")
        log.append("landed")

    async def run() -> str:
        seen = staged_file_content()
        log.append(f"{name} sees {seen}")
        await trio.sleep(0.001)
        stage_file_write((seen or "base") + name, write)
        return name

    return run


async def test_a_run_of_group_calls_shares_one_write(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []
    returned: list[str] = []

    async def call(name: str) -> None:
        returned.append(await queue.run("/f", _appender(log, name), key="k", group="g"))
        log.append(f"{name} returned")

    async with trio.open_nursery() as nursery:
        for name in "abc":
            await nursery.start(_started, call, name)
    assert log[:5] == ["a sees None", "b sees basea", "c sees baseab", "write baseabc", "landed"]
    assert sorted(log[5:]) == ["a returned", "b returned", "c returned"]  # all after landing
    assert sorted(returned) == ["a", "b", "c"]
    assert queue.statistics() == {"keys": 0, "registered": {}}


async def test_a_call_outside_the_group_waits_for_the_landing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []

    async def other() -> None:
        log.append(f"other sees {staged_file_content()}")

    async def grouped(name: str) -> None:
        await queue.run("/f", _appender(log, name), key="k", group="g")

    async def plain() -> None:
        await queue.run("/f", other, key="k")

    async def other_group(name: str) -> None:
        await queue.run("/f", _appender(log, name), key="k", group="h")

    async with trio.open_nursery() as nursery:
        await nursery.start(_started, grouped, "a")
        await nursery.start(_started, plain)
        await nursery.start(_started, grouped, "b")
        await nursery.start(_started, other_group, "c")
    assert log == [
        "a sees None",
        "write basea",
        "landed",
        "other sees None",
        "b sees None",
        "write baseb",
        "landed",
        "c sees None",
        "write basec",
        "landed",
    ]


async def test_a_failed_write_fails_every_call_that_staged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []
    outcomes: list[str] = []

    async def call(name: str, fail: bool) -> None:
        try:
            await queue.run("/f", _appender(log, name, fail_write=fail), key="k", group="g")
        except OSError as exc:
            outcomes.append(f"{name}: {exc.strerror}")
        else:
            outcomes.append(f"{name}: ok")

    async with trio.open_nursery() as nursery:
        await nursery.start(_started, call, "a", False)
        await nursery.start(_started, call, "b", True)  # the last one's write lands the group
    assert log == ["a sees None", "b sees basea", "write baseab"]
    assert sorted(outcomes) == ["a: No space left on device", "b: No space left on device"]


async def test_a_failing_call_keeps_what_the_earlier_ones_staged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []
    outcomes: list[str] = []

    async def broken() -> None:
        log.append(f"broken sees {staged_file_content()}")
        raise ValueError("no match")

    async def call(fn) -> None:
        try:
            outcomes.append(await queue.run("/f", fn, key="k", group="g"))
        except ValueError as exc:
            outcomes.append(str(exc))

    async with trio.open_nursery() as nursery:
        await nursery.start(_started, call, _appender(log, "a"))
        await nursery.start(_started, call, broken)
        await nursery.start(_started, call, _appender(log, "c"))
    assert log == ["a sees None", "broken sees basea", "c sees basea", "write baseac", "landed"]
    assert outcomes[0] == "no match"  # at once; a and c after the landing, in either order
    assert sorted(outcomes[1:]) == ["a", "c"]


@pytest.mark.parametrize("when", ["while waiting", "once handed the group"])
async def test_a_call_cancelled_before_its_turn_passes_the_group_on(
    autojump_clock: trio.testing.MockClock, when: str
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []
    scope = trio.CancelScope()
    first = _appender(log, "a")

    async def a_then_cancel_b() -> str:
        name = await first()
        if when == "once handed the group":
            scope.cancel()  # b wakes holding the group it was handed, cancelled
        return name

    async def call(fn) -> None:
        await queue.run("/f", fn, key="k", group="g")

    async def cancellable(task_status=trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            task_status.started()
            await call(_appender(log, "b"))

    with trio.fail_after(60):  # a group nobody lands would hang its callers
        async with trio.open_nursery() as nursery:
            await nursery.start(_started, call, a_then_cancel_b)
            await nursery.start(cancellable)
            await nursery.start(_started, call, _appender(log, "c"))
            if when == "while waiting":
                scope.cancel()
    assert log == ["a sees None", "c sees basea", "write baseac", "landed"]
    assert queue.statistics() == {"keys": 0, "registered": {}}


async def test_an_abort_before_the_landing_writes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue = FileMutationQueue()
    log: list[str] = []
    outcomes: list[str] = []
    last = _appender(log, "c")

    async def c_then_abort() -> str:
        name = await last()
        scope.cancel()  # the abort arrives after the last edit staged, before the write
        return name

    async def call(fn) -> None:
        try:
            await queue.run("/f", fn, key="k", group="g")
        finally:
            outcomes.append("finished")

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            await nursery.start(_started, call, _appender(log, "a"))
            await nursery.start(_started, call, _appender(log, "b"))
            await nursery.start(_started, call, c_then_abort)
    assert scope.cancelled_caught
    assert log == ["a sees None", "b sees basea", "c sees baseab"]  # no write
    assert outcomes == ["finished"] * 3
    assert queue.statistics() == {"keys": 0, "registered": {}}


async def test_stage_outside_a_group_call_is_an_error() -> None:
    assert staged_file_content() is None
    with pytest.raises(
        RuntimeError, match=r"stage_file_write\(\) outside a call queued with group="
    ):
        stage_file_write(b"x", _appender([], "x"))


def test_a_batch_of_edits_of_one_file_lands_every_edit(tmp_path: Path) -> None:
    """200 edits of one file in one batch through ``pi replay``: every edit on disk, each
    result describes its own edit, fewer writes than edits (the group commit)."""
    count = 200
    target = tmp_path / "f.txt"
    target.write_text("".join(f"line {i:03d}: original\n" for i in range(count)))
    calls = [
        {
            "type": "toolCall",
            "id": f"c{i}",
            "name": "edit",
            "arguments": {
                "path": "f.txt",
                "edits": [
                    {"oldText": f"line {i:03d}: original", "newText": f"line {i:03d}: edited"}
                ],
            },
        }
        for i in range(count)
    ]
    session = tmp_path / "s.jsonl"
    session.write_text(
        json.dumps({"role": "assistant", "content": calls, "stopReason": "toolUse"}) + "\n"
    )
    result = subprocess.run(
        [PI, "replay", str(session), "--cwd", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    results = [m for m in messages if m.get("role") == "toolResult"]
    assert [r["content"][0]["text"] for r in results] == [
        "Successfully replaced 1 block(s) in f.txt."
    ] * count
    for i, r in enumerate(results):
        assert f"+{i + 1:>3} line {i:03d}: edited" in r["details"]["diff"], r["details"]["diff"]
        assert r["details"]["firstChangedLine"] == i + 1
    assert target.read_text() == "".join(f"line {i:03d}: edited\n" for i in range(count))


async def test_grouped_edits_write_fewer_times_than_they_edit(tmp_path: Path) -> None:
    """The edit tool's calls share writes when queued together (counted on the backend)."""
    from pi_builtin_tools.files.edit import edit_file

    class Counting(LocalFileOperations):
        writes = 0
        reads = 0

        async def write_bytes(self, path: str, data: bytes) -> None:
            Counting.writes += 1
            await super().write_bytes(path, data)

        async def read_for_update(self, path: str, mode: int, limit: int) -> Any:
            Counting.reads += 1
            await trio.sleep(0.5)  # every other edit is queued meanwhile
            return await super().read_for_update(path, mode, limit)

    operations = Counting()
    target = tmp_path / "f.txt"
    target.write_text("".join(f"line {i}\n" for i in range(50)))
    texts: dict[int, str] = {}

    async def one(i: int, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        result = await edit_file(
            operations, str(tmp_path), "f.txt", [{"oldText": f"line {i}\n", "newText": f"L{i}\n"}]
        )
        texts[i] = result.content[0].text

    async with trio.open_nursery() as nursery:
        for i in range(50):
            await nursery.start(one, i)
    assert texts == {i: "Successfully replaced 1 block(s) in f.txt." for i in range(50)}
    assert target.read_text() == "".join(f"L{i}\n" for i in range(50))
    assert (Counting.reads, Counting.writes) == (1, 1)  # one read, one write for all 50


async def test_a_batch_that_grows_the_file_past_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size limit holds for content an earlier edit of the group staged, not only for
    what is read from the disk."""
    from pi_builtin_tools.files import edit
    from pi_core import ToolError

    monkeypatch.setattr(edit, "MAX_EDIT_LARGE_FILE_BYTES", 100)

    class SlowRead(LocalFileOperations):
        """The first read waits, so the second edit is queued behind it (one group)."""

        reads = 0

        async def read_for_update(self, path: str, mode: int, limit: int) -> Any:
            SlowRead.reads += 1
            await trio.sleep(0.5)
            return await super().read_for_update(path, mode, limit)

    operations = SlowRead()
    target = tmp_path / "f.txt"
    target.write_text("start\n" + "a\n" * 27)  # 60 bytes
    outcomes: dict[str, str] = {}

    async def one(name: str, old: str, new: str, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            result = await edit.edit_file(
                operations, str(tmp_path), "f.txt", [{"oldText": old, "newText": new}]
            )
            outcomes[name] = result.content[0].text
        except ToolError as exc:
            outcomes[name] = str(exc)

    async with trio.open_nursery() as nursery:
        await nursery.start(one, "grow", "start\n", "b" * 64 + "\n")  # 60 -> 119 bytes
        await nursery.start(one, "after", "b" * 64, "c")
    assert outcomes == {
        "grow": "Successfully replaced 1 block(s) in f.txt.",
        "after": "Could not edit file: f.txt. It is larger than edit handles (8.0MB or 400000 "
        "lines; up to 100B for UTF-8 text without CR line endings whose old texts match "
        "exactly); change it with bash (sed, a script) instead.",
    }
    assert target.read_text() == "b" * 64 + "\n" + "a\n" * 27
    assert SlowRead.reads == 1  # the second edit read what the first staged
