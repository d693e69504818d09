"""pi's built-in tools: read, write, edit, bash, grep, find, ls, the script tools, and their local
backends.

Loaded like any third-party plugin, through the ``pi`` entry point ``builtin_tools``
(:mod:`pi_builtin_tools.plugin`); :mod:`pi_builtin_tools.mcp` is the ``mcp`` plugin. The code
lives in one sub-package per concern: ``files`` (read, edit, write, encodings, truncation, the
local file backend), ``search`` (grep, find, ls), ``shell`` (bash, powershell, the local bash
backend), ``codemode`` (the script tools' engines), ``catalog`` (tool definitions, ``[tools.*]``
settings, ``tool_search``) and ``mcp``.

The public names below are importable from here, each imported on its first use (loading the
plugin imports only what registering the tools needs). The modules' former flat paths
(``pi_builtin_tools.read``, ``pi_builtin_tools.local_files``, ...) import the same modules as
their rooms (``pi_builtin_tools.files.read``, ``pi_builtin_tools.files.local``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_core import lazy_door

if TYPE_CHECKING:
    from pi_builtin_tools.catalog.definitions import (
        create_codemode_python_tool_definition,
        create_codemode_tool_definition,
        create_tool_search_tool_definition,
    )
    from pi_builtin_tools.files.edit import create_edit_tool_definition, edit_file
    from pi_builtin_tools.files.local import LocalFileOperations
    from pi_builtin_tools.files.read import ReadToolOptions, create_read_tool_definition, read_file
    from pi_builtin_tools.files.truncate import (
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_LINES,
        format_size,
        truncate_head,
        truncate_line,
        truncate_tail,
    )
    from pi_builtin_tools.files.write import create_write_tool_definition, write_file
    from pi_builtin_tools.search.find import create_find_tool_definition, find_files
    from pi_builtin_tools.search.grep import create_grep_tool_definition, grep_files
    from pi_builtin_tools.search.ls import create_ls_tool_definition, list_directory
    from pi_builtin_tools.shell.bash import BashToolOptions, create_bash_tool_definition, strip_ansi
    from pi_builtin_tools.shell.local import LocalBashOperations, resolve_shell
    from pi_builtin_tools.shell.powershell import (
        PowerShellLocator,
        create_powershell_tool_definition,
    )

_SOURCES = {
    "BashToolOptions": "shell.bash",
    "DEFAULT_MAX_BYTES": "files.truncate",
    "DEFAULT_MAX_LINES": "files.truncate",
    "LocalBashOperations": "shell.local",
    "LocalFileOperations": "files.local",
    "PowerShellLocator": "shell.powershell",
    "ReadToolOptions": "files.read",
    "create_bash_tool_definition": "shell.bash",
    "create_codemode_python_tool_definition": "catalog.definitions",
    "create_codemode_tool_definition": "catalog.definitions",
    "create_edit_tool_definition": "files.edit",
    "create_find_tool_definition": "search.find",
    "create_grep_tool_definition": "search.grep",
    "create_ls_tool_definition": "search.ls",
    "create_powershell_tool_definition": "shell.powershell",
    "create_read_tool_definition": "files.read",
    "create_tool_search_tool_definition": "catalog.definitions",
    "create_write_tool_definition": "files.write",
    "edit_file": "files.edit",
    "find_files": "search.find",
    "format_size": "files.truncate",
    "grep_files": "search.grep",
    "list_directory": "search.ls",
    "read_file": "files.read",
    "resolve_shell": "shell.local",
    "strip_ansi": "shell.bash",
    "truncate_head": "files.truncate",
    "truncate_line": "files.truncate",
    "truncate_tail": "files.truncate",
    "write_file": "files.write",
}
"""Each public name and the module (in its room) that defines it."""

_MOVED = {
    "read": "files.read",
    "edit": "files.edit",
    "edit_diff": "files.edit_diff",
    "write": "files.write",
    "file_encoding": "files.encoding",
    "file_access": "files.access",
    "image_processing": "files.image_processing",
    "fs_errors": "files.fs_errors",
    "local_files": "files.local",
    "truncate": "files.truncate",
    "grep": "search.grep",
    "find": "search.find",
    "ls": "search.ls",
    "fd_glob": "search.fd_glob",
    "search_output": "search.output",
    "bash": "shell.bash",
    "powershell": "shell.powershell",
    "output_accumulator": "shell.output_accumulator",
    "local_bash": "shell.local",
    "codemode_python": "codemode.python",
    "codemode_common": "codemode.common",
    "codemode_declarations": "codemode.declarations",
    "codemode_source": "codemode.source",
    "tool_definitions": "catalog.definitions",
    "tool_config": "catalog.config",
    "tool_args": "catalog.args",
    "tool_search": "catalog.tool_search",
}
"""Each module's former flat path → its room: ``import pi_builtin_tools.read`` imports
:mod:`pi_builtin_tools.files.read`, the same module object. (``pi_builtin_tools.codemode`` is
now the ``codemode`` room; its JavaScript engine is :mod:`pi_builtin_tools.codemode.javascript`.)"""

__getattr__, __dir__ = lazy_door(__name__, _SOURCES, moved=_MOVED)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "BashToolOptions",
    "LocalBashOperations",
    "LocalFileOperations",
    "PowerShellLocator",
    "ReadToolOptions",
    "create_bash_tool_definition",
    "create_codemode_python_tool_definition",
    "create_codemode_tool_definition",
    "create_edit_tool_definition",
    "create_find_tool_definition",
    "create_grep_tool_definition",
    "create_ls_tool_definition",
    "create_powershell_tool_definition",
    "create_read_tool_definition",
    "create_tool_search_tool_definition",
    "create_write_tool_definition",
    "edit_file",
    "find_files",
    "format_size",
    "grep_files",
    "list_directory",
    "read_file",
    "resolve_shell",
    "strip_ansi",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
    "write_file",
]
