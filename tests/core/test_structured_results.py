"""Structured results (issue 11 item 5, delta §7) and the tool declarations ``output_schema`` and
``replay`` (item 6): on ``AgentTool``, ``ToolDefinition`` and ``@tool``."""

from __future__ import annotations

import typing
from typing import Any

import pydantic
import pytest
from test_loop_support import call, make_tool, run, text, tool_use
from typing_extensions import TypedDict

from pi_core import (
    AfterToolCallResult,
    Agent,
    AgentToolResult,
    TextContent,
    ToolDefinition,
    current_tool_context,
    tool,
    wrap_tool_definition,
)
from pi_core._loop.config import LoopConfig
from pi_core._providers.base import ScriptedProvider


class Weather(pydantic.BaseModel):
    city: str
    celsius: float


class Count(TypedDict):
    n: int
    words: list[str]


@tool
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, celsius=21.5)


@tool(replay="safe")
async def count(text: str) -> Count:
    """Count words."""
    return {"n": len(text.split()), "words": text.split()}


@tool
def plain(x: int) -> dict[str, int]:
    """Not a structured annotation: no schema."""
    return {"x": x}


def test_tool_output_schema_from_a_pydantic_return_annotation() -> None:
    assert weather.output_schema == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    }
    assert weather.replay is None
    agent_tool = wrap_tool_definition(weather)
    assert agent_tool.output_schema == weather.output_schema


def test_tool_output_schema_from_a_typeddict_and_other_annotations() -> None:
    assert count.output_schema == {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "words": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["n", "words"],
    }
    assert wrap_tool_definition(count).replay == "safe"
    assert plain.output_schema is None


def test_explicit_output_schema_wins() -> None:
    schema = {"type": "object", "properties": {"celsius": {"type": "number"}}}

    @tool(output_schema=schema, replay="never")
    def other(city: str) -> Weather:
        """x"""
        return Weather(city=city, celsius=1)

    assert other.output_schema == schema
    agent_tool = wrap_tool_definition(other)
    assert (agent_tool.output_schema, agent_tool.replay) == (schema, "never")


class Old(typing.TypedDict):
    n: int


def test_typing_typeddict_before_python_3_12_is_a_clear_error() -> None:
    def f() -> Old:
        return {"n": 1}

    if not hasattr(typing, "override"):  # Python < 3.12
        with pytest.raises(TypeError, match=r"^@tool: return annotation Old: Please use"):
            tool(f)


async def test_structured_results_reach_events_not_the_message() -> None:
    messages, rec, provider = await run(
        [
            tool_use(call("c1", "weather", {"city": "Oslo"}), call("c2", "count", {"text": "a b"})),
            text("ok"),
        ],
        [wrap_tool_definition(weather), wrap_tool_definition(count)],
    )
    ends = {e.tool_call_id: e.to_json_dict()["result"] for e in rec.of("tool_execution_end")}
    assert ends == {
        "c1": {
            "content": [{"type": "text", "text": '{"city":"Oslo","celsius":21.5}'}],
            "structuredContent": {"city": "Oslo", "celsius": 21.5},
        },
        "c2": {
            "content": [{"type": "text", "text": '{"n": 2, "words": ["a", "b"]}'}],
            "structuredContent": {"n": 2, "words": ["a", "b"]},
        },
    }
    results = [m for m in messages if m.role == "toolResult"]
    assert all("structuredContent" not in m.to_json_dict() for m in results)
    sent = [m for m in provider.requests[1].messages if m.role == "toolResult"]
    assert all("structuredContent" not in m.to_json_dict() for m in sent)


async def test_agent_api_delivers_structured_content_on_events() -> None:
    provider = ScriptedProvider([tool_use(call("c1", "weather", {"city": "Rome"})), text("ok")])
    agent = Agent(provider, tools=[weather])
    seen: list[Any] = []
    agent.subscribe(
        lambda event: (
            seen.append(event.result.structured_content)
            if event.type == "tool_execution_end"
            else None
        )
    )
    await agent.prompt("go")
    assert seen == [{"city": "Rome", "celsius": 21.5}]


async def test_nested_call_outcome_carries_structured_content() -> None:
    got: list[Any] = []

    async def outer(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        outcome = await current_tool_context().execute_tool("weather", {"city": "Lima"})
        got.append(outcome.result.structured_content)
        return AgentToolResult(content=[TextContent(text="done")])

    await run(
        [tool_use(call("c1", "outer")), text("ok")],
        [make_tool("outer", outer), wrap_tool_definition(weather)],
    )
    assert got == [{"city": "Lima", "celsius": 21.5}]


@pytest.mark.parametrize(
    ("override", "structured"),
    [
        (AfterToolCallResult(content=[TextContent(text="B")]), None),
        (
            AfterToolCallResult(content=[TextContent(text="B")], structured_content={"x": 1}),
            {"x": 1},
        ),
        (AfterToolCallResult(structured_content={"x": 2}), {"x": 2}),
        (AfterToolCallResult(details={"d": 1}), {"city": "Oslo", "celsius": 21.5}),
        (AfterToolCallResult(is_error=True), {"city": "Oslo", "celsius": 21.5}),
    ],
)
async def test_after_hook_structured_content_rule(
    override: AfterToolCallResult, structured: Any
) -> None:
    """Delta §1.4: the hook's ``structured_content`` if given; else dropped when the hook gave
    ``content``; else kept."""

    async def after(ctx: Any) -> AfterToolCallResult:
        return override

    _, rec, _ = await run(
        [tool_use(call("c1", "weather", {"city": "Oslo"})), text("ok")],
        [wrap_tool_definition(weather)],
        config=LoopConfig(after_tool_call=after),
    )
    result = rec.of("tool_execution_end")[0].result
    assert result.structured_content == structured
    if structured is None:
        assert "structuredContent" not in result.to_json_dict()


def test_tool_definition_carries_declarations_to_the_agent_tool() -> None:
    async def execute(tool_call_id: str, params: Any, on_update: Any, ctx: Any) -> AgentToolResult:
        return AgentToolResult()

    definition = ToolDefinition(
        name="t",
        description="t",
        parameters={"type": "object", "properties": {}},
        execute=execute,
        output_schema={"type": "string"},
        replay="never",
    )
    agent_tool = wrap_tool_definition(definition)
    assert (agent_tool.output_schema, agent_tool.replay) == ({"type": "string"}, "never")
    assert make_tool("x", execute).replay is None  # undeclared: treated as "safe"
