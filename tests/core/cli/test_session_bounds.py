"""Reading a session never exhausts memory (``docs/reference/cli.md``, "Session file limits").

``pi replay``, ``pi replay --verify`` and ``pi run --model scripted:FILE`` read lines one at a
time: a line over 32 MiB, a file over 64 MiB or 100,000 lines is one line on stderr and exit 2,
whatever the input (``/dev/zero``, ``/dev/urandom``, a FIFO that never ends).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

from memory_support import MEMORY_BOUND, run_pi_measured
from pi_core._wire.session_files import (
    MAX_SESSION_FILE_BYTES,
    MAX_SESSION_LINE_BYTES,
    MAX_SESSION_LINES,
    SessionFileError,
    read_bounded_lines,
    read_session_file,
)

LINE_LIMIT = "line longer than 32 MiB (the limit for one session line)"


def test_the_documented_limits():
    assert (MAX_SESSION_LINE_BYTES, MAX_SESSION_FILE_BYTES, MAX_SESSION_LINES) == (
        32 * 1024 * 1024,
        64 * 1024 * 1024,
        100_000,
    )


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["replay", "/dev/zero"], ""),
        (["replay", "/dev/zero", "--verify"], ""),
        (["run", "--model", "scripted:/dev/zero", "hello"], "scripted:/dev/zero: "),
    ],
)
def test_dev_zero_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], prefix: str):
    result = run_pi_measured(*argv, cwd=tmp_path, timeout=60)
    assert (result.status, result.out) == (2, "")
    assert result.err == f"pi: error: {prefix}/dev/zero:1: {LINE_LIMIT}\n"
    assert result.peak <= MEMORY_BOUND


def test_dev_urandom_is_not_utf8(tmp_path: Path):
    result = run_pi_measured("replay", "/dev/urandom", cwd=tmp_path, timeout=60)
    assert (result.status, result.out) == (2, "")
    assert re.fullmatch(r"pi: error: /dev/urandom:\d+: not valid UTF-8\n", result.err)
    assert result.peak <= MEMORY_BOUND


def test_a_fifo_that_never_ends_stops_at_the_line_limit(tmp_path: Path):
    fifo = tmp_path / "endless.jsonl"
    os.mkfifo(fifo)
    line = (json.dumps({"role": "user", "content": "x", "timestamp": 0}) + "\n").encode()
    stop = threading.Event()

    def writer() -> None:
        try:
            with fifo.open("wb") as handle:
                while not stop.is_set():
                    handle.write(line * 1000)
        except (BrokenPipeError, OSError):
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        result = run_pi_measured("replay", str(fifo), cwd=tmp_path, timeout=60)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert (result.status, result.out) == (2, "")
    assert result.err == (
        f"pi: error: {fifo}: more than 100000 lines (the limit for a session file)\n"
    )
    assert result.peak <= MEMORY_BOUND


def test_read_bounded_lines_limits_and_texts(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n' + b"x" * 11 + b"\n")
    with pytest.raises(SessionFileError) as caught:
        read_bounded_lines(path, "s.jsonl", max_line=10)
    assert (
        str(caught.value) == "s.jsonl:3: line longer than 10 bytes (the limit for one session line)"
    )
    with pytest.raises(SessionFileError) as caught:
        read_bounded_lines(path, "s.jsonl", max_total=15)
    assert str(caught.value) == "s.jsonl: longer than 15 bytes (the limit for a session file)"
    with pytest.raises(SessionFileError) as caught:
        read_bounded_lines(path, "s.jsonl", max_lines=2)
    assert str(caught.value) == "s.jsonl: more than 2 lines (the limit for a session file)"
    assert read_bounded_lines(path, "s.jsonl") == ['{"a": 1}\r', "", "x" * 11]


def test_a_line_at_the_limit_is_read(tmp_path: Path):
    """Exactly ``max_line`` bytes (without the newline) is within the limit."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"y" * 9 + b"\r\n" + b"w" * 10 + b"\n" + b"z" * 10)
    assert read_bounded_lines(path, "s", max_line=10) == ["y" * 9 + "\r", "w" * 10, "z" * 10]
    path.write_bytes(b"y" * 10 + b"\r\n")
    with pytest.raises(SessionFileError) as caught:
        read_bounded_lines(path, "s", max_line=10)
    assert str(caught.value) == "s:1: line longer than 10 bytes (the limit for one session line)"


def test_line_separators_inside_json_strings_stay_in_the_line(tmp_path: Path):
    """Lines end at ``\\n`` only: U+2028 and U+0085 are valid inside a JSON string."""
    message = {"role": "user", "content": "a\u2028b\x85c", "timestamp": 0}
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(message, ensure_ascii=False) + "\n", encoding="utf-8")
    parsed = read_session_file(path)
    assert [m.content for m in parsed.messages] == ["a\u2028b\x85c"]
