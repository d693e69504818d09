"""Parsing streamed tool-call arguments (issue 5 item 1): Pi's ``parseStreamingJson``."""

from __future__ import annotations

from typing import Any

import pytest

from pi_core._providers.assembly import parse_streaming_json, repair_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ('{"path": "a.txt"}', {"path": "a.txt"}),
        ("[1, 2]", [1, 2]),
        ('{"pa', {}),
        ('{"path": "a', {"path": "a"}),
        ('{"path": "a.txt", "limit": 1', {"path": "a.txt", "limit": 1}),
        ('{"items": [1, {"x": "y', {"items": [1, {"x": "y"}]}),
        ('{"text": "line\nnext"}', {"text": "line\nnext"}),  # a raw newline inside a string
        ('{"re": "\\d+"}', {"re": "\\d+"}),  # an invalid escape kept as a backslash
        ("path=a.txt", {}),
        ("null", None),
    ],
)
def test_parse_streaming_json(text: str, expected: Any) -> None:
    assert parse_streaming_json(text) == expected


def test_repair_json_only_touches_strings() -> None:
    assert repair_json('{"a": "x\ty\\q"}\n') == '{"a": "x\\ty\\\\q"}\n'
    assert repair_json('{"u": "\\u00e9"}') == '{"u": "\\u00e9"}'
