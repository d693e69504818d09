"""Flat schemas are checked by hand (no jsonschema import at start-up) with jsonschema's results.

``pi_core._tools.validation`` coerces and checks arguments of a *flat* schema (``type``,
``properties``, ``required``, ``items``, ``additionalProperties`` true/false, annotations) itself;
every other schema, and every argument list that fails the check, goes to jsonschema. These
tests run each case both ways (the second with the hand check switched off) and require the
same coerced value or the same error text, byte for byte.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

import pi_core._tools.validation as validation
from pi_core import ToolDefinition
from pi_core._tools.validation import ToolArgumentsError, validate_tool_arguments


async def _never_called(*args: Any) -> Any:
    raise AssertionError("validation never executes the tool")


def make_tool(parameters: Any) -> ToolDefinition:
    return ToolDefinition(
        name="t", label="t", description="", parameters=parameters, execute=_never_called
    )


def outcome(parameters: Any, arguments: Any) -> tuple[str, Any]:
    try:
        return "ok", validate_tool_arguments(make_tool(parameters), arguments)
    except ToolArgumentsError as exc:
        return "error", str(exc)


READ = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read"},
        "offset": {"type": "number", "description": "Line number to start reading from"},
        "limit": {"type": "number"},
    },
}
EDIT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}
SCHEMAS = [
    READ,
    EDIT,
    {"type": "object", "properties": {"n": {"type": "integer"}, "b": {"type": "boolean"}}},
    {"type": "object", "properties": {"x": {"type": ["integer", "string"]}, "y": {}}},
    {"type": "object", "properties": {"z": {"type": ["null", "number"], "default": 3}}},
    {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "number"}}}},
    {"type": "object", "properties": {"w": {"type": "array", "items": {"required": ["k"]}}}},
    {"type": "object", "additionalProperties": True, "title": "T"},
    {"type": "object", "properties": {"v": {"items": {"type": "integer"}}}},
    {},
]
VALUES = [
    {},
    {"path": "a.txt"},
    {"path": "a.txt", "offset": "5", "limit": 10},
    {"path": "a.txt", "offset": "05"},
    {"path": "a.txt", "offset": "1e3", "limit": "x"},
    {"path": 6},
    {"path": None},
    {"path": "p", "edits": [{"oldText": "a", "newText": "b"}]},
    {"path": "p", "edits": {"oldText": "a", "newText": "b"}},
    {"path": "p", "edits": [{"oldText": "a"}], "extra": 1},
    {"path": "p", "edits": [{"oldText": "a", "newText": "b", "more": True}]},
    {"n": "2.0", "b": "true"},
    {"n": "1.5", "b": "True"},
    {"n": 2.0, "b": False},
    {"n": True},
    {"x": "7", "y": [1]},
    {"x": 7.5},
    {"z": "null"},
    {"z": "-0.5"},
    {"z": None},
    {"list": ["1", 2, "three"]},
    {"list": {"a": 1}},
    {"w": {"k": 1}},
    {"w": [{"j": 1}]},
    {"n": 2, "b": True},
    {"x": 7, "y": "s"},
    {"list": [1, 2], "w": [{"k": "v"}]},
    {"v": 2},
    {"v": [3, 4]},
    ["not", "an", "object"],
    "text",
    None,
]


@pytest.mark.parametrize(("schema", "value"), list(itertools.product(SCHEMAS, VALUES)))
def test_the_hand_check_gives_jsonschema_s_results(
    schema: dict[str, Any], value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert validation._is_flat(validation._normalise(schema))
    by_hand = outcome(copy.deepcopy(schema), copy.deepcopy(value))
    monkeypatch.setattr(validation, "_is_flat", lambda schema, depth=0: False)
    assert outcome(copy.deepcopy(schema), copy.deepcopy(value)) == by_hand


def test_exact_texts_of_the_built_in_shapes() -> None:
    assert outcome(READ, {"path": "a", "offset": "5"}) == ("ok", {"path": "a", "offset": 5})
    assert outcome(READ, {"path": 6}) == ("ok", {"path": "6"})
    assert outcome(READ, {"path": [6]}) == (
        "error",
        'Validation failed for tool "t":\n  - path: expected string, got array\n\n'
        'Received arguments:\n{\n  "path": [\n    6\n  ]\n}',
    )
    assert outcome(EDIT, {"path": "p", "edits": {"oldText": "a", "newText": "b"}}) == (
        "ok",
        {"path": "p", "edits": [{"oldText": "a", "newText": "b"}]},
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"enum": [1]}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}},
        {"type": "object", "properties": {"a": False}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "required": ["a", "a"]},
        {"type": "objekt"},
        {"type": []},
        {"type": ["string", "string"]},
        {"type": "object", "description": 5},
        {"type": "object", "x-extension": 1},
        False,
    ],
)
def test_other_schemas_go_to_jsonschema(schema: Any) -> None:
    assert not validation._is_flat(validation._normalise(schema))


def test_a_value_coercion_leaves_alone_is_returned_as_a_copy() -> None:
    """Strings, booleans and integers that match a schema typed at every level skip the
    coercion walks; the result is still a copy, and untyped ``items`` still wraps a value."""
    arguments = {"path": "p", "edits": [{"oldText": "a", "newText": "b"}]}
    value = validate_tool_arguments(make_tool(EDIT), arguments)
    assert value == {"path": "p", "edits": [{"oldText": "a", "newText": "b"}]}
    assert value is not arguments and value["edits"] is not arguments["edits"]
    untyped = {"type": "object", "properties": {"v": {"items": {"type": "integer"}}}}
    assert validate_tool_arguments(make_tool(untyped), {"v": 2}) == {"v": [2]}
    assert validate_tool_arguments(make_tool(SCHEMAS[2]), {"n": 2.0}) == {"n": 2}
