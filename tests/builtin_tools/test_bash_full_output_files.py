"""Full-output files of the bash tool (``/tmp/pi-bash-*.log``, named by the truncation notice)
live as long as the session that needs them: ``pi_session_end`` removes them at the end of a
session the model lives in (``pi run``, an ``Agent``), the one-shot ``pi call``/``pi replay`` keep
them for their caller, and ``[tools.bash] keep_full_output`` overrides both ways. The notice keeps
Pi's exact text either way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_builtin_tools.plugin as builtin_plugin
from pi_core._errors import ConfigError
from pi_core._plugins.session import build_session

PI = Path(sys.executable).parent / "pi"
NOTICE = re.compile(
    r"\[Showing lines 1001-3000 of 3000\. Full output: (/\S+/pi-bash-[0-9a-f]{16}\.log)\]$"
)
MANY_LINES = "seq 1 3000"


def exists(path: str) -> bool:
    return os.path.exists(path)


async def _truncated_call(session: Any, call_id: str = "c1") -> str:
    result = await session.tools_by_name["bash"].execute(call_id, {"command": MANY_LINES}, None)
    match = NOTICE.search(result.text)
    assert match, result.text[-200:]
    assert result.details["fullOutputPath"] == match.group(1)
    return match.group(1)


async def test_full_output_files_are_removed_at_session_end(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path, {}, host="run")
    async with session:
        first = await _truncated_call(session, "c1")
        second = await _truncated_call(session, "c2")
        assert first != second
        for path in (first, second):
            assert await trio.Path(path).read_text() == "".join(f"{i}\n" for i in range(1, 3001))
            assert os.stat(path).st_mode & 0o777 == 0o600
    assert not exists(first)
    assert not exists(second)


async def test_full_output_files_of_aborted_and_timed_out_commands_are_removed(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path, {}, host="agent")
    bash = None
    async with session:
        bash = session.tools_by_name["bash"]
        result = None
        try:
            await bash.execute("t1", {"command": f"{MANY_LINES}; sleep 30", "timeout": 1}, None)
        except Exception as exc:  # the tool reports a timeout by raising ToolError
            result = str(exc)
        assert result is not None
        paths = re.findall(r"Full output: (/\S+\.log)\]", result)
        assert len(paths) == 1 and exists(paths[0])
    assert not exists(paths[0])


@pytest.mark.parametrize("host", ["call", "replay"])
async def test_one_shot_hosts_keep_them_by_default(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, host: str
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path, {}, host=host)
    async with session:
        path = await _truncated_call(session)
    try:
        assert exists(path)
    finally:
        os.unlink(path)


async def test_keep_full_output_false_removes_them_for_one_shot_hosts_too(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    config = {"tools": {"bash": {"keep_full_output": False}}}
    session = build_session(plugin_manager, tmp_path, config, host="call")
    async with session:
        path = await _truncated_call(session)
    assert not exists(path)


async def test_keep_full_output_keeps_them(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    config = {"tools": {"bash": {"keep_full_output": True}}}
    session = build_session(plugin_manager, tmp_path, config, host="run")
    async with session:
        path = await _truncated_call(session)
    try:
        assert exists(path)
    finally:
        os.unlink(path)


async def test_a_file_already_gone_is_no_error(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path, {}, host="call")
    async with session:
        path = await _truncated_call(session)
        os.unlink(path)
    assert session.session_context.reason == "completed"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "pi.toml: tools.bash.keep_full_output: must be a boolean"),
        (1, "pi.toml: tools.bash.keep_full_output: must be a boolean"),
    ],
)
def test_keep_full_output_must_be_a_boolean(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, value: Any, message: str
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    config = {"tools": {"bash": {"keep_full_output": value}}}
    with pytest.raises(ConfigError) as info:
        build_session(plugin_manager, tmp_path, config)
    assert str(info.value) == message


@pytest.mark.parametrize("keep", [False, True, None])
def test_pi_call_keeps_the_file_its_notice_names_unless_told_not_to(
    tmp_path: Path, keep: bool | None
) -> None:
    if keep is not None:
        (tmp_path / "pi.toml").write_text(f"[tools.bash]\nkeep_full_output = {str(keep).lower()}\n")
    proc = subprocess.run(
        [str(PI), "-p", "builtin_tools", "call", "bash", json.dumps({"command": MANY_LINES})],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PI_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    match = NOTICE.search(proc.stdout.rstrip("\n"))
    assert match, proc.stdout[-200:]
    path = Path(match.group(1))
    try:
        assert path.exists() is (keep is not False)
    finally:
        if keep is not False:
            path.unlink()


async def test_agent_session_removes_the_files_when_it_ends(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path
) -> None:
    from pi_core._providers.base import ScriptedProvider
    from pi_core._wire.messages import AssistantMessage, TextContent, ToolCall

    register_plugin(builtin_plugin, name="builtin_tools")
    session = build_session(plugin_manager, tmp_path, {})
    call = ToolCall(id="b1", name="bash", arguments={"command": MANY_LINES})
    provider = ScriptedProvider(
        [
            AssistantMessage(content=[call], stop_reason="toolUse"),
            AssistantMessage(content=[TextContent(text="done")], stop_reason="stop"),
        ]
    )
    agent = session.agent(provider)
    async with agent:
        await agent.prompt("go")
        texts = [m.text for m in agent.messages if m.role == "toolResult"]
        match = NOTICE.search(texts[0])
        assert match
        assert exists(match.group(1))
    assert not exists(match.group(1))
