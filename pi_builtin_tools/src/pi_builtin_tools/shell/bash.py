"""The ``bash`` tool (``docs/reference/tools.md``).

The tool never starts a process itself: it runs commands through a
:class:`~pi_core.BashOperations` backend (the local one, SSH, a container...). The same shell
core (:func:`create_shell_tool_definition`, configured by a :class:`ShellToolConfig`) makes the
``powershell`` tool (:mod:`pi_builtin_tools.shell.powershell`). Per call:

1. the timeout is validated;
2. ``command_prefix`` (if configured) is put before the command, on its own line;
3. the spawn context is built: the process environment filtered by the ``[env]`` policy
   (:class:`pi_core.backends.EnvPolicy`: by default no variable that looks like a secret, by
   name or by value), without stale ``PI_SESSION_ID``,
   ``PI_SESSION_FILE``, ``PI_PROVIDER``, ``PI_MODEL``, ``PI_REASONING_LEVEL``, then those set
   from the session context when exposing it is allowed; ``spawn_hook`` (the
   ``pi_bash_spawn_context`` chain) may replace command, cwd and env;
4. output streams into an :class:`~pi_builtin_tools.shell.output_accumulator.OutputAccumulator`;
   ``on_update`` gets ``{content: []}`` at once, then snapshots at most every 100 ms, and a
   final flush;
5. the result: exit 0 → normal result; exit N ≠ 0 → error result (``is_error``, not raised)
   ending ``Command exited with code N``; no exit code → error result ending ``Command
   terminated without an exit code``; timeout → raises ``…Command timed out after S seconds``;
   cancellation → raises :class:`~pi_core.ToolAborted` with ``…Command aborted`` after the
   backend's shielded cleanup.

Model-facing text is the tail (2000 lines / 50KB) of the output with ANSI escape sequences
removed, plus Pi's notice naming the full-output file when truncated. ``structured_content``
(:data:`BASH_OUTPUT_SCHEMA`, set whenever the command exited with a code) is ``{"output",
"truncated", "full_output_path"?, "exit_code", "wall_time_seconds"}``: the complete raw output
(ANSI kept) up to 1 MiB, else its first and last 512 KiB around ``[... N bytes omitted ...]``;
``truncated`` only in that case, and only then the full-output file; the seconds rounded to
tenths.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import trio

from pi_builtin_tools.files.fs_errors import check_process_text
from pi_builtin_tools.files.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size
from pi_builtin_tools.shell.output_accumulator import OutputAccumulator, OutputSnapshot
from pi_builtin_tools.shell.output_files import (
    DEFAULT_FILE_MAX_BYTES,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_SESSION_MAX_BYTES,
    FullOutputFiles,
)
from pi_core import (
    AgentToolResult,
    BashOperations,
    BashSpawnContext,
    CommandTimeout,
    ConfigError,
    OnUpdate,
    TextContent,
    ToolAborted,
    ToolDefinition,
    ToolError,
)
from pi_core.backends import EnvPolicy, unwrap_exception_group

BASH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["output", "truncated", "exit_code", "wall_time_seconds"],
    "properties": {
        "output": {
            "type": "string",
            "description": "Combined stdout and stderr, possibly truncated",
        },
        "truncated": {"type": "boolean"},
        "full_output_path": {"type": "string", "description": "Full output, when truncated"},
        "exit_code": {"type": "number"},
        "wall_time_seconds": {"type": "number"},
    },
}
"""JSON Schema of bash's ``structured_content`` (Pi 1.6.0's ``outputSchema``)."""

DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    f"Output is truncated to last {DEFAULT_MAX_LINES} lines or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). If truncated, full output is saved "
    "to a temp file. Optionally provide a timeout in seconds."
)
PROMPT_SNIPPET = "Execute bash commands (ls, grep, find, etc.)"
SESSION_ENV_GUIDELINE = (
    "You can inspect PI_* environment variables for current model and session details."
)
BASH_ONLY_GUIDELINE = "Use bash for file operations like ls, rg, find"
POWERSHELL_ONLY_GUIDELINE = (
    "Use PowerShell for file operations like listing, searching, and finding files"
)
BASH_OR_POWERSHELL_GUIDELINE = (
    "Use bash or PowerShell for file operations like listing, searching, and finding files"
)
FILE_EXPLORATION_TOOLS = frozenset({"grep", "find", "ls"})


def file_exploration_guidelines(tool_names: list[str]) -> list[str]:
    """Pi 1.6's file-exploration rule, which depends on the session's tools: when bash and/or
    powershell are there but none of grep/find/ls, use the shell(s) for file operations;
    otherwise nothing. Both shell tools declare it; the system prompt keeps one copy."""
    names = set(tool_names)
    if FILE_EXPLORATION_TOOLS & names:
        return []
    if {"bash", "powershell"} <= names:
        return [BASH_OR_POWERSHELL_GUIDELINE]
    if "powershell" in names:
        return [POWERSHELL_ONLY_GUIDELINE]
    if "bash" in names:
        return [BASH_ONLY_GUIDELINE]
    return []


def render_bash_call(args: Any) -> str:
    """``bash $ COMMAND`` (the header ``pi run`` shows)."""
    return BASH_SHELL.render_call(args)


@dataclass(frozen=True)
class ShellToolConfig:
    """What distinguishes one shell tool from another on the shared shell core (Pi's
    ``createShellToolDefinition`` config): the tool ``name`` and ``label``, the ``shell_name``
    its description names, the ``prompt`` its calls are shown with (``$``, ``PS>``), the
    ``temp_file_prefix`` of its full-output files and its ``prompt_snippet``."""

    name: str
    label: str
    shell_name: str
    prompt: str
    temp_file_prefix: str
    prompt_snippet: str

    @property
    def description(self) -> str:
        """The tool description (Pi's text with the shell's name)."""
        return (
            f"Execute a {self.shell_name} command in the current working directory. Returns "
            f"stdout and stderr. Output is truncated to last {DEFAULT_MAX_LINES} lines or "
            f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). If truncated, full output "
            "is saved to a temp file. Optionally provide a timeout in seconds."
        )

    def render_call(self, args: Any) -> str:
        """``NAME PROMPT COMMAND`` (the header ``pi run`` shows)."""
        command = args.get("command") if isinstance(args, dict) else None
        if not isinstance(command, str):
            return f"{self.name} {json.dumps(args, ensure_ascii=False, separators=(',', ':'))}"
        return f"{self.name} {self.prompt} {command}"


BASH_SHELL = ShellToolConfig(
    name="bash",
    label="bash",
    shell_name="bash",
    prompt="$",
    temp_file_prefix="pi-bash",
    prompt_snippet=PROMPT_SNIPPET,
)
"""The bash tool's configuration of the shell core."""

SHELL_SAMPLING: Any = {"type": "json_schema", "strict": "prefer"}
"""The shell tools' ``constrained_sampling``."""


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {
            "type": "number",
            "description": "Timeout in seconds (optional, no default timeout)",
        },
    },
}

SESSION_ENV_VARS = (
    "PI_SESSION_ID",
    "PI_SESSION_FILE",
    "PI_PROVIDER",
    "PI_MODEL",
    "PI_REASONING_LEVEL",
)
"""Variables removed from the inherited environment (stale values of a parent Pi) and set again
from the current session when exposing it is allowed."""

MAX_TIMEOUT_SECONDS = 2147483.647
"""Largest timeout accepted (2^31 - 1 milliseconds)."""

ANSI_ESCAPE = re.compile(
    r"""
    (?: \x1b\[ | \x9b ) [0-?]* [ -/]* [@-~]                # CSI: colours, cursor moves, erase
  | (?: \x1b\] | \x9d ) [^\x07\x1b\x9c\n]* (?: \x07 | \x1b\\ | \x9c )  # OSC: titles, OSC-8 links
  | \x1b [PX^_] [^\x1b\x9c]* (?: \x1b\\ | \x9c )         # DCS, SOS, PM, APC strings
  | \x1b [ -/]* [0-~]                                      # other escapes (ESC 7, ESC ( B)
    """,
    re.VERBOSE,
)
"""ECMA-48 escape sequences, removed whole from the model-facing text."""


def strip_ansi(text: str) -> str:
    """``text`` without ANSI/ECMA-48 escape sequences: CSI (colours, cursor moves), OSC
    (titles, OSC-8 hyperlinks), DCS/SOS/PM/APC strings and two-character escapes."""
    if "\x1b" not in text and "\x9b" not in text and "\x9d" not in text:
        return text
    return ANSI_ESCAPE.sub("", text)


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``String(number)`` writes it (``1.0`` → ``1``, ``0.5`` →
    ``0.5``, ``1e-7`` → ``1e-7``, ``0.00001`` → ``0.00001``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        if abs(value) < 1e21:
            return str(int(value))
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    decimal = Decimal(repr(float(value)))
    exponent = decimal.adjusted()
    if -7 < exponent < 21:
        return format(decimal, "f")
    digits = format(decimal, "e")  # e.g. 1.5e-7 / 1e+21
    mantissa, _, exp = digits.partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{'+' if int(exp) > 0 else '-'}{abs(int(exp))}"


def append_status(text: str, status: str) -> str:
    """``text + "\\n\\n" + status``, or ``status`` alone when ``text`` is empty."""
    return f"{text}\n\n{status}" if text else status


_OPTION_KEYS = {
    "command_prefix": "command_prefix",
    "commandPrefix": "command_prefix",
    "expose_session_environment": "expose_session_environment",
    "exposeSessionEnvironment": "expose_session_environment",
    "keep_full_output": "keep_full_output",
    "full_output_max_bytes": "full_output_max_bytes",
    "full_output_session_max_bytes": "full_output_session_max_bytes",
    "full_output_retention_days": "full_output_retention_days",
}
_BACKEND_OPTION_KEYS = frozenset({"shell_path", "shellPath"})


@dataclass(frozen=True)
class BashToolOptions:
    """Options of the bash tool.

    ``command_prefix``: shell code run before every command (``export PATH=…``), on its own
    line. ``expose_session_environment``: set ``PI_SESSION_ID``… from the session context.
    ``update_interval``: seconds between streaming updates (100 ms). ``max_lines`` /
    ``max_bytes``: the model-facing limits. ``keep_full_output``: leave the full-output files
    in the temporary directory when the session ends (``True``, Pi's behaviour), remove them
    (``False``), or ``None`` (the default): removed at the end of sessions that the model lives
    in (``pi run``, an ``Agent``, an MCP session), kept by the one-shot commands ``pi call`` and
    ``pi replay``, whose printed result names the file for the caller to read afterwards.
    ``full_output_max_bytes``: where a full-output file is cut (1 GiB);
    ``full_output_session_max_bytes``: the bytes a session's full-output files hold together (4
    GiB); ``full_output_retention_days``: how long an ended session's kept files stay (7 days; see
    :mod:`pi_builtin_tools.shell.output_files`).
    """

    command_prefix: str | None = None
    expose_session_environment: bool = True
    keep_full_output: bool | None = None
    update_interval: float = 0.1
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES
    full_output_max_bytes: int = DEFAULT_FILE_MAX_BYTES
    full_output_session_max_bytes: int = DEFAULT_SESSION_MAX_BYTES
    full_output_retention_days: float = DEFAULT_RETENTION_DAYS

    @classmethod
    def from_config(
        cls, table: Mapping[str, Any] | None, *, file: str = "pi.toml", section: str = "tools.bash"
    ) -> BashToolOptions:
        """Options from the ``[tools.bash]`` table (``commandPrefix``/``command_prefix``,
        ``exposeSessionEnvironment``/``expose_session_environment``; ``shell_path`` belongs to
        the local backend and is skipped). A bad or unknown key is a ``ConfigError`` naming
        ``file`` (the config file) and the key: ``FILE: SECTION.KEY: unknown key`` (``section``:
        the table's dotted name, ``tools.bash`` or ``tools.powershell``)."""
        values: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for key, value in (table or {}).items():
            if key in _BACKEND_OPTION_KEYS:
                continue
            if key not in _OPTION_KEYS:
                raise ConfigError(f"{file}: {section}.{key}: unknown key")
            values[_OPTION_KEYS[key]] = value
            keys[_OPTION_KEYS[key]] = key
        prefix = values.get("command_prefix")
        if prefix is not None and not isinstance(prefix, str):
            key = keys["command_prefix"]
            raise ConfigError(f"{file}: {section}.{key}: must be a string")
        expose = values.get("expose_session_environment", True)
        if not isinstance(expose, bool):
            key = keys["expose_session_environment"]
            raise ConfigError(f"{file}: {section}.{key}: must be a boolean")
        keep = values.get("keep_full_output")
        if keep is not None and not isinstance(keep, bool):
            raise ConfigError(f"{file}: {section}.keep_full_output: must be a boolean")
        limits: dict[str, Any] = {}
        for key in ("full_output_max_bytes", "full_output_session_max_bytes"):
            value = values.get(key, getattr(cls, key))
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{file}: {section}.{key}: must be a positive integer")
            limits[key] = value
        days = values.get("full_output_retention_days", DEFAULT_RETENTION_DAYS)
        if isinstance(days, bool) or not isinstance(days, int | float) or not 0 <= days < math.inf:
            raise ConfigError(
                f"{file}: {section}.full_output_retention_days: must be a number of days (0 or more)"
            )
        return cls(
            command_prefix=prefix or None,
            expose_session_environment=expose,
            keep_full_output=keep,
            full_output_retention_days=float(days),
            **limits,
        )


def _session_env(ctx: Any) -> dict[str, str]:
    """``PI_*`` values from a session context: attributes ``session_id`` (else the id of its
    ``session``, the :class:`~pi_core.SessionContext` a host's tools get: the id checkpoints
    are kept under), ``session_file``, ``model`` (an object with ``provider`` and ``id``, or a
    string), ``provider``, ``thinking_level`` (or ``reasoning_level``); missing ones are
    skipped."""
    values: dict[str, str] = {}
    if ctx is None:
        return values
    session_id = getattr(ctx, "session_id", None) or getattr(
        getattr(ctx, "session", None), "session_id", None
    )
    if session_id:
        values["PI_SESSION_ID"] = str(session_id)
    session_file = getattr(ctx, "session_file", None)
    if session_file:
        values["PI_SESSION_FILE"] = str(session_file)
    model = getattr(ctx, "model", None)
    provider = getattr(ctx, "provider", None) or getattr(model, "provider", None)
    model_id = (
        getattr(model, "id", None) if model is not None and not isinstance(model, str) else model
    )
    if provider:
        values["PI_PROVIDER"] = str(provider)
    if model_id:
        values["PI_MODEL"] = str(model_id)
    level = getattr(ctx, "thinking_level", None) or getattr(ctx, "reasoning_level", None)
    if level:
        values["PI_REASONING_LEVEL"] = str(level)
    return values


def build_spawn_env(
    ctx: Any = None,
    *,
    expose_session_environment: bool = True,
    env_policy: EnvPolicy | None = None,
) -> dict[str, str]:
    """The environment of a command: this process's as ``env_policy`` (default: the default
    ``[env]`` policy) lets it through, without stale ``PI_*`` session variables, with the
    current session's values when ``expose_session_environment``."""
    env = (env_policy or EnvPolicy()).apply(os.environ)
    for name in SESSION_ENV_VARS:
        env.pop(name, None)
    if expose_session_environment:
        env.update(_session_env(ctx))
    return env


def full_output_text(snapshot: OutputSnapshot) -> str:
    """Where the full output is, as the truncation notice ends: ``Full output: PATH`` (Pi's
    text); ``Full output: PATH (cut at SIZE: REASON)`` when the file stops early (``the file
    limit``, ``the session limit``, ``No space left on device``); ``Full output not kept
    (REASON)`` when no file was started (``the session limit``, ``/tmp has less than 5% free``)."""
    path, cut = snapshot.full_output_path, snapshot.full_output_cut
    if cut is None:
        return f"Full output: {path}"
    if path is None:
        return f"Full output not kept ({cut})"
    return f"Full output: {path} (cut at {format_size(snapshot.full_output_bytes)}: {cut})"


def _notice(snapshot: OutputSnapshot) -> str:
    t = snapshot.truncation
    end = t.total_lines
    start = t.total_lines - t.output_lines + 1
    where = full_output_text(snapshot)
    if t.last_line_partial:
        return (
            f"[Showing last {format_size(t.output_bytes)} of line {end} "
            f"(line is {format_size(snapshot.last_line_bytes)}). {where}]"
        )
    if t.truncated_by == "lines":
        return f"[Showing lines {start}-{end} of {t.total_lines}. {where}]"
    return (
        f"[Showing lines {start}-{end} of {t.total_lines} ({format_size(t.max_bytes)} limit). "
        f"{where}]"
    )


def format_output(snapshot: OutputSnapshot, empty_text: str) -> tuple[str, dict[str, Any] | None]:
    """``(text, details)`` of a finished run: the tail or ``empty_text``,
    plus the notice and ``{"truncation", "fullOutputPath"}`` details when truncated (and
    ``"fullOutputCut": {"reason", "bytes"}`` when the file stops early or was not kept)."""
    text = snapshot.content or empty_text
    if not snapshot.truncation.truncated:
        return text, None
    details: dict[str, Any] = {
        "truncation": snapshot.truncation.to_details(),
        "fullOutputPath": snapshot.full_output_path,
    }
    if snapshot.full_output_cut is not None:
        details["fullOutputCut"] = {
            "reason": snapshot.full_output_cut,
            "bytes": snapshot.full_output_bytes,
        }
    return f"{text}\n\n{_notice(snapshot)}", details


class _UpdateThrottle:
    """Streaming updates at most every ``interval`` seconds:
    a chunk emits at once when the last update is ``interval`` old (the first chunk always
    does), otherwise one timer emits at ``last + interval``. ``last`` is when the previous
    update was delivered (after ``emit`` returned), so the receiver sees its updates at least
    ``interval`` apart however long building or handling one took."""

    def __init__(self, emit: Callable[[], None], interval: float) -> None:
        self._emit = emit
        self._interval = interval
        self._last: float | None = None
        self._dirty = False
        self._wake = trio.Event()

    def chunk(self) -> None:
        self._dirty = True
        if self._last is None or trio.current_time() - self._last >= self._interval:
            self.flush()
        else:
            self._wake.set()

    def flush(self) -> None:
        if self._dirty:
            self._dirty = False
            self._emit()
            self._last = trio.current_time()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            if self._last is not None:
                await trio.sleep_until(self._last + self._interval)
            self.flush()


def _validate_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if timeout > MAX_TIMEOUT_SECONDS:
        raise ToolError(f"Invalid timeout: maximum is {js_number(MAX_TIMEOUT_SECONDS)} seconds")
    return timeout


def create_bash_tool_definition(
    cwd: str,
    operations: BashOperations,
    *,
    spawn_hook: Callable[[BashSpawnContext], BashSpawnContext | None] | None = None,
    options: BashToolOptions | Mapping[str, Any] | None = None,
    env_policy: EnvPolicy | None = None,
    full_output_files: FullOutputFiles | None = None,
) -> ToolDefinition:
    """The ``bash`` tool running commands in ``cwd`` through ``operations``: the shell core
    (:func:`create_shell_tool_definition`) with :data:`BASH_SHELL`.

    ``spawn_hook(context) -> context | None`` may replace the command, cwd and env of each run
    (the plugin layer passes the ``pi_bash_spawn_context`` chain). ``options``: a
    :class:`BashToolOptions` or a config table (:meth:`BashToolOptions.from_config`).
    ``env_policy``: the ``[env]`` policy (``EnvPolicy.from_config(config)``; default: the
    default policy). ``full_output_files``: where each full-output file created is recorded
    (the plugin passes its session's, removed at session end; ``None``: the definition's own,
    kept, with the budget of ``options``). The
    definition's ``execute(tool_call_id, params, on_update, ctx)`` reads session values for
    ``PI_*`` from ``ctx`` (see :func:`build_spawn_env`).
    """
    return create_shell_tool_definition(
        cwd,
        operations,
        BASH_SHELL,
        spawn_hook=spawn_hook,
        options=options,
        env_policy=env_policy,
        full_output_files=full_output_files,
    )


def create_shell_tool_definition(
    cwd: str,
    operations: BashOperations,
    shell: ShellToolConfig,
    *,
    spawn_hook: Callable[[BashSpawnContext], BashSpawnContext | None] | None = None,
    options: BashToolOptions | Mapping[str, Any] | None = None,
    env_policy: EnvPolicy | None = None,
    full_output_files: FullOutputFiles | None = None,
    before_call: Callable[[], object] | None = None,
) -> ToolDefinition:
    """A shell tool (bash, powershell) configured by ``shell``, running commands through
    ``operations``; the other arguments as for :func:`create_bash_tool_definition`.
    ``before_call()`` runs first in every call, before the timeout is validated; what it
    raises is the call's error (powershell: ``The powershell tool is only available on
    Windows.``)."""
    opts = options if isinstance(options, BashToolOptions) else BashToolOptions.from_config(options)
    files = full_output_files or FullOutputFiles(
        keep=True,
        max_session_bytes=opts.full_output_session_max_bytes,
        retention_days=opts.full_output_retention_days,
    )

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None, ctx: Any = None
    ) -> AgentToolResult:
        if before_call is not None:
            before_call()
        timeout = _validate_timeout(params.get("timeout"))
        command = params["command"]
        check_process_text("command", command, show=False, escaped_bytes=True)
        if opts.command_prefix:
            command = f"{opts.command_prefix}\n{command}"
        spawn = BashSpawnContext(
            command=command,
            cwd=cwd,
            env=build_spawn_env(
                ctx,
                expose_session_environment=opts.expose_session_environment,
                env_policy=env_policy,
            ),
        )
        if spawn_hook is not None:
            spawn = spawn_hook(spawn) or spawn

        started = time.monotonic()
        output = OutputAccumulator(
            max_lines=opts.max_lines,
            max_bytes=opts.max_bytes,
            temp_file_prefix=shell.temp_file_prefix,
            transform=strip_ansi,
            max_file_bytes=opts.full_output_max_bytes,
            files=files,
        )

        def emit_update() -> None:
            if on_update is None:
                return
            snapshot = output.snapshot()
            details: dict[str, Any] = {}
            if snapshot.truncation.truncated:
                details["truncation"] = snapshot.truncation.to_details()
            if snapshot.full_output_path:
                details["fullOutputPath"] = snapshot.full_output_path
            on_update(
                AgentToolResult(content=[TextContent(text=snapshot.content)], details=details)
            )

        throttle = _UpdateThrottle(emit_update, opts.update_interval)

        def on_data(chunk: bytes) -> None:
            if output.finished:
                return
            output.append(chunk)
            if on_update is not None:
                throttle.chunk()

        if on_update is not None:
            on_update(AgentToolResult(content=[]))
        try:
            try:
                with unwrap_exception_group():
                    async with trio.open_nursery() as nursery:
                        if on_update is not None:
                            nursery.start_soon(throttle.run)
                        try:
                            exit_code = await operations.exec(
                                spawn.command,
                                spawn.cwd,
                                on_data=on_data,
                                env=spawn.env,
                                timeout=timeout,
                            )
                        finally:
                            nursery.cancel_scope.cancel()
            except CommandTimeout:
                snapshot = output.finish()
                throttle.flush()
                text, _details = format_output(snapshot, "")
                seconds = js_number(timeout if timeout is not None else 0)
                raise ToolError(
                    append_status(text, f"Command timed out after {seconds} seconds")
                ) from None
            except trio.Cancelled:
                snapshot = output.finish()
                text, _details = format_output(snapshot, "")
                raise ToolAborted(
                    AgentToolResult(
                        content=[TextContent(text=append_status(text, "Command aborted"))],
                        details={},
                        is_error=True,
                    )
                ) from None
        finally:
            output.close_temp_file()
            if output.full_output_path is not None:
                files.add(output.full_output_path)

        snapshot = output.finish()
        throttle.flush()
        text, details = format_output(snapshot, "(no output)")
        wall_time_seconds = math.floor((time.monotonic() - started) * 10 + 0.5) / 10
        structured: dict[str, Any] | None = None
        if exit_code is not None:
            full_text, full_cut = await trio.to_thread.run_sync(output.read_full_output)
            structured = {"output": full_text, "truncated": full_cut}
            if full_cut and snapshot.full_output_path:
                structured["full_output_path"] = snapshot.full_output_path
            structured["exit_code"] = exit_code
            structured["wall_time_seconds"] = wall_time_seconds
        if exit_code == 0:
            return AgentToolResult(
                content=[TextContent(text=text)], details=details, structured_content=structured
            )
        status = (
            "Command terminated without an exit code"
            if exit_code is None
            else f"Command exited with code {exit_code}"
        )
        return AgentToolResult(
            content=[TextContent(text=append_status(text, status))],
            details=details,
            is_error=True,
            structured_content=structured,
        )

    return ToolDefinition(
        name=shell.name,
        label=shell.label,
        description=shell.description,
        parameters=PARAMETERS,
        execute=execute,
        prompt_snippet=shell.prompt_snippet,
        prompt_guidelines=[SESSION_ENV_GUIDELINE] if opts.expose_session_environment else [],
        prompt_guidelines_for=file_exploration_guidelines,
        render_call=shell.render_call,
        streaming=True,
        verify="text",
        command_argument="command",
        output_schema=BASH_OUTPUT_SCHEMA,
        replay="never",
        mutates="workspace",
        constrained_sampling=SHELL_SAMPLING,
    )


__all__ = [
    "BASH_SHELL",
    "DESCRIPTION",
    "PARAMETERS",
    "SESSION_ENV_VARS",
    "BashToolOptions",
    "ShellToolConfig",
    "append_status",
    "build_spawn_env",
    "create_bash_tool_definition",
    "create_shell_tool_definition",
    "file_exploration_guidelines",
    "format_output",
    "full_output_text",
    "js_number",
    "strip_ansi",
]
