"""Streaming command output with bounded memory (``docs/explanation/truncation.md``).

An :class:`OutputAccumulator` takes raw output chunks as they arrive and keeps, in memory, only

* an incremental UTF-8 decoder (a character split across chunks decodes whole; invalid bytes
  become U+FFFD),
* the totals: raw bytes, decoded UTF-8 bytes, lines (modern count), the size of the
  last line,
* a rolling tail of the decoded text (at most ``4 * max_bytes`` bytes: 200 KB with the
  defaults; the structured output is read back from the full-output file).

The first time the output passes ``max_bytes`` (raw or decoded) or ``max_lines``, a temporary
file ``{tempfile.gettempdir()}/{prefix}-{16 hex}.log`` (mode 0600) is created and receives the
complete raw output from the first byte on; every later chunk is appended. So 1 GB of output costs
a few MB of memory and a 1 GB file. The bash tool records each such file in its session's
:class:`~pi_builtin_tools.shell.output_files.FullOutputFiles`, which names it, caps the session's
files and removes them when the session ends (unless kept).

Bounded files: the file stops growing at ``max_file_bytes`` (1 GiB) or when the session's budget
(``files.remaining``) is spent, or when the disk refuses a write: the file is *cut* there (closed,
kept), the command runs on, and the output goes on being counted exactly; only its last
:data:`TAIL_AFTER_CUT` raw bytes are kept in memory (for :meth:`OutputAccumulator.read_full_output`).
When no file may be started (the budget is spent, the file system has less than 5% free, the file
cannot be created), the full output is *not kept*: the first :data:`HEAD_IN_MEMORY` bytes stay in
memory instead, then the last :data:`TAIL_AFTER_CUT`. The snapshot's ``full_output_cut`` says why
(:data:`FILE_LIMIT`, :data:`SESSION_LIMIT`, the file system's reason).

Drop-behind: each time the file has grown by :data:`WRITEBACK_WINDOW` bytes, the kernel is told
its pages are not needed (``posix_fadvise(POSIX_FADV_DONTNEED)``): it starts writing back the new
ones and drops from the page cache those written back since. The file then holds a few windows of
the page cache whatever its size: a 1 GB output neither pushes the user's files out of memory nor
takes 1 GB of new memory pages, which on a virtual machine cost up to 3 s per GB to fault in; the
kernel reuses the same few pages instead. What it costs: the output is written to the disk while
it streams (a file deleted at once would otherwise never reach it), and a later ``read`` of the
file's early part comes from the disk. An output below one window (8 MiB) is written exactly as
before.
"""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace

from pi_builtin_tools.files.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    truncate_tail,
)
from pi_builtin_tools.shell.output_files import (
    DEFAULT_FILE_MAX_BYTES,
    FullOutputFiles,
    free_space_problem,
)

STRUCTURED_MAX_BYTES = 1024 * 1024
"""UTF-8 budget of the program-facing output (``structuredContent.output``): 1 MiB (seed, last
section)."""

DECODE_SLICE = 64 * 1024
"""Bytes of a chunk with invalid UTF-8 decoded at a time."""

WRITEBACK_WINDOW = 8 * 1024 * 1024
"""The drop-behind step of the full-output file (module docstring): 8 MiB."""

TAIL_AFTER_CUT = STRUCTURED_MAX_BYTES
"""Raw bytes of the output's end kept in memory once the full-output file is cut: 1 MiB."""

HEAD_IN_MEMORY = STRUCTURED_MAX_BYTES // 2
"""Raw bytes of the output's start kept in memory when no full-output file could be started."""

NEWLINE_PROBE = 64 * 1024
"""Bytes at a chunk's start whose newlines decide how the chunk's newlines are counted
(:func:`count_newlines`)."""

SPARSE_LINE = 48
"""Mean line size (bytes) from which :func:`count_newlines` finds newlines with ``memchr``."""

FILE_LIMIT = "the file limit"
"""Why a file was cut at its tool's ``full_output_max_bytes``."""

SESSION_LIMIT = "the session limit"
"""Why a file was cut (or not started) when the session's ``full_output_session_max_bytes``
were spent."""


def count_newlines(data: bytes) -> int:
    """The ``\n`` bytes of ``data``. ``bytes.count`` of one byte is a byte-by-byte loop in
    CPython 3.11 (~0.4 s/GiB); ``bytes.replace`` of one byte by nothing finds each one with
    ``memchr`` (and copies the rest), which is faster when lines are long and much slower when
    they are short (~8x for ``y\n``). The first :data:`NEWLINE_PROBE` bytes decide: lines of
    :data:`SPARSE_LINE` bytes or more on average there, ``replace`` for the whole chunk."""
    size = len(data)
    if size < 2 * NEWLINE_PROBE:
        return data.count(b"\n")
    probe = data.count(b"\n", 0, NEWLINE_PROBE)
    if probe * SPARSE_LINE > NEWLINE_PROBE:
        return probe + data.count(b"\n", NEWLINE_PROBE)
    return size - len(data.replace(b"\n", b""))


@dataclass(frozen=True)
class OutputSnapshot:
    """The output so far as the model sees it.

    ``content`` is the tail-truncated text; ``truncation`` its :class:`TruncationResult` with the
    totals of the whole output (``truncated`` is true when the whole output passes a limit);
    ``full_output_path`` is the temporary file holding the complete raw output, or ``None``.
    ``last_line_bytes`` is the UTF-8 size of the last line (for the partial-line notice).
    ``full_output_cut`` is ``None`` when the file holds the whole output (or none was needed),
    else why it does not: the file was cut after ``full_output_bytes`` bytes
    (:data:`FILE_LIMIT`, :data:`SESSION_LIMIT`, ``No space left on device``), or, with
    ``full_output_path`` ``None``, no file was started (:data:`SESSION_LIMIT`,
    ``/tmp has less than 5% free``, ``Permission denied``).
    """

    content: str
    truncation: TruncationResult
    full_output_path: str | None
    last_line_bytes: int
    full_output_cut: str | None = None
    full_output_bytes: int = 0


class OutputAccumulator:
    """Accumulates streamed output; see the module docstring.

    ``transform(text) -> text`` (optional) is applied to the decoded tail before it is truncated
    for a snapshot (bash strips ANSI escape sequences with it);
    the temporary file always gets the raw bytes. ``max_file_bytes``: where the file is cut;
    ``files``: the session's files (names the file, holds the session's budget; ``None``: a
    random name and no session budget).
    """

    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_file_prefix: str = "pi-output",
        transform: Callable[[str], str] | None = None,
        max_file_bytes: int = DEFAULT_FILE_MAX_BYTES,
        files: FullOutputFiles | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.temp_file_prefix = temp_file_prefix
        self.max_file_bytes = max_file_bytes
        self._files = files
        self._opened = False  # creating the file was tried
        self._file_cut: str | None = None  # why the file stops early, or was not started
        self._memory_head: bytearray | None = None  # the output's start, when no file
        self._after_cut: bytearray | None = None  # the output's end, once the head is full
        self._transform = transform
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._window = max(2 * max_bytes, 1)
        self._keep = self._window
        self._tail = bytearray()  # decoded text, UTF-8 encoded (always valid UTF-8)
        self._tail_cut_mid_line = False  # the tail was trimmed inside a line
        self._pending_raw: list[bytes] | None = []  # raw chunks until the temp file exists
        self._fd: int | None = None
        self._path: str | None = None
        self._file_bytes = 0  # bytes written to the temporary file
        self._advised = 0  # its size at the last drop-behind step
        self._drop_behind = True
        self._finished = False
        self.raw_bytes = 0
        """Raw bytes appended."""
        self.total_bytes = 0
        """UTF-8 size of the decoded output."""
        self._newlines = 0
        self._current_line_bytes = 0  # decoded bytes after the last "\n"
        self._previous_line_bytes = 0  # decoded bytes of the last completed line

    # -- totals ---------------------------------------------------------------------------

    @property
    def total_lines(self) -> int:
        """Lines of the output (modern count: a final newline adds none; ``""`` has 0)."""
        return self._newlines + (1 if self._current_line_bytes else 0)

    @property
    def last_line_bytes(self) -> int:
        """UTF-8 size of the last line (the one before a final newline, if the output ends with
        one)."""
        if self._current_line_bytes or not self._newlines:
            return self._current_line_bytes
        return self._previous_line_bytes

    @property
    def full_output_path(self) -> str | None:
        """Path of the temporary file with the complete raw output, once created."""
        return self._path

    @property
    def truncated(self) -> bool:
        """Whether the whole output passes ``max_lines`` or ``max_bytes``."""
        return self.total_lines > self.max_lines or self.total_bytes > self.max_bytes

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` was called."""
        return self._finished

    # -- input ----------------------------------------------------------------------------

    def append(self, data: bytes) -> None:
        """Add one raw chunk. Raises ``RuntimeError`` (``Cannot append to a finished output
        accumulator``) after :meth:`finish`; ``OSError`` if the temporary file cannot be
        written.

        A chunk that is valid UTF-8 (ASCII above all: one ``isascii`` check) is counted on its
        raw bytes, which are also its decoded text's UTF-8; only a chunk with invalid bytes goes
        through the decoder (and is encoded again) for its replacement characters, and only the
        first bytes of a chunk that ends a character split across chunks. The result is the
        same as decoding the whole output at once."""
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        if not data:
            return
        self.raw_bytes += len(data)
        self._newlines += count_newlines(data)  # a "\n" byte is never inside a character
        self._take_raw(data)
        if self._fd is not None:
            self._write(data)  # one write per chunk: up to 1 MiB (the bash tool's reads)
            return
        if self._after_cut is not None:
            self._keep_tail(data)
            return
        if self._memory_head is not None:
            self._write(data)
            return
        if self._pending_raw is not None:
            self._pending_raw.append(bytes(data))
            if (
                self.raw_bytes > self.max_bytes
                or self.total_bytes > self.max_bytes
                or self.total_lines > self.max_lines
            ):
                self._open_temp_file()

    def _take_raw(self, data: bytes) -> None:
        decoder = self._decoder
        if decoder.getstate()[0]:
            # The rest of a character split across chunks: byte by byte (at most 4) until
            # the decoder holds nothing, then the remainder as any chunk.
            pos, end = 0, min(len(data), 4)
            while pos < end and decoder.getstate()[0]:
                self._take_text(decoder.decode(data[pos : pos + 1]))
                pos += 1
            if decoder.getstate()[0]:
                self._take_text(decoder.decode(data[pos:]))
                return
            data = data[pos:]
        if data.isascii():
            self._take_utf8(data)
            return
        try:
            _, valid = codecs.utf_8_decode(data, "strict", False)
        except UnicodeDecodeError:
            # Invalid bytes: through the decoder in slices, so that the text with its
            # replacement characters (two bytes each in a str, three in UTF-8) is never more
            # than a few hundred KB at a time, however large the chunk.
            view = memoryview(data)
            for start in range(0, len(view), DECODE_SLICE):
                self._take_text(decoder.decode(view[start : start + DECODE_SLICE]))
            return
        if valid == len(data):
            self._take_utf8(data)
        else:  # ends inside a character: its first bytes wait in the decoder
            self._take_utf8(data[:valid])
            self._take_text(decoder.decode(data[valid:]))

    def _take_text(self, text: str) -> None:
        if text:
            self._take_utf8(text.encode("utf-8", "surrogatepass"))

    def _take_utf8(self, encoded: bytes) -> None:
        """Count and keep decoded text given as its UTF-8 bytes (whole characters)."""
        size = len(encoded)
        if not size:
            return
        self.total_bytes += size
        last_nl = encoded.rfind(b"\n")
        if last_nl < 0:
            self._current_line_bytes += size
        else:
            previous_nl = encoded.rfind(b"\n", 0, last_nl)
            if previous_nl < 0:
                self._previous_line_bytes = self._current_line_bytes + last_nl
            else:
                self._previous_line_bytes = last_nl - previous_nl - 1
            self._current_line_bytes = size - last_nl - 1
        keep = self._keep
        if size > keep:
            # The chunk alone fills the window: keep its end (from a character boundary) and
            # whether the byte before that ends a line; the earlier tail is not needed.
            cut = size - keep
            while cut < size and (encoded[cut] & 0xC0) == 0x80:
                cut += 1
            self._tail = bytearray(memoryview(encoded)[cut:])
            self._tail_cut_mid_line = encoded[cut - 1] != 0x0A
            return
        self._tail += encoded
        if len(self._tail) > 2 * keep:
            cut = len(self._tail) - keep
            while cut < len(self._tail) and (self._tail[cut] & 0xC0) == 0x80:
                cut += 1
            self._tail_cut_mid_line = self._tail[cut - 1] != 0x0A
            del self._tail[:cut]

    # -- temporary file -------------------------------------------------------------------

    def _open_temp_file(self) -> None:
        """Start the file (once) and write what was pending; where no file may be started,
        keep the output's start in memory instead (module docstring)."""
        self._opened = True
        pending, self._pending_raw = self._pending_raw or [], None
        directory = tempfile.gettempdir()
        files = self._files
        problem = SESSION_LIMIT if files is not None and not files.remaining else None
        problem = problem or free_space_problem(directory)
        if problem is None:
            if files is not None:
                path = files.new_path(directory, self.temp_file_prefix)
            else:
                path = os.path.join(
                    directory, f"{self.temp_file_prefix}-{secrets.token_hex(8)}.log"
                )
            try:
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except OSError as e:
                problem = e.strerror or str(e)
            else:
                self._path = path
        if problem is not None:
            self._file_cut = problem
            self._memory_head = bytearray()
        for chunk in pending:
            self._write(chunk)

    def _room(self) -> tuple[int, str]:
        """``(bytes, reason)``: what the file (or the memory head) may still take, and why it
        takes no more past that."""
        if self._fd is None:
            return HEAD_IN_MEMORY - len(self._memory_head or b""), self._file_cut or ""
        room, reason = self.max_file_bytes - self._file_bytes, FILE_LIMIT
        if self._files is not None and self._files.remaining < room:
            room, reason = self._files.remaining, SESSION_LIMIT
        return room, reason

    def _write(self, data: bytes) -> None:
        """Append ``data`` to the file (or the memory head) up to its room; the rest goes to
        the tail kept after the cut."""
        if self._fd is None and self._memory_head is None:
            return  # the file is closed
        room, reason = self._room()
        if len(data) <= room:
            self._put(data)
            return
        view = memoryview(data)
        if room > 0:
            self._put(view[:room])
        self._cut(reason)
        self._keep_tail(view[room:])

    def _put(self, data: bytes | memoryview) -> None:
        if self._fd is None:
            if self._memory_head is not None:
                self._memory_head += data
            return
        written = 0
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write: the rest, unless the disk refuses it
                written += os.write(self._fd, memoryview(data)[written:])
        except OSError as e:  # a full disk, an I/O error: the file ends here
            self._count(written)
            self._cut(e.strerror or str(e))
            self._keep_tail(memoryview(data)[written:])
            return
        self._count(written)

    def _count(self, written: int) -> None:
        self._file_bytes += written
        if self._files is not None:
            self._files.written += written
        if self._drop_behind and self._file_bytes - self._advised >= WRITEBACK_WINDOW:
            assert self._fd is not None
            self._drop_behind_step(self._fd)

    def _cut(self, reason: str) -> None:
        """The file (or the memory head) takes no more: close it, keep the output's end."""
        if self._after_cut is not None:
            return
        if self._fd is not None:
            self._file_cut = reason
            self.close_temp_file()
        self._after_cut = bytearray()

    def _keep_tail(self, data: bytes | memoryview) -> None:
        tail = self._after_cut
        if tail is None or not data:
            return
        if len(data) >= TAIL_AFTER_CUT:
            tail[:] = data[len(data) - TAIL_AFTER_CUT :]
            return
        tail += data
        if len(tail) > 2 * TAIL_AFTER_CUT:
            del tail[: len(tail) - TAIL_AFTER_CUT]

    def _drop_behind_step(self, fd: int) -> None:
        """Tell the kernel the file's pages are not needed: it starts writing back the pages
        written since the last step and drops every page already written back. Where it cannot
        (no ``posix_fadvise``, a file system that refuses), the file is written as any other
        from then on."""
        try:
            os.posix_fadvise(fd, 0, self._file_bytes, os.POSIX_FADV_DONTNEED)
        except (AttributeError, OSError):
            self._drop_behind = False
            return
        self._advised = self._file_bytes

    def close_temp_file(self) -> None:
        """Close the temporary file (it stays on disk). Idempotent."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    # -- output ---------------------------------------------------------------------------

    def _tail_text(self, size: int) -> tuple[str, bool]:
        """``(text, whole)``: the decoded tail, at most about ``size`` bytes, starting on a
        character boundary, a line cut at its start dropped when a later line exists;
        ``whole`` tells whether it starts at the first byte of the output."""
        start = max(0, len(self._tail) - size)
        while start < len(self._tail) and (self._tail[start] & 0xC0) == 0x80:
            start += 1
        whole = start == 0 and self.total_bytes == len(self._tail)
        cut_mid_line = self._tail[start - 1] != 0x0A if start > 0 else self._tail_cut_mid_line
        if cut_mid_line:
            first_nl = self._tail.find(b"\n", start)
            if first_nl >= 0 and first_nl + 1 < len(self._tail):
                start = first_nl + 1
        text = self._tail[start:].decode("utf-8", "surrogatepass")
        return (self._transform(text) if self._transform else text), whole

    def snapshot(self, persist_if_truncated: bool = False) -> OutputSnapshot:
        """The tail truncation of the output so far: equal to
        ``truncate_tail(whole output)`` with the accumulator's totals.

        With ``persist_if_truncated`` the temporary file is created now if the output is
        truncated and has none yet.
        """
        truncated = self.truncated
        if persist_if_truncated and truncated and not self._opened and not self._finished:
            self._open_temp_file()
        text, whole = self._tail_text(self._window)
        tail = truncate_tail(text, self.max_lines, self.max_bytes)
        truncated_by = tail.truncated_by
        if truncated and (not tail.truncated or not whole):
            if not tail.truncated and tail.content.endswith("\n"):
                # The window fits but the whole output does not: kept lines are joined without
                # the final newline, as truncate_tail does whenever it cuts.
                tail = replace(tail, content=tail.content[:-1], output_bytes=tail.output_bytes - 1)
            if not whole and not tail.last_line_partial and tail.output_lines >= tail.total_lines:
                # Every line of the window was kept: the line before the window is too long to
                # fit (the window holds twice max_bytes), unless the line limit was reached.
                truncated_by = "lines" if tail.output_lines >= self.max_lines else "bytes"
            elif truncated_by is None or not tail.truncated:
                truncated_by = "bytes" if self.total_bytes > self.max_bytes else "lines"
        truncation = replace(
            tail,
            truncated=truncated,
            truncated_by=truncated_by if truncated else None,
            total_lines=self.total_lines,
            total_bytes=self.total_bytes,
        )
        return OutputSnapshot(
            content=tail.content,
            truncation=truncation,
            full_output_path=self._path,
            last_line_bytes=self.last_line_bytes,
            full_output_cut=self._file_cut,
            full_output_bytes=self._file_bytes,
        )

    def read_full_output(self, max_bytes: int = STRUCTURED_MAX_BYTES) -> tuple[str, bool]:
        """``(text, truncated)``: the complete raw output decoded as UTF-8, for programmatic
        callers (bash's ``structured_content.output``; Pi's ``readFullOutput``). Call after
        :meth:`finish`. Output longer than ``max_bytes`` raw bytes keeps its first and last
        ``max_bytes / 2`` bytes (the head cut back to a character boundary, the tail's leading
        continuation bytes skipped) around ``\n\n[... N bytes omitted ...]\n\n``; only then is
        ``truncated`` true. Reads at most ``max_bytes`` from the temporary file. A cut file (or
        no file) gives the same text from what is kept: its start and the tail kept in memory
        (``N`` counts whatever was not kept, so a head or tail shorter than ``max_bytes / 2``
        only when the output's middle was never kept)."""
        if self._path is None and self._memory_head is None:
            data = b"".join(self._pending_raw or [])
            return data.decode("utf-8", "replace"), False
        total = self.raw_bytes
        head_known = self._file_bytes if self._memory_head is None else len(self._memory_head)
        tail = self._after_cut or bytearray()
        tail_from = total - len(tail)  # tail holds the output's bytes [tail_from, total)
        whole = head_known >= tail_from
        if whole and total <= max_bytes:
            return self._read_known(0, total, head_known, tail).decode("utf-8", "replace"), False
        head_bytes = min(max_bytes // 2, head_known)
        tail_start = max(total - (max_bytes - max_bytes // 2), head_bytes)
        if not whole and tail_start < tail_from:
            tail_start = tail_from
        head = self._read_known(0, head_bytes, head_known, tail)
        end = self._read_known(tail_start, total, head_known, tail)
        head_text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=False)
        start = 0
        while start < len(end) and (end[start] & 0xC0) == 0x80:
            start += 1
        tail_text = end[start:].decode("utf-8", "replace")
        omitted = tail_start - head_bytes
        return f"{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail_text}", True

    def _read_known(self, start: int, end: int, head_known: int, tail: bytearray) -> bytes:
        """The output's bytes ``[start, end)``, from the file or the memory head (its first
        ``head_known`` bytes) and the tail kept after the cut (its last ``len(tail)``)."""
        parts = []
        if start < head_known:
            stop = min(end, head_known)
            if self._memory_head is not None:
                parts.append(bytes(self._memory_head[start:stop]))
            else:
                assert self._path is not None
                with open(self._path, "rb") as file:
                    file.seek(start)
                    parts.append(file.read(stop - start))
            start = stop
        if start < end:
            tail_from = self.raw_bytes - len(tail)
            parts.append(bytes(tail[start - tail_from : end - tail_from]))
        return b"".join(parts)

    def finish(self) -> OutputSnapshot:
        """Flush the decoder (an incomplete character at the end becomes U+FFFD), persist the
        complete output if truncated, close the temporary file and return the final snapshot.
        Later :meth:`append` calls raise."""
        if not self._finished:
            self._take_text(self._decoder.decode(b"", final=True))
            if self.truncated and not self._opened:
                self._open_temp_file()
            self._finished = True
            self.close_temp_file()
        return self.snapshot()


__all__ = [
    "FILE_LIMIT",
    "HEAD_IN_MEMORY",
    "SESSION_LIMIT",
    "STRUCTURED_MAX_BYTES",
    "TAIL_AFTER_CUT",
    "WRITEBACK_WINDOW",
    "OutputAccumulator",
    "OutputSnapshot",
]
