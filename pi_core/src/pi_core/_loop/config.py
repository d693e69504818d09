"""The loop's configuration: plain callbacks, no pluggy.

The plugin layer (:mod:`pi_core._plugins.facade`) composes hook implementations into these callbacks; a
program can also set them directly. Every callback is ``async``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pi_core._checkpoints.recorder import SessionCheckpoints
    from pi_core._pipeline.config import (
        AfterToolCall,
        AgentContext,
        BeforeToolCall,
        PrepareArguments,
    )
    from pi_core._providers.base import ModelProvider
    from pi_core._tools.exposure import ToolSet
    from pi_core._wire.messages import ToolResultMessage


@dataclass
class TurnInfo:
    """What ``should_stop_after_turn`` and ``prepare_next_turn`` get after each turn."""

    message: Any
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[Any]


@dataclass
class LoopConfig:
    """How ``run_agent_loop`` runs.

    * ``provider``: the model (:class:`~pi_core._providers.base.ModelProvider`).
    * ``tool_execution``: ``"parallel"`` (default) or ``"sequential"``.
    * ``max_parallel_tools``: cap on concurrently executing tools (``None``: no cap).
    * ``prepare_arguments(tool_name, args) -> args | None``: after the tool's own
      ``prepare_arguments``, before validation (the ``pi_prepare_arguments`` chain).
    * ``before_tool_call(ctx) -> BeforeToolCallResult | None`` and
      ``after_tool_call(ctx) -> AfterToolCallResult | None``: the policy and rewrite steps.
    * ``convert_to_llm(messages) -> messages``; ``transform_context(messages) -> messages``.
    * ``get_steering_messages()`` / ``get_follow_up_messages()`` -> list of messages.
    * ``should_stop_after_turn(info) -> bool``; ``prepare_next_turn(info) -> dict | None``
      (keys ``context``, ``provider``).
    * ``tool_set``: the session's :class:`~pi_core._tools.exposure.ToolSet`; when set, the
      loop takes the active tools from it before every model request (so ``tool_search`` can
      load tools for the next call) instead of ``context.tools``.
    * ``declare_tool_changes``: before every model request, write a system message with
      ``toolsAdded``/``toolsRemoved`` when the declared tools changed (Pi 1.6). Off by
      default here; sessions (``Session.loop_config``, the ``pi`` commands) turn it on.
    * ``checkpoints``: the session's checkpoint recorder
      (:class:`~pi_core._checkpoints.recorder.SessionCheckpoints`, ``None``: none): each call
      of a tool that declares ``mutates`` is recorded, and the loop marks each turn's start.
    """

    provider: ModelProvider | None = None
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    max_parallel_tools: int | None = None
    prepare_arguments: PrepareArguments | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    convert_to_llm: Callable[[list[Any]], Awaitable[list[Any]]] | None = None
    transform_context: Callable[[list[Any]], Awaitable[list[Any]]] | None = None
    get_steering_messages: Callable[[], Awaitable[list[Any]]] | None = None
    get_follow_up_messages: Callable[[], Awaitable[list[Any]]] | None = None
    should_stop_after_turn: Callable[[TurnInfo], Awaitable[bool]] | None = None
    prepare_next_turn: Callable[[TurnInfo], Awaitable[dict[str, Any] | None]] | None = None
    tool_set: ToolSet | None = None
    declare_tool_changes: bool = False
    checkpoints: SessionCheckpoints | None = None


__all__ = ["LoopConfig", "TurnInfo"]
