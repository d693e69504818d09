"""``@tool``, ``AgentTool``, ``ToolDefinition`` and ``wrap_tool_definition`` (DESIGN §3)."""

from __future__ import annotations

import threading
from typing import Literal

import pytest

from pi_core import AgentTool, AgentToolResult, TextContent, ToolDefinition, tool
from pi_core._tools.definition import result_from_value, to_agent_tool, wrap_tool_definition


@tool
async def weather(city: str, days: int = 1) -> str:
    """Forecast for a city.

    Args:
        city: Name of the city.
        days: How many days ahead,
            counted from today.
    """
    return f"{city}: sunny for {days} day(s)"


def test_tool_schema_comes_from_the_signature_and_docstring() -> None:
    assert weather.name == "weather"
    assert weather.description == "Forecast for a city."
    assert weather.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Name of the city."},
            "days": {
                "type": "integer",
                "default": 1,
                "description": "How many days ahead, counted from today.",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


async def test_async_tool_returns_text_block_with_defaults_applied() -> None:
    result = await weather.execute("call-1", {"city": "Oslo"}, None, None)
    assert result.to_json_dict() == {
        "content": [{"type": "text", "text": "Oslo: sunny for 1 day(s)"}]
    }


async def test_sync_tool_runs_in_a_worker_thread() -> None:
    seen: list[str] = []

    @tool
    def where() -> str:
        """Name the thread."""
        seen.append(threading.current_thread().name)
        return "ok"

    result = await where.execute("c", {}, None, None)
    assert result.text == "ok"
    assert seen != [threading.main_thread().name]


def test_decorated_function_stays_callable() -> None:
    @tool(name="adder", execution_mode="sequential")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert add(2, 3) == 5
    assert add.name == "adder"
    assert add.execution_mode == "sequential"


def test_literal_and_optional_parameters_in_schema() -> None:
    @tool
    def pick(mode: Literal["a", "b"], note: str | None = None) -> str:
        """Pick."""
        return mode

    assert pick.parameters["properties"]["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert pick.parameters["required"] == ["mode"]


def test_var_args_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs are not supported"):

        @tool
        def bad(*names: str) -> str:
            return ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hi", [{"type": "text", "text": "hi"}]),
        (None, []),
        ({"a": 1}, [{"type": "text", "text": '{"a": 1}'}]),
        (3, [{"type": "text", "text": "3"}]),
        (TextContent(text="t"), [{"type": "text", "text": "t"}]),
    ],
)
def test_result_from_value(value: object, expected: list[dict[str, str]]) -> None:
    assert result_from_value(value).to_json_dict()["content"] == expected


async def test_wrap_tool_definition_passes_context_and_drops_product_fields() -> None:
    seen = []

    async def execute(tool_call_id, params, on_update, ctx):  # type: ignore[no-untyped-def]
        seen.append((tool_call_id, params, ctx))
        return AgentToolResult(content=[TextContent(text="done")])

    definition = ToolDefinition(
        name="t",
        label="T",
        description="d",
        parameters={"type": "object", "properties": {}},
        execute=execute,
        prompt_snippet="use t",
        execution_mode="sequential",
    )
    wrapped = wrap_tool_definition(definition, {"cwd": "/x"})
    assert isinstance(wrapped, AgentTool)
    assert (wrapped.name, wrapped.label, wrapped.execution_mode) == ("t", "T", "sequential")
    assert not hasattr(wrapped, "prompt_snippet")
    result = await wrapped.execute("id-1", {"a": 1})
    assert result.text == "done"
    assert seen == [("id-1", {"a": 1}, {"cwd": "/x"})]


def test_to_agent_tool_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="cannot register 42 as a tool"):
        to_agent_tool(42)


def test_agent_tool_label_defaults_to_name() -> None:
    async def execute(tool_call_id, params, on_update=None):  # type: ignore[no-untyped-def]
        return AgentToolResult()

    assert AgentTool(name="n", description="", parameters={}, execute=execute).label == "n"
