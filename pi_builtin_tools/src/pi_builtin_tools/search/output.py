"""The common tail of ls, find and grep: byte truncation, bracketed notices, details.

As Pi does for ls, find and grep: the result lines are joined by ``\\n`` and cut to 50KB
by whole lines (:func:`~pi_builtin_tools.files.truncate.truncate_head` with no line limit); the
notices, in the order given, are appended as ``"\\n\\n[" + ". ".join(notices) + "]"``;
``details`` is ``None`` (absent) when there is nothing to report.
"""

from __future__ import annotations

from typing import Any

from pi_builtin_tools.files.truncate import (
    DEFAULT_MAX_BYTES,
    TruncationResult,
    format_size,
    head_from_lines,
    truncate_head,
    utf8_len,
)
from pi_core import AgentToolResult, TextContent

NO_LINE_LIMIT = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: Pi's "no line limit" (it shows in
``details.truncation.maxLines``)."""


def finish_listing(
    lines: list[str],
    *,
    limit_notice: str | None = None,
    limit_details: dict[str, Any] | None = None,
    trailing_notice: str | None = None,
    trailing_details: dict[str, Any] | None = None,
) -> AgentToolResult:
    """Join ``lines``, truncate to 50KB and append the notices in Pi's order: the count-limit
    notice, ``50.0KB limit reached`` when cut, then ``trailing_notice`` (grep's long lines).
    ``details`` gets ``limit_details``, ``truncation`` and ``trailing_details`` likewise.
    """
    truncation = truncate_head("\n".join(lines), max_lines=NO_LINE_LIMIT)
    return _with_notices(
        truncation,
        limit_notice=limit_notice,
        limit_details=limit_details,
        trailing_notice=trailing_notice,
        trailing_details=trailing_details,
    )


def _with_notices(
    truncation: TruncationResult,
    *,
    limit_notice: str | None,
    limit_details: dict[str, Any] | None,
    trailing_notice: str | None,
    trailing_details: dict[str, Any] | None,
) -> AgentToolResult:
    """The result of :func:`finish_listing` for the truncated text ``truncation``."""
    output = truncation.content
    notices: list[str] = []
    details: dict[str, Any] = {}
    if limit_notice is not None:
        notices.append(limit_notice)
        details.update(limit_details or {})
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_details()
    if trailing_notice is not None:
        notices.append(trailing_notice)
        details.update(trailing_details or {})
    if notices:
        output += "\n\n[" + ". ".join(notices) + "]"
    return AgentToolResult(content=[TextContent(text=output)], details=details or None)


class BoundedListing:
    """Result lines added one at a time, holding only what the 50KB cut can keep:
    :meth:`finish` gives what :func:`finish_listing` gives for all the lines added, while past
    the first :data:`~pi_builtin_tools.files.truncate.DEFAULT_MAX_BYTES` bytes only counts (lines,
    UTF-8 bytes) grow. A line holding ``\\n`` counts as the lines it joins.
    """

    def __init__(self) -> None:
        self.kept: list[str] = []
        """The first lines (split at ``\\n``), up to and including the one past the byte limit."""
        self.lines = 0
        """Lines (split at ``\\n``) added."""
        self.bytes = 0
        """UTF-8 size of the added lines joined by ``\\n``."""
        self.first_line_bytes = 0
        self.last_empty = False
        """The last line added (split at ``\\n``) is empty: the joined text ends with ``\\n``."""

    def add(self, line: str) -> None:
        """Add ``line`` after the lines added so far."""
        for part in line.split("\n") if "\n" in line else (line,):
            size = utf8_len(part)
            if self.lines == 0:
                self.first_line_bytes = size
            else:
                size += 1
            if self.bytes <= DEFAULT_MAX_BYTES:
                self.kept.append(part)
            self.bytes += size
            self.lines += 1
            self.last_empty = not part

    def snapshot(self) -> tuple[int, int, int, int, bool]:
        """The state to go back to with :meth:`restore`."""
        return (len(self.kept), self.lines, self.bytes, self.first_line_bytes, self.last_empty)

    def restore(self, state: tuple[int, int, int, int, bool]) -> None:
        """Forget the lines added since :meth:`snapshot` gave ``state``."""
        kept, self.lines, self.bytes, self.first_line_bytes, self.last_empty = state
        del self.kept[kept:]

    def finish(
        self,
        *,
        limit_notice: str | None = None,
        limit_details: dict[str, Any] | None = None,
        trailing_notice: str | None = None,
        trailing_details: dict[str, Any] | None = None,
    ) -> AgentToolResult:
        """:func:`finish_listing` of the lines added."""
        notices: dict[str, Any] = {
            "limit_notice": limit_notice,
            "limit_details": limit_details,
            "trailing_notice": trailing_notice,
            "trailing_details": trailing_details,
        }
        if len(self.kept) == self.lines:  # nothing was dropped
            return finish_listing(self.kept, **notices)
        # The kept lines are the whole lines of a prefix over the byte limit: the line after
        # them cannot fit. A final "\n" adds no line (split_lines).
        truncation = head_from_lines(
            self.kept,
            whole="",
            total_lines=self.lines - (1 if self.last_empty else 0),
            total_bytes=self.bytes,
            first_line_bytes=self.first_line_bytes,
            max_lines=NO_LINE_LIMIT,
            more=True,
        )
        return _with_notices(truncation, **notices)


__all__ = ["NO_LINE_LIMIT", "BoundedListing", "finish_listing"]
