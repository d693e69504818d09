"""A policy plugin of the telemetry tests: blocks a bash command that starts with ``rm``."""

from __future__ import annotations

from typing import Any

from pi_core import BeforeToolCallResult, hookimpl


@hookimpl
def pi_before_tool_call(context: Any) -> BeforeToolCallResult | None:
    command = context.args.get("command") if isinstance(context.args, dict) else None
    if isinstance(command, str) and command.startswith("rm "):
        return BeforeToolCallResult(
            block=True, reason="rm is not allowed here", source="no-rm rule"
        )
    return None
