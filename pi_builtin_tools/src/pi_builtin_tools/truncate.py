"""Truncation of tool output: head (read), tail (bash), single lines (grep). Seed §十六, spec §4.

Two independent limits, whichever is hit first wins: ``max_lines`` (default 2000) and
``max_bytes`` (UTF-8 bytes, default 51200 = 50KB). Lines are counted the modern way (port
decision 5, spec §4.1): ``content.split("\\n")`` without the empty element after a final newline,
so ``"a\\nb\\n"`` has 2 lines and ``""`` has 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

DEFAULT_MAX_LINES = 2000
"""Line limit of read and bash output."""
DEFAULT_MAX_BYTES = 51200
"""Byte limit (UTF-8) of read and bash output: 50KB."""
GREP_MAX_LINE_LENGTH = 500
"""Characters a grep match line keeps before ``... [truncated]``."""

TruncatedBy = Literal["lines", "bytes"]


def format_size(n: int) -> str:
    """Human-readable size as Pi writes it (spec §0).

    ``n < 1024`` → ``"{n}B"``; below 1 MiB one decimal of KB; else one decimal of MB. Rounding is
    JavaScript's ``toFixed(1)``: half up on the exact value (1280 → ``"1.3KB"``).
    """
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        value, unit = Decimal(n) / Decimal(1024), "KB"
    else:
        value, unit = Decimal(n) / Decimal(1024 * 1024), "MB"
    return f"{value.quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}{unit}"


@dataclass(frozen=True)
class TruncationResult:
    """What a truncation produced (spec §4; Pi's ``TruncationResult``).

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
    """Lines of ``content`` by the modern rule (spec §4.1): a final ``\\n`` adds no line."""
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
    return TruncationResult(
        content=content,
        truncated=False,
        truncated_by=None,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=total_lines,
        output_bytes=total_bytes,
        last_line_partial=False,
        first_line_exceeds_limit=False,
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
    this to truncate a selection it streamed without holding it (spec §7.1).
    """
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(whole, total_lines, total_bytes, max_lines, max_bytes)
    if first_line_bytes > max_bytes:
        return TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )
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
    content = "\n".join(kept)
    return TruncationResult(
        content=content,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(content),
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first lines of ``content`` (spec §4.2; read's truncation).

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
    """Keep the last lines of ``content`` (spec §4.3; bash's truncation).

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
    out = "\n".join(kept)
    return TruncationResult(
        content=out,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(out),
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut ``line`` to ``max_chars`` code points plus ``"... [truncated]"`` (spec §4.4).

    Returns ``(text, was_truncated)``. Counts code points, not UTF-16 units (port decision 3).
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
