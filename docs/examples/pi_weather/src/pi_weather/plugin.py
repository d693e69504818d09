"""The pi-weather plugin: a ``weather`` tool and a policy that keeps bash off the network."""

from __future__ import annotations

from pi_core import BeforeToolCallResult, hookimpl, tool

NETWORK_PROGRAMS = ("curl", "wget")


@tool
async def weather(city: str, days: int = 1) -> str:
    """Forecast for a city.

    Args:
        city: Name of the city.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} day(s)"


@hookimpl
def pi_register_tools(register):
    register(weather)


@hookimpl
async def pi_before_tool_call(context):
    if context.tool_call.name != "bash":
        return None
    command = str(context.args.get("command", ""))
    if any(program in command.split() for program in NETWORK_PROGRAMS):
        return BeforeToolCallResult(block=True, reason="network access is not allowed")
    return None
