"""Session set-up: backends and the tool registry from the plugins.

:func:`build_session` is what ``pi tools``, ``pi call``, ``pi replay`` and ``pi run`` share: it
asks ``pi_bash_operations`` and ``pi_file_operations`` for the backends (first non-None), then
``pi_register_tools`` for the tools, and returns them as a :class:`Session`.

A session's life is ``async with session:``: entering calls ``pi_session_start``, leaving calls
``pi_session_end`` (shielded, on every exit path) with the reason it ended. Each host of pi runs
its work inside it (``pi call``, ``pi replay``, ``pi run``, ``pi tools``, :class:`~pi_core.Agent`
built with ``session=``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

import pluggy
import trio

from pi_core._backend_kit.env_policy import ENV_TABLE
from pi_core._backend_kit.local_files import LocalFileOperations
from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._backend_kit.tree import checkpoint_tree_of
from pi_core._checkpoints.api import Checkpoints
from pi_core._checkpoints.recorder import SessionCheckpoints
from pi_core._checkpoints.store import checkpoint_dir
from pi_core._config import CHECKPOINTS_TABLE, CORE_TABLE, checkpoint_settings, config_file
from pi_core._errors import ConfigError, ConfigWarning
from pi_core._loop.config import LoopConfig
from pi_core._plugins.contexts import BackendContext, RegisterToolsContext
from pi_core._plugins.facade import PluginHooks
from pi_core._session.approval import ApprovalRequest
from pi_core._session.audit import AuditLog
from pi_core._session.context import CHECKPOINTS, CONFIGURATION, SessionContext
from pi_core._tools.definition import AgentTool
from pi_core._tools.exposure import ToolSet, exposures_from_config

if TYPE_CHECKING:
    from pi_core._loop.agent import Agent


def end_reason(exc: BaseException | None) -> str | None:
    """The ``pi_session_end`` reason for a session left with ``exc`` (exception groups are
    looked into): ``"interrupted"`` for ``KeyboardInterrupt``, ``"aborted"`` for
    ``trio.Cancelled``, ``"error"`` for any other exception, ``None`` without one."""
    if exc is None:
        return None
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for inner in e.exceptions:
                walk(inner)
        else:
            leaves.append(e)

    walk(exc)
    if any(isinstance(e, KeyboardInterrupt) for e in leaves):
        return "interrupted"
    if leaves and all(isinstance(e, trio.Cancelled) for e in leaves):
        return "aborted"
    return "error"


@dataclass
class Session:
    """One session's set-up: ``cwd`` (absolute), ``config`` (the TOML as a dict), ``hooks``
    (the :class:`~pi_core._plugins.facade.PluginHooks` of its manager), the chosen ``bash_operations``
    and ``file_operations`` (``None`` when no plugin provides one), ``tools`` in registration
    order and ``tools_by_name``.

    ``context`` is the :class:`~pi_core._session.context.SessionContext` the lifecycle hooks
    get; ``outcome`` is the reason the host wants ``pi_session_end`` to report when the session
    is left without an exception (``None``: ``"completed"``).

    ``checkpoints`` is the session's :class:`~pi_core.Checkpoints` (``None`` when it records
    none): ``await session.checkpoints.list()``, ``await session.checkpoints.rewind(to=...)``.
    """

    cwd: str
    config: dict[str, Any]
    hooks: PluginHooks
    bash_operations: BashOperations | None
    file_operations: FileOperations | None
    tools: list[AgentTool] = field(default_factory=list)
    tools_by_name: dict[str, AgentTool] = field(default_factory=dict)
    context: SessionContext | None = None
    outcome: str | None = None
    tool_set: ToolSet | None = None
    checkpoints: Checkpoints | None = None
    _started: bool = field(default=False, repr=False)
    _ended: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.context is None:
            self.context = SessionContext(cwd=self.cwd, config=self.config)
        if self.hooks.session is None:
            self.hooks.session = self.context
        if self.tool_set is None:
            self.tool_set = ToolSet(self.tools)
        if self.context.tools is None:
            self.context.tools = self.tool_set

    @property
    def session_context(self) -> SessionContext:
        """``context``, never ``None``."""
        assert self.context is not None
        return self.context

    async def start(self) -> None:
        """Call ``pi_session_start`` (once: later calls do nothing)."""
        if self._started:
            return
        self._started = True
        await self.hooks.session_start(self.session_context)

    async def end(self, reason: str = "completed", error: BaseException | None = None) -> None:
        """Call ``pi_session_end`` with ``reason`` (and ``error``), shielded from cancellation;
        once, and only after :meth:`start`."""
        if not self._started or self._ended:
            return
        self._ended = True
        context = self.session_context
        context.reason = reason
        context.error = error
        try:
            await self.hooks.session_end(context)
        finally:
            if self.checkpoints is not None:
                await self.checkpoints.recorder.close()
            if context.audit is not None:
                await context.audit.aclose()

    async def __aenter__(self) -> Session:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        reason = end_reason(exc)
        if reason is None or (reason == "aborted" and self.outcome == "interrupted"):
            reason = self.outcome or "completed"
        error = exc if reason == "error" else None
        await self.end(reason, error)

    @property
    def recorder(self) -> SessionCheckpoints | None:
        """The checkpoint recorder a :class:`LoopConfig` takes (``None``: no checkpoints)."""
        return self.checkpoints.recorder if self.checkpoints is not None else None

    def set_approver(self, approver: Any) -> None:
        """Make ``approver`` answer the approval requests of this session (see
        :meth:`agent`)."""
        self.session_context.set_approver(approver)

    def agent(self, provider: Any = None, *, approval: Any = None, **options: Any) -> Agent:
        """An :class:`~pi_core.Agent` on this session: its tools, its hook callbacks
        (:meth:`loop_config`), ``pi_on_event`` as a listener and this session's lifecycle
        (``async with agent:`` starts and ends it). ``approval`` (a callable taking an
        :class:`~pi_core.ApprovalRequest`, answering ``"allow"``, ``"deny"`` or ``"always"``,
        sync or async) answers the calls a policy asks a person about. ``options`` go to
        ``Agent``."""
        from pi_core._loop.agent import Agent

        if approval is not None:
            self.session_context.set_approver(approval)

        options.setdefault("tools", self.tools)
        options.setdefault("config", self.loop_config())
        agent = Agent(provider, session=self, **options)
        agent.subscribe(self.hooks.on_event)
        return agent

    async def check_call(
        self, name: str, arguments: Any, *, tool_call_id: str = "check"
    ) -> CallCheck:
        """What this session's hooks decide about a call of tool ``name`` with ``arguments``,
        without running it: the steps of a real call up to ``pi_before_tool_call`` and
        ``pi_approve_tool_call`` (look-up, ``prepare_arguments``, validation, the hooks), with
        an approver that records the question and answers no (``decision`` ``"ask"``). Nothing
        goes to the session's audit log: a check is not a call."""
        from pi_core._pipeline.config import AgentContext
        from pi_core._pipeline.pipeline import PreparedCall, prepare_call
        from pi_core._wire.messages import AssistantMessage, ToolCall

        context = self.session_context
        asked: list[ApprovalRequest] = []
        recorder = _DecisionRecorder()

        def ask(request: ApprovalRequest) -> Literal["deny"]:
            asked.append(request)
            return "deny"

        saved = context.approvals.approver, context.audit
        context.approvals.approver = ask
        context.audit = cast(AuditLog, recorder)
        try:
            tool_call = ToolCall(id=tool_call_id, name=name, arguments=arguments)
            prepared = await prepare_call(
                tool_call,
                AgentContext(tools=self.tools),
                AssistantMessage(content=[tool_call], stop_reason="toolUse"),
                self.loop_config(),
                None,
            )
        finally:
            context.approvals.approver, context.audit = saved
        entry = recorder.entries[-1] if recorder.entries else None
        if isinstance(prepared, PreparedCall):
            if entry is None:
                return CallCheck("allow", None, "no policy blocked the call")
            return CallCheck("allow", entry["source"], entry["reason"], entry.get("detail"))
        text = "".join(getattr(block, "text", "") for block in prepared.result.content)
        if asked:
            return CallCheck("ask", asked[0].source, asked[0].reason, entry and entry.get("detail"))
        if entry is None:  # not a decision: the call failed before the hooks (look-up, schema)
            return CallCheck("deny", None, text)
        return CallCheck("deny", entry["source"], entry["reason"] or text, entry.get("detail"))

    def loop_config(self, **options: Any) -> LoopConfig:
        """A :class:`~pi_core._loop.config.LoopConfig` with ``options`` and this session's hook
        callbacks (``prepare_arguments``, ``before_tool_call``, ``after_tool_call``), its
        ``tool_set``, its checkpoint recorder and ``declare_tool_changes`` on."""
        options.setdefault("tool_set", self.tool_set)
        options.setdefault("declare_tool_changes", True)
        options.setdefault("checkpoints", self.recorder)
        return self.hooks.apply_to(LoopConfig(**options))


@dataclass(frozen=True)
class CallCheck:
    """What :meth:`Session.check_call` found: ``decision`` (``"allow"``, ``"deny"`` or
    ``"ask"``), ``source`` (the policy or plugin that decided, ``None`` when none did),
    ``reason`` and the deciding source's ``detail`` (what its audit line carries)."""

    decision: str
    source: str | None
    reason: str
    detail: dict[str, Any] | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "source": self.source,
            "reason": self.reason,
            "detail": self.detail,
        }


class _DecisionRecorder:
    """Stands in for the audit log during :meth:`Session.check_call`: keeps the lines the hook
    facade would write (the decision, its source and detail), writes nothing."""

    on_error = "allow"

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    async def record(self, entry: dict[str, Any]) -> str | None:
        self.entries.append(entry)
        return None

    def refusal(self, reason: str, what: str) -> str:  # never called: record never fails
        return reason


def build_session(
    pm: pluggy.PluginManager,
    cwd: str | os.PathLike[str],
    config: dict[str, Any] | None = None,
    *,
    host: str = "agent",
    approval: Any = None,
    audit: str | os.PathLike[str] | None = None,
    checkpoints: bool | None = None,
) -> Session:
    """Build a session from the plugins of ``pm``.

    ``cwd`` is made absolute; ``config`` defaults to ``{}``. Calls ``pi_bash_operations`` and
    ``pi_file_operations`` with a :class:`~pi_core._plugins.contexts.BackendContext`, then
    ``pi_register_tools`` with a :class:`~pi_core._plugins.contexts.RegisterToolsContext` holding the
    chosen backends, and the session's :class:`~pi_core.ToolSet` with the ``exposure`` of each
    ``[tools.NAME]`` table. Raises :class:`~pi_core._errors.PluginError` for a duplicate tool name, a
    registered object that is not a tool or a backend of the wrong type; an exception raised by
    a plugin propagates.

    ``host`` names the host in the session's
    :class:`~pi_core._session.context.SessionContext` (``"agent"`` for the Python API), which
    every context of the session carries as ``session``. The lifecycle hooks are not called
    here: ``async with session:`` does that.

    ``approval`` answers what policies ask a person (see :meth:`Session.agent`); the host's
    terminal prompt comes this way. ``audit`` is the file of the session's audit log (relative
    to ``cwd``), opened before the plugins are asked, so it wins over a plugin's; an
    ``OSError`` opening it propagates.

    ``checkpoints``: record checkpoints (``docs/how-to/undo.md``); ``None`` (default): for the
    hosts of :data:`CHECKPOINT_HOSTS` (``pi call``, ``pi replay``, ``pi run``, ``pi mcp
    serve``), not for the others. ``[checkpoints] enabled = false`` turns them off whatever is
    asked. A file backend that cannot show the workspace to checkpoints (no
    ``checkpoint_tree``) means none, or a :class:`~pi_core.ConfigError` when the config asks for
    them explicitly (``enabled = true``).

    The config file ``config`` was loaded from (:func:`~pi_core.config_file`, when known) and
    the audit log are the first of the session's
    :attr:`~pi_core._session.context.SessionContext.protected_files`.
    """
    abs_cwd = os.path.abspath(os.fspath(cwd))
    config = {} if config is None else config
    context = SessionContext(cwd=abs_cwd, config=config, host=host)
    config_path = getattr(config, "path", None)
    if config_path is not None:
        context.protect(config_path, CONFIGURATION)
    if approval is not None:
        context.set_approver(approval)
    if audit is not None:
        context.open_audit(audit)
    hooks = PluginHooks(pm, config, session=context)
    context.network_request = hooks.network_request
    backend_context = BackendContext(cwd=abs_cwd, config=config, session=context)
    bash_operations = hooks.bash_operations(backend_context)
    file_operations = hooks.file_operations(backend_context)
    tools = hooks.register_tools(
        RegisterToolsContext(
            cwd=abs_cwd,
            config=config,
            bash_operations=bash_operations,
            file_operations=file_operations,
            bash_spawn_hook=hooks.bash_spawn_context,
            session=context,
        )
    )
    _warn_unused_tool_tables(config, tools)
    _warn_misspelt_tables(config, [name for name, _ in pm.list_name_plugin() if name])
    return Session(
        cwd=abs_cwd,
        config=config,
        hooks=hooks,
        bash_operations=bash_operations,
        file_operations=file_operations,
        tools=tools,
        tools_by_name={t.name: t for t in tools},
        context=context,
        tool_set=ToolSet(tools, exposures_from_config(config)),
        checkpoints=_checkpoints(hooks, context, file_operations, checkpoints),
    )


def _warn_unused_tool_tables(config: Mapping[str, Any], tools: Sequence[AgentTool]) -> None:
    """A :class:`~pi_core.ConfigWarning` for each ``[tools.NAME]`` table naming no registered
    tool: its settings would be silently unused (a misspelt name, a plugin not installed)."""
    table = config.get("tools")
    if not isinstance(table, dict):
        return
    names = {tool.name for tool in tools}
    unused = [
        name for name, value in table.items() if isinstance(value, dict) and name not in names
    ]
    if unused:
        file = config_file(config)
        for name in unused:
            warnings.warn(
                f"{file}: [tools.{name}]: no tool named {name!r} is registered; its settings are"
                f" not used (tools: {', '.join(sorted(names)) or 'none'})",
                ConfigWarning,
                stacklevel=1,
            )


CORE_TABLES = (CORE_TABLE, CHECKPOINTS_TABLE, ENV_TABLE, "tools", "telemetry")
"""The top-level tables the core reads (``[tools.NAME]``: the exposure, above; ``[telemetry]``:
``pi_core._report``, a floor above this one)."""


def _warn_misspelt_tables(config: Mapping[str, Any], plugins: Sequence[str]) -> None:
    """A :class:`~pi_core.ConfigWarning` for each top-level table whose name is not the core's
    nor a loaded plugin's but close to one (``[sandobx.policy]``): a plugin reads its own table,
    so a misspelt one would silently leave its settings (a whole command policy) unused."""
    known = {*CORE_TABLES, *plugins}
    others = [
        name for name, value in config.items() if isinstance(value, dict) and name not in known
    ]
    if not others:
        return
    import difflib  # only for a config with such a table (start-up)

    file = None
    for name in others:
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if close:
            file = file or config_file(config)
            warnings.warn(
                f"{file}: [{name}]: no loaded plugin reads this table; did you mean "
                f"[{close[0]}]? Its settings are not used",
                ConfigWarning,
                stacklevel=1,
            )


CHECKPOINT_HOSTS = ("call", "replay", "run", "mcp")
"""The hosts whose sessions record checkpoints unless the config says ``enabled = false``."""


def _checkpoints(
    hooks: PluginHooks,
    context: SessionContext,
    file_operations: FileOperations | None,
    wanted: bool | None,
) -> Checkpoints | None:
    """The session's checkpoints, or ``None`` (see :func:`build_session`)."""
    settings = checkpoint_settings(context.config)
    if wanted is False or not settings.enabled:
        return None
    if wanted is None and context.host not in CHECKPOINT_HOSTS:
        return None
    extra = hooks.checkpoint_exclude(context)
    exclude = [*settings.exclude, *extra]
    operations = file_operations if file_operations is not None else LocalFileOperations()
    tree = checkpoint_tree_of(operations, context.cwd, exclude)
    if tree is None:
        table = context.config.get(CHECKPOINTS_TABLE)
        if isinstance(table, dict) and table.get("enabled") is True:
            raise ConfigError(
                f"{config_file(context.config)}: {CHECKPOINTS_TABLE}.enabled: the file backend "
                f"of this session ({type(operations).__name__}) cannot show the workspace to "
                "checkpoints; set enabled = false"
            )
        return None
    context.protect(checkpoint_dir(settings), CHECKPOINTS, hidden=True)
    recorder = SessionCheckpoints(
        cwd=context.cwd,
        session_id=context.session_id,
        host=context.host,
        settings=settings,
        tree=tree,
        exclude=extra,
    )
    return Checkpoints(recorder)


__all__ = ["CHECKPOINT_HOSTS", "CallCheck", "Session", "build_session", "end_reason"]
