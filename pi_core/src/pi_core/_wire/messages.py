"""Wire types of Pi's tool layer: content blocks, messages, tool results.

The format is described in ``docs/reference/wire-format.md``.

JSON uses Pi's camelCase names (``toolCallId``, ``isError``, ``stopReason``) and omits unset
optional fields. Python attributes are snake_case. Every model keeps unknown JSON fields, so a
Pi session line parses and serialises back with the same structure.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from pi_core._wire.base import WireModel, empty_list

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


class TextContent(WireModel):
    """``{"type": "text", "text": ...}``: model-visible text."""

    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ImageContent(WireModel):
    """``{"type": "image", "data": <base64, no data-URL prefix>, "mimeType": "image/png"}``."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ThinkingContent(WireModel):
    """``{"type": "thinking", "thinking": ...}``: assistant reasoning (assistant messages only)."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class ToolCall(WireModel):
    """``{"type": "toolCall", "id", "name", "arguments"}``: one call the model asked for.

    ``arguments`` is whatever JSON the model produced: untrusted, maybe not even an object.
    ``arguments_error`` (``argumentsError``) is set when the streamed arguments could not be
    parsed (the parser's message); such a call fails validation with
    ``Invalid arguments for tool "<name>": <argumentsError>`` and never runs.
    """

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: Any = Field(default_factory=dict)
    thought_signature: str | None = None
    arguments_error: str | None = None


class OtherContent(WireModel):
    """Any other assistant block type (``finalAnswer``, ...): kept, never executed."""

    type: str


def _block_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "image", "thinking", "toolCall") else "other"


ToolResultContent = Annotated[
    Annotated[TextContent, Tag("text")] | Annotated[ImageContent, Tag("image")],
    Discriminator(lambda v: "image" if _block_tag(v) == "image" else "text"),
]
"""A block a tool result may hold: text or image."""

AssistantContent = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ThinkingContent, Tag("thinking")]
    | Annotated[ToolCall, Tag("toolCall")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[OtherContent, Tag("other")],
    Discriminator(_block_tag),
]
"""A block an assistant message may hold."""

UserContent = ToolResultContent


def now_ms() -> int:
    """Milliseconds since the epoch, as Pi's ``Date.now()`` timestamps."""
    return int(time.time() * 1000)


class UserMessage(WireModel):
    """``{"role": "user", "content": str | [text/image], "timestamp": ms}``."""

    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessage(WireModel):
    """``{"role": "assistant", "content": [...], "stopReason": ...}`` plus provider metadata.

    Tool calls are taken only from a completed assistant message.
    """

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=empty_list)
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The ``toolCall`` blocks in source order."""
        return [b for b in self.content if isinstance(b, ToolCall)]

    @property
    def text(self) -> str:
        """The text blocks joined, for display."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class ToolResultMessage(WireModel):
    """``{"role": "toolResult", "toolCallId", "toolName", "content", "isError", "timestamp"}``.

    ``details`` (host metadata) and ``usage`` (the tool's own usage, plus its nested calls')
    appear only when set; ``nestedCalls`` only when the tool called tools. ``structuredContent``
    is never set by the loop (Pi 1.6.0 keeps it off the message); the field only keeps what an
    older session line carried.
    """

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = Field(default_factory=empty_list)
    details: Any = None
    is_error: bool = False
    usage: dict[str, Any] | None = None
    structured_content: Any = None
    timestamp: int = Field(default_factory=now_ms)
    nested_calls: dict[str, Any] | None = None
    """``nestedCalls``: the bounded record of the calls the tool made through ``execute_tool``
    (``{"calls": [{"id", "name", "status", "arguments"|"argumentsBytes", "durationMs",
    "error"?}], "complete"}``); kept for the session record, never sent to the model."""

    @property
    def text(self) -> str:
        """Text blocks joined by newlines (what the cases runner compares)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class SystemMessage(WireModel):
    """``{"role": "system", "content": str | [text], "toolsAdded"?, "toolsRemoved"?,
    "timestamp"}``: Pi 1.6's system message. The loop writes one (``content: ""``) before a
    model request whenever the declared tools changed: ``toolsAdded`` holds the full
    declarations ``{name, description, parameters, constrainedSampling?}`` of new or changed
    tools, ``toolsRemoved`` ``{name}`` of tools gone or changed. Replaying the system
    messages of a transcript in order (:func:`current_tools`) gives the tools the model had.
    """

    role: Literal["system"] = "system"
    content: str | list[TextContent] = ""
    sections: dict[str, Any] | None = None
    tools_added: list[dict[str, Any]] | None = None
    tools_removed: list[dict[str, Any]] | None = None
    timestamp: int = Field(default_factory=now_ms)


def current_tools(messages: Any) -> list[dict[str, Any]]:
    """Pi's ``getCurrentTools``: the tool declarations after the system messages of
    ``messages`` in order (per message, first drop ``toolsRemoved``, then set ``toolsAdded``
    by name, as a JS ``Map``: a tool both removed and added moves to the end)."""
    tools: dict[str, dict[str, Any]] = {}
    for message in messages:
        if getattr(message, "role", None) != "system":
            continue
        for removed in getattr(message, "tools_removed", None) or []:
            tools.pop(removed.get("name"), None)
        for added in getattr(message, "tools_added", None) or []:
            tools[added.get("name")] = added
    return list(tools.values())


class CustomMessage(WireModel):
    """A host message of any other role; ``convert_to_llm`` decides whether the model sees it."""

    role: str


def _message_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if role in ("user", "assistant", "toolResult", "system") else "custom"


AgentMessage = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[SystemMessage, Tag("system")]
    | Annotated[CustomMessage, Tag("custom")],
    Discriminator(_message_tag),
]
"""Any message of a context, discriminated by ``role``."""


class AgentToolResult(WireModel):
    """What a tool's ``execute`` returns and what hooks see.

    Fields: ``content`` (model-visible text/image blocks), ``details`` (host/UI metadata),
    ``usage`` (the tool's own usage), ``terminate`` (skip the follow-up model call when every
    result of the batch says so), ``is_error`` (report failure without raising) and
    ``structured_content`` (program-facing JSON, never sent to the model).
    """

    content: list[ToolResultContent] = Field(default_factory=empty_list)
    details: Any = None
    usage: dict[str, Any] | None = None
    terminate: bool | None = None
    is_error: bool | None = None
    structured_content: Any = None

    @classmethod
    def error(cls, text: str) -> AgentToolResult:
        """The loop's error result: one text block and ``details: {}``."""
        return cls(content=[TextContent(text=text)], details={})

    @property
    def text(self) -> str:
        """Text blocks joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


__all__ = [
    "AgentMessage",
    "AgentToolResult",
    "AssistantContent",
    "AssistantMessage",
    "CustomMessage",
    "ImageContent",
    "OtherContent",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultContent",
    "ToolResultMessage",
    "UserContent",
    "UserMessage",
    "current_tools",
    "now_ms",
]
