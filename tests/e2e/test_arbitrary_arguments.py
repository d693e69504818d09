"""Arbitrary JSON as the arguments of every registered tool never crashes the loop and yields
exactly one result per call, in source order (issue 2, "Done when").

The built-in tools are loaded through their entry point like any plugin. So that random input can
do no harm, a test plugin gives the session a bash backend that records commands instead of
running them, and a file backend that refuses every path outside the temporary workspace; the
loop, validation, hooks and the tools' own argument handling are all real.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_builtin_tools.files.local import LocalFileOperations
from pi_core import hookimpl
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._plugins.manager import make_plugin_manager
from pi_core._plugins.session import build_session
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AssistantMessage, TextContent, ToolCall, UserMessage


class RecordingBash:
    """A BashOperations that runs nothing: it echoes the command's length."""

    async def exec(self, command, cwd, *, on_data, env=None, timeout=None):
        on_data(f"{len(command)}\n".encode())
        return 0


class ConfinedFiles(LocalFileOperations):
    """LocalFileOperations that refuses any path outside ``root``."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self._root = os.path.realpath(root)

    def _check(self, path: str) -> None:
        real = os.path.realpath(path)
        if real != self._root and not real.startswith(self._root + os.sep):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name.startswith("_") or not callable(attr):
            return attr
        check = super().__getattribute__("_check")

        async def confined(*args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], str):
                check(args[0])
            if "cwd" in kwargs:
                check(kwargs["cwd"])
            return await attr(*args, **kwargs)

        return confined


class Backends:
    def __init__(self, root: str) -> None:
        self.root = root

    @hookimpl(tryfirst=True)
    def pi_bash_operations(self):
        return RecordingBash()

    @hookimpl(tryfirst=True)
    def pi_file_operations(self):
        return ConfinedFiles(self.root)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)


def session_for(root: Path):
    pm = make_plugin_manager(autoload=False, plugins=["builtin_tools"])
    pm.register(Backends(str(root)), name="test-backends")
    return build_session(pm, root)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_arbitrary_arguments_to_every_tool(tmp_path_factory, data) -> None:
    root = tmp_path_factory.mktemp("ws")
    session = session_for(root)
    names = [tool.name for tool in session.tools]
    assert names == [
        "read",
        "bash",
        "powershell",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
        "tool_search",
        "codemode",
        "codemode_python",
    ]
    calls = []
    for index, name in enumerate(names):
        arguments = data.draw(
            json_values
            | st.fixed_dictionaries(
                {}, optional={"path": st.text(max_size=10), "command": st.text(max_size=10)}
            ),
            label=name,
        )
        calls.append(ToolCall(id=f"t{index}", name=name, arguments=arguments))
    script = [
        AssistantMessage(content=calls, stop_reason="toolUse"),
        AssistantMessage(content=[TextContent(text="done")], stop_reason="stop"),
    ]

    async def main() -> list[Any]:
        events: list[Any] = []

        async def emit(event: Any) -> None:
            events.append(event)

        config = session.loop_config(provider=ScriptedProvider(script))
        context = AgentContext(tools=session.tools)
        with trio.fail_after(60):
            return await run_agent_loop([UserMessage(content="go")], context, config, emit)

    messages = trio.run(main)
    results = [m for m in messages if m.role == "toolResult"]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert [r.tool_name for r in results] == names
    assert messages[-1].role == "assistant"
