"""OutputAccumulator (spec §5; seed §十六): streaming UTF-8, totals, tail window, temp file."""

from __future__ import annotations

import os
import re
import stat
import tempfile
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_builtin_tools.output_accumulator import OutputAccumulator
from pi_builtin_tools.truncate import truncate_tail


@pytest.fixture(autouse=True)
def private_tmpdir(tmp_path, monkeypatch):
    """Temp files go to this test's own folder (``tempfile.gettempdir()``)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def feed(acc: OutputAccumulator, data: bytes, size: int = 7) -> None:
    for i in range(0, len(data), size):
        acc.append(data[i : i + size])


def test_split_multibyte_character_decodes_whole() -> None:
    acc = OutputAccumulator()
    acc.append(b"\xe2")
    acc.append(b"\x82\xac\n")
    snap = acc.finish()
    assert snap.content == "€\n"
    assert acc.total_bytes == 4
    assert acc.total_lines == 1
    assert snap.full_output_path is None


def test_split_character_in_every_position() -> None:
    data = "héllo 😀 wörld — €\n".encode()
    for cut in range(len(data)):
        acc = OutputAccumulator()
        acc.append(data[:cut])
        acc.append(data[cut:])
        assert acc.finish().content == "héllo 😀 wörld — €\n"


def test_invalid_bytes_become_replacement_characters() -> None:
    acc = OutputAccumulator()
    acc.append(b"a\xffb\xe2\x82")
    snap = acc.finish()
    assert snap.content == "a\ufffdb\ufffd"
    assert acc.raw_bytes == 5
    assert acc.total_bytes == 8


def test_append_after_finish_raises() -> None:
    acc = OutputAccumulator()
    acc.finish()
    with pytest.raises(RuntimeError, match=r"^Cannot append to a finished output accumulator$"):
        acc.append(b"x")


@pytest.mark.parametrize(
    ("data", "lines", "last_line"),
    [(b"", 0, 0), (b"a", 1, 1), (b"a\nb\n", 2, 1), (b"a\nbb", 2, 2), (b"\n\n", 2, 0)],
)
def test_modern_line_count(data: bytes, lines: int, last_line: int) -> None:
    acc = OutputAccumulator()
    acc.append(data)
    acc.finish()
    assert acc.total_lines == lines
    assert acc.last_line_bytes == last_line


def test_line_limit_tail_and_full_output_file(private_tmpdir) -> None:
    """seq 3000 (c20-bash-line-truncation-saves-full-output): lines 1001-3000 of 3000."""
    data = "".join(f"{i}\n" for i in range(1, 3001)).encode()
    acc = OutputAccumulator(temp_file_prefix="pi-bash")
    feed(acc, data, 1000)
    snap = acc.finish()
    assert snap.content == "\n".join(str(i) for i in range(1001, 3001))
    t = snap.truncation
    assert (t.truncated, t.truncated_by, t.total_lines, t.total_bytes) == (
        True,
        "lines",
        3000,
        13893,
    )
    assert (t.output_lines, t.output_bytes, t.last_line_partial) == (2000, 9999, False)
    path = snap.full_output_path
    assert path is not None
    assert re.fullmatch(re.escape(str(private_tmpdir)) + r"/pi-bash-[0-9a-f]{16}\.log", path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, "rb") as f:
        assert f.read() == data


def test_byte_limit_tail_matches_pi() -> None:
    """80 lines of 801 bytes (conformance bash-byte-limit-tail)."""
    data = "".join(f"{i:0800d}\n" for i in range(1, 81)).encode()
    acc = OutputAccumulator()
    feed(acc, data, 4096)
    snap = acc.finish()
    assert snap.truncation.to_details() == {
        "content": "\n".join(f"{i:0800d}" for i in range(18, 81)),
        "truncated": True,
        "truncatedBy": "bytes",
        "totalLines": 80,
        "totalBytes": 64080,
        "outputLines": 63,
        "outputBytes": 50462,
        "lastLinePartial": False,
        "firstLineExceedsLimit": False,
        "maxLines": 2000,
        "maxBytes": 51200,
    }


def test_one_long_line_keeps_its_end() -> None:
    acc = OutputAccumulator()
    feed(acc, b"a" * 59999 + b"b", 65536)
    snap = acc.finish()
    assert snap.content == "a" * 51199 + "b"
    assert snap.truncation.last_line_partial is True
    assert snap.truncation.output_bytes == 51200
    assert snap.last_line_bytes == 60000


def test_last_line_size_ignores_final_newline() -> None:
    acc = OutputAccumulator()
    feed(acc, b"x" * 60000 + b"\n", 8192)
    snap = acc.finish()
    assert snap.truncation.last_line_partial is True
    assert snap.last_line_bytes == 60000


def test_no_temp_file_below_the_limits() -> None:
    acc = OutputAccumulator()
    feed(acc, b"x\n" * 2000)
    snap = acc.finish()
    assert snap.truncation.truncated is False
    assert snap.full_output_path is None
    assert snap.content == "x\n" * 2000


def test_temp_file_created_lazily_with_earlier_chunks(private_tmpdir) -> None:
    acc = OutputAccumulator(max_bytes=10)
    acc.append(b"0123456789")
    assert acc.full_output_path is None
    acc.append(b"A")
    path = acc.full_output_path
    assert path is not None
    acc.append(b"BC")
    acc.finish()
    with open(path, "rb") as f:
        assert f.read() == b"0123456789ABC"


def test_snapshot_can_persist_on_request() -> None:
    acc = OutputAccumulator(max_bytes=4)
    acc.append(b"ab")
    assert acc.snapshot(persist_if_truncated=True).full_output_path is None
    acc.append(b"cde")
    assert acc.snapshot(persist_if_truncated=True).full_output_path is not None


def test_transform_applies_to_text_not_to_the_file() -> None:
    acc = OutputAccumulator(max_lines=1, transform=lambda s: s.replace("\x1b[31m", ""))
    acc.append(b"\x1b[31mred\nblue\n")
    snap = acc.finish()
    assert snap.content == "blue"
    assert snap.full_output_path is not None
    with open(snap.full_output_path, "rb") as f:
        assert f.read() == b"\x1b[31mred\nblue\n"


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.tuples(st.integers(0, 90), st.sampled_from(["a", "é", "€", "😀", "\x1b"])), max_size=60
    ),
    trailing=st.booleans(),
    chunk=st.integers(1, 37),
)
def test_snapshot_equals_tail_truncation_of_the_whole_output(lines, trailing, chunk) -> None:
    """Whatever the chunking and however much the window was trimmed, the snapshot is the tail
    truncation of the complete output, with the totals of the complete output."""
    text = "\n".join(ch * n for n, ch in lines) + ("\n" if trailing and lines else "")
    data = text.encode()
    acc = OutputAccumulator(max_lines=7, max_bytes=40)
    feed(acc, data, chunk)
    snap = acc.finish()
    expected = truncate_tail(text, 7, 40)
    assert snap.content == expected.content
    t = snap.truncation
    assert (t.output_lines, t.output_bytes, t.last_line_partial) == (
        expected.output_lines,
        expected.output_bytes,
        expected.last_line_partial,
    )
    assert (t.total_lines, t.total_bytes, t.truncated) == (
        expected.total_lines,
        expected.total_bytes,
        expected.truncated,
    )
    if expected.truncated:
        assert t.truncated_by == expected.truncated_by
        assert snap.full_output_path is not None
        with open(snap.full_output_path, "rb") as f:
            assert f.read() == data


def test_memory_stays_bounded_for_large_output() -> None:
    chunk = b"some log line with a few words in it\n" * 1771  # ~64KB
    acc = OutputAccumulator()
    tracemalloc.start()
    try:
        for _ in range(1600):  # ~105 MB
            acc.append(chunk)
        acc.snapshot()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        acc.finish()
    assert acc.raw_bytes == len(chunk) * 1600
    assert peak < 8 * 1024 * 1024
