"""Side by side with Pi 1.6.0 itself: pi's ``validate_tool_arguments`` and pi-ai 1.6.0's
``validateToolArguments`` (pi-schema's coercion and explainer) on the same schemas and values.

``pi16_validate.mjs`` runs the reference (npm ``@earendil-works/pi-ai`` 1.6.0, from
``~/.cache/pi-ref16``; ``.ci/run`` installs it) on JSON lines; every case must give the same
coerced value, or the same error text byte for byte. The cases: every leaf schema (each type,
type arrays, enums, consts, unions, bounds, arrays) against every awkward scalar, required and
optional; the built-in shapes with broken arguments; tagged unions, ``$ref``, pattern and
additional properties, tuples, nesting; and random schemas and values from fixed seeds.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_validation import EDIT as CLOSED_EDIT_TOOL

from pi_core import AgentTool
from pi_core._tools.validation import ToolArgumentsError, validate_tool_arguments

HERE = Path(__file__).resolve().parent
REFERENCE = Path.home() / ".cache/pi-ref16/node_modules/@earendil-works/pi-ai"


async def _never_called(*args: Any) -> Any:
    raise AssertionError("validation never executes the tool")


def ours(name: str, schema: Any, arguments: Any) -> dict[str, Any]:
    tool = AgentTool(name=name, description="", parameters=schema, execute=_never_called)
    try:
        return {"ok": True, "value": validate_tool_arguments(tool, arguments)}
    except ToolArgumentsError as exc:
        return {"ok": False, "message": str(exc)}


def reference(cases: list[tuple[str, Any, Any]]) -> list[dict[str, Any]]:
    if shutil.which("node") is None or not REFERENCE.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("node and the reference Pi 1.6.0 must be installed under CI (.ci/run)")
        pytest.skip("node or the reference Pi 1.6.0 (~/.cache/pi-ref16) is not installed")
    lines = "".join(
        json.dumps({"name": name, "schema": schema, "arguments": arguments}) + "\n"
        for name, schema, arguments in cases
    )
    done = subprocess.run(
        ["node", str(HERE / "pi16_validate.mjs")],
        input=lines,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def assert_same(cases: list[tuple[str, Any, Any]]) -> None:
    expected = reference(cases)
    assert len(expected) == len(cases)
    differences = []
    for (name, schema, arguments), theirs in zip(cases, expected, strict=True):
        mine = json.loads(json.dumps(ours(name, schema, arguments)))
        if mine != theirs:
            differences.append(
                {"schema": schema, "arguments": arguments, "pi16": theirs, "pi": mine}
            )
    assert differences == [], json.dumps(differences[:5], indent=1)


SCALARS: list[Any] = [
    None, True, False, 0, 1, 2, -1, 1.5, 3.7, -0.5, 1e21, "", " ", "0", "1", "2", "3.5", "-1",
    "1e3", "0x10", "0b11", "0o7", "+5", " 7 ", "abc", "true", "false", "TRUE", "False", "null",
    "undefined", "12n", "Infinity", "-Infinity", "NaN", ".5", "5.", [], [1], ["a"], {}, {"a": 1},
]  # fmt: skip
TYPES = ["string", "number", "integer", "boolean", "null", "array", "object"]
LEAVES: list[Any] = [
    *({"type": t} for t in TYPES),
    {"type": ["integer", "null"]},
    {"type": ["string", "number"]},
    {"type": ["boolean", "string"]},
    {"type": ["null", "string"]},
    {"type": "array", "items": {"type": "number"}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
    {"enum": ["a", "b", 1, True]},
    {"enum": [1, 2, 3]},
    {"const": 5},
    {"const": "5"},
    {"const": True},
    {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
    {"anyOf": [{"type": "string"}, {"type": "null"}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
    {"type": "number", "minimum": 0, "maximum": 10},
    {"type": "string", "minLength": 2},
    {"allOf": [{"type": "number"}, {"minimum": 1}]},
]


def test_every_leaf_schema_with_every_scalar() -> None:
    cases = []
    for leaf in LEAVES:
        for required in ([], ["v"]):
            schema = {"type": "object", "properties": {"v": leaf}, "required": required}
            cases += [("t", schema, {"v": value}) for value in SCALARS]
    assert_same(cases)


CLOSED_EDIT: dict[str, Any] = json.loads(json.dumps(CLOSED_EDIT_TOOL.parameters))
EDIT: dict[str, Any] = json.loads(json.dumps(CLOSED_EDIT))  # the open schema of Pi 1.6
del EDIT["additionalProperties"], EDIT["properties"]["edits"]["items"]["additionalProperties"]
SHAPES: list[tuple[Any, list[Any]]] = [
    *(
        (
            schema,
            [
                {}, {"path": "a"}, {"path": 1, "edits": 5}, {"path": None, "edits": None},
                {"path": "a", "edits": {"oldText": "x", "newText": 1}},
                {"path": "a", "edits": [{"oldText": None}]},
                {"path": "a", "edits": [{"oldText": "x", "newText": "y", "extra": 1}], "z": 2},
                {"path": "a", "edits": "[]"}, {"path": ["a"], "edits": []},
                {"path": "a", "edits": [1, "x", None, True]}, [], "x", None, 5,
            ],
        )
        for schema in (EDIT, CLOSED_EDIT)
    ),
    (
        {
            "type": "object",
            "properties": {
                "shape": {
                    "oneOf": [
                        {
                            "type": "object",
                            "required": ["kind", "r"],
                            "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                        },
                        {
                            "type": "object",
                            "required": ["kind", "w"],
                            "properties": {"kind": {"const": "square"}, "w": {"type": "number"}},
                        },
                    ]
                }
            },
        },
        [
            {"shape": {"kind": "circle", "r": "2"}}, {"shape": {"kind": "square", "w": "x"}},
            {"shape": {"kind": "tri"}}, {"shape": {}}, {"shape": {"r": 1}},
            {"shape": "circle"}, {"shape": None},
        ],
    ),
    (
        {
            "type": "object",
            "$defs": {
                "pos": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "required": ["x"],
                }
            },
            "properties": {
                "p": {"$ref": "#/$defs/pos"},
                "ps": {"type": "array", "items": {"$ref": "#/$defs/pos"}},
                "q": {"anyOf": [{"$ref": "#/$defs/pos"}, {"type": "null"}]},
            },
        },
        [
            {"p": {"x": "1", "y": "2.5"}}, {"p": None}, {"ps": {"x": "3"}},
            {"ps": [{"x": True}, {"y": 1}]}, {"q": None}, {"q": {"x": "7"}}, {"q": "7"},
            {"p": {}},
        ],
    ),
    (
        {
            "type": "object",
            "patternProperties": {"^n_": {"type": "number"}},
            "additionalProperties": {"type": "boolean"},
            "properties": {"s": {"type": "string"}},
        },
        [
            {"n_a": "5", "flag": "true", "s": 5}, {"n_b": None, "other": None, "s": None},
            {"x": "1"}, {"n_c": "abc"},
        ],
    ),
    (
        {
            "type": "object",
            "properties": {
                "t": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "string"}],
                    "items": {"type": "boolean"},
                }
            },
        },
        [{"t": ["1", 2, "true", 0]}, {"t": "1"}, {"t": [None, None, None]}],
    ),
    (
        {
            "type": "object",
            "required": ["a", "b", "c"],
            "properties": {
                "a": {"type": "string", "enum": ["x", "y"]},
                "b": {"type": "integer", "minimum": 1, "multipleOf": 2},
                "c": {"type": "array", "minItems": 2, "uniqueItems": True},
            },
            "additionalProperties": False,
        },
        [
            {}, {"a": "z", "b": 3, "c": [1, 1]}, {"a": 1, "b": "4", "c": 1},
            {"a": "x", "b": -2, "c": [], "d": 0, "e": 1},
        ],
    ),
]  # fmt: skip


def test_shapes_with_broken_arguments() -> None:
    assert_same([("t", schema, value) for schema, values in SHAPES for value in values])


def _random_schema(rng: random.Random, depth: int = 0) -> Any:
    draw = rng.random()
    if depth >= 3 or draw < 0.35:
        return json.loads(json.dumps(rng.choice(LEAVES)))
    if draw < 0.6:
        names = rng.sample(["a", "b", "c", "d"], rng.randint(1, 3))
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: _random_schema(rng, depth + 1) for name in names},
        }
        if rng.random() < 0.5:
            schema["required"] = rng.sample(names, rng.randint(0, len(names)))
        if rng.random() < 0.3:
            schema["additionalProperties"] = rng.choice([False, {"type": "number"}])
        if rng.random() < 0.2:
            del schema["type"]
        return schema
    if draw < 0.75:
        schema = {"type": "array", "items": _random_schema(rng, depth + 1)}
        if rng.random() < 0.2:
            del schema["type"]
        return schema
    if draw < 0.9:
        branches = [_random_schema(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        return {rng.choice(["anyOf", "oneOf"]): branches}
    return {"allOf": [_random_schema(rng, depth + 1) for _ in range(2)]}


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    draw = rng.random()
    if depth >= 3 or draw < 0.6:
        return rng.choice(SCALARS[:-4])
    if draw < 0.8:
        keys = rng.sample(["a", "b", "c", "d", "e"], rng.randint(0, 3))
        return {key: _random_value(rng, depth + 1) for key in keys}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


@pytest.mark.parametrize("seed", [1, 2])
def test_random_schemas_and_values(seed: int) -> None:
    rng = random.Random(seed)
    cases = []
    for _ in range(600):
        root = {
            "type": "object",
            "properties": {"v": _random_schema(rng)},
            "required": ["v"] if rng.random() < 0.5 else [],
        }
        cases.append(("t", root, {"v": _random_value(rng)} if rng.random() < 0.9 else {}))
    assert_same(cases)
