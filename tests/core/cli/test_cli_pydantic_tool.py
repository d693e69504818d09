"""A plugin with constrained pydantic parameters shows its constraints in ``pi tools --json``
and ``pi call`` enforces them (issue 31, item 1)."""

from __future__ import annotations

import json


def test_tools_json_shows_the_constraints(pi) -> None:
    out = pi("-p", "constrained_plugin", "tools", "--json")
    assert out.status == 0, out.err
    (rate,) = json.loads(out.out)
    assert rate["parameters"] == {
        "type": "object",
        "properties": {
            "stars": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5,
                "description": "Stars, 1 to 5.",
            },
            "comment": {"type": "string", "maxLength": 20, "default": ""},
        },
        "required": ["stars"],
        "additionalProperties": False,
    }


def test_call_enforces_the_constraints(pi) -> None:
    out = pi("-p", "constrained_plugin", "call", "rate", '{"stars": 9}')
    assert (out.status, out.out) == (
        1,
        'Validation failed for tool "rate":\n'
        "  - stars: expected <= 5\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "stars": 9\n'
        "}\n",
    )
    out = pi("-p", "constrained_plugin", "call", "rate", '{"stars": 4}')
    assert (out.status, out.out) == (0, "4 star(s) ''\n")
