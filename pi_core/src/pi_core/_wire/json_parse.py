"""Reading JSON text from outside the process: tool-call arguments, session lines, hook output.

CPython refuses to convert an integer of more than ``sys.get_int_max_str_digits()`` digits
(4,300 by default) and ``json.loads`` lets that ``ValueError`` out: it is not a
``json.JSONDecodeError``, so code that handles invalid JSON still failed on valid JSON such as
``{"offset": 999...9}`` with 5,000 nines. JavaScript's ``JSON.parse`` (what Pi reads such text
with) takes every number as a double: such an integer is ``Infinity``.

``json.loads`` also takes the words ``NaN``, ``Infinity`` and ``-Infinity`` as numbers; JSON has
no such literals and ``JSON.parse`` refuses them, so they are refused here as a missing value
(``Expecting value: line 1 column 11 (char 10)``). A number too large for a double (``1e400``)
is valid JSON and stays ``inf``, as in JavaScript.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)', re.DOTALL)
"""A JSON string (skipped) or a literal ``json.loads`` takes and JSON does not."""


class _NotJson(Exception):
    """Raised from ``parse_constant``, which does not know where the literal is."""


def _refuse(name: str) -> Any:
    raise _NotJson(name)


def _integer(digits: str) -> int | float:
    try:
        return int(digits)
    except ValueError:  # more digits than the interpreter converts: as JSON.parse, a double
        return float(digits)


def parse_json(text: str | bytes | bytearray, **options: Any) -> Any:
    """``json.loads(text, **options)``, except that an integer too long for Python's integer
    conversion becomes a ``float`` (``inf`` or ``-inf``: it has more than 4,300 digits) as in
    JavaScript, instead of a ``ValueError``, and ``NaN``, ``Infinity`` and ``-Infinity`` are
    refused as invalid JSON (``json.JSONDecodeError``), as ``JSON.parse`` refuses them. Shorter integers stay exact ``int``s. Invalid JSON
    raises ``json.JSONDecodeError`` as before (and deep nesting ``RecursionError``).

    The text is parsed by ``json.loads`` as it is; only when the integer conversion refuses is
    it parsed again with a ``parse_int`` that falls back to ``float`` (a Python call for every
    integer, two to three times slower on JSON full of numbers)."""
    try:
        try:
            return json.loads(text, parse_constant=_refuse, **options)
        except json.JSONDecodeError:
            raise
        except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
            return json.loads(text, parse_constant=_refuse, parse_int=_integer, **options)
    except _NotJson:
        document = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        position = next((m.start(1) for m in _CONSTANT.finditer(document) if m.group(1)), 0)
        raise json.JSONDecodeError("Expecting value", document, position) from None


__all__ = ["parse_json"]
