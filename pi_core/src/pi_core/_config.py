"""The ``pi.toml`` configuration file (DESIGN §5: ``pi [--config FILE] COMMAND``).

Without ``--config``, pi looks for ``pi.toml`` in the working directory and then in each parent
directory; the first one found is used, and no file at all means the defaults. The file is TOML
(read with :mod:`tomllib`). The core owns the ``[pi]`` table; every other top-level table
belongs to a plugin and is kept as is in :attr:`PiConfig.data` (the ``config`` dict hooks get)::

    [pi]
    tool_execution = "sequential"   # "parallel" (default) or "sequential" (spec §2.5)
    max_parallel_tools = 4          # cap on concurrently executing tools; integer >= 1

    [sandbox]                       # a plugin's own table
    allow_network = false

Errors are :class:`~pi_core._errors.ConfigError` with a one-line message that names the file and
the line (TOML syntax: ``/abs/pi.toml:3: Invalid value (column 7)``) or the key (a bad value:
``/abs/pi.toml: pi.max_parallel_tools: Input should be greater than or equal to 1``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pydantic

from pi_core._errors import ConfigError
from pi_core._pipeline.config import LoopConfig

CONFIG_FILENAME = "pi.toml"
CORE_TABLE = "pi"

_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_AT_END = re.compile(r"\s*\(at end of document\)$")


class CoreSettings(pydantic.BaseModel):
    """The core's ``[pi]`` table. Unknown keys are errors (a misspelt key never passes)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    tool_execution: Literal["parallel", "sequential"] = "parallel"
    """How each batch of tool calls runs (spec §2.5)."""

    max_parallel_tools: pydantic.StrictInt | None = pydantic.Field(default=None, ge=1)
    """At most this many tools execute at once in a parallel batch; unset: no cap."""


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

    def apply_to(self, config: LoopConfig) -> LoopConfig:
        """Set the loop settings of ``[pi]`` on ``config`` (mutated and returned)."""
        config.tool_execution = self.core.tool_execution
        config.max_parallel_tools = self.core.max_parallel_tools
        return config


def find_config(start: Path | str) -> Path | None:
    """The first ``pi.toml`` in ``start`` or one of its parents (absolute), or ``None``."""
    here = Path(start).absolute()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILENAME
        if candidate.is_file():
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
        path = found
    path = Path(path).absolute()
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    return parse_config(raw, path)


def parse_config(raw: bytes, path: Path) -> PiConfig:
    """Parse the bytes of a config file; ``path`` is only used in messages and the result."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(_syntax_message(path, text, str(e))) from None
    table = data.get(CORE_TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {CORE_TABLE}: must be a table ([{CORE_TABLE}])")
    try:
        core = CoreSettings.model_validate(table)
    except pydantic.ValidationError as e:
        raise ConfigError(_value_message(path, e)) from None
    return PiConfig(path=path, data=data, core=core)


def _syntax_message(path: Path, text: str, message: str) -> str:
    position = _POSITION.search(message)
    if position:
        line, column = position.groups()
        return f"{path}:{line}: {message[: position.start()]} (column {column})"
    if _AT_END.search(message):
        line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return f"{path}:{max(line_count, 1)}: {_AT_END.sub('', message)} (at end of file)"
    return f"{path}: {message}"


def _value_message(path: Path, error: pydantic.ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    key = ".".join([CORE_TABLE, *(str(part) for part in first["loc"])])
    if first["type"] == "extra_forbidden":
        return f"{path}: {key}: unknown key"
    value = first.get("input")
    shown = f" (got {_toml_repr(value)})" if first["type"] != "missing" else ""
    return f"{path}: {key}: {first['msg']}{shown}"


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


__all__ = [
    "CONFIG_FILENAME",
    "CoreSettings",
    "PiConfig",
    "find_config",
    "load_config",
    "parse_config",
]
