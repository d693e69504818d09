"""Sync tools (a plain ``def`` under ``@tool``, a ``ToolDefinition`` whose ``execute`` is not
``async``) run in a worker thread that the first abort abandons: the call ends at once with
``Operation aborted`` and the thread's later result is discarded. Real threads, real time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.lowlevel

from pi_core import Agent, AgentToolResult, TextContent, ToolDefinition, tool
from pi_core._abort import Abort
from pi_core._loop.config import LoopConfig
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._providers.base import ScriptedProvider
from pi_core._tools.definition import to_agent_tool
from pi_core._wire.messages import AssistantMessage, ToolCall

LONG = 30.0


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test so no abandoned worker thread outlives it."""
    event = threading.Event()
    yield event
    event.set()


def _call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments or {})


def _tool_use(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(content=list(calls), stop_reason="toolUse")


async def _abort_after(abort: Abort, started: threading.Event) -> None:
    await trio.to_thread.run_sync(started.wait)
    await trio.sleep(0.05)
    abort.abort()


async def test_sync_tool_call_ends_at_the_first_abort(release: threading.Event) -> None:
    started = threading.Event()
    finished: list[str] = []

    @tool
    def nap(seconds: float) -> str:
        """Sleep in the worker thread."""
        started.set()
        release.wait(seconds)
        finished.append("done")
        return "slept"

    abort = Abort()
    begin = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_abort_after, abort, started)
        outcome = await run_tool_call(
            _call("n1", "nap", {"seconds": LONG}),
            AgentContext(tools=[to_agent_tool(nap)]),
            LoopConfig(),
            abort=abort,
        )
    assert time.monotonic() - begin < 1.0
    assert (outcome.result.text, outcome.is_error) == ("Operation aborted", True)
    # the abandoned thread finishes later; its result goes nowhere
    release.set()
    for _ in range(200):
        if finished:
            break
        await trio.sleep(0.01)
    assert finished == ["done"]
    assert (outcome.result.text, outcome.is_error) == ("Operation aborted", True)


async def test_sync_definition_execute_runs_in_a_thread_and_is_aborted(
    release: threading.Event,
) -> None:
    started = threading.Event()
    threads: list[str] = []

    def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        threads.append(threading.current_thread().name)
        started.set()
        release.wait(params["seconds"])
        return AgentToolResult(content=[TextContent(text="slept")])

    definition = ToolDefinition(
        name="nap",
        description="Sleep.",
        parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
        execute=execute,  # type: ignore[arg-type]
    )
    abort = Abort()
    begin = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_abort_after, abort, started)
        outcome = await run_tool_call(
            _call("n1", "nap", {"seconds": LONG}),
            AgentContext(tools=[to_agent_tool(definition)]),
            LoopConfig(),
            abort=abort,
        )
    assert time.monotonic() - begin < 1.0
    assert (outcome.result.text, outcome.is_error) == ("Operation aborted", True)
    assert threads != [threading.main_thread().name]


async def test_sync_definition_execute_gets_context_and_reports_updates() -> None:
    updates: list[str] = []

    def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text=f"half of {tool_call_id}")]))
        return AgentToolResult(content=[TextContent(text=f"{params['value']} in {ctx}")])

    definition = ToolDefinition(
        name="work",
        description="Work.",
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
        execute=execute,  # type: ignore[arg-type]
    )
    agent_tool = to_agent_tool(definition, context="the session")
    result = await agent_tool.execute("w1", {"value": "x"}, lambda r: updates.append(r.text))
    assert result.text == "x in the session"
    assert updates == ["half of w1"]


async def test_a_sync_execute_may_return_an_awaitable() -> None:
    async def later(value: str) -> AgentToolResult:
        await trio.lowlevel.checkpoint()
        return AgentToolResult(content=[TextContent(text=value)])

    definition = ToolDefinition(
        name="lazy",
        description="Return a coroutine.",
        parameters={"type": "object", "properties": {}},
        execute=lambda tool_call_id, params, on_update, ctx: later("from a coroutine"),
    )
    result = await to_agent_tool(definition).execute("l1", {}, None)
    assert result.text == "from a coroutine"


async def test_agent_abort_ends_a_sync_tool_within_a_second(release: threading.Event) -> None:
    started = threading.Event()

    @tool
    def nap(seconds: float) -> str:
        """Sleep in the worker thread."""
        started.set()
        release.wait(seconds)
        return "slept"

    provider = ScriptedProvider([_tool_use(_call("s", "nap", {"seconds": LONG}))])
    agent = Agent(provider, tools=[nap])
    begin = time.monotonic()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await trio.to_thread.run_sync(started.wait)
            agent.abort()
    assert time.monotonic() - begin < 1.0
    assert [m.text for m in agent.messages if m.role == "toolResult"] == ["Operation aborted"]
    assert agent.messages[-1].stop_reason == "aborted"
