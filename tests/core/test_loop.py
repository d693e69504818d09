"""The agent loop: spec §8.1 scenarios 1–39 (as amended by the port decisions), §2.2–§2.12."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from test_loop_support import (
    ECHO_SCHEMA,
    Recorder,
    call,
    make_echo,
    make_tool,
    result_json,
    roles,
    run,
    text,
    tool_use,
    user,
)

from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import LENGTH_GUARD_TEXT, run_agent_loop, run_agent_loop_continue
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.contexts import AfterToolCallResult, BeforeToolCallResult
from pi_core._pipeline.outcome import tool_result_message
from pi_core._pipeline.pipeline import run_nested_tool_call, run_tool_call
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
)

CASES = Path("/work/shared/conformance/cases")


# --- 1, 2: basic runs ---------------------------------------------------------------------


async def test_1_text_only_run() -> None:
    messages, rec, provider = await run([text("Hi there!")], [])
    assert roles(messages) == ["user", "assistant"]
    assert messages[1].text == "Hi there!"
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
    assert rec.events[-1].messages == messages
    assert len(provider.requests) == 1


async def test_2_tool_call_round_trip_exact_events() -> None:
    log: list[Any] = []
    script = [tool_use(call("tool-1", "echo", {"value": "hello"})), text("done")]
    messages, rec, provider = await run(script, [make_echo(log)])
    assert log == [{"value": "hello"}]
    assert roles(messages) == ["user", "assistant", "toolResult", "assistant"]
    assert rec.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    start = rec.of("tool_execution_start")[0]
    assert start.to_json_dict() == {
        "type": "tool_execution_start",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "args": {"value": "hello"},
    }
    end = rec.of("tool_execution_end")[0]
    assert end.to_json_dict() == {
        "type": "tool_execution_end",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "result": {
            "content": [{"type": "text", "text": "echoed: hello"}],
            "details": {"value": "hello"},
        },
        "isError": False,
    }
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "content": [{"type": "text", "text": "echoed: hello"}],
        "details": {"value": "hello"},
        "isError": False,
    }
    turn_ends = rec.of("turn_end")
    assert [r.tool_call_id for r in turn_ends[0].tool_results] == ["tool-1"]
    assert turn_ends[1].tool_results == []
    # the second model call saw the tool result
    assert roles(provider.requests[1].messages) == ["user", "assistant", "toolResult"]


# --- 3: length guard ------------------------------------------------------------------------


async def test_3_length_truncated_tool_call_is_not_executed() -> None:
    log: list[Any] = []
    script = [tool_use(call("tool-1", "echo", {"value": "hel"}), stop_reason="length"), text("ok")]
    messages, rec, provider = await run(script, [make_echo(log)])
    assert log == []
    assert len(provider.requests) == 2
    assert roles(messages) == ["user", "assistant", "toolResult", "assistant"]
    expected = (
        'Tool call "echo" was not executed: the response hit the output token limit, so its '
        "arguments may be truncated. Re-issue the tool call with complete arguments."
    )
    end = rec.of("tool_execution_end")[0]
    assert end.is_error is True
    assert end.result.to_json_dict() == {
        "content": [{"type": "text", "text": expected}],
        "details": {},
    }
    assert rec.tool_events() == ["start:tool-1", "end:tool-1", "msg:tool-1"]


async def test_3_length_guard_runs_no_hook_and_no_preparation() -> None:
    seen: list[str] = []

    async def before(ctx: Any) -> None:
        seen.append("before")

    async def prepare(name: str, args: Any) -> None:
        seen.append("prepare")

    def tool_prepare(args: Any) -> Any:
        seen.append("tool_prepare")
        return args

    echo = make_echo()
    echo.prepare_arguments = tool_prepare
    script = [
        tool_use(call("a", "echo", {"value": 1}), call("b", "nope"), stop_reason="length"),
        text("ok"),
    ]
    config = LoopConfig(before_tool_call=before, prepare_arguments=prepare)
    messages, rec, _ = await run(script, [echo], config=config)
    assert seen == []
    assert [m.text for m in messages if m.role == "toolResult"] == [
        LENGTH_GUARD_TEXT.format(name="echo"),
        LENGTH_GUARD_TEXT.format(name="nope"),
    ]
    assert rec.tool_events() == ["start:a", "end:a", "msg:a", "start:b", "end:b", "msg:b"]


async def test_3_length_guard_events_match_the_conformance_case() -> None:
    case = json.loads((CASES / "loop-length-guard-events.json").read_text())
    read = make_tool(
        "read",
        _never,
        schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    script = [AssistantMessage.model_validate(m) for m in case["messages"]] + [text("done")]
    _, rec, _ = await run(script, [read], prompt="replay")
    expected = case["expect"]["results"]
    first = rec.types.index("tool_execution_start")
    ours = [e.to_json_dict() for e in rec.events[first : first + 4]]
    for event in ours:
        if "message" in event:
            event["message"].pop("timestamp")
    assert ours == expected[:4]
    turn_end = rec.events[first + 4]
    assert [result_json(m) for m in turn_end.tool_results] == expected[4]["toolResults"]


async def _never(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    raise AssertionError("must not run")


# --- 4, 5: argument preparation -----------------------------------------------------------


async def test_4_before_hook_mutation_reaches_execute_without_revalidation() -> None:
    log: list[Any] = []

    async def before(ctx: Any) -> None:
        ctx.args["value"] = 123

    script = [tool_use(call("tool-1", "echo", {"value": "hello"})), text("done")]
    messages, _, _ = await run(script, [make_echo(log)], config=LoopConfig(before_tool_call=before))
    assert log == [{"value": 123}]
    assert messages[2].text == "echoed: 123"


async def test_5_prepare_arguments_runs_before_validation() -> None:
    received: list[Any] = []
    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                },
            }
        },
        "required": ["edits"],
    }

    def fold(args: Any) -> Any:
        if isinstance(args, dict) and "oldText" in args:
            return {"edits": [{"oldText": args["oldText"], "newText": args["newText"]}]}
        return args

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        received.append(params)
        return AgentToolResult(content=[TextContent(text="ok")])

    edit = make_tool("edit", execute, schema=schema, prepare_arguments=fold)
    raw = {"oldText": "before", "newText": "after"}
    script = [tool_use(call("tool-1", "edit", raw)), text("done")]
    _, rec, _ = await run(script, [edit])
    assert received == [{"edits": [{"oldText": "before", "newText": "after"}]}]
    # events keep the raw arguments
    assert rec.of("tool_execution_start")[0].args == raw


async def test_config_prepare_arguments_runs_after_the_tools_own() -> None:
    order: list[Any] = []
    log: list[Any] = []

    def tool_prepare(args: Any) -> Any:
        order.append(("tool", dict(args)))
        return {"value": args["v"]}

    async def prepare(name: str, args: Any) -> Any:
        order.append((name, dict(args)))
        return {"value": args["value"] + "!"}

    async def keep(name: str, args: Any) -> None:
        return None

    echo = make_echo(log)
    echo.prepare_arguments = tool_prepare
    script = [tool_use(call("t", "echo", {"v": "x"})), text("done")]
    await run(script, [echo], config=LoopConfig(prepare_arguments=prepare))
    assert order == [("tool", {"v": "x"}), ("echo", {"value": "x"})]
    assert log == [{"value": "x!"}]

    log.clear()
    echo2 = make_echo(log)
    script = [tool_use(call("t", "echo", {"value": "same"})), text("done")]
    await run(script, [echo2], config=LoopConfig(prepare_arguments=keep))
    assert log == [{"value": "same"}]


# --- 6, 8, 9, 10: scheduling ----------------------------------------------------------------


def _sleeper(name: str, delay: float, log: list[str], **kwargs: Any) -> Any:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        log.append(f"start:{name}:{tool_call_id}")
        await trio.sleep(delay)
        log.append(f"finish:{name}:{tool_call_id}")
        return AgentToolResult(content=[TextContent(text=f"{name} done")], **kwargs)

    return execute


async def test_6_parallel_completion_order_vs_source_order() -> None:
    log: list[str] = []
    first = make_tool("first", _sleeper("first", 0.1, log))
    second = make_tool("second", _sleeper("second", 0, log))
    script = [tool_use(call("tool-1", "first"), call("tool-2", "second")), text("done")]
    messages, rec, _ = await run(script, [first, second])
    assert log.index("start:second:tool-2") < log.index("finish:first:tool-1")
    assert [e.tool_call_id for e in rec.of("tool_execution_end")] == ["tool-2", "tool-1"]
    assert rec.tool_events() == [
        "start:tool-1",
        "start:tool-2",
        "end:tool-2",
        "end:tool-1",
        "msg:tool-1",
        "msg:tool-2",
    ]
    assert [r.tool_call_id for r in rec.of("turn_end")[0].tool_results] == ["tool-1", "tool-2"]
    assert [m.tool_call_id for m in messages if m.role == "toolResult"] == ["tool-1", "tool-2"]


async def test_8_per_tool_sequential_forces_sequential() -> None:
    log: list[str] = []
    slow = make_tool("slow", _sleeper("slow", 0.01, log), execution_mode="sequential")
    script = [tool_use(call("tool-1", "slow"), call("tool-2", "slow")), text("done")]
    messages, rec, _ = await run(script, [slow])
    assert log == [
        "start:slow:tool-1",
        "finish:slow:tool-1",
        "start:slow:tool-2",
        "finish:slow:tool-2",
    ]
    # sequential: each call's result message comes before the next call starts
    assert rec.tool_events() == [
        "start:tool-1",
        "end:tool-1",
        "msg:tool-1",
        "start:tool-2",
        "end:tool-2",
        "msg:tool-2",
    ]
    assert [m.tool_call_id for m in messages if m.role == "toolResult"] == ["tool-1", "tool-2"]


async def test_9_one_sequential_tool_serializes_mixed_batch() -> None:
    log: list[str] = []
    slow = make_tool("slow", _sleeper("slow", 0.01, log), execution_mode="sequential")
    fast = make_tool("fast", _sleeper("fast", 0, log))
    script = [tool_use(call("a", "slow"), call("b", "fast"), call("c", "unknown")), text("done")]
    await run(script, [slow, fast])
    assert log == ["start:slow:a", "finish:slow:a", "start:fast:b", "finish:fast:b"]


async def test_unknown_names_do_not_make_a_batch_sequential() -> None:
    log: list[str] = []
    a = make_tool("a", _sleeper("a", 0.01, log))
    b = make_tool("b", _sleeper("b", 0.01, log))
    script = [tool_use(call("1", "a"), call("2", "zzz"), call("3", "b")), text("done")]
    await run(script, [a, b])
    assert log[:2] == ["start:a:1", "start:b:3"]


async def test_config_sequential_serializes_parallel_tools() -> None:
    log: list[str] = []
    a = make_tool("a", _sleeper("a", 0.01, log))
    script = [tool_use(call("1", "a"), call("2", "a")), text("done")]
    await run(script, [a], config=LoopConfig(tool_execution="sequential"))
    assert log == ["start:a:1", "finish:a:1", "start:a:2", "finish:a:2"]


async def test_10_all_parallel_tools_run_concurrently() -> None:
    log: list[str] = []
    par = make_tool("par", _sleeper("par", 0.01, log), execution_mode="parallel")
    script = [tool_use(call("tool-1", "par"), call("tool-2", "par")), text("done")]
    await run(script, [par])
    assert log[:2] == ["start:par:tool-1", "start:par:tool-2"]


async def test_max_parallel_tools_caps_concurrency() -> None:
    running = 0
    peak = 0

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await trio.sleep(0.01)
        running -= 1
        return AgentToolResult(content=[TextContent(text=tool_call_id)])

    t = make_tool("t", execute)
    calls = [call(f"c{i}", "t") for i in range(5)]
    messages, _, _ = await run(
        [tool_use(*calls), text("done")], [t], config=LoopConfig(max_parallel_tools=2)
    )
    assert peak == 2
    assert [m.text for m in messages if m.role == "toolResult"] == ["c0", "c1", "c2", "c3", "c4"]

    peak = 0
    await run([tool_use(*calls), text("done")], [t])
    assert peak == 5


async def test_max_parallel_tools_below_one_is_rejected_before_any_event() -> None:
    rec = Recorder()
    with pytest.raises(ValueError, match=r"^max_parallel_tools must be at least 1 \(got 0\)$"):
        await run_agent_loop([user("x")], AgentContext(), LoopConfig(max_parallel_tools=0), rec)
    assert rec.events == []


# --- 7, 37, 38: steering and follow-ups -----------------------------------------------------


async def test_7_steering_is_injected_after_the_whole_batch() -> None:
    executed: list[str] = []
    polls = 0

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        executed.append(tool_call_id)
        return AgentToolResult(content=[TextContent(text=f"tool:{tool_call_id}")])

    async def steering() -> list[Any]:
        nonlocal polls
        polls += 1
        if executed and polls == 2:
            return [user("interrupt")]
        return []

    t = make_tool("t", execute)
    script = [tool_use(call("tool-1", "t"), call("tool-2", "t")), text("done")]
    config = LoopConfig(tool_execution="sequential", get_steering_messages=steering)
    messages, rec, provider = await run(script, [t], config=config)
    assert executed == ["tool-1", "tool-2"]
    assert [e.is_error for e in rec.of("tool_execution_end")] == [False, False]
    started = [
        e.message.text if e.message.role == "toolResult" else e.message.content[0].text
        for e in rec.of("message_start")
        if e.message.role in ("toolResult", "user")
    ]
    assert started == ["Hello", "tool:tool-1", "tool:tool-2", "interrupt"]
    # the steering message opens the next turn: turn_end, turn_start, its events, the model
    i = [
        n
        for n, e in enumerate(rec.events)
        if e.type == "message_start" and e.message.role == "user"
    ][1]
    assert rec.types[i - 2 : i + 4] == [
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
    ]
    assert [m.role for m in provider.requests[1].messages][-1] == "user"
    assert provider.requests[1].messages[-1].content[0].text == "interrupt"
    assert roles(messages) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]


async def test_37_follow_up_queue_starts_a_new_turn() -> None:
    polls = 0

    async def follow_ups() -> list[Any]:
        nonlocal polls
        polls += 1
        return [user("more")] if polls == 1 else []

    script = [text("first"), text("second")]
    messages, rec, provider = await run(
        script, [], config=LoopConfig(get_follow_up_messages=follow_ups)
    )
    assert polls == 2
    assert roles(messages) == ["user", "assistant", "user", "assistant"]
    assert rec.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert len(provider.requests) == 2


async def test_38_terminate_does_not_swallow_steering() -> None:
    polls = 0

    async def steering() -> list[Any]:
        nonlocal polls
        polls += 1
        return [user("steer")] if polls == 2 else []

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("after steering")]
    config = LoopConfig(get_steering_messages=steering)
    messages, _, provider = await run(script, [make_echo(terminate=True)], config=config)
    assert len(provider.requests) == 2
    assert roles(messages) == ["user", "assistant", "toolResult", "user", "assistant"]


# --- 11, 12: prepare_next_turn, should_stop_after_turn --------------------------------------


async def test_11_prepare_next_turn_replaces_the_context() -> None:
    calls = 0

    async def prepare_next_turn(info: Any) -> dict[str, Any] | None:
        nonlocal calls
        calls += 1
        if calls == 1:
            ctx = info.context
            return {
                "context": AgentContext(
                    system_prompt="second prompt", messages=ctx.messages, tools=ctx.tools
                )
            }
        return None

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    config = LoopConfig(prepare_next_turn=prepare_next_turn)
    provider = ScriptedProvider(script)
    config.provider = provider
    await run_agent_loop(
        [user("hi")],
        AgentContext(system_prompt="first prompt", tools=[make_echo()]),
        config,
        Recorder(),
    )
    assert [r.system_prompt for r in provider.requests] == ["first prompt", "second prompt"]


async def test_prepare_next_turn_can_switch_the_provider() -> None:
    other = ScriptedProvider([text("from other")])

    async def prepare_next_turn(info: Any) -> dict[str, Any]:
        return {"provider": other}

    script = [tool_use(call("tool-1", "echo", {"value": "x"}))]
    messages, _, provider = await run(
        script, [make_echo()], config=LoopConfig(prepare_next_turn=prepare_next_turn)
    )
    assert len(provider.requests) == 1
    assert len(other.requests) == 1
    assert messages[-1].text == "from other"


async def test_12_should_stop_after_turn() -> None:
    log: list[Any] = []
    steering_polls = 0
    follow_up_polls = 0
    seen: list[Any] = []

    async def steering() -> list[Any]:
        nonlocal steering_polls
        steering_polls += 1
        return []

    async def follow_ups() -> list[Any]:
        nonlocal follow_up_polls
        follow_up_polls += 1
        return []

    async def should_stop(info: Any) -> bool:
        seen.append(([r.tool_call_id for r in info.tool_results], roles(info.context.messages)))
        return True

    config = LoopConfig(
        should_stop_after_turn=should_stop,
        get_steering_messages=steering,
        get_follow_up_messages=follow_ups,
    )
    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("never")]
    messages, rec, provider = await run(script, [make_echo(log)], config=config)
    assert len(provider.requests) == 1
    assert log == [{"value": "x"}]
    assert steering_polls == 1
    assert follow_up_polls == 0
    assert seen == [(["tool-1"], ["user", "assistant", "toolResult"])]
    assert roles(messages) == ["user", "assistant", "toolResult"]
    assert rec.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


# --- 13, 14, 15, 36: terminate ----------------------------------------------------------------


async def test_13_terminate_on_every_result_stops_after_the_batch() -> None:
    script = [tool_use(call("tool-1", "echo", {"value": "x"}))]
    messages, rec, provider = await run(
        script, [make_echo(terminate=True)], when_exhausted="repeat"
    )
    assert len(provider.requests) == 1
    assert roles(messages) == ["user", "assistant", "toolResult"]
    assert len(rec.of("turn_end")) == 1


async def test_14_partial_terminate_continues() -> None:
    first = make_echo(terminate=True, name="first")
    second = make_echo(name="second")
    script = [
        tool_use(call("tool-1", "first", {"value": "a"}), call("tool-2", "second", {"value": "b"})),
        text("done"),
    ]
    messages, _, provider = await run(script, [first, second])
    assert len(provider.requests) == 2
    assert roles(messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]


async def test_15_after_hook_sets_terminate() -> None:
    async def after(ctx: Any) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    script = [tool_use(call("tool-1", "echo", {"value": "x"}))]
    messages, _, provider = await run(
        script, [make_echo()], config=LoopConfig(after_tool_call=after), when_exhausted="repeat"
    )
    assert len(provider.requests) == 1
    assert messages[-1].role == "toolResult"


async def test_36_blocked_with_terminate_stops_the_run() -> None:
    async def before(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="no", terminate=True)

    script = [tool_use(call("tool-1", "echo", {"value": "x"}))]
    messages, rec, provider = await run(
        script, [make_echo()], config=LoopConfig(before_tool_call=before), when_exhausted="repeat"
    )
    assert len(provider.requests) == 1
    end = rec.of("tool_execution_end")[0]
    assert end.result.to_json_dict() == {
        "content": [{"type": "text", "text": "no"}],
        "details": {},
        "terminate": True,
    }
    assert result_json(messages[-1]) == {
        "role": "toolResult",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "content": [{"type": "text", "text": "no"}],
        "details": {},
        "isError": True,
    }


async def test_an_error_result_in_the_batch_prevents_termination() -> None:
    script = [
        tool_use(call("tool-1", "echo", {"value": "x"}), call("tool-2", "nope")),
        text("done"),
    ]
    _, _, provider = await run(script, [make_echo(terminate=True)])
    assert len(provider.requests) == 2


# --- 16–21: continue, context transforms ----------------------------------------------------


async def test_16_continue_on_empty_context() -> None:
    rec = Recorder()
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        await run_agent_loop_continue(AgentContext(), LoopConfig(), rec)
    assert rec.events == []


async def test_17_continue_from_assistant() -> None:
    rec = Recorder()
    context = AgentContext(messages=[user("hi"), text("hello")])
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await run_agent_loop_continue(context, LoopConfig(), rec)
    assert rec.events == []


async def test_18_continue_emits_no_prior_message_events() -> None:
    provider = ScriptedProvider([text("answer")])
    rec = Recorder()
    context = AgentContext(messages=[user("Hello")])
    messages = await run_agent_loop_continue(context, LoopConfig(provider=provider), rec)
    assert roles(messages) == ["assistant"]
    assert len(rec.of("message_end")) == 1
    assert rec.types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert rec.events[-1].messages == messages
    assert roles(context.messages) == ["user"]  # the caller's list is not changed


async def test_19_custom_last_message_allowed_in_continue() -> None:
    seen: list[Any] = []

    async def convert(messages: list[Any]) -> list[Any]:
        seen.append([m.role for m in messages])
        return [user(m.text) if m.role == "custom-note" else m for m in messages]

    provider = ScriptedProvider([text("ok")])
    context = AgentContext(messages=[user("hi"), CustomMessage(role="custom-note", text="note")])
    messages = await run_agent_loop_continue(
        context, LoopConfig(provider=provider, convert_to_llm=convert), Recorder()
    )
    assert roles(messages) == ["assistant"]
    assert seen == [["user", "custom-note"]]
    assert roles(provider.requests[0].messages) == ["user", "user"]


async def test_20_transform_context_runs_before_convert_to_llm() -> None:
    converted: list[int] = []

    async def transform(messages: list[Any]) -> list[Any]:
        return messages[-2:]

    async def convert(messages: list[Any]) -> list[Any]:
        converted.append(len(messages))
        return messages

    old = [user("1"), text("2"), user("3"), text("4")]
    provider = ScriptedProvider([text("ok")])
    config = LoopConfig(provider=provider, transform_context=transform, convert_to_llm=convert)
    await run_agent_loop([user("new")], AgentContext(messages=old), config, Recorder())
    assert converted == [2]
    assert [m.content[0].text for m in provider.requests[0].messages] == ["4", "new"]


async def test_21_custom_messages_are_filtered_by_the_default_convert_to_llm() -> None:
    provider = ScriptedProvider([text("ok")])
    context = AgentContext(messages=[CustomMessage(role="notification", text="ping")])
    messages = await run_agent_loop(
        [user("hi")], context, LoopConfig(provider=provider), Recorder()
    )
    assert roles(provider.requests[0].messages) == ["user"]
    assert roles(messages) == ["user", "assistant"]


async def test_structured_content_never_reaches_the_model() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="r")], structured_content={"ok": True})

    t = make_tool("t", execute)
    messages, rec, provider = await run([tool_use(call("c", "t")), text("done")], [t])
    # Pi 1.6.0: never copied onto the ToolResultMessage; programs read tool_execution_end
    assert rec.of("tool_execution_end")[0].result.structured_content == {"ok": True}
    (message,) = [m for m in messages if m.role == "toolResult"]
    assert message.structured_content is None
    assert "structuredContent" not in message.to_json_dict()
    (sent,) = [m for m in provider.requests[1].messages if m.role == "toolResult"]
    assert sent.to_json_dict()["toolCallId"] == "c"
    assert "structuredContent" not in sent.to_json_dict()


# --- 22–31: error conversions -----------------------------------------------------------------


async def test_22_tool_not_found() -> None:
    script = [tool_use(call("tool-1", "nope", {"path": "x"})), text("recovered")]
    messages, rec, provider = await run(script, [make_echo()])
    end = rec.of("tool_execution_end")[0]
    assert end.is_error is True
    assert end.result.to_json_dict() == {
        "content": [{"type": "text", "text": "Tool nope not found"}],
        "details": {},
    }
    assert len(provider.requests) == 2
    assert messages[-1].text == "recovered"


async def test_22_lookup_is_exact_and_case_sensitive() -> None:
    script = [tool_use(call("tool-1", "Echo", {"value": "x"})), text("done")]
    messages, _, _ = await run(script, [make_echo()])
    assert messages[2].text == "Tool Echo not found"


async def test_24_blocked_without_reason() -> None:
    log: list[Any] = []
    after_calls: list[Any] = []

    async def before(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True)

    async def after(ctx: Any) -> None:
        after_calls.append(ctx)

    config = LoopConfig(before_tool_call=before, after_tool_call=after)
    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, rec, _ = await run(script, [make_echo(log)], config=config)
    assert log == []
    assert after_calls == []
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "content": [{"type": "text", "text": "Tool execution was blocked"}],
        "details": {},
        "isError": True,
    }
    assert rec.of("tool_execution_end")[0].is_error is True


async def test_25_blocked_with_reason() -> None:
    async def before(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="Command is not allowed")

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, _, _ = await run(script, [make_echo()], config=LoopConfig(before_tool_call=before))
    assert messages[2].text == "Command is not allowed"
    assert messages[2].is_error is True


async def test_a_non_blocking_before_result_lets_the_call_run() -> None:
    async def before(ctx: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=False, reason="ignored")

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, _, _ = await run(script, [make_echo()], config=LoopConfig(before_tool_call=before))
    assert messages[2].text == "echoed: x"


async def test_before_hook_sees_the_original_call_and_the_assistant_message() -> None:
    seen: list[Any] = []

    async def before(ctx: Any) -> None:
        seen.append((ctx.tool_call.id, ctx.tool.name, ctx.assistant_message.stop_reason))
        seen.append(roles(ctx.context.messages))

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    await run(script, [make_echo()], config=LoopConfig(before_tool_call=before))
    assert seen == [("tool-1", "echo", "toolUse"), ["user", "assistant"]]


async def test_26_before_hook_raises() -> None:
    async def before(ctx: Any) -> None:
        raise RuntimeError("hookfail")

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, _, _ = await run(script, [make_echo()], config=LoopConfig(before_tool_call=before))
    assert result_json(messages[2])["content"] == [{"type": "text", "text": "hookfail"}]
    assert result_json(messages[2])["details"] == {}
    assert messages[2].is_error is True


async def test_prepare_arguments_raising_becomes_the_error_result() -> None:
    def bad(args: Any) -> Any:
        raise ValueError("cannot fold")

    echo = make_echo()
    echo.prepare_arguments = bad

    async def config_prepare(name: str, args: Any) -> Any:
        raise KeyError("k")

    script = [tool_use(call("a", "echo", {"value": "x"})), text("done")]
    messages, _, _ = await run(script, [echo])
    assert messages[2].text == "cannot fold"
    messages, _, _ = await run(
        script, [make_echo()], config=LoopConfig(prepare_arguments=config_prepare)
    )
    assert messages[2].text == "'k'"


async def test_27_execute_raises() -> None:
    async def boom(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        raise RuntimeError("boom")

    async def bare(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        raise RuntimeError

    script = [tool_use(call("a", "boom"), call("b", "bare")), text("done")]
    messages, rec, _ = await run(script, [make_tool("boom", boom), make_tool("bare", bare)])
    assert [result_json(m) for m in messages[2:4]] == [
        {
            "role": "toolResult",
            "toolCallId": "a",
            "toolName": "boom",
            "content": [{"type": "text", "text": "boom"}],
            "details": {},
            "isError": True,
        },
        {
            "role": "toolResult",
            "toolCallId": "b",
            "toolName": "bare",
            # an exception without a message reports its class name
            "content": [{"type": "text", "text": "RuntimeError"}],
            "details": {},
            "isError": True,
        },
    ]
    assert [e.is_error for e in rec.of("tool_execution_end")] == [True, True]


async def test_28_after_hook_raises() -> None:
    async def after(ctx: Any) -> None:
        raise RuntimeError("afterfail")

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, rec, _ = await run(script, [make_echo()], config=LoopConfig(after_tool_call=after))
    assert rec.of("tool_execution_end")[0].result.to_json_dict() == {
        "content": [{"type": "text", "text": "afterfail"}],
        "details": {},
    }
    assert messages[2].is_error is True


async def test_after_hook_sees_the_result_and_a_failed_execute() -> None:
    seen: list[Any] = []

    async def after(ctx: Any) -> None:
        seen.append((ctx.tool_call.id, ctx.result.text, ctx.is_error, ctx.args))

    async def boom(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        raise RuntimeError("boom")

    script = [tool_use(call("a", "echo", {"value": "x"}), call("b", "boom")), text("done")]
    await run(
        script, [make_echo(), make_tool("boom", boom)], config=LoopConfig(after_tool_call=after)
    )
    assert seen == [("a", "echoed: x", False, {"value": "x"}), ("b", "boom", True, {})]


async def test_29_after_hook_field_override() -> None:
    async def after(ctx: Any) -> AfterToolCallResult:
        return AfterToolCallResult(is_error=True, details=None)

    script = [tool_use(call("tool-1", "echo", {"value": "x"})), text("done")]
    messages, rec, _ = await run(script, [make_echo()], config=LoopConfig(after_tool_call=after))
    end = rec.of("tool_execution_end")[0]
    assert end.is_error is True
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "content": [{"type": "text", "text": "echoed: x"}],
        "details": {"value": "x"},
        "isError": True,
    }


@pytest.mark.parametrize(
    ("override", "content", "structured"),
    [
        (AfterToolCallResult(content=[TextContent(text="B")]), "B", None),
        (
            AfterToolCallResult(content=[TextContent(text="B")], structured_content={"ok": False}),
            "B",
            {"ok": False},
        ),
        (AfterToolCallResult(details={"audited": True}), "A", {"ok": True}),
    ],
)
async def test_30_structured_content_cleared_when_content_replaced(
    override: AfterToolCallResult, content: str, structured: Any
) -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="A")], structured_content={"ok": True})

    async def after(ctx: Any) -> AfterToolCallResult:
        return override

    script = [tool_use(call("c", "t")), text("done")]
    messages, rec, _ = await run(
        script, [make_tool("t", execute)], config=LoopConfig(after_tool_call=after)
    )
    final = rec.of("tool_execution_end")[0].result
    assert final.text == content
    assert final.structured_content == structured
    if structured is None:
        assert "structuredContent" not in rec.of("tool_execution_end")[0].to_json_dict()["result"]
    (message,) = [m for m in messages if m.role == "toolResult"]
    assert "structuredContent" not in result_json(message)  # never on the message (Pi 1.6.0)


async def test_31_tool_returns_is_error() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(
            content=[TextContent(text="查询失败")],
            details={"requestId": "r-1"},
            structured_content={"ok": False},
            is_error=True,
        )

    messages, rec, _ = await run(
        [tool_use(call("c", "q")), text("done")], [make_tool("q", execute)]
    )
    assert rec.of("tool_execution_end")[0].is_error is True
    assert rec.of("tool_execution_end")[0].result.structured_content == {"ok": False}
    (message,) = [m for m in messages if m.role == "toolResult"]
    assert result_json(message) == {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "q",
        "content": [{"type": "text", "text": "查询失败"}],
        "details": {"requestId": "r-1"},
        "isError": True,
    }


async def test_tool_result_message_carries_usage_and_omits_unset_fields() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="x")], usage={"input": 3})

    async def bare(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult()

    script = [tool_use(call("a", "u"), call("b", "bare")), text("done")]
    messages, _, _ = await run(script, [make_tool("u", execute), make_tool("bare", bare)])
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "a",
        "toolName": "u",
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
        "usage": {"input": 3},
    }
    assert result_json(messages[3]) == {
        "role": "toolResult",
        "toolCallId": "b",
        "toolName": "bare",
        "content": [],
        "isError": False,
    }
    assert isinstance(messages[2].timestamp, int)


async def test_a_tool_returning_a_dict_or_str_is_coerced() -> None:
    async def as_dict(tool_call_id: str, params: Any, on_update: Any = None) -> Any:
        return {"content": [{"type": "text", "text": "from dict"}], "details": {"a": 1}}

    async def as_str(tool_call_id: str, params: Any, on_update: Any = None) -> Any:
        return "plain"

    async def as_bad(tool_call_id: str, params: Any, on_update: Any = None) -> Any:
        return {"content": 5}

    script = [tool_use(call("a", "d"), call("b", "s"), call("c", "x")), text("done")]
    messages, _, _ = await run(
        script, [make_tool("d", as_dict), make_tool("s", as_str), make_tool("x", as_bad)]
    )
    assert [m.text for m in messages[2:4]] == ["from dict", "plain"]
    assert messages[2].details == {"a": 1}
    assert messages[4].is_error is True
    assert messages[4].text.startswith("1 validation error for AgentToolResult")


# --- 32: provider errors ----------------------------------------------------------------------


async def test_32_provider_error_stops_the_run() -> None:
    log: list[Any] = []
    failing = AssistantMessage(
        content=[call("tool-1", "echo", {"value": "x"})],
        stop_reason="error",
        error_message="overloaded",
    )
    messages, rec, provider = await run([failing, text("never")], [make_echo(log)])
    assert log == []
    assert len(provider.requests) == 1
    assert rec.types[-2:] == ["turn_end", "agent_end"]
    assert rec.of("turn_end")[0].tool_results == []
    assert "tool_execution_start" not in rec.types
    assert roles(messages) == ["user", "assistant"]


async def test_a_raising_provider_becomes_an_error_assistant_message() -> None:
    class Exploding:
        async def stream(self, request: Any, abort: Any) -> Any:
            raise RuntimeError("provider exploded")
            yield  # pragma: no cover

    rec = Recorder()
    messages = await run_agent_loop(
        [user("hello")], AgentContext(), LoopConfig(provider=Exploding()), rec
    )
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
    assert messages[-1].to_json_dict(exclude_unset=False) | {"timestamp": 0} == {
        "role": "assistant",
        "content": [{"type": "text", "text": ""}],
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "error",
        "errorMessage": "provider exploded",
        "timestamp": 0,
    }


async def test_an_exhausted_script_ends_the_run_with_an_error_message() -> None:
    messages, rec, _ = await run([tool_use(call("a", "echo", {"value": "x"}))], [make_echo()])
    assert messages[-1].stop_reason == "error"
    assert messages[-1].error_message == "ScriptedProvider has no more messages (1 played)"
    assert rec.types[-2:] == ["turn_end", "agent_end"]


async def test_convert_to_llm_raising_is_a_model_call_failure() -> None:
    async def convert(messages: list[Any]) -> list[Any]:
        raise RuntimeError("cannot convert")

    messages, _, provider = await run([text("x")], [], config=LoopConfig(convert_to_llm=convert))
    assert messages[-1].error_message == "cannot convert"
    assert provider.requests == []


async def test_streaming_provider_emits_message_updates() -> None:
    provider = ScriptedProvider(
        [tool_use(call("c", "echo", {"value": "v"})), text("done")], stream_deltas=True
    )
    rec = Recorder()
    messages = await run_agent_loop(
        [user("hi")], AgentContext(tools=[make_echo()]), LoopConfig(provider=provider), rec
    )
    first_turn = rec.types[: rec.types.index("tool_execution_start")]
    assert first_turn == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update",
        "message_update",
        "message_update",
        "message_end",
    ]
    updates = rec.of("message_update")
    assert [u.assistant_message_event for u in updates[:3]] == [
        {"type": "toolcall_start", "contentIndex": 0},
        {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"value": "v"}'},
        {
            "type": "toolcall_end",
            "contentIndex": 0,
            "toolCall": {
                "type": "toolCall",
                "id": "c",
                "name": "echo",
                "arguments": {"value": "v"},
            },
        },
    ]
    assert rec.of("message_start")[1].message.content == []
    assert updates[0].message.tool_calls[0].arguments == {}
    assert messages[2].text == "echoed: v"
    assert [u.assistant_message_event["type"] for u in updates[3:]] == [
        "text_start",
        "text_delta",
        "text_end",
    ]


# --- 34, 35: updates ----------------------------------------------------------------------------


async def test_34_tool_execution_update_forwarding() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="partial")], details={"p": 1}))
        await trio.lowlevel.checkpoint()
        return AgentToolResult(content=[TextContent(text="final")])

    script = [tool_use(call("c", "t", {"raw": 1})), text("done")]
    schema = {"type": "object", "properties": {"raw": {"type": "number"}}}
    _, rec, _ = await run(script, [make_tool("t", execute, schema=schema)])
    assert rec.tool_events() == ["start:c", "update:c", "end:c", "msg:c"]
    assert rec.of("tool_execution_update")[0].to_json_dict() == {
        "type": "tool_execution_update",
        "toolCallId": "c",
        "toolName": "t",
        "args": {"raw": 1},
        "partialResult": {"content": [{"type": "text", "text": "partial"}], "details": {"p": 1}},
    }


async def test_35_late_updates_are_ignored() -> None:
    stored: list[Any] = []

    async def leaky(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        stored.append(on_update)
        return AgentToolResult(content=[TextContent(text="quick")])

    async def slow(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        await trio.sleep(0.01)
        stored[0](AgentToolResult(content=[TextContent(text="late")]))
        await trio.sleep(0.01)
        return AgentToolResult(content=[TextContent(text="slow")])

    script = [tool_use(call("a", "leaky"), call("b", "slow")), text("done")]
    _, rec, _ = await run(script, [make_tool("leaky", leaky), make_tool("slow", slow)])
    assert rec.of("tool_execution_update") == []
    # after the run, too
    stored[0](AgentToolResult(content=[TextContent(text="later")]))
    assert rec.of("tool_execution_update") == []

    stored.clear()
    script = [tool_use(call("a", "leaky")), text("done")]
    _, rec, _ = await run(
        script, [make_tool("leaky", leaky)], config=LoopConfig(tool_execution="sequential")
    )
    stored[0](AgentToolResult(content=[TextContent(text="late")]))
    assert rec.of("tool_execution_update") == []


async def test_updates_of_concurrent_calls_never_overlap_in_the_sink() -> None:
    active = 0
    overlaps = 0

    class SlowSink(Recorder):
        async def __call__(self, event: Any) -> None:
            nonlocal active, overlaps
            active += 1
            if active > 1:
                overlaps += 1
            await trio.sleep(0.001)
            await super().__call__(event)
            active -= 1

    async def chatty(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        for i in range(5):
            on_update(AgentToolResult(content=[TextContent(text=f"{tool_call_id}:{i}")]))
            await trio.lowlevel.checkpoint()
        return AgentToolResult(content=[TextContent(text="done")])

    sink = SlowSink()
    provider = ScriptedProvider([tool_use(call("a", "c"), call("b", "c")), text("done")])
    await run_agent_loop(
        [user("x")],
        AgentContext(tools=[make_tool("c", chatty)]),
        LoopConfig(provider=provider),
        sink,
    )
    assert overlaps == 0
    per_call = {
        cid: [
            e.partial_result.text for e in sink.of("tool_execution_update") if e.tool_call_id == cid
        ]
        for cid in ("a", "b")
    }
    assert per_call == {"a": [f"a:{i}" for i in range(5)], "b": [f"b:{i}" for i in range(5)]}
    events = sink.tool_events()
    for cid in ("a", "b"):
        assert events.index(f"end:{cid}") > max(
            i for i, e in enumerate(events) if e == f"update:{cid}"
        )


# --- 39: parallel preflight ordering ----------------------------------------------------------


async def test_39_parallel_preflight_with_an_immediate_failure_in_the_middle() -> None:
    async def slow(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        await trio.sleep(0.2)
        return AgentToolResult(content=[TextContent(text="A")])

    async def fast(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="C")])

    async def before(ctx: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.id == "B":
            return BeforeToolCallResult(block=True, reason="denied")
        return None

    script = [tool_use(call("A", "slow"), call("B", "fast"), call("C", "fast")), text("done")]
    messages, rec, _ = await run(
        script,
        [make_tool("slow", slow), make_tool("fast", fast)],
        config=LoopConfig(before_tool_call=before),
    )
    assert rec.tool_events() == [
        "start:A",
        "start:B",
        "end:B",
        "start:C",
        "end:C",
        "end:A",
        "msg:A",
        "msg:B",
        "msg:C",
    ]
    assert [m.text for m in messages if m.role == "toolResult"] == ["A", "denied", "C"]
    assert [r.tool_call_id for r in rec.of("turn_end")[0].tool_results] == ["A", "B", "C"]


async def test_prepared_calls_start_only_after_every_preflight() -> None:
    order: list[str] = []

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        order.append(f"execute:{tool_call_id}")
        return AgentToolResult(content=[TextContent(text="x")])

    async def before(ctx: Any) -> None:
        order.append(f"before:{ctx.tool_call.id}")
        await trio.sleep(0.005)

    script = [tool_use(call("1", "t"), call("2", "t"), call("3", "t")), text("done")]
    await run(script, [make_tool("t", execute)], config=LoopConfig(before_tool_call=before))
    assert order[:3] == ["before:1", "before:2", "before:3"]
    assert sorted(order[3:]) == ["execute:1", "execute:2", "execute:3"]


# --- run_tool_call (nested calls, §2.15) ------------------------------------------------------


async def test_run_tool_call_runs_the_pipeline_without_events() -> None:
    seen: list[str] = []

    async def before(ctx: Any) -> None:
        seen.append(f"before:{ctx.args}")

    async def after(ctx: Any) -> AfterToolCallResult:
        seen.append(f"after:{ctx.result.text}")
        return AfterToolCallResult(details={"audited": True})

    async def prepare(name: str, args: Any) -> Any:
        seen.append(f"prepare:{name}")
        return None

    updates: list[str] = []

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="working")]))
        return AgentToolResult(content=[TextContent(text=f"got {params['value']}")])

    tool = make_tool("t", execute, schema=ECHO_SCHEMA)
    config = LoopConfig(before_tool_call=before, after_tool_call=after, prepare_arguments=prepare)
    outcome = await run_tool_call(
        call("n-1", "t", {"value": "v"}),
        AgentContext(tools=[tool]),
        config,
        on_update=lambda p: updates.append(p.text),
    )
    assert seen == ["prepare:t", "before:{'value': 'v'}", "after:got v"]
    assert updates == ["working"]
    assert outcome.is_error is False
    assert result_json(outcome.to_message()) == {
        "role": "toolResult",
        "toolCallId": "n-1",
        "toolName": "t",
        "content": [{"type": "text", "text": "got v"}],
        "details": {"audited": True},
        "isError": False,
    }

    missing = await run_tool_call(call("n-2", "zz"), AgentContext(tools=[tool]), LoopConfig())
    assert missing.is_error is True
    assert missing.result.text == "Tool zz not found"


def test_tool_result_message_builder() -> None:
    result = AgentToolResult(content=[TextContent(text="x")], details={"d": 1}, terminate=True)
    message = tool_result_message(call("i", "n"), result, True)
    assert isinstance(message, ToolResultMessage)
    assert result_json(message) == {
        "role": "toolResult",
        "toolCallId": "i",
        "toolName": "n",
        "content": [{"type": "text", "text": "x"}],
        "details": {"d": 1},
        "isError": True,
    }


def test_the_loop_module_does_not_import_pluggy() -> None:
    """DESIGN §1: the loop knows nothing of pluggy. The package ``__init__`` (which re-exports
    the pluggy markers) is bypassed so only the loop's own imports count."""
    src = Path(__import__("pi_core").__file__).parent
    code = (
        "import sys, types\n"
        f"pkg = types.ModuleType('pi_core'); pkg.__path__ = [{str(src)!r}]\n"
        "sys.modules['pi_core'] = pkg\n"
        "import pi_core._loop.loop, pi_core._loop.agent, pi_core._providers.base, pi_core._abort\n"
        "assert 'pluggy' not in sys.modules, sorted(m for m in sys.modules if 'plug' in m)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr


async def test_run_nested_tool_call_emits_execution_events_with_the_parent_id() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="half")]))
        await trio.lowlevel.checkpoint()
        return AgentToolResult(content=[TextContent(text="nested done")], usage={"output": 2})

    rec = Recorder()
    outcome = await run_nested_tool_call(
        call("inner-1", "t", {"value": "v"}),
        AgentContext(tools=[make_tool("t", execute, schema=ECHO_SCHEMA)]),
        LoopConfig(),
        rec,
        parent_tool_call_id="outer-1",
    )
    assert [e.to_json_dict() for e in rec.events] == [
        {
            "type": "tool_execution_start",
            "toolCallId": "inner-1",
            "toolName": "t",
            "args": {"value": "v"},
            "parentToolCallId": "outer-1",
        },
        {
            "type": "tool_execution_update",
            "toolCallId": "inner-1",
            "toolName": "t",
            "args": {"value": "v"},
            "partialResult": {"content": [{"type": "text", "text": "half"}]},
            "parentToolCallId": "outer-1",
        },
        {
            "type": "tool_execution_end",
            "toolCallId": "inner-1",
            "toolName": "t",
            "result": {
                "content": [{"type": "text", "text": "nested done"}],
                "usage": {"output": 2},
            },
            "isError": False,
            "parentToolCallId": "outer-1",
        },
    ]
    assert outcome.result.usage == {"output": 2}
