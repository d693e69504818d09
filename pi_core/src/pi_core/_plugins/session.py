"""Session set-up: backends and the tool registry from the plugins (DESIGN §2).

:func:`build_session` is what ``pi tools``, ``pi call``, ``pi replay`` and ``pi run`` share: it
asks ``pi_bash_operations`` and ``pi_file_operations`` for the backends (first non-None), then
``pi_register_tools`` for the tools, and returns them as a :class:`Session`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pluggy

from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._pipeline.config import LoopConfig
from pi_core._plugins.contexts import BackendContext, RegisterToolsContext
from pi_core._plugins.facade import PluginHooks
from pi_core._tools.definition import AgentTool


@dataclass
class Session:
    """One session's set-up: ``cwd`` (absolute), ``config`` (the TOML as a dict), ``hooks``
    (the :class:`~pi_core._plugins.facade.PluginHooks` of its manager), the chosen ``bash_operations``
    and ``file_operations`` (``None`` when no plugin provides one), ``tools`` in registration
    order and ``tools_by_name``."""

    cwd: str
    config: dict[str, Any]
    hooks: PluginHooks
    bash_operations: BashOperations | None
    file_operations: FileOperations | None
    tools: list[AgentTool] = field(default_factory=list)
    tools_by_name: dict[str, AgentTool] = field(default_factory=dict)

    def loop_config(self, **options: Any) -> LoopConfig:
        """A :class:`~pi_core._pipeline.config.LoopConfig` with ``options`` and this session's hook
        callbacks (``prepare_arguments``, ``before_tool_call``, ``after_tool_call``)."""
        return self.hooks.apply_to(LoopConfig(**options))


def build_session(
    pm: pluggy.PluginManager, cwd: str | os.PathLike[str], config: dict[str, Any] | None = None
) -> Session:
    """Build a session from the plugins of ``pm``.

    ``cwd`` is made absolute; ``config`` defaults to ``{}``. Calls ``pi_bash_operations`` and
    ``pi_file_operations`` with a :class:`~pi_core._plugins.contexts.BackendContext`, then
    ``pi_register_tools`` with a :class:`~pi_core._plugins.contexts.RegisterToolsContext` holding the
    chosen backends. Raises :class:`~pi_core._errors.PluginError` for a duplicate tool name, a
    registered object that is not a tool or a backend of the wrong type; an exception raised by
    a plugin propagates.
    """
    abs_cwd = os.path.abspath(os.fspath(cwd))
    config = {} if config is None else config
    hooks = PluginHooks(pm, config)
    backend_context = BackendContext(cwd=abs_cwd, config=config)
    bash_operations = hooks.bash_operations(backend_context)
    file_operations = hooks.file_operations(backend_context)
    tools = hooks.register_tools(
        RegisterToolsContext(
            cwd=abs_cwd,
            config=config,
            bash_operations=bash_operations,
            file_operations=file_operations,
            bash_spawn_hook=hooks.bash_spawn_context,
        )
    )
    return Session(
        cwd=abs_cwd,
        config=config,
        hooks=hooks,
        bash_operations=bash_operations,
        file_operations=file_operations,
        tools=tools,
        tools_by_name={t.name: t for t in tools},
    )


__all__ = ["Session", "build_session"]
