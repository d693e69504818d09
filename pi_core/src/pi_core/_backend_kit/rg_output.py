"""Reading ripgrep's plain match lines: ``rg --null --line-number --with-filename --no-heading``.

Each match is a record ``PATH\\0LINE:TEXT\\n``: the path ends at the NUL (it may hold a newline),
the text never holds a newline. ripgrep also writes lines of its own among them, such as
``PATH: WARNING: stopped searching binary file after match (found "\\0" byte around offset N)``
or ``binary file matches (...)``; :func:`iter_rg_records` reports those as records without a
path, so a filter can keep or drop every byte and the grep tool can skip them.

The grep tool reads this format rather than ``--json`` because ripgrep's JSON ignores
``--max-columns``: with it, a line of hundreds of megabytes costs no more than its first
columns (``docs/reference/tools.md``, "Memory bounds").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_NOTICE = re.compile(rb"(?:.*: )?(?:WARNING: stopped searching binary file|binary file matches)")


@dataclass(frozen=True)
class RgRecord:
    """One record of the output: ``stdout[start:end]`` (its newline included).

    ``path``, ``line_number`` and ``text`` (without the newline) are set for a match; all three
    are ``None`` for a line of ripgrep's own (a binary-file notice)."""

    start: int
    end: int
    path: bytes | None = None
    line_number: int | None = None
    text: bytes | None = None


def iter_rg_records(stdout: bytes, start: int = 0) -> Iterator[RgRecord]:
    """Every record of ``stdout`` from offset ``start`` (a record's start) in order; the records
    cover ``stdout[start:]`` without gaps."""
    position = start
    size = len(stdout)
    while position < size:
        line_end = stdout.find(b"\n", position)
        line_end = size if line_end < 0 else line_end
        nul = stdout.find(b"\0", position)
        newline_in_path = 0 <= line_end < nul
        if nul >= 0 and not (newline_in_path and _NOTICE.match(stdout, position, line_end)):
            colon = stdout.find(b":", nul + 1, nul + 24)
            number = stdout[nul + 1 : colon] if colon >= 0 else b""
            if number.isdigit():
                text_end = stdout.find(b"\n", colon)
                text_end = size if text_end < 0 else text_end
                yield RgRecord(
                    position,
                    min(size, text_end + 1),
                    stdout[position:nul],
                    int(number),
                    stdout[colon + 1 : text_end],
                )
                position = text_end + 1
                continue
        yield RgRecord(position, min(size, line_end + 1))
        position = line_end + 1


__all__ = ["RgRecord", "iter_rg_records"]
