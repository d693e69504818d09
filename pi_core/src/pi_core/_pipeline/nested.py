"""Nested tool calls: a tool calling another tool (Pi 1.6.0 ``ctx.executeTool``).

Inside its ``execute``, any tool reaches the call it runs for through
:func:`~pi_core._pipeline.tool_context.current_tool_context`. Its
:meth:`~pi_core._pipeline.tool_context.ToolCallContext.execute_tool` runs a complete pipeline
call (``prepare_arguments``, ``pi_prepare_arguments``, validation, ``pi_before_tool_call``, ``execute``,
``pi_after_tool_call``) and returns the :class:`~pi_core._pipeline.outcome.ToolCallOutcome`;
it never raises for a failure of the nested call (``docs/how-to/call-a-tool-from-a-tool.md``).

The loop owns one :class:`NestedCallRunner` per run: ids ``<caller id>/<n>`` (``n`` from 1 per
caller), ``tool_execution_*`` events with ``parent_tool_call_id``, the sequential nesting queue
and the bounded ``nestedCalls`` record of each model-issued call (:class:`NestedCallRecorder`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from pi_core._pipeline.outcome import ToolCallOutcome
from pi_core._pipeline.pipeline import ABORTED_TEXT, find_tool, run_tool_call
from pi_core._pipeline.tool_context import ToolCallContext
from pi_core._wire.events import (
    AgentEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_core._wire.messages import AgentToolResult, AssistantMessage, TextContent, ToolCall

if TYPE_CHECKING:
    from pi_core._abort import Abort
    from pi_core._pipeline.config import AgentContext, PipelineConfig
    from pi_core._tools.definition import AgentTool, OnUpdate

NO_ASSISTANT_MESSAGE_TEXT = "No assistant message issued this call"
"""Error text of a nested call when the transcript holds no assistant message."""

MAX_CALLS = 256
MAX_ARGUMENT_BYTES_PER_CALL = 8192
MAX_ARGUMENT_BYTES_TOTAL = 32768
MAX_ERROR_CHARS = 500
"""``NESTED_CALL_LIMITS`` of Pi 1.6.0: calls recorded per model-issued call, UTF-8 bytes of the
JSON arguments kept per call and in total, UTF-16 units of an error text."""


def callable_tools(tools: Sequence[AgentTool]) -> list[AgentTool]:
    """The tools a nested call may reach among the run's active ``tools`` when the run has no
    :class:`~pi_core._tools.exposure.ToolSet`: those whose exposure is ``direct``,
    ``codemode`` or ``deferred`` (never ``model-only`` or ``hidden``). With a tool set
    (``LoopConfig.tool_set``) the callable set is :meth:`ToolSet.callable_tools`."""
    return [t for t in tools if t.exposure in ("direct", "codemode", "deferred")]


# ---------------------------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------------------------


def _utf16_prefix(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text`` (JavaScript's ``slice(0, units)``)
    without the half of a pair the cut splits; a lone surrogate becomes U+FFFD."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    head = encoded[: 2 * units]
    if len(head) < len(encoded) and head and 0xD8 <= head[-1] <= 0xDB:
        head = head[:-2]  # a high surrogate cut from its low one
    return head.decode("utf-16-le", "replace")


def combine_usage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Pi's ``combineUsage``: numbers added field by field (a missing one counts 0), objects
    (``cost``) combined the same way, booleans (``totalFromProvider``) true only when both
    are; keys present on either side are kept, in ``a``'s order then ``b``'s."""
    out: dict[str, Any] = {}
    for key in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(key), b.get(key)
        if isinstance(x, bool) or isinstance(y, bool):
            out[key] = x is True and y is True
        elif isinstance(x, dict) or isinstance(y, dict):
            out[key] = combine_usage(
                x if isinstance(x, dict) else {}, y if isinstance(y, dict) else {}
            )
        elif isinstance(x, int | float) or isinstance(y, int | float):
            out[key] = (x if isinstance(x, int | float) else 0) + (
                y if isinstance(y, int | float) else 0
            )
        else:
            out[key] = x if key in a else y
    return out


class NestedCallRecorder:
    """The ``nestedCalls`` record of one model-issued call, shared by all its descendants
    (limits :data:`MAX_CALLS`, :data:`MAX_ARGUMENT_BYTES_PER_CALL`,
    :data:`MAX_ARGUMENT_BYTES_TOTAL`, :data:`MAX_ERROR_CHARS`)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.complete = True
        self.attempted = False
        self.argument_bytes = 0
        self.usage: dict[str, Any] | None = None

    def start(self, tool_call: ToolCall) -> dict[str, Any] | None:
        """Record ``tool_call`` as ``unfinished``; ``None`` when :data:`MAX_CALLS` calls are
        recorded already (the call is dropped and the record is no longer complete)."""
        self.attempted = True
        if len(self.calls) >= MAX_CALLS:
            self.complete = False
            return None
        entry: dict[str, Any] = {"id": tool_call.id, "name": tool_call.name, "status": "unfinished"}
        arguments = tool_call.arguments if tool_call.arguments is not None else {}
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
        size = len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate: 3 bytes, as Node
        if (
            size > MAX_ARGUMENT_BYTES_PER_CALL
            or self.argument_bytes + size > MAX_ARGUMENT_BYTES_TOTAL
        ):
            entry["argumentsBytes"] = size
            self.complete = False
        else:
            entry["arguments"] = json.loads(text)
            self.argument_bytes += size
        self.calls.append(entry)
        return entry

    def finish(
        self, entry: dict[str, Any] | None, outcome: ToolCallOutcome, duration_ms: int
    ) -> None:
        """Set the entry's ``status``, ``durationMs`` and (errors with text) ``error``; add the
        result's ``usage`` (also for a dropped call)."""
        usage = outcome.result.usage
        if isinstance(usage, dict):
            self.usage = usage if self.usage is None else combine_usage(self.usage, usage)
        if entry is None:
            return
        entry["status"] = "error" if outcome.is_error else "ok"
        entry["durationMs"] = duration_ms
        if outcome.is_error:
            text = "\n".join(
                b.text for b in outcome.result.content or [] if isinstance(b, TextContent)
            )
            if text:
                entry["error"] = _utf16_prefix(text, MAX_ERROR_CHARS)

    def snapshot(self) -> dict[str, Any] | None:
        """``{"calls": [...], "complete": bool}``, or ``None`` when no call was attempted."""
        if not self.attempted:
            return None
        complete = self.complete and all(c["status"] != "unfinished" for c in self.calls)
        return {"calls": [dict(c) for c in self.calls], "complete": complete}


# ---------------------------------------------------------------------------------------------
# The context a tool sees
# ---------------------------------------------------------------------------------------------


@dataclass
class _Scope:
    """A caller's nesting state: the record it adds to, whether it holds the sequential
    queue, the ``n`` of its next nested call."""

    recorder: NestedCallRecorder
    holds_queue: bool = False
    next_id: int = 1


class _SequentialQueue:
    """Pi's sequential nesting queue: exclusive calls run one at a time, in the order they
    were *registered* (:meth:`ticket`, taken with the call's id and start event), not the order
    their tasks reach the queue (trio runs new tasks in any order). A ticket whose call is
    cancelled before its turn is skipped."""

    def __init__(self) -> None:
        self._issued = 0
        self._serving = 0
        self._abandoned: set[int] = set()
        self._lot = trio.lowlevel.ParkingLot()

    def ticket(self) -> int:
        self._issued += 1
        return self._issued - 1

    def serving(self, ticket: int) -> bool:
        """Whether it is ``ticket``'s turn."""
        return self._serving == ticket

    async def wait(self, ticket: int) -> None:
        """Until it is ``ticket``'s turn; then :meth:`release` it when the call is done."""
        try:
            while self._serving != ticket:
                await self._lot.park()
        except BaseException:
            self.abandon(ticket)
            raise

    def abandon(self, ticket: int) -> None:
        """Give up ``ticket`` (its call never ran)."""
        if self._serving == ticket:
            self.release(ticket)
        else:
            self._abandoned.add(ticket)

    def release(self, ticket: int) -> None:
        assert self._serving == ticket
        self._serving += 1
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1
        self._lot.unpark_all()


# ---------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------


class NestedCallRunner:
    """Nested calls of one loop run: scopes per caller, the records of the model-issued calls,
    the sequential queue. ``send(event)`` hands events to the loop's emitting task (never
    blocks)."""

    def __init__(
        self,
        context: AgentContext,
        config: PipelineConfig,
        abort: Abort | None,
    ) -> None:
        self.context = context
        self.config = config
        self.abort = abort
        self._queue = _SequentialQueue()
        self._records: dict[str, NestedCallRecorder] = {}

    def root_context(
        self, tool_call_id: str, send: Callable[[AgentEvent], None]
    ) -> ToolCallContext:
        """The context of a model-issued call; its events go through ``send``."""
        recorder = self._records.setdefault(tool_call_id, NestedCallRecorder())
        return ToolCallContext(tool_call_id, None, self, _Scope(recorder), send)

    def take_record(self, tool_call_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """``(nestedCalls snapshot, summed usage)`` of a model-issued call, forgetting it."""
        recorder = self._records.pop(tool_call_id, None)
        if recorder is None:
            return None, None
        return recorder.snapshot(), recorder.usage

    def callable_tools(self) -> list[AgentTool]:
        """Pi's callable set: the session's (``config.tool_set``), else from the active tools."""
        if self.config.tool_set is not None:
            return self.config.tool_set.callable_tools()
        return callable_tools(self.context.tools)

    def _last_assistant_message(self) -> AssistantMessage | None:
        for message in reversed(self.context.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    async def execute(
        self,
        caller: ToolCallContext,
        name: str,
        args: Any,
        on_update: OnUpdate | None,
        end_after: trio.Event | None = None,
        entered: trio.Event | None = None,
    ) -> ToolCallOutcome:
        """Run one nested call for ``caller`` (:meth:`ToolCallContext.execute_tool`)."""
        scope, send = caller._scope, caller._send
        assert scope is not None and send is not None
        tool_call = ToolCall(
            id=f"{caller.tool_call_id}/{scope.next_id}",
            name=name,
            arguments=args if args is not None else {},
        )
        scope.next_id += 1
        parent_id = caller.tool_call_id
        entry = scope.recorder.start(tool_call)
        send(
            ToolExecutionStartEvent(
                tool_call_id=tool_call.id,
                tool_name=tool_call.name,
                args=tool_call.arguments,
                parent_tool_call_id=parent_id,
            )
        )
        tools = self.callable_tools()
        target = find_tool(tools, name)
        exclusive = not scope.holds_queue and (
            self.config.tool_execution == "sequential"
            or (target is not None and target.execution_mode == "sequential")
        )
        ticket = self._queue.ticket() if exclusive else None
        child_scope = _Scope(scope.recorder, scope.holds_queue or exclusive)
        child = ToolCallContext(tool_call.id, parent_id, self, child_scope, send)

        def update(partial: AgentToolResult) -> None:
            if on_update is not None:
                on_update(partial)
            send(
                ToolExecutionUpdateEvent(
                    tool_call_id=tool_call.id,
                    tool_name=tool_call.name,
                    args=tool_call.arguments,
                    partial_result=partial,
                    parent_tool_call_id=parent_id,
                )
            )

        started = time.perf_counter()
        duration_ms: int | None = None
        outcome: ToolCallOutcome | None = None
        try:
            if ticket is not None:
                if entered is not None and not self._queue.serving(ticket):
                    entered.set()  # waiting its turn is a wait
                await self._queue.wait(ticket)
            try:
                message = self._last_assistant_message()
                if message is None:
                    ready = ToolCallOutcome(
                        tool_call, AgentToolResult.error(NO_ASSISTANT_MESSAGE_TEXT), True
                    )
                else:
                    ready = await run_tool_call(
                        tool_call,
                        _with_tools(self.context, tools),
                        self.config,
                        assistant_message=message,
                        abort=self.abort,
                        on_update=update,
                        parent_tool_call_id=parent_id,
                        tool_context=child,
                        entered=entered,
                    )
                if end_after is not None:
                    duration_ms = round((time.perf_counter() - started) * 1000)
                    await end_after.wait()  # cancelled here: the caller never saw it end
                outcome = ready
            finally:
                if ticket is not None:
                    self._queue.release(ticket)
        finally:
            if entered is not None:
                entered.set()
            if outcome is None:  # cancelled with its caller: the nested call reports an abort
                outcome = ToolCallOutcome(tool_call, AgentToolResult.error(ABORTED_TEXT), True)
            if duration_ms is None:
                duration_ms = round((time.perf_counter() - started) * 1000)
            scope.recorder.finish(entry, outcome, duration_ms)
            send(
                ToolExecutionEndEvent(
                    tool_call_id=tool_call.id,
                    tool_name=tool_call.name,
                    result=outcome.result,
                    is_error=outcome.is_error,
                    parent_tool_call_id=parent_id,
                )
            )
        return outcome


def nested_calls_context(
    tool_call: ToolCall, context: AgentContext, config: PipelineConfig, abort: Abort | None = None
) -> ToolCallContext:
    """The ``tool_context`` that lets ``run_tool_call(tool_call, context, config,
    tool_context=...)`` make nested calls outside a loop run (a host running calls itself, as
    ``pi call`` and ``pi mcp serve`` do): they reach the session's callable tools
    (``config.tool_set``) through the whole pipeline, aborted with ``abort``; their events and
    record are dropped. ``context.messages`` must hold the assistant message that issued
    ``tool_call`` (nested calls fail with :data:`NO_ASSISTANT_MESSAGE_TEXT` otherwise)."""
    return NestedCallRunner(context, config, abort).root_context(tool_call.id, lambda event: None)


def _with_tools(context: AgentContext, tools: list[AgentTool]) -> AgentContext:
    from pi_core._pipeline.config import AgentContext

    return AgentContext(system_prompt=context.system_prompt, messages=context.messages, tools=tools)


__all__ = [
    "MAX_ARGUMENT_BYTES_PER_CALL",
    "MAX_ARGUMENT_BYTES_TOTAL",
    "MAX_CALLS",
    "MAX_ERROR_CHARS",
    "NO_ASSISTANT_MESSAGE_TEXT",
    "NestedCallRecorder",
    "NestedCallRunner",
    "callable_tools",
    "combine_usage",
    "nested_calls_context",
]
