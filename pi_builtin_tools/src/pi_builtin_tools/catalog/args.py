"""Checks of the numeric arguments of the file tools (``offset``, ``limit``, ``context``).

The JSON schemas the model sees say ``number`` (they are Pi's). Where Pi 1.6 defines a reading
(the ``limit`` of find, ls and grep and grep's ``context`` are floored, then raised to their
minimum: ``limit: 0`` or ``-3`` means 1, ``1.5`` means 1), it is followed (``floor=True``,
``clamp_low=True``); other values the reference handles nonsensically (read's ``limit: -1`` or
``1.5``, ``offset: -5``, ``context: 1e12``, infinities) are refused here with one wording:
``NAME must be a positive integer, got V`` (``a non-negative integer`` when 0 is allowed, ``an
integer from A to B`` with a maximum). ``V`` is written as JavaScript writes the number
(``1.5``, ``-1``, ``Infinity``). An infinity reaches these checks only from a program calling the
tool: in a model's JSON (``1e400``) it fails schema validation first, as in Pi 1.6.0.
"""

from __future__ import annotations

import math
from typing import overload

from pi_core import ToolError, js_number_to_string


@overload
def integer_arg(
    name: str,
    value: float,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    clamp_low: bool = False,
    floor: bool = False,
) -> int: ...
@overload
def integer_arg(
    name: str,
    value: float | None,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    clamp_low: bool = False,
    floor: bool = False,
) -> int | None: ...
def integer_arg(
    name: str,
    value: float | None,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    clamp_low: bool = False,
    floor: bool = False,
) -> int | None:
    """``value`` as an ``int`` (``None`` stays ``None``).

    ``floor``: a finite fractional value is rounded down first (Pi 1.6's ``Math.floor``).
    ``clamp_low``: a whole number below ``minimum`` becomes ``minimum`` (grep's
    ``context = max(context, 0)``; the ``limit = max(1, limit)`` of grep, find and ls).

    Raises :class:`ToolError` (``limit must be a positive integer, got -1``) when ``value`` is
    not a whole number within ``minimum``..``maximum`` (NaN and infinities included).
    """
    if value is None:
        return None
    if floor and not isinstance(value, bool) and isinstance(value, float) and math.isfinite(value):
        value = math.floor(value)
    whole = not isinstance(value, bool) and (
        isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
    )
    if whole and clamp_low and value < minimum:
        return minimum
    if whole and value >= minimum and (maximum is None or value <= maximum):
        return int(value)
    if maximum is not None:
        wanted = f"an integer from {minimum} to {maximum}"
    elif minimum == 1:
        wanted = "a positive integer"
    elif minimum == 0:
        wanted = "a non-negative integer"
    else:
        wanted = f"an integer of at least {minimum}"
    raise ToolError(f"{name} must be {wanted}, got {js_number_to_string(value)}")
