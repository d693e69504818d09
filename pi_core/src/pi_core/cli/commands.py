"""The commands of ``pi``: ``plugins``, ``tools``, ``call`` (``replay`` lives in
:mod:`pi_core.cli.replay`). Each takes a :class:`CommandContext` and returns the exit status;
unusable input raises :class:`~pi_core.cli.parser.UsageError` (exit 2)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pi_core.abort import Abort
from pi_core.cli.interrupt import run_interruptible
from pi_core.cli.output import write_json, write_json_line
from pi_core.cli.parser import UsageError
from pi_core.config import PiConfig, load_config
from pi_core.errors import PiError, PluginError
from pi_core.loop_config import AgentContext, LoopConfig
from pi_core.messages import AssistantMessage, ToolCall
from pi_core.plugins import PiPluginManager, list_plugins, make_plugin_manager
from pi_core.tools import AgentTool

if TYPE_CHECKING:
    from pi_core.registry import Session
    from pi_core.render import Renderer


@dataclass
class CommandContext:
    """What a command gets: the parsed ``args`` and the output streams. The config and the
    plugin manager are loaded on first use (config first, so a bad file is reported before a
    plugin is imported)."""

    args: argparse.Namespace
    stdout: IO[str]
    stderr: IO[str]
    _renderer: Any = field(default=None, repr=False)

    @cached_property
    def config(self) -> PiConfig:
        """``--config FILE``, else ``pi.toml`` from the working directory upward."""
        return load_config(self.args.config)

    @cached_property
    def plugin_manager(self) -> PiPluginManager:
        """Installed plugins minus ``--no-plugin``, plus ``-p MODULE``."""
        self.config  # noqa: B018 - load (and validate) the config before importing plugins
        return make_plugin_manager(block=self.args.no_plugin, plugins=self.args.plugins)

    @property
    def renderer(self) -> Renderer:
        """Human-readable output on stdout (rich on a terminal)."""
        if self._renderer is None:
            from pi_core.render import Renderer

            self._renderer = Renderer(self.stdout)
        return self._renderer

    def cwd(self) -> str:
        """``--cwd DIR`` as an absolute path (default: the working directory); a missing folder
        is a usage error."""
        given = getattr(self.args, "cwd", None)
        if given is None:
            return os.getcwd()
        path = Path(given)
        if not path.is_dir():
            reason = "not a directory" if path.exists() else "no such directory"
            raise UsageError(f"--cwd {given}: {reason}")
        return os.path.abspath(given)

    def session(self, cwd: str) -> Session:
        """The session (tools and hooks) of ``cwd`` from the loaded plugins."""
        from pi_core.registry import build_session

        pm = self.plugin_manager
        try:
            return build_session(pm, cwd, self.config.data)
        except PiError:
            raise
        except Exception as e:  # a plugin's hook raised while setting the session up
            raise PluginError(
                f"a plugin failed while setting up tools: {type(e).__name__}: {e}"
            ) from e

    def loop_config(self, session: Session) -> LoopConfig:
        """A :class:`LoopConfig` with the ``[pi]`` settings and the session's hooks."""
        config = self.config.apply_to(LoopConfig())
        session.hooks.apply_to(config)
        return config


def run_command(ctx: CommandContext) -> int:
    """Dispatch to the command named in ``ctx.args.command``."""
    if ctx.args.command == "plugins":
        return cmd_plugins(ctx)
    if ctx.args.command == "tools":
        return cmd_tools(ctx)
    if ctx.args.command == "call":
        return cmd_call(ctx)
    if ctx.args.command == "replay":
        args = ctx.args
        if not args.verify and (args.seed_from_reads or args.bash != "run" or args.map_cwd):
            raise UsageError("--seed-from-reads, --bash and --map-cwd need --verify")
        if args.verify:
            from pi_core.cli.verify import cmd_verify

            return cmd_verify(ctx)
        from pi_core.cli.replay import cmd_replay

        return cmd_replay(ctx)
    if ctx.args.command == "run":
        from pi_core.cli.agent_run import cmd_run

        return cmd_run(ctx)
    raise UsageError(f"unknown command {ctx.args.command!r}")  # pragma: no cover - argparse


# ---------------------------------------------------------------------------------------------
# pi plugins
# ---------------------------------------------------------------------------------------------


def cmd_plugins(ctx: CommandContext) -> int:
    """``pi plugins [--json]``: every loaded plugin, in registration order.

    ``--json``: a JSON list of ``{"name", "distribution", "version", "module", "hooks"}``
    (``null`` for an unknown distribution or version).
    """
    infos = [info.to_json_dict() for info in list_plugins(ctx.plugin_manager)]
    if ctx.args.json:
        write_json(ctx.stdout, infos)
    else:
        ctx.renderer.plugins(infos)
    return 0


# ---------------------------------------------------------------------------------------------
# pi tools
# ---------------------------------------------------------------------------------------------


def tool_info(tool: AgentTool) -> dict[str, Any]:
    """``{"name", "label", "description", "parameters", "executionMode"}``: what the model
    sees of a tool (name, description, JSON Schema) plus its label and execution mode."""
    return {
        "name": tool.name,
        "label": tool.label,
        "description": tool.description,
        "parameters": tool.parameters,
        "executionMode": tool.execution_mode,
    }


def cmd_tools(ctx: CommandContext) -> int:
    """``pi tools [--cwd DIR] [--json]``: every registered tool in registration order.

    ``--json``: a JSON list of :func:`tool_info` objects.
    """
    session = ctx.session(ctx.cwd())
    infos = [tool_info(tool) for tool in session.tools]
    if ctx.args.json:
        write_json(ctx.stdout, infos)
    else:
        ctx.renderer.tools(infos)
    return 0


# ---------------------------------------------------------------------------------------------
# pi call
# ---------------------------------------------------------------------------------------------


def parse_arguments_json(text: str) -> Any:
    """The ``ARGS_JSON`` of ``pi call``: any JSON value (the pipeline validates it); invalid
    JSON is a usage error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(
            f"ARGS_JSON is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None


def cmd_call(ctx: CommandContext) -> int:
    """``pi call TOOL ARGS_JSON [--cwd DIR] [--id ID] [--json]``: one call through the whole
    pipeline (prepare, validate, before hooks, execute, after hooks), no events.

    Prints the ToolResultMessage (one compact JSON line with ``--json``; otherwise its content,
    after a call header on a terminal).
    Exit status 1 when it ``isError`` (an unknown tool is the error result
    ``Tool NAME not found``), else 0.
    """
    arguments = parse_arguments_json(ctx.args.arguments)
    cwd = ctx.cwd()
    session = ctx.session(cwd)
    config = ctx.loop_config(session)
    tool_call = ToolCall(id=ctx.args.id, name=ctx.args.tool, arguments=arguments)

    outcomes: list[Any] = []

    async def call(abort: Abort) -> None:
        from pi_core.loop import run_tool_call

        message = AssistantMessage(content=[tool_call], stop_reason="toolUse")
        context = AgentContext(messages=[message], tools=list(session.tools))
        outcomes.append(
            await run_tool_call(tool_call, context, config, assistant_message=message, abort=abort)
        )

    interrupted = run_interruptible(call)
    if not outcomes:
        return 130
    outcome = outcomes[0]
    message = outcome.to_message()
    if ctx.args.json:
        write_json_line(ctx.stdout, message.to_json_dict())
    else:
        ctx.renderer.call_result(message, arguments)
    if interrupted:
        return 130
    return 1 if message.is_error else 0


__all__ = [
    "CommandContext",
    "cmd_call",
    "cmd_plugins",
    "cmd_tools",
    "parse_arguments_json",
    "run_command",
    "tool_info",
]
