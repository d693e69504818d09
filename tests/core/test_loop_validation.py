"""The loop with real argument validation: §8.1 #23, #33 (as amended by port decision 4), #39
with an invalid middle call, and a property test: arbitrary JSON never crashes the loop."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_loop_support import (
    ECHO_SCHEMA,
    Recorder,
    call,
    make_echo,
    make_tool,
    result_json,
    run,
    text,
    tool_use,
    user,
)

from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AgentToolResult, TextContent, ToolCall


async def test_23_validation_failure_text() -> None:
    log: list[Any] = []
    script = [tool_use(call("tool-1", "echo", {"value": {"a": 1}})), text("done")]
    messages, rec, _ = await run(script, [make_echo(log)])
    assert log == []
    expected = (
        'Validation failed for tool "echo":\n'
        "  - value: expected string, got object\n"
        "\n"
        "Received arguments:\n"
        '{\n  "value": {\n    "a": 1\n  }\n}'
    )
    assert rec.of("tool_execution_end")[0].result.to_json_dict() == {
        "content": [{"type": "text", "text": expected}],
        "details": {},
    }
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "tool-1",
        "toolName": "echo",
        "content": [{"type": "text", "text": expected}],
        "details": {},
        "isError": True,
    }


async def test_23_received_arguments_are_the_prepared_ones() -> None:
    echo = make_echo()
    echo.prepare_arguments = lambda args: {"value": args, "extra": None}
    script = [tool_use(call("t", "echo", [1])), text("done")]
    messages, _, _ = await run(script, [echo])
    assert messages[2].text == (
        'Validation failed for tool "echo":\n'
        "  - value: expected string, got array\n"
        "\n"
        "Received arguments:\n"
        '{\n  "value": [\n    1\n  ],\n  "extra": null\n}'
    )


async def test_arguments_error_fails_validation_and_never_runs() -> None:
    """r16-loop-validation-texts (c7, c8): a call whose streamed arguments did not parse."""
    log: list[Any] = []
    broken = ToolCall(
        id="c7",
        name="echo",
        arguments={"value": "a"},
        arguments_error="Unexpected end of JSON input",
    )
    messages, _, _ = await run([tool_use(broken), text("done")], [make_echo(log)])
    assert log == []
    assert result_json(messages[2]) == {
        "role": "toolResult",
        "toolCallId": "c7",
        "toolName": "echo",
        "content": [
            {
                "type": "text",
                "text": 'Invalid arguments for tool "echo": Unexpected end of JSON input',
            }
        ],
        "details": {},
        "isError": True,
    }
    assert (
        ToolCall.model_validate(
            {"type": "toolCall", "id": "x", "name": "n", "argumentsError": "bad"}
        ).arguments_error
        == "bad"
    )


async def test_33_coerced_args_reach_the_tool_raw_args_in_events() -> None:
    received: list[Any] = []
    before_seen: list[Any] = []

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        received.append(params)
        return AgentToolResult(content=[TextContent(text=str(params["count"]))])

    async def before(ctx: Any) -> None:
        before_seen.append((dict(ctx.args), ctx.tool_call.arguments))

    schema = {"type": "object", "properties": {"count": {"type": "number"}}, "required": ["count"]}
    script = [tool_use(call("c", "count", {"count": "5"})), text("done")]
    messages, rec, _ = await run(
        script,
        [make_tool("count", execute, schema=schema)],
        config=LoopConfig(before_tool_call=before),
    )
    assert received == [{"count": 5}]
    assert rec.of("tool_execution_start")[0].args == {"count": "5"}
    assert before_seen == [({"count": 5}, {"count": "5"})]
    assert messages[1].tool_calls[0].arguments == {"count": "5"}  # the model's call is untouched


async def test_33_a_number_is_coerced_to_a_string() -> None:
    """#33 as Pi 1.6 runs it (issue 27): ``echo{value:5}`` runs with ``value: "5"``."""
    log: list[Any] = []
    script = [tool_use(call("c", "echo", {"value": 5})), text("done")]
    messages, _, _ = await run(script, [make_echo(log)])
    assert log == [{"value": "5"}]
    assert messages[2].text == "echoed: 5"


async def test_a_tool_that_opts_out_of_coercion_gets_its_arguments_checked_as_they_are() -> None:
    log: list[Any] = []
    strict = dataclasses.replace(make_echo(log), coerce_arguments=False)
    script = [
        tool_use(call("c", "echo", {"value": 5}), call("d", "echo", {"value": "x"})),
        text("done"),
    ]
    messages, _, _ = await run(script, [strict])
    assert log == [{"value": "x"}]
    assert messages[2].text == (
        'Validation failed for tool "echo":\n'
        "  - value: expected string, got integer\n"
        "\n"
        "Received arguments:\n"
        '{\n  "value": 5\n}'
    )
    assert messages[3].text == "echoed: x"


async def test_39_slow_invalid_fast() -> None:
    async def slow(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="tick")]))
        await trio.sleep(0.2)
        return AgentToolResult(content=[TextContent(text="A")])

    async def fast(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="C")])

    script = [
        tool_use(
            call("A", "slow", {"value": "a"}),
            call("B", "fast", {}),
            call("C", "fast", {"value": "c"}),
        ),
        text("done"),
    ]
    tools = [
        make_tool("slow", slow, schema=ECHO_SCHEMA),
        make_tool("fast", fast, schema=ECHO_SCHEMA),
    ]
    messages, rec, _ = await run(script, tools)
    # the update of A arrives once phase 2 has started, after every preflight
    assert rec.tool_events() == [
        "start:A",
        "start:B",
        "end:B",
        "start:C",
        "update:A",
        "end:C",
        "end:A",
        "msg:A",
        "msg:B",
        "msg:C",
    ]
    assert [m.tool_call_id for m in messages if m.role == "toolResult"] == ["A", "B", "C"]
    assert messages[3].text == (
        'Validation failed for tool "fast":\n  - value: missing\n\nReceived arguments:\n{}'
    )


# --- property: any JSON, any name → one result per call, in source order ----------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(["value", "n", "extra"]), json_values, max_size=3),
)
calls = st.lists(
    st.tuples(st.sampled_from(["echo", "count", "boom", "missing", "Echo"]), arguments),
    min_size=1,
    max_size=6,
)


async def _boom(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    on_update(AgentToolResult(content=[TextContent(text=json.dumps(params, default=str))]))
    raise ValueError(f"boom {params!r}")


async def _count(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
    await trio.lowlevel.checkpoint()
    return AgentToolResult(content=[TextContent(text=str(params.get("n")))], terminate=True)


TOOLS = [
    make_echo(),
    make_tool(
        "count",
        _count,
        schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "additionalProperties": False,
        },
    ),
    make_tool("boom", _boom, schema={"type": "object"}),
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=calls, sequential=st.booleans())
async def test_arbitrary_arguments_never_crash_the_loop(
    batch: list[tuple[str, Any]], sequential: bool
) -> None:
    tool_calls = [
        ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(batch)
    ]
    provider = ScriptedProvider([tool_use(*tool_calls), text("done")])
    config = LoopConfig(
        provider=provider, tool_execution="sequential" if sequential else "parallel"
    )
    rec = Recorder()
    messages = await run_agent_loop([user("go")], AgentContext(tools=TOOLS), config, rec)
    ids = [c.id for c in tool_calls]
    results = [m for m in messages if m.role == "toolResult"]
    assert [r.tool_call_id for r in results] == ids
    assert [e.tool_call_id for e in rec.of("tool_execution_start")] == ids
    assert sorted(e.tool_call_id for e in rec.of("tool_execution_end")) == sorted(ids)
    for r, (name, _args) in zip(results, batch, strict=True):
        assert r.tool_name == name
        if name in ("missing", "Echo"):
            assert (r.text, r.is_error) == (f"Tool {name} not found", True)
        elif name == "boom":
            assert r.is_error is True
        json.dumps(r.to_json_dict())  # every result is serialisable
    # only a batch of successful ``count`` calls (each terminate=True) skips the next model call
    terminated = all(r.tool_name == "count" and not r.is_error for r in results)
    assert messages[-1].role == ("toolResult" if terminated else "assistant")
    assert rec.types[-1] == "agent_end"
