"""A plugin for the CLI tests, loaded with ``pi -p cli_plugin`` (the fixture ``plugin_env`` puts
this folder on ``sys.path`` and ``PYTHONPATH``).

Tools: ``echo`` (returns ``value``, prefixed by ``[cli_plugin] prefix`` from the config),
``fail`` (raises), ``where`` (the session cwd), ``wait`` (touches ``marker``, then sleeps),
``stdin`` (what reading stdin gives), ``sequential`` (``execution_mode="sequential"``).
Policy: ``echo`` of ``"forbidden"`` is blocked. Every agent event type is appended to ``SEEN``.
"""

from __future__ import annotations

import sys
from typing import Any

import trio

from pi_core import AgentTool, AgentToolResult, BeforeToolCallResult, TextContent, hookimpl, tool

SEEN: list[str] = []


@tool
def fail(message: str) -> str:
    """Raise an error with the message."""
    raise RuntimeError(message)


@tool
async def wait(marker: str, seconds: float) -> str:
    """Create the file ``marker``, then sleep."""
    await trio.Path(marker).write_text("started")
    await trio.sleep(seconds)
    return "slept"


@tool
def stdin() -> str:
    """Read standard input to its end and report what came."""
    return repr(sys.stdin.read())


@tool(execution_mode="sequential")
async def sequential(value: str) -> str:
    """A tool that makes its batch sequential."""
    return value


@hookimpl
def pi_register_tools(register: Any, context: Any) -> None:
    prefix = context.config.get("cli_plugin", {}).get("prefix", "")

    async def echo_execute(
        tool_call_id: str, params: Any, on_update: Any = None
    ) -> AgentToolResult:
        await trio.sleep(params.get("delay", 0))
        return AgentToolResult(content=[TextContent(text=prefix + params["value"])])

    async def where_execute(
        tool_call_id: str, params: Any, on_update: Any = None
    ) -> AgentToolResult:
        return AgentToolResult(
            content=[TextContent(text=context.cwd)], details={"cwd": context.cwd}
        )

    register(
        AgentTool(
            name="echo",
            label="Echo",
            description="Echo a value back.",
            parameters={
                "type": "object",
                "properties": {"value": {"type": "string"}, "delay": {"type": "number"}},
                "required": ["value"],
            },
            execute=echo_execute,
        )
    )
    register(fail)
    register(
        AgentTool(
            name="where",
            description="The session's working directory.",
            parameters={"type": "object", "properties": {}},
            execute=where_execute,
        )
    )
    register(wait)
    register(stdin)
    register(sequential)


@hookimpl
def pi_before_tool_call(context: Any) -> BeforeToolCallResult | None:
    if context.tool_call.name == "echo" and context.args.get("value") == "forbidden":
        return BeforeToolCallResult(block=True, reason="echo of 'forbidden' is not allowed")
    return None


@hookimpl
def pi_on_event(event: Any) -> None:
    SEEN.append(event.type)
