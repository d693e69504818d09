"""Truncation of tool output: head (read), tail (bash), single lines (grep).

Two independent limits, whichever is hit first wins: ``max_lines`` (default 2000) and
``max_bytes`` (UTF-8 bytes, default 51200 = 50KB). Lines are counted the modern way
(``docs/explanation/differences.md``): ``content.split("\\n")`` without the empty element
after a final newline, so ``"a\\nb\\n"`` has 2 lines and ``""`` has 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pi_core import format_size

DEFAULT_MAX_LINES = 2000
"""Line limit of read and bash output."""
DEFAULT_MAX_BYTES = 51200
"""Byte limit (UTF-8) of read and bash output: 50KB."""
GREP_MAX_LINE_LENGTH = 500
"""Characters a grep match line keeps before ``... [truncated]``."""

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True)
class TruncationResult:
    """What a truncation produced (Pi's ``TruncationResult``).

    ``content`` is the kept text; ``truncated_by`` is ``"lines"``, ``"bytes"`` or ``None`` when
    nothing was cut; totals describe the input, ``output_*`` the kept text (bytes are UTF-8).
    ``last_line_partial``: tail truncation kept only the end of one over-long line.
    ``first_line_exceeds_limit``: head truncation found the first line alone over ``max_bytes``.
    """

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_details(self) -> dict[str, Any]:
        """The camelCase dict Pi puts in ``details.truncation``."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def utf8_len(text: str) -> int:
    """UTF-8 size of ``text`` in bytes (lone surrogates count as U+FFFD, 3 bytes)."""
    return len(text.encode("utf-8", "replace")) if text else 0


def split_lines(content: str) -> list[str]:
    """Lines of ``content`` by the modern rule: a final ``\\n`` adds no line."""
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def _untruncated(
    content: str, total_lines: int, total_bytes: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    """The result for content within both limits: returned whole, nothing cut."""
    return _cut(
        content, None, total_lines, total_bytes, max_lines, max_bytes, output_lines=total_lines
    )


def _cut(
    kept: list[str] | str,
    truncated_by: TruncatedBy | None,
    total_lines: int,
    total_bytes: int,
    max_lines: int,
    max_bytes: int,
    *,
    output_lines: int | None = None,
    partial: bool = False,
    first_line: bool = False,
) -> TruncationResult:
    """The result of a cut: the ``kept`` lines joined by ``\\n`` (or ``kept`` itself, a whole
    content of ``output_lines`` lines, when nothing was cut: ``truncated_by`` ``None``);
    ``partial`` when the one kept line is a suffix of a longer one, ``first_line`` when the first
    line alone is over ``max_bytes``."""
    content = kept if isinstance(kept, str) else "\n".join(kept)
    return TruncationResult(
        content=content,
        truncated=truncated_by is not None,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept) if output_lines is None else output_lines,
        output_bytes=total_bytes if truncated_by is None else utf8_len(content),
        last_line_partial=partial,
        first_line_exceeds_limit=first_line,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def head_from_lines(
    lines: Sequence[str],
    *,
    whole: str,
    total_lines: int,
    total_bytes: int,
    first_line_bytes: int,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    more: bool = False,
) -> TruncationResult:
    """Head truncation from already-split lines (the core of :func:`truncate_head`).

    ``lines`` is a prefix of the content's lines: all of them, or (``more=True``) the complete
    lines of a prefix at least ``max_bytes + 1`` bytes long, so the line after them cannot fit.
    ``whole`` is the content returned when nothing needs cutting (only read then). ``read`` uses
    this to truncate a selection it streamed without holding it.
    """
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(whole, total_lines, total_bytes, max_lines, max_bytes)
    if first_line_bytes > max_bytes:
        return _cut([], "bytes", total_lines, total_bytes, max_lines, max_bytes, first_line=True)
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    for i, line in enumerate(lines):
        if i >= max_lines:
            break
        cost = utf8_len(line) + (1 if i > 0 else 0)
        if used + cost > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += cost
    else:
        if more and len(kept) < max_lines:
            truncated_by = "bytes"
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    return _cut(kept, truncated_by, total_lines, total_bytes, max_lines, max_bytes)


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first lines of ``content`` (read's truncation).

    Unchanged (trailing newline kept) when within both limits. Never returns half a line: when
    the first line alone is over ``max_bytes`` the content is ``""`` with
    ``first_line_exceeds_limit``. Kept lines are joined by ``\\n`` without a final newline.
    """
    lines = split_lines(content)
    return head_from_lines(
        lines,
        whole=content,
        total_lines=len(lines),
        total_bytes=utf8_len(content),
        first_line_bytes=utf8_len(lines[0]) if lines else 0,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _utf8_suffix(line: str, max_bytes: int) -> str:
    """The longest suffix of ``line`` (whole code points) whose UTF-8 size is ≤ ``max_bytes``."""
    if max_bytes <= 0:
        return ""
    data = line.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return data.decode("utf-8")
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8")


def truncate_tail(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last lines of ``content`` (bash's truncation).

    When not even the last line fits, its longest UTF-8 suffix under ``max_bytes`` is kept
    (``last_line_partial``, one output line). Kept lines are joined by ``\\n``.
    """
    lines = split_lines(content)
    total_lines = len(lines)
    total_bytes = utf8_len(content)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    truncated_by: TruncatedBy = "lines"
    last_line_partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        cost = utf8_len(line) + (1 if kept else 0)
        if used + cost > max_bytes:
            truncated_by = "bytes"
            if not kept:
                part = _utf8_suffix(line, max_bytes)
                kept.append(part)
                used = utf8_len(part)
                last_line_partial = True
            break
        kept.append(line)
        used += cost
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    return _cut(
        kept,
        truncated_by,
        total_lines,
        total_bytes,
        max_lines,
        max_bytes,
        partial=last_line_partial,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut ``line`` to ``max_chars`` code points plus ``"... [truncated]"``.

    Returns ``(text, was_truncated)``. Counts code points, not UTF-16 units
    (``docs/explanation/differences.md``).
    """
    if len(line) <= max_chars:
        return line, False
    return line[:max_chars] + "... [truncated]", True


__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "TruncationResult",
    "format_size",
    "head_from_lines",
    "split_lines",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "utf8_len",
]
