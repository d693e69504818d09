"""The ``pi.toml`` configuration file (``docs/reference/configuration.md``).

Without ``--config``, pi looks for ``pi.toml`` in the session's working directory (``--cwd``, else
the directory pi started in) and then in each parent directory; the first one found is used,
and no file at all means the defaults. The file is TOML (read with :mod:`tomllib`). The core
owns the ``[pi]`` and ``[checkpoints]`` tables; every other top-level table belongs to a plugin
and is kept as is in :attr:`PiConfig.data` (the ``config`` dict hooks get)::

    [pi]
    tool_execution = "sequential"   # "parallel" (default) or "sequential"
    max_parallel_tools = 4          # cap on concurrently executing tools; integer >= 1

    [checkpoints]                   # the core's checkpoints (docs/how-to/undo.md)
    enabled = true
    exclude = ["node_modules", ".venv"]

    [sandbox]                       # a plugin's own table
    allow_network = false

Errors are :class:`~pi_core._errors.ConfigError` with a one-line message that names the file and
the line (TOML syntax: ``/abs/pi.toml:3: Invalid value (column 7)``) or the key (a bad value:
``/abs/pi.toml: pi.max_parallel_tools: Input should be greater than or equal to 1``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import pydantic

from pi_core._errors import ConfigError
from pi_core._wire.base import empty_list

CONFIG_FILENAME = "pi.toml"
CORE_TABLE = "pi"
CHECKPOINTS_TABLE = "checkpoints"

_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_AT_END = re.compile(r"\s*\(at end of document\)$")


class CoreSettings(pydantic.BaseModel):
    """The core's ``[pi]`` table. Unknown keys are errors (a misspelt key never passes)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    tool_execution: Literal["parallel", "sequential"] = "parallel"
    """How each batch of tool calls runs."""

    max_parallel_tools: pydantic.StrictInt | None = pydantic.Field(default=None, ge=1)
    """At most this many tools execute at once in a parallel batch; unset: no cap."""


class CheckpointSettings(pydantic.BaseModel):
    """The ``[checkpoints]`` table (``docs/reference/configuration.md``). Unknown keys are
    errors."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    enabled: pydantic.StrictBool = True
    """Record checkpoints in ``pi run``, ``pi call``, ``pi replay`` and ``pi mcp serve``."""

    dir: pydantic.StrictStr | None = None
    """Where checkpoints are stored (``~`` expanded; must then be absolute); unset:
    ``$XDG_STATE_HOME/pi/checkpoints``, else ``~/.local/state/pi/checkpoints``."""

    exclude: list[pydantic.StrictStr] = pydantic.Field(default_factory=empty_list)
    """Paths never recorded nor restored, besides ``.git``: a name (any depth) or a path from
    the workspace root, shell globs allowed."""

    max_file_bytes: pydantic.StrictInt = pydantic.Field(default=16 * 1024 * 1024, ge=0)
    """Files larger than this are recorded by hash and size only (they cannot be restored)."""

    max_files: pydantic.StrictInt = pydantic.Field(default=100_000, ge=1)
    """A workspace with more entries than this is not read: its shell calls are not recorded
    (file tools still are)."""

    max_bytes: pydantic.StrictInt = pydantic.Field(default=1024 * 1024 * 1024, ge=0)
    """The most the checkpoints of one workspace keep; the oldest sessions go first."""

    @pydantic.field_validator("dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        expanded = os.path.expanduser(value)
        if not os.path.isabs(expanded):
            raise ValueError("must be an absolute path (or start with ~)")
        return expanded


def checkpoint_settings(config: Mapping[str, Any] | None) -> CheckpointSettings:
    """The validated ``[checkpoints]`` table of a loaded ``config`` dict (defaults without
    one); :class:`ConfigError` ``FILE: checkpoints.KEY: ...`` for a bad value."""
    table = (config or {}).get(CHECKPOINTS_TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(
            f"{config_file(config)}: {CHECKPOINTS_TABLE}: must be a table ([{CHECKPOINTS_TABLE}])"
        )
    try:
        return CheckpointSettings.model_validate(table)
    except pydantic.ValidationError as e:
        raise ConfigError(format_config_error(config_file(config), CHECKPOINTS_TABLE, e)) from None


class ConfigData(dict[str, Any]):
    """The TOML document of a config file as a plain dict that also remembers the file
    (``path``): the ``config`` dict hooks receive, so a plugin validating its own table names
    the file actually used (``pi --config other.toml``) in its errors (:func:`config_file`)."""

    path: Path | None = None


def config_file(config: Mapping[str, Any] | None) -> str:
    """The file a loaded ``config`` dict came from, for error messages: its absolute path (the
    one ``pi --config FILE`` named, or the ``pi.toml`` found), ``pi.toml`` when unknown (a dict
    built by a program, or no file)::

        raise ConfigError(f"{config_file(config)}: my_plugin.key: must be a string")
    """
    path = getattr(config, "path", None)
    return os.fspath(path) if path is not None else CONFIG_FILENAME


class LoopSettings(Protocol):
    """What :meth:`PiConfig.apply_to` sets (a :class:`~pi_core.LoopConfig` has both): this
    module reads the file and knows nothing of the loop."""

    tool_execution: Literal["parallel", "sequential"]
    max_parallel_tools: int | None


_Settings = TypeVar("_Settings", bound=LoopSettings)


@dataclass(frozen=True)
class PiConfig:
    """A loaded configuration.

    * ``path``: the file it came from (absolute), ``None`` when no file was found.
    * ``data``: the whole TOML document as a dict (``{}`` without a file): the ``config`` that
      ``pi_register_tools`` and the backend hooks receive; plugins read their own tables.
    * ``core``: the validated ``[pi]`` table.
    """

    path: Path | None = None
    data: dict[str, Any] = field(default_factory=dict)
    core: CoreSettings = field(default_factory=CoreSettings)

    def plugin_table(self, name: str) -> dict[str, Any]:
        """The top-level table ``[name]``, ``{}`` when absent."""
        table = self.data.get(name)
        return table if isinstance(table, dict) else {}

    def apply_to(self, config: _Settings) -> _Settings:
        """Set the loop settings of ``[pi]`` on ``config`` (mutated and returned)."""
        config.tool_execution = self.core.tool_execution
        config.max_parallel_tools = self.core.max_parallel_tools
        return config


MAX_CONFIG_BYTES = 4 << 20
"""The largest config file pi reads (4 MiB): a device or a runaway file is an error."""


def find_config(start: Path | str) -> Path | None:
    """The first ``pi.toml`` in ``start`` or one of its parents (absolute), or ``None``. Any
    entry of that name counts (a folder, a broken symlink): :func:`load_config` refuses one that
    is no file, rather than passing over it to a parent's file."""
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILENAME
        if os.path.lexists(candidate):
            return candidate
    return None


def load_config(path: Path | str | None = None, *, cwd: Path | str | None = None) -> PiConfig:
    """Load ``path``, or the ``pi.toml`` found from ``cwd`` (default: the process's working
    directory) upward; no file found gives the defaults.

    Raises :class:`ConfigError` when an explicit ``path`` cannot be read, the TOML is invalid
    (message ``FILE:LINE: ...``) or ``[pi]`` holds a bad value or an unknown key
    (message ``FILE: pi.KEY: ...``).
    """
    if path is None:
        found = find_config(Path.cwd() if cwd is None else Path(cwd))
        if found is None:
            return PiConfig()
        if not found.is_file():
            reason = "Is a directory" if found.is_dir() else "not a regular file"
            raise ConfigError(f"cannot read config file {found}: {reason}")
        path = found
    if not str(path):
        raise ConfigError("--config: the file name is empty")
    path = Path(path).absolute()
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // (1 << 20)} MiB")
    return parse_config(raw, path)


def parse_config(raw: bytes, path: Path) -> PiConfig:
    """Parse the bytes of a config file; ``path`` is only used in messages and the result."""
    import tomllib  # only when there is a file (start-up)

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8") from None
    try:
        data = ConfigData(tomllib.loads(text))
        data.path = path
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(_syntax_message(path, text, str(e))) from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to parse") from None
    except ValueError:  # an integer of more digits than int() converts (4,300)
        digits = re.search(r"[0-9_]{4300,}", text)
        line = text.count("\n", 0, digits.start()) + 1 if digits else 1
        raise ConfigError(f"{path}:{line}: integer out of TOML's 64-bit range") from None
    _check_integers(data, path, "")
    table = data.get(CORE_TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {CORE_TABLE}: must be a table ([{CORE_TABLE}])")
    try:
        core = CoreSettings.model_validate(table)
    except pydantic.ValidationError as e:
        raise ConfigError(format_config_error(path, CORE_TABLE, e)) from None
    checkpoint_settings(data)  # a bad [checkpoints] table is reported before anything runs
    return PiConfig(path=path, data=data, core=core)


_INT64 = range(-(2**63), 2**63)


def _check_integers(value: Any, path: Path, key: str) -> None:
    """TOML's integers are 64-bit ("an integer that cannot be represented losslessly MUST
    throw an error"); ``tomllib`` takes any size. ``FILE: KEY: ...`` for the first one out of
    range (``KEY``: ``pi.max_parallel_tools``, ``sandbox.ports[1]``)."""
    if isinstance(value, dict):
        for name, item in value.items():
            _check_integers(item, path, f"{key}.{name}" if key else name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_integers(item, path, f"{key}[{index}]")
    elif isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        raise ConfigError(f"{path}: {key}: integer out of TOML's 64-bit range (got {value})")


def _syntax_message(path: Path, text: str, message: str) -> str:
    position = _POSITION.search(message)
    if position:
        line, column = position.groups()
        return f"{path}:{line}: {message[: position.start()]} (column {column})"
    if _AT_END.search(message):
        line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return f"{path}:{max(line_count, 1)}: {_AT_END.sub('', message)} (at end of file)"
    return f"{path}: {message}"


def format_config_error(
    file: str | os.PathLike[str],
    table: str,
    error: pydantic.ValidationError,
    *,
    show_value: bool = True,
) -> str:
    """The one-line message of a config table that failed pydantic validation: the first error,
    as ``FILE: KEY: REASON (got VALUE)``.

    ``KEY`` is ``table`` followed by the error's location (``.name`` for a key, ``[i]`` for a list
    item: ``sandbox.policy.deny[0]``); ``REASON`` is pydantic's message without its
    ``Value error,`` prefix, or ``unknown key`` for a key the model forbids. ``(got VALUE)``, the
    offending value written as TOML, follows unless ``show_value`` is false or the key is missing.
    Plugins validating their own tables with pydantic use it so that every config error reads
    alike::

        try:
            settings = MySettings.model_validate(table)
        except pydantic.ValidationError as e:
            raise ConfigError(format_config_error(config_file(config), "my_plugin", e)) from None
    """
    first = error.errors(include_url=False)[0]
    key = table
    for part in first["loc"]:
        key += f"[{part}]" if isinstance(part, int) else f".{part}"
    if first["type"] == "extra_forbidden":
        return f"{os.fspath(file)}: {key}: unknown key"
    message = first["msg"].removeprefix("Value error, ")
    shown = ""
    if show_value and first["type"] != "missing":
        shown = f" (got {_toml_repr(first.get('input'))})"
    return f"{os.fspath(file)}: {key}: {message}{shown}"


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


__all__ = [
    "CHECKPOINTS_TABLE",
    "CONFIG_FILENAME",
    "CheckpointSettings",
    "ConfigData",
    "CoreSettings",
    "LoopSettings",
    "PiConfig",
    "checkpoint_settings",
    "config_file",
    "find_config",
    "format_config_error",
    "load_config",
    "parse_config",
]
