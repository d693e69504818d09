"""The typed facade over pi's hooks (tox 4's ``hooks.before_tool_call(...)``).

:class:`PluginHooks` is the only code that touches ``pm.hook``: the rest of pi calls
``hooks.before_tool_call(ctx)`` and never sees pluggy. Each method applies its hook's call mode
(:data:`~pi_core.hookspecs.HOOK_CALL_MODES`) through :mod:`pi_core._plugins.caller`, checks what
plugins return, and raises :class:`~pi_core._errors.PluginError` naming the plugin when a return
has the wrong type. :meth:`PluginHooks.apply_to` turns the per-call hooks into the plain
callbacks of :class:`~pi_core._loop.config.LoopConfig`, so the loop module never imports pluggy.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any

import pluggy
import trio
from pluggy import HookImpl

from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._checkpoints.history import RewindContext, RewindRefused
from pi_core._errors import PluginError
from pi_core._loop.config import LoopConfig
from pi_core._pipeline.contexts import (
    AUDIT_FIELDS,
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
    apply_after_tool_call_result,
)
from pi_core._pipeline.pipeline import error_text
from pi_core._plugins import caller as hook_caller
from pi_core._plugins.contexts import (
    BackendContext,
    BashSpawnContext,
    PluginCommand,
    RegisterToolsContext,
)
from pi_core._session.audit import cap_arguments, utc_now
from pi_core._session.context import SessionContext
from pi_core._tools.definition import AgentTool, to_agent_tool
from pi_core._wire.messages import AgentToolResult, TextContent

_AFTER_FIELDS = tuple(
    f.name for f in dataclasses.fields(AfterToolCallResult) if f.name not in AUDIT_FIELDS
)


class PluginHooks:
    """pi's hooks on ``pm`` as typed methods, one per hookspec.

    Implementations are looked up at each call, so plugins registered later take part.
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        config: dict[str, Any] | None = None,
        session: SessionContext | None = None,
    ) -> None:
        self.pm = pm
        self.config: dict[str, Any] = {} if config is None else config
        """The session's loaded config; :meth:`before_tool_call` gives it to contexts that
        have none (``context.config``)."""
        self.session = session
        """The session these hooks serve (``build_session`` sets it); the before and after
        hooks get it as ``context.session`` when theirs is unset."""

    @property
    def _observe(self) -> hook_caller.Observe | None:
        """The observers of ``pm`` (``pm.hook_observers``: the ``PI_DEBUG_HOOKS`` tracer, a
        ``HookRecorder``) as one function, or ``None`` when there are none."""
        observers = getattr(self.pm, "hook_observers", None)
        if not observers:
            return None

        def observe(call: hook_caller.HookCall) -> None:
            for observer in list(observers):
                observer(call)

        return observe

    def _wrong_type(self, plugin: str, hook: str, value: Any, expected: str) -> PluginError:
        return PluginError(
            f"plugin {plugin!r} returned {value!r} from {hook}; expected {expected} or None"
        )

    # --- session set-up -----------------------------------------------------------------------

    def register_tools(self, context: RegisterToolsContext) -> list[AgentTool]:
        """``pi_register_tools`` (collect, sync): the tools every plugin registers, in call order.

        ``register(obj)`` accepts an ``AgentTool``, a ``ToolDefinition`` (wrapped with
        ``wrap_tool_definition(obj, context)``) or a ``@tool`` function. Raises ``PluginError``
        for anything else (naming the plugin), for a tool name registered twice (naming both
        plugins) and for ``register`` called after the hook returned.
        """
        owners: dict[str, str] = {}
        tools: list[AgentTool] = []
        open_ = True

        def registrar(impl: HookImpl) -> dict[str, Any]:
            plugin = impl.plugin_name

            def register(obj: Any) -> None:
                if not open_:
                    raise PluginError(
                        f"plugin {plugin!r} called register after pi_register_tools returned"
                    )
                try:
                    agent_tool = to_agent_tool(obj, context)
                except TypeError:
                    raise PluginError(
                        f"plugin {plugin!r} registered {obj!r}, which is not a tool: expected "
                        "an AgentTool, a ToolDefinition or a function decorated with @tool"
                    ) from None
                owner = owners.get(agent_tool.name)
                if owner == plugin:
                    raise PluginError(
                        f"tool {agent_tool.name!r} is registered twice by plugin {plugin!r}"
                    )
                if owner is not None:
                    raise PluginError(
                        f"tool {agent_tool.name!r} is registered by plugin {owner!r} "
                        f"and by plugin {plugin!r}"
                    )
                owners[agent_tool.name] = plugin
                tools.append(agent_tool)

            return {"register": register}

        try:
            hook_caller.call_collect(
                self.pm.hook.pi_register_tools,
                {"context": context},
                extra=registrar,
                observe=self._observe,
            )
        finally:
            open_ = False
        return tools

    def register_commands(self, reserved: Iterable[str] = ()) -> dict[str, PluginCommand]:
        """``pi_register_commands`` (collect, sync): plugin subcommands by name.

        Raises ``PluginError`` for an object that is not a
        :class:`~pi_core._plugins.contexts.PluginCommand`, for a name in ``reserved`` (the built-in
        commands) and for a name registered twice (naming both plugins).
        """
        owners: dict[str, str] = {}
        commands: dict[str, PluginCommand] = {}
        taken = set(reserved)

        def registrar(impl: HookImpl) -> dict[str, Any]:
            plugin = impl.plugin_name

            def register(command: Any) -> None:
                if not isinstance(command, PluginCommand):
                    raise PluginError(
                        f"plugin {plugin!r} registered {command!r}, which is not a PluginCommand"
                    )
                if command.name in taken:
                    raise PluginError(
                        f"plugin {plugin!r} registered the command {command.name!r}, which is "
                        "a built-in command of pi"
                    )
                if command.name in owners:
                    raise PluginError(
                        f"command {command.name!r} is registered by plugin "
                        f"{owners[command.name]!r} and by plugin {plugin!r}"
                    )
                owners[command.name] = plugin
                commands[command.name] = command

            return {"register": register}

        hook_caller.call_collect(
            self.pm.hook.pi_register_commands, {}, extra=registrar, observe=self._observe
        )
        return commands

    def register_providers(self) -> dict[str, Any]:
        """``pi_register_providers`` (collect, sync): providers by their ``name``.

        Raises ``PluginError`` for an object without a string ``name`` (naming the plugin) and
        for a name registered twice (naming both plugins).
        """
        owners: dict[str, str] = {}
        providers: dict[str, Any] = {}

        def registrar(impl: HookImpl) -> dict[str, Any]:
            plugin = impl.plugin_name

            def register(provider: Any) -> None:
                name = getattr(provider, "name", None)
                if not isinstance(name, str) or not name:
                    raise PluginError(
                        f"plugin {plugin!r} registered {provider!r}, which is not a provider: "
                        "expected an object with a name and create(model, options)"
                    )
                if name in owners:
                    raise PluginError(
                        f"provider {name!r} is registered by plugin {owners[name]!r} "
                        f"and by plugin {plugin!r}"
                    )
                owners[name] = plugin
                providers[name] = provider

            return {"register": register}

        hook_caller.call_collect(
            self.pm.hook.pi_register_providers, {}, extra=registrar, observe=self._observe
        )
        return providers

    def bash_operations(self, context: BackendContext) -> BashOperations | None:
        """``pi_bash_operations`` (first non-None, sync): the bash backend, or ``None``.
        A return that is not a ``BashOperations`` is a ``PluginError`` naming the plugin."""

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is not None and not isinstance(value, BashOperations):
                raise self._wrong_type(
                    impl.plugin_name, "pi_bash_operations", value, "a BashOperations"
                )
            return value is not None

        hook = self.pm.hook.pi_bash_operations
        return hook_caller.call_first(hook, {"context": context}, accept, observe=self._observe)[1]

    def file_operations(self, context: BackendContext) -> FileOperations | None:
        """``pi_file_operations`` (first non-None, sync): the file backend, or ``None``.
        A return that is not a ``FileOperations`` is a ``PluginError`` naming the plugin."""

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is not None and not isinstance(value, FileOperations):
                raise self._wrong_type(
                    impl.plugin_name, "pi_file_operations", value, "a FileOperations"
                )
            return value is not None

        hook = self.pm.hook.pi_file_operations
        return hook_caller.call_first(hook, {"context": context}, accept, observe=self._observe)[1]

    def bash_spawn_context(self, context: BashSpawnContext) -> BashSpawnContext:
        """``pi_bash_spawn_context`` (chain, sync): the spawn context after every plugin
        (``context`` itself when none changes it)."""

        def step(impl: HookImpl, current: Any, returned: Any) -> Any:
            if returned is None:
                return current
            if not isinstance(returned, BashSpawnContext):
                raise self._wrong_type(
                    impl.plugin_name, "pi_bash_spawn_context", returned, "a BashSpawnContext"
                )
            return returned

        hook = self.pm.hook.pi_bash_spawn_context
        return hook_caller.call_chain(
            hook, {"context": context}, "context", step, observe=self._observe
        )

    # --- per tool call ------------------------------------------------------------------------

    async def prepare_arguments(self, tool_name: str, arguments: Any) -> Any:
        """``pi_prepare_arguments`` (chain, sync or async): the arguments after every plugin
        (``arguments`` itself, same object, when none returns anything)."""
        hook = self.pm.hook.pi_prepare_arguments
        kwargs = {"tool_name": tool_name, "arguments": arguments}
        return await hook_caller.acall_chain(hook, kwargs, "arguments", observe=self._observe)

    async def before_tool_call(self, context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        """``pi_before_tool_call`` (first block, sync or async), then, when no plugin blocked,
        ``pi_approve_tool_call`` (first non-None): the first blocking result, or ``None``.

        A result that does not block counts as ``None`` (the next plugin is asked); a return
        that is not a ``BeforeToolCallResult`` (or, from ``pi_approve_tool_call``, not a string)
        is a ``PluginError`` naming the plugin. A reason from ``pi_approve_tool_call`` goes to
        :func:`~pi_core.request_approval` (source: the plugin's name); a denial blocks with its
        text. With an audit log (``context.session.audit``) the decision is written as one line.
        """
        started = time.perf_counter()
        allowed_by: list[tuple[str, BeforeToolCallResult]] = []

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is not None and not isinstance(value, BeforeToolCallResult):
                raise self._wrong_type(
                    impl.plugin_name, "pi_before_tool_call", value, "a BeforeToolCallResult"
                )
            blocks = hook_caller.blocks(impl, value)
            if not blocks and value is not None and value.source and not allowed_by:
                allowed_by.append((impl.plugin_name, value))
            return blocks

        if self.config and not context.config:
            context.config = self.config
        if context.session is None:
            context.session = self.session
        audit = context.session.audit if context.session is not None else None
        hook = self.pm.hook.pi_before_tool_call
        try:
            plugin, result = await hook_caller.acall_first(
                hook, {"context": context}, accept, observe=self._observe
            )
            if result is None:
                result = await self.approve_tool_call(context)
                plugin = result.source if result is not None else None
        except Exception as exc:
            if audit is not None:
                await audit.record(
                    self._audit_entry(context, "before", "deny", None, error_text(exc), started)
                )
            raise
        if audit is not None:
            entry = self._before_entry(context, result, plugin, allowed_by, started)
            problem = await audit.record(entry)
            if problem is not None and result is None and audit.on_error == "deny":
                reason = audit.refusal(problem, "the decision to allow this call")
                return BeforeToolCallResult(block=True, reason=reason, source="audit log")
        return result

    def _before_entry(
        self,
        context: BeforeToolCallContext,
        result: BeforeToolCallResult | None,
        plugin: str | None,
        allowed_by: list[tuple[str, BeforeToolCallResult]],
        started: float,
    ) -> dict[str, Any]:
        """The audit line of a call's before phase: ``result`` blocked it (``plugin``
        decided), or the first of ``allowed_by`` allowed it, or nothing blocked it."""
        if result is not None:
            source = result.source or plugin
            return self._audit_entry(
                context, "before", "deny", source, result.reason or "", started, result.detail
            )
        if allowed_by:
            name, note = allowed_by[0]
            return self._audit_entry(
                context,
                "before",
                "allow",
                note.source or name,
                note.reason or "",
                started,
                note.detail,
            )
        reason = "no policy blocked the call"
        if context.approval is not None:
            reason = context.approval.request.reason
        source = context.approval.request.source if context.approval else None
        return self._audit_entry(context, "before", "allow", source, reason, started)

    async def approve_tool_call(
        self, context: BeforeToolCallContext
    ) -> BeforeToolCallResult | None:
        """``pi_approve_tool_call`` (first non-None, sync or async): when a plugin returns a
        reason, :func:`~pi_core.request_approval` asks the session's approver (source: the
        plugin's name). Returns the blocking result (``source``: the plugin) when the approver
        did not allow, else ``None``. A return that is not a string is a ``PluginError``."""
        from pi_core._pipeline.approval import request_approval

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is not None and not isinstance(value, str):
                raise self._wrong_type(impl.plugin_name, "pi_approve_tool_call", value, "a str")
            return bool(value)

        hook = self.pm.hook.pi_approve_tool_call
        plugin, reason = await hook_caller.acall_first(
            hook, {"context": context}, accept, observe=self._observe
        )
        if not reason or plugin is None:
            return None
        outcome = await request_approval(context, reason, source=plugin)
        if outcome.allowed:
            return None
        return BeforeToolCallResult(block=True, reason=outcome.block_reason, source=plugin)

    @staticmethod
    def _audit_entry(
        context: BeforeToolCallContext,
        phase: str,
        decision: str,
        source: str | None,
        reason: str,
        started: float,
        detail: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One audit line's fields (see :mod:`pi_core._session.audit`)."""
        session = context.session
        entry: dict[str, Any] = {
            "time": utc_now(),
            "session": session.session_id if session is not None else None,
            "tool_call_id": context.tool_call.id,
            "parent_tool_call_id": context.parent_tool_call_id,
            "tool": context.tool.name,
            "arguments": cap_arguments(context.args),
            "phase": phase,
            "decision": decision,
            "source": source,
            "reason": reason,
        }
        if context.approval is not None:
            entry["approval"] = context.approval.to_json_dict()
        if detail:
            entry["detail"] = detail
        entry["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return entry

    async def after_tool_call(self, context: AfterToolCallContext) -> AfterToolCallResult | None:
        """``pi_after_tool_call`` (chain, sync or async).

        The implementations get a copy of ``context`` (``context`` itself is not changed) whose
        ``result`` and ``is_error`` each implementation's ``AfterToolCallResult`` updates with
        :func:`~pi_core._plugins.contexts.apply_after_tool_call_result`, so the next one sees the result
        so far. Returns one ``AfterToolCallResult`` holding the final value of every field some
        implementation set (``content`` also brings the final ``structured_content``, so a
        cleared one is cleared again), or ``None`` when none set anything. Applying it once to
        the original result gives exactly the chain's outcome (so does applying it to the
        outcome itself). A return that is not an ``AfterToolCallResult`` is a ``PluginError``
        naming the plugin; an exception propagates (the loop makes it the error result).
        """
        working = dataclasses.replace(context)
        if self.config and not working.config:
            working.config = self.config
        if working.session is None:
            working.session = self.session
        if working.result is None:
            working.result = AgentToolResult()
        touched: set[str] = set()
        started = time.perf_counter()
        decided: list[tuple[str, AfterToolCallResult]] = []

        def step(impl: HookImpl, current: Any, returned: Any) -> Any:
            if returned is None:
                return current
            if not isinstance(returned, AfterToolCallResult):
                raise self._wrong_type(
                    impl.plugin_name, "pi_after_tool_call", returned, "an AfterToolCallResult"
                )
            touched.update(f for f in _AFTER_FIELDS if getattr(returned, f) is not None)
            if returned.source:
                decided.append((impl.plugin_name, returned))
            assert current.result is not None
            current.result, current.is_error = apply_after_tool_call_result(
                current.result, current.is_error, returned
            )
            return current

        hook = self.pm.hook.pi_after_tool_call
        await hook_caller.acall_chain(
            hook, {"context": working}, "context", step, observe=self._observe
        )
        audit = working.session.audit if working.session is not None else None
        if audit is not None:
            refused: str | None = None
            for _plugin, note in decided:
                decision = "deny" if note.is_error else "allow"
                problem = await audit.record(
                    self._audit_entry(
                        working,
                        "after",
                        decision,
                        note.source,
                        note.reason or "",
                        started,
                        note.detail,
                    )
                )
                if problem is not None and audit.on_error == "deny" and refused is None:
                    refused = audit.refusal(problem, "the decision about this call's result")
            if refused is not None:  # the model gets no result whose decision went unrecorded
                return AfterToolCallResult(content=[TextContent(text=refused)], is_error=True)
        if not touched:
            return None
        final = working.result
        combined = AfterToolCallResult()
        if "content" in touched:
            combined.content = list(final.content)
            combined.structured_content = final.structured_content
        if "structured_content" in touched:
            combined.structured_content = final.structured_content
        for name in ("details", "usage", "terminate"):
            if name in touched:
                setattr(combined, name, getattr(final, name))
        if "is_error" in touched:
            combined.is_error = working.is_error
        return combined

    # --- checkpoints --------------------------------------------------------------------------

    def checkpoint_exclude(self, context: SessionContext) -> list[str]:
        """``pi_checkpoint_exclude`` (collect, sync): every pattern the plugins return, in call
        order. A return that is not a list of strings is a ``PluginError`` naming the plugin."""
        patterns: list[str] = []

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is None:
                return False
            if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
                raise self._wrong_type(
                    impl.plugin_name, "pi_checkpoint_exclude", value, "a list of path patterns"
                )
            patterns.extend(value)
            return False  # never stops: every implementation is asked (collect)

        hook_caller.call_first(
            self.pm.hook.pi_checkpoint_exclude, {"context": context}, accept, observe=self._observe
        )
        return patterns

    async def before_rewind(self, context: RewindContext) -> RewindRefused | None:
        """``pi_before_rewind`` (first non-None, sync or async): the refusal of the first
        plugin that returns a reason (``source``: the plugin), or ``None``. A return that is not
        a string is a ``PluginError`` naming the plugin."""

        def accept(impl: HookImpl, value: Any) -> bool:
            if value is not None and not isinstance(value, str):
                raise self._wrong_type(impl.plugin_name, "pi_before_rewind", value, "a str")
            return bool(value)

        plugin, reason = await hook_caller.acall_first(
            self.pm.hook.pi_before_rewind, {"context": context}, accept, observe=self._observe
        )
        if not reason:
            return None
        return RewindRefused(str(reason), plugin)

    # --- observation --------------------------------------------------------------------------

    async def on_event(self, event: Any) -> None:
        """``pi_on_event`` (notify, sync or async): every implementation sees ``event``; an
        exception is reported on stderr (``pi: plugin 'NAME' failed in pi_on_event: ...``) and
        stops nothing. Usable as the loop's :data:`~pi_core._pipeline.config.EventSink`."""
        await hook_caller.acall_notify(
            self.pm.hook.pi_on_event, {"event": event}, observe=self._observe
        )

    # --- session lifecycle --------------------------------------------------------------------

    async def session_start(self, context: SessionContext) -> None:
        """``pi_session_start`` (notify, sync or async): every implementation sees ``context``;
        an exception is reported on stderr (``pi: plugin 'NAME' failed in pi_session_start:
        ...``) and stops nothing (neither the other implementations nor the session)."""
        await hook_caller.acall_notify(
            self.pm.hook.pi_session_start, {"context": context}, observe=self._observe
        )

    async def session_end(self, context: SessionContext) -> None:
        """``pi_session_end`` (notify, sync or async), like :meth:`session_start`;
        ``context.reason`` says how the session ended. Shielded from cancellation: every
        implementation runs to completion even when the session was cancelled."""
        with trio.CancelScope(shield=True):
            await hook_caller.acall_notify(
                self.pm.hook.pi_session_end, {"context": context}, observe=self._observe
            )

    # --- composition into the loop ------------------------------------------------------------

    def loop_callbacks(self) -> dict[str, Callable[..., Any]]:
        """The :class:`~pi_core._loop.config.LoopConfig` callbacks these hooks provide:
        ``prepare_arguments``, ``before_tool_call`` and ``after_tool_call`` (bound methods).
        Events go to :meth:`on_event`, the loop's event sink."""
        return {
            "prepare_arguments": self.prepare_arguments,
            "before_tool_call": self.before_tool_call,
            "after_tool_call": self.after_tool_call,
        }

    def apply_to(self, config: LoopConfig) -> LoopConfig:
        """Set :meth:`loop_callbacks` on ``config`` (replacing those three callbacks) and
        return it."""
        for name, callback in self.loop_callbacks().items():
            setattr(config, name, callback)
        return config


__all__ = ["PluginHooks"]
