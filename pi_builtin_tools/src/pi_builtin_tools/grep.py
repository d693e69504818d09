"""The ``grep`` tool: search file contents with ripgrep (seed §十四, spec §7.5).

ripgrep runs where the files are (``FileOperations.run_rg``) as Pi runs it:
``rg --json --line-number --color=never --hidden [--ignore-case] [--fixed-strings] [--glob G]
-- PATTERN PATH``. The pattern always follows ``--``, so a flag-like pattern (``--pre=cmd``) is
searched as text and never read as an option. Hidden files are searched; ``.gitignore`` is
honoured as ripgrep does (inside git repositories; a ``--glob`` overrides it).

Output lines are ``{file}:{n}: {text}`` (context lines ``{file}-{n}- {text}``), each text cut to
500 characters with ``... [truncated]``; at most ``limit`` matches (default 100), then 50KB;
``limit`` must be a positive integer and ``context`` an integer from 0 to 1000
(:func:`~pi_builtin_tools.tool_args.integer_arg`); notices say how to see more.

Deterministic order (Pi's follows ripgrep's parallel walk): files in path order
(``--sort=path``), lines ascending. Since ``run_rg`` returns the whole output rather than a
stream that can be cut at the limit, ``--max-count`` bounds each file's matches by the limit,
which never changes the first ``limit`` matches.

ripgrep's own error texts are passed on as ripgrep 13 (the reference's) words them, whatever
version runs (:mod:`pi_builtin_tools.rg_errors`): ``regex parse error:\\n    (\\n    ^\\nerror:
unclosed group``.
"""

from __future__ import annotations

import base64
import json
import math
import posixpath
from dataclasses import dataclass
from typing import Any

from pi_builtin_tools.fs_errors import check_no_nul, show_path
from pi_builtin_tools.rg_errors import clean_rg_error, stray_close_error
from pi_builtin_tools.search_output import finish_listing
from pi_builtin_tools.tool_args import integer_arg
from pi_builtin_tools.truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line
from pi_core import (
    AgentToolResult,
    FileOperations,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolError,
    js_number_to_string,
)
from pi_core.backends import resolve_existing_path

DEFAULT_GREP_LIMIT = 100
MAX_GREP_CONTEXT = 1000
"""Most context lines around a match (each match prints its own context)."""

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
            "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
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


def _rg_text(value: Any) -> str | None:
    """A ripgrep JSON "arbitrary data" value: ``{"text": ...}`` or ``{"bytes": base64}``."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        return value["text"]
    if isinstance(value.get("bytes"), str):
        return base64.b64decode(value["bytes"]).decode("utf-8", "surrogateescape")
    return None


def _display(text: str) -> str:
    """``text`` with undecodable bytes shown as U+FFFD, as Node's UTF-8 decoding does."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
    """Run ``grep`` (spec §7.5): the result, or :class:`ToolError` (``Path not found: {abs}``,
    ripgrep's error text, ``ripgrep exited with code {n}``)."""
    context_lines = (
        integer_arg("context", context, minimum=0, maximum=MAX_GREP_CONTEXT, clamp_low=True) or 0
    )
    effective_limit = (
        DEFAULT_GREP_LIMIT if limit is None else integer_arg("limit", limit, clamp_low=True)
    )
    check_no_nul(path or "")
    search_path = await resolve_existing_path(path or ".", cwd, operations, for_read=False)
    try:
        is_directory = (await operations.stat(search_path)).kind == "directory"
    except OSError:
        raise ToolError(f"Path not found: {show_path(search_path)}") from None
    stray = None if literal else stray_close_error(pattern)
    if stray is not None:
        raise ToolError(stray)

    args = ["--json", "--line-number", "--color=never", "--hidden", "--no-config"]
    args += ["--sort=path", f"--max-count={math.ceil(effective_limit)}"]
    if ignore_case:
        args.append("--ignore-case")
    if literal:
        args.append("--fixed-strings")
    if glob:
        args.append(f"--glob={glob}")
    args += ["--", pattern, search_path]
    rg_cwd = search_path if is_directory else posixpath.dirname(search_path) or "/"
    try:
        output = await operations.run_rg(args, rg_cwd)
    except OSError as error:
        raise ToolError(f"Failed to run ripgrep: {error}") from None

    matches: list[_Match] = []
    for raw in output.stdout.split(b"\n"):
        if len(matches) >= effective_limit:
            break
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("type") != "match":
            continue
        data = event.get("data") or {}
        file_path = _rg_text(data.get("path"))
        line_number = data.get("line_number")
        if file_path is None or not isinstance(line_number, int):
            continue
        matches.append(_Match(file_path, line_number, _rg_text(data.get("lines")) or ""))

    match_limit_reached = len(matches) >= effective_limit
    if not match_limit_reached and output.exit_code not in (0, 1):
        stderr = clean_rg_error(output.stderr.decode("utf-8", "replace"), pattern)
        raise ToolError(stderr or f"ripgrep exited with code {output.exit_code}")
    if not matches:
        return AgentToolResult(content=[TextContent(text="No matches found")])

    def format_path(file_path: str) -> str:
        if is_directory:
            relative = posixpath.relpath(file_path, search_path)
            if relative not in ("", ".") and not relative.startswith(".."):
                return _display(relative)
        return _display(posixpath.basename(file_path))

    file_cache: dict[str, list[str] | None] = {}

    async def file_lines(file_path: str) -> list[str] | None:
        if file_path not in file_cache:
            try:
                data = await operations.read_bytes(file_path)
            except OSError:
                file_cache[file_path] = None
            else:
                text = data.decode("utf-8", "replace")
                file_cache[file_path] = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return file_cache[file_path]

    lines_truncated = False
    out: list[str] = []

    def emit(label: str, separator: str, number: int, text: str) -> None:
        nonlocal lines_truncated
        cut, was_truncated = truncate_line(text)
        lines_truncated = lines_truncated or was_truncated
        out.append(f"{label}{separator}{number}{separator} {cut}")

    for match in matches:
        label = format_path(match.path)
        if context_lines == 0:
            text = _display(match.line_text).replace("\r\n", "\n").replace("\r", "")
            emit(label, ":", match.line_number, text.removesuffix("\n"))
            continue
        lines = await file_lines(match.path)
        if lines is None:
            out.append(f"{label}:{match.line_number}: (unable to read file)")
            continue
        start = max(1, match.line_number - context_lines)
        end = min(len(lines), match.line_number + context_lines)
        for current in range(start, end + 1):
            text = lines[current - 1] if current - 1 < len(lines) else ""
            separator = ":" if current == match.line_number else "-"
            emit(label, separator, current, text.replace("\r", ""))

    limit_notice = None
    if match_limit_reached:
        limit_notice = (
            f"{js_number_to_string(effective_limit)} matches limit reached. "
            f"Use limit={js_number_to_string(effective_limit * 2)} for more, or refine pattern"
        )
    return finish_listing(
        out,
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
    )


__all__ = ["DEFAULT_GREP_LIMIT", "clean_rg_error", "create_grep_tool_definition", "grep_files"]
