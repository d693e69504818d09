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


def test_exported_names_are_the_design_names() -> None:
    assert set(pi_core.__all__) == DESIGN_NAMES | {"wrap_tool_definition"}


def test_every_exported_name_resolves() -> None:
    for name in pi_core.__all__:
        assert getattr(pi_core, name) is not None, name


def test_all_is_sorted() -> None:
    assert pi_core.__all__ == sorted(pi_core.__all__)
