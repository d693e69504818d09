"""A plugin whose tool has constrained pydantic parameters (issue 31, item 1), loaded with
``pi -p constrained_plugin``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from pi_core import hookimpl, tool


@tool
def rate(
    stars: Annotated[int, Field(ge=1, le=5, description="Stars, 1 to 5.")],
    comment: str = Field("", max_length=20),
) -> str:
    """Rate the answer."""
    return f"{stars} star(s) {comment!r}"


@hookimpl
def pi_register_tools(register: Any) -> None:
    register(rate)
