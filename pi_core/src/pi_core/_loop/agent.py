"""``Agent``: a stateful host around the loop.

It owns the transcript (``messages``), tracks ``pending_tool_calls``, ``is_streaming``,
``streaming_message`` and ``error_message``, queues steering and follow-up messages, and passes
every event to its listeners in subscription order.

``continue_()`` is Pi's ``continue()`` (a Python keyword). Hooks come in as the callbacks of a
:class:`~pi_core._loop.config.LoopConfig` (the plugin layer builds them from plugins); the
agent supplies the config's ``provider``, ``get_steering_messages`` and
``get_follow_up_messages`` itself.

A session's lifecycle comes in the same way, as a plain object (``session=``, anything with
``async start()`` and ``async end(reason, error)``; the plugin layer's ``Session`` is one), so
this module never sees the plugin layer: ``async with agent:`` starts the session and ends it
on every exit path.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol

import trio

from pi_core._abort import Abort
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop, run_agent_loop_continue
from pi_core._pipeline.config import AgentContext
from pi_core._providers.base import error_message
from pi_core._tools.definition import AgentTool, ToolDefinition, to_agent_tool
from pi_core._wire.events import (
    AgentEndEvent,
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)
from pi_core._wire.messages import AssistantMessage, ImageContent, TextContent, UserMessage

QueueMode = Literal["one-at-a-time", "all"]
Listener = Callable[..., "Awaitable[None] | None"]
"""``listener(event)`` or ``listener(event, abort)``; sync or async."""

BUSY_PROMPT_TEXT = (
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE_TEXT = "Agent is already processing. Wait for completion before continuing."
BUSY_RESET_TEXT = "Agent is already processing. Wait for completion before resetting."
NO_MESSAGES_TEXT = "No messages to continue from"
CONTINUE_FROM_ASSISTANT_TEXT = "Cannot continue from message role: assistant"


class SessionLifecycle(Protocol):
    """What ``Agent(session=...)`` takes: ``start()`` once when the session begins, then
    ``end(reason, error)`` once when it ends (``reason``: ``"completed"``, ``"error"``,
    ``"aborted"`` or ``"interrupted"``; ``error``: the exception behind ``"error"``, if any)."""

    async def start(self) -> None: ...

    async def end(self, reason: str = "completed", error: BaseException | None = None) -> None: ...


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class _Queue:
    """Pending messages; ``drain()`` takes the oldest (``one-at-a-time``) or all (``all``)."""

    def __init__(self, mode: QueueMode) -> None:
        self.mode: QueueMode = mode
        self.items: list[Any] = []

    def drain(self) -> list[Any]:
        if self.mode == "all":
            drained, self.items = self.items, []
            return drained
        if not self.items:
            return []
        return [self.items.pop(0)]


class Agent:
    """A stateful agent: transcript, queues, listeners, one run at a time.

    Args:
        provider: the model (:class:`~pi_core._providers.base.ModelProvider`); default
            ``config.provider``.
        tools: AgentTools, ToolDefinitions or ``@tool`` functions.
        system_prompt: the system prompt of every model call.
        messages: the initial transcript.
        config: the loop's callbacks and options (hooks, ``tool_execution``,
            ``max_parallel_tools``, ``convert_to_llm``...); its steering/follow-up sources are
            replaced by the agent's queues.
        steering_mode, follow_up_mode: ``"one-at-a-time"`` (default: each poll takes the
            oldest queued message) or ``"all"``.
        session: a :class:`SessionLifecycle` (the plugin layer's ``Session``:
            ``session.agent(provider)`` builds the agent with it). ``async with agent:``
            starts it and ends it on every exit path: ``"interrupted"`` after
            ``KeyboardInterrupt``, ``"aborted"`` after cancellation, ``"error"`` after another
            exception, else the outcome of the last run (``"aborted"`` after :meth:`abort`,
            ``"error"`` when it failed, ``"completed"``). A run outside ``async with`` starts
            the session too; :meth:`aclose` ends it then.
        approval: answers the tool calls a policy asks a person about (Claude Code ``ask``,
            Codex ``prompt``, ``pi_approve_tool_call``): called with an
            :class:`~pi_core.ApprovalRequest` (sync or async), it answers ``"allow"``,
            ``"deny"`` or ``"always"`` (allow, and allow the same request again without
            asking). Without it such calls are denied. Needs ``session``.

    State: ``messages`` (each ``message_end`` appends), ``pending_tool_calls`` (ids between
    ``tool_execution_start`` and ``tool_execution_end``), ``is_streaming`` (a run is active),
    ``streaming_message`` (the message being streamed), ``error_message`` (from the last
    assistant ``turn_end`` with an ``errorMessage``).
    """

    def __init__(
        self,
        provider: Any = None,
        *,
        tools: Sequence[AgentTool | ToolDefinition | Any] = (),
        system_prompt: str = "",
        messages: Sequence[Any] = (),
        config: LoopConfig | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session: SessionLifecycle | None = None,
        approval: Callable[[Any], Any] | None = None,
    ) -> None:
        self.config = config or LoopConfig()
        self.provider = provider if provider is not None else self.config.provider
        self.tools: list[AgentTool] = [to_agent_tool(t) for t in tools]
        self.system_prompt = system_prompt
        self.messages: list[Any] = list(messages)
        self.pending_tool_calls: set[str] = set()
        self.is_streaming = False
        self.streaming_message: Any = None
        self.error_message: str | None = None
        self._steering = _Queue(steering_mode)
        self._follow_up = _Queue(follow_up_mode)
        self._listeners: list[tuple[Listener, bool]] = []
        self._abort: Abort | None = None
        self._idle: trio.Event | None = None
        self.session = session
        if approval is not None:
            set_approver = getattr(session, "set_approver", None)
            if set_approver is None:
                raise ValueError(
                    "Agent(approval=...) needs a session whose policies can ask "
                    "(build_session(...).agent(...) or Agent(session=...))"
                )
            set_approver(approval)
        self._session_state: Literal["new", "started", "ended"] = "new"
        self._last_outcome = "completed"

    # -- session lifecycle ----------------------------------------------------------------

    async def _start_session(self) -> None:
        if self.session is not None and self._session_state == "new":
            self._session_state = "started"
            await self.session.start()

    async def aclose(self, reason: str | None = None, error: BaseException | None = None) -> None:
        """End the session (once; nothing without one or before it started): ``reason``
        defaults to the outcome of the last run."""
        if self.session is None or self._session_state != "started":
            return
        self._session_state = "ended"
        await self.session.end(reason or self._last_outcome, error)

    async def __aenter__(self) -> Agent:
        await self._start_session()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            await self.aclose()
            return
        leaves = _leaves(exc)
        if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
            await self.aclose("interrupted")
        elif all(isinstance(leaf, trio.Cancelled) for leaf in leaves):
            await self.aclose("aborted")
        else:
            await self.aclose("error", exc)

    # -- queues ---------------------------------------------------------------------------

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up.mode = mode

    def steer(self, message: Any) -> None:
        """Queue a message to inject after the current turn's tool batch (a ``str`` is a user
        message)."""
        self._steering.items.append(_as_message(message))

    def follow_up(self, message: Any) -> None:
        """Queue a message to run once the agent would otherwise stop."""
        self._follow_up.items.append(_as_message(message))

    def clear_steering_queue(self) -> None:
        self._steering.items.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_up.items.clear()

    def clear_all_queues(self) -> None:
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        return bool(self._steering.items or self._follow_up.items)

    # -- listeners and abort --------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` (or ``listener(event, abort)`` when it takes two positional
        arguments) for every event, awaited in subscription order. Returns an unsubscribe
        function."""
        entry = (listener, _takes_two_args(listener))
        self._listeners.append(entry)

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)

        return unsubscribe

    @property
    def abort_handle(self) -> Abort | None:
        """The active run's :class:`~pi_core._abort.Abort`, ``None`` when idle."""
        return self._abort

    def abort(self) -> None:
        """Abort the active run, if any (its tools are cancelled, the next model call ends it)."""
        if self._abort is not None:
            self._abort.abort()

    async def wait_for_idle(self) -> None:
        """Return once no run is active (after the last ``agent_end`` listener finished)."""
        if self._idle is not None:
            await self._idle.wait()

    def reset(self) -> None:
        """Clear transcript, runtime state and queues. ``RuntimeError`` while running."""
        if self._abort is not None:
            raise RuntimeError(BUSY_RESET_TEXT)
        self.messages = []
        self.is_streaming = False
        self.streaming_message = None
        self.pending_tool_calls = set()
        self.error_message = None
        self.clear_all_queues()

    # -- runs -----------------------------------------------------------------------------

    async def prompt(
        self, input: str | Any | Sequence[Any], images: Sequence[ImageContent] = ()
    ) -> None:
        """Run the loop on a new prompt: text (plus ``images``), a message or a list of them.

        ``RuntimeError`` while another run is active (Pi's exact text).
        """
        if self._abort is not None:
            raise RuntimeError(BUSY_PROMPT_TEXT)
        if isinstance(input, str):
            content: list[Any] = [TextContent(text=input), *images]
            prompts: list[Any] = [UserMessage(content=content)]
        elif isinstance(input, list | tuple):
            prompts = [_as_message(m) for m in input]
        else:
            prompts = [_as_message(input)]
        await self._run_prompt(prompts)

    async def continue_(self) -> None:
        """Pi's ``continue()``: continue from the transcript.

        After an assistant message, queued steering messages run as a new prompt (skipping the
        first steering poll), else queued follow-ups; with neither, ``ValueError``
        ``Cannot continue from message role: assistant``. ``ValueError``
        ``No messages to continue from`` on an empty transcript; ``RuntimeError`` while running.
        """
        if self._abort is not None:
            raise RuntimeError(BUSY_CONTINUE_TEXT)
        if not self.messages:
            raise ValueError(NO_MESSAGES_TEXT)
        if getattr(self.messages[-1], "role", None) == "assistant":
            steering = self._steering.drain()
            if steering:
                await self._run_prompt(steering, skip_initial_steering_poll=True)
                return
            follow_ups = self._follow_up.drain()
            if follow_ups:
                await self._run_prompt(follow_ups)
                return
            raise ValueError(CONTINUE_FROM_ASSISTANT_TEXT)
        await self._run(
            lambda abort: run_agent_loop_continue(
                self._context(), self._loop_config(), self._process_event, abort=abort
            )
        )

    async def _run_prompt(
        self, prompts: list[Any], *, skip_initial_steering_poll: bool = False
    ) -> None:
        await self._run(
            lambda abort: run_agent_loop(
                prompts,
                self._context(),
                self._loop_config(skip_initial_steering_poll=skip_initial_steering_poll),
                self._process_event,
                abort=abort,
            )
        )

    def _context(self) -> AgentContext:
        return AgentContext(
            system_prompt=self.system_prompt, messages=list(self.messages), tools=list(self.tools)
        )

    def _loop_config(self, *, skip_initial_steering_poll: bool = False) -> LoopConfig:
        skip = skip_initial_steering_poll

        async def get_steering_messages() -> list[Any]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return self._steering.drain()

        async def get_follow_up_messages() -> list[Any]:
            return self._follow_up.drain()

        return dataclasses.replace(
            self.config,
            provider=self.provider,
            get_steering_messages=get_steering_messages,
            get_follow_up_messages=get_follow_up_messages,
        )

    async def _run(self, executor: Callable[[Abort], Awaitable[Any]]) -> None:
        if self._session_state == "ended":
            raise RuntimeError("the agent's session has ended")
        abort = Abort()
        self._abort = abort
        self._idle = trio.Event()
        self.is_streaming = True
        self.streaming_message = None
        self.error_message = None
        try:
            await self._start_session()
            failed = False
            try:
                await executor(abort)
            except Exception as exc:
                failed = True
                await self._handle_run_failure(exc, abort.aborted)
            last = self.messages[-1] if self.messages else None
            stop = getattr(last, "stop_reason", None) if last is not None else None
            if abort.aborted or stop == "aborted":
                self._last_outcome = "aborted"
            elif failed or stop == "error":
                self._last_outcome = "error"
            else:
                self._last_outcome = "completed"
        finally:
            self.is_streaming = False
            self.streaming_message = None
            self.pending_tool_calls = set()
            self._abort = None
            self._idle.set()

    async def _handle_run_failure(self, exc: Exception, aborted: bool) -> None:
        """A run that raised (a listener, a callback): close it with an error assistant message
        and the rest of the lifecycle, as Pi's Agent does."""
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            inner = exc.exceptions[0]
            if not isinstance(inner, Exception):
                break
            exc = inner
        text = str(exc) or type(exc).__name__
        failure = error_message(text, aborted=aborted)
        await self._process_event(MessageStartEvent(message=failure))
        await self._process_event(MessageEndEvent(message=failure))
        await self._process_event(TurnEndEvent(message=failure, tool_results=[]))
        await self._process_event(AgentEndEvent(messages=[failure]))

    async def _process_event(self, event: AgentEvent) -> None:
        """Update the state for ``event``, then await every listener in order."""
        if isinstance(event, MessageStartEvent | MessageUpdateEvent):
            self.streaming_message = event.message
        elif isinstance(event, MessageEndEvent):
            self.streaming_message = None
            self.messages.append(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            self.pending_tool_calls = self.pending_tool_calls | {event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            self.pending_tool_calls = self.pending_tool_calls - {event.tool_call_id}
        elif isinstance(event, TurnEndEvent):
            if isinstance(event.message, AssistantMessage) and event.message.error_message:
                self.error_message = event.message.error_message
        elif isinstance(event, AgentEndEvent):
            self.streaming_message = None
        abort = self._abort or Abort()
        for listener, with_abort in list(self._listeners):
            result = listener(event, abort) if with_abort else listener(event)
            if inspect.isawaitable(result):
                await result


def _as_message(message: Any) -> Any:
    if isinstance(message, str):
        return UserMessage(content=[TextContent(text=message)])
    return message


def _takes_two_args(listener: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(listener).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


__all__ = [
    "BUSY_CONTINUE_TEXT",
    "BUSY_PROMPT_TEXT",
    "BUSY_RESET_TEXT",
    "Agent",
    "Listener",
    "QueueMode",
    "SessionLifecycle",
]
