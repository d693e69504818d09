"""The ``sandbox`` plugin. Without a ``[sandbox]`` section in the config it changes
nothing: every hook returns ``None``.

* ``pi_register_tools``: registers no tool; validates ``[sandbox]`` when the session is built,
  so a bad table (or a failing ``[sandbox.policy.tests]`` line) is a
  :class:`~pi_core._errors.ConfigError` before any call.
* ``pi_before_tool_call``: the command policy for every tool that declares a
  ``command_argument`` (bash); a denied command is blocked with a reason naming the rule that
  matched. The path policy for every tool that declares ``path_arguments`` (read, write, edit,
  ls, find, grep and any third-party file tool;
  :func:`~pi_sandbox_plugin.backends.wiring.before_hook_path_reason`).
* ``pi_bash_operations`` / ``pi_file_operations``: the ``[sandbox] backend``'s objects
  (:func:`~pi_sandbox_plugin.backends.wiring.sandbox_session`, kept in the session's
  ``state["sandbox"]``); the file backend is guarded by the path policy when
  ``[sandbox.policy]`` exists, and (``local``, ``bwrap``, ``container``) keeps the session's
  ``protected_files`` (pi's own files) from the agent in any case.
* ``pi_session_end``: closes the SSH connection or removes the container the session started.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pi_core import (
    AfterToolCallContext,
    AfterToolCallResult,
    AuditLog,
    BackendContext,
    BashOperations,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ConfigError,
    FileOperations,
    RegisterToolsContext,
    SessionContext,
    TextContent,
    config_file,
    hookimpl,
    request_approval,
)

if TYPE_CHECKING:
    from pi_sandbox_plugin.settings.config import AuditConfig

SANDBOX_TABLE = "sandbox"
"""The config table this plugin reads (``pi_sandbox_plugin.settings.config.SANDBOX_TABLE``)."""

STATE_KEY = "sandbox"
"""The session-state entry of the built sandboxes
(``pi_sandbox_plugin.backends.wiring.STATE_KEY``)."""

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
    """Validate ``[sandbox]`` at session set-up (raises ``ConfigError``); registers nothing.
    Also loads the Codex rule files and Claude Code hooks (a bad file or a failing example is a
    ``ConfigError`` here, before any call) and adds them (and the hook scripts they name) to the
    session's ``protected_files``, opens ``[sandbox.audit] path`` unless the host
    opened an audit log, and makes ``[sandbox] ask = "allow"`` the session's approver when the
    host has none (no terminal, no callback)."""
    if SANDBOX_TABLE not in context.config:
        return
    from pi_sandbox_plugin.settings.config import load_session_sandbox_config

    sandbox = load_session_sandbox_config(context.config, context.cwd)
    session = getattr(context, "session", None)
    if sandbox is None or session is None:
        return
    if sandbox.codex_rules is not None or sandbox.claude_hooks is not None:
        from pi_sandbox_plugin.interop.policy_sources import protect_policy_files, session_policies

        loaded = session_policies(sandbox, context.cwd, session.state, config_file(context.config))
        protect_policy_files(sandbox, context.cwd, loaded, session)
    if sandbox.ask == "allow":
        session.set_approver(_allow_when_nobody_is_asked, replace=False)
    if sandbox.audit is not None:
        _open_audit(session, sandbox.audit, context)


def _open_audit(session: SessionContext, audit: AuditConfig, context: RegisterToolsContext) -> None:
    """Open ``[sandbox.audit] path`` unless the host opened a log (``--audit``, which wins);
    ``on_error`` applies to the session's log either way. A path that cannot be an audit log
    (not a regular file: ``/dev/full``, a directory; a missing parent; no permission) is a
    ``ConfigError``: ``FILE: sandbox.audit.path: cannot open 'PATH': REASON``."""
    if session.audit is not None:
        session.audit.on_error = audit.on_error
        return
    try:
        AuditLog.check_path(audit.path, context.cwd)
        session.open_audit(audit.path, on_error=audit.on_error)
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError(
            f"{config_file(context.config)}: {SANDBOX_TABLE}.audit.path: cannot open "
            f"{audit.path!r}: {reason}"
        ) from None


def _allow_when_nobody_is_asked(request: Any) -> str:
    """``[sandbox] ask = "allow"``: the approver of a session nobody can be asked in."""
    return "allow"


@hookimpl
def pi_before_tool_call(
    context: BeforeToolCallContext,
) -> Awaitable[BeforeToolCallResult | None] | None:
    """Judge a call with every configured source (:mod:`pi_sandbox_plugin.interop.policy_sources`):
    Claude Code ``PreToolUse`` hooks, Codex rules and the command policy for tools that declare
    a ``command_argument`` (bash), the path policy for tools that declare ``path_arguments``.
    A ``deny`` blocks with the deciding source's reason; an ``ask`` goes to
    :func:`pi_core.request_approval`; an allow names its source for the audit log. ``None`` at
    once (no coroutine) without ``[sandbox]``."""
    config = session_config(context)
    if config is None or SANDBOX_TABLE not in config:
        return None
    return _before_tool_call(context, config)


async def _before_tool_call(
    context: BeforeToolCallContext, config: Mapping[str, Any]
) -> BeforeToolCallResult | None:
    from pi_sandbox_plugin.settings.config import load_sandbox_config

    sandbox = load_sandbox_config(config)
    if sandbox is None:
        return None
    state = _state(context.session)
    tool = context.tool
    path_reason = None
    if getattr(tool, "path_arguments", ()) and state is not None and state.get(STATE_KEY):
        from pi_sandbox_plugin.backends.wiring import before_hook_path_reason

        def path_reason(args: Any) -> str | None:
            return before_hook_path_reason(tool, args, config, state)

    has_command = getattr(tool, "command_argument", None) is not None
    if (
        sandbox.claude_hooks is None
        and sandbox.codex_rules is None
        and path_reason is None
        and (sandbox.policy is None or not has_command)
    ):
        return None
    from pi_sandbox_plugin.interop.policy_sources import (
        describe_sources,
        judge_call,
        session_policies,
    )

    session = context.session
    cwd = session.cwd if session is not None else os.getcwd()
    policies = session_policies(sandbox, cwd, state, config_file(config))
    verdict, _ = await judge_call(
        tool=tool,
        args=context.args,
        tool_call_id=context.tool_call.id,
        sandbox=sandbox,
        policies=policies,
        cwd=cwd,
        session_id=session.session_id if session is not None else "",
        replace_args=context.replace_args,
        path_reason=path_reason,
    )
    decided = verdict.decided_by
    detail = describe_sources(verdict)
    if verdict.decision == "deny" and decided is not None:
        reason = "\n\n".join([decided.reason, *verdict.additional_context])
        return BeforeToolCallResult(block=True, reason=reason, source=decided.source, detail=detail)
    if verdict.decision == "ask" and decided is not None:
        outcome = await request_approval(context, decided.reason, source=decided.source)
        if not outcome.allowed:
            return BeforeToolCallResult(
                block=True, reason=outcome.block_reason, source=decided.source, detail=detail
            )
    if verdict.additional_context and state is not None:
        state.setdefault(CONTEXT_STATE_KEY, {})[context.tool_call.id] = list(
            verdict.additional_context
        )
    if decided is None:
        return None
    return BeforeToolCallResult(
        block=False, reason=decided.reason, source=decided.source, detail=detail
    )


CONTEXT_STATE_KEY = "sandbox.additional_context"
"""Session state: the ``additionalContext`` of PreToolUse hooks by tool call id, until the
call's result gets it."""


@hookimpl
def pi_after_tool_call(
    context: AfterToolCallContext,
) -> Awaitable[AfterToolCallResult | None] | None:
    """Claude Code ``PostToolUse`` hooks and the ``additionalContext`` of the ``PreToolUse``
    hooks: appended to the result for the model; a hook's block marks the result an error with
    its reason; an ``updatedToolOutput`` replaces the text. ``None`` at once without
    ``[sandbox]``."""
    config = session_config(context)
    if config is None or SANDBOX_TABLE not in config:
        return None
    return _after_tool_call(context)


async def _after_tool_call(context: AfterToolCallContext) -> AfterToolCallResult | None:
    state = _state(context.session)
    extra: list[str] = []
    if state is not None and CONTEXT_STATE_KEY in state:
        extra = state[CONTEXT_STATE_KEY].pop(context.tool_call.id, [])
    config = session_config(context)
    sandbox = None
    if config is not None and SANDBOX_TABLE in config:
        from pi_sandbox_plugin.settings.config import load_sandbox_config

        sandbox = load_sandbox_config(config)
    if (sandbox is None or sandbox.claude_hooks is None) and not extra:
        return None
    result = context.result
    content = list(result.content) if result is not None else []
    is_error = context.is_error
    source = reason = None
    detail: dict[str, Any] | None = None
    changed = bool(extra)
    if sandbox is not None and sandbox.claude_hooks is not None:
        from pi_sandbox_plugin.interop.claude_hooks import run_post_tool_use
        from pi_sandbox_plugin.interop.policy_sources import session_policies

        session = context.session
        cwd = session.cwd if session is not None else os.getcwd()
        policies = session_policies(sandbox, cwd, state, config_file(config or {}))
        outcome = await run_post_tool_use(
            policies.claude_hooks,
            tool_name=context.tool.name,
            args=context.args,
            tool_call_id=context.tool_call.id,
            session_id=session.session_id if session is not None else "",
            cwd=cwd,
            result_text=_text_of(content),
            is_error=is_error,
            on_error=sandbox.claude_hooks.on_error,
        )
        if outcome.runs:
            detail = {"hooks": [run.to_json_dict() for run in outcome.runs]}
            source = f"claude hook {outcome.runs[0].command}"
        if outcome.output_rejected is not None and sandbox.claude_hooks.on_error == "deny":
            # a hook meant to replace the output (a redaction) and said it wrongly: the
            # original must not reach the model (fail closed, as for any failing hook)
            why = outcome.output_rejected.removesuffix(" (original output kept)")
            content = [TextContent(text=f"Blocked by PostToolUse hook: {why} (output withheld)")]
            is_error = True
            changed = True
            reason = why
        elif outcome.replacement_text is not None:
            content = [TextContent(text=outcome.replacement_text)]
            changed = True
            reason = "PostToolUse hook replaced the tool output"
        if outcome.block_reason is not None:
            content.append(TextContent(text=outcome.block_reason))
            is_error = True
            changed = True
            reason = outcome.block_reason
        extra.extend(outcome.additional_context)
        changed = changed or bool(outcome.additional_context)
    if not changed:
        return None
    content.extend(TextContent(text=text) for text in extra)
    if reason is None and extra:
        reason = "hook added context to the tool result"
    return AfterToolCallResult(
        content=content,
        is_error=is_error if is_error != context.is_error else None,
        source=source,
        reason=reason,
        detail=detail,
    )


def _text_of(content: list[Any]) -> str:
    return "\n".join(
        getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text"
    )


def _state(session: SessionContext | None) -> dict[str, Any] | None:
    return None if session is None else session.state


def _protected(session: SessionContext | None) -> dict[str, Any] | None:
    return None if session is None else session.protected_files


@hookimpl
def pi_bash_operations(context: BackendContext) -> BashOperations | None:
    """The bash backend of ``[sandbox] backend`` (``None`` for ``local`` or no ``[sandbox]``),
    kept in the pi session's ``state`` with the file backend."""
    if SANDBOX_TABLE not in context.config:
        return None
    from pi_sandbox_plugin.backends.wiring import sandbox_session

    session = sandbox_session(
        context.config, context.cwd, _state(context.session), _protected(context.session)
    )
    return None if session is None else session.bash


@hookimpl
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """The file backend of ``[sandbox] backend``, guarded by the path policy when
    ``[sandbox.policy]`` exists, and keeping pi's own files (the session's
    ``protected_files``) from the agent (``None`` without ``[sandbox]``; for ``local`` without
    a policy and without a session, whose files there is no knowing)."""
    if SANDBOX_TABLE not in context.config:
        return None
    from pi_sandbox_plugin.backends.wiring import sandbox_session

    session = sandbox_session(
        context.config, context.cwd, _state(context.session), _protected(context.session)
    )
    return None if session is None else session.files


@hookimpl
def pi_checkpoint_exclude(context: SessionContext) -> list[str] | None:
    """The ``deny_paths`` of ``[sandbox.policy]`` as checkpoint exclusions: checkpoints never
    read, store nor restore a file the policy denies to the agent."""
    if SANDBOX_TABLE not in context.config:
        return None
    from pi_sandbox_plugin.backends.wiring import sandbox_session

    session = sandbox_session(context.config, context.cwd, context.state)
    if session is None or session.policy is None:
        return None
    return session.policy.checkpoint_exclude()


@hookimpl
async def pi_session_end(context: SessionContext) -> None:
    """Release what the session's backends hold: stop the SSH control master (and remove its
    socket directory), remove a container started from an image, release a Ray actor."""
    if STATE_KEY not in context.state:
        return
    from pi_sandbox_plugin.backends.wiring import close_sandbox_sessions

    await close_sandbox_sessions(context.state)


@hookimpl
def pi_register_commands(register: Callable[[Any], None]) -> None:
    """``pi policy check``."""
    from pi_sandbox_plugin.cli.commands import POLICY_COMMAND

    register(POLICY_COMMAND)
