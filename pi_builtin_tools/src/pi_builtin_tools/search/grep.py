"""The ``grep`` tool: search file contents with ripgrep (``docs/reference/tools.md``).

ripgrep runs where the files are (``FileOperations.run_rg``), much as Pi runs it:
``rg --line-number --with-filename --null --color=never --hidden --max-columns=4096
--max-columns-preview [--ignore-case] [--fixed-strings] [--glob G] -- PATTERN PATH``. The
pattern always follows ``--``, so a flag-like pattern (``--pre=cmd``) is searched as text and
never read as an option.

Pi asks for ``--json``; we read ripgrep's plain ``PATH\\0LINE:TEXT`` lines instead, because
ripgrep's JSON ignores ``--max-columns`` and writes every line whole, with one JSON object per
match in it: a 300 MB line of ``aaa`` grows to gigabytes of JSON. With ``--max-columns`` a line
over :data:`RG_MAX_COLUMNS` bytes arrives as its first 4,096 characters, which holds the 500
characters the model sees, so the text is the same. Memory stays bounded: each line costs at
most ~4 KiB, context lines are read from the file in chunks (:func:`_context_lines`), the
backend bounds ripgrep's whole output, and whatever ``limit`` and ``context`` are, the matches
are made one at a time and the result lines past 50KB are counted, not kept
(:class:`~pi_builtin_tools.search_output.BoundedListing`). A single file searched by name is searched with
``--text``, as ripgrep's JSON output does (it prints the matching lines of a binary file); a
device or FIFO is refused, since ripgrep would read it forever. Hidden files are searched;
``.gitignore`` is honoured as ripgrep does (inside git repositories; a ``--glob`` overrides it).

Output lines are ``{file}:{n}: {text}`` (context lines ``{file}-{n}- {text}``), each text cut to
500 characters with ``... [truncated]``; only the line terminator is stripped (a lone ``\\r``
inside a line is kept). The windows of one file's matches merge as in ``rg --context`` (no line
twice; a shown match inside another's window is a match line). At most ``limit`` matches
(default 100; floored, at least 1), then 50KB; ``context`` is floored, at most 1000
(:func:`~pi_builtin_tools.tool_args.integer_arg`). The ``{L} matches limit reached`` notice
appears only when one more match proves the cut (ripgrep runs with ``--max-count`` limit + 1);
that match is shown, as a context line, when it lies in the last match's trailing context.

Deterministic order (Pi's follows ripgrep's parallel walk): files in the order of
``rg --sort=path`` (:func:`path_order`), lines ascending. ``--sort=path`` would make ripgrep walk
on one thread, so ripgrep runs in parallel and the matches are sorted here; ``--max-count``
bounds each file's matches by the limit, which never changes the first ``limit`` matches. When
the backend cut ripgrep's output at its bound (``CommandOutput.truncated``: which part is kept
depends on the walk), or the search failed (ripgrep's error text lists files in walk order),
ripgrep runs again with ``--sort=path``, and that run gives the result.

A large file (over :data:`WINDOWED_MIN_BYTES`) searched by name for fixed text (``literal``, or a
pattern of letters, digits, spaces and punctuation that is never regex syntax; no ``glob``) is
searched *windowed* when the backend can feed ripgrep (``run_rg_fed``): pi reads the file in
blocks and writes it to ripgrep's stdin, each line over :data:`WINDOW_BYTES` cut into
overlapping pieces, so neither process holds a long line (:func:`_windowed_matches`). The result
is the one ripgrep's search of the file gives, byte for byte; whenever that is not certain (a
NUL byte, a byte order mark, output that could pass the backend's bound) the normal search runs.

ripgrep's own error text is passed on as it is (trimmed), as Pi does: a bad regex reads as the
ripgrep that runs words it (``regex parse error:\\n    (\\n    ^\\nerror: unclosed group`` from
ripgrep 13; ripgrep 14 prefixes ``rg: `` and echoes the pattern as ``(?:(``). Like Pi, pi runs
the ``rg`` on ``PATH``, else the one of the ``ripgrep`` wheel
(:func:`~pi_core.backends.find_rg`); a remote backend runs the one where the files are.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import posixpath
import re
import sys
from array import array
from collections.abc import AsyncGenerator, Container, Iterable, Iterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from pi_builtin_tools.fs_errors import (
    check_no_nul,
    check_process_text,
    not_regular_file_error,
    show_path,
)
from pi_builtin_tools.search_output import BoundedListing
from pi_builtin_tools.tool_args import integer_arg
from pi_builtin_tools.truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line
from pi_core import (
    AgentToolResult,
    FileOperations,
    OnUpdate,
    PathArgument,
    TextContent,
    ToolDefinition,
    ToolError,
    js_number_to_string,
)
from pi_core.backends import (
    CommandOutput,
    RgRecord,
    iter_rg_records,
    resolve_existing_path,
)

DEFAULT_GREP_LIMIT = 100
MAX_GREP_CONTEXT = 1000
"""Most context lines around a match (each match prints its own context)."""

RG_MAX_COLUMNS = 4096
"""Longest line, in bytes, ripgrep prints whole (``--max-columns``); a longer one arrives as its
first 4,096 characters and ``[... omitted end of long line]``. The model sees at most
:data:`~pi_builtin_tools.truncate.GREP_MAX_LINE_LENGTH` (500) characters of a line either way."""

CONTEXT_CHUNK_BYTES = 1024 * 1024
"""Size of the ranges context lines are read in."""

WINDOWED_MIN_BYTES = 32 * 1024 * 1024
"""Files larger than this may be searched windowed (:func:`_windowed_matches`)."""

WINDOW_BYTES = 1024 * 1024
"""Longest line the windowed search gives ripgrep whole; a longer line goes as pieces of this
many bytes."""

WINDOW_READ_BYTES = 1024 * 1024
"""Size of the blocks the windowed search reads the file in."""

GREP_DESCRIPTION = (
    "Search file contents for a pattern. Returns matching lines with file paths and line "
    f"numbers. Respects .gitignore. Output is truncated to {DEFAULT_GREP_LIMIT} matches or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Long lines are truncated to "
    f"{GREP_MAX_LINE_LENGTH} chars."
)

GREP_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {
            "type": "string",
            "description": "Directory or file to search (default: current directory)",
        },
        "glob": {
            "type": "string",
            "description": (
                "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', "
                "e.g. '*.ts', it matches file names at any depth"
            ),
        },
        "ignoreCase": {
            "type": "boolean",
            "description": "Case-insensitive search (default: false)",
        },
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {
            "type": "number",
            "description": f"Maximum number of matches to return (default: {DEFAULT_GREP_LIMIT})",
        },
    },
}

LINES_TRUNCATED_NOTICE = (
    f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
)


@dataclass(frozen=True)
class _Match:
    path: str
    """Path for I/O (undecodable bytes kept as surrogate escapes)."""
    line_number: int
    line_text: str


def path_order(path: bytes) -> list[bytes]:
    """The sort key of ``rg --sort=path``: ripgrep sorts the entries of each directory by name
    (their bytes) and walks depth first, so paths order by their ``/``-separated components
    (``a/x`` before ``a b/q`` before ``a.txt``), not by their whole bytes."""
    return path.split(b"/")


_FILE_RUN = re.compile(rb"([^\0\n]*)\0[^\n]*\n(?:\1\0[^\n]*\n)*")
"""A run of records of one file: ``PATH\\0...\\n`` lines that start with the same path."""


def _file_blocks(stdout: bytes) -> list[tuple[list[bytes], bytes, int, int]]:
    """ripgrep's output cut into files: ``(path_order(path), path, start, end)`` of each run of
    consecutive records of one file, in output order.

    One regex match (:data:`_FILE_RUN`) per file when the output is only records whose paths
    hold no newline; otherwise (a name with a newline, ripgrep's binary-file notices) the
    records are read one by one (ripgrep's own lines skipped)."""
    blocks: list[tuple[list[bytes], bytes, int, int]] = []
    position, size = 0, len(stdout)
    for run in _FILE_RUN.finditer(stdout):
        if run.start() != position:
            break
        blocks.append((path_order(run[1]), run[1], position, run.end()))
        position = run.end()
    if position == size:
        return blocks
    blocks, position = [], 0
    while position < size:
        record = next(iter_rg_records(stdout, position))
        if record.path is None:
            position = record.end
            continue
        prefix = record.path + b"\0"
        end = record.end
        while stdout.startswith(prefix, end):  # the next record names the same file
            line_end = stdout.find(b"\n", end + len(prefix))
            end = size if line_end < 0 else line_end + 1
        blocks.append((path_order(record.path), record.path, position, end))
        position = end
    return blocks


def _matches_of(records: Iterable[RgRecord], count: int) -> Iterator[_Match]:
    """The first ``count`` matches of ``records`` (ripgrep's binary-file notices skipped),
    made one at a time."""
    for record in records:
        if count <= 0:
            break
        if record.path is None or record.line_number is None or record.text is None:
            continue
        count -= 1
        yield _Match(
            record.path.decode("utf-8", "surrogateescape"),
            record.line_number,
            record.text.decode("utf-8", "surrogateescape"),
        )


def _first_matches(stdout: bytes, count: int, *, in_path_order: bool) -> Iterator[_Match]:
    """The first ``count`` matches of ripgrep's ``PATH\\0LINE:TEXT\\n`` records
    (:func:`~pi_core.backends.iter_rg_records`) in the order of ``rg --sort=path``: files by
    :func:`path_order`, lines ascending.

    ``in_path_order``: ripgrep wrote them so (``--sort=path``, or a single file), and only the
    first ``count`` are parsed. Otherwise they come in the order of ripgrep's parallel walk,
    which writes each file's lines together and in order: the files' runs are sorted
    (:func:`_file_blocks`) and read in that order until ``count`` matches. Should one file's
    records not be together, every record is sorted, a heap keeping ``count`` of them.

    The matches are made as they are read, so a caller that does not keep them holds none."""
    if in_path_order:
        return _matches_of(iter_rg_records(stdout), count)
    blocks = _file_blocks(stdout)
    if len({block[1] for block in blocks}) == len(blocks):
        blocks.sort(key=lambda block: block[0])
        records = itertools.chain.from_iterable(
            iter_rg_records(stdout[start:end]) for _, _, start, end in blocks
        )
        return _matches_of(records, count)

    def keyed() -> Iterator[tuple[list[bytes], int, int, RgRecord]]:
        for index, record in enumerate(iter_rg_records(stdout)):
            if record.path is not None and record.line_number is not None:
                yield path_order(record.path), record.line_number, index, record

    return _matches_of((item[3] for item in heapq.nsmallest(count, keyed())), count)


def _reaches(matches: Iterable[_Match], count: int) -> bool:
    """Whether ``matches`` has ``count`` items (counted, not kept)."""
    return sum(1 for _ in itertools.islice(matches, count)) >= count


_LINE_END = re.compile(rb"\n")


class _Windows:
    """The line numbers within ``context`` lines of the ascending ``numbers``: merged ranges,
    two integers each."""

    def __init__(self, numbers: Iterable[int], context: int) -> None:
        self.starts = array("q")
        self.ends = array("q")
        for number in numbers:
            start, end = max(1, number - context), number + context
            if self.ends and start <= self.ends[-1] + 1:
                self.ends[-1] = max(self.ends[-1], end)
            else:
                self.starts.append(start)
                self.ends.append(end)

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, int):
            return False
        index = bisect.bisect_right(self.starts, number) - 1
        return index >= 0 and number <= self.ends[index]

    def last(self) -> int:
        """The last line number of the windows (0 when there are none)."""
        return self.ends[-1] if self.ends else 0


async def _context_lines(
    operations: FileOperations, path: str, wanted: Container[int], last_wanted: int
) -> AsyncGenerator[tuple[int, str], None]:
    """The lines of the file at ``path`` numbered in ``wanted`` (up to ``last_wanted``) that
    the file has, ascending, as ``(number, text)`` (split at ``\\n`` as ripgrep splits them,
    so a ``\\r`` stays in its line; undecodable bytes as U+FFFD), each cut to its first
    :data:`RG_MAX_COLUMNS` bytes; a final newline starts no further line.

    The file is read in :data:`CONTEXT_CHUNK_BYTES` ranges and reading stops after the last
    wanted line, and each line is given as it is read, so a huge file or a huge line costs no
    more memory than one chunk.
    """
    line_number = 1
    current = bytearray()
    keep = line_number in wanted
    started = False  # the current line has bytes
    offset = 0
    carry = b""
    while line_number <= last_wanted:
        chunk = await operations.read_bytes(path, offset, CONTEXT_CHUNK_BYTES)
        offset += len(chunk)
        data = carry + chunk
        carry = b""
        if chunk and data.endswith(b"\r"):
            carry, data = b"\r", data[:-1]
        position = 0
        for end in _LINE_END.finditer(data):
            if keep:
                current += data[position : end.start()][: RG_MAX_COLUMNS - len(current)]
                yield line_number, current.decode("utf-8", "replace")
                current.clear()
            line_number += 1
            keep = line_number in wanted
            started = False
            position = end.end()
            if line_number > last_wanted:
                break
        else:
            started = started or position < len(data)
            if keep:
                current += data[position:][: RG_MAX_COLUMNS - len(current)]
        if not chunk:
            if started and keep:  # not after a final newline (or in an empty file)
                yield line_number, current.decode("utf-8", "replace")
            break


_SAFE_PUNCTUATION = frozenset(" _-,;:!@%='\"/<>")
"""ASCII punctuation that is a literal in ripgrep's regex syntax wherever it stands."""

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
"""Byte order marks ripgrep decodes a file by (UTF-8, UTF-16 LE/BE)."""

_ASCII_AFTER_ASCII = re.compile(rb"(?<=[\x00-\x7f])[\x00-\x09\x0b-\x7f]")
"""An ASCII byte (not a newline) after an ASCII byte: a grapheme cluster starts there (UAX #29:
besides CR LF, only a Prepend, ZWJ, regional indicator or Hangul character before, or an Extend,
SpacingMark or ZWJ character after, joins two characters into one cluster; none is ASCII)."""


class _NotWindowed(Exception):
    """The windowed search cannot promise ripgrep's result (a NUL byte, a byte order mark)."""


def _literal_reach(pattern: str, *, literal: bool, ignore_case: bool) -> int | None:
    """Most bytes a match of ``pattern`` can span, when ripgrep can only match it as fixed
    text: ``literal`` (``--fixed-strings``), or a regex of letters, digits, spaces and
    :data:`_SAFE_PUNCTUATION` only. ``None`` otherwise (empty, control characters, a character
    that is or may be regex syntax, text that is not valid Unicode).

    The reach is the pattern's UTF-8 length, or with ``ignore_case`` 4 bytes per character:
    ripgrep folds case character by character (simple case folding), so each character of the
    pattern matches one character of at most 4 bytes."""
    if not pattern:
        return None
    for char in pattern:
        if char < " " or char == "\x7f":  # a newline splits the pattern in two
            return None
        if not literal and not (char.isalnum() or char in _SAFE_PUNCTUATION):
            return None
    try:
        size = len(pattern.encode("utf-8"))
    except UnicodeEncodeError:
        return None
    return 4 * len(pattern) if ignore_case else size


class _Cutter:
    """The file's bytes as the windowed search gives them to ripgrep: every line of at most
    ``width`` bytes (its newline not counted) as it is, every longer line as pieces of
    ``width`` bytes, each ended with a newline, the next piece starting ``overlap`` bytes
    before the previous one's end (so every match of at most ``overlap`` bytes lies whole in
    a piece).

    ripgrep numbers the pieces as lines (*synthetic* line numbers); :meth:`line_of` maps them
    back. ``cuts`` lists, ascending, the synthetic numbers of pieces that continue a line;
    ``cut_lines`` maps each line that was cut to the byte offset of its start."""

    def __init__(self, width: int, overlap: int) -> None:
        self.width = width
        self.overlap = overlap
        self.piece = 0  # bytes of the current line in the current piece
        self.tail = b""  # the current piece's last `overlap` bytes (or fewer)
        self.line = 1  # the current line's number in the file
        self.line_start = 0  # its offset
        self.synthetic = 1  # the current piece's synthetic line number
        self.offset = 0  # offset of the next block
        self.cuts: list[int] = []
        self.cut_lines: dict[int, int] = {}

    def line_of(self, synthetic: int) -> int:
        """The file's line number of synthetic line ``synthetic``."""
        return synthetic - bisect.bisect_right(self.cuts, synthetic)

    def _keep(self, part: memoryview) -> None:
        self.piece += len(part)
        if len(part) >= self.overlap:
            self.tail = bytes(part[len(part) - self.overlap :])
        else:
            self.tail = (self.tail + bytes(part))[-self.overlap :]

    def feed(self, block: bytes) -> list[memoryview | bytes]:
        """The parts to write for the next ``block`` of the file."""
        out: list[memoryview | bytes] = []
        view = memoryview(block)
        position, size = 0, len(block)
        while position < size:
            room = self.width - self.piece
            end = position + room + 1  # a newline before `end` ends the line in this piece
            newline = block.rfind(b"\n", position, min(end, size))
            if newline >= 0:
                # every line ending in block[position:newline + 1] fits in a piece
                count = block.count(b"\n", position, newline + 1)
                self.line += count
                self.synthetic += count
                self.piece, self.tail = 0, b""
                self.line_start = self.offset + newline + 1
                out.append(view[position : newline + 1])
                position = newline + 1
            elif end > size:  # the line goes on past this block, the piece has room for it
                part = view[position:]
                out.append(part)
                self._keep(part)
                position = size
            else:  # the piece is full and the line goes on: cut
                part = view[position : position + room]
                out.append(part)
                self._keep(part)
                self.cut_lines.setdefault(self.line, self.line_start)
                self.synthetic += 1
                self.cuts.append(self.synthetic)
                out += [b"\n", self.tail]
                self.piece = len(self.tail)
                position += room
        self.offset += size
        return out


class _Records:
    """ripgrep's ``N:TEXT`` lines of the windowed search as they arrive (``consume`` of
    ``run_rg_fed``): the first ``count`` matching lines of the file, as ``(line number, text)``,
    ``text`` ``None`` for a line that was cut (its pieces' texts are not the line's).

    Stops (``over``) once the records of the lines found, as ripgrep would write them for the
    file itself (``PATH\0N:TEXT\n``, ``path_size`` bytes of path; a cut line's text not
    counted), pass ``output_limit``: the normal search's output would be cut, and the texts
    held here stay under that bound."""

    def __init__(self, cutter: _Cutter, count: int, path_size: int, output_limit: int) -> None:
        self.cutter = cutter
        self.count = count
        self.found: list[tuple[int, bytes | None]] = []
        self.pending = bytearray()
        self.malformed = False
        self.path_size = path_size
        self.output_limit = output_limit
        self.output_size = 0
        self.over = False

    def __call__(self, chunk: bytes | bytearray) -> bool:
        self.pending += chunk
        start = 0
        try:
            while (end := self.pending.find(b"\n", start)) >= 0:
                colon = self.pending.find(b":", start, min(end, start + 24))
                number = bytes(self.pending[start:colon]) if colon >= 0 else b""
                if not number.isdigit():
                    self.malformed = True
                    return True
                line = self.cutter.line_of(int(number))
                if not self.found or self.found[-1][0] != line:
                    cut = line in self.cutter.cut_lines
                    text = None if cut else bytes(self.pending[colon + 1 : end])
                    self.found.append((line, text))
                    self.output_size += self.path_size + len(str(line)) + len(text or b"") + 3
                    if self.output_size > self.output_limit:
                        self.over = True
                        return True
                    if len(self.found) >= self.count:
                        return True
                start = end + 1
        finally:
            del self.pending[:start]
        return False


async def _windowed_matches(
    operations: FileOperations,
    path: str,
    pattern: str,
    rg_args: list[str],
    rg_cwd: str,
    reach: int,
    count: int,
) -> list[_Match] | None:
    """The first ``count`` matches of ripgrep's search of the file at ``path`` for the fixed
    text ``pattern`` (matches at most ``reach`` bytes long), found with at most a block of the
    file in pi and a piece of a line in ripgrep; ``None`` when the result might differ from
    ripgrep's on the file itself (the caller then runs that).

    The file goes to ripgrep's stdin in :data:`WINDOW_READ_BYTES` blocks, lines over
    :data:`WINDOW_BYTES` cut by :class:`_Cutter` with an overlap of ``reach``: a line matches
    exactly when one of its pieces does. Pieces of one line count once; ``--max-count`` is not
    given (it would count pieces): ripgrep is stopped at the ``count``-th matching line. The
    text of a cut line is its first :data:`RG_MAX_COLUMNS` bytes read back from the file: the
    line is longer than the 2,000 bytes that can hold 500 characters, so the text shown (500
    characters) is the one ripgrep's preview gives.

    ``None`` also when: the backend cannot feed ripgrep (``run_rg_fed``), the file cannot be
    read, holds a NUL byte or starts with a byte order mark, ripgrep fails, or ripgrep's output
    for those lines on the file itself could exceed the backend's bound (``rg_max_output_bytes``:
    ``run_rg`` would cut it, and the normal search's result with it;
    a cut line's preview is bounded only when its first bytes show 4,097 grapheme clusters)."""
    run_rg_fed = getattr(operations, "run_rg_fed", None)
    output_limit = getattr(operations, "rg_max_output_bytes", None)
    if not callable(run_rg_fed) or not isinstance(output_limit, int):
        return None
    try:
        display_path = path.encode("utf-8", "surrogateescape")  # as ripgrep would print it
    except UnicodeEncodeError:
        return None
    cutter = _Cutter(WINDOW_BYTES, reach)
    records = _Records(cutter, count, len(display_path), output_limit)

    async def chunks() -> AsyncGenerator[memoryview | bytes, None]:
        offset = 0
        while block := await operations.read_bytes(path, offset, WINDOW_READ_BYTES):
            if (offset == 0 and block.startswith(_BOMS)) or b"\0" in block:
                raise _NotWindowed
            offset += len(block)
            for part in cutter.feed(block):
                yield part

    try:
        async with aclosing(chunks()) as feed:
            output: CommandOutput | None = await run_rg_fed(
                [*rg_args, "--", pattern, "-"], rg_cwd, feed, records
            )
    except (_NotWindowed, OSError):
        return None
    if output is None or records.malformed or records.over:
        return None
    if not output.truncated and output.exit_code not in (0, 1):
        return None

    output_bound = 0
    matches: list[_Match] = []
    for line, text in records.found:
        preview_bound: int | None
        if text is None:
            try:
                head = await operations.read_bytes(path, cutter.cut_lines[line], 2 * RG_MAX_COLUMNS)
            except OSError:
                return None
            text = head.split(b"\n", 1)[0]
            if len(text) < len(head) or len(head) < 2 * RG_MAX_COLUMNS:
                preview_bound = len(text)  # the whole line is known
            elif len(_ASCII_AFTER_ASCII.findall(head)) + 1 > RG_MAX_COLUMNS:
                preview_bound = len(head)  # ripgrep's preview ends inside `head`
            else:
                return None
            text = text[:RG_MAX_COLUMNS]
            preview_bound += 40  # " [... N more matches]"
        else:
            preview_bound = len(text)
        output_bound += len(display_path) + len(str(line)) + preview_bound + 3
        matches.append(_Match(path, line, text.decode("utf-8", "surrogateescape")))
    if output_bound > output_limit:
        return None
    return matches


def _display(text: str) -> str:
    """``text`` with undecodable bytes shown as U+FFFD, as Node's UTF-8 decoding does."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


async def _normal_search(
    operations: FileOperations,
    args: list[str],
    pattern: str,
    search_path: str,
    rg_cwd: str,
    count: int,
    is_directory: bool,
) -> tuple[CommandOutput, bool]:
    """ripgrep's search of ``search_path``: its output, and whether its records are in path
    order (:func:`_first_matches` reads the matches from it)."""
    # ripgrep's parallel walk (no --sort): the matches are put in path order here
    output = await operations.run_rg([*args, "--", pattern, search_path], rg_cwd)
    in_path_order = not is_directory
    if output.truncated or (
        output.exit_code not in (0, 1)
        and not _reaches(_first_matches(output.stdout, count, in_path_order=in_path_order), count)
    ):
        # Cut at the backend's output bound, the part kept depends on the walk; an error
        # text lists its files in the walk's order: ask again in path order.
        sorted_args = [*args, "--sort=path", "--", pattern, search_path]
        del output  # up to 32 MiB; not held during the second run
        output = await operations.run_rg(sorted_args, rg_cwd)
        in_path_order = True
    return output, in_path_order


async def grep_files(
    operations: FileOperations,
    cwd: str,
    pattern: str,
    *,
    path: str | None = None,
    glob: str | None = None,
    ignore_case: bool = False,
    literal: bool = False,
    context: float | None = None,
    limit: float | None = None,
) -> AgentToolResult:
    """Run ``grep``: the result, or :class:`ToolError` (``Path not found: {abs}``,
    ripgrep's error text, ``ripgrep exited with code {n}``)."""
    context_lines = (
        integer_arg(
            "context", context, minimum=0, maximum=MAX_GREP_CONTEXT, clamp_low=True, floor=True
        )
        or 0
    )
    effective_limit = (
        DEFAULT_GREP_LIMIT
        if limit is None
        else integer_arg("limit", limit, clamp_low=True, floor=True)
    )
    # No search finds more matches than this: a larger limit (a model's 1e20) searches as this
    # one does, and itertools.islice and ripgrep's --max-count take no more.
    search_limit = min(effective_limit, sys.maxsize - 1)
    check_no_nul(path or "")
    check_process_text("pattern", pattern)
    if glob:
        check_process_text("glob", glob)
    search_path = await resolve_existing_path(path or ".", cwd, operations, for_read=False)
    try:
        info = await operations.stat(search_path)
    except OSError:
        raise ToolError(f"Path not found: {show_path(search_path)}") from None
    kind = info.kind
    if kind == "other":  # /dev/zero or a FIFO: ripgrep would read it forever
        raise not_regular_file_error("search", search_path)
    is_directory = kind == "directory"

    args = ["--line-number", "--with-filename", "--null", "--no-heading", "--color=never"]
    args += ["--hidden", "--no-config", f"--max-columns={RG_MAX_COLUMNS}", "--max-columns-preview"]
    # one match past the limit proves that the limit cut results off
    args.append(f"--max-count={search_limit + 1}")
    if not is_directory:
        args.append("--text")
    if ignore_case:
        args.append("--ignore-case")
    if literal:
        args.append("--fixed-strings")
    if glob:
        # ripgrep never matches a leading "./" ("./src/*.ts" finds nothing): Pi 1.6 drops it,
        # after a "!" too; the glob is rooted at the search directory, ripgrep's cwd
        args.append("--glob=" + re.sub(r"^(!?)(?:\./)+", r"\1", glob))
    rg_cwd = search_path if is_directory else posixpath.dirname(search_path) or "/"

    windowed: list[_Match] | None = None
    reach = _literal_reach(pattern, literal=literal, ignore_case=ignore_case)
    if (
        kind == "file"
        and not glob
        and info.size > WINDOWED_MIN_BYTES
        and reach is not None
        and 2 * reach < WINDOW_BYTES
    ):
        windowed = await _windowed_matches(
            operations,
            search_path,
            pattern,
            [
                "--no-filename" if arg == "--with-filename" else arg
                for arg in args
                if not arg.startswith("--max-count=")
            ],
            rg_cwd,
            reach,
            search_limit + 1,
        )
    try:
        if windowed is not None:
            output = CommandOutput(exit_code=0 if windowed else 1, stdout=b"", stderr=b"")
        else:
            output, in_path_order = await _normal_search(
                operations, args, pattern, search_path, rg_cwd, search_limit + 1, is_directory
            )
    except OSError as error:
        raise ToolError(f"Failed to run ripgrep: {error}") from None

    def all_matches() -> Iterator[_Match]:
        """The first ``limit`` + 1 matches, made one at a time (none is kept here)."""
        if windowed is not None:
            return iter(windowed)
        return _first_matches(output.stdout, search_limit + 1, in_path_order=in_path_order)

    if output.exit_code not in (0, 1) and not _reaches(all_matches(), search_limit + 1):
        stderr = output.stderr.decode("utf-8", "replace").strip()
        raise ToolError(stderr or f"ripgrep exited with code {output.exit_code}")
    remaining = all_matches()
    first = next(remaining, None)
    if first is None:
        return AgentToolResult(content=[TextContent(text="No matches found")])
    # A match past the limit is only proof; inside the last match's trailing context its line is
    # shown, as context.
    matches = itertools.islice(itertools.chain((first,), remaining), search_limit)

    def format_path(file_path: str) -> str:
        if is_directory:
            relative = posixpath.relpath(file_path, search_path)
            if relative not in ("", ".") and not relative.startswith(".."):
                return _display(relative)
        return _display(posixpath.basename(file_path))

    lines_truncated = False
    # Past 50KB only the sizes of the lines are kept; every line is still made, to count.
    out = BoundedListing()

    def emit(label: str, separator: str, number: int, text: str) -> None:
        nonlocal lines_truncated
        cut, was_truncated = truncate_line(text)
        lines_truncated = lines_truncated or was_truncated
        out.add(f"{label}{separator}{number}{separator} {cut}")

    # Only the line terminator is stripped: a lone CR inside a line is content (Pi 1.6).
    if context_lines == 0:
        for match in matches:
            text = _display(match.line_text).removesuffix("\n").removesuffix("\r")
            emit(format_path(match.path), ":", match.line_number, text)
    else:
        # ripgrep's --context layout: the windows of one file's matches merge (no line twice),
        # and a line that is one of the shown matches is a match line.
        # A file's line numbers are kept (8 bytes each), its lines are read as they are shown.
        for file_path, group in itertools.groupby(matches, key=lambda match: match.path):
            numbers = array("q", (match.line_number for match in group))
            if any(a >= b for a, b in itertools.pairwise(numbers)):  # ripgrep gives them ascending
                numbers = array("q", sorted(set(numbers)))
            wanted = _Windows(numbers, context_lines)
            label = format_path(file_path)
            state = (out.snapshot(), lines_truncated)
            try:
                async with aclosing(
                    _context_lines(operations, file_path, wanted, wanted.last())
                ) as lines:
                    async for current, text in lines:
                        index = bisect.bisect_left(numbers, current)
                        is_match = index < len(numbers) and numbers[index] == current
                        emit(label, ":" if is_match else "-", current, text.removesuffix("\r"))
            except OSError:
                out.restore(state[0])
                lines_truncated = state[1]
                for number in numbers:
                    out.add(f"{label}:{number}: (unable to read file)")

    # ``matches`` is used up: one more match proves the cut.
    match_limit_reached = next(remaining, None) is not None
    limit_notice = None
    if match_limit_reached:
        limit_notice = (
            f"{js_number_to_string(effective_limit)} matches limit reached. "
            f"Use limit={js_number_to_string(effective_limit * 2)} for more, or refine pattern"
        )
    return out.finish(
        limit_notice=limit_notice,
        limit_details={"matchLimitReached": effective_limit},
        trailing_notice=LINES_TRUNCATED_NOTICE if lines_truncated else None,
        trailing_details={"linesTruncated": True},
    )


def create_grep_tool_definition(cwd: str, operations: FileOperations) -> ToolDefinition:
    """The ``grep`` tool for a session in ``cwd`` doing its I/O through ``operations``.

    Parameters: ``pattern`` (required), ``path``, ``glob``, ``ignoreCase``, ``literal``,
    ``context``, ``limit``; see :func:`grep_files` and the module docstring.
    """

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
    ) -> AgentToolResult:
        return await grep_files(
            operations,
            cwd,
            params["pattern"],
            path=params.get("path"),
            glob=params.get("glob"),
            ignore_case=bool(params.get("ignoreCase")),
            literal=bool(params.get("literal")),
            context=params.get("context"),
            limit=params.get("limit"),
        )

    return ToolDefinition(
        name="grep",
        label="grep",
        description=GREP_DESCRIPTION,
        parameters=GREP_PARAMETERS,
        execute=execute,
        prompt_snippet="Search file contents for patterns (respects .gitignore)",
        verify="text",
        path_arguments=(PathArgument("path", read=True, default="."),),
        replay="safe",
    )


__all__ = ["DEFAULT_GREP_LIMIT", "create_grep_tool_definition", "grep_files"]
