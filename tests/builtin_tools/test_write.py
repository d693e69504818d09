"""The write tool through its ``execute``: spec §7.2, scenarios §8.6 (81–84) and 168, the write
conformance cases, atomicity and the mutation queue (port decisions 3, 8, 9)."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import create_read_tool_definition
from pi_builtin_tools.files.write import (
    WRITE_DESCRIPTION,
    WRITE_PARAMETERS,
    create_write_tool_definition,
)
from pi_core._errors import ToolError
from pi_core._wire.messages import AgentToolResult

OPS = LocalFileOperations()


async def write(cwd: Path, ops: Any = OPS, **args: Any) -> AgentToolResult:
    definition = create_write_tool_definition(str(cwd), ops)
    return await definition.execute("call-1", args, None, None)


async def write_error(cwd: Path, **args: Any) -> str:
    with pytest.raises(ToolError) as info:
        await write(cwd, **args)
    return str(info.value)


def test_definition_matches_pi() -> None:
    definition = create_write_tool_definition("/w", OPS)
    assert (definition.name, definition.label) == ("write", "write")
    assert definition.description == (
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
        "Automatically creates parent directories."
    )
    assert definition.description == WRITE_DESCRIPTION
    assert definition.parameters == {
        "type": "object",
        "required": ["path", "content"],
        "properties": {
            "path": {
                "type": "string",
                "description": "Path to the file to write (relative or absolute)",
            },
            "content": {"type": "string", "description": "Content to write to the file"},
        },
    }
    assert definition.parameters is WRITE_PARAMETERS
    assert definition.prompt_snippet == "Create or overwrite files"
    assert definition.prompt_guidelines == ["Use write only for new files or complete rewrites."]


async def test_new_and_nested(tmp_path: Path) -> None:
    """Scenarios 81-82 / write-new-and-nested."""
    first = await write(tmp_path, path="test.txt", content="Test content")
    assert first.to_json_dict() == {
        "content": [{"type": "text", "text": "Successfully wrote to test.txt"}]
    }
    nested = await write(tmp_path, path="nested/dir/test.txt", content="deep\n")
    assert nested.text == "Successfully wrote to nested/dir/test.txt"
    assert (tmp_path / "test.txt").read_bytes() == b"Test content"
    assert (tmp_path / "nested" / "dir" / "test.txt").read_bytes() == b"deep\n"


async def test_non_ascii_content(tmp_path: Path) -> None:
    """write-unicode-byte-count: Pi 1.6 names no byte count; the bytes on disk are UTF-8."""
    result = await write(tmp_path, path="hello.txt", content="héllo😀")
    assert result.text == "Successfully wrote to hello.txt"
    assert (tmp_path / "hello.txt").read_bytes() == "héllo😀".encode()


async def test_onto_directory_is_eisdir(tmp_path: Path) -> None:
    """Scenario 84 / write-onto-directory."""
    (tmp_path / "adir").mkdir()
    assert await write_error(tmp_path, path="adir", content="x") == (
        f"EISDIR: illegal operation on a directory, open '{tmp_path}/adir'"
    )
    assert os.listdir(tmp_path / "adir") == []


async def test_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert await write_error(tmp_path, path="file/sub/x.txt", content="x") == (
        f"ENOTDIR: not a directory, mkdir '{tmp_path}/file/sub'"
    )


async def test_overwrite_then_read(tmp_path: Path) -> None:
    """write-overwrite."""
    (tmp_path / "config.ini").write_text("old=1\nmore=2\n")
    assert (await write(tmp_path, path="config.ini", content="new=3\n")).text == (
        "Successfully wrote to config.ini"
    )
    read = create_read_tool_definition(str(tmp_path), OPS)
    assert (await read.execute("c2", {"path": "config.ini"}, None, None)).to_json_dict() == {
        "content": [{"type": "text", "text": "new=3\n"}],
        "structuredContent": "new=3\n",
    }


async def test_special_space_path(tmp_path: Path) -> None:
    """write-special-space-path: U+3000 becomes a space on disk; the message keeps the raw path."""
    result = await write(tmp_path, path="w\u3000x.txt", content="q")
    assert result.text == "Successfully wrote to w\u3000x.txt"
    assert os.listdir(tmp_path) == ["w x.txt"]


async def test_existing_name_with_special_space_is_overwritten(tmp_path: Path) -> None:
    """Decision 9: an existing file whose name holds U+00A0 is written, not a twin."""
    (tmp_path / "a\u00a0b.txt").write_text("old")
    await write(tmp_path, path="a\u00a0b.txt", content="new")
    assert sorted(os.listdir(tmp_path)) == ["a\u00a0b.txt"]
    assert (tmp_path / "a\u00a0b.txt").read_text() == "new"


async def test_content_bytes_unchanged(tmp_path: Path) -> None:
    """No BOM added, no line-ending changes, empty content allowed."""
    await write(tmp_path, path="crlf.txt", content="\ufeffa\r\nb\rc\n")
    assert (tmp_path / "crlf.txt").read_bytes() == b"\xef\xbb\xbfa\r\nb\rc\n"
    assert (await write(tmp_path, path="empty.txt", content="")).text == (
        "Successfully wrote to empty.txt"
    )
    assert (tmp_path / "empty.txt").read_bytes() == b""


async def test_lone_surrogate_becomes_replacement(tmp_path: Path) -> None:
    result = await write(tmp_path, path="s.txt", content="a\ud800b")
    assert result.text == "Successfully wrote to s.txt"
    assert (tmp_path / "s.txt").read_bytes() == b"a\xef\xbf\xbdb"


async def test_mode_kept(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    await write(tmp_path, path="run.sh", content="#!/bin/sh\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


async def test_through_symlink(tmp_path: Path) -> None:
    """Case c27 (write step): the target is written, the link stays the same link."""
    (tmp_path / "dotfiles").mkdir()
    (tmp_path / "dotfiles" / "bashrc").write_bytes(b"export A=2\n")
    os.symlink("dotfiles/bashrc", tmp_path / ".bashrc")
    result = await write(tmp_path, path=".bashrc", content="export A=3\n")
    assert result.text == "Successfully wrote to .bashrc"
    assert (tmp_path / "dotfiles" / "bashrc").read_bytes() == b"export A=3\n"
    assert os.readlink(tmp_path / ".bashrc") == "dotfiles/bashrc"


async def test_absolute_and_home_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    await write(Path("/"), path=str(tmp_path / "abs.txt"), content="a")
    await write(Path("/"), path="~/h.txt", content="h")
    assert (tmp_path / "abs.txt").read_text() == "a"
    assert (tmp_path / "home" / "h.txt").read_text() == "h"


async def test_reader_never_sees_partial_file(tmp_path: Path) -> None:
    """Decision 8: a read racing writes sees one whole version, never an empty file."""
    versions = [(c * 50 + "\n") * 4000 for c in "ABC"]
    (tmp_path / "f.txt").write_text(versions[0])
    read = create_read_tool_definition(str(tmp_path), OPS)
    seen: list[str] = []

    async def reader() -> None:
        for _ in range(60):
            result = await read.execute("r", {"path": "f.txt", "limit": 1}, None, None)
            line, notice = result.text.split("\n", 1)
            assert notice == "\n[4000 more lines in file. Use offset=2 to continue.]"
            seen.append(line)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        for i in range(60):
            await write(tmp_path, path="f.txt", content=versions[i % 3])
    assert set(seen) <= {"A" * 50, "B" * 50, "C" * 50}
    assert len(seen) == 60


async def test_many_files_in_parallel(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(
                functools.partial(write, tmp_path, path=f"d{i % 7}/f{i}.txt", content=str(i))
            )
    assert sorted(int((tmp_path / f"d{i % 7}/f{i}.txt").read_text()) for i in range(200)) == list(
        range(200)
    )


class GatedOps(LocalFileOperations):
    """Local ops whose first ``write_bytes`` waits for ``release`` (a write in flight)."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.release = trio.Event()
        self.first_started = trio.Event()

    async def write_bytes(self, path: str, data: bytes) -> None:
        self.log.append(f"write:{data.decode().strip()}:start")
        if not self.first_started.is_set():
            self.first_started.set()
            await self.release.wait()
        await super().write_bytes(path, data)
        self.log.append(f"write:{data.decode().strip()}:end")


async def test_aborted_write_keeps_queue_until_settled(tmp_path: Path) -> None:
    """Scenario 168: the first write blocks inside write_bytes and is aborted; the second must
    not start until the first write settles; the first reports the abort (Cancelled, which the
    loop turns into ``Operation aborted``), the second completes; the file ends as second."""
    ops = GatedOps()
    outcome: list[str] = []

    async def first() -> None:
        with trio.CancelScope() as scope:
            first_scope.append(scope)
            await write(tmp_path, ops, path="f.txt", content="first\n")
            outcome.append("first:returned")
        if scope.cancelled_caught:
            outcome.append("first:aborted")

    async def second() -> None:
        result = await write(tmp_path, ops, path="f.txt", content="second\n")
        outcome.append(result.text)

    first_scope: list[trio.CancelScope] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await ops.first_started.wait()
        nursery.start_soon(second)
        first_scope[0].cancel()
        await trio.sleep(0.05)
        assert ops.log == ["write:first:start"]
        assert outcome == []
        ops.release.set()
    assert ops.log == [
        "write:first:start",
        "write:first:end",
        "write:second:start",
        "write:second:end",
    ]
    assert outcome == ["first:aborted", "Successfully wrote to f.txt"]
    assert (tmp_path / "f.txt").read_text() == "second\n"


async def test_cancelled_before_start_writes_nothing(tmp_path: Path) -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        await write(tmp_path, path="never.txt", content="x")
    assert scope.cancelled_caught
    assert not (tmp_path / "never.txt").exists()


async def test_edit_and_write_of_nbsp_name_share_one_queue(tmp_path: Path) -> None:
    """One way to key the queue: an edit and a write of a file whose name really holds U+00A0,
    started in one batch, run one after another in call order (the edit's write settles before
    the write's starts) and the file ends with the write's content."""
    from pi_builtin_tools.files.edit import create_edit_tool_definition
    from pi_core._backend_kit.mutation_queue import default_queue

    name = "a\u00a0b.txt"
    (tmp_path / name).write_text("old line\n")
    ops = GatedOps()
    edit = create_edit_tool_definition(str(tmp_path), ops)
    results: list[str] = []

    async def run_edit(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        args = {"path": name, "edits": [{"oldText": "old", "newText": "edited"}]}
        results.append((await edit.execute("e", args, None, None)).text)

    async def run_write(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        results.append((await write(tmp_path, ops, path=name, content="written\n")).text)

    async with trio.open_nursery() as nursery:
        await nursery.start(run_edit)
        await nursery.start(run_write)
        await ops.first_started.wait()
        await trio.sleep(0.05)
        assert default_queue.statistics() == {
            "keys": 1,
            "registered": {str(tmp_path / name): 2},
        }
        assert ops.log == ["write:edited line:start"]
        ops.release.set()
    assert ops.log == [
        "write:edited line:start",
        "write:edited line:end",
        "write:written:start",
        "write:written:end",
    ]
    assert results == [
        f"Successfully replaced 1 block(s) in {name}.",
        f"Successfully wrote to {name}",
    ]
    assert os.listdir(tmp_path) == [name]
    assert (tmp_path / name).read_text() == "written\n"


async def test_read_only_file_is_refused(tmp_path: Path) -> None:
    """A 0444 file is not replaced, even as root (the atomic rename would replace it): Node's
    ``EACCES`` text; content and mode stay (pi_builtin_tools.files.access)."""
    target = tmp_path / "ro.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    assert await write_error(tmp_path, path="ro.txt", content="new\n") == (
        f"EACCES: permission denied, open '{target}'"
    )
    assert target.read_text() == "keep\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert os.listdir(tmp_path) == ["ro.txt"]


async def test_read_only_through_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "ro.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    (tmp_path / "link.txt").symlink_to("ro.txt")
    assert await write_error(tmp_path, path="link.txt", content="new\n") == (
        f"EACCES: permission denied, open '{tmp_path / 'link.txt'}'"
    )
    assert target.read_text() == "keep\n"


async def test_owner_write_bit_is_enough(tmp_path: Path) -> None:
    """Only a file with no write bit at all is refused for root; 0644 and 0200 are written."""
    for mode in (0o644, 0o200):
        target = tmp_path / f"f{mode:o}.txt"
        target.write_text("old")
        target.chmod(mode)
        await write(tmp_path, path=target.name, content="new")
        assert stat.S_IMODE(target.stat().st_mode) == mode
        target.chmod(0o644)
        assert target.read_text() == "new"


class SlowOps(LocalFileOperations):
    """Local ops whose reads and writes take 20 ms, so unserialised edits would lose one."""

    async def read_bytes(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        data = await super().read_bytes(path, offset, length)
        await trio.sleep(0.02)
        return data

    async def write_bytes(self, path: str, data: bytes) -> None:
        await trio.sleep(0.02)
        await super().write_bytes(path, data)


async def test_scenario_166_parallel_edits_of_one_file(tmp_path: Path) -> None:
    from pi_builtin_tools.files.edit import create_edit_tool_definition

    (tmp_path / "f.txt").write_text("alpha\nbeta\ngamma\n")
    edit = create_edit_tool_definition(str(tmp_path), SlowOps())

    async def change(old: str, new: str) -> None:
        args = {"path": "f.txt", "edits": [{"oldText": old, "newText": new}]}
        await edit.execute("e", args, None, None)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(change, "alpha", "ALPHA")
        nursery.start_soon(change, "beta", "BETA")
    assert (tmp_path / "f.txt").read_text() == "ALPHA\nBETA\ngamma\n"


async def test_scenario_167_edit_then_write(tmp_path: Path) -> None:
    from pi_builtin_tools.files.edit import create_edit_tool_definition

    (tmp_path / "f.txt").write_text("original\n")
    ops = SlowOps()
    edit = create_edit_tool_definition(str(tmp_path), ops)

    async def later_write() -> None:
        await trio.sleep(0.005)
        await write(tmp_path, ops, path="f.txt", content="replacement\n")

    async with trio.open_nursery() as nursery:
        args = {"path": "f.txt", "edits": [{"oldText": "original", "newText": "x"}]}
        nursery.start_soon(edit.execute, "e", args, None, None)
        nursery.start_soon(later_write)
    assert (tmp_path / "f.txt").read_text() == "replacement\n"
