"""The session lifecycle through the Python API (``build_session`` → ``Session`` →
``session.agent(...)``): ``pi_session_start`` before anything of the session, ``pi_session_end``
once on every exit path (completed, error, abort, ``KeyboardInterrupt``, cancellation); the
hook tracing of the caller and ``pi_core.testing``'s ``HookRecorder``. The command-line hosts
are ``cli/test_cli_session_lifecycle.py``'s."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
import trio
from test_loop_support import call, text, tool_use

from pi_core import (
    AfterToolCallResult,
    AgentContext,
    AssistantMessage,
    BeforeToolCallResult,
    SessionContext,
    ToolCall,
    build_session,
    hookimpl,
    run_tool_call,
    tool,
)
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.events import AgentStartEvent
from pi_core.testing import HookRecorder


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


@tool
def echo(value: str) -> str:
    """Return the value."""
    return value


@tool
async def nap(seconds: float) -> str:
    """Sleep."""
    await trio.sleep(seconds)
    return "slept"


@tool
async def interrupt() -> str:
    """Raise KeyboardInterrupt."""
    raise KeyboardInterrupt


class Lifecycle:
    """Registers the tools, observes every hook of a session, records the ends."""

    def __init__(self) -> None:
        self.ends: list[tuple[str | None, str | None]] = []

    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        for t in (echo, nap, interrupt):
            register(t)

    @hookimpl
    async def pi_session_start(self, context: SessionContext) -> None:
        context.state["lifecycle"] = "open"

    @hookimpl
    async def pi_session_end(self, context: SessionContext) -> None:
        await trio.lowlevel.checkpoint()
        error = type(context.error).__name__ if context.error is not None else None
        self.ends.append((context.reason, error))
        context.state["lifecycle"] = "closed"

    @hookimpl
    def pi_before_tool_call(self, context: Any) -> None:
        assert context.session.state["lifecycle"] == "open"

    @hookimpl
    def pi_after_tool_call(self, context: Any) -> None:
        pass

    @hookimpl
    def pi_on_event(self, event: Any) -> None:
        pass


@pytest.fixture
def lifecycle(register_plugin: Any) -> Lifecycle:
    plugin = Lifecycle()
    register_plugin(plugin, name="lifecycle")
    return plugin


def echo_then_done() -> ScriptedProvider:
    return ScriptedProvider([tool_use(call("c1", "echo", {"value": "a"})), text("done")])


async def test_agent_session_hooks_in_order(
    plugin_manager: Any, hook_recorder: HookRecorder, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    session = build_session(plugin_manager, tmp_path)
    agent = session.agent(echo_then_done())
    async with agent:
        await agent.prompt("go")
    events = [c.kwargs["event"].type for c in hook_recorder.calls("pi_on_event")]
    names = [
        f"pi_on_event {events.pop(0)}" if name == "pi_on_event" else name
        for name in hook_recorder.names()
    ]
    assert names == [
        "pi_register_tools",
        "pi_session_start",
        "pi_on_event agent_start",
        "pi_on_event turn_start",
        "pi_on_event message_start",  # the system message declaring the tools
        "pi_on_event message_end",
        "pi_on_event message_start",  # the prompt
        "pi_on_event message_end",
        "pi_on_event message_start",
        "pi_on_event message_end",
        "pi_on_event tool_execution_start",
        "pi_before_tool_call",
        "pi_after_tool_call",
        "pi_on_event tool_execution_end",
        "pi_on_event message_start",
        "pi_on_event message_end",
        "pi_on_event turn_end",
        "pi_on_event turn_start",
        "pi_on_event message_start",
        "pi_on_event message_end",
        "pi_on_event turn_end",
        "pi_on_event agent_end",
        "pi_session_end",
    ]
    start, end = hook_recorder.calls("pi_session_start", "pi_session_end")
    assert start.kwargs["context"] is end.kwargs["context"] is session.context
    assert session.context is not None
    assert (session.context.host, session.context.reason) == ("agent", "completed")
    assert session.context.state == {"lifecycle": "closed"}
    assert lifecycle.ends == [("completed", None)]


async def test_agent_several_prompts_are_one_session(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    agent = build_session(plugin_manager, tmp_path).agent(
        ScriptedProvider([text("one"), text("two")])
    )
    async with agent:
        await agent.prompt("first")
        await agent.prompt("second")
    assert lifecycle.ends == [("completed", None)]


async def test_agent_abort_ends_the_session_aborted(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    provider = ScriptedProvider([tool_use(call("c1", "nap", {"seconds": 30})), text("done")])
    agent = build_session(plugin_manager, tmp_path).agent(provider)

    def abort_when_napping(event: Any) -> None:
        if event.type == "tool_execution_start":
            agent.abort()

    agent.subscribe(abort_when_napping)
    async with agent:
        await agent.prompt("go")
    assert lifecycle.ends == [("aborted", None)]


async def test_agent_exception_in_the_body_ends_the_session_with_error(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    agent = build_session(plugin_manager, tmp_path).agent(echo_then_done())
    with pytest.raises(ValueError, match="host failed"):
        async with agent:
            await agent.prompt("go")
            raise ValueError("host failed")
    assert lifecycle.ends == [("error", "ValueError")]


async def test_agent_keyboard_interrupt_in_a_tool_ends_the_session_interrupted(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    provider = ScriptedProvider([tool_use(call("c1", "interrupt")), text("done")])
    agent = build_session(plugin_manager, tmp_path).agent(provider)
    with pytest.raises(BaseException) as caught:
        async with agent:
            await agent.prompt("go")
    assert [type(e) for e in leaves(caught.value)] == [KeyboardInterrupt]
    assert lifecycle.ends == [("interrupted", None)]


async def test_agent_cancelled_ends_the_session_aborted_shielded(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    provider = ScriptedProvider([tool_use(call("c1", "nap", {"seconds": 30})), text("done")])
    agent = build_session(plugin_manager, tmp_path).agent(provider)
    with trio.move_on_after(0.2):
        async with agent:
            await agent.prompt("go")
    assert lifecycle.ends == [("aborted", None)]


async def test_agent_without_async_with_ends_at_aclose_once(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path, hook_recorder: HookRecorder
) -> None:
    agent = build_session(plugin_manager, tmp_path).agent(echo_then_done())
    await agent.prompt("go")
    assert lifecycle.ends == []
    await agent.aclose()
    await agent.aclose()
    assert lifecycle.ends == [("completed", None)]
    assert hook_recorder.names().count("pi_session_start") == 1
    with pytest.raises(RuntimeError, match="the agent's session has ended"):
        await agent.prompt("again")


async def test_session_context_manager_reports_the_host_outcome_and_errors(
    plugin_manager: Any, lifecycle: Lifecycle, tmp_path: Path
) -> None:
    session = build_session(plugin_manager, tmp_path, host="call")
    with pytest.raises(OSError):
        async with session:
            raise OSError("disk full")
    assert session.context is not None
    assert (session.context.reason, type(session.context.error)) == ("error", OSError)
    second = build_session(plugin_manager, tmp_path, host="run")
    async with second:
        second.outcome = "interrupted"
    assert lifecycle.ends == [("error", "OSError"), ("interrupted", None)]
    assert second.context is not None and second.context.session_id != session.context.session_id


# -- hook tracing and the recorder -----------------------------------------------------------


class Traced:
    @hookimpl
    def pi_register_tools(self, register: Any) -> None:
        register(echo)

    @hookimpl
    def pi_bash_operations(self) -> None:
        return None

    @hookimpl
    async def pi_prepare_arguments(self, arguments: Any) -> Any:
        return {**arguments, "value": arguments["value"].upper()}

    @hookimpl
    def pi_before_tool_call(self, context: Any) -> BeforeToolCallResult | None:
        if context.args["value"] == "NO":
            return BeforeToolCallResult(block=True, reason="no")
        return None

    @hookimpl
    def pi_after_tool_call(self) -> AfterToolCallResult:
        return AfterToolCallResult(details={"seen": True})

    @hookimpl
    def pi_on_event(self, event: Any) -> None:
        raise ValueError("broken logger")


async def test_trace_lines_name_hook_plugin_duration_and_result_kind(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, capsys: Any
) -> None:
    stream = io.StringIO()
    plugin_manager.trace_hooks(stream)
    register_plugin(Traced(), name="traced")
    session = build_session(plugin_manager, tmp_path)
    for value in ("yes", "no"):
        tool_call = ToolCall(id="c1", name="echo", arguments={"value": value})
        message = AssistantMessage(content=[tool_call], stop_reason="toolUse")
        await run_tool_call(
            tool_call,
            AgentContext(tools=session.tools),
            session.loop_config(),
            assistant_message=message,
        )
    await session.hooks.on_event(AgentStartEvent())
    lines = [re.sub(r" \d+\.\d\dms ", " <ms>ms ", line) for line in stream.getvalue().splitlines()]
    assert lines == [
        "pi: hook pi_bash_operations plugin=traced <ms>ms -> None",
        "pi: hook pi_register_tools plugin=traced <ms>ms -> None",
        "pi: hook pi_prepare_arguments plugin=traced <ms>ms -> dict[1]",
        "pi: hook pi_before_tool_call plugin=traced <ms>ms -> None",
        "pi: hook pi_after_tool_call plugin=traced <ms>ms -> AfterToolCallResult(details)",
        "pi: hook pi_prepare_arguments plugin=traced <ms>ms -> dict[1]",
        "pi: hook pi_before_tool_call plugin=traced <ms>ms -> BeforeToolCallResult(block,reason)",
        "pi: hook pi_on_event plugin=traced <ms>ms -> raised ValueError",
    ]
    assert capsys.readouterr().err == (
        "pi: plugin 'traced' failed in pi_on_event: ValueError: broken logger\n"
    )


async def test_hook_recorder_calls_names_arguments_and_results(
    plugin_manager: Any, register_plugin: Any, hook_recorder: HookRecorder, tmp_path: Path
) -> None:
    register_plugin(Traced(), name="traced")
    session = build_session(plugin_manager, tmp_path)
    tool_call = ToolCall(id="c1", name="echo", arguments={"value": "no"})
    message = AssistantMessage(content=[tool_call], stop_reason="toolUse")
    outcome = await run_tool_call(
        tool_call,
        AgentContext(tools=session.tools),
        session.loop_config(),
        assistant_message=message,
    )
    assert outcome.is_error
    assert hook_recorder.names() == [
        "pi_bash_operations",
        "pi_register_tools",
        "pi_prepare_arguments",
        "pi_before_tool_call",
    ]
    (before,) = hook_recorder.calls("pi_before_tool_call")
    assert (before.plugin, before.kwargs["context"].args, before.raised) == (
        "traced",
        {"value": "NO"},
        False,
    )
    assert hook_recorder.results("pi_before_tool_call") == [
        BeforeToolCallResult(block=True, reason="no")
    ]
    assert hook_recorder.results("pi_prepare_arguments") == [{"value": "NO"}]
    assert before.duration >= 0
    hook_recorder.clear()
    assert hook_recorder.calls() == []
    hook_recorder.detach()
    await session.hooks.on_event(AgentStartEvent())
    assert hook_recorder.names() == []
