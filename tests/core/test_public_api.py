"""The names importable from ``pi_core`` are exactly DESIGN §3's public names."""

from __future__ import annotations

import pi_core

DESIGN_NAMES = {
    "hookimpl",
    "hookspec",
    "tool",
    "AgentTool",
    "ToolDefinition",
    "AgentToolResult",
    "TextContent",
    "ImageContent",
    "ToolCall",
    "AssistantMessage",
    "UserMessage",
    "ToolResultMessage",
    "BeforeToolCallResult",
    "AfterToolCallResult",
    "BashOperations",
    "FileOperations",
    "with_file_mutation_queue",
    "run_agent_loop",
    "Agent",
    "ToolAborted",
    "CommandTimeout",
}


#: What plugins and hosts need beyond DESIGN §3: the errors, the hook contexts, the session
#: and plugin-manager factories, the loop's configuration and the nested-call entry point.
DOOR_NAMES = {
    "AfterToolCallContext",
    "AgentContext",
    "BackendContext",
    "BashSpawnContext",
    "BeforeToolCallContext",
    "CommandInvocation",
    "ConstrainedSampling",
    "ConfigError",
    "ConfigWarning",
    "LoopConfig",
    "NetworkDecision",
    "NetworkRequestContext",
    "OnUpdate",
    "PathArgument",
    "PiError",
    "PiPluginManager",
    "PluginCommand",
    "PluginError",
    "PluginHooks",
    "ProtectedFile",
    "ProviderError",
    "RegisterToolsContext",
    "Session",
    "SessionContext",
    "ToolCallContext",
    "ToolCallOutcome",
    "ToolError",
    "build_session",
    "CallCheck",
    "config_file",
    "current_tool_context",
    "find_config",
    "format_config_error",
    "format_size",
    "js_number_to_string",
    "dump_json",
    "parse_json",
    "load_config",
    "make_plugin_manager",
    "run_tool_call",
    "wrap_tool_definition",
    # tool exposure (Pi 1.6): the session's tool sets, namespaces, loadouts, system messages
    "LoadoutChanges",
    "SystemMessage",
    "ToolExposure",
    "ToolLoadout",
    "ToolNamespace",
    # policies (issue 14): asking a person, the audit log of decisions
    "ApprovalOutcome",
    "ApprovalRequest",
    "AuditLog",
    "request_approval",
    "ToolSet",
    # a host running calls itself (pi mcp serve): the abort handle run_tool_call takes, and
    # the tool context that lets the call's nested calls run
    "Abort",
    "nested_calls_context",
    # checkpoints (issue 26): what a tool may change, a session's checkpoints, rewinding
    "Checkpoint",
    "CheckpointError",
    "CheckpointSession",
    "Checkpoints",
    "FileChange",
    "Mutates",
    "PathIssue",
    "RewindContext",
    "RewindRefused",
    "RewindResult",
    "checkpoint_dir",
    "checkpoint_sessions",
    "list_checkpoints",
    "prune_checkpoints",
    "rewind",
    # a plugin's door: public names imported on first use, moved modules at their old paths
    "lazy_door",
}


def test_exported_names_are_the_design_names_and_the_door() -> None:
    assert set(pi_core.__all__) == DESIGN_NAMES | DOOR_NAMES


def test_backends_door() -> None:
    import pi_core.backends

    assert pi_core.backends.__all__ == [
        "BashOperations",
        "CommandOutput",
        "CommandTimeout",
        "EnvPolicy",
        "FileKind",
        "FileOperations",
        "FileStat",
        "LocalFileOperations",
        "LocalWorkspaceTree",
        "RgRecord",
        "TreeEntry",
        "WorkspaceTree",
        "atomic_write_bytes",
        "command_environment",
        "command_fits_argv",
        "file_kind",
        "find_program",
        "find_rg",
        "iter_rg_records",
        "kill_process_group",
        "long_command_file",
        "looks_secret",
        "missing_cwd_error",
        "path_candidates",
        "remote_environment",
        "resolve_existing_path",
        "resolve_to_cwd",
        "run_shielded",
        "sourcing_command",
        "stage_file_write",
        "staged_file_content",
        "stream_process",
        "unwrap_exception_group",
        "with_file_mutation_queue",
        "with_tool_path_mutation_queue",
    ]
    assert pi_core.backends.BashOperations is pi_core.BashOperations
    assert pi_core.backends.CommandTimeout is pi_core.CommandTimeout


def test_providers_door() -> None:
    import pi_core.providers

    assert pi_core.providers.__all__ == [
        "ABORTED_ERROR_MESSAGE",
        "EMPTY_USAGE",
        "ModelProvider",
        "ModelRequest",
        "ProviderEvent",
        "ScriptedProvider",
        "StreamDelta",
        "StreamDone",
        "StreamError",
        "StreamStart",
        "UnsupportedStrictSchema",
        "error_message",
        "make_strict_json_schema",
        "omit_added_nulls",
        "resolve_strict_sampling",
        "stream_events",
    ]


def test_every_exported_name_resolves() -> None:
    for name in pi_core.__all__:
        assert getattr(pi_core, name) is not None, name


def test_all_is_sorted() -> None:
    assert pi_core.__all__ == sorted(pi_core.__all__)
