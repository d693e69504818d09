"""Nested tool calls (issue 11 item 2, delta §2): ``current_tool_context().execute_tool``."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from test_loop_support import (
    ECHO_SCHEMA,
    call,
    make_echo,
    make_tool,
    result_json,
    run,
    text,
    tool_use,
)

from pi_core import (
    AfterToolCallContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
    PluginHooks,
    ToolCallOutcome,
    current_tool_context,
    hookimpl,
    run_tool_call,
)
from pi_core._abort import Abort
from pi_core._loop.config import LoopConfig
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.nested import (
    MAX_CALLS,
    NestedCallRecorder,
    NestedCallRunner,
    combine_usage,
)
from pi_core._wire.messages import AgentToolResult, TextContent, ToolCall


def results(messages: list[Any]) -> list[Any]:
    """The ToolResultMessages of a run (other messages, such as declared tool changes, aside)."""
    return [m for m in messages if m.role == "toolResult"]


def outcome_json(outcome: ToolCallOutcome) -> dict[str, Any]:
    return {
        "id": outcome.tool_call.id,
        "text": outcome.result.text,
        "isError": outcome.is_error,
    }


def tool_events(events: list[Any]) -> list[dict[str, Any]]:
    """The ``tool_execution_*`` events as JSON, without ``args``/results (ids, parents)."""
    out = []
    for e in events:
        if e.type.startswith("tool_execution_"):
            data = e.to_json_dict()
            out.append(
                {k: v for k, v in data.items() if k in ("type", "toolCallId", "parentToolCallId")}
            )
        elif e.type == "message_start" and e.message.role == "toolResult":
            out.append({"type": "message_start", "toolCallId": e.message.tool_call_id})
    return out


def caller_tool(name: str, body: Any, *, execution_mode: Any = "parallel") -> Any:
    """A tool whose execute runs ``body(ctx) -> str`` and returns that text."""

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=await body(current_tool_context()))])

    return make_tool(name, execute, execution_mode=execution_mode)


def usage_echo() -> Any:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="working")]))
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")],
            usage={"input": 1, "output": 2, "cost": {"total": 0.5}},
            structured_content={"value": params["value"]},
        )

    return make_tool("uecho", execute, schema=ECHO_SCHEMA)


# ---------------------------------------------------------------------------------------------
# Ids, events, the record, usage
# ---------------------------------------------------------------------------------------------


async def test_nested_calls_ids_events_record_and_usage() -> None:
    seen: list[Any] = []

    async def inner(ctx: Any) -> str:
        outcome = await ctx.execute_tool("uecho", {"value": "deep"})
        seen.append((ctx.tool_call_id, ctx.parent_tool_call_id, outcome_json(outcome)))
        return "inner done"

    async def outer(ctx: Any) -> str:
        first = await ctx.execute_tool("uecho", {"value": "a"})
        seen.append(first.result.structured_content)
        second = await ctx.execute_tool("inner")
        third = await ctx.execute_tool("nope", {"x": 1})
        seen.append(outcome_json(third))
        return f"{first.result.text} | {second.result.text}"

    tools = [caller_tool("outer", outer), caller_tool("inner", inner), usage_echo()]
    messages, rec, provider = await run([tool_use(call("c1", "outer")), text("ok")], tools)

    assert seen == [
        {"value": "a"},
        ("c1/2", "c1", {"id": "c1/2/1", "text": "echoed: deep", "isError": False}),
        {"id": "c1/3", "text": "Tool nope not found", "isError": True},
    ]
    assert tool_events(rec.events) == [
        {"type": "tool_execution_start", "toolCallId": "c1"},
        {"type": "tool_execution_start", "toolCallId": "c1/1", "parentToolCallId": "c1"},
        {"type": "tool_execution_update", "toolCallId": "c1/1", "parentToolCallId": "c1"},
        {"type": "tool_execution_end", "toolCallId": "c1/1", "parentToolCallId": "c1"},
        {"type": "tool_execution_start", "toolCallId": "c1/2", "parentToolCallId": "c1"},
        {"type": "tool_execution_start", "toolCallId": "c1/2/1", "parentToolCallId": "c1/2"},
        {"type": "tool_execution_update", "toolCallId": "c1/2/1", "parentToolCallId": "c1/2"},
        {"type": "tool_execution_end", "toolCallId": "c1/2/1", "parentToolCallId": "c1/2"},
        {"type": "tool_execution_end", "toolCallId": "c1/2", "parentToolCallId": "c1"},
        {"type": "tool_execution_start", "toolCallId": "c1/3", "parentToolCallId": "c1"},
        {"type": "tool_execution_end", "toolCallId": "c1/3", "parentToolCallId": "c1"},
        {"type": "tool_execution_end", "toolCallId": "c1"},
        {"type": "message_start", "toolCallId": "c1"},
    ]
    nested_end = rec.of("tool_execution_end")[0]
    assert list(nested_end.to_json_dict()) == [
        "type",
        "toolCallId",
        "toolName",
        "result",
        "isError",
        "parentToolCallId",
    ]
    assert nested_end.to_json_dict()["result"]["structuredContent"] == {"value": "a"}

    # One tool-result message: the model-issued call's, with the record and the summed usage.
    assert [m.role for m in messages if m.role != "system"] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    (message,) = results(messages)
    result = result_json(message)
    durations = [c.pop("durationMs") for c in result["nestedCalls"]["calls"]]
    assert all(isinstance(d, int) and d >= 0 for d in durations)
    assert result == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "outer",
        "content": [{"type": "text", "text": "echoed: a | inner done"}],
        "isError": False,
        "usage": {"input": 2, "output": 4, "cost": {"total": 1.0}},
        "nestedCalls": {
            "calls": [
                {"id": "c1/1", "name": "uecho", "status": "ok", "arguments": {"value": "a"}},
                {"id": "c1/2", "name": "inner", "status": "ok", "arguments": {}},
                {"id": "c1/2/1", "name": "uecho", "status": "ok", "arguments": {"value": "deep"}},
                {
                    "id": "c1/3",
                    "name": "nope",
                    "status": "error",
                    "arguments": {"x": 1},
                    "error": "Tool nope not found",
                },
            ],
            "complete": True,
        },
    }
    # message_start already carries the record; the model never sees it.
    start = next(e for e in rec.of("message_start") if e.message.role == "toolResult")
    assert start.message.nested_calls == message.nested_calls
    (sent,) = results(provider.requests[1].messages)
    assert sent.nested_calls is None and "nestedCalls" not in sent.to_json_dict()


async def test_nested_call_record_key_order_and_no_record_without_nested_calls() -> None:
    async def outer(ctx: Any) -> str:
        await ctx.execute_tool("echo", {"value": "v"})
        return "done"

    messages, _, _ = await run(
        [tool_use(call("c1", "outer"), call("c2", "echo", {"value": "x"})), text("ok")],
        [caller_tool("outer", outer), make_echo()],
    )
    data = results(messages)[0].to_json_dict()
    assert list(data["nestedCalls"]["calls"][0]) == [
        "id",
        "name",
        "status",
        "arguments",
        "durationMs",
    ]
    assert list(data["nestedCalls"]) == ["calls", "complete"]
    assert "nestedCalls" not in results(messages)[1].to_json_dict()
    assert "usage" not in data


async def test_nested_failures_come_back_as_error_results() -> None:
    outcomes: list[dict[str, Any]] = []

    async def boom(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        raise RuntimeError("kaput")

    async def outer(ctx: Any) -> str:
        outcomes.append(outcome_json(await ctx.execute_tool("echo", {"value": [3]})))
        outcomes.append(outcome_json(await ctx.execute_tool("boom")))
        outcomes.append(outcome_json(await ctx.execute_tool("echo", None)))
        return "survived"

    tools = [caller_tool("outer", outer), make_echo(), make_tool("boom", boom)]
    messages, _, _ = await run([tool_use(call("c1", "outer")), text("ok")], tools)
    # exactly what the same calls give when the model issues them
    direct = [
        await run_tool_call(call(f"c1/{n}", name, args), AgentContext(tools=tools), LoopConfig())
        for n, name, args in [(1, "echo", {"value": [3]}), (2, "boom", {}), (3, "echo", {})]
    ]
    assert direct[0].result.text.startswith('Validation failed for tool "echo":')
    assert outcomes == [outcome_json(o) for o in direct]
    assert outcomes[1] == {"id": "c1/2", "text": "kaput", "isError": True}
    assert results(messages)[0].text == "survived"
    assert [c["status"] for c in results(messages)[0].nested_calls["calls"]] == ["error"] * 3


# ---------------------------------------------------------------------------------------------
# Policies: a third-party plugin blocks a nested call
# ---------------------------------------------------------------------------------------------


class NoNestedBash:
    """A third-party policy: nested calls of ``danger`` are blocked; it records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.after: list[tuple[str, str | None]] = []

    @hookimpl
    def pi_before_tool_call(self, context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        self.seen.append((context.tool_call.id, context.parent_tool_call_id))
        if context.tool_call.name == "danger" and context.parent_tool_call_id is not None:
            return BeforeToolCallResult(
                block=True, reason=f"danger may not be called by {context.parent_tool_call_id}"
            )
        return None

    @hookimpl
    def pi_after_tool_call(self, context: AfterToolCallContext) -> None:
        self.after.append((context.tool_call.id, context.parent_tool_call_id))


async def test_third_party_policy_blocks_a_nested_call(
    plugin_manager: Any, register_plugin: Any
) -> None:
    policy = NoNestedBash()
    register_plugin(policy, name="no-nested-danger")
    ran: list[str] = []

    async def danger(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        ran.append(tool_call_id)
        return AgentToolResult(content=[TextContent(text="did it")])

    async def outer(ctx: Any) -> str:
        outcome = await ctx.execute_tool("danger")
        await ctx.execute_tool("echo", {"value": "allowed"})
        return f"parent saw: {outcome.result.text} (error={outcome.is_error})"

    config = PluginHooks(plugin_manager, {}).apply_to(LoopConfig())
    tools = [caller_tool("outer", outer), make_tool("danger", danger), make_echo()]
    messages, rec, _ = await run(
        [tool_use(call("c1", "outer"), call("c2", "danger")), text("ok")], tools, config=config
    )
    assert policy.seen == [("c1", None), ("c2", None), ("c1/1", "c1"), ("c1/2", "c1")]
    # a blocked call never reaches the after hook; the allowed nested one does, with its parent
    assert sorted(policy.after, key=str) == [("c1", None), ("c1/2", "c1"), ("c2", None)]
    assert ran == ["c2"]  # the direct call ran, the nested one did not
    assert results(messages)[0].text == "parent saw: danger may not be called by c1 (error=True)"
    assert (
        results(messages)[0].nested_calls["calls"][0]["error"] == "danger may not be called by c1"
    )
    end = next(e for e in rec.of("tool_execution_end") if e.tool_call_id == "c1/1")
    assert end.to_json_dict() == {
        "type": "tool_execution_end",
        "toolCallId": "c1/1",
        "toolName": "danger",
        "result": {
            "content": [{"type": "text", "text": "danger may not be called by c1"}],
            "details": {},
        },
        "isError": True,
        "parentToolCallId": "c1",
    }


# ---------------------------------------------------------------------------------------------
# Parallel and sequential nesting (delta §2.3)
# ---------------------------------------------------------------------------------------------


def two_nested_in_parallel() -> list[Any]:
    async def sleeper(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        await trio.sleep(float(params["value"]))
        return AgentToolResult(content=[TextContent(text=f"slept {params['value']}")])

    async def outer(ctx: Any) -> str:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ctx.execute_tool, "sleeper", {"value": "0.4"})
            await trio.sleep(0.01)
            nursery.start_soon(ctx.execute_tool, "sleeper", {"value": "0"})
        return "both done"

    return [caller_tool("outer", outer), make_tool("sleeper", sleeper, schema=ECHO_SCHEMA)]


async def test_two_nested_calls_parallel_mode_event_order(autojump_clock: Any) -> None:
    _, rec, _ = await run([tool_use(call("c", "outer")), text("ok")], two_nested_in_parallel())
    assert rec.tool_events() == [
        "start:c",
        "start:c/1",
        "start:c/2",
        "end:c/2",
        "end:c/1",
        "end:c",
        "msg:c",
    ]


async def test_two_nested_calls_sequential_mode_event_order(autojump_clock: Any) -> None:
    _, rec, _ = await run(
        [tool_use(call("c", "outer")), text("ok")],
        two_nested_in_parallel(),
        config=LoopConfig(tool_execution="sequential"),
    )
    assert rec.tool_events() == [
        "start:c",
        "start:c/1",
        "start:c/2",
        "end:c/1",
        "end:c/2",
        "end:c",
        "msg:c",
    ]


async def test_a_call_holding_the_sequential_slot_does_not_wait_on_itself(
    autojump_clock: Any,
) -> None:
    async def leaf(ctx: Any) -> str:
        return "leaf"

    async def middle(ctx: Any) -> str:
        outcome = await ctx.execute_tool("leaf")  # leaf is sequential too: no deadlock
        return f"middle({outcome.result.text})"

    async def outer(ctx: Any) -> str:
        outcome = await ctx.execute_tool("middle")
        return f"outer({outcome.result.text})"

    tools = [
        caller_tool("outer", outer, execution_mode="sequential"),
        caller_tool("middle", middle, execution_mode="sequential"),
        caller_tool("leaf", leaf, execution_mode="sequential"),
    ]
    with trio.fail_after(5):
        messages, rec, _ = await run([tool_use(call("c", "outer")), text("ok")], tools)
    assert results(messages)[0].text == "outer(middle(leaf))"
    assert rec.tool_events() == [
        "start:c",
        "start:c/1",
        "start:c/1/1",
        "end:c/1/1",
        "end:c/1",
        "end:c",
        "msg:c",
    ]


# ---------------------------------------------------------------------------------------------
# Abort, no session, no assistant message
# ---------------------------------------------------------------------------------------------


async def test_nested_call_is_cancelled_with_its_parent(autojump_clock: Any) -> None:
    abort = Abort()

    async def forever(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        abort.abort()
        await trio.sleep_forever()
        raise AssertionError("not reached")

    async def outer(ctx: Any) -> str:
        await ctx.execute_tool("forever")
        raise AssertionError("not reached")

    tools = [caller_tool("outer", outer), make_tool("forever", forever)]
    with trio.fail_after(5):
        messages, rec, _ = await run([tool_use(call("c", "outer")), text("ok")], tools, abort=abort)
    assert rec.tool_events() == ["start:c", "start:c/1", "end:c/1", "end:c", "msg:c"]
    nested_end = rec.of("tool_execution_end")[0]
    assert nested_end.result.text == "Operation aborted" and nested_end.is_error
    assert results(messages)[0].text == "Operation aborted"
    assert results(messages)[0].nested_calls["calls"][0]["status"] == "error"
    assert results(messages)[0].nested_calls["calls"][0]["error"] == "Operation aborted"


async def test_nested_calls_are_not_available_outside_a_loop_run() -> None:
    outcomes: list[ToolCallOutcome] = []

    async def outer(ctx: Any) -> str:
        outcomes.append(await ctx.execute_tool("echo", {"value": "v"}))
        return "done"

    outcome = await run_tool_call(
        call("p1", "outer"),
        AgentContext(tools=[caller_tool("outer", outer), make_echo()]),
        LoopConfig(),
    )
    assert outcome.result.text == "done"
    (nested,) = outcomes
    assert nested.tool_call.to_json_dict() == {
        "type": "toolCall",
        "id": "p1/0",
        "name": "echo",
        "arguments": {},
    }
    assert nested.result.to_json_dict() == {
        "content": [
            {"type": "text", "text": "Nested tool calls are not available in this context"}
        ],
        "details": {},
    }
    assert nested.is_error is True


async def test_current_tool_context_outside_execute_raises() -> None:
    with pytest.raises(
        RuntimeError,
        match=r"^current_tool_context\(\) is only available while a tool's execute runs$",
    ):
        current_tool_context()


async def test_no_assistant_message_issued_this_call() -> None:
    events: list[Any] = []
    runner = NestedCallRunner(AgentContext(tools=[make_echo()]), LoopConfig(), None)
    ctx = runner.root_context("c1", events.append)
    outcome = await ctx.execute_tool("echo", {"value": "v"})
    assert outcome_json(outcome) == {
        "id": "c1/1",
        "text": "No assistant message issued this call",
        "isError": True,
    }
    assert [e.type for e in events] == ["tool_execution_start", "tool_execution_end"]
    record, usage = runner.take_record("c1")
    assert usage is None
    assert (
        record is not None
        and record["calls"][0]["error"] == "No assistant message issued this call"
    )


# ---------------------------------------------------------------------------------------------
# The record's limits (delta §2.4)
# ---------------------------------------------------------------------------------------------


def test_record_limits_argument_bytes_and_error_text() -> None:
    recorder = NestedCallRecorder()
    assert recorder.snapshot() is None
    big = {"value": "x" * 8200}
    entry = recorder.start(ToolCall(id="c/1", name="t", arguments=big))
    size = len(json.dumps(big, separators=(",", ":")).encode())
    assert entry == {"id": "c/1", "name": "t", "status": "unfinished", "argumentsBytes": size}
    error = ToolCallOutcome(
        ToolCall(id="c/1", name="t"), AgentToolResult.error("é" * 400 + "😀" * 200), True
    )
    recorder.finish(entry, error, 7)
    assert entry["error"] == "é" * 400 + "😀" * 50  # 500 UTF-16 units
    assert list(entry) == ["id", "name", "status", "argumentsBytes", "durationMs", "error"]
    assert recorder.snapshot() == {"calls": [entry], "complete": False}


def test_record_total_argument_budget_and_max_calls() -> None:
    recorder = NestedCallRecorder()
    arguments = {"value": "y" * 8000}  # 8013 bytes each: four fit in 32768, the fifth not
    entries = [
        recorder.start(ToolCall(id=f"c/{i}", name="t", arguments=arguments)) for i in range(1, 6)
    ]
    assert [("arguments" in e, "argumentsBytes" in e) for e in entries if e] == [
        (True, False)
    ] * 4 + [(False, True)]
    ok = ToolCallOutcome(ToolCall(id="x", name="t"), AgentToolResult(usage={"input": 1}), False)
    for e in entries:
        recorder.finish(e, ok, 0)
    assert recorder.snapshot()["complete"] is False  # type: ignore[index]

    many = NestedCallRecorder()
    for i in range(MAX_CALLS):
        many.finish(many.start(ToolCall(id=f"c/{i}", name="t")), ok, 0)
    assert many.snapshot() == {"calls": many.calls, "complete": True}
    dropped = many.start(ToolCall(id="c/257", name="t"))
    assert dropped is None
    many.finish(dropped, ok, 0)
    snapshot = many.snapshot()
    assert snapshot is not None and len(snapshot["calls"]) == 256 and snapshot["complete"] is False
    assert many.usage == {"input": 257}  # a dropped call's usage still counts


def test_the_record_takes_lone_surrogates() -> None:
    recorder = NestedCallRecorder()
    entry = recorder.start(ToolCall(id="c/1", name="t", arguments={"v": "\ud83d"}))
    assert entry == {"id": "c/1", "name": "t", "status": "unfinished", "arguments": {"v": "\ud83d"}}
    assert recorder.argument_bytes == len('{"v":"x"}') + 2  # the surrogate counts 3 bytes
    error = ToolCallOutcome(
        ToolCall(id="c/1", name="t"), AgentToolResult.error("a\ud83db" + "é" * 497 + "😀"), True
    )
    recorder.finish(entry, error, 1)
    assert entry["error"] == "a\ufffdb" + "é" * 497  # 500 units; the cut pair is dropped


def test_an_unfinished_call_makes_the_record_incomplete() -> None:
    recorder = NestedCallRecorder()
    recorder.start(ToolCall(id="c/1", name="t"))
    assert recorder.snapshot() == {
        "calls": [{"id": "c/1", "name": "t", "status": "unfinished", "arguments": {}}],
        "complete": False,
    }


def test_combine_usage() -> None:
    a = {"input": 1, "output": 2, "cost": {"total": 0.25, "totalFromProvider": True}}
    b = {"input": 3, "reasoning": 5, "cost": {"total": 0.5, "totalFromProvider": True}}
    assert combine_usage(a, b) == {
        "input": 4,
        "output": 2,
        "cost": {"total": 0.75, "totalFromProvider": True},
        "reasoning": 5,
    }
    assert combine_usage({"cost": {"totalFromProvider": True}}, {"cost": {}}) == {
        "cost": {"totalFromProvider": False}
    }


@pytest.mark.parametrize(
    ("mode", "order"),
    [
        ("parallel", ["start:c", "start:c/1", "start:c/2", "end:c/2", "end:c/1", "end:c", "msg:c"]),
        (
            "sequential",
            ["start:c", "start:c/1", "start:c/2", "end:c/1", "end:c/2", "end:c", "msg:c"],
        ),
    ],
)
async def test_delta_2_3_verified_example_with_the_real_bash(
    tmp_path: Any, mode: str, order: list[str]
) -> None:
    """Delta §2.3: ``Promise.all([bash "sleep 0.4; echo slow", bash "echo fast"])``."""
    import pi_builtin_tools.plugin
    from pi_core import build_session, make_plugin_manager

    pm = make_plugin_manager(autoload=False)
    pm.register(pi_builtin_tools.plugin, name="builtin_tools")
    session = build_session(pm, tmp_path)
    texts: dict[str, str] = {}

    async def outer(ctx: Any) -> str:
        async def one(command: str) -> None:
            outcome = await ctx.execute_tool("bash", {"command": command})
            texts[outcome.tool_call.id] = outcome.result.structured_content["output"]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "sleep 0.4; echo slow")
            await trio.sleep(0.05)
            nursery.start_soon(one, "echo fast")
        return "both"

    async with session:
        _, rec, _ = await run(
            [tool_use(call("c", "outer")), text("ok")],
            [caller_tool("outer", outer), session.tools_by_name["bash"]],
            config=session.loop_config(tool_execution=mode, tool_set=None),
        )
    assert [e for e in rec.tool_events() if not e.startswith("update:")] == order
    assert texts == {"c/1": "slow\n", "c/2": "fast\n"}
