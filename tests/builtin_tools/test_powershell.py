"""The ``powershell`` tool (issue 11 item 8, delta §9) and the built-in tools'
``constrained_sampling`` (item 7): registration, declaration, the off-Windows error, the
executable lookup, the command it runs, the system-prompt rule, and a real ``pwsh`` run where
one is installed."""

from __future__ import annotations

import datetime
import os
import shutil
from pathlib import Path

import pytest

import pi_builtin_tools.plugin as builtin_plugin
from pi_builtin_tools.shell.bash import BASH_OUTPUT_SCHEMA, PARAMETERS, file_exploration_guidelines
from pi_builtin_tools.shell.powershell import (
    NOT_FOUND_TEXT,
    LocalPowerShellOperations,
    PowerShellLocator,
    create_powershell_tool_definition,
    powershell_argv,
)
from pi_core import AgentContext, AgentToolResult, LoopConfig, ToolError, wrap_tool_definition
from pi_core._cli.system_prompt import build_system_prompt
from pi_core._loop.loop import run_agent_loop
from pi_core._plugins.session import build_session
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage

PREFER = {"type": "json_schema", "strict": "prefer"}
DESCRIPTION = (
    "Execute a PowerShell command in the current working directory. Returns stdout and stderr. "
    "Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full "
    "output is saved to a temp file. Optionally provide a timeout in seconds."
)
NOT_WINDOWS = "The powershell tool is only available on Windows."
SUFFIX = (
    "\n;\nif ($?) { exit 0 }\n"
    'if (($LASTEXITCODE -eq 0) -and ("$($Error[0].FullyQualifiedErrorId)" -like '
    '"NativeCommandError*")) { exit 0 }\nexit 1'
)
PREFIX = "try { [Console]::OutputEncoding=[System.Text.Encoding]::UTF8 } catch {}\n"
ARGS = ["-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command"]


# --- registration and declaration ---------------------------------------------------------------


def test_registered_after_bash_but_not_active(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path)
    assert session.tool_set is not None
    registered = [t.name for t in session.tool_set.registered]
    assert registered[:8] == ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls"]
    assert "powershell" not in session.tool_set.active_names
    assert session.tool_set.active_names[:7] == [
        "read",
        "bash",
        "edit",
        "write",
        "grep",
        "find",
        "ls",
    ]


def test_declaration_matches_pi(tmp_path: Path) -> None:
    definition = create_powershell_tool_definition(str(tmp_path))
    assert definition.name == "powershell"
    assert definition.label == "powershell"
    assert definition.description == DESCRIPTION
    assert definition.parameters == PARAMETERS
    assert definition.output_schema == BASH_OUTPUT_SCHEMA
    assert definition.prompt_snippet == "Execute PowerShell commands"
    assert definition.prompt_guidelines == [
        "You can inspect PI_* environment variables for current model and session details."
    ]
    assert definition.constrained_sampling == PREFER
    assert definition.replay == "never"
    assert definition.default_active is False
    assert definition.render_call is not None
    assert definition.render_call({"command": "Get-ChildItem"}) == "powershell PS> Get-ChildItem"
    agent_tool = wrap_tool_definition(definition)
    assert agent_tool.constrained_sampling == PREFER
    assert agent_tool.default_active is False


def test_builtin_tools_constrained_sampling(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path)
    sampling = {t.name: t.constrained_sampling for t in session.tools}
    assert {name: sampling[name] for name in ("read", "bash", "powershell", "edit", "write")} == {
        name: PREFER for name in ("read", "bash", "powershell", "edit", "write")
    }
    assert [sampling[name] for name in ("grep", "find", "ls", "tool_search")] == [False] * 4


# --- off Windows --------------------------------------------------------------------------------


async def test_off_windows_every_call_is_the_fixed_error_before_the_timeout(
    tmp_path: Path,
) -> None:
    tool = create_powershell_tool_definition(str(tmp_path), locator=PowerShellLocator("linux"))
    for args in ({"command": "Get-ChildItem"}, {"command": "Get-ChildItem", "timeout": 0}):
        with pytest.raises(ToolError) as info:
            await tool.execute("c1", args, None, None)
        assert str(info.value) == NOT_WINDOWS


async def test_off_windows_through_the_loop_after_validation(tmp_path: Path) -> None:
    tool = wrap_tool_definition(
        create_powershell_tool_definition(str(tmp_path), locator=PowerShellLocator("linux"))
    )
    calls = [
        ToolCall(id="c1", name="powershell", arguments={"command": "Get-ChildItem"}),
        ToolCall(id="c2", name="powershell", arguments={}),
        ToolCall(id="c3", name="powershell", arguments={"command": "x", "timeout": 0}),
    ]
    provider = ScriptedProvider(
        [
            AssistantMessage(content=list(calls), stop_reason="toolUse"),
            AssistantMessage(content=[TextContent(text="done")], stop_reason="stop"),
        ]
    )

    async def ignore(event: object) -> None:
        pass

    messages = await run_agent_loop(
        ["go"], AgentContext(tools=[tool]), LoopConfig(provider=provider), ignore
    )
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.text, r.details, r.is_error) for r in results] == [
        ("c1", NOT_WINDOWS, {}, True),
        (
            "c2",
            'Validation failed for tool "powershell":\n  - command: missing\n\n'
            "Received arguments:\n{}",
            {},
            True,
        ),
        ("c3", NOT_WINDOWS, {}, True),
    ]


async def test_the_default_locator_is_this_platform(tmp_path: Path) -> None:
    if os.name == "nt":
        pytest.skip("on Windows the tool runs")
    tool = create_powershell_tool_definition(str(tmp_path))
    with pytest.raises(ToolError) as info:
        await tool.execute("c1", {"command": "Get-Date"}, None, None)
    assert str(info.value) == NOT_WINDOWS


# --- the executable and the command -------------------------------------------------------------


def locator(on_path: dict[str, str], files: set[str], **environ: str) -> PowerShellLocator:
    return PowerShellLocator(
        platform="win32", which=on_path.get, environ=environ, exists=files.__contains__
    )


def test_executable_lookup_order() -> None:
    pf_pwsh = "C:\\Program Files\\PowerShell\\7\\pwsh.exe"
    system_ps = "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"
    everything = {"pwsh.exe": "C:\\bin\\pwsh.exe", "powershell.exe": "C:\\bin\\powershell.exe"}
    env = {"ProgramFiles": "C:\\Program Files", "SystemRoot": "C:\\Windows"}
    files = {pf_pwsh, system_ps}
    assert locator(everything, files, **env).locate() == "C:\\bin\\pwsh.exe"
    only_ps = {"powershell.exe": "C:\\bin\\powershell.exe"}
    assert locator(only_ps, files, **env).locate() == pf_pwsh
    assert locator(only_ps, {system_ps}, **env).locate() == "C:\\bin\\powershell.exe"
    assert locator({}, {system_ps}, **env).locate() == system_ps
    with pytest.raises(ToolError) as info:
        locator({}, set(), **env).locate()
    assert str(info.value) == NOT_FOUND_TEXT
    assert NOT_FOUND_TEXT == (
        "No PowerShell executable found. Install PowerShell or add powershell.exe/pwsh.exe to PATH."
    )
    with pytest.raises(ToolError) as info:
        PowerShellLocator(platform="darwin", which=everything.get).locate()
    assert str(info.value) == NOT_WINDOWS


def test_command_line_prefix_and_windows_powershell_suffix() -> None:
    assert powershell_argv("C:\\bin\\pwsh.exe", "Get-Date") == [
        "C:\\bin\\pwsh.exe",
        *ARGS,
        PREFIX + "Get-Date",
    ]
    assert powershell_argv("C:\\W\\PowerShell.exe", "git push 2>&1") == [
        "C:\\W\\PowerShell.exe",
        *ARGS,
        PREFIX + "git push 2>&1" + SUFFIX,
    ]
    # a final backtick would continue the last line into the suffix
    assert powershell_argv("powershell.exe", "Get-Date `") == [
        "powershell.exe",
        *ARGS,
        PREFIX + "Get-Date `",
    ]


async def test_missing_working_directory(tmp_path: Path) -> None:
    operations = LocalPowerShellOperations(locator({"pwsh.exe": "/no/pwsh.exe"}, set()))
    missing = str(tmp_path / "gone")
    with pytest.raises(ToolError) as info:
        await operations.exec("Get-Date", missing, on_data=lambda b: None)
    assert str(info.value) == (
        f"Working directory does not exist: {missing}\nCannot execute PowerShell commands."
    )


# --- the system prompt rule ---------------------------------------------------------------------


def test_file_operations_rule_by_shell_tools() -> None:
    both = "Use bash or PowerShell for file operations like listing, searching, and finding files"
    ps = "Use PowerShell for file operations like listing, searching, and finding files"
    assert file_exploration_guidelines(["read", "bash", "powershell"]) == [both]
    assert file_exploration_guidelines(["read", "powershell"]) == [ps]
    assert file_exploration_guidelines(["bash"]) == [
        "Use bash for file operations like ls, rg, find"
    ]
    assert file_exploration_guidelines(["bash", "powershell", "ls"]) == []
    assert file_exploration_guidelines(["bash", "grep"]) == []


def test_system_prompt_with_bash_and_powershell(plugin_manager, register_plugin, tmp_path) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path)
    assert session.tool_set is not None
    session.tool_set.replace_active(["read", "bash", "powershell"])
    prompt = build_system_prompt(session.tool_set.active, "/w", date=datetime.date(2026, 1, 2))
    assert (
        "Available tools:\n"
        "- read: Read file contents\n"
        "- bash: Execute bash commands (ls, grep, find, etc.)\n"
        "- powershell: Execute PowerShell commands\n"
    ) in prompt
    assert (
        "Guidelines:\n"
        "- Use bash or PowerShell for file operations like listing, searching, and finding "
        "files\n"
        "- Use read to examine files instead of cat or sed.\n"
        "- You can inspect PI_* environment variables for current model and session details.\n"
        "- Be concise in your responses\n"
    ) in prompt


# --- a real PowerShell --------------------------------------------------------------------------

PWSH = shutil.which("pwsh")


@pytest.mark.skipif(
    PWSH is None, reason="pwsh (PowerShell 7) is not installed (CI does not install it)"
)
async def test_real_pwsh_runs_commands(tmp_path: Path) -> None:
    assert PWSH is not None
    found = {"pwsh.exe": PWSH}
    tool = create_powershell_tool_definition(
        str(tmp_path),
        locator=PowerShellLocator(platform="win32", which=found.get, environ={}),
    )
    result = await tool.execute("c1", {"command": 'Write-Output "hi"; (Get-Location).Path'}, None)
    assert isinstance(result, AgentToolResult)
    assert (result.text, result.is_error) == (f"hi\n{tmp_path}\n", False)
    assert result.structured_content is not None
    assert result.structured_content["exit_code"] == 0
    failed = await tool.execute("c2", {"command": "exit 3"}, None)
    assert (failed.text, failed.is_error) == ("(no output)\n\nCommand exited with code 3", True)
