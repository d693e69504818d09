"""The common tail of ls, find and grep: byte truncation, bracketed notices, details.

As Pi does for ls, find and grep: the result lines are joined by ``\\n`` and cut to 50KB
by whole lines (:func:`~pi_builtin_tools.truncate.truncate_head` with no line limit); the
notices, in the order given, are appended as ``"\\n\\n[" + ". ".join(notices) + "]"``;
``details`` is ``None`` (absent) when there is nothing to report.
"""

from __future__ import annotations

from typing import Any

from pi_builtin_tools.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head
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


__all__ = ["NO_LINE_LIMIT", "finish_listing"]
