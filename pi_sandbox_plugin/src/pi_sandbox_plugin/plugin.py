"""The ``sandbox`` plugin. Without a ``[sandbox]`` section in the config it changes
nothing: every hook returns ``None``.

* ``pi_register_tools``: registers no tool; validates ``[sandbox]`` when the session is built,
  so a bad table (or a failing ``[sandbox.policy.tests]`` line) is a
  :class:`~pi_core._errors.ConfigError` before any call.
* ``pi_before_tool_call``: the command policy for every tool that declares a
  ``command_argument`` (bash); a denied command is blocked with a reason naming the rule that
  matched. The path policy for every tool that declares ``path_arguments`` (read, write, edit,
  ls, find, grep and any third-party file tool;
  :func:`~pi_sandbox_plugin.backends.before_hook_path_reason`).
* ``pi_bash_operations`` / ``pi_file_operations``: the ``[sandbox] backend``'s objects
  (:func:`~pi_sandbox_plugin.backends.sandbox_session`, kept in the session's
  ``state["sandbox"]``); the file backend is guarded by the path policy when
  ``[sandbox.policy]`` exists. ``None`` (the built-in local ones) otherwise.
* ``pi_session_end``: closes the SSH connection or removes the container the session started.
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
    SessionContext,
    hookimpl,
)

SANDBOX_TABLE = "sandbox"
"""The config table this plugin reads (``pi_sandbox_plugin.config.SANDBOX_TABLE``)."""

STATE_KEY = "sandbox"
"""The session-state entry of the built sandboxes (``pi_sandbox_plugin.backends.STATE_KEY``)."""

# Start-up: every hook returns ``None`` at once without a ``[sandbox]`` table (or without a
# sandbox built in the session's state), before importing anything, so a session with no
# sandbox never imports the policy modules (the bash parser with tree-sitter, pathspec, the
# pydantic models of the config): they are imported by the first hook that needs them.


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
    if SANDBOX_TABLE not in context.config:
        return
    from pi_sandbox_plugin.config import load_session_sandbox_config

    load_session_sandbox_config(context.config, context.cwd)


@hookimpl
def pi_before_tool_call(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
    """Block a call whose command (the tool's declared ``command_argument``) the
    ``[sandbox.policy]`` rules deny, or whose declared path arguments the
    path policy refuses. ``None`` without ``[sandbox]`` or ``[sandbox.policy]``, for other
    tools, and for allowed calls."""
    command_argument = getattr(context.tool, "command_argument", None)
    if command_argument is None:
        config = session_config(context)
        state = _state(context.session)
        if config is None or state is None or not state.get(STATE_KEY):
            return None  # no sandbox session built: no path policy to check here
        from pi_sandbox_plugin.backends import before_hook_path_reason

        reason = before_hook_path_reason(context.tool, context.args, config, state)
        return None if reason is None else BeforeToolCallResult(block=True, reason=reason)
    config = session_config(context)
    if config is None or SANDBOX_TABLE not in config:
        return None
    from pi_sandbox_plugin.config import load_sandbox_config

    sandbox = load_sandbox_config(config)
    if sandbox is None or sandbox.policy is None:
        return None
    args = context.args
    command = (
        args.get(command_argument)
        if isinstance(args, Mapping)
        else getattr(args, command_argument, None)
    )
    if not isinstance(command, str):
        return BeforeToolCallResult(
            block=True, reason="Command blocked by the sandbox command policy: no command string"
        )
    decision = sandbox.policy.command_policy().check(command)
    if decision.allowed:
        return None
    return BeforeToolCallResult(block=True, reason=decision.block_reason())


def _state(session: SessionContext | None) -> dict[str, Any] | None:
    return None if session is None else session.state


@hookimpl
def pi_bash_operations(context: BackendContext) -> BashOperations | None:
    """The bash backend of ``[sandbox] backend`` (``None`` for ``local`` or no ``[sandbox]``),
    kept in the pi session's ``state`` with the file backend."""
    if SANDBOX_TABLE not in context.config:
        return None
    from pi_sandbox_plugin.backends import sandbox_session

    session = sandbox_session(context.config, context.cwd, _state(context.session))
    return None if session is None else session.bash


@hookimpl
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """The file backend of ``[sandbox] backend``, guarded by the path policy when
    ``[sandbox.policy]`` exists (``None`` for ``local`` without a policy, or no ``[sandbox]``)."""
    if SANDBOX_TABLE not in context.config:
        return None
    from pi_sandbox_plugin.backends import sandbox_session

    session = sandbox_session(context.config, context.cwd, _state(context.session))
    return None if session is None else session.files


@hookimpl
async def pi_session_end(context: SessionContext) -> None:
    """Release what the session's backends hold: stop the SSH control master (and remove its
    socket directory), remove a container started from an image."""
    if STATE_KEY not in context.state:
        return
    from pi_sandbox_plugin.backends import close_sandbox_sessions

    await close_sandbox_sessions(context.state)


@hookimpl
def pi_register_commands(register: Callable[[Any], None]) -> None:
    """``pi policy check``."""
    from pi_sandbox_plugin.commands import POLICY_COMMAND

    register(POLICY_COMMAND)
