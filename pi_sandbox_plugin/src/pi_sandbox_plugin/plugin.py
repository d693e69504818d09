"""The ``sandbox`` plugin (issue 6). Without a ``[sandbox]`` section in the config it changes
nothing: every hook returns ``None``.

* ``pi_register_tools``: registers no tool; validates ``[sandbox]`` when the session is built,
  so a bad table (or a failing ``[sandbox.policy.tests]`` line) is a
  :class:`~pi_core._errors.ConfigError` before any call.
* ``pi_before_tool_call``: the command policy for the ``bash`` tool; a denied command is
  blocked with a reason naming the rule that matched. The path policy for read, write, edit,
  ls, find and grep (:func:`~pi_sandbox_plugin.backends.before_hook_path_reason`).
* ``pi_bash_operations`` / ``pi_file_operations``: the ``[sandbox] backend``'s objects
  (:func:`~pi_sandbox_plugin.backends.sandbox_session`); the file backend is guarded by the path
  policy when ``[sandbox.policy]`` exists. ``None`` (the built-in local ones) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pi_core import (
    BackendContext,
    BashOperations,
    BeforeToolCallContext,
    BeforeToolCallResult,
    FileOperations,
    RegisterToolsContext,
    hookimpl,
)
from pi_sandbox_plugin.backends import before_hook_path_reason, sandbox_session
from pi_sandbox_plugin.commands import POLICY_COMMAND
from pi_sandbox_plugin.config import load_sandbox_config, load_session_sandbox_config

BASH_TOOL = "bash"


def session_config(context: BeforeToolCallContext) -> Mapping[str, Any] | None:
    """The session's loaded config for a tool call: ``context.config`` when the loop fills it,
    else a ``config`` attribute of the loop ``context``; ``None`` when neither is known."""
    for holder in (context, context.context):
        config = getattr(holder, "config", None)
        if isinstance(config, Mapping) and config:
            return config
    return None


@hookimpl
def pi_register_tools(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
    """Validate ``[sandbox]`` at session set-up (raises ``ConfigError``); registers nothing."""
    load_session_sandbox_config(context.config, context.cwd)


@hookimpl
def pi_before_tool_call(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
    """Block a ``bash`` call whose command the ``[sandbox.policy]`` rules deny (issue 6 items
    1-2). ``None`` for other tools, without ``[sandbox]`` or ``[sandbox.policy]``, and for
    allowed commands."""
    if context.tool.name != BASH_TOOL:
        config = session_config(context)
        reason = (
            None
            if config is None
            else before_hook_path_reason(context.tool.name, context.args, config)
        )
        return None if reason is None else BeforeToolCallResult(block=True, reason=reason)
    config = session_config(context)
    if config is None:
        return None
    sandbox = load_sandbox_config(config)
    if sandbox is None or sandbox.policy is None:
        return None
    args = context.args
    command = args.get("command") if isinstance(args, Mapping) else getattr(args, "command", None)
    if not isinstance(command, str):
        return BeforeToolCallResult(
            block=True, reason="Command blocked by the sandbox command policy: no command string"
        )
    decision = sandbox.policy.command_policy().check(command)
    if decision.allowed:
        return None
    return BeforeToolCallResult(block=True, reason=decision.block_reason())


@hookimpl
def pi_bash_operations(context: BackendContext) -> BashOperations | None:
    """The bash backend of ``[sandbox] backend`` (``None`` for ``local`` or no ``[sandbox]``)."""
    session = sandbox_session(context.config, context.cwd)
    return None if session is None else session.bash


@hookimpl
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """The file backend of ``[sandbox] backend``, guarded by the path policy when
    ``[sandbox.policy]`` exists (``None`` for ``local`` without a policy, or no ``[sandbox]``)."""
    session = sandbox_session(context.config, context.cwd)
    return None if session is None else session.files


@hookimpl
def pi_register_commands(register: Callable[[Any], None]) -> None:
    """``pi policy check``."""
    register(POLICY_COMMAND)
