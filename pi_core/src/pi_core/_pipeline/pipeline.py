"""The tool pipeline: one tool call, from look-up to final result.

Per tool call, in order: look the tool up by exact name (``Tool {name} not found``) →
``tool.prepare_arguments(raw)`` → ``config.prepare_arguments(name, args)`` (``None`` keeps them)
→ :func:`~pi_core._tools.validation.validate_tool_arguments` → ``config.before_tool_call`` (a
block gives ``reason`` or ``Tool execution was blocked``) → ``tool.execute(id, args, on_update)``
→ ``config.after_tool_call`` merged field by field. Every failure, at any step, becomes an error
tool result whose text is the exception's message; ``execute`` and the hooks never crash the run.

The loop (:mod:`pi_core._loop.loop`) schedules these steps for a batch of calls; a tool that calls
another tool goes through :func:`run_tool_call` or :func:`run_nested_tool_call`, so hooks and
policies see nested calls exactly as direct ones. This module knows nothing of pluggy: hooks reach
it as the plain callbacks of :class:`~pi_core._loop.config.LoopConfig` (read through
:class:`~pi_core._pipeline.config.PipelineConfig`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import trio

from pi_core._abort import Abort, linked_scope
from pi_core._backend_kit.mutation_queue import observe_mutations
from pi_core._checkpoints.recorder import CallRecord, SessionCheckpoints
from pi_core._errors import ToolAborted
from pi_core._pipeline.config import AgentContext, EventSink, PipelineConfig
from pi_core._pipeline.contexts import (
    AfterToolCallContext,
    BeforeToolCallContext,
    apply_after_tool_call_result,
)
from pi_core._pipeline.outcome import ToolCallOutcome
from pi_core._pipeline.tool_context import (
    NOT_AVAILABLE_TEXT,
    ToolCallContext,
    bind_tool_context,
    unbind_tool_context,
)
from pi_core._tools.definition import AgentTool, OnUpdate, result_from_value
from pi_core._tools.validation import validate_tool_arguments
from pi_core._wire.events import (
    AgentEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_core._wire.messages import AgentToolResult, AssistantMessage, ToolCall

ABORTED_TEXT = "Operation aborted"
"""Error text of a call stopped by an abort (preflight, or cancelled without a partial)."""

BLOCKED_TEXT = "Tool execution was blocked"
"""Error text of a call a ``before_tool_call`` blocked without a reason."""

NOT_FOUND_TEXT = "Tool {name} not found"
"""Error text of a call naming no registered tool (exact, case-sensitive lookup)."""

INVALID_ARGUMENTS_TEXT = 'Invalid arguments for tool "{name}": {error}'
"""Error text of a call whose arguments the provider could not parse (``argumentsError``)."""


@dataclass
class PreparedCall:
    tool_call: ToolCall
    tool: AgentTool
    args: Any
    parent_tool_call_id: str | None = None
    checkpoints: SessionCheckpoints | None = None
    """The session's recorder when checkpoints are on (``config.checkpoints``)."""


def error_text(exc: BaseException) -> str:
    """The exception's message; its class name when the message is empty."""
    text = str(exc)
    return text if text else type(exc).__name__


def error_outcome(tool_call: ToolCall, text: str) -> ToolCallOutcome:
    return ToolCallOutcome(tool_call, AgentToolResult.error(text), True)


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _coerce_result(value: Any) -> AgentToolResult:
    """What ``execute`` returned, as an AgentToolResult (a dict is validated as one)."""
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, dict):
        return AgentToolResult.model_validate(value)
    return result_from_value(value)


def find_tool(tools: Sequence[AgentTool], name: str) -> AgentTool | None:
    for candidate in tools:
        if candidate.name == name:
            return candidate
    return None


class _NoNestedCalls:
    """The nested calls of a call no loop run owns: none (``Nested tool calls are not
    available in this context``, id ``<caller id>/0``, no event)."""

    def callable_tools(self) -> list[AgentTool]:
        return []

    async def execute(
        self,
        caller: ToolCallContext,
        name: str,
        args: Any,
        on_update: OnUpdate | None,
        end_after: trio.Event | None = None,
        entered: trio.Event | None = None,
    ) -> ToolCallOutcome:
        tool_call = ToolCall(id=f"{caller.tool_call_id}/0", name=name, arguments={})
        if entered is not None:
            entered.set()
        return error_outcome(tool_call, NOT_AVAILABLE_TEXT)


NO_NESTED_CALLS = _NoNestedCalls()


# ---------------------------------------------------------------------------------------------
# One call: prepare (preflight), execute, finalize
# ---------------------------------------------------------------------------------------------


async def prepare_call(
    tool_call: ToolCall,
    context: AgentContext,
    assistant_message: AssistantMessage,
    config: PipelineConfig,
    abort: Abort | None,
    parent_tool_call_id: str | None = None,
) -> PreparedCall | ToolCallOutcome:
    """The prepared call, or its immediate (error) outcome."""
    tool = find_tool(context.tools, tool_call.name)
    if tool is None:
        return error_outcome(tool_call, NOT_FOUND_TEXT.format(name=tool_call.name))
    try:
        arguments = tool_call.arguments
        if tool.prepare_arguments is not None:
            arguments = await maybe_await(tool.prepare_arguments(arguments))
        if config.prepare_arguments is not None:
            prepared = await maybe_await(config.prepare_arguments(tool.name, arguments))
            if prepared is not None:
                arguments = prepared
        if tool_call.arguments_error is not None:  # streamed arguments that were not JSON
            return error_outcome(
                tool_call,
                INVALID_ARGUMENTS_TEXT.format(name=tool_call.name, error=tool_call.arguments_error),
            )
        args = validate_tool_arguments(tool, arguments)
        if config.before_tool_call is not None:
            before_context = BeforeToolCallContext(
                tool_call=tool_call,
                args=args,
                tool=tool,
                assistant_message=assistant_message,
                context=context,
                parent_tool_call_id=parent_tool_call_id,
            )
            before = await maybe_await(config.before_tool_call(before_context))
            if abort is not None and abort.aborted:
                return error_outcome(tool_call, ABORTED_TEXT)
            if before is not None and before.block:
                result = AgentToolResult.error(before.reason or BLOCKED_TEXT)
                if before.terminate is True:
                    result.terminate = True
                return ToolCallOutcome(tool_call, result, True)
            args = before_context.args
    except Exception as exc:
        return error_outcome(tool_call, error_text(exc))
    if abort is not None and abort.aborted:
        return error_outcome(tool_call, ABORTED_TEXT)
    return PreparedCall(
        tool_call, tool, args, parent_tool_call_id, getattr(config, "checkpoints", None)
    )


async def _execute(prepared: PreparedCall, update: OnUpdate, ready: trio.Event | None) -> Any:
    """``tool.execute``, checkpointed when the session records checkpoints and the tool
    declares ``mutates``: the recorder looks before (a failure to record is the call's error:
    it does not run) and, shielded, after; the mutation queue reports the call's file changes
    to it (``mutates="paths"``). ``ready`` is set just before ``execute`` is entered: the look
    before is part of entering, so the next call of a batch starts after it, as it would
    without checkpoints (the order of a batch's events does not depend on them)."""
    tool = prepared.tool
    checkpoints = prepared.checkpoints
    record: CallRecord | None = None
    if checkpoints is not None:
        record = checkpoints.open_call(
            prepared.tool_call.id,
            tool.name,
            prepared.parent_tool_call_id,
            tool.mutates,
            prepared.args,
            tool.path_arguments,
        )
    if record is None or checkpoints is None:
        if ready is not None:
            ready.set()
        return await tool.execute(prepared.tool_call.id, prepared.args, update)
    await checkpoints.before_call(record)
    if ready is not None:
        ready.set()
    token = checkpoints.bind(record)
    try:
        with observe_mutations(checkpoints if record.mutates == "paths" else None):
            return await tool.execute(prepared.tool_call.id, prepared.args, update)
    finally:
        checkpoints.unbind(token)
        with trio.CancelScope(shield=True):
            await checkpoints.after_call(record)


async def execute_call(
    prepared: PreparedCall,
    abort: Abort | None,
    limiter: trio.CapacityLimiter | None,
    on_update: OnUpdate | None,
    previous: trio.Event | None = None,
    ready: trio.Event | None = None,
    tool_context: ToolCallContext | None = None,
) -> tuple[AgentToolResult, bool]:
    """Run ``execute`` in a cancel scope linked to ``abort``; never raises Exception.

    ``previous``/``ready`` chain the calls of a batch so ``execute`` is entered in source order
    (as ``Promise.all`` over the deferred tasks does): this call waits for ``previous`` and
    sets ``ready`` just before entering ``execute``, after the checkpoint's look before it
    (or when it gives up).

    ``tool_context`` is what :func:`~pi_core._pipeline.nested.current_tool_context` gives the
    tool while ``execute`` runs (default: a context whose nested calls are not available)."""
    accepting = True
    token = bind_tool_context(
        tool_context
        or ToolCallContext(prepared.tool_call.id, prepared.parent_tool_call_id, NO_NESTED_CALLS)
    )

    def update(partial: AgentToolResult) -> None:
        if accepting and on_update is not None:
            on_update(partial)

    raw: Any = None
    try:
        with linked_scope(abort) as scope:
            if previous is not None:
                await previous.wait()
            if limiter is not None:
                async with limiter:
                    await trio.lowlevel.checkpoint_if_cancelled()
                    raw = await _execute(prepared, update, ready)
            else:
                await trio.lowlevel.checkpoint_if_cancelled()
                raw = await _execute(prepared, update, ready)
        if scope.cancelled_caught:
            return AgentToolResult.error(ABORTED_TEXT), True
        result = _coerce_result(raw)
        return result, result.is_error is True
    except ToolAborted as exc:
        try:
            return _coerce_result(exc.partial_result), True
        except Exception as bad:
            return AgentToolResult.error(error_text(bad)), True
    except Exception as exc:
        return AgentToolResult.error(error_text(exc)), True
    finally:
        accepting = False
        unbind_tool_context(token)
        if ready is not None:
            ready.set()


async def finalize_call(
    prepared: PreparedCall,
    result: AgentToolResult,
    is_error: bool,
    context: AgentContext,
    assistant_message: AssistantMessage,
    config: PipelineConfig,
) -> ToolCallOutcome:
    """``after_tool_call`` merged field by field; its exception replaces the result."""
    if config.after_tool_call is not None:
        try:
            after_context = AfterToolCallContext(
                tool_call=prepared.tool_call,
                args=prepared.args,
                tool=prepared.tool,
                assistant_message=assistant_message,
                context=context,
                result=result,
                is_error=is_error,
                parent_tool_call_id=prepared.parent_tool_call_id,
            )
            override = await maybe_await(config.after_tool_call(after_context))
            result, is_error = apply_after_tool_call_result(result, is_error, override)
        except Exception as exc:
            result, is_error = AgentToolResult.error(error_text(exc)), True
    return ToolCallOutcome(prepared.tool_call, result, is_error)


async def run_tool_call(
    tool_call: ToolCall,
    context: AgentContext,
    config: PipelineConfig,
    *,
    assistant_message: AssistantMessage | None = None,
    abort: Abort | None = None,
    on_update: OnUpdate | None = None,
    parent_tool_call_id: str | None = None,
    tool_context: ToolCallContext | None = None,
    entered: trio.Event | None = None,
) -> ToolCallOutcome:
    """One call through the whole pipeline, emitting no events and appending no messages
    (``docs/explanation/pipeline.md``): look-up, ``prepare_arguments`` (tool, then config),
    validation, ``before_tool_call``, ``execute`` (in a cancel scope linked to ``abort``),
    ``after_tool_call``.

    ``assistant_message`` is what the hooks see as the message that asked for the call (default:
    a ``toolUse`` message holding just ``tool_call``). ``on_update(partial)`` receives the tool's
    progress until ``execute`` settles. Returns the :class:`ToolCallOutcome`; never raises for a
    failure of the call itself (``config.max_parallel_tools`` does not apply).

    ``parent_tool_call_id`` is what the hook contexts carry for a nested call; ``tool_context``
    what :func:`~pi_core._pipeline.nested.current_tool_context` gives the tool (default: nested
    calls are not available, as no loop run owns this call; :func:`~pi_core.nested_calls_context`
    makes one that lets them run).

    ``entered`` is set just before ``execute`` is entered (after the hooks before it and the
    checkpoint's look), or when the call gives up before it.
    """
    message = assistant_message or AssistantMessage(content=[tool_call], stop_reason="toolUse")
    preparation = await prepare_call(
        tool_call, context, message, config, abort, parent_tool_call_id
    )
    if isinstance(preparation, ToolCallOutcome):
        if entered is not None:
            entered.set()
        return preparation
    result, is_error = await execute_call(
        preparation, abort, None, on_update, ready=entered, tool_context=tool_context
    )
    return await finalize_call(preparation, result, is_error, context, message, config)


async def run_nested_tool_call(
    tool_call: ToolCall,
    context: AgentContext,
    config: PipelineConfig,
    emit: EventSink,
    *,
    parent_tool_call_id: str,
    assistant_message: AssistantMessage | None = None,
    abort: Abort | None = None,
) -> ToolCallOutcome:
    """A call made by another tool (a script calling ``bash``): :func:`run_tool_call`, plus
    ``tool_execution_start``/``_update``/``_end`` events carrying ``parent_tool_call_id``
    (seed "nested calls"). No message events and no turn: the caller folds the outcome (and its
    usage) into the outer call's own result.
    """
    await emit(
        ToolExecutionStartEvent(
            tool_call_id=tool_call.id,
            tool_name=tool_call.name,
            args=tool_call.arguments,
            parent_tool_call_id=parent_tool_call_id,
        )
    )
    send, receive = trio.open_memory_channel[AgentEvent](math.inf)
    outcome: ToolCallOutcome | None = None

    async def pump() -> None:
        async with receive:
            async for event in receive:
                await emit(event)

    def on_update(partial: AgentToolResult) -> None:
        send.send_nowait(
            ToolExecutionUpdateEvent(
                tool_call_id=tool_call.id,
                tool_name=tool_call.name,
                args=tool_call.arguments,
                partial_result=partial,
                parent_tool_call_id=parent_tool_call_id,
            )
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump)
        async with send:
            outcome = await run_tool_call(
                tool_call,
                context,
                config,
                assistant_message=assistant_message,
                abort=abort,
                on_update=on_update,
                parent_tool_call_id=parent_tool_call_id,
            )
    await emit(
        ToolExecutionEndEvent(
            tool_call_id=tool_call.id,
            tool_name=tool_call.name,
            result=outcome.result,
            is_error=outcome.is_error,
            parent_tool_call_id=parent_tool_call_id,
        )
    )
    return outcome


__all__ = [
    "ABORTED_TEXT",
    "BLOCKED_TEXT",
    "NOT_FOUND_TEXT",
    "PreparedCall",
    "error_outcome",
    "error_text",
    "execute_call",
    "finalize_call",
    "find_tool",
    "maybe_await",
    "prepare_call",
    "run_nested_tool_call",
    "run_tool_call",
]
