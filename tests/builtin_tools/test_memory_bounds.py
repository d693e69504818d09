"""Bounded memory for every input (``docs/reference/tools.md``, "Memory bounds").

Each test runs ``pi call TOOL`` as a real process on a generated input (a single line of
hundreds of megabytes, ``/dev/zero``, a FIFO, endless command output) and asserts the exact
text the model sees and pi's peak RSS (:mod:`memory_support`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from memory_support import MEMORY_BOUND, MIB, run_pi_measured, write_repeated
from pi_builtin_tools.files.edit import MAX_EDIT_FILE_BYTES, MAX_EDIT_FILE_LINES

pytestmark = pytest.mark.slow  # files of hundreds of MB

TRUNCATED_500 = "a" * 500 + "... [truncated]"
LINES_NOTICE = "[Some lines truncated to 500 chars. Use read tool to see full lines]"


def pi_call(tool: str, arguments: dict[str, object], cwd: Path, timeout: float = 120):
    return run_pi_measured("call", tool, json.dumps(arguments), cwd=cwd, timeout=timeout)


# -- grep -------------------------------------------------------------------------------------


def test_grep_on_a_100mb_single_line_stays_under_64mb(tmp_path: Path):
    """Issue 13 P8: a 100 MB single-line file, every byte a match; ripgrep's JSON for it would
    be gigabytes."""
    write_repeated(tmp_path / "big.txt", b"a", 100 * MIB)
    result = pi_call("grep", {"pattern": "a", "path": "big.txt"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    assert result.out == f"big.txt:1: {TRUNCATED_500}\n\n{LINES_NOTICE}\n"
    assert result.peak <= 64 * MIB


def test_grep_on_a_300mb_single_line_in_a_directory_stays_bounded(tmp_path: Path):
    """The attack of issue 10: grep on a 300 MB single-line file grew to 24 GB."""
    write_repeated(tmp_path / "huge.txt", b"ab", 300 * MIB, tail=b"\nab tail\n")
    (tmp_path / "small.txt").write_text("ab\n")
    result = pi_call("grep", {"pattern": "b"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    assert result.out == (
        f"huge.txt:1: {'ab' * 250}... [truncated]\nhuge.txt:2: ab tail\nsmall.txt:1: ab\n\n"
        f"{LINES_NOTICE}\n"
    )
    assert result.peak <= 64 * MIB


def test_grep_context_around_a_huge_line_reads_only_what_it_shows(tmp_path: Path):
    """Context lines come from the file in chunks: a 100 MB neighbour line costs no more than
    a chunk, and the lines after the last wanted one are never read."""
    write_repeated(
        tmp_path / "log.txt", b"x", 100 * MIB, tail=b"\r\nneedle here\r\nafter\n" + b"y\n" * 10
    )
    result = pi_call("grep", {"pattern": "needle", "path": "log.txt", "context": 1}, tmp_path)
    assert (result.status, result.err) == (0, "")
    assert result.out == (
        f"log.txt-1- {'x' * 500}... [truncated]\nlog.txt:2: needle here\nlog.txt-3- after\n\n"
        f"{LINES_NOTICE}\n"
    )
    assert result.peak <= 64 * MIB


def test_grep_many_long_matching_lines_keep_the_usual_notices(tmp_path: Path):
    """Lines over ripgrep's 4096-byte column limit arrive cut; the model's text is the same
    500 characters and the limit notice is unchanged."""
    line = "é" * 3000 + " match\n"
    (tmp_path / "wide.txt").write_text(line * 5 + "short match\n", encoding="utf-8")
    result = pi_call("grep", {"pattern": "match", "path": "wide.txt", "limit": 3}, tmp_path)
    assert (result.status, result.err) == (0, "")
    cut = "é" * 500 + "... [truncated]"
    assert result.out == (
        f"wide.txt:1: {cut}\nwide.txt:2: {cut}\nwide.txt:3: {cut}\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern. Some lines "
        "truncated to 500 chars. Use read tool to see full lines]\n"
    )


def _first_50kb(lines: list[str]) -> str:
    """The whole lines of ``lines`` that fit in 50KB joined by ``\\n`` (all ASCII)."""
    size, kept = -1, []
    for line in lines:
        size += len(line) + 1
        if size > 51200:
            return "\n".join(kept)
        kept.append(line)
    raise AssertionError("not cut")


@pytest.mark.parametrize(
    ("name", "unit", "size", "params"),
    [
        ("m", b"a\n", 30 * MIB, {"pattern": "a", "limit": 100_000_000}),
        ("m", b"a\n", 30 * MIB, {"pattern": "a", "limit": 100_000_000, "context": 1000}),
        ("n", b"needle\n", 40 * MIB, {"pattern": "needle", "limit": 10_000_000}),
    ],
)
def test_grep_with_a_huge_limit_holds_only_what_it_shows(
    tmp_path: Path, name: str, unit: bytes, size: int, params: dict[str, object]
):
    """A huge ``limit`` (and ``context``) on a file of millions of matching lines: the lines
    past 50KB are counted, not kept (it took 500 to 870 MB). ripgrep's output passes the
    backend's bound, so no limit notice."""
    write_repeated(tmp_path / name, unit, size)
    result = pi_call("grep", {**params, "path": name}, tmp_path)
    assert (result.status, result.err) == (0, "")
    text = unit.decode().strip()
    lines = [f"{name}:{i}: {text}" for i in range(1, 51200 // 6)]
    assert result.out == _first_50kb(lines) + "\n\n[50.0KB limit reached]\n"
    assert result.peak <= MEMORY_BOUND


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_grep_refuses_an_endless_special_file(tmp_path: Path, special: str):
    """ripgrep would read ``/dev/zero`` or a FIFO forever: grep refuses what is neither a
    regular file nor a directory."""
    if special == "fifo":
        special = str(tmp_path / "pipe")
        os.mkfifo(special)
    result = pi_call("grep", {"pattern": "x", "path": special}, tmp_path, timeout=30)
    assert result.status == 1
    assert result.out == (
        f"Cannot search {special}: not a regular file (a device, FIFO or socket).\n"
    )
    assert result.peak <= MEMORY_BOUND


# -- read -------------------------------------------------------------------------------------


def test_read_of_a_300mb_single_line_reads_a_range(tmp_path: Path):
    write_repeated(tmp_path / "one.txt", b"a", 300 * MIB)
    result = pi_call("read", {"path": "one.txt"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    assert result.out == (
        "[Line 1 is 300.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' one.txt | head -c 51200]\n"
    )
    assert result.peak <= 64 * MIB


def test_read_of_dev_zero_is_refused(tmp_path: Path):
    result = pi_call("read", {"path": "/dev/zero"}, tmp_path, timeout=30)
    assert result.status == 1
    assert result.out == "Cannot read /dev/zero: not a regular file (a device, FIFO or socket).\n"
    assert result.peak <= MEMORY_BOUND


# -- bash -------------------------------------------------------------------------------------


def _remove_full_output(text: str) -> str:
    """The ``Full output: PATH`` file named in ``text``, removed; ``PATH`` replaced by ``FILE``."""
    found = re.search(r"Full output: (\S+?)\]", text)
    assert found, text[-500:]
    Path(found.group(1)).unlink(missing_ok=True)
    return text.replace(found.group(1), "FILE")


def test_bash_endless_lines_keep_only_the_tail(tmp_path: Path):
    result = pi_call("bash", {"command": "yes | head -c 300000000"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    out = _remove_full_output(result.out)
    assert out == "y\n" * 2000 + (
        "\n[Showing lines 149998001-150000000 of 150000000. Full output: FILE]\n"
    )
    assert result.peak <= 64 * MIB  # the performance goal's bound (P3)


def test_bash_single_200mb_line_without_newline_stays_bounded(tmp_path: Path):
    result = pi_call("bash", {"command": "head -c 200000000 /dev/zero | tr '\\0' a"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    out = _remove_full_output(result.out)
    assert out == "a" * 51200 + (
        "\n\n[Showing last 50.0KB of line 1 (line is 190.7MB). Full output: FILE]\n"
    )
    assert result.peak <= 64 * MIB


def test_bash_output_of_invalid_utf8_stays_bounded(tmp_path: Path):
    """300 MB of lines of 60 invalid bytes: each becomes U+FFFD (three bytes in UTF-8), decoded
    a slice at a time; the file keeps the raw bytes."""
    command = "yes \"$(head -c 60 /dev/zero | tr '\\0' '\\377')\" | head -c 300000000"
    result = pi_call("bash", {"command": command}, tmp_path)
    assert (result.status, result.err) == (0, "")
    found = re.search(r"Full output: (/[^\]]+)\]", result.out)
    assert found is not None
    with open(found.group(1), "rb") as file:
        assert file.read(122) == b"\xff" * 60 + b"\n" + b"\xff" * 60 + b"\n"
        assert os.fstat(file.fileno()).st_size == 300_000_000
    out = _remove_full_output(result.out)
    # 4,918,032 whole lines of 61 bytes and one of 48; the last 283 lines fit in 50KB.
    assert out == ("\ufffd" * 60 + "\n") * 282 + "\ufffd" * 48 + (
        "\n\n[Showing lines 4917751-4918033 of 4918033 (50.0KB limit). Full output: FILE]\n"
    )
    assert result.peak <= 64 * MIB


# -- edit -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("big.txt", b"a\r" * (MAX_EDIT_FILE_BYTES // 2 + 1)),
        ("lines.txt", b"ab\r\n" * MAX_EDIT_FILE_LINES),
    ],
)
def test_edit_refuses_a_file_over_its_limits(tmp_path: Path, name: str, content: bytes):
    """Over the decoded path's limits, only UTF-8 without CR is edited (on its bytes:
    ``tests/builtin_tools/test_edit_large.py``)."""
    (tmp_path / name).write_bytes(content)
    arguments = {"path": name, "edits": [{"oldText": "a", "newText": "b"}]}
    result = pi_call("edit", arguments, tmp_path)
    assert result.status == 1
    assert result.out == (
        f"Could not edit file: {name}. It is larger than edit handles (8.0MB or 400000 "
        "lines; up to 128.0MB for UTF-8 text without CR line endings whose old texts match "
        "exactly); change it with bash (sed, a script) instead.\n"
    )
    assert (tmp_path / name).read_bytes() == content
    assert result.peak <= MEMORY_BOUND


def test_edit_at_its_limits_stays_under_the_bound(tmp_path: Path):
    lines = MAX_EDIT_FILE_LINES - 10
    (tmp_path / "many.txt").write_bytes(b"ab\n" * lines + b"zz\n")
    arguments = {"path": "many.txt", "edits": [{"oldText": "zz\n", "newText": "X\n"}]}
    result = pi_call("edit", arguments, tmp_path)
    assert result.status == 0, result.out[-500:]
    assert result.out.startswith("Successfully replaced 1 block(s) in many.txt.\n")
    assert result.peak <= MEMORY_BOUND


def test_grep_reads_ripgreps_plain_lines_with_binary_notices_and_odd_names(tmp_path: Path):
    """ripgrep's own ``PATH: WARNING: stopped searching binary file`` line is skipped, a name
    holding a newline or a colon is kept whole, and a binary file searched by name prints its
    matching lines (``--text``) as ripgrep's JSON did."""
    write_repeated(tmp_path / "a.bin", b"z", 200_000, tail=b"\n\0\nneedle after nul\n").write_bytes(
        b"needle first\n" + (tmp_path / "a.bin").read_bytes()
    )
    (tmp_path / "b\nc: 1:x.txt").write_bytes(b"one needle\r\n")
    (tmp_path / "d.bin").write_bytes(b"bin needle\0zz\n")
    result = pi_call("grep", {"pattern": "needle"}, tmp_path)
    assert (result.status, result.err) == (0, "")
    assert result.out == ("a.bin:1: needle first\nb\nc: 1:x.txt:1: one needle\n")
    result = run_pi_measured(
        "call", "grep", '{"pattern": "needle", "path": "d.bin"}', "--json", cwd=tmp_path
    )
    assert result.status == 0
    assert json.loads(result.out)["content"] == [
        {"type": "text", "text": "d.bin:1: bin needle\0zz"}
    ]


async def test_local_run_rg_stops_ripgrep_past_its_output_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Past ``RG_MAX_OUTPUT_BYTES`` ripgrep is killed; the output ends at its last whole line."""
    from pi_core._backend_kit import local_files

    assert local_files.RG_MAX_OUTPUT_BYTES == 32 * MIB
    monkeypatch.setattr(local_files, "RG_MAX_OUTPUT_BYTES", 100)
    (tmp_path / "f.txt").write_text("".join(f"x{i:03d}\n" for i in range(100_000 // 5)))
    output = await local_files.LocalFileOperations().run_rg(
        ["--no-config", "--no-filename", "x"], str(tmp_path)
    )
    assert output.exit_code == 0
    assert output.stdout == "".join(f"x{i:03d}\n" for i in range(20)).encode()
    assert output.stderr == b""
