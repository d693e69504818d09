"""The agent loop on trio: turns, and the scheduling of each turn's batch of tool calls.

Entry points:

* :func:`run_agent_loop` ``(prompts, context, config, emit, *, abort=None) -> new messages``
* :func:`run_agent_loop_continue` ``(context, config, emit, *, abort=None) -> new messages``

Each tool call goes through the pipeline of :mod:`pi_core._pipeline.pipeline`; this module decides
when. A batch is sequential when ``config.tool_execution == "sequential"`` or any called,
registered tool is ``execution_mode="sequential"``; otherwise preflight runs in source order
(``tool_execution_start``, immediate failures emit ``tool_execution_end`` at once), then every
prepared call executes in one nursery (``tool_execution_end`` in completion order, at most
``config.max_parallel_tools`` at a time), then the ToolResult messages follow in source order.
Events reach ``emit`` one at a time, in order: concurrent tool tasks hand their events to one
memory channel that a single task drains into ``emit``.

A tool calls ``on_update(partial)`` from its own trio task (from a worker thread, through
``trio.from_thread.run_sync(on_update, partial)``); updates after ``execute`` settled are
dropped.

Abort: each provider read and each executing call runs in a cancel scope linked to the run's
:class:`~pi_core._abort.Abort`. An aborted call reports the :class:`~pi_core.ToolAborted` partial
result it raised, else ``Operation aborted``; preflight stops at an abort (the calls after it get
no events and no results); the turn is completed (results, ``turn_end``) and the next model call
ends the run with ``stopReason`` ``"aborted"``.

Model-call failures (``transform_context``, ``convert_to_llm`` or the provider raising) do not
escape either: the turn's assistant message becomes ``stopReason: "error"`` (``"aborted"`` after
an abort) with ``errorMessage`` the exception text, and the run ends as for any provider error
(``turn_end`` with no tool results, ``agent_end``).

This module knows nothing of pluggy: hooks reach it as the plain callbacks of
:class:`~pi_core._loop.config.LoopConfig`.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from pi_core._abort import Abort, linked_scope
from pi_core._loop.config import LoopConfig, TurnInfo
from pi_core._pipeline.config import AgentContext, EventSink
from pi_core._pipeline.nested import NestedCallRunner, combine_usage
from pi_core._pipeline.outcome import ToolCallOutcome
from pi_core._pipeline.pipeline import (
    PreparedCall,
    error_outcome,
    error_text,
    execute_call,
    finalize_call,
    find_tool,
    maybe_await,
    prepare_call,
)
from pi_core._providers.base import (
    ABORTED_ERROR_MESSAGE,
    ModelProvider,
    ModelRequest,
    StreamDelta,
    StreamDone,
    StreamError,
    StreamStart,
    error_message,
)
from pi_core._tools.exposure import tool_declaration
from pi_core._wire.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    current_tools,
)

LENGTH_GUARD_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its '
    "arguments may be truncated. Re-issue the tool call with complete arguments."
)
"""Error text of each call of a ``stopReason: "length"`` message."""

NO_MESSAGES_TEXT = "Cannot continue: no messages in context"
CONTINUE_FROM_ASSISTANT_TEXT = "Cannot continue from message role: assistant"
STREAM_ENDED_TEXT = "Provider stream ended without a final message"

_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})


@dataclass
class _Batch:
    messages: list[ToolResultMessage]
    terminate: bool


def _terminates(outcomes: Sequence[ToolCallOutcome]) -> bool:
    """At least one finalized call, and every result says ``terminate`` is True."""
    return bool(outcomes) and all(o.result.terminate is True for o in outcomes)


# ---------------------------------------------------------------------------------------------
# A batch of calls
# ---------------------------------------------------------------------------------------------


class _Runner:
    """One run's state: the working context, config, sink and abort."""

    def __init__(
        self,
        context: AgentContext,
        config: LoopConfig,
        emit: EventSink,
        abort: Abort | None,
        new_messages: list[Any],
    ) -> None:
        self.context = context
        self.config = config
        self.provider: ModelProvider | None = config.provider
        self.emit = emit
        self.abort = abort
        self.new_messages = new_messages
        limit = config.max_parallel_tools
        self.limiter = trio.CapacityLimiter(limit) if limit is not None else None
        self.nested = NestedCallRunner(context, config, abort)

    @property
    def aborted(self) -> bool:
        return self.abort is not None and self.abort.aborted

    # -- tool batches ---------------------------------------------------------------------

    async def _emit_start(self, tool_call: ToolCall) -> None:
        await self.emit(
            ToolExecutionStartEvent(
                tool_call_id=tool_call.id, tool_name=tool_call.name, args=tool_call.arguments
            )
        )

    async def _emit_result_message(self, outcome: ToolCallOutcome) -> ToolResultMessage:
        message = outcome.to_message()
        record, usage = self.nested.take_record(outcome.tool_call.id)
        if record is not None:
            message.nested_calls = record
        if usage is not None:
            message.usage = usage if message.usage is None else combine_usage(message.usage, usage)
        await self.emit(MessageStartEvent(message=message))
        await self.emit(MessageEndEvent(message=message))
        return message

    async def _execute_prepared(
        self,
        entries: list[tuple[int, PreparedCall]],
        assistant_message: AssistantMessage,
    ) -> dict[int, ToolCallOutcome]:
        """Phase 2: run every entry concurrently in one nursery. Updates and
        ``tool_execution_end`` events go through one channel to one emitting task, so ``emit``
        is never called concurrently and each call's updates precede its end."""
        outcomes: dict[int, ToolCallOutcome] = {}
        if not entries:
            return outcomes
        send, receive = trio.open_memory_channel[AgentEvent](math.inf)

        async def pump() -> None:
            async with receive:
                async for event in receive:
                    await self.emit(event)

        async def run_one(
            index: int,
            prepared: PreparedCall,
            channel: trio.MemorySendChannel[AgentEvent],
            previous: trio.Event | None,
            ready: trio.Event,
        ) -> None:
            async with channel:
                tool_call = prepared.tool_call

                def on_update(partial: AgentToolResult) -> None:
                    event = ToolExecutionUpdateEvent(
                        tool_call_id=tool_call.id,
                        tool_name=tool_call.name,
                        args=tool_call.arguments,
                        partial_result=partial,
                    )
                    channel.send_nowait(event)

                tool_context = self.nested.root_context(tool_call.id, channel.send_nowait)
                result, is_error = await execute_call(
                    prepared, self.abort, self.limiter, on_update, previous, ready, tool_context
                )
                outcome = await finalize_call(
                    prepared, result, is_error, self.context, assistant_message, self.config
                )
                outcomes[index] = outcome
                channel.send_nowait(_end_event(outcome))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump)
            async with send:
                async with trio.open_nursery() as tools:
                    previous: trio.Event | None = None
                    for index, prepared in entries:
                        ready = trio.Event()
                        tools.start_soon(run_one, index, prepared, send.clone(), previous, ready)
                        previous = ready
        return outcomes

    async def execute_tool_calls(self, assistant_message: AssistantMessage) -> _Batch:
        tool_calls = assistant_message.tool_calls
        self.nested.context = self.context
        sequential = self.config.tool_execution == "sequential" or any(
            (tool := find_tool(self.context.tools, call.name)) is not None
            and tool.execution_mode == "sequential"
            for call in tool_calls
        )
        if sequential:
            return await self._sequential(tool_calls, assistant_message)
        return await self._parallel(tool_calls, assistant_message)

    async def _sequential(
        self, tool_calls: list[ToolCall], assistant_message: AssistantMessage
    ) -> _Batch:
        """Each call completes (end event, result message) before the next starts."""
        outcomes: list[ToolCallOutcome] = []
        messages: list[ToolResultMessage] = []
        for tool_call in tool_calls:
            await self._emit_start(tool_call)
            preparation = await prepare_call(
                tool_call, self.context, assistant_message, self.config, self.abort
            )
            if isinstance(preparation, ToolCallOutcome):
                outcome = preparation
                await self.emit(_end_event(outcome))
            else:
                outcome = (await self._execute_prepared([(0, preparation)], assistant_message))[0]
            outcomes.append(outcome)
            messages.append(await self._emit_result_message(outcome))
            if self.aborted:
                break
        return _Batch(messages, _terminates(outcomes))

    async def _parallel(
        self, tool_calls: list[ToolCall], assistant_message: AssistantMessage
    ) -> _Batch:
        """Preflight in source order, execute together, messages in source order."""
        slots: list[ToolCallOutcome | None] = []
        entries: list[tuple[int, PreparedCall]] = []
        for tool_call in tool_calls:
            await self._emit_start(tool_call)
            preparation = await prepare_call(
                tool_call, self.context, assistant_message, self.config, self.abort
            )
            if isinstance(preparation, ToolCallOutcome):
                await self.emit(_end_event(preparation))
                slots.append(preparation)
            else:
                entries.append((len(slots), preparation))
                slots.append(None)
            if self.aborted:
                break
        executed = await self._execute_prepared(entries, assistant_message)
        outcomes = [slot if slot is not None else executed[i] for i, slot in enumerate(slots)]
        messages = [await self._emit_result_message(outcome) for outcome in outcomes]
        return _Batch(messages, _terminates(outcomes))

    async def fail_truncated_calls(self, assistant_message: AssistantMessage) -> _Batch:
        """A ``length`` message's calls are not run: one error result each, in order."""
        messages: list[ToolResultMessage] = []
        for tool_call in assistant_message.tool_calls:
            await self._emit_start(tool_call)
            outcome = error_outcome(tool_call, LENGTH_GUARD_TEXT.format(name=tool_call.name))
            await self.emit(_end_event(outcome))
            messages.append(await self._emit_result_message(outcome))
        return _Batch(messages, False)

    # -- model calls ----------------------------------------------------------------------

    async def _llm_messages(self) -> list[Any]:
        messages: list[Any] = list(self.context.messages)
        if self.config.transform_context is not None:
            messages = list(await maybe_await(self.config.transform_context(messages)))
        if self.config.convert_to_llm is not None:
            converted = list(await maybe_await(self.config.convert_to_llm(messages)))
        else:
            converted = default_convert_to_llm(messages)
        return [_without_structured_content(m) for m in converted]

    async def stream_assistant_response(self) -> AssistantMessage:
        """Ask the provider; ``message_start``/``message_update``/``message_end``."""
        messages = self.context.messages
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        try:
            if self.provider is None:
                raise ValueError("LoopConfig.provider is not set")
            hidden = self._hidden_declarations()
            request = ModelRequest(
                system_prompt=self.context.system_prompt,
                messages=await self._llm_messages(),
                tools=[t for t in self.context.tools if t.name not in hidden],
            )
            stream = self.provider.stream(request, self.abort)
            async with _closing(stream):
                iterator = aiter(stream)
                while final is None:
                    event: Any = None
                    with linked_scope(self.abort) as scope:
                        try:
                            event = await anext(iterator)
                        except StopAsyncIteration:
                            event = None
                    if scope.cancelled_caught:
                        final = _aborted_message(partial)
                        break
                    if event is None:
                        final = partial or error_message(STREAM_ENDED_TEXT, aborted=self.aborted)
                        break
                    if isinstance(event, StreamStart):
                        partial = event.partial
                        messages.append(partial)
                        await self.emit(MessageStartEvent(message=partial.model_copy()))
                    elif isinstance(event, StreamDelta):
                        if partial is not None:
                            partial = event.partial
                            messages[-1] = partial
                            await self.emit(
                                MessageUpdateEvent(
                                    message=partial.model_copy(),
                                    assistant_message_event=_event_dict(event),
                                )
                            )
                    elif isinstance(event, StreamDone):
                        final = event.message
                    elif isinstance(event, StreamError):
                        final = event.error
        except Exception as exc:
            final = error_message(
                error_text(exc),
                aborted=self.aborted,
                content=list(partial.content) if partial is not None else None,
            )
        if partial is not None:
            messages[-1] = final
        else:
            messages.append(final)
            await self.emit(MessageStartEvent(message=final.model_copy()))
        await self.emit(MessageEndEvent(message=final))
        return final

    # -- declared tools -------------------------------------------------------------------

    def refresh_tools(self) -> None:
        """Take the active tools from ``config.tool_set`` (when set) for the next request."""
        if self.config.tool_set is not None:
            self.context.tools = self.config.tool_set.model_tools()

    def _hidden_declarations(self) -> set[str]:
        if self.config.tool_set is None:
            return set()
        return set(self.config.tool_set.hidden_declarations)

    async def declare_tool_changes(self, pending: list[Any]) -> list[Any]:
        """Pi's ``declareToolChanges``: ``pending`` with a system message announcing the
        tools added and removed since the transcript's (and ``pending``'s) system messages
        last declared them; emitted with ``message_start``/``message_end`` by the caller.

        A pending system message (the last one) gets the delta as its tool fields; otherwise,
        when something changed, a new ``{role: "system", content: ""}`` message goes before
        the first non-system pending message."""
        if not self.config.declare_tool_changes:
            return pending
        last_system = None
        for index in range(len(pending) - 1, -1, -1):
            if getattr(pending[index], "role", None) == "system":
                last_system = index
                break
        before = [*self.context.messages, *pending]
        if last_system is not None:
            without = pending[last_system].model_copy(
                update={"tools_added": None, "tools_removed": None}
            )
            before = [*self.context.messages, *pending[:last_system], without]
        previous = {t["name"]: t for t in current_tools(before)}
        current = [tool_declaration(t) for t in self.context.tools]
        current_by_name = {t["name"]: t for t in current}

        def key(declaration: dict[str, Any]) -> str:
            return json.dumps(declaration, sort_keys=True)

        added = [
            t for t in current if t["name"] not in previous or key(previous[t["name"]]) != key(t)
        ]
        removed = [
            {"name": name}
            for name, t in previous.items()
            if name not in current_by_name or key(current_by_name[name]) != key(t)
        ]
        if last_system is not None:
            message = pending[last_system]
            had_fields = message.tools_added is not None or message.tools_removed is not None
            if not had_fields and not added and not removed:
                return pending
            updated = message.model_copy(
                update={"tools_added": added or None, "tools_removed": removed or None}
            )
            for name, value in (("tools_added", added), ("tools_removed", removed)):
                if value:
                    updated.__pydantic_fields_set__.add(name)
                else:
                    updated.__pydantic_fields_set__.discard(name)
            return [*pending[:last_system], updated, *pending[last_system + 1 :]]
        if not added and not removed:
            return pending
        system = SystemMessage(content="")
        if added:
            system.tools_added = added
        if removed:
            system.tools_removed = removed
        at = next(
            (i for i, m in enumerate(pending) if getattr(m, "role", None) != "system"),
            len(pending),
        )
        return [*pending[:at], system, *pending[at:]]

    # -- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Pi's ``runLoop``: turns until no tool call is left and no message is queued."""
        config = self.config
        first_turn = True
        pending: list[Any] = await self._poll(config.get_steering_messages)
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    await self.emit(TurnStartEvent())
                if config.checkpoints is not None:
                    config.checkpoints.begin_turn()
                self.refresh_tools()
                pending = await self.declare_tool_changes(pending)
                for message in pending:
                    await self.emit(MessageStartEvent(message=message))
                    await self.emit(MessageEndEvent(message=message))
                    self.context.messages.append(message)
                    self.new_messages.append(message)
                pending = []

                message = await self.stream_assistant_response()
                self.new_messages.append(message)
                if message.stop_reason in ("error", "aborted"):
                    await self.emit(TurnEndEvent(message=message, tool_results=[]))
                    await self.emit(AgentEndEvent(messages=self.new_messages))
                    return

                tool_results: list[ToolResultMessage] = []
                has_more_tool_calls = False
                if message.tool_calls:
                    if message.stop_reason == "length":
                        batch = await self.fail_truncated_calls(message)
                    else:
                        batch = await self.execute_tool_calls(message)
                    tool_results = batch.messages
                    has_more_tool_calls = not batch.terminate
                    self.context.messages.extend(tool_results)
                    self.new_messages.extend(tool_results)
                await self.emit(TurnEndEvent(message=message, tool_results=tool_results))

                if config.prepare_next_turn is not None:
                    snapshot = await maybe_await(
                        config.prepare_next_turn(self._turn(message, tool_results))
                    )
                    if snapshot:
                        self.context = snapshot.get("context") or self.context
                        self.provider = snapshot.get("provider") or self.provider
                if config.should_stop_after_turn is not None and await maybe_await(
                    config.should_stop_after_turn(self._turn(message, tool_results))
                ):
                    await self.emit(AgentEndEvent(messages=self.new_messages))
                    return
                pending = await self._poll(config.get_steering_messages)
            follow_ups = await self._poll(config.get_follow_up_messages)
            if follow_ups:
                pending = follow_ups
                continue
            break
        await self.emit(AgentEndEvent(messages=self.new_messages))

    def _turn(self, message: AssistantMessage, tool_results: list[ToolResultMessage]) -> TurnInfo:
        return TurnInfo(
            message=message,
            tool_results=tool_results,
            context=self.context,
            new_messages=self.new_messages,
        )

    @staticmethod
    async def _poll(source: Callable[[], Any] | None) -> list[Any]:
        if source is None:
            return []
        return list(await maybe_await(source()) or [])


def _end_event(outcome: ToolCallOutcome) -> ToolExecutionEndEvent:
    return ToolExecutionEndEvent(
        tool_call_id=outcome.tool_call.id,
        tool_name=outcome.tool_call.name,
        result=outcome.result,
        is_error=outcome.is_error,
    )


def _event_dict(event: StreamDelta) -> dict[str, Any]:
    """The provider event for ``message_update``, without ``partial`` (the event's
    ``message`` already is the partial)."""
    return {k: v for k, v in event.to_json_dict().items() if k != "partial"}


def _aborted_message(partial: AssistantMessage | None) -> AssistantMessage:
    return error_message(
        ABORTED_ERROR_MESSAGE,
        aborted=True,
        content=list(partial.content) if partial is not None else None,
    )


class _closing:
    """``aclosing`` for async generators; a no-op for other async iterators."""

    def __init__(self, stream: AsyncIterator[Any]) -> None:
        self._stream = stream

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


def default_convert_to_llm(messages: Sequence[Any]) -> list[Any]:
    """Keep the messages a model understands (roles ``user``, ``assistant``, ``toolResult``);
    custom host messages are dropped. Used when ``LoopConfig.convert_to_llm`` is not set."""
    return [m for m in messages if getattr(m, "role", None) in _LLM_ROLES]


def _without_structured_content(message: Any) -> Any:
    """``structuredContent`` and ``nestedCalls`` are program-facing and never sent to the
    model."""
    if isinstance(message, ToolResultMessage) and (
        message.structured_content is not None or message.nested_calls is not None
    ):
        copy = message.model_copy(update={"structured_content": None, "nested_calls": None})
        copy.__pydantic_fields_set__.discard("structured_content")
        copy.__pydantic_fields_set__.discard("nested_calls")
        return copy
    return message


def _normalize_message(message: Any) -> Any:
    if isinstance(message, str):
        return UserMessage(content=message)
    if isinstance(message, dict):
        from pydantic import TypeAdapter

        from pi_core._wire.messages import AgentMessage

        return TypeAdapter(AgentMessage).validate_python(message)
    return message


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def _new_runner(
    context: AgentContext, config: LoopConfig, emit: EventSink, abort: Abort | None
) -> _Runner:
    """The runner of one run: a working copy of ``context`` (the caller's lists are never
    changed) with the active tools refreshed. Raises ``ValueError`` for a bad ``config``."""
    _check_config(config)
    working = AgentContext(
        system_prompt=context.system_prompt,
        messages=list(context.messages),
        tools=list(context.tools),
    )
    runner = _Runner(working, config, emit, abort, [])
    runner.refresh_tools()
    return runner


def _check_config(config: LoopConfig) -> None:
    if config.max_parallel_tools is not None and config.max_parallel_tools < 1:
        raise ValueError(f"max_parallel_tools must be at least 1 (got {config.max_parallel_tools})")


async def run_agent_loop(
    prompts: Sequence[Any],
    context: AgentContext,
    config: LoopConfig,
    emit: EventSink,
    *,
    abort: Abort | None = None,
) -> list[Any]:
    """Run the agent loop on new ``prompts``.

    ``prompts``: messages (a ``str`` is a user message, a ``dict`` is parsed by role). The
    working context is ``context`` plus the prompts; the caller's ``context.messages`` list is
    not changed. Emits ``agent_start``, ``turn_start``, ``message_start``/``message_end`` per
    prompt (preceded by a system message declaring the tools when they differ from what the
    context's system messages declared, see :meth:`_Runner.declare_tool_changes`), then runs turns until the model stops calling tools (or a batch terminates, a
    provider error, ``should_stop_after_turn``), draining steering and follow-up messages.
    Every event is awaited through ``emit`` in order. Returns the new messages (prompts
    included), the same list ``agent_end.messages`` carries.

    Raises ``ValueError`` before any event when ``config.max_parallel_tools < 1``.
    """
    runner = _new_runner(context, config, emit, abort)
    prompt_messages = [_normalize_message(p) for p in prompts]
    await emit(AgentStartEvent())
    await emit(TurnStartEvent())
    pending = await runner.declare_tool_changes(prompt_messages)
    runner.context.messages.extend(pending)
    runner.new_messages.extend(pending)
    for message in pending:
        await emit(MessageStartEvent(message=message))
        await emit(MessageEndEvent(message=message))
    await runner.run()
    return runner.new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: LoopConfig,
    emit: EventSink,
    *,
    abort: Abort | None = None,
) -> list[Any]:
    """Continue from ``context`` without a new prompt: retries, or after tool
    results. Emits ``agent_start``, ``turn_start`` and no events for existing messages; returns
    only the messages this run produced.

    Raises ``ValueError`` before any event: ``Cannot continue: no messages in context`` when
    ``context.messages`` is empty, ``Cannot continue from message role: assistant`` when the
    last message is an assistant message.
    """
    if not context.messages:
        raise ValueError(NO_MESSAGES_TEXT)
    if getattr(context.messages[-1], "role", None) == "assistant":
        raise ValueError(CONTINUE_FROM_ASSISTANT_TEXT)
    runner = _new_runner(context, config, emit, abort)
    await emit(AgentStartEvent())
    await emit(TurnStartEvent())
    await runner.run()
    return runner.new_messages


__all__ = [
    "LENGTH_GUARD_TEXT",
    "default_convert_to_llm",
    "run_agent_loop",
    "run_agent_loop_continue",
]
