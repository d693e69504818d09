"""Reading JSON text from outside the process: tool-call arguments, session lines, hook output.

CPython refuses to convert an integer of more than ``sys.get_int_max_str_digits()`` digits
(4,300 by default) and ``json.loads`` lets that ``ValueError`` out: it is not a
``json.JSONDecodeError``, so code that handles invalid JSON still failed on valid JSON such as
``{"offset": 999...9}`` with 5,000 nines. JavaScript's ``JSON.parse`` (what Pi reads such text
with) takes every number as a double: such an integer is ``Infinity``.
"""

from __future__ import annotations

import json
from typing import Any


def _integer(digits: str) -> int | float:
    try:
        return int(digits)
    except ValueError:  # more digits than the interpreter converts: as JSON.parse, a double
        return float(digits)


def parse_json(text: str | bytes | bytearray, **options: Any) -> Any:
    """``json.loads(text, **options)``, except that an integer too long for Python's integer
    conversion becomes a ``float`` (``inf`` or ``-inf``: it has more than 4,300 digits) as in
    JavaScript, instead of a ``ValueError``. Shorter integers stay exact ``int``s. Invalid JSON
    raises ``json.JSONDecodeError`` as before (and deep nesting ``RecursionError``).

    The text is parsed by ``json.loads`` as it is; only when the integer conversion refuses is
    it parsed again with a ``parse_int`` that falls back to ``float`` (a Python call for every
    integer, two to three times slower on JSON full of numbers)."""
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        return json.loads(text, parse_int=_integer, **options)


__all__ = ["parse_json"]
