"""Agent events, delivered in order to the loop's event sink.

JSON carries Pi's ``type`` names and camelCase fields, so ``pi replay --events`` output lines up
with the reference's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pi_core._wire.base import WireModel, empty_list
from pi_core._wire.messages import (
    AgentMessage,
    AgentToolResult,
    AssistantMessage,
    ToolResultMessage,
)


class AgentStartEvent(WireModel):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(WireModel):
    """``messages``: every message this run produced (prompts included)."""

    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessage] = Field(default_factory=empty_list)


class TurnStartEvent(WireModel):
    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(WireModel):
    """``message``: the turn's assistant message; ``tool_results`` in source order."""

    type: Literal["turn_end"] = "turn_end"
    message: AgentMessage
    tool_results: list[ToolResultMessage] = Field(default_factory=empty_list)


class MessageStartEvent(WireModel):
    type: Literal["message_start"] = "message_start"
    message: AgentMessage


class MessageUpdateEvent(WireModel):
    """A streaming update of the partial assistant message; ``assistant_message_event`` is the
    provider stream event (``text_delta``, ``toolcall_delta``, ...)."""

    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    assistant_message_event: dict[str, Any] = Field(default_factory=dict)


class MessageEndEvent(WireModel):
    type: Literal["message_end"] = "message_end"
    message: AgentMessage


class ToolExecutionStartEvent(WireModel):
    """``args`` are the raw ``toolCall.arguments``, before preparation and validation."""

    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: Any = None
    parent_tool_call_id: str | None = None

    KEEP_NONE = frozenset({"args"})


class ToolExecutionUpdateEvent(WireModel):
    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: Any = None
    partial_result: AgentToolResult
    parent_tool_call_id: str | None = None

    KEEP_NONE = frozenset({"args"})


class ToolExecutionEndEvent(WireModel):
    """``result``: the final result after ``pi_after_tool_call``; ``is_error`` its outcome."""

    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    parent_tool_call_id: str | None = None


AgentEvent = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)
"""Any agent event; ``event.type`` tells which."""

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]
