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
:class:`FullOutputFiles`, which removes them when the session ends (unless kept).

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

STRUCTURED_MAX_BYTES = 1024 * 1024
"""UTF-8 budget of the program-facing output (``structuredContent.output``): 1 MiB (seed, last
section)."""

DECODE_SLICE = 64 * 1024
"""Bytes of a chunk with invalid UTF-8 decoded at a time."""

WRITEBACK_WINDOW = 8 * 1024 * 1024
"""The drop-behind step of the full-output file (module docstring): 8 MiB."""


@dataclass(frozen=True)
class OutputSnapshot:
    """The output so far as the model sees it.

    ``content`` is the tail-truncated text; ``truncation`` its :class:`TruncationResult` with the
    totals of the whole output (``truncated`` is true when the whole output passes a limit);
    ``full_output_path`` is the temporary file holding the complete raw output, or ``None``.
    ``last_line_bytes`` is the UTF-8 size of the last line (for the partial-line notice).
    """

    content: str
    truncation: TruncationResult
    full_output_path: str | None
    last_line_bytes: int


class OutputAccumulator:
    """Accumulates streamed output; see the module docstring.

    ``transform(text) -> text`` (optional) is applied to the decoded tail before it is truncated
    for a snapshot (bash strips ANSI escape sequences with it);
    the temporary file always gets the raw bytes.
    """

    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_file_prefix: str = "pi-output",
        transform: Callable[[str], str] | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.temp_file_prefix = temp_file_prefix
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
        self._newlines += data.count(b"\n")  # a "\n" byte is never inside a character
        self._take_raw(data)
        if self._fd is not None:
            self._write(data)  # one write per chunk: up to 1 MiB (the bash tool's reads)
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
        path = os.path.join(
            tempfile.gettempdir(), f"{self.temp_file_prefix}-{secrets.token_hex(8)}.log"
        )
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._path = path
        pending, self._pending_raw = self._pending_raw or [], None
        for chunk in pending:
            self._write(chunk)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            return
        written = os.write(self._fd, data)
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(self._fd, view) :]
        self._file_bytes += len(data)
        if self._drop_behind and self._file_bytes - self._advised >= WRITEBACK_WINDOW:
            self._drop_behind_step(self._fd)

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
        if persist_if_truncated and truncated and self._path is None and not self._finished:
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
        )

    def read_full_output(self, max_bytes: int = STRUCTURED_MAX_BYTES) -> tuple[str, bool]:
        """``(text, truncated)``: the complete raw output decoded as UTF-8, for programmatic
        callers (bash's ``structured_content.output``; Pi's ``readFullOutput``). Call after
        :meth:`finish`. Output longer than ``max_bytes`` raw bytes keeps its first and last
        ``max_bytes / 2`` bytes (the head cut back to a character boundary, the tail's leading
        continuation bytes skipped) around ``\n\n[... N bytes omitted ...]\n\n``; only then is
        ``truncated`` true. Reads at most ``max_bytes`` from the temporary file."""
        if self._path is None:
            data = b"".join(self._pending_raw or [])
            return data.decode("utf-8", "replace"), False
        with open(self._path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size <= max_bytes:
                return file.read().decode("utf-8", "replace"), False
            head_bytes = max_bytes // 2
            tail_bytes = max_bytes - head_bytes
            head = file.read(head_bytes)
            file.seek(size - tail_bytes)
            tail = file.read(tail_bytes)
        head_text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=False)
        start = 0
        while start < len(tail) and (tail[start] & 0xC0) == 0x80:
            start += 1
        tail_text = tail[start:].decode("utf-8", "replace")
        omitted = size - head_bytes - tail_bytes
        return f"{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail_text}", True

    def finish(self) -> OutputSnapshot:
        """Flush the decoder (an incomplete character at the end becomes U+FFFD), persist the
        complete output if truncated, close the temporary file and return the final snapshot.
        Later :meth:`append` calls raise."""
        if not self._finished:
            self._take_text(self._decoder.decode(b"", final=True))
            if self.truncated and self._path is None:
                self._open_temp_file()
            self._finished = True
            self.close_temp_file()
        return self.snapshot()


class FullOutputFiles:
    """The full-output files one session's bash tool created: removed when the session ends
    (:meth:`remove_all`, called from ``pi_session_end``) unless ``keep`` (``[tools.bash]
    keep_full_output = true``). Pi leaves every file in the temporary directory; a session that
    is never ended (a tool built without a session) leaves them too."""

    def __init__(self, *, keep: bool = False) -> None:
        self.keep = keep
        self._paths: list[str] = []

    @property
    def paths(self) -> list[str]:
        """The files recorded so far (and not yet removed), oldest first."""
        return list(self._paths)

    def add(self, path: str) -> None:
        """Record ``path`` (a file the tool created)."""
        self._paths.append(path)

    def remove_all(self) -> None:
        """Delete every recorded file, unless :attr:`keep`; a file already gone is skipped."""
        if self.keep:
            return
        paths, self._paths = self._paths, []
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


__all__ = [
    "STRUCTURED_MAX_BYTES",
    "WRITEBACK_WINDOW",
    "FullOutputFiles",
    "OutputAccumulator",
    "OutputSnapshot",
]
