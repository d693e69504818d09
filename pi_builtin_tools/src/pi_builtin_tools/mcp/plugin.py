"""The ``mcp`` plugin's hooks. Without an ``[mcp]`` table (or a Pi ``mcp.json``) it registers no
tool; ``pi mcp`` (``serve``, ``list``) is always available."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pi_core import hookimpl

STATE_KEY = "mcp"
"""The session-state entry of the MCP servers (``pi_builtin_tools.mcp.client_tools.STATE_KEY``)."""

# Start-up: without an ``[mcp]`` table and without Pi's user ``mcp.json`` every hook returns at
# once, importing nothing (the SDK, pydantic models and the config reader are most of the
# plugin's import time).


def _configured(config: Mapping[str, Any]) -> bool:
    """Whether a session with ``config`` may have MCP servers: an ``[mcp]`` table, or Pi's user
    file ``mcp.json`` (in ``$PI_CODING_AGENT_DIR``, default ``~/.pi/agent``)."""
    if "mcp" in config:
        return True
    agent_dir = os.environ.get("PI_CODING_AGENT_DIR") or os.path.join("~", ".pi", "agent")
    return os.path.exists(os.path.join(os.path.expanduser(agent_dir), "mcp.json"))


@hookimpl
def pi_register_commands(register: Callable[[Any], None]) -> None:
    """``pi mcp serve`` and ``pi mcp list``."""
    from pi_builtin_tools.mcp.commands import MCP_COMMAND

    register(MCP_COMMAND)


@hookimpl
def pi_register_tools(register: Callable[[Any], None], context: Any) -> None:
    """The tools of the configured MCP servers (``mcp__<server>__<tool>``, the resource tools)."""
    if not _configured(context.config):
        return
    from pi_builtin_tools.mcp.client_tools import register_mcp_tools

    register_mcp_tools(register, context)


@hookimpl
def pi_session_start(context: Any) -> None:
    """Activate ``codemode``/``tool_search`` for MCP tools the model is not given directly."""
    if STATE_KEY not in context.state:
        return
    from pi_builtin_tools.mcp.client_tools import start_session

    start_session(context)


@hookimpl
def pi_session_end(context: Any) -> Awaitable[None] | None:
    """Stop the session's MCP servers (nothing, at once, when the session started none)."""
    if STATE_KEY not in context.state:
        return None
    from pi_builtin_tools.mcp.client_tools import end_session

    return end_session(context)
