"""pi core: wire types, the trio agent loop and tool pipeline, hooks and plugin loading.

The names below are the public API plugins use (DESIGN §3); everything else lives in modules
named for what they hold.
"""

from __future__ import annotations

from pi_core.agent import Agent
from pi_core.errors import CommandTimeout, ToolAborted
from pi_core.hook_types import AfterToolCallResult, BeforeToolCallResult
from pi_core.loop import run_agent_loop
from pi_core.markers import hookimpl, hookspec
from pi_core.messages import (
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_core.mutation_queue import with_file_mutation_queue
from pi_core.operations import BashOperations, FileOperations
from pi_core.tools import AgentTool, ToolDefinition, tool, wrap_tool_definition

__all__ = [
    "AfterToolCallResult",
    "Agent",
    "AgentTool",
    "AgentToolResult",
    "AssistantMessage",
    "BashOperations",
    "BeforeToolCallResult",
    "CommandTimeout",
    "FileOperations",
    "ImageContent",
    "TextContent",
    "ToolAborted",
    "ToolCall",
    "ToolDefinition",
    "ToolResultMessage",
    "UserMessage",
    "hookimpl",
    "hookspec",
    "run_agent_loop",
    "tool",
    "with_file_mutation_queue",
    "wrap_tool_definition",
]
