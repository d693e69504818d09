"""A tool whose parameters use pydantic: constraints, descriptions, an enum, a nested model and
a default factory. Load it with ``pi -p typed_tool`` (docs/snippets on ``PYTHONPATH``)."""

from __future__ import annotations

import enum
from typing import Annotated, Any

from pydantic import BaseModel, Field

from pi_core import hookimpl, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Place(BaseModel):
    city: str
    country: Annotated[str, Field(pattern="^[A-Z]{2}$", description="ISO 3166 code: NO, FR.")]


@tool
def forecast(
    place: Place,
    days: Annotated[int, Field(ge=1, le=7)] = 1,
    unit: Unit = Unit.CELSIUS,
    hours: list[int] = Field(default_factory=lambda: [12]),
) -> str:
    """Forecast for a place.

    Args:
        days: How many days ahead.
        hours: The hours of the day to forecast.
    """
    return f"{place.city} ({place.country}), {days} day(s) at {hours} in {unit.value}: sunny"


@hookimpl
def pi_register_tools(register: Any) -> None:
    register(forecast)
