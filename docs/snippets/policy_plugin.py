"""A policy plugin: no tool may write or edit a ``.env`` file."""

from __future__ import annotations

from pi_core import BeforeToolCallResult, hookimpl

GUARDED_TOOLS = ("write", "edit")


@hookimpl
async def pi_before_tool_call(context):
    if context.tool_call.name not in GUARDED_TOOLS:
        return None
    path = str(context.args.get("path", ""))
    if path == ".env" or path.endswith("/.env"):
        return BeforeToolCallResult(block=True, reason=f"{path}: .env files are read-only here")
    return None
