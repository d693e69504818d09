"""``pi_core.parse_json``: JSON text from outside the process, numbers as JSON.parse reads them."""

from __future__ import annotations

import json
import math

import pytest

from pi_core import parse_json


def test_an_integer_over_the_conversion_limit_is_a_double() -> None:
    text = f'{{"a": {"9" * 5000}, "b": -{"1" * 4301}}}'
    assert parse_json(text) == {
        "a": math.inf,
        "b": -math.inf,
    }
    with pytest.raises(ValueError, match="Exceeds the limit"):
        json.loads("9" * 5000)  # what every caller used to get


def test_shorter_integers_stay_exact_and_the_rest_is_json_loads() -> None:
    digits = "9" * 4300
    assert parse_json(f"[{digits}, 1.5, -0, true]") == [int(digits), 1.5, 0, True]
    assert type(parse_json("7")) is int
    assert parse_json(b'{"x": "\\u00e9"}') == {"x": "\u00e9"}
    assert parse_json('"a\tb"', strict=False) == "a\tb"
    with pytest.raises(json.JSONDecodeError, match="Expecting value: line 1 column 6"):
        parse_json('{"a":}')


def test_invalid_json_after_a_huge_integer_is_still_a_decode_error() -> None:
    """The first parse stops at the integer; the second one finds the syntax error."""
    with pytest.raises(
        json.JSONDecodeError, match=r"Expecting value: line 1 column 5014 \(char 5013\)"
    ):
        parse_json(f'{{"a": {"9" * 5000}, "b": }}')


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ('{"limit": NaN}', 11),
        ('{"limit": Infinity}', 11),
        ('{"a": "NaN", "b": [1, -Infinity]}', 23),
        ("NaN", 1),
    ],
)
def test_nan_and_infinity_literals_are_not_json(text: str, column: int) -> None:
    """JSON has no NaN or Infinity (JSON.parse refuses them); ``json.loads`` takes them. They are
    refused where a missing value would be, with ``json.loads``'s own words."""
    with pytest.raises(json.JSONDecodeError) as info:
        parse_json(text)
    assert str(info.value) == f"Expecting value: line 1 column {column} (char {column - 1})"
    assert json.loads(text) is not None  # what every caller used to get


def test_a_huge_number_is_still_infinity_and_strings_keep_the_words() -> None:
    assert parse_json('{"limit": 1e400, "s": "NaN Infinity"}') == {
        "limit": math.inf,
        "s": "NaN Infinity",
    }
    with pytest.raises(json.JSONDecodeError, match=r"line 2 column 7 \(char 5014\)"):
        parse_json(f'{{"a": {"9" * 5000},\n "b": NaN}}')
