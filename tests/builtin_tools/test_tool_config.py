"""``[tools]`` / ``[tools.read]`` / ``[tools.bash]`` table validation (tool_config.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_builtin_tools.files.read import ReadToolOptions
from pi_builtin_tools.plugin import _bash_config
from pi_core._errors import ConfigError


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tools": "x"}, "pi.toml: tools: must be a table ([tools])"),
        ({"tools": {"read": 3}}, "pi.toml: tools.read: must be a table ([tools.read])"),
        (
            {"tools": {"read": {"jpeg_quality": "x"}}},
            'pi.toml: tools.read.jpeg_quality: Input should be a valid integer (got "x")',
        ),
        (
            {"tools": {"read": {"jpeg_quality": 101}}},
            "pi.toml: tools.read.jpeg_quality: Input should be less than or equal to 100 (got 101)",
        ),
        ({"tools": {"read": {"foo": 1}}}, "pi.toml: tools.read.foo: unknown key"),
        (
            {"tools": {"read": {"max_image_width": -5}}},
            "pi.toml: tools.read.max_image_width: "
            "Input should be greater than or equal to 1 (got -5)",
        ),
        (
            {"tools": {"read": {"supports_images": "yes"}}},
            'pi.toml: tools.read.supports_images: Input should be a valid boolean (got "yes")',
        ),
    ],
)
def test_bad_read_config(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ReadToolOptions.from_config(config)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tools": "x"}, "pi.toml: tools: must be a table ([tools])"),
        ({"tools": {"bash": 5}}, "pi.toml: tools.bash: must be a table ([tools.bash])"),
    ],
)
def test_bash_table_must_be_a_table(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _bash_config(config)
    assert str(info.value) == message


def test_valid_tables() -> None:
    assert _bash_config({"tools": {"bash": {"shell_path": "/bin/sh"}}}) == {"shell_path": "/bin/sh"}
    assert _bash_config({}) == {}
    options = ReadToolOptions.from_config(
        {"tools": {"read": {"max_image_bytes": 1000, "jpeg_quality": 50}}}
    )
    assert (options.image_resize.max_bytes, options.image_resize.jpeg_quality) == (1000, 50)
