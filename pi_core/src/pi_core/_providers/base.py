"""Model providers: what the loop asks for an assistant message.

A provider is any object with ``stream(request, abort)`` returning an async iterator of
provider events, pi-ai's assistant message event protocol:

* :class:`StreamStart` ``{"type": "start", "partial"}``: the (empty) partial assistant message;
* :class:`StreamDelta` ``text_start|text_delta|text_end``, ``thinking_*``, ``toolcall_*``:
  ``contentIndex``, ``delta`` (the new text or argument JSON), ``content`` (``*_end``: the
  block's whole text), ``toolCall`` (``toolcall_end``), and the updated ``partial``;
* :class:`StreamDone` ``{"type": "done", "reason", "message"}``: the completed message;
* :class:`StreamError` ``{"type": "error", "reason", "error"}``: the failed message
  (``stopReason`` ``"error"`` or ``"aborted"``, ``errorMessage`` set).

The loop turns ``start`` into ``message_start``, each delta into ``message_update`` and the
final message into ``message_end``. Tool calls are only taken from the final message. A provider
may also raise: the loop then finishes the turn with an assistant message whose ``stopReason`` is
``"error"`` (``"aborted"`` once the run was aborted) and whose ``errorMessage`` is the exception
text (applied to ``run_agent_loop`` as well).

:class:`ScriptedProvider` plays back prepared assistant messages, for tests, ``pi replay`` and
examples.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict

from pi_core._errors import ProviderError
from pi_core._wire.base import WireModel
from pi_core._wire.messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
)

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._tools.definition import AgentTool

ABORTED_ERROR_MESSAGE = "Operation aborted"
"""``errorMessage`` of an assistant message that ended because the run was aborted."""

EMPTY_USAGE: dict[str, Any] = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
"""Pi's zero usage, for assistant messages pi makes up (failures, aborts)."""


@dataclass
class ModelRequest:
    """One model call: ``system_prompt``, ``messages`` (already through ``transform_context``
    and ``convert_to_llm``, ``structuredContent`` removed), ``tools`` (the tools the model may
    call: use ``name``, ``description``, ``parameters``) and free-form ``options``."""

    system_prompt: str
    messages: list[Any]
    tools: Sequence[AgentTool] = ()
    options: dict[str, Any] = field(default_factory=dict)


# The stream events are validated only by a call to a model: built on first use, so a command
# that calls none (``pi call``, ``pi replay``) does not build their validators at start-up.
_DEFERRED = ConfigDict(defer_build=True)


class StreamStart(WireModel):
    """``start``: the stream began; ``partial`` is the assistant message so far."""

    model_config = _DEFERRED

    type: Literal["start"] = "start"
    partial: AssistantMessage


DeltaType = Literal[
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
]


class StreamDelta(WireModel):
    """A content event: which block (``content_index``), the new piece (``delta``), the block's
    final text (``content``, ``*_end``) or call (``tool_call``, ``toolcall_end``), ``partial``."""

    model_config = _DEFERRED

    type: DeltaType
    content_index: int = 0
    delta: str | None = None
    content: str | None = None
    tool_call: ToolCall | None = None
    partial: AssistantMessage


class StreamDone(WireModel):
    """``done``: ``message`` is complete; ``reason`` its stop reason."""

    model_config = _DEFERRED

    type: Literal["done"] = "done"
    reason: StopReason = "stop"
    message: AssistantMessage


class StreamError(WireModel):
    """``error``: the call failed; ``error`` is the final assistant message (``stopReason``
    ``"error"``/``"aborted"``, ``errorMessage`` set)."""

    model_config = _DEFERRED

    type: Literal["error"] = "error"
    reason: StopReason = "error"
    error: AssistantMessage


ProviderEvent = StreamStart | StreamDelta | StreamDone | StreamError
"""Any event a provider stream yields."""


@runtime_checkable
class ModelProvider(Protocol):
    """What the loop calls once per turn.

    ``stream(request, abort)`` returns an async iterator of :data:`ProviderEvent`; ``abort`` is
    the run's :class:`~pi_core._abort.Abort` (or ``None``). The loop reads the stream inside a
    cancel scope linked to the abort, so a provider blocked on the network is cancelled by
    trio; a provider that notices ``abort.aborted`` itself should end with a
    :class:`StreamError` whose message has ``stopReason`` ``"aborted"``.
    """

    def stream(self, request: ModelRequest, abort: Abort | None) -> AsyncIterator[ProviderEvent]:
        """The provider events of one assistant message."""
        ...


def error_message(
    text: str, *, aborted: bool = False, content: list[Any] | None = None
) -> AssistantMessage:
    """The assistant message pi makes up when a model call fails: ``content``
    (default one empty text block), zero usage, ``stopReason`` ``"aborted"`` or ``"error"``,
    ``errorMessage`` ``text``."""
    return AssistantMessage(
        content=content if content is not None else [TextContent(text="")],
        usage=dict(EMPTY_USAGE),
        stop_reason="aborted" if aborted else "error",
        error_message=text,
    )


def stream_events(message: AssistantMessage) -> list[ProviderEvent]:
    """The event stream a streaming provider would produce for ``message``: ``start`` (empty
    partial), then per block ``*_start``, one ``*_delta`` (the text, or the arguments as JSON)
    and ``*_end``, then ``done`` (or ``error`` for ``stopReason`` ``error``/``aborted``)."""
    base = message.model_copy(update={"content": []})
    partial = base.model_copy(update={"content": []})
    events: list[ProviderEvent] = [StreamStart(partial=partial)]
    blocks: list[Any] = []
    for index, block in enumerate(message.content):
        if isinstance(block, TextContent | ThinkingContent):
            kind = "text" if isinstance(block, TextContent) else "thinking"
            text = block.text if isinstance(block, TextContent) else block.thinking
            empty = (
                TextContent(text="")
                if isinstance(block, TextContent)
                else ThinkingContent(thinking="")
            )
            blocks.append(empty)
            events.append(_delta(f"{kind}_start", index, base, blocks))
            blocks[index] = block
            events.append(_delta(f"{kind}_delta", index, base, blocks, delta=text))
            events.append(_delta(f"{kind}_end", index, base, blocks, content=text))
        elif isinstance(block, ToolCall):
            blocks.append(block.model_copy(update={"arguments": {}}))
            events.append(_delta("toolcall_start", index, base, blocks))
            blocks[index] = block
            events.append(
                _delta(
                    "toolcall_delta",
                    index,
                    base,
                    blocks,
                    delta=json.dumps(block.arguments, ensure_ascii=False),
                )
            )
            events.append(_delta("toolcall_end", index, base, blocks, tool_call=block))
        else:
            blocks.append(block)
    if message.stop_reason in ("error", "aborted"):
        events.append(StreamError(reason=message.stop_reason, error=message))
    else:
        events.append(StreamDone(reason=message.stop_reason, message=message))
    return events


def _delta(
    kind: str, index: int, base: AssistantMessage, blocks: list[Any], **fields: Any
) -> StreamDelta:
    partial = base.model_copy(update={"content": list(blocks)})
    return StreamDelta(type=kind, content_index=index, partial=partial, **fields)  # type: ignore[arg-type]


WhenExhausted = Literal["error", "repeat", "stop"]


class ScriptedProvider:
    """Plays back ``messages``, one assistant message per model call (the spec's "mock model").

    * ``requests``: every :class:`ModelRequest` received, in order (``len(requests)`` is the
      number of model calls).
    * ``stream_deltas=False`` (default) yields only ``done``/``error``, so the loop emits just
      ``message_start``/``message_end``; ``True`` yields the full delta stream of
      :func:`stream_events` (``message_update`` events).
    * ``when_exhausted``: after the last message, ``"error"`` raises :class:`ProviderError`
      (``ScriptedProvider has no more messages (N played)``), ``"repeat"`` plays the last
      message again, ``"stop"`` answers an empty ``stopReason: "stop"`` message; an
      ``AssistantMessage`` is played every time.
    * An aborted run (``abort.aborted``) gets an ``aborted`` message (``errorMessage``
      ``Operation aborted``) and consumes no scripted message.

    Each played message is a deep copy, so the loop never shares objects across calls.
    """

    name = "scripted"

    def __init__(
        self,
        messages: Sequence[AssistantMessage | dict[str, Any]],
        *,
        when_exhausted: WhenExhausted | AssistantMessage = "error",
        stream_deltas: bool = False,
    ) -> None:
        self.messages: list[AssistantMessage] = [
            m if isinstance(m, AssistantMessage) else AssistantMessage.model_validate(m)
            for m in messages
        ]
        self.when_exhausted = when_exhausted
        self.stream_deltas = stream_deltas
        self.requests: list[ModelRequest] = []
        self._played = 0

    @property
    def played(self) -> int:
        """How many scripted messages were played so far."""
        return self._played

    def _next(self) -> AssistantMessage:
        if self._played < len(self.messages):
            message = self.messages[self._played]
            self._played += 1
            return message
        if isinstance(self.when_exhausted, AssistantMessage):
            return self.when_exhausted
        if self.when_exhausted == "repeat" and self.messages:
            return self.messages[-1]
        if self.when_exhausted == "stop":
            return AssistantMessage(content=[], stop_reason="stop")
        raise ProviderError(f"ScriptedProvider has no more messages ({self._played} played)")

    async def stream(
        self, request: ModelRequest, abort: Abort | None = None
    ) -> AsyncIterator[ProviderEvent]:
        """Record ``request`` and yield the next scripted message's events."""
        self.requests.append(request)
        if abort is not None and abort.aborted:
            message = error_message(ABORTED_ERROR_MESSAGE, aborted=True, content=[])
        else:
            message = self._next().model_copy(deep=True)
        if self.stream_deltas:
            for event in stream_events(message):
                yield event
        elif message.stop_reason in ("error", "aborted"):
            yield StreamError(reason=message.stop_reason, error=message)
        else:
            yield StreamDone(reason=message.stop_reason, message=message)
