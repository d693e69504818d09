"""A plugin for the session-lifecycle tests, loaded with ``pi -p lifecycle_plugin``.

Each hook it implements appends one line to ``LOG`` (and to the file named by
``LIFECYCLE_LOG``, for ``pi`` running as a subprocess): ``HOOK detail``. Tools: ``echo``
(returns ``value``), ``crash`` (raises ``ValueError``), ``interrupt`` (raises
``KeyboardInterrupt``, as a Ctrl-C arriving in the tool would) and ``wait`` (touches
``marker``, then sleeps ``seconds``).
"""

from __future__ import annotations

import os
from typing import Any

import trio

from pi_core import SessionContext, hookimpl, tool

LOG: list[str] = []


def log(line: str) -> None:
    LOG.append(line)
    path = os.environ.get("LIFECYCLE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@tool
def echo(value: str) -> str:
    """Return the value."""
    return value


@tool
def crash() -> str:
    """Raise ValueError."""
    raise ValueError("crashed")


@tool
async def interrupt() -> str:
    """Raise KeyboardInterrupt."""
    raise KeyboardInterrupt


@tool
async def wait(marker: str, seconds: float) -> str:
    """Create the file ``marker``, then sleep."""
    await trio.Path(marker).write_text("started")
    await trio.sleep(seconds)
    return "slept"


@hookimpl
def pi_register_tools(register: Any, context: Any) -> None:
    host = context.session.host if context.session is not None else None
    log(f"pi_register_tools host={host}")
    for t in (echo, crash, interrupt, wait):
        register(t)


@hookimpl
async def pi_session_start(context: SessionContext) -> None:
    await trio.lowlevel.checkpoint()
    context.state["lifecycle"] = context.session_id
    log(f"pi_session_start host={context.host}")


@hookimpl
async def pi_session_end(context: SessionContext) -> None:
    await trio.lowlevel.checkpoint()  # an await in the end hook completes after Ctrl-C
    same = context.state.get("lifecycle") == context.session_id
    error = f" error={type(context.error).__name__}" if context.error is not None else ""
    log(f"pi_session_end host={context.host} reason={context.reason}{error} same_state={same}")


@hookimpl
def pi_before_tool_call(context: Any) -> None:
    same = context.session.state.get("lifecycle") == context.session.session_id
    log(f"pi_before_tool_call {context.tool_call.name} session_state={same}")


@hookimpl
def pi_after_tool_call(context: Any) -> None:
    log(f"pi_after_tool_call {context.tool_call.name} is_error={context.is_error}")


@hookimpl
def pi_on_event(event: Any) -> None:
    log(f"pi_on_event {event.type}")
