"""pi's own files are out of the agent's reach (issue 23, point 3): the config file pi loaded,
the Codex rules files, the Claude Code settings files and the hook scripts they name, the audit
log and the session file of ``pi run --session`` cannot be written by the file tools (a clear
error naming why), nor by the commands of the bwrap and container sandboxes (mounted read-only,
the audit log hidden). A policy a person edits between runs is loaded as it is."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from container_support import PodmanSession
from replay_support import PI, call, project_session

import pi_builtin_tools.plugin as builtin_plugin
import pi_sandbox_plugin.plugin as sandbox_plugin
from pi_core import load_config
from pi_core._plugins.manager import PiPluginManager
from pi_core._plugins.session import Session, build_session
from pi_core._wire.messages import AssistantMessage, TextContent, ToolCall
from pi_sandbox_plugin.policies.guarded_files import GuardedFileOperations, PathDenied

CONFIG_TEXT = "is denied: pi's own configuration is protected from the agent"
AUDIT_TEXT = "is denied: pi's audit log is hidden from the agent"
HOOK = "#!/bin/sh\nexit 0\n"
RULES = 'prefix_rule(pattern = ["rm"], decision = "forbidden")\n'


def make_workspace(root: Path, sandbox: str = "") -> Path:
    """A workspace whose ``pi.toml`` loads a Codex rules file, a Claude Code settings file with
    one hook script, and writes an audit log; ``sandbox``: more lines of ``[sandbox]``."""
    ws = root / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "rules").mkdir()
    (ws / "a.txt").write_text("hello\n")
    (ws / "rules" / "default.rules").write_text(RULES)
    hook = ws / ".claude" / "hooks" / "check.sh"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    command = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh'
    settings = {"hooks": {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]}}  # fmt: skip
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    (ws / "pi.toml").write_text(
        f"[sandbox]\n{sandbox}\n"
        '[sandbox.codex_rules]\nfiles = ["rules/default.rules"]\n'
        '[sandbox.claude_hooks]\nsettings = [".claude/settings.json"]\n'
        '[sandbox.audit]\npath = "audit.jsonl"\n'
    )
    return ws


def snapshot(ws: Path) -> dict[str, str]:
    names = ["pi.toml", "rules/default.rules", ".claude/settings.json", ".claude/hooks/check.sh"]
    return {name: (ws / name).read_text() for name in names}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


# -- the file tools ------------------------------------------------------------------------------


async def test_the_file_tools_cannot_change_pis_files(ws: Path) -> None:
    before = snapshot(ws)
    session = project_session(ws)
    assert sorted(session.session_context.protected_files) == [
        f"{ws}/.claude/hooks/check.sh",
        f"{ws}/.claude/settings.json",
        f"{ws}/audit.jsonl",
        f"{ws}/pi.toml",
        f"{ws}/rules/default.rules",
    ]
    refusals = {
        "pi.toml": "pi's own configuration",
        "rules/default.rules": "a Codex rules file pi loaded",
        ".claude/settings.json": "a Claude Code settings file pi loaded",
        ".claude/hooks/check.sh": "a Claude Code hook script pi runs",
    }
    for name, what in refusals.items():
        expected = (f"Writing '{ws}/{name}' is denied: {what} is protected from the agent", True)
        assert await call(session, "write", path=name, content="x") == expected
        edit = [{"oldText": (ws / name).read_text()[:3], "newText": "x"}]
        assert await call(session, "edit", path=name, edits=edit) == expected
    # read-only, not hidden: the agent may read why it is refused
    assert await call(session, "read", path="rules/default.rules") == (RULES, False)
    assert snapshot(ws) == before
    assert await call(session, "write", path="a.txt", content="mine\n") == (
        "Successfully wrote to a.txt",
        False,
    )


async def test_other_names_of_pis_config_are_refused(ws: Path) -> None:
    (ws / "link").symlink_to("pi.toml")
    os.link(ws / "pi.toml", ws / "hard")
    session = project_session(ws)
    assert await call(session, "write", path="link", content="x") == (
        f"Writing '{ws}/link' (resolved: '{ws}/pi.toml') {CONFIG_TEXT}",
        True,
    )
    assert await call(session, "write", path="hard", content="x") == (
        f"Writing '{ws}/hard' (the same file as '{ws}/pi.toml') {CONFIG_TEXT}",
        True,
    )
    assert (ws / "pi.toml").read_text().startswith("[sandbox]\n")


async def test_the_audit_log_is_hidden(ws: Path) -> None:
    session = project_session(ws)
    assert await call(session, "read", path="a.txt") == ("hello\n", False)  # logged
    assert await call(session, "read", path="audit.jsonl") == (
        f"Reading '{ws}/audit.jsonl' {AUDIT_TEXT}",
        True,
    )
    assert await call(session, "write", path="audit.jsonl", content="{}\n") == (
        f"Writing '{ws}/audit.jsonl' {AUDIT_TEXT}",
        True,
    )
    assert await call(session, "grep", pattern="tool_call_id") == ("No matches found", False)
    text, is_error = await call(session, "ls")
    assert (text.split("\n"), is_error) == ([".claude/", "a.txt", "pi.toml", "rules/"], False)


async def test_the_guard_refuses_without_the_before_hook(ws: Path) -> None:
    """The guard of the file operations refuses on its own (a symlink made by bash in the same
    batch, after the before-hooks ran)."""
    session = project_session(ws)
    files = session.file_operations
    assert isinstance(files, GuardedFileOperations)
    for name in ("pi.toml", ".claude/hooks/check.sh"):
        with pytest.raises(PathDenied) as caught:
            await files.write_bytes(str(ws / name), b"x")
        assert caught.value.filename == str(ws / name)
    assert caught.value.reason == (
        f"Writing '{ws}/.claude/hooks/check.sh' is denied: a Claude Code hook script pi runs is "
        "protected from the agent"
    )
    with pytest.raises(PathDenied):
        await files.read_bytes(str(ws / "audit.jsonl"))
    (ws / "copy").hardlink_to(ws / "audit.jsonl")  # read on the descriptor, by identity
    with pytest.raises(PathDenied) as caught:
        await files.read_bytes(str(ws / "copy"))
    assert caught.value.reason == (
        f"Reading '{ws}/copy' (the same file as '{ws}/audit.jsonl') {AUDIT_TEXT}"
    )
    assert await files.read_bytes(str(ws / "pi.toml")) == (ws / "pi.toml").read_bytes()


async def test_a_policy_edited_between_runs_is_loaded_as_it_is(ws: Path) -> None:
    session = project_session(ws)
    assert (await call(session, "bash", command="rm -f a.txt"))[1] is True  # the rules file
    (ws / "rules" / "default.rules").write_text(
        'prefix_rule(pattern = ["ls"], decision = "forbidden")\n'
    )
    session = project_session(ws)  # the owner edited it: the next run loads it as it is
    assert await call(session, "bash", command="rm -f a.txt") == ("(no output)", False)


def test_the_session_file_of_pi_run(ws: Path, tmp_path: Path) -> None:
    out = ws / "session.jsonl"
    calls = [
        ToolCall(id="c1", name="write", arguments={"path": "session.jsonl", "content": "x"}),
        ToolCall(id="c2", name="write", arguments={"path": "pi.toml", "content": "x"}),
    ]
    model = tmp_path / "model.jsonl"
    answers = [
        AssistantMessage(content=calls, stop_reason="toolUse"),
        AssistantMessage(content=[TextContent(text="done")], stop_reason="stop"),
    ]
    model.write_text("".join(json.dumps(m.to_json_dict()) + "\n" for m in answers))
    env = {**os.environ, "PI_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        [str(PI), "-p", "pi_builtin_tools.plugin", "-p", "pi_sandbox_plugin.plugin", "run",
         "--tools", "write", "--model", f"scripted:{model}", "--session", str(out), "hi"],
        cwd=ws, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = [
        "".join(c["text"] for c in entry["message"]["content"])
        for entry in map(json.loads, out.read_text().splitlines())
        if entry.get("type") == "message" and entry["message"]["role"] == "toolResult"
    ]
    assert results == [
        f"Writing '{ws}/session.jsonl' is denied: pi's session file is protected from the agent",
        f"Writing '{ws}/pi.toml' {CONFIG_TEXT}",
    ]


# -- sandboxed commands ----------------------------------------------------------------------

ATTEMPTS = (
    "echo x >> pi.toml; echo x >> rules/default.rules; echo x >> .claude/settings.json; "
    "echo x >> .claude/hooks/check.sh; cat audit.jsonl; echo x >> audit.jsonl; echo done"
)


async def assert_commands_cannot_touch(session: Session, ws: Path, expected: str) -> None:
    before = snapshot(ws)
    assert await call(session, "read", path="a.txt") == ("hello\n", False)  # an audit line
    audit = (ws / "audit.jsonl").read_text()
    assert audit
    text, is_error = await call(session, "bash", command=ATTEMPTS)
    assert (text, is_error) == (expected, False)
    assert snapshot(ws) == before
    assert (ws / "audit.jsonl").read_text().startswith(audit)
    # the owner's own files stay writable by commands
    assert await call(session, "bash", command="echo more >> a.txt; cat a.txt") == (
        "hello\nmore\n",
        False,
    )


async def test_bwrap_mounts_pis_files_read_only_and_hides_the_audit_log(
    tmp_path: Path, bwrap_ok: None
) -> None:
    ws = make_workspace(tmp_path, 'backend = "bwrap"')
    session = project_session(ws)
    expected = "".join(
        f"/bin/bash: line 1: {name}: Read-only file system\n"
        for name in (
            "pi.toml",
            "rules/default.rules",
            ".claude/settings.json",
            ".claude/hooks/check.sh",
        )
    )
    expected += (
        "cat: audit.jsonl: Permission denied\n/bin/bash: line 1: audit.jsonl: Permission denied\n"
        "done\n"
    )
    await assert_commands_cannot_touch(session, ws, expected)


async def test_a_container_mounts_pis_files_read_only_and_hides_the_audit_log(
    tmp_path: Path, podman: PodmanSession
) -> None:
    box = {
        "cli": podman.cli,
        "cli_args": podman.cli_args,
        "run_args": podman.run_args,
        "image": podman.image(),
        "workdir": "/work",
    }
    ws = make_workspace(tmp_path, 'backend = "container"')
    config: dict[str, Any] = load_config(ws / "pi.toml").data
    config["sandbox"]["container"] = box
    pm = PiPluginManager()
    pm.register(builtin_plugin, name="builtin_tools")
    pm.register(sandbox_plugin, name="sandbox")
    async with build_session(pm, ws, config) as session:
        expected = "".join(
            f"bash: line 1: {name}: Read-only file system\n"
            for name in (
                "pi.toml",
                "rules/default.rules",
                ".claude/settings.json",
                ".claude/hooks/check.sh",
            )
        )
        expected += "bash: line 1: audit.jsonl: Read-only file system\ndone\n"  # cat: empty
        await assert_commands_cannot_touch(session, ws, expected)


async def test_the_checkpoint_directory_is_hidden(tmp_path: Path) -> None:
    """The checkpoints keep earlier versions of the workspace's files (denied ones too): a
    session that records them (``pi call``) neither reads nor writes their directory."""
    ws = make_workspace(tmp_path)
    state = tmp_path / "state"
    with (ws / "pi.toml").open("a") as config:
        config.write(f'[checkpoints]\ndir = "{state}"\n')
    pm = PiPluginManager()
    pm.register(builtin_plugin, name="builtin_tools")
    pm.register(sandbox_plugin, name="sandbox")
    session = build_session(pm, ws, load_config(ws / "pi.toml").data, host="call")
    assert session.session_context.protected_files[str(state)].hidden
    async with session:
        assert await call(session, "write", path="a.txt", content="mine\n") == (
            "Successfully wrote to a.txt",
            False,
        )
        stored = sorted(p for p in state.rglob("*") if p.is_file())
        assert stored
        for path in (state, stored[0]):
            assert await call(session, "read", path=str(path)) == (
                f"Reading '{path}' is denied: pi's checkpoint store is hidden from the agent",
                True,
            )
        target = stored[0].parent / "x"
        assert await call(session, "write", path=str(target), content="x") == (
            f"Writing '{target}' is denied: pi's checkpoint store is hidden from the agent",
            True,
        )
    assert not target.exists()
