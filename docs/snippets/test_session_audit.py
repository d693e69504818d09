"""Tests of ``session_audit.py`` with the ``hook_recorder`` fixture of ``pi_core.testing``."""

from __future__ import annotations

import session_audit

from pi_core import AgentContext, ToolCall, build_session, hookimpl, run_tool_call, tool
from pi_core.testing import run_pi


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


class EchoTool:
    @hookimpl
    def pi_register_tools(self, register):
        register(echo)


async def test_the_hooks_run_in_session_order(
    plugin_manager, register_plugin, hook_recorder, tmp_path, capsys
):
    register_plugin(EchoTool(), name="echo_tool")
    register_plugin(session_audit, name="audit")
    session = build_session(plugin_manager, tmp_path)
    async with session:  # pi_session_start ... pi_session_end
        for text in ("a", "b"):
            call = ToolCall(id="c1", name="echo", arguments={"text": text})
            await run_tool_call(call, AgentContext(tools=session.tools), session.loop_config())

    assert hook_recorder.names() == [
        "pi_register_tools",
        "pi_session_start",
        "pi_before_tool_call",
        "pi_before_tool_call",
        "pi_session_end",
    ]
    first_call = hook_recorder.calls("pi_before_tool_call")[0]
    assert first_call.plugin == "audit"
    assert first_call.kwargs["context"].args == {"text": "a"}
    assert hook_recorder.results("pi_session_end") == [None]
    assert capsys.readouterr().err == "audit: agent session completed after 2 call(s)\n"


def test_pi_call_is_one_session(tmp_path, capsys):
    status = run_pi(["-p", "session_audit", "call", "ls", "{}", "--cwd", str(tmp_path)])
    assert status == 0
    assert capsys.readouterr().err == "audit: call session completed after 1 call(s)\n"
