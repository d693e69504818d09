"""The commands ``pi plugins``, ``pi tools`` and ``pi call`` (``replay``, ``replay --verify`` and
``run`` have modules of their own). Each takes a :class:`~pi_core._cli.context.CommandContext` and
returns the exit status; unusable input raises :class:`~pi_core._cli.parser.UsageError` (exit 2)."""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any

from pi_core._abort import Abort
from pi_core._checkpoints.store import checkpoint_dir
from pi_core._cli.context import CommandContext
from pi_core._cli.interrupt import run_in_session
from pi_core._cli.output import write_json, write_json_line
from pi_core._cli.parser import UsageError
from pi_core._cli.terminal import sanitise
from pi_core._config import checkpoint_settings
from pi_core._pipeline.config import AgentContext
from pi_core._plugins.manager import list_plugins
from pi_core._tools.definition import AgentTool
from pi_core._tools.exposure import ToolSet
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import AssistantMessage, ToolCall

if TYPE_CHECKING:
    pass


# ---------------------------------------------------------------------------------------------
# pi plugins
# ---------------------------------------------------------------------------------------------


def cmd_plugins(ctx: CommandContext) -> int:
    """``pi plugins [--json]``: every loaded plugin, in registration order; ``pi plugins
    install|uninstall|new ...``: :mod:`~pi_core._cli.plugin_admin`.

    ``--json``: a JSON list of ``{"name", "distribution", "version", "module", "hooks"}``
    (``null`` for an unknown distribution or version).
    """
    action = getattr(ctx.args, "plugins_action", None)
    if action is not None:  # these load no plugin: a broken one can be uninstalled
        from pi_core._cli.plugin_admin import cmd_install, cmd_new, cmd_uninstall

        if ctx.args.json:
            raise UsageError(f"pi plugins {action}: --json lists the plugins; it takes no action")
        run = {"install": cmd_install, "uninstall": cmd_uninstall, "new": cmd_new}[action]
        return run(ctx)
    infos = [info.to_json_dict() for info in list_plugins(ctx.plugin_manager)]
    if ctx.args.json:
        write_json(ctx.stdout, infos)
    else:
        ctx.renderer.plugins(infos)
    return 0


# ---------------------------------------------------------------------------------------------
# pi tools
# ---------------------------------------------------------------------------------------------


CALLERS = ("model", "nested calls", "pi call")
"""Where a call can come from, as ``pi tools`` names it (``callableBy``)."""


def callers(tool_set: ToolSet, name: str) -> list[str]:
    """Where the registered tool ``name`` can be called from: ``model`` while it is active
    (declared), ``nested calls`` while it is in the callable set (a codemode script,
    ``ctx.execute_tool``), ``pi call`` always (it reaches every registered tool)."""
    found = {
        "model": tool_set.is_active(name),
        "nested calls": tool_set.is_callable(name),
        "pi call": True,
    }
    return [caller for caller in CALLERS if found[caller]]


def tool_info(tool: AgentTool, tool_set: ToolSet | None = None) -> dict[str, Any]:
    """``{"name", "label", "description", "parameters", "executionMode", "exposure",
    "active", "callable", "callableBy", "namespace"?}``: what the model sees of a tool (name,
    description, JSON Schema) plus its label, execution mode, exposure, whether it is in the
    session's active and callable (by nested calls) sets (``tool_set``; without one: active
    and callable unless hidden/model-only), where it can be called from (:func:`callers`);
    ``namespace`` only for a tool that has one (an MCP server's tools: ``mcp__<server>``)."""
    if tool_set is None:
        tool_set = ToolSet([tool])
    info = {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": tool.parameters,
        "executionMode": tool.execution_mode,
        "exposure": tool_set.exposure(tool.name),
        "active": tool_set.is_active(tool.name),
        "callable": tool_set.is_callable(tool.name),
        "callableBy": callers(tool_set, tool.name),
    }
    if tool.namespace is not None:  # the group the tool comes from, e.g. an MCP server's
        info["namespace"] = tool.namespace.name
    return info


def cmd_tools(ctx: CommandContext) -> int:
    """``pi tools [--cwd DIR] [--json]``: every registered tool in registration order, with
    its exposure and whether it is active and callable (``[tools.NAME] exposure`` applied).

    ``--json``: a JSON list of :func:`tool_info` objects.
    """
    session = ctx.session(ctx.cwd(), "tools")
    infos = [tool_info(tool, session.tool_set) for tool in session.tools]

    async def nothing(abort: Abort) -> None:
        pass

    run_in_session(session, nothing)  # the backends may hold something to release
    if ctx.args.json:
        write_json(ctx.stdout, infos)
    else:
        ctx.renderer.tools(infos)
    return 0


# ---------------------------------------------------------------------------------------------
# pi config
# ---------------------------------------------------------------------------------------------


def cmd_config(ctx: CommandContext) -> int:
    """``pi config [--cwd DIR] [--json]``: the configuration in effect for a session in DIR: the
    session's working directory, the config file (found from DIR, or ``--config``), whether
    checkpoints are recorded and where, and every file pi loaded for the session (the
    session's :attr:`~pi_core.SessionContext.protected_files`: the config file, the policy
    files and hook scripts a plugin loaded, the audit log), each with what it is.

    ``--json``: ``{"cwd", "config" (null: none), "checkpoints": {"enabled", "dir"},
    "files": [{"path", "what", "hidden"}]}``.
    """
    cwd = ctx.cwd()
    session = ctx.session(cwd, "tools")

    async def nothing(abort: Abort) -> None:
        pass

    run_in_session(session, nothing)  # the backends may hold something to release
    path = ctx.config.path
    settings = checkpoint_settings(ctx.config.data)
    protected = session.session_context.protected_files.values()
    files = [{"path": p.path, "what": p.what, "hidden": p.hidden} for p in protected]
    if ctx.args.json:
        write_json(
            ctx.stdout,
            {
                "cwd": cwd,
                "config": str(path) if path else None,
                "checkpoints": {"enabled": settings.enabled, "dir": checkpoint_dir(settings)},
                "files": files,
            },
        )
        return 0
    lines = [f"cwd: {cwd}", f"config: {path if path else 'none (the defaults)'}"]
    if settings.enabled:
        lines.append(f"checkpoints: on, in {checkpoint_dir(settings)}")
    else:
        lines.append("checkpoints: off ([checkpoints] enabled = false)")
    lines.append("files pi loaded:" if files else "files pi loaded: (none)")
    for file in files:
        hidden = " (hidden from the agent)" if file["hidden"] else ""
        lines.append(f"  {file['path']}: {file['what']}{hidden}")
    ctx.stdout.write(sanitise("\n".join(lines) + "\n"))
    return 0


# ---------------------------------------------------------------------------------------------
# pi call
# ---------------------------------------------------------------------------------------------


MAX_ARGS_JSON_BYTES = 64 * 1024 * 1024
"""The most ``pi call`` reads of an ARGS_JSON file or of stdin (64 MiB)."""


def parse_arguments_json(text: str, source: str = "ARGS_JSON") -> Any:
    """The ``ARGS_JSON`` of ``pi call``: any JSON value (the pipeline validates it); invalid
    JSON is a usage error (``SOURCE is not valid JSON: ...``)."""
    try:
        return parse_json(text)
    except json.JSONDecodeError as e:
        raise UsageError(
            f"{source} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise UsageError(f"{source} is nested too deeply to parse") from None


def read_arguments_json(argument: str, stdin: IO[bytes] | None) -> Any:
    """``pi call``'s ARGS_JSON: the JSON text itself, ``-`` (read from ``stdin``, default the
    process's standard input) or ``@FILE`` (read from FILE). Each is UTF-8 JSON of at most
    :data:`MAX_ARGS_JSON_BYTES`; anything else is a usage error of one line."""
    if argument == "-":
        source = "ARGS_JSON - (stdin)"
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read(MAX_ARGS_JSON_BYTES + 1)
    elif argument.startswith("@"):
        source = f"ARGS_JSON {argument}"
        name = argument[1:]
        if not name:
            raise UsageError(f"{source}: a file name must follow '@'")
        try:
            with open(name, "rb") as file:
                data = file.read(MAX_ARGS_JSON_BYTES + 1)
        except OSError as e:
            raise UsageError(f"{source}: cannot read: {e.strerror or e}") from None
    else:
        return parse_arguments_json(argument)
    if len(data) > MAX_ARGS_JSON_BYTES:
        raise UsageError(f"{source}: larger than {MAX_ARGS_JSON_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not valid UTF-8") from None
    return parse_arguments_json(text, source)


def cmd_call(ctx: CommandContext) -> int:
    """``pi call TOOL ARGS_JSON [--cwd DIR] [--id ID] [--json]``: one call through the whole
    pipeline (prepare, validate, before hooks, execute, after hooks), no events; its nested calls
    run (their record is the message's ``nestedCalls``). ARGS_JSON may
    be ``-`` (JSON on stdin) or ``@FILE`` (:func:`read_arguments_json`).

    Prints the ToolResultMessage (one compact JSON line with ``--json``; otherwise its content,
    after a call header on a terminal).
    Exit status 1 when it ``isError`` (an unknown tool is the error result
    ``Tool NAME not found``), else 0.
    """
    arguments = read_arguments_json(ctx.args.arguments, ctx.stdin)
    cwd = ctx.cwd()
    session = ctx.session(cwd, "call")
    config = ctx.loop_config(session)
    tool_call = ToolCall(id=ctx.args.id, name=ctx.args.tool, arguments=arguments)

    outcomes: list[Any] = []
    records: list[tuple[Any, Any]] = []
    # no events for plugins; telemetry, when on, sees the call's (and its nested calls') start
    # and end to make their spans
    telemetry = ctx.plugin_manager.get_plugin("pi-telemetry")
    observe: Any = telemetry.pi_on_event if telemetry is not None else (lambda event: None)

    async def call(abort: Abort) -> None:
        from pi_core._pipeline.nested import NestedCallRunner
        from pi_core._pipeline.pipeline import run_tool_call
        from pi_core._wire.events import ToolExecutionEndEvent, ToolExecutionStartEvent

        message = AssistantMessage(content=[tool_call], stop_reason="toolUse")
        context = AgentContext(messages=[message], tools=list(session.tools))
        # the call's nested calls (a codemode script's tool calls) run; their events are dropped
        runner = NestedCallRunner(context, config, abort)
        tool_context = runner.root_context(tool_call.id, observe)
        observe(
            ToolExecutionStartEvent(
                tool_call_id=tool_call.id, tool_name=tool_call.name, args=arguments
            )
        )
        outcome = await run_tool_call(
            tool_call,
            context,
            config,
            assistant_message=message,
            abort=abort,
            tool_context=tool_context,
        )
        outcomes.append(outcome)
        observe(
            ToolExecutionEndEvent(
                tool_call_id=tool_call.id,
                tool_name=tool_call.name,
                result=outcome.result,
                is_error=outcome.is_error,
            )
        )
        records.append(runner.take_record(tool_call.id))

    interrupted = run_in_session(session, call)
    if not outcomes:
        return 130
    outcome = outcomes[0]
    message = outcome.to_message()
    if records:  # the nested calls' record and usage, as the loop attaches them
        from pi_core._pipeline.nested import combine_usage

        record, usage = records[0]
        if record is not None:
            message.nested_calls = record
        if usage is not None:
            message.usage = usage if message.usage is None else combine_usage(message.usage, usage)
    if ctx.args.json:
        write_json_line(ctx.stdout, message.to_json_dict())
    else:
        by_name = {t.name: t for t in session.tools}
        ctx.renderer.call_result(message, arguments, by_name.get(tool_call.name))
    if interrupted:
        return 130
    return 1 if message.is_error else 0


__all__ = [
    "CALLERS",
    "callers",
    "cmd_call",
    "cmd_plugins",
    "cmd_tools",
    "parse_arguments_json",
    "read_arguments_json",
    "tool_info",
]
