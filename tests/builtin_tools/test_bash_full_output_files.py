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
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_builtin_tools.plugin as builtin_plugin
from pi_core._errors import ConfigError
from pi_core._plugins.session import build_session
from support import fill_up

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


# -- bounded files (issue 23, point 5) -------------------------------------------------------

SEQ = "".join(f"{i}\n" for i in range(1, 100_001)).encode()  # 588,895 bytes


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The full-output files of in-process sessions go to this test's own folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


async def _seq_results(session: Any, calls: int) -> list[Any]:
    bash = session.tools_by_name["bash"]
    return [await bash.execute(f"s{n}", {"command": "seq 1 100000"}, None) for n in range(calls)]


def _notice(result: Any) -> str:
    return result.text.rpartition("\n\n")[2]


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


async def test_a_file_past_its_limit_is_cut_and_the_notice_says_where(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, private_tmp: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    config = {"tools": {"bash": {"full_output_max_bytes": 100_000}}}
    session = build_session(plugin_manager, tmp_path, config, host="run")
    async with session:
        (result,) = await _seq_results(session, 1)
        path = result.details["fullOutputPath"]
        assert re.fullmatch(rf"{private_tmp}/pi-bash-[0-9a-f]{{16}}\.log", path)
        assert _notice(result) == (
            f"[Showing lines 98001-100000 of 100000. Full output: {path} "
            "(cut at 97.7KB: the file limit)]"
        )
        assert result.details["fullOutputCut"] == {"reason": "the file limit", "bytes": 100_000}
        assert _read(path) == SEQ[:100_000]
        # the command ran to its end, and the program-facing output is whole
        assert result.structured_content["exit_code"] == 0
        assert result.structured_content["output"] == SEQ.decode()
        assert result.structured_content["truncated"] is False


async def test_the_session_limit_cuts_a_file_then_keeps_none(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, private_tmp: Path
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    limits = {"full_output_max_bytes": 100_000, "full_output_session_max_bytes": 150_000}
    session = build_session(plugin_manager, tmp_path, {"tools": {"bash": limits}}, host="run")
    async with session:
        first, second, third = await _seq_results(session, 3)
        paths = [r.details["fullOutputPath"] for r in (first, second, third)]
        assert [_notice(r) for r in (first, second, third)] == [
            f"[Showing lines 98001-100000 of 100000. Full output: {paths[0]} "
            "(cut at 97.7KB: the file limit)]",
            f"[Showing lines 98001-100000 of 100000. Full output: {paths[1]} "
            "(cut at 48.8KB: the session limit)]",
            "[Showing lines 98001-100000 of 100000. Full output not kept (the session limit)]",
        ]
        assert paths[2] is None
        assert third.details["fullOutputCut"] == {"reason": "the session limit", "bytes": 0}
        assert [len(_read(p)) for p in paths[:2]] == [100_000, 50_000]
    assert _names(private_tmp) == set()  # the files and the session's lock are gone


def test_pi_call_keeps_no_file_on_a_nearly_full_disk(tmp_path: Path, small_filesystem: Any) -> None:
    disk = small_filesystem(1 << 20)
    fill_up(disk)
    os.truncate(disk / "filler", (1 << 20) - 40 * 1024)  # 40 KiB free: under 5%
    proc = subprocess.run(
        [str(PI), "call", "bash", json.dumps({"command": MANY_LINES})],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(disk)},
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith(
        f"\n\n[Showing lines 1001-3000 of 3000. Full output not kept ({disk} has less than 5% "
        "free)]\n"
    )
    assert [name for name in os.listdir(disk) if name.startswith("pi-bash")] == []


def _age(path: Path, days: float) -> None:
    when = time.time() - days * 86400
    os.utime(path, (when, when))


_HOLDER = """
import sys, tempfile
tempfile.tempdir = sys.argv[1]
from pi_builtin_tools.shell.output_files import FullOutputFiles
files = FullOutputFiles()
path = files.new_path(sys.argv[1], "pi-bash")
open(path, "w").close()
print(path, flush=True)
sys.stdin.readline()
"""


def _start_holder(folder: Path) -> subprocess.Popen[str]:
    """Another process with a live session that wrote a file in ``folder`` (prints its path,
    holds the session's lock until its stdin gets a line)."""
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


async def test_ended_sessions_files_are_removed_after_the_retention(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, private_tmp: Path
) -> None:
    """At the end of a session that wrote a file: the files of ended sessions older than
    ``full_output_retention_days`` go; a live session's (another process holding its lock),
    fresh ones, another user's and anything else stay."""
    dead, other = "0badc0de", "0ddba11e"
    old = {
        "dead": private_tmp / f"pi-bash-{dead}00000001.log",
        "dead_powershell": private_tmp / f"pi-powershell-{dead}00000002.log",
        "dead_lock": private_tmp / f"pi-session-{dead}.lock",
        "other_user": private_tmp / f"pi-bash-{other}00000003.log",
        "unrelated": private_tmp / "pi-bash-notes.log",
    }
    fresh = private_tmp / f"pi-bash-{dead}00000004.log"
    for path in [*old.values(), fresh]:
        path.write_text("x\n")
    os.chown(old["other_user"], 65534, 65534)
    _age(fresh, 1.5)
    for path in old.values():
        _age(path, 3)
    holder = _start_holder(private_tmp)
    try:
        assert holder.stdout is not None
        live = Path(holder.stdout.readline().strip())
        _age(live, 3)
        register_plugin(builtin_plugin, name="builtin_tools")
        config = {"tools": {"bash": {"full_output_retention_days": 2}}}
        session = build_session(plugin_manager, tmp_path, config, host="call")
        async with session:
            kept = Path((await _seq_results(session, 1))[0].details["fullOutputPath"])
        assert (
            _names(private_tmp)
            == {
                kept.name,  # pi call keeps its own file for its caller
                fresh.name,
                old["other_user"].name,
                old["unrelated"].name,
                live.name,
                f"pi-session-{live.name[8:16]}.lock",
            }
        )
    finally:
        holder.communicate("\n", timeout=10)
    # the holder ended: the next session's end removes its file
    session = build_session(plugin_manager, tmp_path, config, host="run")
    async with session:
        await _seq_results(session, 1)
    assert live.name not in _names(private_tmp)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("full_output_max_bytes", 0, "must be a positive integer"),
        ("full_output_max_bytes", "1G", "must be a positive integer"),
        ("full_output_session_max_bytes", True, "must be a positive integer"),
        ("full_output_session_max_bytes", 1.5, "must be a positive integer"),
        ("full_output_retention_days", -1, "must be a number of days (0 or more)"),
        ("full_output_retention_days", "7d", "must be a number of days (0 or more)"),
    ],
)
def test_bad_limits_are_config_errors(
    plugin_manager: Any, register_plugin: Any, tmp_path: Path, key: str, value: Any, message: str
) -> None:
    register_plugin(builtin_plugin, name="builtin_tools")
    with pytest.raises(ConfigError) as info:
        build_session(plugin_manager, tmp_path, {"tools": {"bash": {key: value}}})
    assert str(info.value) == f"pi.toml: tools.bash.{key}: {message}"
