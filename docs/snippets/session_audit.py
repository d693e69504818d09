"""A plugin with per-session state: counts each session's tool calls and reports them on stderr
when the session ends (``pi_session_start`` / ``pi_session_end``)."""

from __future__ import annotations

import sys

from pi_core import BeforeToolCallContext, SessionContext, hookimpl


@hookimpl
def pi_session_start(context: SessionContext) -> None:
    context.state["session_audit"] = {"calls": 0}


@hookimpl
def pi_before_tool_call(context: BeforeToolCallContext) -> None:
    if context.session is not None:
        context.session.state["session_audit"]["calls"] += 1


@hookimpl
def pi_session_end(context: SessionContext) -> None:
    calls = context.state.pop("session_audit")["calls"]
    print(f"audit: {context.host} session {context.reason} after {calls} call(s)", file=sys.stderr)
