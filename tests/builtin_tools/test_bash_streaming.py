"""The bash tool on large, fast output (the P3 path: an enlarged pipe, 1 MiB reads, text counted
on raw bytes, decoded only where it is not valid UTF-8): exact texts, every byte in the file."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import trio

from pi_builtin_tools.shell.bash import create_bash_tool_definition
from pi_builtin_tools.shell.local import LocalBashOperations

LINE = "é€😀 ligne\n".encode()  # 16 bytes


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return create_bash_tool_definition(str(tmp_path), LocalBashOperations())


async def _run(tool, command: str):
    with trio.fail_after(60):
        return await tool.execute("c1", {"command": command}, None, None)


async def test_utf8_output_cut_inside_a_character(tool, tmp_path: Path) -> None:
    """5,000,008 bytes: 312,500 lines, then ``é€`` and three bytes of ``😀`` (one U+FFFD)."""
    result = await _run(tool, "yes 'é€😀 ligne' | head -c 5000008")
    path = result.details["fullOutputPath"]
    assert path.startswith(f"{tmp_path}/pi-bash-")
    assert result.text == (
        "é€😀 ligne\n" * 1999
        + "é€\ufffd"
        + f"\n\n[Showing lines 310502-312501 of 312501. Full output: {path}]"
    )
    assert result.details["truncation"]["totalBytes"] == 5_000_008
    assert result.details["truncation"]["outputBytes"] == 1999 * 16 + 8
    assert await trio.Path(path).read_bytes() == (LINE * 312_501)[:5_000_008]
    assert result.structured_content["exit_code"] == 0


async def test_invalid_bytes_in_large_output(tool) -> None:
    """A byte that is not UTF-8 every 100,000 bytes, over 3 MB: each becomes U+FFFD (3 bytes)."""
    command = (
        "i=0; while [ $i -lt 30 ]; do head -c 99999 /dev/zero | tr '\\0' a; "
        "printf '\\377'; i=$((i+1)); done; echo"
    )
    result = await _run(tool, command)
    path = result.details["fullOutputPath"]
    assert await trio.Path(path).read_bytes() == (b"a" * 99999 + b"\xff") * 30 + b"\n"
    assert result.text == (
        "a" * 51197  # the last 51,200 bytes of the line
        + "\ufffd"
        + f"\n\n[Showing last 50.0KB of line 1 (line is 2.9MB). Full output: {path}]"
    )
    assert result.details["truncation"]["totalBytes"] == 30 * 100_002 + 1
