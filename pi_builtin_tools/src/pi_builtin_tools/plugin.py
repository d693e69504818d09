"""The ``builtin_tools`` plugin: registers the built-in tools and the local backends.

Loaded through the ``pi`` entry point like any third-party plugin (DESIGN §2). The file tools
do their I/O through ``context.file_operations`` (the local backend below unless another plugin
provides one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_builtin_tools.local_files import LocalFileOperations
from pi_builtin_tools.read import ReadToolOptions, create_read_tool_definition
from pi_builtin_tools.write import create_write_tool_definition
from pi_core.hook_types import BackendContext, RegisterToolsContext
from pi_core.markers import hookimpl
from pi_core.operations import FileOperations


def _file_tools(context: RegisterToolsContext, files: FileOperations) -> list[Any]:
    """The file tools, in the order Pi lists them. Add a tool by adding a line."""
    return [
        create_read_tool_definition(
            context.cwd, files, options=ReadToolOptions.from_config(context.config)
        ),
        create_write_tool_definition(context.cwd, files),
    ]


@hookimpl
def pi_register_tools(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
    """Register the built-in tools for ``context.cwd``."""
    files = context.file_operations or LocalFileOperations()
    for definition in _file_tools(context, files):
        register(definition)


@hookimpl(trylast=True)
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """The local file backend: used when no other plugin provides one."""
    return LocalFileOperations()
