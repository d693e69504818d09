"""Argument validation: Pi 1.6's coercion, JSON Schema, Pi's message text (spec §2.11, §8.2,
pi-1.6-delta §11, issue 27).

Expected values and texts come from the conformance cases (``loop-*``,
``r16-loop-validation-texts``) and from running pi-ai 1.6.0's ``validateToolArguments``
(pi-schema) on the same schema and value (``test_validation_pi16.py`` compares the two on
thousands of schemas and values).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any

import jsonschema
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_core import AgentTool, tool
from pi_core._errors import ToolError
from pi_core._tools.validation import (
    ToolArgumentsError,
    js_number_to_string,
    json_stringify,
    validate_tool_arguments,
    validator_cache_info,
)


async def _never_called(*args: Any) -> Any:
    raise AssertionError("validation never executes the tool")


def make_tool(parameters: Any, name: str = "t") -> AgentTool:
    return AgentTool(name=name, description="", parameters=parameters, execute=_never_called)


# The reference's own schemas (npm 0.73.1 createAllTools; descriptions dropped).
READ = make_tool(
    {
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "number"},
            "limit": {"type": "number"},
        },
    },
    name="read",
)
EDIT = make_tool(
    {
        "type": "object",
        "required": ["path", "edits"],
        "properties": {
            "path": {"type": "string"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["oldText", "newText"],
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
    name="edit",
)
GREP = make_tool(
    {
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
            "glob": {"type": "string"},
            "ignoreCase": {"type": "boolean"},
            "literal": {"type": "boolean"},
            "context": {"type": "number"},
            "limit": {"type": "number"},
        },
    },
    name="grep",
)


def message(tool: AgentTool, arguments: Any) -> str:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, arguments)
    return str(caught.value)


def error_lines(tool: AgentTool, arguments: Any) -> list[str]:
    text = message(tool, arguments)
    head, _, _ = text.partition("\n\nReceived arguments:\n")
    return head.split("\n")[1:]


def prop(schema: dict[str, Any]) -> AgentTool:
    """A tool with one optional property ``x`` of the given schema."""
    return make_tool({"type": "object", "properties": {"x": schema}})


# ----------------------------------------------------------------------------------------------
# §2.11 message examples and §8.2 scenarios 49-51 (exact full text)
# ----------------------------------------------------------------------------------------------


def test_extra_key_with_additional_properties_false() -> None:
    tool = make_tool(
        {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "additionalProperties": False,
        }
    )
    assert message(tool, {"path": "a", "extra": 1}) == (
        'Validation failed for tool "t":\n'
        "  - extra: unknown field\n"
        "\n"
        "Received arguments:\n"
        '{\n  "path": "a",\n  "extra": 1\n}'
    )


def test_each_missing_property_is_its_own_line() -> None:
    assert message(EDIT, {}) == (
        'Validation failed for tool "edit":\n'
        "  - path: missing\n"
        "  - edits: missing\n"
        "\n"
        "Received arguments:\n"
        "{}"
    )


def test_null_arguments_are_not_an_object() -> None:
    assert message(READ, None) == (
        'Validation failed for tool "read":\n  - root: expected object, got null\n\n'
        "Received arguments:\nnull"
    )


@pytest.mark.parametrize(
    ("arguments", "got", "received"),
    [
        ([1], "array", "[\n  1\n]"),
        ("str", "string", '"str"'),
        (5.0, "integer", "5"),
        (True, "boolean", "true"),
        ([], "array", "[]"),
    ],
)
def test_non_object_arguments(arguments: Any, got: str, received: str) -> None:
    assert message(READ, arguments) == (
        'Validation failed for tool "read":\n'
        f"  - root: expected object, got {got}\n\nReceived arguments:\n" + received
    )


def test_a_string_of_json_is_not_parsed() -> None:
    assert error_lines(READ, '{"path": "a"}') == ["  - root: expected object, got string"]


# ----------------------------------------------------------------------------------------------
# Conformance cases (texts from the case files; loop-validation-errors from the reference run)
# ----------------------------------------------------------------------------------------------


def test_case_loop_validation_errors() -> None:
    assert message(EDIT, {}) == (
        'Validation failed for tool "edit":\n  - path: missing\n  - edits: missing'
        "\n\nReceived arguments:\n{}"
    )
    assert message(READ, {"path": {"a": 1}}) == (
        'Validation failed for tool "read":\n  - path: expected string, got object\n\n'
        "Received arguments:\n"
        '{\n  "path": {\n    "a": 1\n  }\n}'
    )


def test_case_loop_null_and_empty_are_coerced() -> None:
    # Pi 1.6 (issue 27): an optional null is dropped, "" is 0 for a number
    assert validate_tool_arguments(READ, {"path": "a.txt", "offset": None}) == {"path": "a.txt"}
    assert validate_tool_arguments(READ, {"path": "a.txt", "limit": ""}) == {
        "path": "a.txt",
        "limit": 0,
    }


def test_case_loop_path_number_becomes_a_string() -> None:
    assert validate_tool_arguments(READ, {"path": 123}) == {"path": "123"}


def test_case_loop_coercion_and_extra_keys() -> None:
    offset_limit = validate_tool_arguments(READ, {"path": "five.txt", "offset": "2", "limit": "2"})
    assert offset_limit == {"path": "five.txt", "offset": 2, "limit": 2}
    assert type(offset_limit["offset"]) is int
    assert validate_tool_arguments(
        GREP, {"pattern": "alpha", "path": "case.txt", "ignoreCase": "true"}
    ) == {"pattern": "alpha", "path": "case.txt", "ignoreCase": True}
    assert validate_tool_arguments(READ, {"path": "case.txt", "encoding": "utf-8"}) == {
        "path": "case.txt",
        "encoding": "utf-8",
    }


# ----------------------------------------------------------------------------------------------
# Pi 1.6's conversions (pi-schema; values from pi-ai 1.6.0's validateToolArguments)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("5", 5),
        ("50", 50),
        ("-3", -3),
        ("-0", 0),
        ("5.5", 5.5),
        ("-1.25", -1.25),
        ("1e3", 1000),
        ("", 0),
        ("   ", 0),
        (" 7 ", 7),
        ("\n5", 5),
        ("0x10", 16),
        ("0b11", 3),
        ("0o7", 7),
        ("+5", 5),
        (".5", 0.5),
        ("5.", 5),
        ("007", 7),
        ("true", 1),
        ("FALSE", 0),
        ("12n", 12),
        (True, 1),
        (False, 0),
    ],
)
def test_a_number_from_what_javascript_reads_as_one(value: Any, number: float) -> None:
    result = validate_tool_arguments(READ, {"path": "a", "offset": value})
    assert result == {"path": "a", "offset": number}
    assert type(result["offset"]) is type(number)


def test_an_optional_null_is_dropped_and_a_required_one_converted() -> None:
    assert validate_tool_arguments(READ, {"path": "a", "offset": None}) == {"path": "a"}
    required = make_tool(
        {"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}
    )
    assert validate_tool_arguments(required, {"n": None}) == {"n": 0}


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ("abc", "string"),
        ("1_000", "string"),
        ("5px", "string"),
        ("Infinity", "string"),
        ("NaN", "string"),
        ("1e400", "string"),
        ("\u0663", "string"),  # an Arabic-Indic digit: int() would accept it
        ([5], "array"),
        ({"n": 5}, "object"),
    ],
)
def test_what_pi_16_cannot_convert_is_reported_in_its_words(value: Any, got: str) -> None:
    assert error_lines(READ, {"path": "a", "offset": value}) == [
        f"  - offset: expected number, got {got}"
    ]


def test_scenario_45_exact_text() -> None:
    assert message(READ, {"path": "a", "offset": "abc"}) == (
        'Validation failed for tool "read":\n  - offset: expected number, got string\n\n'
        'Received arguments:\n{\n  "path": "a",\n  "offset": "abc"\n}'
    )


INTEGER = prop({"type": "integer"})


@pytest.mark.parametrize(
    ("value", "number"),
    [("2", 2), ("-7", -7), ("2.0", 2), ("1e3", 1000), ("1.5", 1), ("2.5e0", 2), ("1e-3", 0)],
)
def test_an_integer_is_a_number_truncated(value: Any, number: int) -> None:
    result = validate_tool_arguments(INTEGER, {"x": value})
    assert result == {"x": number}
    assert type(result["x"]) is int
    assert validate_tool_arguments(INTEGER, {"x": 1.5}) == {"x": 1}
    assert validate_tool_arguments(INTEGER, {"x": False}) == {"x": 0}
    assert validate_tool_arguments(INTEGER, {"x": None}) == {}


def test_a_big_integer_string_is_the_double_javascript_reads() -> None:
    assert validate_tool_arguments(INTEGER, {"x": "123456789012345678901234567890"}) == {
        "x": 1.2345678901234568e29
    }
    assert error_lines(INTEGER, {"x": "abc"}) == ["  - x: expected integer, got string"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(123, "123"), (1.5, "1.5"), (True, "true"), (False, "false"), (None, "null")],
)
def test_a_string_from_a_number_boolean_or_null(value: Any, text: str) -> None:
    assert validate_tool_arguments(READ, {"path": value}) == {"path": text}


def test_arrays_and_objects_are_no_strings_in_pi_16_either() -> None:
    assert error_lines(READ, {"path": ["a"]}) == ["  - path: expected string, got array"]
    assert error_lines(READ, {"path": {"a": 1}}) == ["  - path: expected string, got object"]


BOOLEAN = prop({"type": "boolean"})


@pytest.mark.parametrize(
    ("value", "flag"),
    [
        ("true", True),
        ("false", False),
        ("TRUE", True),
        ("False", False),
        ("1", True),
        ("0", False),
        (1, True),
        (0, False),
    ],
)
def test_a_boolean_from_true_false_one_zero(value: Any, flag: bool) -> None:
    assert validate_tool_arguments(BOOLEAN, {"x": value}) == {"x": flag}
    assert validate_tool_arguments(BOOLEAN, {"x": None}) == {}


@pytest.mark.parametrize(("value", "got"), [("yes", "string"), ("", "string"), (2, "integer")])
def test_no_boolean_in_pi_16_either(value: Any, got: str) -> None:
    assert error_lines(BOOLEAN, {"x": value}) == [f"  - x: expected boolean, got {got}"]


def test_single_edit_object_is_wrapped_into_an_array() -> None:
    arguments = {"path": "a.ts", "edits": {"oldText": "a", "newText": "b"}}
    assert validate_tool_arguments(EDIT, arguments) == {
        "path": "a.ts",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    assert arguments["edits"] == {"oldText": "a", "newText": "b"}


def test_a_wrapped_object_is_coerced_and_validated_as_an_item() -> None:
    tool = prop(
        {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}}
    )
    assert validate_tool_arguments(tool, {"x": {"n": "5"}}) == {"x": [{"n": 5}]}
    assert message(EDIT, {"path": "a", "edits": {"oldText": "a"}}) == (
        'Validation failed for tool "edit":\n'
        "  - edits.0.newText: missing\n\n"
        'Received arguments:\n{\n  "path": "a",\n  "edits": {\n    "oldText": "a"\n  }\n}'
    )


@pytest.mark.parametrize(("value", "items"), [("x", ["x"]), (5, ["5"]), (True, ["true"])])
def test_any_single_value_is_wrapped_into_an_array(value: Any, items: list[Any]) -> None:
    tool = prop({"type": "array", "items": {"type": "string"}})
    assert validate_tool_arguments(tool, {"x": value}) == {"x": items}
    assert validate_tool_arguments(tool, {"x": None}) == {}  # optional: dropped
    assert validate_tool_arguments(prop({"type": "array"}), {"x": {"a": 1}}) == {"x": [{"a": 1}]}
    assert error_lines(tool, {"x": {"a": 1}}) == ["  - x.0: expected string, got object"]


# ----------------------------------------------------------------------------------------------
# Where coercion reaches: nesting, arrays, unions, $ref, additionalProperties
# ----------------------------------------------------------------------------------------------


def test_coercion_in_nested_arrays_and_objects() -> None:
    tool = prop(
        {
            "type": "object",
            "properties": {
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
                "on": {"type": "boolean"},
            },
        }
    )
    assert validate_tool_arguments(
        tool, {"x": {"grid": [["1", "2"], [], ["-3"]], "on": "false"}}
    ) == {"x": {"grid": [[1, 2], [], [-3]], "on": False}}


def test_coercion_through_additional_properties_pattern_properties_and_prefix_items() -> None:
    tool = make_tool(
        {
            "type": "object",
            "properties": {"fixed": {"type": "string"}},
            "patternProperties": {"^n_": {"type": "number"}},
            "additionalProperties": {"type": "boolean"},
        }
    )
    assert validate_tool_arguments(tool, {"fixed": "1", "n_a": "1.5", "flag": "true"}) == {
        "fixed": "1",
        "n_a": 1.5,
        "flag": True,
    }
    pair = prop(
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}}
    )
    assert validate_tool_arguments(pair, {"x": ["4", "true", "false"]}) == {"x": [4, True, False]}


def test_union_takes_the_first_member_the_coerced_value_matches() -> None:
    optional_int = prop({"anyOf": [{"type": "integer"}, {"type": "null"}]})
    assert validate_tool_arguments(optional_int, {"x": "5"}) == {"x": 5}
    assert validate_tool_arguments(optional_int, {"x": None}) == {"x": None}
    type_list = prop({"type": ["null", "number"]})
    assert validate_tool_arguments(type_list, {"x": "2.5"}) == {"x": 2.5}
    one_of = prop({"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "integer"}}]})
    assert validate_tool_arguments(one_of, {"x": ["1"]}) == {"x": [1]}


def test_a_value_that_already_matches_a_union_member_is_kept() -> None:
    for schema in (
        {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": ["integer", "string"]},
    ):
        assert validate_tool_arguments(prop(schema), {"x": "5"}) == {"x": "5"}


def test_allof_members_all_coerce() -> None:
    tool = prop(
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}},
                {"properties": {"b": {"type": "boolean"}}},
            ]
        }
    )
    assert validate_tool_arguments(tool, {"x": {"a": "1", "b": "true"}}) == {
        "x": {"a": 1, "b": True}
    }


class Edit(pydantic.BaseModel):
    old_text: str
    count: int = 1


@tool
def apply_edits(
    path: str, edits: list[Edit], backup: Edit | None = None, dry_run: bool = False
) -> str:
    """Apply edits."""
    return path


def test_pydantic_schema_with_defs_ref_and_optional() -> None:
    assert "$defs" in apply_edits.parameters
    result = validate_tool_arguments(
        apply_edits,
        {
            "path": "a",
            "edits": {"old_text": "x", "count": "3"},
            "backup": {"old_text": "y", "count": "2"},
            "dry_run": "true",
        },
    )
    assert result == {
        "path": "a",
        "edits": [{"old_text": "x", "count": 3}],
        "backup": {"old_text": "y", "count": 2},
        "dry_run": True,
    }


def test_pydantic_schema_errors() -> None:
    assert message(apply_edits, {"path": 1, "edits": [{"count": "1.5"}], "extra": None}) == (
        'Validation failed for tool "apply_edits":\n'
        "  - edits.0.old_text: missing\n"
        "  - extra: unknown field\n"
        "\n"
        "Received arguments:\n"
        '{\n  "path": 1,\n  "edits": [\n    {\n      "count": "1.5"\n    }\n  ],\n'
        '  "extra": null\n}'
    )


@tool(coerce_arguments=False)
def exact_count(label: str, count: int = 1) -> str:
    """Tell "5" from 5."""
    return f"{label}:{count}"


def test_a_tool_can_opt_out_of_coercion() -> None:
    """``coerce_arguments=False`` (``@tool``, ToolDefinition, AgentTool): checked as sent."""
    assert exact_count.coerce_arguments is False
    assert apply_edits.coerce_arguments is True
    assert validate_tool_arguments(exact_count, {"label": "a", "count": 5}) == {
        "label": "a",
        "count": 5,
    }
    assert message(exact_count, {"label": 1, "count": "5", "x": None}) == (
        'Validation failed for tool "exact_count":\n'
        "  - label: expected string, got integer\n"
        "  - count: expected integer, got string\n"
        "  - x: unknown field\n"
        "\n"
        "Received arguments:\n"
        '{\n  "label": 1,\n  "count": "5",\n  "x": null\n}'
    )
    # the same call, coerced: "5" becomes 5, 1 becomes "1"; only the unknown key is an error
    coerced = dataclasses.replace(exact_count, coerce_arguments=True)
    assert error_lines(coerced, {"label": 1, "count": "5", "x": None}) == ["  - x: unknown field"]
    agent_tool = make_tool({"type": "object", "properties": {"n": {"type": "number"}}})
    agent_tool.coerce_arguments = False
    assert error_lines(agent_tool, {"n": None}) == ["  - n: expected number, got null"]


def test_recursive_schema_coerces_every_level() -> None:
    tool = make_tool(
        {
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                }
            },
            "$ref": "#/$defs/Node",
        }
    )
    arguments = {"v": "1", "kids": [{"v": "2", "kids": {"v": "3"}}]}
    assert validate_tool_arguments(tool, arguments) == {
        "v": 1,
        "kids": [{"v": 2, "kids": [{"v": 3}]}],
    }


# ----------------------------------------------------------------------------------------------
# Order and vocabulary (texts from TypeBox 1.4 on the same schema and value)
# ----------------------------------------------------------------------------------------------


def test_order_required_extras_then_properties_in_schema_order_and_items_by_index() -> None:
    tool = make_tool(
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": EDIT.parameters["properties"]["edits"],
                "z": {"type": "string"},
            },
            "required": ["path", "edits", "q"],
            "additionalProperties": False,
        }
    )
    arguments = {
        "z": 1,
        "extra1": 2,
        "edits": [{"oldText": 1}, {"oldText": "a", "newText": "b", "q": 1}],
        "extra2": 3,
    }
    assert error_lines(tool, arguments) == [
        "  - path: missing",
        "  - q: missing",
        "  - edits.0.newText: missing",
        "  - edits.1.q: unknown field",
        "  - extra1: unknown field",
        "  - extra2: unknown field",
    ]


def test_every_error_is_listed() -> None:
    """pi-schema lists every error (no limit)."""
    tool = make_tool({"type": "object", "additionalProperties": False})
    arguments = {f"k{i}": i for i in range(10)}
    assert error_lines(tool, arguments) == [f"  - k{i}: unknown field" for i in range(10)]
    strings = make_tool({"type": "object", "additionalProperties": {"type": "string"}})
    arrays = {f"k{i}": [i] for i in range(10)}
    assert error_lines(strings, arrays) == [
        f"  - k{i}: expected string, got array" for i in range(10)
    ]


@pytest.mark.parametrize(
    ("schema", "value", "lines"),
    [
        ({"type": "integer", "minimum": 0, "maximum": 10}, -1.5, ["expected >= 0"]),
        (
            {"type": "number", "exclusiveMinimum": 0, "multipleOf": 2},
            -3,
            ["expected > 0", "expected a multiple of 2"],
        ),
        ({"maximum": 1e21}, 1e22, ["expected <= 1e+21"]),
        ({"exclusiveMaximum": 0.5}, 1, ["expected < 0.5"]),
        ({"enum": ["a", "b"]}, "c", ['expected one of ["a","b"]']),
        ({"const": 5}, 4, ["expected 5"]),
        (
            {"type": "string", "pattern": "^a", "minLength": 2, "maxLength": 3},
            "bbbb",
            ["expected at most 3 characters", "expected to match ^a"],
        ),
        ({"type": "string", "minLength": 3}, "ab", ["expected at least 3 characters"]),
        ({"type": ["string", "null"]}, [3], ["expected string or null, got array"]),
        ({"not": {"type": "string"}}, "x", ["must not match the schema in not"]),
        ({"contains": {"type": "string"}}, [1], ["expected at least 1 matching item"]),
        ({"type": "array", "minItems": 2}, [1], ["expected at least 2 items"]),
        (
            {"type": "array", "maxItems": 3, "uniqueItems": True},
            [1, 1, 1, 1],
            ["expected at most 3 items", "expected unique items"],
        ),
        (
            {"type": "object", "minProperties": 2, "maxProperties": 0},
            {"a": 1},
            ["expected at least 2 properties", "expected at most 0 properties"],
        ),
        (
            {"dependentRequired": {"a": ["b", "c"]}},
            {"a": 1, "c": 1},
            [".b: required when a is present"],
        ),
        (
            {"type": "object", "unevaluatedProperties": False, "properties": {"a": {}}},
            {"a": 1, "b": 2},
            [".b: unknown field"],
        ),
        (
            {"if": {"type": "string"}, "then": {"minLength": 3}},
            "ab",
            ["expected at least 3 characters"],
        ),
        (
            {"if": {"type": "string"}, "else": {"type": "number", "minimum": 5}},
            2,
            ["expected >= 5"],
        ),
        (
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "abc",
            ["expected integer, got string"],
        ),
        (
            {"oneOf": [{"type": "array", "items": {"type": "number"}}, {"type": "boolean"}]},
            "x",
            ["expected array, got string"],
        ),
        (
            {"oneOf": [{"type": "number"}, {"type": "integer"}]},
            5,
            ["matches more than one alternative"],
        ),
        (False, 1, ["no value is allowed here"]),
    ],
)
def test_keyword_messages(schema: Any, value: Any, lines: list[str]) -> None:
    """pi-schema's words (Pi 1.6); a line starting with ``.`` is about a member of ``x``."""
    expected = [f"  - x{line}" if line.startswith(".") else f"  - x: {line}" for line in lines]
    assert error_lines(prop(schema), {"x": value}) == expected


def test_nested_paths_and_grouped_lines() -> None:
    tool = make_tool(
        {
            "type": "object",
            "properties": {
                "d": {"type": "object", "additionalProperties": {"type": "integer"}},
                "p": {"type": "object", "propertyNames": {"pattern": "^a"}},
                "o": {"anyOf": [{"type": "object", "required": ["a"]}, {"type": "null"}]},
                "q": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
                "a/b": {"type": "string"},
                "t~x": {"type": "string"},
            },
        }
    )
    arguments = {
        "d": {"x": "a", "y": 1, "z": "b"},
        "p": {"ab": 1, "b": 2},
        "o": {},
        "q": [1, 2],
        "a/b": 1,
        "t~x": 2,
    }
    # q.0, a/b and t~x hold numbers, which become strings
    assert error_lines(tool, arguments) == [
        "  - d.x: expected integer, got string",
        "  - d.z: expected integer, got string",
        "  - p.b: invalid property name",
        "  - o.a: missing",
        "  - q.1: no value is allowed here",
    ]
    rest = {"q": [1], "a/b": [1], "t~x": {}}
    assert error_lines(tool, rest) == [
        "  - a/b: expected string, got array",
        "  - t~x: expected string, got object",
    ]
    assert validate_tool_arguments(tool, {"q": [1], "a/b": 1}) == {"q": ["1"], "a/b": "1"}


def test_required_inside_an_array_item_is_prefixed_by_its_path() -> None:
    tool = prop({"type": "array", "items": {"type": "object", "required": ["b", "c"]}})
    assert error_lines(tool, {"x": [{"b": 1}, {}]}) == [
        "  - x.0.c: missing",
        "  - x.1.b: missing",
        "  - x.1.c: missing",
    ]


# ----------------------------------------------------------------------------------------------
# Received arguments: JSON.stringify(arguments, null, 2)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (100.0, "100"),
        (-0.0, "0"),
        (0.5, "0.5"),
        (-1.5, "-1.5"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e100, "1e+100"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (1234.5678, "1234.5678"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (12345678901234567890, "12345678901234567000"),
        (123456789012345678901234, "1.2345678901234569e+23"),
        (math.inf, "Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_js_number_to_string(number: float, text: str) -> None:
    assert js_number_to_string(number) == text


def test_json_stringify_matches_javascript() -> None:
    value = {
        "s": '\x00\x1f\x7f\u2028é😀"\\/\b\f\n\r\t\ud800x\udfff',
        "e": {},
        "l": [],
        "n": [[], {}, [1, [2.0]]],
        "k\n": None,
        "b": [True, False],
        "f": [math.nan, -math.inf],
    }
    assert json_stringify(value) == (
        "{\n"
        '  "s": "\\u0000\\u001f\x7f\u2028é😀\\"\\\\/\\b\\f\\n\\r\\t\\ud800x\\udfff",\n'
        '  "e": {},\n'
        '  "l": [],\n'
        '  "n": [\n    [],\n    {},\n    [\n      1,\n      [\n        2\n      ]\n    ]\n  ],\n'
        '  "k\\n": null,\n'
        '  "b": [\n    true,\n    false\n  ],\n'
        '  "f": [\n    null,\n    null\n  ]\n'
        "}"
    )


def test_received_arguments_are_the_input_before_coercion_in_key_order() -> None:
    text = message(READ, {"z": 1, "offset": "7", "path": [1.0], "a": "ü"})
    assert text == (
        'Validation failed for tool "read":\n  - path: expected string, got array\n\n'
        'Received arguments:\n{\n  "z": 1,\n  "offset": "7",\n  "path": [\n    1\n  ],\n  "a": "ü"\n}'
    )


def test_the_error_carries_its_parts() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(READ, {"path": [1], "offset": "x"})
    error = caught.value
    assert isinstance(error, ToolError)
    assert error.tool_name == "read"
    assert error.errors == [
        ("path", "expected string, got array"),
        ("offset", "expected number, got string"),
    ]
    assert error.arguments == {"path": [1], "offset": "x"}


# ----------------------------------------------------------------------------------------------
# Copies, cache, broken schemas
# ----------------------------------------------------------------------------------------------


def test_the_callers_arguments_are_never_modified() -> None:
    arguments = {"path": "a", "edits": {"oldText": "x", "newText": "y"}}
    snapshot = copy.deepcopy(arguments)
    inner = arguments["edits"]
    result = validate_tool_arguments(EDIT, arguments)
    assert arguments == snapshot and arguments["edits"] is inner
    assert result is not arguments
    result["path"] = "changed"
    result["edits"][0]["oldText"] = "changed"
    assert arguments == snapshot

    plain = {"path": "a", "offset": 3, "nested": {"k": [1]}}
    same = validate_tool_arguments(READ, plain)
    assert same == plain and same is not plain and same["nested"] is not plain["nested"]


def test_draft_07_spellings() -> None:
    tuple_items = prop({"type": "array", "items": [{"type": "integer"}], "additionalItems": False})
    assert validate_tool_arguments(tuple_items, {"x": ["1"]}) == {"x": [1]}
    assert error_lines(tuple_items, {"x": ["a", 2]}) == [
        "  - x.0: expected integer, got string",
        "  - x.1: no value is allowed here",
    ]
    dependencies = prop({"dependencies": {"a": ["b"], "c": {"required": ["d"]}}})
    assert error_lines(dependencies, {"x": {"a": 1, "c": 2}}) == [
        "  - x.b: required when a is present",
        "  - x.d: missing",
    ]


def test_a_schema_keyword_does_not_change_the_messages() -> None:
    tool = make_tool(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"self": {"$ref": "#"}, "a": {"type": "string"}},
            "required": ["a", "b"],
        }
    )
    assert error_lines(tool, {"a": "x", "self": {"a": 1}}) == [
        "  - b: missing",
        "  - self.b: missing",
    ]


def test_the_error_survives_pickling() -> None:
    import pickle

    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(READ, {"path": {}})
    copied = pickle.loads(pickle.dumps(caught.value))
    assert str(copied) == str(caught.value)
    assert copied.errors == [("path", "expected string, got object")]


def test_keys_that_are_not_strings_are_reported_not_raised() -> None:
    tool = make_tool(
        {"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False}
    )
    assert message(tool, {1: "x", "ab": 2}) == (
        'Validation failed for tool "t":\n  - 1: unknown field\n\n'
        'Received arguments:\n{\n  "1": "x",\n  "ab": 2\n}'
    )
    assert validate_tool_arguments(make_tool({"type": "object"}), {1: "x"}) == {"1": "x"}


def test_tuples_are_arrays() -> None:
    tool = prop({"type": "array", "items": {"type": "integer"}})
    assert validate_tool_arguments(tool, {"x": ("1", 2)}) == {"x": [1, 2]}


def test_the_validator_is_compiled_once_per_tool_and_schema() -> None:
    tool = make_tool({"type": "object", "properties": {"n": {"type": "number"}}})
    before = validator_cache_info()
    for value in ("1", "2", "3"):
        validate_tool_arguments(tool, {"n": value})
    with pytest.raises(ToolArgumentsError):
        validate_tool_arguments(tool, {"n": "x"})
    after = validator_cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 3)

    twin = make_tool(tool.parameters)
    validate_tool_arguments(twin, {})
    assert validator_cache_info().misses - after.misses == 1

    tool.parameters = {"type": "object", "properties": {"n": {"type": "string"}}}
    assert validate_tool_arguments(tool, {"n": "1"}) == {"n": "1"}
    assert validator_cache_info().misses - after.misses == 2


def test_cached_validators_do_not_keep_tools_alive() -> None:
    import gc
    import weakref

    tool = make_tool({"type": "object"})
    validate_tool_arguments(tool, {})
    ref = weakref.ref(tool)
    del tool
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    ("parameters", "text"),
    [
        ({"type": "objekt"}, "'objekt' is not valid under any of the given schemas (at type)"),
        ([1], "expected a JSON Schema object, got list"),
    ],
)
def test_an_invalid_schema_is_a_tool_error(parameters: Any, text: str) -> None:
    with pytest.raises(ToolError) as caught:
        validate_tool_arguments(make_tool(parameters), {})
    assert type(caught.value) is ToolError
    assert str(caught.value) == f'Invalid parameters schema for tool "t": {text}'


def test_an_unresolvable_ref_is_a_tool_error() -> None:
    tool = prop({"$ref": "#/$defs/missing"})
    with pytest.raises(ToolError) as caught:
        validate_tool_arguments(tool, {"x": 1})
    assert type(caught.value) is ToolError
    assert str(caught.value).startswith('Invalid parameters schema for tool "t": cannot resolve')


def test_deeply_nested_arguments_are_an_arguments_error() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    tool = make_tool({"type": "object", "properties": {"a": {"$ref": "#"}}})
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, deep)
    assert str(caught.value) == (
        'Validation failed for tool "t":\n  - root: too deeply nested to validate\n\n'
        "Received arguments:\n(nested too deeply to print)"
    )


def test_the_depth_limit_is_exact_and_before_any_recursion() -> None:
    """64 levels of arrays/objects are validated; 65 are refused before validation starts (a
    recursion limit reached inside jsonschema's compiled maps would be a panic)."""
    tool = make_tool({"type": "object", "properties": {"a": {"$ref": "#"}}})

    def nested(levels: int) -> dict[str, Any]:
        root: dict[str, Any] = {}
        node = root
        for _ in range(levels - 1):
            node["a"] = {}
            node = node["a"]
        return root

    assert validate_tool_arguments(tool, nested(64)) == nested(64)
    with pytest.raises(ToolArgumentsError) as caught:
        validate_tool_arguments(tool, nested(65))
    assert str(caught.value).startswith(
        'Validation failed for tool "t":\n  - root: too deeply nested to validate\n\n'
        "Received arguments:\n{"
    )
    wide = {"list": [[[[1]]]] * 1000}  # breadth is not depth
    assert validate_tool_arguments(make_tool({"type": "object"}), wide) == wide


def test_an_empty_or_true_schema_accepts_anything() -> None:
    for parameters in ({}, True):
        assert validate_tool_arguments(make_tool(parameters), [1, "2"]) == [1, "2"]


# ----------------------------------------------------------------------------------------------
# Property: arbitrary JSON never raises anything but ToolArgumentsError
# ----------------------------------------------------------------------------------------------

SCHEMAS = [
    READ.parameters,
    EDIT.parameters,
    GREP.parameters,
    apply_edits.parameters,
    {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"], "maxLength": 2},
            "b": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "number", "maximum": 0}]},
            "c": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "d": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"enum": ["x", 1]}}},
            },
        },
        "required": ["a"],
    },
]
KEYS = ["path", "offset", "edits", "oldText", "old_text", "count", "pattern", "a", "b", "d", ""]
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.sampled_from(["5", "-1.5", "1e3", "2.0", "true", "false", "", "0x10", " 7", "x"])
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), children, max_size=5)
    ),
    max_leaves=25,
)


def number_text(number: float) -> str:
    """How a model might write ``number`` as a string (a JSON number literal)."""
    return json.dumps(number)


def coercible(schema: Any, root: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that match ``schema`` once the lossless conversions are applied: numbers or
    numeric strings, booleans or "true"/"false", an array of objects or a single object.
    Knows the keywords ``SCHEMAS`` use."""
    if "$ref" in schema:
        return coercible(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], root)
    members = schema.get("anyOf") or schema.get("oneOf")
    if members:
        return st.one_of([coercible(member, root) for member in members])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([coercible({**schema, "type": each}, root) for each in kind])
    if kind == "object":
        properties = {
            key: coercible(sub, root) for key, sub in schema.get("properties", {}).items()
        }
        required = {key: properties.pop(key) for key in schema.get("required", [])}
        built = st.fixed_dictionaries(required, optional=properties)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            extras = st.dictionaries(st.text(max_size=3), coercible(extra, root), max_size=3)
            built = st.tuples(extras, built).map(lambda pair: {**pair[0], **pair[1]})
        return built
    if kind == "array":
        item = coercible(schema["items"], root)
        if schema["items"].get("type") == "object" or "$ref" in schema["items"]:
            return st.lists(item, max_size=3) | item
        return st.lists(item, max_size=3)
    if kind == "integer":
        integers = st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
        return integers | integers.map(number_text)
    if kind == "number":
        floats = st.floats(
            min_value=schema.get("minimum"),
            max_value=schema.get("maximum"),
            allow_nan=False,
            allow_infinity=False,
        )
        return floats | floats.map(number_text) | st.integers(max_value=schema.get("maximum"))
    if kind == "boolean":
        return st.booleans() | st.sampled_from(["true", "false"])
    if kind == "string":
        return st.text(max_size=schema.get("maxLength", 8))
    if kind == "null":
        return st.none()
    raise AssertionError(f"coercible() does not know {schema}")


@st.composite
def schema_and_coercible(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(coercible(schema, schema))


@st.composite
def schema_and_anything(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(coercible(schema, schema) | json_values)


@settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=schema_and_coercible())
def test_values_that_coerce_losslessly_are_accepted(case: tuple[dict[str, Any], Any]) -> None:
    schema, arguments = case
    snapshot = json.dumps(arguments)
    result = validate_tool_arguments(make_tool(schema), arguments)
    assert jsonschema.Draft202012Validator(schema).is_valid(result)
    if jsonschema.Draft202012Validator(schema).is_valid(arguments):
        assert json.dumps(result) == snapshot  # a valid value is returned as it was
    assert json.dumps(arguments) == snapshot


@settings(
    max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=schema_and_anything())
def test_arbitrary_json_gives_params_or_a_tool_arguments_error(
    case: tuple[dict[str, Any], Any],
) -> None:
    schema, arguments = case
    snapshot = json.dumps(arguments)
    plain_valid = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    try:
        result = validate_tool_arguments(make_tool(schema, name="tool"), arguments)
    except ToolArgumentsError as error:
        text = str(error)
        assert text.startswith('Validation failed for tool "tool":\n  - ')
        assert text.endswith("\n\nReceived arguments:\n" + json_stringify(arguments))
        assert error.errors  # pi-schema lists every error (TypeBox lines: at most 8)
        assert not plain_valid
    else:
        assert jsonschema.Draft202012Validator(schema).is_valid(result)
        if plain_valid:
            assert json.dumps(result) == snapshot
    assert json.dumps(arguments) == snapshot
