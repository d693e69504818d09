"""OutputAccumulator (spec §5; seed §十六): streaming UTF-8, totals, tail window, temp file."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_builtin_tools.files.truncate import truncate_tail
from pi_builtin_tools.shell import output_accumulator
from pi_builtin_tools.shell.output_accumulator import OutputAccumulator, OutputSnapshot
from pi_builtin_tools.shell.output_files import FullOutputFiles
from support import fill_up


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


@pytest.mark.parametrize(
    ("data", "newlines"),
    [
        (b"y\n" * 100_000, 100_000),  # dense: bytes.count throughout
        ((b"z" * 299 + b"\n") * 1_000 + b"tail", 1_000),  # sparse: memchr (bytes.replace)
        # sparse at the start, dense after it: the probe picks replace, still exact
        ((b"z" * 127 + b"\n") * 512 + b"\n" * 70_000 + b"x", 512 + 70_000),
        # dense at the start, sparse after it: count, still exact
        (b"\n" * 65_536 + b"x" * 100_000 + b"\n", 65_537),
        (b"\n" * 131_071, 131_071),  # below two probes: bytes.count
        (b"x" * 300_000, 0),  # no newline: replace returns the chunk itself
    ],
)
def test_count_newlines_is_exact_whatever_the_density(data: bytes, newlines: int) -> None:
    assert output_accumulator.count_newlines(data) == newlines
    acc = OutputAccumulator()
    acc.append(data)
    assert acc.total_lines == newlines + (0 if data.endswith(b"\n") else 1)


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


def test_chunk_larger_than_the_window_after_non_ascii_text() -> None:
    """An ASCII chunk that alone fills the tail window replaces the earlier tail (counted on its
    raw bytes); what came before still counts in the totals."""
    head = "é€😀\n".encode() * 10
    body = b"".join(b"%06d\n" % i for i in range(30000))  # 210,000 bytes
    acc = OutputAccumulator()
    acc.append(head)
    acc.append(body)
    snap = acc.finish()
    t = snap.truncation
    assert snap.content == "\n".join(f"{i:06d}" for i in range(28000, 30000))
    assert (t.truncated, t.truncated_by, t.total_lines, t.total_bytes) == (
        True,
        "lines",
        30010,
        len(head) + len(body),
    )
    assert (t.output_lines, t.output_bytes) == (2000, 13999)
    assert acc.raw_bytes == len(head) + len(body)


def test_character_split_before_a_large_ascii_chunk() -> None:
    """The end of a character split across chunks goes through the decoder; the rest of the chunk
    after it is text as usual."""
    acc = OutputAccumulator()
    acc.append(b"x\xe2")
    acc.append(b"\x82\xac" + b"a" * 200_000 + b"\n")
    snap = acc.finish()
    assert snap.content == "a" * 51200
    assert (snap.truncation.total_bytes, snap.truncation.total_lines) == (200_005, 1)
    assert snap.last_line_bytes == 200_004
    assert snap.truncation.last_line_partial is True


def test_valid_utf8_chunk_ending_inside_a_character() -> None:
    acc = OutputAccumulator()
    acc.append("é".encode() * 3 + b"\xf0\x9f")
    acc.append(b"\x98\x80\n")
    snap = acc.finish()
    assert snap.content == "ééé😀\n"
    assert (acc.total_bytes, acc.total_lines, acc.raw_bytes) == (11, 1, 11)


def test_invalid_chunk_then_ascii_chunks() -> None:
    acc = OutputAccumulator()
    acc.append(b"\xed\xa0")  # the start of a surrogate: invalid, held until it is known
    acc.append(b"ok\n")
    acc.append(b"\xff")
    acc.append(b"z")
    snap = acc.finish()
    assert snap.content == "\ufffd\ufffdok\n\ufffdz"
    assert (acc.raw_bytes, acc.total_bytes, acc.total_lines, acc.last_line_bytes) == (7, 13, 2, 4)


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.sampled_from(
            [
                *(b"a", b"b\n", b"\n", b"\x1b[1m", "é".encode(), "€".encode(), "😀".encode()),
                *(b"\xe2", b"\x82", b"\xac", b"\xf0", b"\x9f", b"\xed", b"\xa0", b"\xff", b"\xc3"),
                *(b"x" * 45, b"y" * 120 + b"\n", b"z\n" * 30),
            ]
        ),
        max_size=80,
    ).map(b"".join),
    chunks=st.lists(st.integers(1, 400), min_size=1, max_size=12),
)
def test_any_bytes_any_chunking_equal_the_decoded_whole(data: bytes, chunks: list[int]) -> None:
    """Raw bytes, valid or not, in chunks small or larger than the tail window: the snapshot is
    the tail truncation of the whole output decoded at once (invalid bytes as U+FFFD)."""
    acc = OutputAccumulator(max_lines=7, max_bytes=40)
    pos = i = 0
    while pos < len(data):
        size = chunks[i % len(chunks)]
        acc.append(data[pos : pos + size])
        pos += size
        i += 1
    snap = acc.finish()
    text = data.decode("utf-8", "replace")
    expected = truncate_tail(text, 7, 40)
    t = snap.truncation
    assert snap.content == expected.content
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
    assert acc.raw_bytes == len(data)
    last_line = text[:-1] if text.endswith("\n") else text
    assert snap.last_line_bytes == len(last_line.rpartition("\n")[2].encode())
    if expected.truncated:
        assert t.truncated_by == expected.truncated_by
        assert snap.full_output_path is not None
        with open(snap.full_output_path, "rb") as f:
            assert f.read() == data


def test_full_output_file_is_complete_once_closed(private_tmpdir) -> None:
    chunks = [b"%05d line\n" % i * 300 for i in range(400)]  # 400 chunks of 3,300 bytes
    acc = OutputAccumulator()
    for chunk in chunks:
        acc.append(chunk)
    assert acc.total_lines == 120_000
    path = acc.full_output_path
    assert path is not None
    acc.close_temp_file()
    with open(path, "rb") as f:
        assert f.read() == b"".join(chunks)
    snap = acc.finish()
    assert (snap.truncation.total_lines, snap.truncation.total_bytes) == (120_000, 1_320_000)


# -- bounded full-output files (issue 23, point 5) -------------------------------------------

NUMBERED = b"".join(b"%05d\n" % i for i in range(1, 2001))
"""2,000 lines, 12,000 bytes."""


def feed_all(acc: OutputAccumulator, data: bytes = NUMBERED, size: int = 97) -> OutputSnapshot:
    for start in range(0, len(data), size):
        acc.append(data[start : start + size])
    return acc.finish()


def uncut_full_output(data: bytes, max_bytes: int) -> tuple[str, bool]:
    acc = OutputAccumulator(max_bytes=10)
    feed_all(acc, data)
    return acc.read_full_output(max_bytes)


def test_the_file_is_cut_at_its_limit_and_counting_goes_on(private_tmpdir) -> None:
    acc = OutputAccumulator(max_bytes=10, max_file_bytes=1000)
    snap = feed_all(acc)
    assert (snap.full_output_cut, snap.full_output_bytes) == ("the file limit", 1000)
    assert snap.full_output_path is not None
    with open(snap.full_output_path, "rb") as f:
        assert f.read() == NUMBERED[:1000]
    t = snap.truncation
    assert (t.total_lines, t.total_bytes, acc.raw_bytes) == (2000, 12000, 12000)
    assert snap.content == "02000"
    # the program-facing output is what an uncut file gives: the whole, or its head and tail
    assert acc.read_full_output() == (NUMBERED.decode(), False)
    for size in (400, 2000, 12000):
        assert acc.read_full_output(size) == uncut_full_output(NUMBERED, size)


def test_the_session_budget_cuts_then_keeps_no_file(private_tmpdir) -> None:
    files = FullOutputFiles(max_session_bytes=1500)
    snaps = [
        feed_all(OutputAccumulator(max_bytes=10, max_file_bytes=1000, files=files))
        for _ in range(3)
    ]
    assert [(s.full_output_cut, s.full_output_bytes) for s in snaps] == [
        ("the file limit", 1000),
        ("the session limit", 500),
        ("the session limit", 0),
    ]
    assert [os.path.getsize(s.full_output_path) for s in snaps[:2]] == [1000, 500]
    assert snaps[2].full_output_path is None  # not kept: no file at all
    assert files.written == 1500
    names = sorted(os.listdir(private_tmpdir))
    assert names == sorted(
        [*(os.path.basename(s.full_output_path) for s in snaps[:2]), f"pi-session-{files.tag}.lock"]
    )
    assert all(re.fullmatch(rf"pi-output-{files.tag}[0-9a-f]{{8}}\.log", n) for n in names[:2])


def test_output_not_kept_still_gives_its_head_and_tail(private_tmpdir) -> None:
    files = FullOutputFiles(max_session_bytes=1)
    files.written = 1
    data = b"".join(b"%07d\n" % i for i in range(400_000))  # 3.2 MB
    acc = OutputAccumulator(max_bytes=10, files=files)
    snap = feed_all(acc, data, 65536)
    assert (snap.full_output_path, snap.full_output_cut) == (None, "the session limit")
    assert snap.truncation.total_lines == 400_000
    assert os.listdir(private_tmpdir) == []
    assert acc.read_full_output() == uncut_full_output(
        data, output_accumulator.STRUCTURED_MAX_BYTES
    )


def test_no_file_is_started_on_a_file_system_with_less_than_5_percent_free(
    small_filesystem, monkeypatch
) -> None:
    disk = small_filesystem(1 << 20)
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    fill_up(disk)
    os.truncate(disk / "filler", (1 << 20) - 40 * 1024)  # 40 KiB free: under 5% of 1 MiB
    acc = OutputAccumulator(max_bytes=10)
    snap = feed_all(acc)
    assert (snap.full_output_path, snap.full_output_cut) == (None, f"{disk} has less than 5% free")
    assert sorted(os.listdir(disk)) == ["filler"]
    assert acc.read_full_output() == (NUMBERED.decode(), False)
    os.truncate(disk / "filler", (1 << 20) - 60 * 1024)  # 60 KiB free: a file is started
    snap = feed_all(OutputAccumulator(max_bytes=10))
    assert (snap.full_output_cut, os.path.getsize(snap.full_output_path)) == (None, 12000)


def test_a_full_disk_cuts_the_file_where_the_kernel_stopped(small_filesystem, monkeypatch) -> None:
    disk = small_filesystem(1 << 20)
    monkeypatch.setattr(tempfile, "tempdir", str(disk))
    acc = OutputAccumulator(max_bytes=10)
    acc.append(NUMBERED[:100])  # the file is started, the disk has room
    fill_up(disk)
    more = NUMBERED[100:] * 50  # 595,000 bytes more: past the disk
    snap = feed_all(acc, more, 4096)
    data = NUMBERED[:100] + more
    assert snap.full_output_cut == "No space left on device"
    assert snap.full_output_path is not None
    size = os.path.getsize(snap.full_output_path)
    assert size == snap.full_output_bytes and 100 <= size < len(data)
    with open(snap.full_output_path, "rb") as f:
        assert f.read() == data[:size]
    assert (acc.raw_bytes, snap.truncation.total_lines) == (len(data), data.count(b"\n"))


def test_memory_stays_bounded_past_the_cut() -> None:
    acc = OutputAccumulator(max_file_bytes=1 << 20)
    chunk = b"z" * 999 + b"\n"
    tracemalloc.start()
    try:
        for _ in range(40_000):  # 40 MB, 39 MB of it past the cut
            acc.append(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    snap = acc.finish()
    assert (snap.full_output_cut, acc.total_lines) == ("the file limit", 40_000)
    assert peak < 4 * 1024 * 1024, peak
    text, cut = acc.read_full_output()
    assert cut and text.endswith(("z" * 999 + "\n") * 3)


# -- drop-behind of the full-output file ---------------------------------------------------


def _resident_bytes(path: str) -> int:
    """Bytes of ``path`` in the page cache (``mincore`` on a private mapping of it)."""
    import ctypes
    import mmap

    size = os.path.getsize(path)
    with open(path, "rb") as file:
        mapping = mmap.mmap(file.fileno(), size, access=mmap.ACCESS_COPY)
    try:
        start = ctypes.c_char.from_buffer(mapping)
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mincore(ctypes.byref(start), ctypes.c_size_t(size), vector) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        del start
        return sum(byte & 1 for byte in vector) * mmap.PAGESIZE
    finally:
        mapping.close()


def _page_cache_can_be_dropped(folder: str) -> bool:
    """Whether a written-back file in ``folder`` leaves the page cache on ``POSIX_FADV_DONTNEED``
    (not on tmpfs, whose pages are the file)."""
    probe = os.path.join(folder, "probe")
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"p" * (1 << 20))
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    try:
        return _resident_bytes(probe) < (1 << 19)
    finally:
        os.unlink(probe)


needs_fadvise = pytest.mark.skipif(
    not hasattr(os, "posix_fadvise") or not sys.platform.startswith("linux"),
    reason="drop-behind needs posix_fadvise (and the residency probe Linux's mincore)",
)


@needs_fadvise
def test_a_large_output_leaves_the_page_cache_as_it_is_written_back(private_tmpdir) -> None:
    if not _page_cache_can_be_dropped(str(private_tmpdir)):
        pytest.skip(f"{private_tmpdir} keeps files in memory (tmpfs): nothing to drop")
    window = output_accumulator.WRITEBACK_WINDOW
    assert window == 8 * 1024 * 1024
    mib = b"".join(b"%07d " % i + b"x" * 1015 + b"\n" for i in range(1024))  # 1,024 lines
    acc = OutputAccumulator()
    for _ in range(40):
        acc.append(mib)
    path = acc.full_output_path
    assert path is not None
    with open(path, "rb") as other:
        os.fsync(other.fileno())  # everything so far is written back: the next step drops it
    for _ in range(8):
        acc.append(mib)
    resident = _resident_bytes(path)
    acc.finish()
    # Left: at most the last window (written since the step before, under writeback now).
    assert resident <= window, resident
    with open(path, "rb") as file:
        assert file.read() == mib * 48
    plain = os.path.join(str(private_tmpdir), "plain.log")
    with open(plain, "wb") as file:
        for _ in range(48):
            file.write(mib)
    assert _resident_bytes(plain) >= 40 * len(mib)  # a file written as usual stays


def test_drop_behind_steps_every_window_from_the_first_byte(private_tmpdir, monkeypatch) -> None:
    calls: list[tuple[int, int, int]] = []

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        calls.append((offset, length, advice))

    monkeypatch.setattr(output_accumulator.os, "posix_fadvise", fadvise, raising=False)
    monkeypatch.setattr(output_accumulator.os, "POSIX_FADV_DONTNEED", 4, raising=False)
    acc = OutputAccumulator()
    acc.append(b"y\n" * (4 * 1024 * 1024 - 1))  # one byte short of 8 MiB
    acc.finish()
    assert calls == []  # below one window: written as before
    acc = OutputAccumulator()
    acc.append(b"y\n" * 10)  # the first 20 bytes wait in memory until the limits are passed
    for _ in range(3):
        acc.append(b"y\n" * (4 * 1024 * 1024))  # 8 MiB each
    acc.finish()
    window = output_accumulator.WRITEBACK_WINDOW
    assert calls == [(0, window + 20, 4), (0, 2 * window + 20, 4), (0, 3 * window + 20, 4)]


def test_a_file_system_that_refuses_drop_behind_gets_plain_writes(
    private_tmpdir, monkeypatch
) -> None:
    refused: list[int] = []

    def refuse(fd: int, offset: int, length: int, advice: int) -> None:
        refused.append(length)
        raise OSError(errno.ESPIPE, "Illegal seek")

    monkeypatch.setattr(output_accumulator.os, "posix_fadvise", refuse, raising=False)
    monkeypatch.setattr(output_accumulator.os, "POSIX_FADV_DONTNEED", 4, raising=False)
    acc = OutputAccumulator()
    chunk = b"%06d\n" % 7 * (1024 * 1024 // 7)
    for _ in range(40):
        acc.append(chunk)
    snap = acc.finish()
    with open(snap.full_output_path, "rb") as file:
        assert file.read() == chunk * 40
    assert snap.truncation.total_lines == 40 * (1024 * 1024 // 7)
    first_step = -(-output_accumulator.WRITEBACK_WINDOW // len(chunk)) * len(chunk)  # 9 chunks
    assert refused == [first_step]  # asked once; from then on written as any other file


@pytest.mark.parametrize("offset", [-2, -1, 0, 1])
def test_a_large_invalid_chunk_decodes_in_slices_as_a_whole(offset: int) -> None:
    """A chunk with invalid bytes goes through the decoder ``DECODE_SLICE`` bytes at a time; a
    character across a slice boundary still decodes whole."""
    slice_size = output_accumulator.DECODE_SLICE
    head = b"\xff" + b"a" * (slice_size - 2 + offset)
    data = (head + "€ ok\n".encode() + b"\xfe\n") * 3
    acc = OutputAccumulator(max_bytes=10 * slice_size)
    acc.append(data)
    snap = acc.finish()
    assert snap.content == data.decode("utf-8", "replace")
    assert acc.total_bytes == len(data.decode("utf-8", "replace").encode())
    assert acc.total_lines == 6
