"""pi core: wire types, the trio agent loop and tool pipeline, hooks and plugin loading.

This module is the public door: every name a tool or policy plugin needs is importable from here,
and a few documented sub-modules hold the rest:

* :mod:`pi_core.backends`: the kit backend plugins build on (operation protocols, the local file
  backend, atomic writes, the mutation queue, path resolution, process streaming);
* :mod:`pi_core.providers`: the model-provider protocol and its stream events;
* :mod:`pi_core.hookspecs`: every hook specification;
* :mod:`pi_core.testing`: the pytest plugin and the backend contract suites.

Everything else lives in private sub-packages, one per concern: ``_wire`` (messages, events,
session files), ``_tools`` (tool types, ``@tool``, validation), ``_pipeline`` (one tool call),
``_loop`` (turns and batches, ``Agent``), ``_plugins`` (markers, hook caller, facade, manager),
``_providers`` (scripted, OpenAI, Anthropic), ``_backend_kit``, ``_checkpoints`` (every change
a session makes to the workspace, and the way back) and ``_cli``.
"""

from __future__ import annotations

from pi_core._abort import Abort
from pi_core._backend_kit.mutation_queue import with_file_mutation_queue
from pi_core._backend_kit.operations import BashOperations, FileOperations
from pi_core._checkpoints.api import (
    Checkpoints,
    checkpoint_sessions,
    list_checkpoints,
    prune_checkpoints,
    rewind,
)
from pi_core._checkpoints.history import (
    Checkpoint,
    CheckpointError,
    CheckpointSession,
    FileChange,
    PathIssue,
    RewindContext,
    RewindRefused,
    RewindResult,
)
from pi_core._checkpoints.store import checkpoint_dir
from pi_core._config import config_file, find_config, format_config_error, load_config
from pi_core._errors import (
    CommandTimeout,
    ConfigError,
    ConfigWarning,
    PiError,
    PluginError,
    ProviderError,
    ToolAborted,
    ToolError,
)
from pi_core._lazy_door import lazy_door
from pi_core._loop.agent import Agent
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.approval import request_approval
from pi_core._pipeline.config import AgentContext
from pi_core._pipeline.contexts import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from pi_core._pipeline.nested import nested_calls_context
from pi_core._pipeline.outcome import ToolCallOutcome
from pi_core._pipeline.pipeline import run_tool_call
from pi_core._pipeline.tool_context import ToolCallContext, current_tool_context
from pi_core._plugins.contexts import (
    BackendContext,
    BashSpawnContext,
    CommandInvocation,
    NetworkDecision,
    NetworkRequestContext,
    PluginCommand,
    RegisterToolsContext,
)
from pi_core._plugins.facade import PluginHooks
from pi_core._plugins.manager import PiPluginManager, make_plugin_manager
from pi_core._plugins.markers import hookimpl, hookspec
from pi_core._plugins.session import CallCheck, Session, build_session
from pi_core._session.approval import ApprovalOutcome, ApprovalRequest
from pi_core._session.audit import AuditLog
from pi_core._session.context import ProtectedFile, SessionContext
from pi_core._tools.definition import (
    AgentTool,
    ConstrainedSampling,
    LoadoutChanges,
    Mutates,
    OnUpdate,
    PathArgument,
    ToolDefinition,
    ToolExposure,
    ToolLoadout,
    ToolNamespace,
    tool,
    wrap_tool_definition,
)
from pi_core._tools.exposure import ToolSet
from pi_core._tools.format import format_size
from pi_core._tools.validation import js_number_to_string
from pi_core._wire.json_dump import dump_json
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "Abort",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentContext",
    "AgentTool",
    "AgentToolResult",
    "ApprovalOutcome",
    "ApprovalRequest",
    "AssistantMessage",
    "AuditLog",
    "BackendContext",
    "BashOperations",
    "BashSpawnContext",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "CallCheck",
    "Checkpoint",
    "CheckpointError",
    "CheckpointSession",
    "Checkpoints",
    "CommandInvocation",
    "CommandTimeout",
    "ConfigError",
    "ConfigWarning",
    "ConstrainedSampling",
    "FileChange",
    "FileOperations",
    "ImageContent",
    "LoadoutChanges",
    "LoopConfig",
    "Mutates",
    "NetworkDecision",
    "NetworkRequestContext",
    "OnUpdate",
    "PathArgument",
    "PathIssue",
    "PiError",
    "PiPluginManager",
    "PluginCommand",
    "PluginError",
    "PluginHooks",
    "ProtectedFile",
    "ProviderError",
    "RegisterToolsContext",
    "RewindContext",
    "RewindRefused",
    "RewindResult",
    "Session",
    "SessionContext",
    "SystemMessage",
    "TextContent",
    "ToolAborted",
    "ToolCall",
    "ToolCallContext",
    "ToolCallOutcome",
    "ToolDefinition",
    "ToolError",
    "ToolExposure",
    "ToolLoadout",
    "ToolNamespace",
    "ToolResultMessage",
    "ToolSet",
    "UserMessage",
    "build_session",
    "checkpoint_dir",
    "checkpoint_sessions",
    "config_file",
    "current_tool_context",
    "dump_json",
    "find_config",
    "format_config_error",
    "format_size",
    "hookimpl",
    "hookspec",
    "js_number_to_string",
    "lazy_door",
    "list_checkpoints",
    "load_config",
    "make_plugin_manager",
    "nested_calls_context",
    "parse_json",
    "prune_checkpoints",
    "request_approval",
    "rewind",
    "run_agent_loop",
    "run_tool_call",
    "tool",
    "with_file_mutation_queue",
    "wrap_tool_definition",
]
