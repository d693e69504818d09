"""The bash tool through the plugin layer: ``pi_bash_operations`` (local backend ``trylast``),
``pi_bash_spawn_context`` and the ``[tools.bash]`` config table."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

import pi_builtin_tools.plugin as builtin_plugin
from pi_builtin_tools.shell.local import LocalBashOperations
from pi_core import hookimpl
from pi_core._errors import ToolError
from pi_core._plugins.contexts import BackendContext, BashSpawnContext
from pi_core._plugins.session import build_session


class EchoBackend:
    """A backend that reports what it was asked to run instead of running it."""

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> int | None:
        on_data(f"remote: {command} in {cwd}\n".encode())
        return 0


async def run_bash(session, command: str) -> str:
    result = await session.tools_by_name["bash"].execute("c1", {"command": command}, None)
    return result.text


async def test_local_backend_by_default(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path)
    assert isinstance(session.bash_operations, LocalBashOperations)
    assert [t.name for t in session.tool_set.active] == [  # powershell is registered inactive
        "read",
        "bash",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
    ]
    assert await run_bash(session, "echo hi; pwd") == f"hi\n{tmp_path}\n"


async def test_pi_bash_operations(plugin_manager, register_plugin, tmp_path) -> None:
    class Remote:
        @hookimpl
        def pi_bash_operations(self, context: BackendContext) -> EchoBackend:
            return EchoBackend()

    register_plugin(builtin_plugin, name="builtin_tools")
    register_plugin(Remote(), name="remote")
    session = build_session(plugin_manager, tmp_path)
    assert isinstance(session.bash_operations, EchoBackend)
    assert await run_bash(session, "ls") == f"remote: ls in {tmp_path}\n"


async def test_pi_bash_spawn_context(plugin_manager, register_plugin, tmp_path) -> None:
    class Wrap:
        @hookimpl
        def pi_bash_spawn_context(self, context: BashSpawnContext) -> BashSpawnContext:
            context.env["WRAPPED"] = "yes"
            return BashSpawnContext(
                command=f"echo before; {context.command}", cwd=context.cwd, env=context.env
            )

    class Untouched:
        @hookimpl
        def pi_bash_spawn_context(self, context: BashSpawnContext) -> None:
            return None

    register_plugin(builtin_plugin, name="builtin_tools")
    register_plugin(Wrap(), name="wrap")
    register_plugin(Untouched(), name="untouched")
    session = build_session(plugin_manager, tmp_path)
    assert await run_bash(session, "echo $WRAPPED") == "before\nyes\n"


async def test_config_table(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    config = {"tools": {"bash": {"command_prefix": "export GREETING=hello"}}}
    session = build_session(plugin_manager, tmp_path, config)
    assert await run_bash(session, "echo $GREETING") == "hello\n"

    missing_shell = {"tools": {"bash": {"shell_path": "/custom/bash"}}}
    session = build_session(plugin_manager, tmp_path, missing_shell)
    with pytest.raises(ToolError, match=r"^Custom shell path not found: /custom/bash$"):
        await run_bash(session, "true")
