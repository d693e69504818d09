"""grep's deterministic order with ripgrep's parallel walk (performance workload P4): ripgrep
runs without ``--sort`` and the matches come back in the order ``rg --sort=path`` gives them;
past the backend's output bound, or on an error, ripgrep runs again with ``--sort=path``."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.search.grep import (
    _file_blocks,
    _first_matches,
    create_grep_tool_definition,
    path_order,
)
from pi_core._errors import ToolError
from pi_core.backends import CommandOutput, find_rg
from support import make, text

# Names whose directory-walk order, whole-path byte order and per-entry name order all differ:
# "a/x" < "a b/q" by entry ("a" < "a b") but not by bytes (" " < "/").
ODD_NAMES = [
    "B/s",
    "Z",
    "_u",
    "a/x",
    "a/y.txt",
    "a b/q",
    "a-c/r",
    "a.b/z",
    "a.txt",
    "a0",
    "b",
    "\u00e9",
    "a/a.b/deep",
    "a/a/deeper",
    ".hidden",
]


class Recording(LocalFileOperations):
    """Local operations that record every ``run_rg`` argument list."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
        self.calls.append(list(args))
        return await super().run_rg(args, cwd)


async def grep(cwd: Path, ops: Any = None, **params: Any) -> Any:
    tool = create_grep_tool_definition(str(cwd), ops or LocalFileOperations())
    return await tool.execute("c1", params, None, None)


def sorted_rg(tmp_path: Path, *args: str) -> list[str]:
    """``rg --sort=path`` itself: its ``PATH:LINE`` records in its order."""
    out = subprocess.run(
        [find_rg(), "--no-config", "--hidden", "-n", "--sort=path", *args, "."],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [line.removeprefix("./").rsplit(":", 1)[0] for line in out.splitlines()]


def test_path_order_compares_entry_names_not_whole_paths() -> None:
    names = sorted(ODD_NAMES, key=lambda name: path_order(name.encode()))
    assert names == [
        ".hidden",
        "B/s",
        "Z",
        "_u",
        "a/a/deeper",
        "a/a.b/deep",
        "a/x",
        "a/y.txt",
        "a b/q",
        "a-c/r",
        "a.b/z",
        "a.txt",
        "a0",
        "b",
        "\u00e9",
    ]
    assert sorted(ODD_NAMES) != names  # whole-path order differs


async def test_odd_names_in_rg_sort_path_order(tmp_path: Path) -> None:
    make(tmp_path, {name: "hit\n" for name in ODD_NAMES})
    ops = Recording()
    result = await grep(tmp_path, ops, pattern="hit")
    assert text(result) == (
        ".hidden:1: hit\nB/s:1: hit\nZ:1: hit\n_u:1: hit\na/a/deeper:1: hit\n"
        "a/a.b/deep:1: hit\na/x:1: hit\na/y.txt:1: hit\na b/q:1: hit\na-c/r:1: hit\n"
        "a.b/z:1: hit\na.txt:1: hit\na0:1: hit\nb:1: hit\n\u00e9:1: hit"
    )
    assert len(ops.calls) == 1 and not any(arg.startswith("--sort") for arg in ops.calls[0])
    expected = [f"{name}:1" for name in sorted(ODD_NAMES, key=lambda n: path_order(n.encode()))]
    assert sorted_rg(tmp_path, "hit") == expected


def wide_tree(tmp_path: Path) -> None:
    """400 files in 40 directories, written in reverse order, three matches each."""
    files = {}
    for i in reversed(range(400)):
        files[f"d{i % 40}/{'x' if i % 3 else 'x.'}{i}"] = "hit 1\nno\nhit 3\nhit 4\n"
    make(tmp_path, files)


async def test_many_files_come_back_as_rg_sort_path_lists_them(tmp_path: Path) -> None:
    wide_tree(tmp_path)
    result = await grep(tmp_path, pattern="hit", limit=5000)
    listed = [
        line.rsplit(":", 2)[0] + ":" + line.rsplit(":", 2)[1] for line in text(result).split("\n")
    ]
    assert listed == sorted_rg(tmp_path, "hit")
    assert len(listed) == 1200


async def test_limit_keeps_the_first_matches_in_path_order(tmp_path: Path) -> None:
    wide_tree(tmp_path)
    result = await grep(tmp_path, pattern="hit", limit=7)
    assert text(result) == (
        "d0/x.0:1: hit 1\nd0/x.0:3: hit 3\nd0/x.0:4: hit 4\n"
        "d0/x.120:1: hit 1\nd0/x.120:3: hit 3\nd0/x.120:4: hit 4\n"
        "d0/x.240:1: hit 1\n\n"
        "[7 matches limit reached. Use limit=14 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 7}


async def test_context_lines_follow_the_sorted_matches(tmp_path: Path) -> None:
    make(tmp_path, {"b/f": "x\nhit\ny\n", "a b/f": "hit\nz\n", "a/f": "q\nhit\n"})
    result = await grep(tmp_path, pattern="hit", context=1)
    assert text(result) == (
        "a/f-1- q\na/f:2: hit\na b/f:1: hit\na b/f-2- z\nb/f-1- x\nb/f:2: hit\nb/f-3- y"
    )


async def test_output_cut_at_the_bound_is_searched_again_in_path_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the backend's output bound the part kept depends on the walk: ripgrep runs again
    with ``--sort=path``, whose kept part is the first files in path order (as before)."""
    from pi_core._backend_kit import local_files

    wide_tree(tmp_path)
    monkeypatch.setattr(local_files, "RG_MAX_OUTPUT_BYTES", 700)
    ops = Recording()
    result = await grep(tmp_path, ops, pattern="hit", limit=1000)
    assert [("--sort=path" in call) for call in ops.calls] == [False, True]
    lines = text(result).split("\n")
    assert lines[:4] == [
        "d0/x.0:1: hit 1",
        "d0/x.0:3: hit 3",
        "d0/x.0:4: hit 4",
        "d0/x.120:1: hit 1",
    ]
    # the kept prefix of the sorted output, whole records only, no limit notice
    assert all(line.startswith("d0/") for line in lines)
    assert result.details is None


async def test_a_failed_search_is_run_again_in_path_order(tmp_path: Path) -> None:
    """An error text lists files in the walk's order: the error shown is the sorted run's."""

    class Failing(LocalFileOperations):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[str]] = []

        async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
            self.calls.append(list(args))
            order = "sorted" if "--sort=path" in args else "walk"
            return CommandOutput(2, b"", f"rg: ./b: denied\nrg: ./a: denied ({order})\n".encode())

    make(tmp_path, {"f": "hit\n"})
    ops = Failing()
    with pytest.raises(ToolError) as caught:
        await grep(tmp_path, ops, pattern="hit")
    assert str(caught.value) == "rg: ./b: denied\nrg: ./a: denied (sorted)"  # as ripgrep says it
    assert [("--sort=path" in call) for call in ops.calls] == [False, True]


async def test_an_error_past_the_limit_needs_no_second_run(tmp_path: Path) -> None:
    """With the limit reached the error text is not shown, so the walk's output is kept."""
    make(tmp_path, {"b": "hit\nhit\n", "a": "hit\n"})

    class Erring(Recording):
        async def run_rg(self, args: Sequence[str], cwd: str) -> CommandOutput:
            output = await super().run_rg(args, cwd)
            return CommandOutput(2, output.stdout, b"rg: ./c: denied\n")

    ops = Erring()
    result = await grep(tmp_path, ops, pattern="hit", limit=2)
    assert text(result) == (
        "a:1: hit\nb:1: hit\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert len(ops.calls) == 1


def rg_records(*records: tuple[str, int, str]) -> bytes:
    return b"".join(f"{path}\0{line}:{text}\n".encode() for path, line, text in records)


def listed(stdout: bytes, count: int = 100) -> list[tuple[str, int, str]]:
    return [
        (m.path, m.line_number, m.line_text)
        for m in _first_matches(stdout, count, in_path_order=False)
    ]


def test_file_runs_are_found_and_sorted() -> None:
    stdout = rg_records(
        ("/t/b", 1, "x"), ("/t/b", 4, "y"), ("/t/a b/c", 2, "z"), ("/t/a/c", 3, "w")
    )
    assert [(start, end) for _, _, start, end in _file_blocks(stdout)] == [
        (0, 18),
        (18, 31),
        (31, 42),
    ]
    assert listed(stdout) == [
        ("/t/a/c", 3, "w"),
        ("/t/a b/c", 2, "z"),
        ("/t/b", 1, "x"),
        ("/t/b", 4, "y"),
    ]
    assert listed(stdout, 2) == [("/t/a/c", 3, "w"), ("/t/a b/c", 2, "z")]


def test_names_with_newlines_and_binary_notices_read_record_by_record() -> None:
    notice = (
        b"/t/bin: WARNING: stopped searching binary file after match "
        b'(found "\\0" byte around offset 9)\n'
    )
    stdout = (
        rg_records(("/t/z\nq", 1, "a"), ("/t/z\nq", 2, "b"))
        + rg_records(("/t/bin", 1, "c"))
        + notice
        + rg_records(("/t/a", 5, "d"))
    )
    blocks = _file_blocks(stdout)
    assert [block[1] for block in blocks] == [b"/t/z\nq", b"/t/bin", b"/t/a"]
    assert listed(stdout) == [
        ("/t/a", 5, "d"),
        ("/t/bin", 1, "c"),
        ("/t/z\nq", 1, "a"),
        ("/t/z\nq", 2, "b"),
    ]


def test_a_file_in_two_runs_is_still_in_line_order() -> None:
    stdout = rg_records(("/t/b", 3, "x"), ("/t/a", 1, "y"), ("/t/b", 1, "z"))
    assert listed(stdout) == [("/t/a", 1, "y"), ("/t/b", 1, "z"), ("/t/b", 3, "x")]
    assert listed(stdout, 2) == [("/t/a", 1, "y"), ("/t/b", 1, "z")]


async def test_a_name_with_a_newline_among_others(tmp_path: Path) -> None:
    make(tmp_path, {"b": "hit\n", "a\nz": "hit\nhit\n", "a0": "hit\n", "a/b": "hit\n"})
    assert text(await grep(tmp_path, pattern="hit")) == (
        "a/b:1: hit\na\nz:1: hit\na\nz:2: hit\na0:1: hit\nb:1: hit"
    )
