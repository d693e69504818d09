"""The ``builtin_tools`` plugin: registers the built-in tools and the local backends.

Loaded through the ``pi`` entry point like any third-party plugin. The file tools
do their I/O through ``context.file_operations`` (the local backend below unless another plugin
provides one). Per session it keeps, in ``session.state["builtin_tools"]``, the bash tool's
full-output files, which ``pi_session_end`` removes (unless ``[tools.bash] keep_full_output``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_builtin_tools.catalog.config import tools_table
from pi_builtin_tools.catalog.definitions import (
    create_codemode_python_tool_definition,
    create_codemode_tool_definition,
    create_tool_search_tool_definition,
)
from pi_builtin_tools.files.edit import create_edit_tool_definition
from pi_builtin_tools.files.local import LocalFileOperations
from pi_builtin_tools.files.read import ReadToolOptions, create_read_tool_definition
from pi_builtin_tools.files.write import create_write_tool_definition
from pi_builtin_tools.search.find import create_find_tool_definition
from pi_builtin_tools.search.grep import create_grep_tool_definition
from pi_builtin_tools.search.ls import create_ls_tool_definition
from pi_builtin_tools.shell.bash import BashToolOptions, create_bash_tool_definition
from pi_builtin_tools.shell.local import LocalBashOperations
from pi_builtin_tools.shell.output_files import FullOutputFiles
from pi_builtin_tools.shell.powershell import create_powershell_tool_definition
from pi_core import (
    BackendContext,
    BashOperations,
    FileOperations,
    RegisterToolsContext,
    SessionContext,
    config_file,
    hookimpl,
)
from pi_core.backends import EnvPolicy


def _file_tools(context: RegisterToolsContext, files: FileOperations) -> list[Any]:
    """The file tools, in the order Pi lists them. Add a tool by adding a line."""
    return [
        create_read_tool_definition(
            context.cwd, files, options=ReadToolOptions.from_config(context.config)
        ),
        create_edit_tool_definition(context.cwd, files),
        create_write_tool_definition(context.cwd, files),
        create_grep_tool_definition(context.cwd, files),
        create_find_tool_definition(context.cwd, files),
        create_ls_tool_definition(context.cwd, files),
    ]


@hookimpl
def pi_register_tools(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
    """Register the built-in tools for ``context.cwd``."""
    files = context.file_operations or LocalFileOperations()
    tools = _file_tools(context, files)
    tools.insert(1, _bash_tool(context))  # Pi's order: read, bash, edit, write, grep, find, ls
    tools.insert(2, _powershell_tool(context))  # registered after bash, inactive by default
    for definition in tools:
        register(definition)
    register(create_tool_search_tool_definition())  # inactive until --tools/--tool-search
    register(create_codemode_tool_definition())  # inactive until --tools/--codemode
    register(create_codemode_python_tool_definition())  # inactive until --tools


def _bash_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """The ``[tools.bash]`` table: ``command_prefix``, ``expose_session_environment``,
    ``shell_path`` (the local backend's shell). ``ConfigError`` when ``[tools]`` or
    ``[tools.bash]`` is not a table."""
    return tools_table(config, "bash")


ONE_SHOT_HOSTS = frozenset({"call", "replay"})
"""Hosts whose printed result is read after the process ends: they keep bash's full-output files
unless ``[tools.bash] keep_full_output = false``."""

STATE_KEY = "builtin_tools"
"""This plugin's entry in ``SessionContext.state``: ``{"full_output_files": FullOutputFiles}``."""


def _bash_tool(context: RegisterToolsContext) -> Any:
    operations = context.bash_operations or LocalBashOperations(
        shell_path=_bash_config(context.config).get("shell_path")
    )
    options = BashToolOptions.from_config(
        _bash_config(context.config), file=config_file(context.config)
    )
    files = None
    if context.session is not None:
        keep = options.keep_full_output
        if keep is None:
            keep = context.session.host in ONE_SHOT_HOSTS
        files = FullOutputFiles(
            keep=keep,
            max_session_bytes=options.full_output_session_max_bytes,
            retention_days=options.full_output_retention_days,
        )
        context.session.state.setdefault(STATE_KEY, {})["full_output_files"] = files
    return create_bash_tool_definition(
        context.cwd,
        operations,
        spawn_hook=context.bash_spawn_hook,
        options=options,
        env_policy=EnvPolicy.from_config(context.config),
        full_output_files=files,
    )


def _powershell_tool(context: RegisterToolsContext) -> Any:
    """The powershell tool (``[tools.powershell]``: ``command_prefix``,
    ``expose_session_environment``, ``keep_full_output``); it always runs locally."""
    options = BashToolOptions.from_config(
        tools_table(context.config, "powershell"),
        file=config_file(context.config),
        section="tools.powershell",
    )
    files = None
    if context.session is not None:
        files = context.session.state.setdefault(STATE_KEY, {}).get("full_output_files")
    return create_powershell_tool_definition(
        context.cwd,
        spawn_hook=context.bash_spawn_hook,
        options=options,
        env_policy=EnvPolicy.from_config(context.config),
        full_output_files=files,
    )


@hookimpl
def pi_session_end(context: SessionContext) -> None:
    """Remove the session's full-output files of bash (unless ``keep_full_output``) and, when it
    wrote one, the files of ended sessions past ``full_output_retention_days``."""
    files = context.state.get(STATE_KEY, {}).get("full_output_files")
    if isinstance(files, FullOutputFiles):
        files.remove_all()


@hookimpl(trylast=True)
def pi_bash_operations(context: BackendContext) -> BashOperations | None:
    """The local bash backend: used when no other plugin provides one."""
    return LocalBashOperations(shell_path=_bash_config(context.config).get("shell_path"))


@hookimpl(trylast=True)
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """The local file backend: used when no other plugin provides one."""
    return LocalFileOperations()
