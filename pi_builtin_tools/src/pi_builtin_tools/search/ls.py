"""The ``ls`` tool: list one directory (``docs/reference/tools.md``).

Entries include dotfiles (not ``.``/``..``), sorted by case-folded name (ties by the name
itself, so the order never depends on the backend's ``readdir`` order); directories, and
symlinks to directories, get a ``/`` suffix; entries that cannot be stat'ed (a broken symlink)
are left out. At most ``limit`` entries (default 500), then the output is cut to 50KB.
All I/O goes through the :class:`~pi_core._backend_kit.operations.FileOperations` given.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pi_builtin_tools.catalog.args import integer_arg
from pi_builtin_tools.files.fs_errors import check_no_nul, node_error_message, show_path
from pi_builtin_tools.files.truncate import DEFAULT_MAX_BYTES
from pi_builtin_tools.search.output import finish_listing
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
from pi_core.backends import resolve_existing_path

DEFAULT_LS_LIMIT = 500

LS_DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for "
    f"directories. Includes dotfiles. Output is truncated to {DEFAULT_LS_LIMIT} entries or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
)

LS_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Directory to list (default: current directory)",
        },
        "limit": {
            "type": "number",
            "description": f"Maximum number of entries to return (default: {DEFAULT_LS_LIMIT})",
        },
    },
}


def ls_sort_key(name: str) -> tuple[str, str]:
    """Sort key of a directory entry: case-folded name, then the name."""
    return (name.casefold(), name)


async def list_directory(
    operations: FileOperations, cwd: str, path: str | None, limit: float | None
) -> AgentToolResult:
    """Run ``ls``: the result, or :class:`ToolError` with Pi's message
    (``Path not found: {abs}``, ``Not a directory: {abs}``, ``Cannot read directory: {error}``).
    """
    effective_limit = (
        DEFAULT_LS_LIMIT
        if limit is None
        else integer_arg("limit", limit, clamp_low=True, floor=True)
    )
    check_no_nul(path or "")
    dir_path = await resolve_existing_path(path or ".", cwd, operations, for_read=False)
    try:
        stat = await operations.stat(dir_path)
    except OSError:
        raise ToolError(f"Path not found: {show_path(dir_path)}") from None
    if stat.kind != "directory":
        raise ToolError(f"Not a directory: {show_path(dir_path)}")
    try:
        entries = await operations.list_dir(dir_path)
    except OSError as error:
        message = node_error_message(error, "scandir", dir_path)
        raise ToolError(f"Cannot read directory: {message}") from None
    entries.sort(key=ls_sort_key)

    results: list[str] = []
    entry_limit_reached = False
    for entry in entries:
        if len(results) >= effective_limit:
            entry_limit_reached = True
            break
        try:
            entry_stat = await operations.stat(posixpath.join(dir_path, entry))
        except OSError:
            continue
        # A name that is not UTF-8 is shown with U+FFFD, as Node decodes it.
        name = entry.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        results.append(name + "/" if entry_stat.kind == "directory" else name)

    if not results:
        return AgentToolResult(content=[TextContent(text="(empty directory)")])
    if not entry_limit_reached:
        return finish_listing(results)
    shown = js_number_to_string(effective_limit)
    return finish_listing(
        results,
        limit_notice=(
            f"{shown} entries limit reached. Use limit={js_number_to_string(effective_limit * 2)} for more"
        ),
        limit_details={"entryLimitReached": effective_limit},
    )


def create_ls_tool_definition(cwd: str, operations: FileOperations) -> ToolDefinition:
    """The ``ls`` tool for a session in ``cwd`` doing its I/O through ``operations``.

    Parameters ``path`` (default the cwd) and ``limit`` (default 500); see :func:`list_directory`.
    """

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
    ) -> AgentToolResult:
        return await list_directory(operations, cwd, params.get("path"), params.get("limit"))

    return ToolDefinition(
        name="ls",
        label="ls",
        description=LS_DESCRIPTION,
        parameters=LS_PARAMETERS,
        execute=execute,
        prompt_snippet="List directory contents",
        verify="text",
        path_arguments=(PathArgument("path", read=True, default="."),),
        replay="safe",
    )


__all__ = ["DEFAULT_LS_LIMIT", "create_ls_tool_definition", "list_directory", "ls_sort_key"]
