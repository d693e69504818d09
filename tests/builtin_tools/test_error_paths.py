"""Control characters in paths are shown escaped in error texts (fs_errors.show_path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_builtin_tools.files.edit import create_edit_tool_definition
from pi_builtin_tools.files.fs_errors import show_path
from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import create_read_tool_definition
from pi_builtin_tools.files.write import create_write_tool_definition
from pi_builtin_tools.search.find import create_find_tool_definition
from pi_builtin_tools.search.grep import create_grep_tool_definition
from pi_builtin_tools.search.ls import create_ls_tool_definition
from pi_core._errors import ToolError

MAKERS: dict[str, Any] = {
    "read": create_read_tool_definition,
    "write": create_write_tool_definition,
    "edit": create_edit_tool_definition,
    "ls": create_ls_tool_definition,
    "grep": create_grep_tool_definition,
    "find": create_find_tool_definition,
}


async def error_of(cwd: Path, tool: str, **params: Any) -> str:
    definition = MAKERS[tool](str(cwd), LocalFileOperations())
    with pytest.raises(ToolError) as caught:
        await definition.execute("c1", params, None, None)
    return str(caught.value)


def test_show_path() -> None:
    assert show_path("a\x00b\x1b[31m\x7f\x85\tc é.txt") == "a\\x00b\\x1b[31m\\x7f\\x85\\x09c é.txt"
    assert show_path("/plain/path") == "/plain/path"


@pytest.mark.parametrize(
    ("tool", "params", "message"),
    [
        (
            "edit",
            {"path": "a\x00.txt", "edits": [{"oldText": "x", "newText": "y"}]},
            "Could not edit file: a\\x00.txt. Error: embedded null byte.",
        ),
        (
            "write",
            {"path": "a\x00.txt", "content": "x"},
            'Invalid path "a\\x00.txt": a path cannot contain a NUL byte.',
        ),
        (
            "read",
            {"path": "a\x00\x1b.txt"},
            'Invalid path "a\\x00\\x1b.txt": a path cannot contain a NUL byte.',
        ),
        ("ls", {"path": "a\x00"}, 'Invalid path "a\\x00": a path cannot contain a NUL byte.'),
        (
            "grep",
            {"pattern": "x", "path": "a\x00"},
            'Invalid path "a\\x00": a path cannot contain a NUL byte.',
        ),
        (
            "find",
            {"pattern": "x", "path": "a\x00"},
            'Invalid path "a\\x00": a path cannot contain a NUL byte.',
        ),
    ],
)
async def test_nul_in_path(tmp_path: Path, tool: str, params: dict[str, Any], message: str) -> None:
    assert await error_of(tmp_path, tool, **params) == message


async def test_escape_sequence_in_paths_of_errors(tmp_path: Path) -> None:
    name = "b\x1b[2J"
    (tmp_path / name).write_text("x")
    assert await error_of(
        tmp_path, "edit", path=name, edits=[{"oldText": "zz", "newText": "y"}]
    ) == (
        "Could not find the exact text in b\\x1b[2J. The old text must match exactly including "
        "all whitespace and newlines.\nFile starts with:\n  1: x"
    )
    assert await error_of(tmp_path, "ls", path=name) == f"Not a directory: {tmp_path}/b\\x1b[2J"
    assert await error_of(tmp_path, "grep", pattern="x", path="nope\x07") == (
        f"Path not found: {tmp_path}/nope\\x07"
    )
    os.mkfifo(tmp_path / "f\x01")
    assert await error_of(tmp_path, "read", path="f\x01") == (
        "Cannot read f\\x01: not a regular file (a device, FIFO or socket)."
    )
    assert await error_of(tmp_path, "read", path="missing\x1b") == (
        f"ENOENT: no such file or directory, access '{tmp_path}/missing\\x1b'"
    )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read", {"path": "a\ud800b"}),
        ("write", {"path": "a\ud800b", "content": "x"}),
        ("edit", {"path": "a\ud800b", "edits": [{"oldText": "a", "newText": "b"}]}),
        ("ls", {"path": "a\ud800b"}),
        ("find", {"pattern": "*", "path": "a\ud800b"}),
        ("grep", {"pattern": "x", "path": "a\ud800b"}),
    ],
)
def test_a_lone_surrogate_in_a_path_is_named(tmp_path, tool, arguments) -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "pi"), "call", tool, json.dumps(arguments)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1,
        'Invalid path "a\\ud800b": a path cannot contain a lone surrogate (U+D800 to U+DFFF), '
        "which no file name can be encoded with.\n",
        "",
    )
