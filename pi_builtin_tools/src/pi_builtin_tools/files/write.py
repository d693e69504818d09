"""The ``write`` tool (``docs/reference/tools.md``).

Creates parent directories, then replaces the file atomically through
``FileOperations.write_bytes`` (temporary file, fsync, rename; mode and symlink target kept),
inside the file mutation queue so edits and writes of one file never interleave. A file that
may not be written is refused first (``EACCES: permission denied, open '{abs}'``; a file with
no write bit is refused even for root, see :mod:`pi_builtin_tools.files.access`), since the
atomic rename itself would replace it; so is what is not a regular file (``Cannot write
{path}: not a regular file (a device, FIFO or socket).``: ``/dev/full`` or a FIFO is never
replaced by a regular file). The content is
written as UTF-8 exactly as given (no BOM or line-ending changes); the success text
(``Successfully wrote to {path}``, Pi 1.6) names the path as the model wrote it.
"""

from __future__ import annotations

import errno
import os
import posixpath
from typing import Any

from pi_builtin_tools.files.access import check_access
from pi_builtin_tools.files.fs_errors import check_no_nul, fs_error, not_regular_file_error
from pi_core import (
    AgentToolResult,
    FileOperations,
    OnUpdate,
    PathArgument,
    TextContent,
    ToolDefinition,
)
from pi_core.backends import run_shielded, with_tool_path_mutation_queue

WRITE_DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
    "Automatically creates parent directories."
)

WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {
            "type": "string",
            "description": "Path to the file to write (relative or absolute)",
        },
        "content": {"type": "string", "description": "Content to write to the file"},
    },
}


def _utf8(text: str) -> bytes:
    """UTF-8 of ``text``; a lone surrogate becomes U+FFFD as in Node (never an exception)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed.encode("utf-8", "replace")


async def write_file(raw_path: str, content: str, cwd: str, ops: FileOperations) -> AgentToolResult:
    """Write ``content`` (UTF-8) to ``raw_path`` resolved against ``cwd``.

    Returns ``Successfully wrote to {raw_path}``. Raises
    :class:`~pi_core._errors.ToolError` with Node's texts (``EISDIR: illegal operation on a
    directory, open '{abs}'``). On cancellation the step in flight (mkdir, the write) finishes
    before ``Cancelled`` propagates and the queue moves on.
    """
    check_no_nul(raw_path)
    data = _utf8(content)

    async def mutate(path: str) -> AgentToolResult:
        parent = posixpath.dirname(path) or "/"
        try:
            await run_shielded(ops.mkdir, parent)
        except OSError as exc:
            raise fs_error(exc, "mkdir", parent) from exc
        try:
            info = await check_access(ops, path, os.W_OK)
        except PermissionError as exc:
            raise fs_error(exc, "open", path) from exc
        except OSError:
            info = None  # a new file (ENOENT); anything else is reported by the write below
        if info is not None and info.kind == "other":
            raise not_regular_file_error("write", raw_path)
        try:
            await run_shielded(ops.write_bytes, path, data)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # replaced by a special file since the check
                raise not_regular_file_error("write", raw_path) from exc
            raise fs_error(exc, "open", path) from exc
        return AgentToolResult(content=[TextContent(text=f"Successfully wrote to {raw_path}")])

    return await with_tool_path_mutation_queue(raw_path, cwd, ops, mutate)


def create_write_tool_definition(
    cwd: str, operations: FileOperations, *, options: Any = None
) -> ToolDefinition:
    """The ``write`` tool for the session ``cwd`` doing its I/O through ``operations``."""

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None, ctx: Any = None
    ) -> AgentToolResult:
        return await write_file(params["path"], params["content"], cwd, operations)

    def render_call(args: Any) -> str:
        path = args.get("path", "") if isinstance(args, dict) else ""
        return f"write {path}"

    return ToolDefinition(
        name="write",
        label="write",
        description=WRITE_DESCRIPTION,
        parameters=WRITE_PARAMETERS,
        execute=execute,
        prompt_snippet="Create or overwrite files",
        prompt_guidelines=["Use write only for new files or complete rewrites."],
        render_call=render_call,
        verify="outcome",
        path_arguments=(PathArgument("path", write=True),),
        replay="never",
        mutates="paths",
        constrained_sampling={"type": "json_schema", "strict": "prefer"},
    )


__all__ = [
    "WRITE_DESCRIPTION",
    "WRITE_PARAMETERS",
    "create_write_tool_definition",
    "write_file",
]
