"""Validation of the ``[tools]`` tables of ``pi.toml`` (see ``docs/reference/configuration.md``).

``[tools]`` must be a table; ``[tools.bash]`` and ``[tools.read]`` too. ``[tools.read]`` is
checked by :class:`ReadSettings` (unknown keys and non-positive sizes are errors). Errors are
:class:`~pi_core._errors.ConfigError` with the message ``FILE: tools.read.KEY: REASON (got V)``,
``FILE`` the config file the dict was loaded from (:func:`pi_core.config_file`: the file of
``pi --config FILE`` or the ``pi.toml`` found; ``pi.toml`` for a dict a program built).
"""

from __future__ import annotations

from typing import Any

import pydantic

from pi_core import ConfigError, config_file, format_config_error

CONFIG_NAME = "pi.toml"
TOOLS_TABLE = "tools"
CORE_KEYS = frozenset({"exposure"})
"""Keys of ``[tools.NAME]`` that pi_core reads for every tool (``exposure``)."""


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
    """The table ``[tools.NAME]`` (``{}`` when absent), without the keys the core owns
    (:data:`CORE_KEYS`: ``exposure``, validated by pi_core for every tool).

    Raises :class:`ConfigError` (``FILE: tools: must be a table`` or
    ``FILE: tools.NAME: must be a table``, ``FILE`` the config file actually used,
    :func:`pi_core.config_file`) when either is not a table.
    """
    file = config_file(config)
    tools = (config or {}).get(TOOLS_TABLE, {})
    if not isinstance(tools, dict):
        raise ConfigError(f"{file}: {TOOLS_TABLE}: must be a table ([{TOOLS_TABLE}])")
    table = tools.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: {TOOLS_TABLE}.{name}: must be a table ([{TOOLS_TABLE}.{name}])")
    return {k: v for k, v in table.items() if k not in CORE_KEYS}


def read_settings(config: dict[str, Any] | None) -> ReadSettings:
    """``[tools.read]`` validated; raises :class:`ConfigError` naming the key."""
    try:
        return ReadSettings.model_validate(tools_table(config, "read"))
    except pydantic.ValidationError as e:
        file = config_file(config)
        raise ConfigError(format_config_error(file, f"{TOOLS_TABLE}.read", e)) from None
