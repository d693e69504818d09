"""What both sides of argument validation share (:mod:`pi_core._tools.validation`, which checks
flat schemas by hand, and :mod:`pi_core._tools.schema_validation`, the jsonschema side): the
error, JavaScript's number and JSON texts, the JSON copy of the arguments, and the
compiled-schema record. The public names are re-exported by
:mod:`pi_core._tools.validation`.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pi_core._errors import ToolError

_Resolver = Any
"""A ``referencing`` resolver (the class is not exported by ``referencing``)."""

# ----------------------------------------------------------------------------------------------
# The error
# ----------------------------------------------------------------------------------------------


class ToolArgumentsError(ToolError):
    """The arguments of a tool call do not match the tool's ``parameters``.

    ``str(exc)`` is Pi's complete message (header, one ``  - {path}: {message}`` line per error,
    ``Received arguments:`` and the arguments as ``JSON.stringify(arguments, null, 2)``).
    ``tool_name`` is the tool's name; ``errors`` the ``(path, message)`` pairs in order;
    ``arguments`` the arguments as received (not coerced).
    """

    def __init__(self, tool_name: str, errors: list[tuple[str, str]], arguments: Any) -> None:
        self.tool_name = tool_name
        self.errors = list(errors)
        self.arguments = arguments
        lines = "\n".join(f"  - {path}: {message}" for path, message in self.errors)
        try:
            received = json_stringify(arguments)
        except RecursionError:
            received = "(nested too deeply to print)"
        super().__init__(
            f'Validation failed for tool "{tool_name}":\n{lines or "Unknown validation error"}'
            f"\n\nReceived arguments:\n{received}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tool_name, self.errors, self.arguments))


# ----------------------------------------------------------------------------------------------
# JavaScript number and JSON text
# ----------------------------------------------------------------------------------------------


def js_number_to_string(value: float) -> str:
    """``String(value)`` as JavaScript writes a number: ``1.0`` → ``1``, ``1e21`` → ``1e+21``,
    ``1.5e-7`` → ``1.5e-7``, ``0.000001`` → ``0.000001``, ``-0.0`` → ``0``; integers beyond
    2**53 are written as the double they become (``12345678901234567890`` →
    ``12345678901234567000``); NaN and infinities give ``NaN``, ``Infinity``, ``-Infinity``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    # repr() gives the shortest round-trip digits, as ECMAScript's Number::toString does;
    # only the layout differs.
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = k + exponent
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + text


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _json_string(text: str) -> str:
    """A JSON string literal as ``JSON.stringify`` writes it: non-ASCII kept, control
    characters and lone surrogates as lower-case ``\\uXXXX``."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        return _ESCAPES.get(char) or f"\\u{ord(char):04x}"

    return '"' + _NEEDS_ESCAPE.sub(escape, text) + '"'


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool | int | float):
        return js_number_to_string(key)
    return str(key)


def json_stringify(value: Any, indent: int = 2) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-like Python values.

    Objects keep their key order; empty objects and arrays print as ``{}`` and ``[]``; numbers
    use :func:`js_number_to_string` (NaN and infinities print ``null``, as in JavaScript);
    tuples are arrays; any other object prints as the JSON string of its ``str()``.
    """
    parts: list[str] = []
    _stringify_into(parts, value, indent, 0)
    return "".join(parts)


def _stringify_into(parts: list[str], value: Any, indent: int, depth: int) -> None:
    if value is None or value is True or value is False:
        parts.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int | float):
        parts.append(
            "null"
            if isinstance(value, float) and not math.isfinite(value)
            else js_number_to_string(value)
        )
    elif isinstance(value, str):
        parts.append(_json_string(value))
    elif isinstance(value, Mapping | list | tuple):
        is_object = isinstance(value, Mapping)
        items: list[Any] = list(value.items()) if isinstance(value, Mapping) else list(value)
        opening, closing = ("{", "}") if is_object else ("[", "]")
        if not items:
            parts.append(opening + closing)
            return
        inner = "\n" + " " * (indent * (depth + 1)) if indent else ""
        outer = "\n" + " " * (indent * depth) if indent else ""
        parts.append(opening)
        for index, item in enumerate(items):
            parts.append(("," if index else "") + inner)
            if is_object:
                parts.append(_json_string(_json_key(item[0])) + (": " if indent else ":"))
                item = item[1]
            _stringify_into(parts, item, indent, depth + 1)
        parts.append(outer + closing)
    else:
        parts.append(_json_string(str(value)))


# ----------------------------------------------------------------------------------------------
# Error lines
# ----------------------------------------------------------------------------------------------

_FALSE_SCHEMA = "x-pi-false-schema"
"""Marker keyword a ``false`` subschema is rewritten to, so its error keeps its instance path
(jsonschema reports a ``false`` subschema without the path of the value it rejected)."""


# ----------------------------------------------------------------------------------------------
# The arguments' copy
# ----------------------------------------------------------------------------------------------


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON-like value, without recursion. As in JavaScript, object keys are
    strings (``1`` becomes ``"1"``) and tuples are arrays; other objects are deep-copied when
    they can be, else shared."""
    holder: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(holder, 0, value)]
    while pending:
        container, slot, item = pending.pop()
        if isinstance(item, dict):
            copied: Any = dict.fromkeys(map(_json_key, item))
            pending.extend((copied, _json_key(key), sub) for key, sub in item.items())
        elif isinstance(item, list | tuple):
            copied = [None] * len(item)
            pending.extend((copied, index, sub) for index, sub in enumerate(item))
        elif item is None or isinstance(item, str | int | float | bool):
            copied = item
        else:
            try:
                copied = copy.deepcopy(item)
            except Exception:
                copied = item
        container[slot] = copied
    return holder[0]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# ----------------------------------------------------------------------------------------------
# A compiled schema
# ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Compiled:
    """A tool's schema, compiled once (:func:`pi_core._tools.validation._compiled_for`)."""

    parameters: Any  # the tool.parameters object this was compiled from (identity checked)
    schema: Any  # the normalised schema
    flat: bool  # checked by hand (pi_core._tools.validation._is_flat), without jsonschema
    typed: bool = False  # flat, and every subschema has a ``type`` (validation._is_typed)
    parts: tuple[Any, _Resolver] | None = None
    """jsonschema's validator and ``$ref`` resolver (:mod:`pi_core._tools.schema_validation`);
    for a flat schema ``None`` until arguments fail the check by hand."""

    @property
    def validator(self) -> Any:
        assert self.parts is not None
        return self.parts[0]

    @property
    def resolver(self) -> _Resolver:
        assert self.parts is not None
        return self.parts[1]
