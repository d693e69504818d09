"""What a tool call reads of the run it belongs to: plain callbacks, no pluggy.

The loop's configuration (:class:`~pi_core._loop.config.LoopConfig`) holds these callbacks; the
plugin layer (:mod:`pi_core._plugins.facade`) composes hook implementations into them, and a
program can also set them directly. Every callback is ``async``. The pipeline reads a
configuration through :class:`PipelineConfig`, so it depends on no floor above its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from pi_core._checkpoints.recorder import SessionCheckpoints
    from pi_core._pipeline.contexts import (
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCallContext,
        BeforeToolCallResult,
    )
    from pi_core._tools.definition import AgentTool
    from pi_core._tools.exposure import ToolSet
    from pi_core._wire.events import AgentEvent

EventSink = Callable[["AgentEvent"], Awaitable[None]]
PrepareArguments = Callable[[str, Any], Awaitable[Any]]
BeforeToolCall = Callable[["BeforeToolCallContext"], Awaitable["BeforeToolCallResult | None"]]
AfterToolCall = Callable[["AfterToolCallContext"], Awaitable["AfterToolCallResult | None"]]


@dataclass
class AgentContext:
    """The loop's working context: ``system_prompt``, ``messages``, ``tools``."""

    system_prompt: str = ""
    messages: list[Any] = field(default_factory=list)
    tools: Sequence[AgentTool] = ()


class PipelineConfig(Protocol):
    """What a tool call and its nested calls read of the run's configuration: a
    :class:`~pi_core._loop.config.LoopConfig` (whose fields these are) or any object with these
    attributes."""

    @property
    def prepare_arguments(self) -> PrepareArguments | None: ...

    @property
    def before_tool_call(self) -> BeforeToolCall | None: ...

    @property
    def after_tool_call(self) -> AfterToolCall | None: ...

    @property
    def tool_execution(self) -> Literal["parallel", "sequential"]: ...

    @property
    def tool_set(self) -> ToolSet | None: ...

    @property
    def checkpoints(self) -> SessionCheckpoints | None: ...


__all__ = [
    "AfterToolCall",
    "AgentContext",
    "BeforeToolCall",
    "EventSink",
    "PipelineConfig",
    "PrepareArguments",
]
