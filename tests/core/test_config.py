"""``pi.toml``: discovery, the core's ``[pi]`` table, plugin tables, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from pi_core import format_config_error
from pi_core._config import CoreSettings, PiConfig, find_config, load_config, parse_config
from pi_core._errors import ConfigError
from pi_core._loop.config import LoopConfig

FILE = Path("/cfg/pi.toml")


def error_of(text: bytes) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, FILE)
    return str(info.value)


def test_no_file_gives_defaults(tmp_path: Path) -> None:
    config = load_config(cwd=tmp_path)
    assert config == PiConfig(path=None, data={}, core=CoreSettings())
    assert (config.core.tool_execution, config.core.max_parallel_tools) == ("parallel", None)


def test_found_in_working_directory_or_a_parent(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text('[pi]\ntool_execution = "sequential"\n')
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(nested) == tmp_path / "pi.toml"
    config = load_config(cwd=nested)
    assert config.path == tmp_path / "pi.toml"
    assert config.core.tool_execution == "sequential"


def test_nearest_file_wins(tmp_path: Path) -> None:
    (tmp_path / "pi.toml").write_text("[pi]\nmax_parallel_tools = 1\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pi.toml").write_text("[pi]\nmax_parallel_tools = 2\n")
    assert load_config(cwd=tmp_path / "a").core.max_parallel_tools == 2


def test_default_cwd_is_the_process_working_directory(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pi.toml").write_text("[pi]\nmax_parallel_tools = 3\n")
    monkeypatch.chdir(tmp_path)
    assert load_config().core.max_parallel_tools == 3


def test_plugin_tables_are_kept_as_they_are() -> None:
    config = parse_config(
        b'[pi]\nmax_parallel_tools = 4\n\n[sandbox]\nallow = ["git"]\n[sandbox.ssh]\nhost = "h"\n',
        FILE,
    )
    assert config.data == {
        "pi": {"max_parallel_tools": 4},
        "sandbox": {"allow": ["git"], "ssh": {"host": "h"}},
    }
    assert config.plugin_table("sandbox") == {"allow": ["git"], "ssh": {"host": "h"}}
    assert config.plugin_table("absent") == {}


def test_apply_to_sets_the_loop_settings() -> None:
    config = parse_config(b'[pi]\ntool_execution = "sequential"\nmax_parallel_tools = 2\n', FILE)
    loop = config.apply_to(LoopConfig())
    assert (loop.tool_execution, loop.max_parallel_tools) == ("sequential", 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b"[pi]\nmax_parallel_tools = 0\n",
            "/cfg/pi.toml: pi.max_parallel_tools: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            b"[pi]\nmax_parallel_tools = true\n",
            "/cfg/pi.toml: pi.max_parallel_tools: Input should be a valid integer (got true)",
        ),
        (
            b'[pi]\nmax_parallel_tools = "4"\n',
            '/cfg/pi.toml: pi.max_parallel_tools: Input should be a valid integer (got "4")',
        ),
        (
            b'[pi]\ntool_execution = "parallell"\n',
            "/cfg/pi.toml: pi.tool_execution: Input should be 'parallel' or 'sequential' "
            '(got "parallell")',
        ),
        (b"[pi]\nmax_parallel = 2\n", "/cfg/pi.toml: pi.max_parallel: unknown key"),
        (b"pi = 1\n", "/cfg/pi.toml: pi: must be a table ([pi])"),
    ],
)
def test_bad_value_names_file_and_key(text: bytes, message: str) -> None:
    assert error_of(text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b'[pi]\ntool_execution = "x"\nmax_parallel_tools = \n',
            "/cfg/pi.toml:3: Invalid value (column 22)",
        ),
        (b"[pi\n", "/cfg/pi.toml:1: Expected ']' at the end of a table declaration (column 4)"),
        (b'a = "open', "/cfg/pi.toml:1: Unterminated string (at end of file)"),
        (b"a = 1\na = 2\n", "/cfg/pi.toml:2: Cannot overwrite a value (column 6)"),
        (b"a = 1\n\xff\n", "/cfg/pi.toml:2: not valid UTF-8"),
    ],
)
def test_syntax_error_names_file_and_line(text: bytes, message: str) -> None:
    assert error_of(text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b"[pi]\nmax_parallel_tools = 99999999999999999999999\n",
            "/cfg/pi.toml: pi.max_parallel_tools: integer out of TOML's 64-bit range "
            "(got 99999999999999999999999)",
        ),
        (
            b"[checkpoints]\nmax_bytes = 9223372036854775808\n",
            "/cfg/pi.toml: checkpoints.max_bytes: integer out of TOML's 64-bit range "
            "(got 9223372036854775808)",
        ),
        (
            b"[sandbox.ssh]\nports = [22, -9223372036854775809]\n",
            "/cfg/pi.toml: sandbox.ssh.ports[1]: integer out of TOML's 64-bit range "
            "(got -9223372036854775809)",
        ),
        (
            b"[[x]]\na = 1\n[[x]]\nb = {c = 0x10000000000000000}\n",
            "/cfg/pi.toml: x[1].b.c: integer out of TOML's 64-bit range (got 18446744073709551616)",
        ),
    ],
)
def test_an_integer_beyond_64_bits_names_file_and_key(text: bytes, message: str) -> None:
    """TOML: an integer that cannot be represented losslessly in 64 bits must be an error;
    ``tomllib`` takes any size, and pydantic's ``StrictInt`` did too."""
    assert error_of(text) == message


def test_an_integer_too_long_for_python_is_the_same_error() -> None:
    """``tomllib`` let CPython's ``ValueError`` (over 4,300 digits) out: a traceback."""
    text = b"[pi]\ntool_execution = 'parallel'\nmax_parallel_tools = " + b"9" * 5000 + b"\n"
    assert error_of(text) == "/cfg/pi.toml:3: integer out of TOML's 64-bit range"


def test_64_bit_integers_are_kept() -> None:
    text = b"[pi]\nmax_parallel_tools = 9223372036854775807\n[p]\nlow = -9223372036854775808\n"
    config = parse_config(text, FILE)
    assert config.core.max_parallel_tools == 2**63 - 1
    assert config.data["p"] == {"low": -(2**63)}


def test_a_pi_toml_that_is_no_file_is_an_error_not_skipped(tmp_path: Path) -> None:
    """A folder named pi.toml used to be passed over: the lookup went on to a parent's file or
    to the defaults, silently."""
    (tmp_path / "pi.toml").write_text("[pi]\nmax_parallel_tools = 2\n")
    work = tmp_path / "work"
    (work / "pi.toml").mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=work)
    assert str(info.value) == f"cannot read config file {work}/pi.toml: Is a directory"
    (work / "pi.toml").rmdir()
    (work / "pi.toml").symlink_to("missing.toml")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=work)
    assert str(info.value) == f"cannot read config file {work}/pi.toml: not a regular file"


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert (
        str(info.value)
        == f"cannot read config file {tmp_path}/nope.toml: No such file or directory"
    )


def test_explicit_relative_path_is_made_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("my.toml").write_text("[pi]\nfoo = 1\n")
    with pytest.raises(ConfigError) as info:
        load_config("my.toml")
    assert str(info.value) == f"{tmp_path}/my.toml: pi.foo: unknown key"


# -- format_config_error: the one formatter of every config table ------------------------------


class _Rule(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    words: list[pydantic.StrictStr] = []
    limit: pydantic.StrictInt = pydantic.Field(default=1, ge=1)
    name: str = ""

    @pydantic.field_validator("name")
    @classmethod
    def _no_space(cls, value: str) -> str:
        if " " in value:
            raise ValueError("must not contain a space")
        return value


def _message(table: dict[str, Any], **options: Any) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        _Rule.model_validate(table)
    return format_config_error("/w/pi.toml", "my_plugin", info.value, **options)


@pytest.mark.parametrize(
    ("table", "options", "message"),
    [
        (
            {"limit": 0},
            {},
            "/w/pi.toml: my_plugin.limit: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            {"limit": "2"},
            {},
            '/w/pi.toml: my_plugin.limit: Input should be a valid integer (got "2")',
        ),
        (
            {"limit": True},
            {},
            "/w/pi.toml: my_plugin.limit: Input should be a valid integer (got true)",
        ),
        (
            {"words": ["a", 3]},
            {},
            "/w/pi.toml: my_plugin.words[1]: Input should be a valid string (got 3)",
        ),
        (
            {"name": "a b"},
            {"show_value": False},
            "/w/pi.toml: my_plugin.name: must not contain a space",
        ),
        ({"colour": 1}, {}, "/w/pi.toml: my_plugin.colour: unknown key"),
    ],
)
def test_format_config_error_names_file_key_reason_and_value(
    table: dict[str, Any], options: dict[str, Any], message: str
) -> None:
    assert _message(table, **options) == message
