"""A third-party plugin (``pi -p declared_tool_plugin``) whose tools declare how they look, how
``pi replay --verify`` compares them and which arguments are paths, the way the built-in tools
do: nothing in pi knows these tools by name.

* ``stash {target, text}``: writes ``text`` to the file ``target`` (relative to the session cwd);
  its result text changes on every call (a counter), its ``details`` hold the byte count.
  ``render_call``: ``stash → TARGET``; ``render_result``: ``stashed N bytes``;
  ``verify = "outcome"``; ``path_arguments``: ``target`` is written.
* ``stamp {}``: returns a text that changes on every call; ``verify = "text"``.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import trio

from pi_core import (
    AgentToolResult,
    PathArgument,
    RegisterToolsContext,
    TextContent,
    ToolDefinition,
    hookimpl,
)

COUNTER = itertools.count(int.from_bytes(os.urandom(4), "big"))


def render_stash_call(args: Any) -> str:
    return f"stash → {args.get('target')}"


def render_stash_result(result: AgentToolResult) -> str:
    details = result.details if isinstance(result.details, dict) else {}
    return f"stashed {details.get('bytes')} bytes" if not result.is_error else result.text


def stash_tool(cwd: str) -> ToolDefinition:
    async def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        path = os.path.join(cwd, params["target"])
        data = params["text"].encode()
        await trio.Path(path).write_bytes(data)
        return AgentToolResult(
            content=[TextContent(text=f"stash #{next(COUNTER)} done")],
            details={"bytes": len(data)},
        )

    return ToolDefinition(
        name="stash",
        description="Keep a text in a file.",
        parameters={
            "type": "object",
            "properties": {"target": {"type": "string"}, "text": {"type": "string"}},
            "required": ["target", "text"],
        },
        execute=execute,
        render_call=render_stash_call,
        render_result=render_stash_result,
        verify="outcome",
        path_arguments=(PathArgument("target", write=True),),
    )


def stamp_tool() -> ToolDefinition:
    async def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=f"stamp #{next(COUNTER)}")])

    return ToolDefinition(
        name="stamp",
        description="A new stamp on every call.",
        parameters={"type": "object", "properties": {}},
        execute=execute,
        verify="text",
    )


@hookimpl
def pi_register_tools(register: Any, context: RegisterToolsContext) -> None:
    register(stash_tool(str(context.cwd)))
    register(stamp_tool())
