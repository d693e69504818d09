"""Truncation helpers: spec §4 and scenarios §8.3 (52–60), with exact values."""

from __future__ import annotations

import pytest

from pi_builtin_tools.files.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    TruncationResult,
    format_size,
    split_lines,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_constants() -> None:
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH) == (2000, 51200, 500)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1126, "1.1KB"),
        (1280, "1.3KB"),
        (51200, "50.0KB"),
        (60000, "58.6KB"),
        (1048575, "1024.0KB"),
        (1048576, "1.0MB"),
        (1572864, "1.5MB"),
        (2058, "2.0KB"),
    ],
)
def test_format_size_table(n: int, text: str) -> None:
    """Scenario 52: JavaScript toFixed(1), half up (1280 → 1.3KB, not Python's 1.2)."""
    assert format_size(n) == text


def test_split_lines_modern_counting() -> None:
    """Port decision 5: a final newline adds no line; "" has none."""
    assert split_lines("") == []
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("\n") == [""]
    assert split_lines("a\n\n") == ["a", ""]


def test_head_by_lines() -> None:
    """Scenario 53."""
    r = truncate_head("a\nb\nc", max_lines=2)
    assert r == TruncationResult(
        content="a\nb",
        truncated=True,
        truncated_by="lines",
        total_lines=3,
        total_bytes=5,
        output_lines=2,
        output_bytes=3,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=2,
        max_bytes=51200,
    )


def test_head_first_line_too_long() -> None:
    """Scenario 54."""
    r = truncate_head("aaaaaaa\nbb", max_bytes=6)
    assert (r.content, r.first_line_exceeds_limit, r.truncated_by, r.output_lines) == (
        "",
        True,
        "bytes",
        0,
    )
    assert r.output_bytes == 0 and r.truncated and r.total_lines == 2 and r.total_bytes == 10


def test_head_byte_stop_and_exact_fit() -> None:
    """Scenario 55."""
    r = truncate_head("aaaa\nbb", max_bytes=6)
    assert (r.content, r.truncated_by, r.output_lines, r.output_bytes) == ("aaaa", "bytes", 1, 4)
    same = truncate_head("aaaa\nbb", max_bytes=7)
    assert (same.content, same.truncated, same.truncated_by) == ("aaaa\nbb", False, None)


def test_head_unchanged_keeps_trailing_newline() -> None:
    r = truncate_head("x\n" * 2000)
    assert (r.content, r.truncated, r.total_lines, r.output_lines) == (
        "x\n" * 2000,
        False,
        2000,
        2000,
    )
    cut = truncate_head("x\n" * 2001)
    assert (cut.content, cut.truncated_by, cut.total_lines) == (
        "\n".join(["x"] * 2000),
        "lines",
        2001,
    )


def test_head_to_details_is_pi_camel_case() -> None:
    assert truncate_head("a\nb\nc", max_lines=2).to_details() == {
        "content": "a\nb",
        "truncated": True,
        "truncatedBy": "lines",
        "totalLines": 3,
        "totalBytes": 5,
        "outputLines": 2,
        "outputBytes": 3,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 2,
        "maxBytes": 51200,
    }
    assert truncate_head("ok").to_details()["truncatedBy"] is None


def test_head_counts_utf8_bytes() -> None:
    r = truncate_head("é\né\né", max_bytes=5)
    assert (r.content, r.output_bytes, r.total_bytes, r.truncated_by) == ("é\né", 5, 8, "bytes")


def test_tail_by_lines() -> None:
    """Scenario 56, and modern counting with a trailing newline (§4.3)."""
    assert truncate_tail("a\nb\nc", max_lines=2).content == "b\nc"
    r = truncate_tail("a\nb\nc\n", max_lines=2)
    assert (r.content, r.total_lines, r.truncated_by) == ("b\nc", 3, "lines")


def test_tail_partial_last_line() -> None:
    """Scenario 57."""
    r = truncate_tail("aa\nbbbbbbbb", max_bytes=5)
    assert (r.content, r.last_line_partial, r.output_lines, r.truncated_by) == (
        "bbbbb",
        True,
        1,
        "bytes",
    )
    euro = truncate_tail("x\n€€€", max_bytes=5)
    assert (euro.content, euro.output_bytes, euro.last_line_partial) == ("€", 3, True)


def test_tail_oversized_line_with_trailing_newline() -> None:
    """Scenario 58 (modern: exactly the last 1000 x)."""
    r = truncate_tail("x" * 50000 + "\n", max_lines=100, max_bytes=1000)
    assert (r.content, r.truncated_by, r.last_line_partial, r.output_lines) == (
        "x" * 1000,
        "bytes",
        True,
        1,
    )
    assert (r.total_lines, r.total_bytes) == (1, 50001)


@pytest.mark.parametrize(
    "fixture",
    ["xxxx\n\n", "xxxx\n", "x" * 50 + "\n\n\n\n", "\n\n\n", "x\n\nx\n\n\n", "é" * 40 + "\n\n"],
)
@pytest.mark.parametrize("max_bytes", [1, 2, 3, 5, 8])
def test_tail_never_exceeds_max_bytes(fixture: str, max_bytes: int) -> None:
    """Scenario 59."""
    r = truncate_tail(fixture, max_bytes=max_bytes)
    assert len(r.content.encode()) <= max_bytes
    assert r.output_bytes == len(r.content.encode())
    assert r.content in fixture


def test_tail_zero_bytes_gives_empty() -> None:
    r = truncate_tail("abc", max_bytes=0)
    assert (r.content, r.last_line_partial) == ("", True)


def test_truncate_line() -> None:
    """Scenario 60; code points, not UTF-16 units (port decision 3)."""
    assert truncate_line("abcdef", 3) == ("abc... [truncated]", True)
    assert truncate_line("abc", 3) == ("abc", False)
    assert truncate_line("😀" * 3, 3) == ("😀" * 3, False)
    assert truncate_line("😀" * 4, 3) == ("😀" * 3 + "... [truncated]", True)
    assert truncate_line("y" * 501) == ("y" * 500 + "... [truncated]", True)
