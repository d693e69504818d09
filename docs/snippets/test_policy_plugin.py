"""Tests of the policy plugin ``policy_plugin.py`` (run with the plugin importable)."""

from __future__ import annotations

import policy_plugin

from pi_core import AssistantMessage, BeforeToolCallContext, ToolCall
from pi_core.testing import run_pi


def write_call(path: str) -> BeforeToolCallContext:
    call = ToolCall(id="call-1", name="write", arguments={"path": path, "content": "x"})
    message = AssistantMessage(content=[call], stop_reason="toolUse")
    return BeforeToolCallContext(
        tool_call=call, args=call.arguments, tool=None, assistant_message=message
    )


async def test_blocks_a_write_to_env(pi_hooks, register_plugin):
    register_plugin(policy_plugin)
    result = await pi_hooks.before_tool_call(write_call("config/.env"))
    assert result.block
    assert result.reason == "config/.env: .env files are read-only here"


async def test_lets_other_writes_through(pi_hooks, register_plugin):
    register_plugin(policy_plugin)
    assert await pi_hooks.before_tool_call(write_call("notes.txt")) is None


def test_the_whole_pipeline(tmp_path, capsys):
    arguments = '{"path": ".env", "content": "SECRET=1"}'
    status = run_pi(["-p", "policy_plugin", "call", "write", arguments, "--cwd", str(tmp_path)])
    assert status == 1
    assert capsys.readouterr().out == ".env: .env files are read-only here\n"
    assert not (tmp_path / ".env").exists()
