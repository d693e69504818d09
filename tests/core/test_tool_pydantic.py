"""``@tool`` honours pydantic (issue 31, item 1): the parameters are pydantic's own view of the
signature. Per feature, each test checks the schema the model sees, the error text a bad value
gets through the pipeline, and the value the function receives."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pydantic
import pytest
from pydantic import Field

from pi_core import AgentContext, LoopConfig, ToolCall, run_tool_call, tool, wrap_tool_definition


async def call(definition: Any, arguments: Any) -> tuple[bool, str]:
    """``(isError, text)`` of one call through the whole pipeline (validation included)."""
    outcome = await run_tool_call(
        ToolCall(id="c", name=definition.name, arguments=arguments),
        AgentContext(tools=[wrap_tool_definition(definition)]),
        LoopConfig(),
    )
    message = outcome.to_message()
    return message.is_error, "".join(getattr(block, "text", "") for block in message.content)


def failed(name: str, lines: list[str], received: str) -> tuple[bool, str]:
    listed = "\n".join(f"  - {line}" for line in lines)
    return (
        True,
        f'Validation failed for tool "{name}":\n{listed}\n\nReceived arguments:\n{received}',
    )


# -- constraints ---------------------------------------------------------------------------------


async def test_field_constraints_are_in_the_schema_and_enforced() -> None:
    seen: list[Any] = []

    @tool
    def rate(
        stars: Annotated[int, Field(ge=1, le=5)],
        word: Annotated[str, Field(min_length=2, max_length=8, pattern="^[a-z]+$")] = "ok",
    ) -> str:
        """Rate something."""
        seen.append((stars, word))
        return "rated"

    assert rate.parameters == {
        "type": "object",
        "properties": {
            "stars": {"type": "integer", "minimum": 1, "maximum": 5},
            "word": {
                "type": "string",
                "minLength": 2,
                "maxLength": 8,
                "pattern": "^[a-z]+$",
                "default": "ok",
            },
        },
        "required": ["stars"],
        "additionalProperties": False,
    }
    assert await call(rate, {"stars": 9}) == failed(
        "rate", ["stars: expected <= 5"], '{\n  "stars": 9\n}'
    )
    assert await call(rate, {"stars": 1, "word": "A"}) == failed(
        "rate",
        ["word: expected at least 2 characters", "word: expected to match ^[a-z]+$"],
        '{\n  "stars": 1,\n  "word": "A"\n}',
    )
    assert await call(rate, {"stars": "5"}) == (False, "rated")
    assert seen == [(5, "ok")]


# -- descriptions --------------------------------------------------------------------------------


async def test_descriptions_come_from_field_then_the_docstring() -> None:
    @tool
    def greet(
        name: Annotated[str, Field(description="Who to greet (from Field).")],
        greeting: str = "Hello",
        punctuation: str = Field("!", description="End mark (from a Field default)."),
    ) -> str:
        """Greet someone.

        Args:
            name: Who to greet (from the docstring, overridden).
            greeting: The word of greeting.
            punctuation: End mark (from the docstring, overridden).
        """
        return f"{greeting}, {name}{punctuation}"

    assert greet.description == "Greet someone."
    assert greet.parameters["properties"] == {
        "name": {"type": "string", "description": "Who to greet (from Field)."},
        "greeting": {"type": "string", "default": "Hello", "description": "The word of greeting."},
        "punctuation": {
            "type": "string",
            "default": "!",
            "description": "End mark (from a Field default).",
        },
    }
    assert await call(greet, {}) == failed("greet", ["name: missing"], "{}")
    assert await call(greet, {"name": "Ada"}) == (False, "Hello, Ada!")


# -- defaults and default factories --------------------------------------------------------------


async def test_a_field_default_is_the_value_an_omitted_argument_gets() -> None:
    @tool
    def forecast(city: str, days: int = Field(1, ge=1, le=7)) -> str:
        """Forecast."""
        return f"{city}: {days!r}"

    assert forecast.parameters["properties"]["days"] == {
        "type": "integer",
        "default": 1,
        "minimum": 1,
        "maximum": 7,
    }
    assert forecast.parameters["required"] == ["city"]
    assert await call(forecast, {"city": "Oslo", "days": 0}) == failed(
        "forecast", ["days: expected >= 1"], '{\n  "city": "Oslo",\n  "days": 0\n}'
    )
    assert await call(forecast, {"city": "Oslo"}) == (False, "Oslo: 1")


async def test_default_factories_give_each_call_a_fresh_value() -> None:
    seen: list[list[str]] = []

    @tool
    def tag(
        more: Annotated[list[str], Field(default_factory=lambda: ["new"])],
        tags: list[str] = Field(default_factory=list),
    ) -> str:
        """Tag."""
        tags.append("x")
        seen.append(tags)
        return f"{tags} {more}"

    assert tag.parameters == {
        "type": "object",
        "properties": {
            "more": {"type": "array", "items": {"type": "string"}},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    }
    # Pi 1.6's coercion wraps a lone value into the array (tags: "a" is ["a"]); an object is not
    # a string, so the wrapped element is refused
    assert await call(tag, {"tags": {"a": 1}}) == failed(
        "tag", ["tags.0: expected string, got object"], '{\n  "tags": {\n    "a": 1\n  }\n}'
    )
    assert await call(tag, {}) == (False, "['x'] ['new']")
    assert await call(tag, {}) == (False, "['x'] ['new']")
    assert seen[0] is not seen[1]


# -- aliases -------------------------------------------------------------------------------------


async def test_an_alias_is_the_name_the_model_uses() -> None:
    @tool
    def find_city(city_name: Annotated[str, Field(alias="cityName")]) -> str:
        """Find a city."""
        return f"found {city_name}"

    assert find_city.parameters == {
        "type": "object",
        "properties": {"cityName": {"type": "string"}},
        "required": ["cityName"],
        "additionalProperties": False,
    }
    assert await call(find_city, {"city_name": "Oslo"}) == failed(
        "find_city",
        ["cityName: missing", "city_name: unknown field"],
        '{\n  "city_name": "Oslo"\n}',
    )
    assert await call(find_city, {"cityName": "Oslo"}) == (False, "found Oslo")


# -- Literal and enums ---------------------------------------------------------------------------


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


async def test_literal_values_are_an_enum_of_the_schema() -> None:
    @tool
    def speed(mode: Literal["fast", "slow"] = "fast", level: Literal[1, 2, 3] = 1) -> str:
        """Set the speed."""
        return f"{mode!r} {level!r}"

    assert speed.parameters["properties"] == {
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
        "level": {"type": "integer", "enum": [1, 2, 3], "default": 1},
    }
    assert await call(speed, {"mode": "medium"}) == failed(
        "speed",
        ['mode: expected one of ["fast","slow"]'],
        '{\n  "mode": "medium"\n}',
    )
    assert await call(speed, {"level": 3}) == (False, "'fast' 3")


async def test_an_enum_parameter_receives_the_member() -> None:
    seen: list[Any] = []

    @tool
    def temperature(unit: Unit = Unit.CELSIUS) -> str:
        """Temperature."""
        seen.append(unit)
        return unit.name

    assert temperature.parameters == {
        "type": "object",
        "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "properties": {"unit": {"$ref": "#/$defs/Unit", "default": "celsius"}},
        "additionalProperties": False,
    }
    assert await call(temperature, {"unit": "kelvin"}) == failed(
        "temperature",
        ['unit: expected one of ["celsius","fahrenheit"]'],
        '{\n  "unit": "kelvin"\n}',
    )
    assert await call(temperature, {"unit": "fahrenheit"}) == (False, "FAHRENHEIT")
    assert await call(temperature, {}) == (False, "CELSIUS")
    assert seen == [Unit.FAHRENHEIT, Unit.CELSIUS]


# -- Optional ------------------------------------------------------------------------------------


async def test_an_optional_parameter_accepts_null_and_defaults_to_none() -> None:
    @tool
    def head(limit: int | None = None) -> str:
        """First lines."""
        return repr(limit)

    assert head.parameters["properties"] == {
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    }
    assert await call(head, {"limit": "ten"}) == failed(
        "head",
        ["limit: expected integer, got string"],
        '{\n  "limit": "ten"\n}',
    )
    assert await call(head, {}) == (False, "None")
    assert await call(head, {"limit": None}) == (False, "None")
    assert await call(head, {"limit": 3}) == (False, "3")


# -- nested models, lists and dicts of them ------------------------------------------------------


class Point(pydantic.BaseModel):
    x: Annotated[int, Field(ge=0, description="Column.")]
    y: int = 0

    @pydantic.field_validator("y")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("y must be even")
        return value


POINT_SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "integer", "minimum": 0, "description": "Column."},
        "y": {"type": "integer", "default": 0},
    },
    "required": ["x"],
}


async def test_a_model_parameter_receives_the_model() -> None:
    seen: list[Any] = []

    @tool
    def plot(point: Point) -> str:
        """Plot a point."""
        seen.append(point)
        return "plotted"

    assert plot.parameters == {
        "type": "object",
        "$defs": {"Point": POINT_SCHEMA},
        "properties": {"point": {"$ref": "#/$defs/Point"}},
        "required": ["point"],
        "additionalProperties": False,
    }
    assert await call(plot, {"point": {"x": -1}}) == failed(
        "plot", ["point.x: expected >= 0"], '{\n  "point": {\n    "x": -1\n  }\n}'
    )
    # what JSON Schema cannot say (a validator) is pydantic's text, at the same path
    assert await call(plot, {"point": {"x": 1, "y": 3}}) == failed(
        "plot",
        ["point.y: Value error, y must be even"],
        '{\n  "point": {\n    "x": 1,\n    "y": 3\n  }\n}',
    )
    assert await call(plot, {"point": {"x": 1}}) == (False, "plotted")
    assert seen == [Point(x=1, y=0)]


async def test_lists_and_dicts_of_models_receive_models() -> None:
    seen: list[Any] = []

    @tool
    def route(points: list[Point], names: dict[str, Point] | None = None) -> str:
        """A route."""
        seen.append((points, names))
        return "ok"

    assert route.parameters == {
        "type": "object",
        "$defs": {"Point": POINT_SCHEMA},
        "properties": {
            "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
            "names": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/Point"}},
                    {"type": "null"},
                ],
                "default": None,
            },
        },
        "required": ["points"],
        "additionalProperties": False,
    }
    assert await call(route, {"points": [{"x": 1}, {"x": -2}]}) == failed(
        "route",
        ["points.1.x: expected >= 0"],
        '{\n  "points": [\n    {\n      "x": 1\n    },\n    {\n      "x": -2\n    }\n  ]\n}',
    )
    assert await call(route, {"points": [{"x": 1}], "names": {"home": {"x": 2, "y": 1}}}) == (
        failed(
            "route",
            ["names.home.y: Value error, y must be even"],
            '{\n  "points": [\n    {\n      "x": 1\n    }\n  ],\n  "names": {\n    "home": {\n'
            '      "x": 2,\n      "y": 1\n    }\n  }\n}',
        )
    )
    assert await call(route, {"points": [{"x": 1}], "names": {"home": {"x": 2}}}) == (False, "ok")
    assert seen == [([Point(x=1)], {"home": Point(x=2)})]


# -- names and signatures ------------------------------------------------------------------------


async def test_parameters_may_have_the_names_of_model_attributes() -> None:
    @tool
    def fields(json: str, schema: str, title: str = "t", model_config: int = 0) -> str:
        """Names a generated pydantic model would refuse or shadow."""
        return f"{json} {schema} {title} {model_config}"

    assert sorted(fields.parameters["properties"]) == ["json", "model_config", "schema", "title"]
    assert fields.parameters["properties"]["title"] == {"type": "string", "default": "t"}
    assert await call(fields, {"json": "j", "schema": "s"}) == (False, "j s t 0")


async def test_annotations_may_name_classes_local_to_a_function() -> None:
    class Box(pydantic.BaseModel):
        size: int

    @tool
    def pack(box: Box) -> str:
        """Pack a box."""
        return repr(box)

    assert pack.parameters["properties"] == {"box": {"$ref": "#/$defs/Box"}}
    assert await call(pack, {"box": {"size": 2}}) == (False, "Box(size=2)")


def test_positional_only_parameters_are_refused() -> None:
    with pytest.raises(TypeError, match=r"^@tool only: positional-only parameters are not"):

        @tool
        def only(a: int, /) -> str:
            return ""


def test_an_unsupported_annotation_is_a_type_error_naming_the_tool() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match=r"^@tool opaque: Unable to generate pydantic-core schema"):

        @tool
        def opaque(thing: Opaque) -> str:
            return ""
