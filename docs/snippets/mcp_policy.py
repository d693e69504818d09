"""A policy for MCP tools: refuse the calls to tools their MCP server declares destructive.

An MCP tool is a pi tool like any other: the policy sees its pi name (``mcp__fs__write_file``),
its validated arguments, and on ``context.tool.definition`` the MCP server's ``annotations``
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``) and ``server``.
"""

from pi_core import BeforeToolCallResult, hookimpl


@hookimpl
def pi_before_tool_call(context):
    definition = context.tool.definition if context.tool is not None else None
    hints = getattr(definition, "annotations", None) or {}
    if hints.get("destructiveHint"):
        return BeforeToolCallResult(
            block=True,
            reason=f"{context.tool.label} changes files; ask the user to run it",
        )
