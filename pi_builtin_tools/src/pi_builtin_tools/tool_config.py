"""Validation of the ``[tools]`` tables of ``pi.toml`` (DESIGN §5; config style of ``pi_core._config``).

``[tools]`` must be a table; ``[tools.bash]`` and ``[tools.read]`` too. ``[tools.read]`` is
checked by :class:`ReadSettings` (unknown keys and non-positive sizes are errors). Errors are
:class:`~pi_core._errors.ConfigError` with the message ``pi.toml: tools.read.KEY: REASON (got V)``
(the hooks get the config dict without its path, so the file is named ``pi.toml``).
"""

from __future__ import annotations

from typing import Any

import pydantic

from pi_core import ConfigError

CONFIG_NAME = "pi.toml"
TOOLS_TABLE = "tools"


class ReadSettings(pydantic.BaseModel):
    """The ``[tools.read]`` table: image limits in pixels / base64 characters, JPEG quality
    (1–100), ``auto_resize_images`` and ``supports_images`` (booleans)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    auto_resize_images: pydantic.StrictBool = True
    supports_images: pydantic.StrictBool | None = None
    max_image_width: pydantic.StrictInt = pydantic.Field(default=2000, ge=1)
    max_image_height: pydantic.StrictInt = pydantic.Field(default=2000, ge=1)
    max_image_bytes: pydantic.StrictInt | None = pydantic.Field(default=None, ge=1)
    jpeg_quality: pydantic.StrictInt = pydantic.Field(default=80, ge=1, le=100)


def tools_table(config: dict[str, Any] | None, name: str) -> dict[str, Any]:
    """The table ``[tools.NAME]`` (``{}`` when absent).

    Raises :class:`ConfigError` (``pi.toml: tools: must be a table`` or
    ``pi.toml: tools.NAME: must be a table``) when either is not a table.
    """
    tools = (config or {}).get(TOOLS_TABLE, {})
    if not isinstance(tools, dict):
        raise ConfigError(f"{CONFIG_NAME}: {TOOLS_TABLE}: must be a table ([{TOOLS_TABLE}])")
    table = tools.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(
            f"{CONFIG_NAME}: {TOOLS_TABLE}.{name}: must be a table ([{TOOLS_TABLE}.{name}])"
        )
    return table


def read_settings(config: dict[str, Any] | None) -> ReadSettings:
    """``[tools.read]`` validated; raises :class:`ConfigError` naming the key."""
    try:
        return ReadSettings.model_validate(tools_table(config, "read"))
    except pydantic.ValidationError as e:
        raise ConfigError(_value_message("read", e)) from None


def _value_message(name: str, error: pydantic.ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    key = ".".join([TOOLS_TABLE, name, *(str(part) for part in first["loc"])])
    if first["type"] == "extra_forbidden":
        return f"{CONFIG_NAME}: {key}: unknown key"
    return f"{CONFIG_NAME}: {key}: {first['msg']} (got {_toml_repr(first.get('input'))})"


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
