"""Abort (DESIGN §3, spec §2.13): trio cancellation of running calls, preflight checks, the
turn completes, the next model call ends the run. Real trio time: tools really sleep."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from test_loop_support import (
    Recorder,
    call,
    make_tool,
    result_json,
    roles,
    text,
    tool_use,
    user,
)

from pi_core._abort import Abort
from pi_core._errors import ToolAborted
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.contexts import BeforeToolCallResult
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AgentToolResult, TextContent

LONG = 30.0  # a tool that would sleep this long must be cut short by the abort


async def sleeper(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    await trio.sleep(LONG)
    return AgentToolResult(content=[TextContent(text="finished")])


async def reporter(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    """Like bash: on cancellation, shielded cleanup, then the partial output as ToolAborted."""
    on_update(AgentToolResult(content=[TextContent(text="line 1")]))
    try:
        await trio.sleep(LONG)
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await trio.sleep(0.001)  # cleanup that must finish
        raise ToolAborted(
            AgentToolResult(
                content=[TextContent(text="line 1\n\nCommand aborted")], details={"partial": True}
            )
        ) from None
    return AgentToolResult(content=[TextContent(text="finished")])


async def fast(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text="fast done")])


async def run_with_abort_after(
    delay: float,
    script: list[Any],
    tools: list[Any],
    config: LoopConfig | None = None,
    abort: Abort | None = None,
) -> tuple[list[Any], Recorder, ScriptedProvider, float]:
    abort = abort or Abort()
    provider = ScriptedProvider(script)
    config = config or LoopConfig()
    config.provider = provider
    recorder = Recorder()
    start = trio.current_time()
    result: list[Any] = []

    async def abort_later() -> None:
        await trio.sleep(delay)
        abort.abort()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_later)
        result = await run_agent_loop(
            [user("go")], AgentContext(tools=tools), config, recorder, abort=abort
        )
    return result, recorder, provider, trio.current_time() - start


async def test_abort_cancels_running_tools_and_ends_the_run() -> None:
    script = [
        tool_use(call("a", "reporter"), call("b", "sleeper"), call("c", "fast")),
        text("never"),
    ]
    tools = [
        make_tool("reporter", reporter),
        make_tool("sleeper", sleeper),
        make_tool("fast", fast),
    ]
    messages, rec, provider, elapsed = await run_with_abort_after(0.1, script, tools)
    assert elapsed < 5
    results = [result_json(m) for m in messages if m.role == "toolResult"]
    assert results == [
        {
            "role": "toolResult",
            "toolCallId": "a",
            "toolName": "reporter",
            "content": [{"type": "text", "text": "line 1\n\nCommand aborted"}],
            "details": {"partial": True},
            "isError": True,
        },
        {
            "role": "toolResult",
            "toolCallId": "b",
            "toolName": "sleeper",
            "content": [{"type": "text", "text": "Operation aborted"}],
            "details": {},
            "isError": True,
        },
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "fast",
            "content": [{"type": "text", "text": "fast done"}],
            "isError": False,
        },
    ]
    assert rec.tool_events() == [
        "start:a",
        "start:b",
        "start:c",
        "update:a",
        "end:c",
        *rec.tool_events()[5:7],  # a and b settle in the order trio wakes them
        "msg:a",
        "msg:b",
        "msg:c",
    ]
    assert sorted(rec.tool_events()[5:7]) == ["end:a", "end:b"]
    # the turn completes, then the next model call sees the abort and the run ends
    assert len(provider.requests) == 2
    assert provider.played == 1
    assert roles(messages) == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    last = messages[-1]
    assert (last.stop_reason, last.error_message) == ("aborted", "Operation aborted")
    tail = rec.types[rec.types.index("turn_end") :]
    assert tail == [
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_abort_during_preflight_stops_preflighting() -> None:
    abort = Abort()
    log: list[str] = []

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        log.append(tool_call_id)
        return AgentToolResult(content=[TextContent(text="ran")])

    async def before(ctx: Any) -> None:
        if ctx.tool_call.id == "2":
            abort.abort()

    provider = ScriptedProvider([tool_use(call("1", "t"), call("2", "t"), call("3", "t"))])
    rec = Recorder()
    messages = await run_agent_loop(
        [user("go")],
        AgentContext(tools=[make_tool("t", execute)]),
        LoopConfig(provider=provider, before_tool_call=before),
        rec,
        abort=abort,
    )
    assert log == []
    assert rec.tool_events() == ["start:1", "start:2", "end:2", "end:1", "msg:1", "msg:2"]
    results = [(m.tool_call_id, m.text, m.is_error) for m in messages if m.role == "toolResult"]
    assert results == [("1", "Operation aborted", True), ("2", "Operation aborted", True)]
    assert messages[-1].stop_reason == "aborted"
    assert len(provider.requests) == 2


async def test_abort_before_a_block_still_reports_operation_aborted() -> None:
    abort = Abort()

    async def before(ctx: Any) -> BeforeToolCallResult:
        abort.abort()
        return BeforeToolCallResult(block=True, reason="denied")

    outcome = await run_tool_call(
        call("1", "t"),
        AgentContext(tools=[make_tool("t", fast)]),
        LoopConfig(before_tool_call=before),
        abort=abort,
    )
    assert (outcome.result.text, outcome.is_error) == ("Operation aborted", True)


async def test_sequential_abort_skips_the_remaining_calls() -> None:
    script = [tool_use(call("1", "sleeper"), call("2", "fast"))]
    tools = [make_tool("sleeper", sleeper), make_tool("fast", fast)]
    messages, rec, _, elapsed = await run_with_abort_after(
        0.02, script, tools, LoopConfig(tool_execution="sequential")
    )
    assert elapsed < 5
    assert rec.tool_events() == ["start:1", "end:1", "msg:1"]
    assert [(m.tool_call_id, m.text) for m in messages if m.role == "toolResult"] == [
        ("1", "Operation aborted")
    ]
    assert messages[-1].stop_reason == "aborted"


async def test_calls_waiting_for_a_slot_are_aborted_too() -> None:
    script = [tool_use(call("1", "sleeper"), call("2", "sleeper"), call("3", "sleeper"))]
    tools = [make_tool("sleeper", sleeper)]
    messages, _, _, elapsed = await run_with_abort_after(
        0.02, script, tools, LoopConfig(max_parallel_tools=1)
    )
    assert elapsed < 5
    assert [m.text for m in messages if m.role == "toolResult"] == ["Operation aborted"] * 3


async def test_abort_cancels_a_provider_stuck_on_the_network() -> None:
    class Stuck:
        requests = 0

        async def stream(self, request: Any, abort: Any) -> Any:
            Stuck.requests += 1
            await trio.sleep(LONG)
            yield  # pragma: no cover

    abort = Abort()
    rec = Recorder()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_abort_after, abort, 0.02)
            messages = await run_agent_loop(
                [user("go")], AgentContext(), LoopConfig(provider=Stuck()), rec, abort=abort
            )
    assert Stuck.requests == 1
    last = messages[-1]
    assert (last.stop_reason, last.error_message) == ("aborted", "Operation aborted")
    assert rec.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def _abort_after(abort: Abort, delay: float) -> None:
    await trio.sleep(delay)
    abort.abort()


async def test_a_run_aborted_before_it_starts_makes_one_aborted_model_call() -> None:
    abort = Abort()
    abort.abort()
    provider = ScriptedProvider([text("never")])
    messages = await run_agent_loop(
        [user("go")], AgentContext(), LoopConfig(provider=provider), Recorder(), abort=abort
    )
    assert len(provider.requests) == 1
    assert provider.played == 0
    assert messages[-1].stop_reason == "aborted"


async def test_outer_cancellation_propagates_instead_of_becoming_results() -> None:
    provider = ScriptedProvider([tool_use(call("1", "sleeper"))])
    rec = Recorder()
    with trio.move_on_after(0.02) as scope:
        await run_agent_loop(
            [user("go")],
            AgentContext(tools=[make_tool("sleeper", sleeper)]),
            LoopConfig(provider=provider),
            rec,
        )
    assert scope.cancelled_caught
    assert "tool_execution_end" not in rec.types


# --- the Abort object -------------------------------------------------------------------------


async def test_abort_object() -> None:
    abort = Abort()
    assert abort.aborted is False
    with abort.linked_scope() as scope:
        assert abort.statistics().linked_scopes == 1
        abort.abort()
        await trio.sleep(LONG)
    assert scope.cancelled_caught
    assert abort.aborted is True
    assert abort.statistics().linked_scopes == 0
    abort.abort()  # idempotent
    with abort.linked_scope() as late:
        await trio.sleep(LONG)
    assert late.cancelled_caught
    with trio.fail_after(1):
        await abort.wait()
    assert repr(abort) == "<Abort aborted=True linked_scopes=0>"


async def test_abort_wait_wakes_up_on_abort() -> None:
    abort = Abort()
    woke: list[float] = []

    async def waiter() -> None:
        await abort.wait()
        woke.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(0.01)
        assert woke == []
        abort.abort()
    assert len(woke) == 1


@pytest.mark.parametrize("with_limiter", [False, True])
async def test_a_tool_that_finishes_despite_the_abort_keeps_its_result(with_limiter: bool) -> None:
    async def stubborn(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        with trio.CancelScope(shield=True):
            await trio.sleep(0.03)
        return AgentToolResult(content=[TextContent(text="completed anyway")])

    config = LoopConfig(max_parallel_tools=2 if with_limiter else None)
    messages, _, _, _ = await run_with_abort_after(
        0.01, [tool_use(call("1", "s"))], [make_tool("s", stubborn)], config
    )
    assert [(m.text, m.is_error) for m in messages if m.role == "toolResult"] == [
        ("completed anyway", False)
    ]
