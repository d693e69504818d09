"""Every hook of pi, grouped by lifecycle phase (``docs/reference/hooks.md``).

Each spec states when it is called, its call mode (how several implementations combine), whether
``async def`` implementations are allowed, its parameters and its return value. Implementations
name only the parameters they use. Async implementations are awaited by pi's own hook caller
(:mod:`pi_core._plugins.caller`), never by pluggy's ``__call__``; no spec uses ``firstresult``.

Call modes:

* **collect**: every implementation is called; returns are ignored (registration hooks).
* **first block**: called in order until one returns a blocking result.
* **chain**: each implementation gets the value the previous one returned (``None``: unchanged).
* **first non-None**: called in order until one returns something other than ``None``.
* **notify**: every implementation is called; an exception is reported on stderr, stops nothing.

The order is pluggy's: later-registered first, ``tryfirst``/``trylast`` honoured. Hook wrappers
(``wrapper=True``, ``hookwrapper=True``) are not supported: pi's caller awaits implementations one
by one, which a wrapper cannot follow, so a plugin declaring one fails to load with a
:class:`~pi_core._errors.PluginError`, as does an ``async def`` implementation of a sync-only hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_core._plugins.markers import hookspec

if TYPE_CHECKING:
    from pi_core._backend_kit.operations import BashOperations, FileOperations
    from pi_core._checkpoints.history import RewindContext
    from pi_core._pipeline.contexts import (
        AfterToolCallContext,
        AfterToolCallResult,
        BeforeToolCallContext,
        BeforeToolCallResult,
    )
    from pi_core._plugins.contexts import (
        BackendContext,
        BashSpawnContext,
        RegisterToolsContext,
    )
    from pi_core._session.context import SessionContext

# ---------------------------------------------------------------------------------------------
# Session set-up: backends, tools and model providers
# ---------------------------------------------------------------------------------------------


@hookspec
def pi_bash_operations(context: BackendContext) -> BashOperations | None:
    """Provide the backend that runs bash commands.

    **When**: once, when the bash tool is created for a session.
    **Call mode**: first non-None; sync implementations only. The built-in local backend is
    ``trylast``, so any other plugin returning a backend wins.
    **Params**: ``context``: :class:`~pi_core._plugins.contexts.BackendContext` (``cwd``, ``config``).
    **Returns**: a :class:`~pi_core._backend_kit.operations.BashOperations`, or ``None`` to pass.
    """


@hookspec
def pi_file_operations(context: BackendContext) -> FileOperations | None:
    """Provide the backend the file tools (read, write, edit, ls, find, grep) use.

    **When**: once, when the file tools are created for a session.
    **Call mode**: first non-None; sync implementations only. The local backend is ``trylast``.
    **Params**: ``context``: :class:`~pi_core._plugins.contexts.BackendContext` (``cwd``, ``config``).
    **Returns**: a :class:`~pi_core._backend_kit.operations.FileOperations`, or ``None`` to pass.
    """


@hookspec
def pi_register_tools(register: Callable[[Any], None], context: RegisterToolsContext) -> None:
    """Register tools for a session.

    **When**: when a session builds its tool registry (``pi tools``, ``pi call``, ``pi replay``,
    ``pi run``, :class:`~pi_core.Agent` from a plugin manager).
    **Call mode**: collect; sync implementations only. A tool name registered twice is a
    :class:`~pi_core._errors.PluginError` naming both plugins.
    **Params**: ``register(tool)`` accepts an ``AgentTool``, a ``ToolDefinition`` or a ``@tool``
    function; ``context``: :class:`~pi_core._plugins.contexts.RegisterToolsContext` (``cwd``,
    ``config``, ``bash_operations``, ``file_operations``).
    **Returns**: nothing.
    """


@hookspec
def pi_register_providers(register: Callable[[Any], None]) -> None:
    """Register model providers.

    **When**: when the CLI or an ``Agent`` resolves ``--model PROVIDER:MODEL``.
    **Call mode**: collect; sync implementations only.
    **Params**: ``register(provider)`` takes an object with a ``name`` (the ``PROVIDER`` part)
    and ``create(model: str, options: dict) -> ModelProvider``.
    **Returns**: nothing.
    """


@hookspec
def pi_register_commands(register: Callable[[Any], None]) -> None:
    """Add subcommands to the ``pi`` command line (``pi policy check`` comes this way).

    **When**: when ``pi`` is given a command that is not one of its own (``plugins``, ``tools``,
    ``call``, ``replay``, ``run``), or no command, or ``--help``, before the command line is
    parsed in full.
    **Call mode**: collect; sync implementations only. A command name registered twice, or one
    that is a built-in command, is a :class:`~pi_core._errors.PluginError` naming the plugins.
    **Params**: ``register(command)`` takes a :class:`~pi_core._plugins.contexts.PluginCommand`
    (``name``, ``help``, ``configure(parser)`` adding arguments to an ``argparse`` parser, and
    ``run(invocation) -> int`` returning the exit status).
    **Returns**: nothing.
    """


# ---------------------------------------------------------------------------------------------
# Session lifecycle
# ---------------------------------------------------------------------------------------------


@hookspec
def pi_session_start(context: SessionContext) -> None:
    """A session starts: set up per-session state.

    **When**: once per session, after its backends and tools are set up
    (``pi_bash_operations``, ``pi_file_operations``, ``pi_register_tools``) and before its first
    tool call, model request or event. Every host calls it: ``pi call``, ``pi replay`` (also
    ``--verify``), ``pi run``, ``pi tools`` and :class:`~pi_core.Agent` (entering
    ``async with agent:``, or its first run).
    **Call mode**: notify; sync or async. An exception is reported on stderr
    (``pi: plugin 'NAME' failed in pi_session_start: Type: message``) and stops nothing: the
    other implementations run and so does the session.
    **Params**: ``context``: :class:`~pi_core._session.context.SessionContext` (``session_id``,
    ``cwd``, ``config``, ``host``, ``state``: a dict for per-session state, kept under the
    plugin's name). The same object is ``context.session`` of the session's backend,
    registration and tool-call contexts, and is passed to ``pi_session_end``.
    **Returns**: ignored.
    """


@hookspec
def pi_session_end(context: SessionContext) -> None:
    """A session ends: release what the session holds (connections, containers, files).

    **When**: once per session whose ``pi_session_start`` was called, after its last tool call
    and event, on every exit path: normal end, an error, an abort, Ctrl-C
    (``KeyboardInterrupt``), a tool or hook raising. It runs shielded from cancellation, so an
    ``await`` in it completes even when the session was cancelled.
    **Call mode**: notify; sync or async. An exception is reported on stderr
    (``pi: plugin 'NAME' failed in pi_session_end: Type: message``) and stops nothing: every
    other implementation still runs.
    **Params**: ``context``: the :class:`~pi_core._session.context.SessionContext` given to
    ``pi_session_start``, with ``reason`` set: ``"completed"``, ``"error"`` (``context.error``
    holds the exception when one ended the session), ``"aborted"`` or ``"interrupted"``.
    **Returns**: ignored.
    """


# ---------------------------------------------------------------------------------------------
# Per tool call, in pipeline order
# ---------------------------------------------------------------------------------------------


@hookspec
def pi_prepare_arguments(tool_name: str, arguments: Any) -> Any:
    """Rewrite a call's raw arguments before schema validation.

    **When**: for every tool call of a registered tool, after the tool's own
    ``prepare_arguments`` and before JSON Schema validation.
    **Call mode**: chain; sync or async. Each implementation receives the arguments the previous
    one produced.
    **Params**: ``tool_name``; ``arguments``: the arguments so far (untrusted JSON: any type).
    **Returns**: new arguments, or ``None`` for unchanged. An exception becomes the call's error
    result (its message is the text).
    """


@hookspec
def pi_before_tool_call(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
    """Inspect a validated call and block it (policies).

    **When**: after validation, before ``execute``; for the model's calls and for nested calls
    (a tool calling a tool through ``current_tool_context().execute_tool``) alike.
    **Call mode**: first block; sync or async. Implementations are called in order until one
    returns ``BeforeToolCallResult(block=True)``; a result that does not block counts as
    ``None``, so no plugin can wave a call past a later policy.
    **Params**: ``context``: :class:`~pi_core._plugins.contexts.BeforeToolCallContext` (``tool_call``,
    ``args``, ``tool``, ``assistant_message``, ``context``, ``parent_tool_call_id``: ``None``
    for a call the model issued, the calling tool's call id for a nested call).
    **Returns**: ``BeforeToolCallResult(block=True, reason=...)`` or ``None``. A block gives the
    error result ``reason`` (``Tool execution was blocked`` without one); an exception gives its
    message.
    """


@hookspec
def pi_approve_tool_call(context: BeforeToolCallContext) -> str | None:
    """Ask a person before a call runs: return why, and the session's approver decides.

    **When**: after ``pi_before_tool_call`` let the call through (no plugin blocked it), before
    ``execute``; for nested calls too.
    **Call mode**: first non-None; sync or async.
    **Params**: ``context``: the :class:`~pi_core._pipeline.contexts.BeforeToolCallContext` the
    before hook got.
    **Returns**: ``None`` (no person needed) or the reason a person must approve the call (one
    line). The session's approver (the terminal of ``pi run``/``pi call``, an
    :class:`~pi_core.Agent`'s ``approval`` callback, the sandbox's ``[sandbox] ask``) answers;
    without one the call is blocked with the reason. The request's ``source`` is the plugin's
    name. A policy that decides inside ``pi_before_tool_call`` asks with
    :func:`~pi_core.request_approval` instead.
    """


@hookspec
def pi_after_tool_call(context: AfterToolCallContext) -> AfterToolCallResult | None:
    """Rewrite a call's result after it ran.

    **When**: after ``execute`` returned or failed, before ``tool_execution_end``. Not called for
    calls that never executed (unknown tool, invalid arguments, blocked).
    **Call mode**: chain; sync or async. Applied in order, field by field; each implementation
    sees ``context.result`` and ``context.is_error`` as left by the previous one.
    **Params**: ``context``: :class:`~pi_core._plugins.contexts.AfterToolCallContext` (the
    before-context's fields, ``parent_tool_call_id`` included, plus ``result`` and ``is_error``).
    **Returns**: ``AfterToolCallResult`` (any of ``content``, ``details``, ``is_error``,
    ``terminate``, ``usage``, ``structured_content``) or ``None``. An exception replaces the whole
    result by an error result with its message.
    """


@hookspec
def pi_bash_spawn_context(context: BashSpawnContext) -> BashSpawnContext | None:
    """Change the command, working directory or environment of a bash command.

    **When**: before each bash command runs.
    **Call mode**: chain; sync implementations only.
    **Params**: ``context``: :class:`~pi_core._plugins.contexts.BashSpawnContext` (``command``, ``cwd``,
    ``env``).
    **Returns**: a modified ``BashSpawnContext``, or ``None`` for unchanged.
    """


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


@hookspec
def pi_checkpoint_exclude(context: SessionContext) -> list[str] | None:
    """Name paths that checkpoints never record nor restore (secrets, caches, build output).

    **When**: once per session that records checkpoints, when they are set up (``pi run``,
    ``pi call``, ``pi replay``, ``pi mcp serve``, or a program's session with checkpoints on).
    **Call mode**: collect; sync implementations only. Every pattern returned is added to
    ``[checkpoints] exclude``, and kept with the session: recovering or rewinding it later
    leaves out the same paths.
    **Params**: ``context``: :class:`~pi_core._session.context.SessionContext` (``cwd``,
    ``config``, ``host``, ``session_id``).
    **Returns**: a list of patterns (a name matches at any depth, ``a/b`` from the workspace
    root, shell globs allowed; ``docs/reference/configuration.md``), or ``None``.
    """


@hookspec
def pi_before_rewind(context: RewindContext) -> str | None:
    """Veto a rewind before it changes anything (``pi rewind``, ``pi_core.rewind``).

    **When**: after the rewind is planned (conflicts found) and before any file changes; not
    for ``--dry-run``.
    **Call mode**: first non-None; sync or async. The first reason returned refuses the
    rewind: ``pi rewind`` prints ``pi rewind: refused by plugin NAME: REASON`` and exits 1.
    **Params**: ``context``: :class:`~pi_core._checkpoints.history.RewindContext`
    (``session_id``, ``cwd``, ``target``, the ``changes`` it would make, its ``conflicts``,
    ``force``).
    **Returns**: a reason (``str``) to refuse, or ``None`` to let it happen.
    """


# ---------------------------------------------------------------------------------------------
# Observation
# ---------------------------------------------------------------------------------------------


@hookspec
def pi_on_event(event: Any) -> None:
    """Observe every agent event (logging, audit, telemetry).

    **When**: for every event, in order, after the loop emitted it.
    **Call mode**: notify; sync or async. An exception is reported on stderr and stops nothing.
    **Params**: ``event``: an event model of :mod:`pi_core._wire.events` (``event.type`` is Pi's name).
    **Returns**: ignored.
    """


HOOK_CALL_MODES: dict[str, tuple[str, bool]] = {
    "pi_bash_operations": ("first_non_none", False),
    "pi_file_operations": ("first_non_none", False),
    "pi_register_tools": ("collect", False),
    "pi_register_providers": ("collect", False),
    "pi_register_commands": ("collect", False),
    "pi_prepare_arguments": ("chain", True),
    "pi_before_tool_call": ("first_block", True),
    "pi_approve_tool_call": ("first_non_none", True),
    "pi_after_tool_call": ("chain", True),
    "pi_bash_spawn_context": ("chain", False),
    "pi_on_event": ("notify", True),
    "pi_session_start": ("notify", True),
    "pi_session_end": ("notify", True),
    "pi_checkpoint_exclude": ("collect", False),
    "pi_before_rewind": ("first_non_none", True),
}
"""Each hook's call mode and whether ``async def`` implementations are allowed."""


__all__ = [
    "HOOK_CALL_MODES",
    "pi_after_tool_call",
    "pi_approve_tool_call",
    "pi_bash_operations",
    "pi_bash_spawn_context",
    "pi_before_rewind",
    "pi_before_tool_call",
    "pi_checkpoint_exclude",
    "pi_file_operations",
    "pi_on_event",
    "pi_prepare_arguments",
    "pi_register_commands",
    "pi_register_providers",
    "pi_register_tools",
    "pi_session_end",
    "pi_session_start",
]
