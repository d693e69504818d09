"""Which MCP servers a session uses: ``[mcp.servers.NAME]`` of ``pi.toml`` and, for interop, Pi's
``mcp.json`` files (``~/.pi/agent/mcp.json``, ``.pi/mcp.json``), with Pi 1.6's rules.

::

    [mcp]
    project_mcp_json = false      # also read <cwd>/.pi/mcp.json (Pi reads it in trusted projects)
    allow_command_values = false  # run "!command" values of env/headers (off: they are errors)
    auto_enable_codemode = true   # activate codemode for codemode servers (Pi's autoEnableCodemode)

    [mcp.servers.fs]              # a stdio server
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env = { TOKEN = "${MY_TOKEN}" }
    cwd = "."                     # relative to the session's cwd
    exposure = "direct"           # codemode (default) | deferred | direct | hidden
    tool_exposure = { "write_*" = "hidden" }
    timeout = 60                  # seconds, for start-up and for each request
    enabled = true
    description = "the project's files"

    [mcp.servers.docs]            # a streamable HTTP server
    url = "https://example.com/mcp"
    headers = { Authorization = "Bearer ${DOCS_TOKEN}" }

Order: the user ``mcp.json`` (``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), then the project
``.pi/mcp.json`` (when ``project_mcp_json``; an entry with no ``command``/``url``/``type`` only
overrides ``enabled``, ``exposure``, ``toolExposure`` of the user entry), then ``pi.toml``, whose
entries replace those of the same name. Server names are ``[A-Za-z0-9_-]+``; two names that differ
only in ``-``/``_`` conflict (they would share a namespace); ``type = "sse"`` is rejected.

A ``pi.toml`` error is a :class:`~pi_core.ConfigError` (``FILE: mcp.servers.NAME.KEY: ...``); an
``mcp.json`` error is reported and that entry skipped, as Pi does.

API: :class:`McpServer` (one server), :class:`McpServers` (``servers``, ``errors``),
:func:`load_mcp_servers` ``(config, cwd)``, :func:`resolve_value` (``${VAR}`` and ``!command``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
from pydantic import StrictBool, StrictStr

from pi_builtin_tools.mcp.naming import EXPOSURE_ALIASES, MCP_EXPOSURES, mcp_namespace
from pi_core import ConfigError, config_file, format_config_error, parse_json

DEFAULT_TIMEOUT_SECONDS = 60.0
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
OVERRIDE_KEYS = ("enabled", "exposure", "toolExposure")

Exposure = Literal["codemode", "deferred", "direct", "hidden"]


@dataclass(frozen=True)
class McpServer:
    """One configured MCP server: ``name``, ``transport`` (``"stdio"`` or ``"http"``), the stdio
    fields (``command``, ``args``, ``env``, ``cwd``) or the HTTP ones (``url``, ``headers``,
    ``auth``),
    ``enabled``, ``timeout`` (seconds), ``exposure`` (the MCP exposure, default ``codemode``),
    ``tool_exposure`` (tool name or ``*`` pattern → exposure), ``description``, and where it was
    defined (``source``: a file; ``scope``: ``"pi.toml"``, ``"user"`` or ``"project"``;
    ``override``: the project file that overrode it). ``env``/``headers`` values are unresolved
    (``${VAR}``, ``!command``): :func:`resolve_value` resolves them when the server starts."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: str | None = None
    """``"oauth"``: the MCP authorization flow (:mod:`pi_builtin_tools.mcp.oauth`)."""
    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    exposure: str = "codemode"
    tool_exposure: Mapping[str, str] = field(default_factory=dict)
    description: str | None = None
    source: str = ""
    scope: str = "pi.toml"
    override: str | None = None
    allow_command_values: bool = False

    @property
    def launch(self) -> str:
        """How the server is reached: its URL, or its command line."""
        if self.transport == "http":
            return str(self.url)
        return " ".join([str(self.command), *self.args])

    def cache_key(self) -> str:
        """A digest of what decides the server's tools (transport, command, args, env, cwd, url,
        headers, unresolved): a cached tool list is used only for the same key."""
        data = json.dumps(
            [
                self.transport,
                self.command,
                list(self.args),
                dict(self.env),
                self.cwd,
                self.url,
                dict(self.headers),
            ],
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()[:16]


@dataclass
class McpServers:
    """The configured servers (``servers``, in definition order) and the ``errors`` of
    ``mcp.json`` files (one line each, ``<path>: <problem>``)."""

    servers: list[McpServer] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    auto_enable_codemode: bool = True
    """Activate the ``codemode`` tool when a server has ``codemode`` exposure (Pi's
    ``autoEnableCodemode``; ``[mcp] auto_enable_codemode``)."""

    def get(self, name: str) -> McpServer | None:
        """The server named ``name``."""
        return next((s for s in self.servers if s.name == name), None)


# -- pi.toml -------------------------------------------------------------------------------


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


def _exposure(value: Any) -> Any:
    return EXPOSURE_ALIASES.get(value, value) if isinstance(value, str) else value


class ServerTable(_Model):
    """``[mcp.servers.NAME]``."""

    type: Literal["stdio", "http", "streamable-http"] | None = None
    command: StrictStr | None = pydantic.Field(default=None, min_length=1)
    args: list[StrictStr] = []
    env: dict[str, StrictStr] = {}
    cwd: StrictStr | None = None
    url: StrictStr | None = None
    headers: dict[str, StrictStr] = {}
    auth: Literal["oauth"] | None = None
    enabled: StrictBool = True
    timeout: float = pydantic.Field(
        default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=86400, allow_inf_nan=False
    )
    exposure: Exposure = "codemode"
    tool_exposure: dict[str, Exposure] = {}
    description: StrictStr | None = None

    @pydantic.field_validator("exposure", mode="before")
    @classmethod
    def _alias(cls, value: Any) -> Any:
        return _exposure(value)

    @pydantic.field_validator("tool_exposure", mode="before")
    @classmethod
    def _aliases(cls, value: Any) -> Any:
        return {k: _exposure(v) for k, v in value.items()} if isinstance(value, dict) else value

    @pydantic.field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("url must be an http or https URL")
        return value

    @pydantic.model_validator(mode="after")
    def _transport(self) -> ServerTable:
        if self.type in ("http", "streamable-http") or (self.type is None and self.url is not None):
            if self.url is None:
                raise ValueError('needs "url" (streamable HTTP)')
            if self.command is not None:
                raise ValueError('has both "command" and "url": a server is either stdio or HTTP')
        elif self.auth is not None:
            raise ValueError('auth = "oauth" is for a server with a "url"')
        elif self.command is None:
            raise ValueError('needs either "command" (stdio) or "url" (streamable HTTP)')
        elif self.url is not None:
            raise ValueError('has both "command" and "url": a server is either stdio or HTTP')
        return self


class McpTable(_Model):
    """``[mcp]``: the servers and the interop switches. ``serve`` belongs to ``pi mcp serve``."""

    project_mcp_json: StrictBool = False
    allow_command_values: StrictBool = False
    auto_enable_codemode: StrictBool | None = None
    servers: dict[str, ServerTable] = {}
    serve: dict[str, Any] | None = None

    @pydantic.field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, ServerTable]) -> dict[str, ServerTable]:
        for name in value:
            if not SERVER_NAME.match(name):
                raise ValueError(f'invalid server name "{name}" (use letters, digits, "_" and "-")')
        return value


def _from_table(name: str, table: ServerTable, source: str, allow: bool) -> McpServer:
    http = table.url is not None
    return McpServer(
        name=name,
        transport="http" if http else "stdio",
        command=table.command,
        args=tuple(table.args),
        env=dict(table.env),
        cwd=table.cwd,
        url=table.url,
        headers=dict(table.headers),
        auth=table.auth,
        enabled=table.enabled,
        timeout=float(table.timeout),
        exposure=table.exposure,
        tool_exposure=dict(table.tool_exposure),
        description=table.description,
        source=source,
        scope="pi.toml",
        allow_command_values=allow,
    )


# -- mcp.json (Pi's shape) ----------------------------------------------------------------------


def agent_dir() -> str:
    """Pi's agent directory: ``$PI_CODING_AGENT_DIR`` (``~`` expanded), else ``~/.pi/agent``."""
    env = os.environ.get("PI_CODING_AGENT_DIR")
    if env:
        return os.path.expanduser(env)
    return os.path.join(os.path.expanduser("~"), ".pi", "agent")


def _is_string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def validate_json_entry(name: str, raw: Any) -> dict[str, Any] | str:
    """Pi's ``validateMcpServerConfig`` for one ``mcpServers`` entry: the entry (exposure
    aliases resolved) or the error message."""
    if not SERVER_NAME.match(name):
        return f'invalid server name "{name}" (use letters, digits, "_" and "-")'
    if not isinstance(raw, dict):
        return f'server "{name}" must be an object'
    entry = dict(raw)
    if "exposure" in entry:
        entry["exposure"] = _exposure(entry["exposure"])
    if isinstance(entry.get("toolExposure"), dict):
        entry["toolExposure"] = {k: _exposure(v) for k, v in entry["toolExposure"].items()}
    enabled, timeout, description = (
        entry.get("enabled"),
        entry.get("timeout"),
        entry.get("description"),
    )
    if enabled is not None and not isinstance(enabled, bool):
        return f'server "{name}": enabled must be a boolean'
    if description is not None and not isinstance(description, str):
        return f'server "{name}": description must be a string'
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < float("inf")
    ):
        return f'server "{name}": timeout must be a positive number of seconds'
    kind, url, command = entry.get("type"), entry.get("url"), entry.get("command")
    if kind == "sse":
        return (
            f'server "{name}": legacy SSE transport is not supported; use the streamable HTTP URL'
        )
    if isinstance(url, str) and kind in (None, "http", "streamable-http"):
        if not re.match(r"^https?://[^/\s]+", url):
            return f'server "{name}": url must be an http or https URL'
        if "headers" in entry and not _is_string_map(entry["headers"]):
            return f'server "{name}": headers must map names to strings'
    elif isinstance(command, str) and kind in (None, "stdio"):
        args = entry.get("args")
        if args is not None and not (
            isinstance(args, list) and all(isinstance(a, str) for a in args)
        ):
            return f'server "{name}": args must be an array of strings'
        if "env" in entry and not _is_string_map(entry["env"]):
            return f'server "{name}": env must map names to strings'
        if entry.get("cwd") is not None and not isinstance(entry["cwd"], str):
            return f'server "{name}": cwd must be a string'
    else:
        return f'server "{name}" needs either "command" (stdio) or "url" (streamable HTTP)'
    exposures = ", ".join(f'"{e}"' for e in MCP_EXPOSURES)
    if entry.get("exposure") is not None and entry["exposure"] not in MCP_EXPOSURES:
        return f'server "{name}": exposure must be one of {exposures}'
    tool_exposure = entry.get("toolExposure")
    if tool_exposure is not None:
        if not isinstance(tool_exposure, dict):
            return f'server "{name}": toolExposure must map tool names to exposures'
        for tool, level in tool_exposure.items():
            if level not in MCP_EXPOSURES:
                return f'server "{name}": toolExposure "{tool}" must be one of {exposures}'
    return entry


def _from_json(name: str, entry: dict[str, Any], source: str, scope: str, allow: bool) -> McpServer:
    http = isinstance(entry.get("url"), str) and entry.get("type") in (
        None,
        "http",
        "streamable-http",
    )
    return McpServer(
        name=name,
        transport="http" if http else "stdio",
        command=None if http else entry.get("command"),
        args=() if http else tuple(entry.get("args") or ()),
        env={} if http else dict(entry.get("env") or {}),
        cwd=None if http else entry.get("cwd"),
        url=entry.get("url") if http else None,
        headers=dict(entry.get("headers") or {}) if http else {},
        enabled=entry.get("enabled", True) is not False,
        timeout=float(entry.get("timeout") or DEFAULT_TIMEOUT_SECONDS),
        exposure=entry.get("exposure") or "codemode",
        tool_exposure=dict(entry.get("toolExposure") or {}),
        description=entry.get("description"),
        source=source,
        scope=scope,
        allow_command_values=allow,
    )


def _read_json_file(
    path: str,
    scope: str,
    found: dict[str, tuple[McpServer, dict[str, Any]]],
    errors: list[str],
    allow: bool,
    flags: dict[str, bool] | None = None,
) -> None:
    if not os.path.isfile(path):
        return
    try:
        with open(path, encoding="utf-8-sig") as file:
            parsed = parse_json(file.read())
    except (OSError, ValueError) as exc:
        errors.append(f"{path}: {exc}")
        return
    if not isinstance(parsed, dict) or (
        "mcpServers" in parsed and not isinstance(parsed["mcpServers"], dict)
    ):
        errors.append(f'{path}: expected an object with an "mcpServers" object')
        return
    auto = parsed.get("autoEnableCodemode")
    if isinstance(auto, bool):
        if flags is not None:
            flags["auto_enable_codemode"] = auto
    elif auto is not None:
        errors.append(f"{path}: autoEnableCodemode must be a boolean")
    for name, value in (parsed.get("mcpServers") or {}).items():
        if (
            scope == "project"
            and isinstance(value, dict)
            and not ({"command", "url", "type"} & value.keys())
        ):
            base = found.get(name)
            extra = [k for k in value if k not in OVERRIDE_KEYS]
            if base is None:
                errors.append(
                    f'{path}: server "{name}" needs "command" or "url", or a global server to override'
                )
            elif extra:
                errors.append(
                    f'{path}: server "{name}": an override can only set {", ".join(OVERRIDE_KEYS)}'
                )
            else:
                merged = validate_json_entry(name, {**base[1], **value})
                if isinstance(merged, str):
                    errors.append(f"{path}: {merged}")
                else:
                    server = _from_json(name, merged, base[0].source, base[0].scope, allow)
                    server = _replace(server, override=path)
                    found[name] = (server, merged)
            continue
        entry = validate_json_entry(name, value)
        if isinstance(entry, str):
            errors.append(f"{path}: {entry}")
            continue
        clash = next(
            (o for o in found if o != name and mcp_namespace(o) == mcp_namespace(name)), None
        )
        if clash is not None:
            errors.append(f'{path}: server "{name}" conflicts with "{clash}"')
            continue
        found[name] = (_from_json(name, entry, path, scope, allow), entry)


def _replace(server: McpServer, **changes: Any) -> McpServer:
    import dataclasses

    return dataclasses.replace(server, **changes)


def load_mcp_servers(config: Mapping[str, Any] | None, cwd: str) -> McpServers:
    """The servers of ``config`` (``[mcp]``) and of Pi's ``mcp.json`` files for a session in
    ``cwd``. Raises :class:`~pi_core.ConfigError` for an invalid ``[mcp]`` table."""
    config = config or {}
    file = config_file(config)
    raw = config.get("mcp", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: mcp: must be a table ([mcp])")
    try:
        table = McpTable.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(format_config_error(file, "mcp", exc)) from None
    allow = table.allow_command_values
    found: dict[str, tuple[McpServer, dict[str, Any]]] = {}
    errors: list[str] = []
    flags: dict[str, bool] = {}
    _read_json_file(os.path.join(agent_dir(), "mcp.json"), "user", found, errors, allow, flags)
    if table.project_mcp_json:
        project = os.path.join(cwd, ".pi", "mcp.json")
        _read_json_file(project, "project", found, errors, allow, flags)
    auto_enable = flags.get("auto_enable_codemode", True)
    if table.auto_enable_codemode is not None:
        auto_enable = table.auto_enable_codemode
    servers = {name: server for name, (server, _) in found.items()}
    for name, server_table in table.servers.items():
        clash = next(
            (o for o in servers if o != name and mcp_namespace(o) == mcp_namespace(name)), None
        )
        if clash is not None:
            if servers[clash].scope == "pi.toml":
                raise ConfigError(
                    f'{file}: mcp.servers.{name}: conflicts with "{clash}" (same namespace)'
                )
            errors.append(
                f'{servers[clash].source}: server "{clash}" conflicts with "{name}" in {file}'
            )
            del servers[clash]
        servers[name] = _from_table(name, server_table, str(file), allow)
    return McpServers(
        servers=list(servers.values()), errors=errors, auto_enable_codemode=auto_enable
    )


# -- ${VAR} and !command -------------------------------------------------------------------

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
COMMAND_TIMEOUT_SECONDS = 10.0


class ValueResolutionError(Exception):
    """A ``${VAR}`` that is not set, a ``!command`` that failed or is not allowed."""


def resolve_value(
    value: str, description: str, allow_commands: bool, env: Mapping[str, str] | None = None
) -> str:
    """Pi's ``resolveConfigValueOrThrow``: a value starting with ``!`` runs the rest as a shell
    command (10 s limit) and is its trimmed stdout; other values interpolate ``$VAR`` and
    ``${VAR}`` (``$$`` is ``$``, ``$!`` is ``!``). Raises :class:`ValueResolutionError`:
    ``Failed to resolve <description> from environment variable: VAR`` (or ``variables: A, B``),
    ``... from shell command: CMD``; a ``!command`` when ``allow_commands`` is false is refused."""
    environ = os.environ if env is None else env
    if value.startswith("!"):
        command = value[1:]
        if not allow_commands:
            raise ValueResolutionError(
                f"{description} is a shell command (!{command}); pi runs such values only with "
                "[mcp] allow_command_values = true"
            )
        try:
            done = subprocess.run(
                command,
                shell=True,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            output = done.stdout.strip() if done.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            output = ""
        if not output:
            raise ValueResolutionError(
                f"Failed to resolve {description} from shell command: {command}"
            )
        return output
    out: list[str] = []
    missing: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch != "$":
            out.append(ch)
            i += 1
            continue
        nxt = value[i + 1] if i + 1 < len(value) else ""
        if nxt in ("$", "!"):
            out.append(nxt)
            i += 2
            continue
        if nxt == "{":
            end = value.find("}", i + 2)
            if end < 0:
                out.append("$")
                i += 1
                continue
            name = value[i + 2 : end]
            if _ENV_NAME.fullmatch(name):
                resolved = environ.get(name) or None
                if resolved is None:
                    missing.append(name)
                else:
                    out.append(resolved)
            else:
                out.append(value[i : end + 1])
            i = end + 1
            continue
        match = _ENV_NAME.match(value, i + 1)
        if match:
            resolved = environ.get(match.group(0)) or None
            if resolved is None:
                missing.append(match.group(0))
            else:
                out.append(resolved)
            i = match.end()
            continue
        out.append("$")
        i += 1
    if missing:
        names = list(dict.fromkeys(missing))
        if len(names) == 1:
            raise ValueResolutionError(
                f"Failed to resolve {description} from environment variable: {names[0]}"
            )
        raise ValueResolutionError(
            f"Failed to resolve {description} from environment variables: {', '.join(names)}"
        )
    return "".join(out)


__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "McpServer",
    "McpServers",
    "ValueResolutionError",
    "agent_dir",
    "load_mcp_servers",
    "resolve_value",
    "validate_json_entry",
]
