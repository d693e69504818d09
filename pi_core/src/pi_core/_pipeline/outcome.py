"""What a finished tool call gives: :class:`ToolCallOutcome` and its tool result message.

The pipeline (:mod:`pi_core._pipeline.pipeline`) produces outcomes; a tool's nested calls
(:meth:`~pi_core._pipeline.tool_context.ToolCallContext.execute_tool`) return them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_core._wire.messages import AgentToolResult, ToolCall, ToolResultMessage


@dataclass
class ToolCallOutcome:
    """A finalized call: the original ``tool_call``, the final ``result`` (after
    ``after_tool_call``) and whether it is an error."""

    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool

    def to_message(self) -> ToolResultMessage:
        """The :class:`ToolResultMessage` of this outcome (see :func:`tool_result_message`)."""
        return tool_result_message(self.tool_call, self.result, self.is_error)


def tool_result_message(
    tool_call: ToolCall, result: AgentToolResult, is_error: bool
) -> ToolResultMessage:
    """Build the ToolResultMessage of a finalized call: ``content`` (``[]`` when missing),
    ``details`` and ``usage`` (each left out when ``None``), ``isError`` and a ``timestamp`` of
    now (ms). ``structured_content`` is never copied onto the message (Pi 1.6.0): programs read
    it on ``tool_execution_end.result`` or on the :class:`ToolCallOutcome`."""
    return ToolResultMessage(
        tool_call_id=tool_call.id,
        tool_name=tool_call.name,
        content=list(result.content or []),
        details=result.details,
        is_error=is_error,
        usage=result.usage,
    )


__all__ = ["ToolCallOutcome", "tool_result_message"]
