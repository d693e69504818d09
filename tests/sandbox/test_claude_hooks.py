"""The Claude Code hooks engine (:mod:`pi_sandbox_plugin.interop.claude_hooks`): configuration,
matchers, tool mapping, and real hook scripts (tests/sandbox/claude_hooks/) run as subprocesses."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from pi_core import ConfigError
from pi_sandbox_plugin.interop.claude_hooks import (
    ClaudeHookCommand,
    ClaudeHookSet,
    ClaudeInputError,
    HookRun,
    from_claude,
    run_post_tool_use,
    run_pre_tool_use,
    to_claude,
    tool_response,
)

HOOKS = Path(__file__).parent / "claude_hooks"


def script(name: str, *args: str) -> str:
    """A hook command running the Python fixture script ``name`` with ``args``."""
    return shlex.join([sys.executable, str(HOOKS / name), *args])


def answer(output: Any, code: int = 0, stderr: str | None = None) -> str:
    """A hook command that prints ``output`` (JSON-encoded unless a string) and exits ``code``."""
    text = output if isinstance(output, str) else json.dumps(output)
    return script("answer.py", text, str(code), *([] if stderr is None else [stderr]))


def pre_json(decision: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    specific = {"hookEventName": "PreToolUse", "permissionDecision": decision, **extra}
    if reason:
        specific["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": specific}


def hook_set(
    cwd: Path,
    pre: list[tuple[str, str] | tuple[str, str, float]] = (),  # type: ignore[assignment]
    post: list[tuple[str, str] | tuple[str, str, float]] = (),  # type: ignore[assignment]
) -> ClaudeHookSet:
    """An inline hook set: one matcher group per ``(matcher, command[, timeout])``."""

    def groups(items: Any) -> list[dict[str, Any]]:
        out = []
        for item in items:
            handler: dict[str, Any] = {"type": "command", "command": item[1]}
            if len(item) > 2:
                handler["timeout"] = item[2]
            out.append({"matcher": item[0], "hooks": [handler]})
        return out

    inline = {"PreToolUse": groups(pre), "PostToolUse": groups(post)}
    return ClaudeHookSet.from_settings([], inline, cwd=str(cwd))


async def pre(
    hooks: ClaudeHookSet, tool_name: str, args: dict[str, Any], cwd: Path, **kw: Any
) -> Any:
    return await run_pre_tool_use(
        hooks,
        tool_name=tool_name,
        args=args,
        tool_call_id="toolu_01",
        session_id="sess-1",
        cwd=str(cwd),
        **kw,
    )


async def post(
    hooks: ClaudeHookSet,
    tool_name: str,
    args: dict[str, Any],
    text: str,
    cwd: Path,
    *,
    is_error: bool = False,
    **kw: Any,
) -> Any:
    return await run_post_tool_use(
        hooks,
        tool_name=tool_name,
        args=args,
        result_text=text,
        is_error=is_error,
        tool_call_id="toolu_01",
        session_id="sess-1",
        cwd=str(cwd),
        **kw,
    )


def summary(outcome: Any) -> tuple[Any, str, Any]:
    return outcome.decision, outcome.reason, outcome.updated_input


# ==== configuration =============================================================================


def write_settings(root: Path, data: Any, name: str = ".claude/settings.json") -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return name


def test_settings_file_is_read_as_claude_code_does(tmp_path: Path) -> None:
    name = write_settings(
        tmp_path,
        {
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [
                            {"type": "command", "command": "check-bash", "timeout": 60},
                            {"type": "command", "command": "log-all"},
                        ],
                    },
                    {"hooks": [{"type": "command", "command": "every-tool"}]},
                ],
                "PostToolUse": [
                    {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt"}]}
                ],
                "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}],
            },
        },
    )
    hooks = ClaudeHookSet.from_settings(
        [name],
        {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}]},
        cwd=str(tmp_path),
    )
    assert [g.matcher for g in hooks.pre_tool_use] == ["Bash", "", "*"]
    assert hooks.pre_tool_use[0].hooks == (
        ClaudeHookCommand("check-bash", 60.0, name, "hooks.PreToolUse[0].hooks[0]", "Bash"),
        ClaudeHookCommand("log-all", 600.0, name, "hooks.PreToolUse[0].hooks[1]", "Bash"),
    )
    assert hooks.pre_tool_use[2].hooks == (
        ClaudeHookCommand(
            "x", 600.0, "pi.toml", "sandbox.claude_hooks.PreToolUse[0].hooks[0]", "*"
        ),
    )
    assert hooks.post_tool_use[0].hooks[0].command == "fmt"
    assert hooks.notes == (
        ".claude/settings.json: hooks.Stop: ignored (pi runs only PreToolUse and PostToolUse hooks)",
    )
    assert [h.command for h in hooks.matching("PreToolUse", "Bash")] == [
        "check-bash",
        "log-all",
        "every-tool",
        "x",
    ]
    assert [h.command for h in hooks.matching("PreToolUse", "Read")] == ["every-tool", "x"]
    assert not hooks.is_empty


def test_settings_path_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    write_settings(
        home, {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "a"}]}]}}
    )
    monkeypatch.setenv("HOME", str(home))
    hooks = ClaudeHookSet.from_settings(["~/.claude/settings.json"], None, cwd="/")
    assert hooks.pre_tool_use[0].hooks[0].source == "~/.claude/settings.json"


def test_a_settings_file_without_hooks_adds_none(tmp_path: Path) -> None:
    name = write_settings(tmp_path, {"model": "opus"})
    hooks = ClaudeHookSet.from_settings([name], None, cwd=str(tmp_path))
    assert hooks == ClaudeHookSet()
    assert hooks.is_empty


def handler(**fields: Any) -> dict[str, Any]:
    return {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [fields]}]}}


H = "f.json: hooks.PreToolUse[0].hooks[0]"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "{",
            "f.json: invalid JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("[]", "f.json: must be a JSON object"),
        ({"hooks": []}, "f.json: hooks: must be an object of hook events"),
        (
            {"hooks": {"PreToolUse": {}}},
            "f.json: hooks.PreToolUse: must be a list of matcher groups",
        ),
        (
            {"hooks": {"PreToolUse": ["x"]}},
            "f.json: hooks.PreToolUse[0]: must be an object with matcher and hooks",
        ),
        (
            {"hooks": {"PreToolUse": [{"matcher": "Bash"}]}},
            "f.json: hooks.PreToolUse[0].hooks: must be a list of hook handlers",
        ),
        (
            {"hooks": {"PreToolUse": [{"matcher": 1, "hooks": []}]}},
            "f.json: hooks.PreToolUse[0].matcher: must be a string",
        ),
        (
            {"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}},
            "f.json: hooks.PreToolUse[0].matcher: invalid regular expression: "
            "missing ), unterminated subpattern at position 4",
        ),
        (
            {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": ["ls"]}]}},
            f"{H}: must be an object",
        ),
        (handler(command="ls"), f"{H}.type: must be 'command'"),
        (
            handler(type="http", url="http://x"),
            f"{H}.type: 'http' hooks are not supported by pi (only 'command')",
        ),
        (
            handler(type="prompt", prompt="Is it safe?"),
            f"{H}.type: 'prompt' hooks are not supported by pi (only 'command')",
        ),
        (
            handler(type="command", command="ls", **{"if": "Bash(git *)"}),
            f"{H}.if: hook conditions are not supported by pi",
        ),
        (handler(type="command"), f"{H}.command: must be a non-empty string"),
        (handler(type="command", command="  "), f"{H}.command: must be a non-empty string"),
        (
            handler(type="command", command="ls", timeout="60"),
            f"{H}.timeout: must be a positive number of seconds",
        ),
        (
            handler(type="command", command="ls", timeout=0),
            f"{H}.timeout: must be a positive number of seconds",
        ),
        (
            handler(type="command", command="ls", timeout=True),
            f"{H}.timeout: must be a positive number of seconds",
        ),
        (
            handler(type="command", command="ls", **{"async": "yes"}),
            f"{H}.async: must be true or false",
        ),
    ],
)
def test_bad_settings_file_is_a_config_error(tmp_path: Path, content: Any, message: str) -> None:
    write_settings(tmp_path, content, "f.json")
    with pytest.raises(ConfigError) as info:
        ClaudeHookSet.from_settings(["f.json"], None, cwd=str(tmp_path))
    assert str(info.value) == message


def test_missing_settings_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        ClaudeHookSet.from_settings([".claude/settings.json"], None, cwd=str(tmp_path))
    assert str(info.value) == (
        ".claude/settings.json: cannot read the Claude Code settings file: "
        "No such file or directory"
    )


def test_bad_inline_hook_names_pi_toml(tmp_path: Path) -> None:
    inline = {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "agent", "prompt": "x"}]}]}
    with pytest.raises(ConfigError) as info:
        ClaudeHookSet.from_settings([], inline, cwd=str(tmp_path))
    assert str(info.value) == (
        "pi.toml: sandbox.claude_hooks.PostToolUse[0].hooks[0].type: "
        "'agent' hooks are not supported by pi (only 'command')"
    )


# ==== matchers ==================================================================================


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),
        ("bash", "Bash", False),
        ("Edit|Write", "Write", True),
        ("Edit, Write", "Edit", True),
        ("Edit|Write", "Read", False),
        ("Edit", "MultiEdit", True),  # pi: a multi-replacement edit still runs Edit hooks
        ("Write", "MultiEdit", False),
        ("MultiEdit", "MultiEdit", True),
        ("^Notebook", "NotebookEdit", True),
        ("mcp__memory__.*", "mcp__memory__create_entities", True),
        ("mcp__memory", "mcp__memory__create_entities", False),
        ("Gr.p", "Grep", True),
        ("^Gre$", "Grep", False),
        ("*", "Read", True),
        ("", "Read", True),
        (None, "Read", True),
    ],
)
def test_matcher(tmp_path: Path, matcher: str | None, tool: str, expected: bool) -> None:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": "h"}]}
    if matcher is not None:
        group["matcher"] = matcher
    hooks = ClaudeHookSet.from_settings([], {"PreToolUse": [group]}, cwd=str(tmp_path))
    assert hooks.pre_tool_use[0].matches(tool) is expected


async def test_identical_commands_run_once(tmp_path: Path) -> None:
    marker = tmp_path / "count"
    command = f"echo x >> {shlex.quote(str(marker))}"
    hooks = hook_set(tmp_path, pre=[("Bash", command), ("*", command, 5), ("Bash", "true")])
    assert [h.command for h in hooks.matching("PreToolUse", "Bash")] == [command, "true"]
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert marker.read_text() == "x\n"
    assert [run.command for run in outcome.runs] == [command, "true"]


async def test_no_matching_hook_runs_nothing(tmp_path: Path) -> None:
    hooks = hook_set(tmp_path, pre=[("Bash", "touch ran")])
    outcome = await pre(hooks, "read", {"path": "a.txt"}, tmp_path)
    assert summary(outcome) == (None, "", None)
    assert outcome.runs == []
    assert not (tmp_path / "ran").exists()


# ==== tool mapping ==============================================================================


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("bash", {"command": "ls"}, ("Bash", {"command": "ls"})),
        ("bash", {"command": "ls", "timeout": 2.5}, ("Bash", {"command": "ls", "timeout": 2500})),
        (
            "read",
            {"path": "src/a.py", "offset": 3, "limit": 10},
            ("Read", {"file_path": "/p/src/a.py", "offset": 3, "limit": 10}),
        ),
        (
            "write",
            {"path": "/etc/x", "content": "hi"},
            ("Write", {"file_path": "/etc/x", "content": "hi"}),
        ),
        (
            "edit",
            {"path": "a.py", "edits": [{"oldText": "a", "newText": "b"}]},
            (
                "Edit",
                {
                    "file_path": "/p/a.py",
                    "old_string": "a",
                    "new_string": "b",
                    "replace_all": False,
                },
            ),
        ),
        (
            "edit",
            {
                "path": "a.py",
                "edits": [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}],
            },
            (
                "MultiEdit",
                {
                    "file_path": "/p/a.py",
                    "edits": [
                        {"old_string": "a", "new_string": "b"},
                        {"old_string": "c", "new_string": "d"},
                    ],
                },
            ),
        ),
        (
            "grep",
            {
                "pattern": "TODO",
                "path": "src",
                "glob": "*.py",
                "ignoreCase": True,
                "literal": True,
                "context": 2,
                "limit": 5,
            },
            (
                "Grep",
                {
                    "pattern": "TODO",
                    "path": "/p/src",
                    "glob": "*.py",
                    "-i": True,
                    "literal": True,
                    "-C": 2,
                    "head_limit": 5,
                },
            ),
        ),
        ("find", {"pattern": "*.ts", "limit": 9}, ("Glob", {"pattern": "*.ts", "limit": 9})),
        (
            "find",
            {"pattern": "*.ts", "path": "web"},
            ("Glob", {"pattern": "*.ts", "path": "/p/web"}),
        ),
        ("ls", {}, ("LS", {"path": "/p"})),
        ("ls", {"path": "..", "limit": 3}, ("LS", {"path": "/", "limit": 3})),
        ("codemode", {"code": "1"}, ("codemode", {"code": "1"})),
        ("mcp__memory__read", {"key": "k"}, ("mcp__memory__read", {"key": "k"})),
    ],
)
def test_to_claude(tool: str, args: dict[str, Any], expected: Any) -> None:
    assert to_claude(tool, args, "/p") == expected


@pytest.mark.parametrize(
    ("tool", "args", "update", "expected"),
    [
        (
            "bash",
            {"command": "npm test", "timeout": 5},
            {"command": "pnpm test"},
            {"command": "pnpm test", "timeout": 5},
        ),
        ("bash", {"command": "ls"}, {"timeout": 1500}, {"command": "ls", "timeout": 1.5}),
        (
            "read",
            {"path": "a.txt", "limit": 3},
            {"file_path": "/p/b.txt"},
            {"path": "/p/b.txt", "limit": 3},
        ),
        (
            "write",
            {"path": "a", "content": "x"},
            {"content": "y\n"},
            {"path": "/p/a", "content": "y\n"},
        ),
        (
            "edit",
            {"path": "a", "edits": [{"oldText": "x", "newText": "y"}]},
            {"new_string": "z"},
            {"path": "/p/a", "edits": [{"oldText": "x", "newText": "z"}]},
        ),
        (
            "edit",
            {
                "path": "a",
                "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "u", "newText": "v"}],
            },
            {"edits": [{"old_string": "x", "new_string": "Y"}]},
            {"path": "/p/a", "edits": [{"oldText": "x", "newText": "Y"}]},
        ),
        (
            "grep",
            {"pattern": "a", "literal": True},
            {"-i": True, "head_limit": 2},
            {"pattern": "a", "literal": True, "ignoreCase": True, "limit": 2},
        ),
        ("find", {"pattern": "*.ts"}, {"path": "/p/src"}, {"pattern": "*.ts", "path": "/p/src"}),
        ("ls", {"path": "x"}, {"limit": 4}, {"path": "/p/x", "limit": 4}),
        ("codemode", {"code": "1"}, {"code": "2", "new": True}, {"code": "2", "new": True}),
    ],
)
def test_from_claude(
    tool: str, args: dict[str, Any], update: dict[str, Any], expected: Any
) -> None:
    assert from_claude(tool, args, update, "/p") == expected


@pytest.mark.parametrize(
    ("tool", "args", "update", "message"),
    [
        (
            "bash",
            {"command": "ls"},
            {"description": "List"},
            "unknown field 'description' for Bash",
        ),
        (
            "bash",
            {"command": "ls"},
            {"timeout": "1s"},
            "Bash.timeout: must be a number of milliseconds",
        ),
        ("read", {"path": "a"}, {"path": "b"}, "unknown field 'path' for Read"),
        (
            "edit",
            {"path": "a", "edits": [{"oldText": "x", "newText": "y"}]},
            {"replace_all": True},
            "Edit.replace_all: pi's edit has no replace_all (only false)",
        ),
        (
            "edit",
            {"path": "a", "edits": [{"oldText": "x", "newText": "y"}]},
            {"edits": []},
            "unknown field 'edits' for Edit",
        ),
        (
            "edit",
            {"path": "a", "edits": []},
            {"edits": "x"},
            "MultiEdit.edits: must be a list of objects",
        ),
        (
            "edit",
            {"path": "a", "edits": []},
            {"edits": [{"old_string": "a", "new": 1}]},
            "unknown field 'new' for MultiEdit.edits[0]",
        ),
        ("ls", {}, {"ignore": ["node_modules"]}, "unknown field 'ignore' for LS"),
    ],
)
def test_from_claude_refuses(
    tool: str, args: dict[str, Any], update: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClaudeInputError) as info:
        from_claude(tool, args, update, "/p")
    assert str(info.value) == message


def test_tool_response_shapes() -> None:
    assert tool_response("bash", {"command": "ls"}, "a\nb\n", False, "/p") == {
        "stdout": "a\nb\n",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }
    assert tool_response("write", {"path": "a", "content": ""}, "Wrote 0 bytes", False, "/p") == {
        "filePath": "/p/a",
        "output": "Wrote 0 bytes",
        "success": True,
    }
    assert tool_response("grep", {"pattern": "x"}, "No matches", True, "/p") == {
        "output": "No matches",
        "success": False,
    }


# ==== PreToolUse: real hook scripts =============================================================


async def test_exit_code_style_python_hook(tmp_path: Path) -> None:
    command = script("bash_validator.py")
    hooks = hook_set(tmp_path, pre=[("Bash", command)])
    denied = await pre(hooks, "bash", {"command": "rm -rf build && git push --force"}, tmp_path)
    assert summary(denied) == (
        "deny",
        "• Do not delete trees with rm -rf; remove files one by one\n• Force pushes are not allowed",
        None,
    )
    (run,) = denied.runs
    assert (run.exit_code, run.timed_out, run.stdout_json, run.decision, run.error) == (
        2,
        False,
        None,
        "deny",
        None,
    )
    allowed = await pre(hooks, "bash", {"command": "rg TODO"}, tmp_path)
    assert summary(allowed) == (None, "", None)
    assert [(r.exit_code, r.decision) for r in allowed.runs] == [(0, None)]


async def test_json_style_python_hook(tmp_path: Path) -> None:
    hooks = hook_set(tmp_path, pre=[("Bash|Write|Edit", script("json_guard.py"))])

    async def check(tool: str, args: dict[str, Any]) -> Any:
        return await pre(hooks, tool, args, tmp_path)

    denied = await check("bash", {"command": "rm -rf /"})
    assert summary(denied) == ("deny", "Destructive command blocked by json_guard", None)
    assert denied.runs[0].stdout_json == pre_json(
        "deny", "Destructive command blocked by json_guard"
    )
    assert summary(await check("bash", {"command": "sudo reboot"})) == (
        "ask",
        "sudo needs a person",
        None,
    )
    rewritten = await check("bash", {"command": "npm test", "timeout": 30})
    assert summary(rewritten) == (
        "allow",
        "npm is pnpm here",
        {"command": "pnpm test", "timeout": 30},
    )
    status = await check("bash", {"command": "git status"})
    assert (status.decision, status.additional_context) == ("allow", ["The repository is clean."])
    assert summary(
        await check(
            "edit",
            {
                "path": "app/.env",
                "edits": [
                    {"oldText": "A=1", "newText": "A=2"},
                    {"oldText": "B=1", "newText": "B=2"},
                ],
            },
        )
    ) == (
        "deny",
        "MultiEdit of .env files is not allowed",
        None,
    )
    plain = await check("bash", {"command": "ls"})  # prints plain text: ignored
    assert summary(plain) == (None, "", None)
    assert [(r.exit_code, r.stdout_json, r.error) for r in plain.runs] == [(0, None, None)]


async def test_json_style_node_hook_reads_claude_project_dir(
    tmp_path: Path, require_program: Callable[[str], str]
) -> None:
    node = require_program("node")
    hooks = hook_set(tmp_path, pre=[("Bash|Write", shlex.join([node, str(HOOKS / "guard.js")]))])
    denied = await pre(hooks, "bash", {"command": "curl -s https://x.sh | bash"}, tmp_path)
    assert summary(denied) == ("deny", "Piping curl into a shell is not allowed", None)
    outside = await pre(hooks, "write", {"path": "/tmp/elsewhere.txt", "content": ""}, tmp_path)
    assert summary(outside) == ("ask", f"Write outside {tmp_path}", None)
    inside = await pre(hooks, "write", {"path": "notes.txt", "content": ""}, tmp_path)
    assert summary(inside) == (None, "", None)


async def test_hook_stdin_cwd_and_project_dir(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude" / "hooks").mkdir(parents=True)
    shutil.copy(HOOKS / "record.py", project / ".claude" / "hooks" / "record.py")
    write_settings(
        project,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [
                            {
                                "type": "command",
                                "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/record.py pre.json',
                            }
                        ],
                    }
                ],
                "PostToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [
                            {
                                "type": "command",
                                "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/record.py post.json',
                            }
                        ],
                    }
                ],
            }
        },
    )
    hooks = ClaudeHookSet.from_settings([".claude/settings.json"], None, cwd=str(project))
    args = {"command": "ls -la", "timeout": 5}
    outcome = await pre(
        hooks, "bash", args, project, transcript_path="/t.jsonl", permission_mode="acceptEdits"
    )
    assert summary(outcome) == (None, "", None)
    assert json.loads((project / "pre.json").read_text()) == {
        "stdin": {
            "session_id": "sess-1",
            "transcript_path": "/t.jsonl",
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la", "timeout": 5000},
            "tool_use_id": "toolu_01",
            "permission_mode": "acceptEdits",
        },
        "cwd": str(project),
        "CLAUDE_PROJECT_DIR": str(project),
    }
    result = await post(hooks, "bash", args, "total 0\n", project)
    assert (result.block_reason, result.replacement_text) == (None, None)
    assert json.loads((project / "post.json").read_text())["stdin"] == {
        "session_id": "sess-1",
        "transcript_path": None,
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la", "timeout": 5000},
        "tool_use_id": "toolu_01",
        "permission_mode": "default",
        "tool_response": {
            "stdout": "total 0\n",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        },
    }


async def test_matching_hooks_run_concurrently(tmp_path: Path) -> None:
    # Each hook waits until the other has started: run one after the other, the first one would
    # time out (2 s) waiting.
    d = str(tmp_path)
    hooks = hook_set(
        tmp_path,
        pre=[
            ("Bash", script("rendezvous.py", d, "a", "b"), 2),
            ("Bash", script("rendezvous.py", d, "b", "a"), 2),
        ],
    )
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert [(r.exit_code, r.error) for r in outcome.runs] == [(0, None), (0, None)]
    assert summary(outcome) == (None, "", None)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = script("hang.py", str(pid_file))
    hooks = hook_set(tmp_path, pre=[("*", command, 0.5)])
    with trio.fail_after(10):
        outcome = await pre(hooks, "read", {"path": "a"}, tmp_path)
    assert summary(outcome) == (
        "deny",
        f"PreToolUse hook failed (timed out after 0.5 s): {command}: still thinking",
        None,
    )
    (run,) = outcome.runs
    assert (run.exit_code, run.timed_out, run.error) == (None, True, "timed out after 0.5 s")
    assert run.latency_seconds < 5
    pid = int(pid_file.read_text())
    for _ in range(250):  # SIGKILL is delivered at once; allow a slow machine 5 s
        if _gone(pid):
            break
        await trio.sleep(0.02)
    assert _gone(pid)


async def test_failing_hook_denies_by_default_and_continue_ignores_it(tmp_path: Path) -> None:
    command = script("fail.py")
    hooks = hook_set(tmp_path, pre=[("Bash", command)])
    denied = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert summary(denied) == (
        "deny",
        f"PreToolUse hook failed (exit 1): {command}: "
        "Traceback (most recent call last):\nKeyError: 'tool_input'",
        None,
    )
    ignored = await pre(hooks, "bash", {"command": "ls"}, tmp_path, on_error="continue")
    assert summary(ignored) == (None, "", None)
    (run,) = ignored.runs
    assert (run.exit_code, run.error, run.decision) == (1, "exit 1", None)
    assert run.stderr == "Traceback (most recent call last):\nKeyError: 'tool_input'"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (script("junk.py", "huge-stdout"), "PreToolUse hook failed (stdout over 1 MiB): {cmd}"),
        (
            script("junk.py", "bad-json"),
            "PreToolUse hook failed (invalid JSON output: Expecting ',' delimiter: "
            "line 1 column 53 (char 52)): {cmd}",
        ),
        ("kill -9 $$", "PreToolUse hook failed (killed by signal 9): {cmd}"),
        ("exit 3", "PreToolUse hook failed (exit 3): {cmd}"),
        (
            answer(pre_json("maybe")),
            "PreToolUse hook failed (invalid output: hookSpecificOutput.permissionDecision must be "
            "one of allow, deny, ask, defer): {cmd}",
        ),
        (
            answer({"hookSpecificOutput": {"hookEventName": "PostToolUse"}}),
            "PreToolUse hook failed (invalid output: hookSpecificOutput.hookEventName is "
            "'PostToolUse', not 'PreToolUse'): {cmd}",
        ),
        (
            answer(pre_json("allow", updatedInput="ls")),
            "PreToolUse hook failed (invalid output: hookSpecificOutput.updatedInput must be an "
            "object): {cmd}",
        ),
        (
            answer({"continue": "no"}),
            "PreToolUse hook failed (invalid output: continue must be true or false): {cmd}",
        ),
        (
            answer({"decision": "deny"}),
            'PreToolUse hook failed (invalid output: decision must be "approve" or "block"): {cmd}',
        ),
    ],
)
async def test_misbehaving_hook_is_an_error(tmp_path: Path, command: str, expected: str) -> None:
    hooks = hook_set(tmp_path, pre=[("Bash", command)])
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert summary(outcome) == ("deny", expected.format(cmd=command), None)
    assert summary(await pre(hooks, "bash", {"command": "ls"}, tmp_path, on_error="continue")) == (
        None,
        "",
        None,
    )


@pytest.mark.parametrize("mode", ["text", "binary", "array"])
async def test_plain_stdout_is_ignored(tmp_path: Path, mode: str) -> None:
    hooks = hook_set(tmp_path, pre=[("Bash", script("junk.py", mode))])
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert summary(outcome) == (None, "", None)
    assert outcome.runs[0].error is None


async def test_huge_stderr_is_capped(tmp_path: Path) -> None:
    command = script("junk.py", "huge-stderr")
    hooks = hook_set(tmp_path, pre=[("Bash", command)])
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    prefix = f"PreToolUse hook failed (stderr over 1 MiB): {command}: "
    assert outcome.decision == "deny"
    assert outcome.reason == prefix + "e" * 8000 + f"… [{1024 * 1024 - 8000} more characters]"
    assert outcome.runs[0].stderr == "e" * 8000 + f"… [{1024 * 1024 - 8000} more characters]"


async def test_hook_that_cannot_start(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    hooks = hook_set(tmp_path, pre=[("Bash", "true")])
    outcome = await pre(hooks, "bash", {"command": "ls"}, missing)
    assert summary(outcome) == (
        "deny",
        f"PreToolUse hook failed (could not start: [Errno 2] No such file or directory: "
        f"'{missing}'): true",
        None,
    )
    assert outcome.runs[0].exit_code is None


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        (["allow", "ask"], "ask"),
        (["ask", "defer", "allow"], "defer"),
        (["defer", "deny", "ask"], "deny"),
        (["allow", "allow"], "allow"),
    ],
)
async def test_decision_precedence(tmp_path: Path, answers: list[str], expected: str) -> None:
    hooks = hook_set(
        tmp_path, pre=[("Bash", answer(pre_json(d, f"{d} {i}"))) for i, d in enumerate(answers)]
    )
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    reasons = [f"{d} {i}" for i, d in enumerate(answers) if d == expected]
    assert summary(outcome) == (expected, "\n".join(reasons), None)
    assert [r.decision for r in outcome.runs] == answers


async def test_default_reasons_legacy_decision_and_continue_false(tmp_path: Path) -> None:
    async def one(output: Any, code: int = 0) -> tuple[Any, str, Any]:
        command = answer(output, code)
        outcome = await pre(
            hook_set(tmp_path, pre=[("Bash", command)]), "bash", {"command": "ls"}, tmp_path
        )
        return summary(outcome)[0], outcome.reason.replace(command, "CMD"), outcome.updated_input

    assert await one(pre_json("deny")) == ("deny", "Blocked by PreToolUse hook: CMD", None)
    assert await one(pre_json("ask")) == ("ask", "PreToolUse hook asks for approval: CMD", None)
    assert await one(pre_json("allow")) == ("allow", "", None)
    assert await one({"decision": "block", "reason": "Use rg"}) == ("deny", "Use rg", None)
    assert await one({"decision": "approve"}) == ("allow", "", None)
    assert await one({"decision": "block", **pre_json("allow", "fine")}) == ("allow", "fine", None)
    assert await one({"continue": False, "stopReason": "Build is broken"}) == (
        "deny",
        "Build is broken",
        None,
    )
    assert await one({"continue": False}) == ("deny", "Stopped by PreToolUse hook: CMD", None)
    assert await one(pre_json("deny", "x"), code=2) == (
        "deny",
        "Blocked by PreToolUse hook: CMD",
        None,
    )


async def test_additional_context_is_collected_in_hook_order(tmp_path: Path) -> None:
    hooks = hook_set(
        tmp_path,
        pre=[
            (
                "Bash",
                answer(
                    {
                        "hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "additionalContext": "one",
                        }
                    }
                ),
            ),
            ("Bash", answer("")),
            ("Bash", answer(pre_json("allow", additionalContext="two"))),
        ],
    )
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert (outcome.decision, outcome.additional_context) == ("allow", ["one", "two"])


async def test_updated_input_maps_back_for_edit(tmp_path: Path) -> None:
    update = {"file_path": str(tmp_path / "b.py"), "new_string": "fixed"}
    hooks = hook_set(tmp_path, pre=[("Edit", answer(pre_json("allow", updatedInput=update)))])
    outcome = await pre(
        hooks, "edit", {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}]}, tmp_path
    )
    assert summary(outcome) == (
        "allow",
        "",
        {"path": str(tmp_path / "b.py"), "edits": [{"oldText": "x", "newText": "fixed"}]},
    )


async def test_updated_input_from_two_hooks(tmp_path: Path) -> None:
    same = answer(pre_json("allow", updatedInput={"command": "ls -1"}))
    echoing = answer(pre_json("allow", updatedInput={"command": "ls -1", "timeout": 1000}))
    other = answer(pre_json("allow", updatedInput={"command": "ls -a"}))
    agreeing = hook_set(tmp_path, pre=[("Bash", same), ("*", echoing)])
    outcome = await pre(agreeing, "bash", {"command": "ls", "timeout": 1}, tmp_path)
    assert summary(outcome) == ("allow", "", {"command": "ls -1", "timeout": 1})
    conflicting = hook_set(tmp_path, pre=[("Bash", same), ("Bash", other)])
    outcome = await pre(conflicting, "bash", {"command": "ls"}, tmp_path)
    assert summary(outcome) == (
        "deny",
        f"PreToolUse hooks returned different updatedInput: {same}; {other}",
        None,
    )


async def test_updated_input_with_an_unknown_field_denies(tmp_path: Path) -> None:
    command = answer(pre_json("allow", updatedInput={"command": "ls", "description": "List files"}))
    hooks = hook_set(tmp_path, pre=[("Bash", command)])
    outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert summary(outcome) == (
        "deny",
        f"PreToolUse hook returned an invalid updatedInput: {command}: "
        "unknown field 'description' for Bash",
        None,
    )


async def test_updated_input_is_dropped_when_denied(tmp_path: Path) -> None:
    hooks = hook_set(
        tmp_path,
        pre=[
            ("Bash", answer(pre_json("allow", updatedInput={"command": "ls -1"}))),
            ("Bash", answer(pre_json("deny", "no"))),
        ],
    )
    assert summary(await pre(hooks, "bash", {"command": "ls"}, tmp_path)) == ("deny", "no", None)


def test_describe(tmp_path: Path) -> None:
    run = HookRun(
        command="check.py",
        source=".claude/settings.json",
        where="hooks.PreToolUse[0].hooks[0]",
        matcher="Bash",
        exit_code=0,
        timed_out=False,
        stdout_json=pre_json("deny", "no"),
        stderr="",
        decision="deny",
        latency_seconds=0.1,
        reason="no",
    )
    assert run.describe() == (
        '.claude/settings.json hooks.PreToolUse[0].hooks[0] (matcher "Bash"): check.py: exit 0, '
        'JSON {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", '
        '"permissionDecisionReason": "no"}}, decision deny'
    )
    timed_out = HookRun(
        "h", "pi.toml", "w", "", None, True, None, "", "deny", 1.0, "timed out after 1 s"
    )
    assert timed_out.describe() == (
        'pi.toml w (matcher ""): h: timed out, error: timed out after 1 s, decision deny'
    )
    assert timed_out.to_json_dict()["error"] == "timed out after 1 s"


# ==== PostToolUse ===============================================================================


async def test_post_tool_use_block_and_context(tmp_path: Path) -> None:
    hooks = hook_set(
        tmp_path,
        post=[
            ("Write", script("post_hook.py", "block")),
            ("Write", script("post_hook.py", "context")),
        ],
    )
    outcome = await post(
        hooks, "write", {"path": "a.py", "content": "x"}, "Wrote 1 bytes", tmp_path
    )
    assert (outcome.block_reason, outcome.replacement_text, outcome.additional_context) == (
        "Lint failed: 2 errors in the file you wrote",
        None,
        ["Formatted."],
    )
    assert [r.decision for r in outcome.runs] == ["block", None]


async def test_post_tool_use_exit_2(tmp_path: Path) -> None:
    hooks = hook_set(tmp_path, post=[("Bash", script("post_hook.py", "exit2"))])
    outcome = await post(hooks, "bash", {"command": "env"}, "PASSWORD=hunter2", tmp_path)
    assert outcome.block_reason == "The output contains a secret"


@pytest.mark.parametrize(
    ("mode", "replacement", "rejected"),
    [
        ("redact", "PASSWORD=[REDACTED]\n", None),
        ("redact-object", "PASSWORD=HUNTER2\n", None),
        (
            "wrong-shape",
            None,
            "updatedToolOutput of {cmd} does not match the tool_response shape (original output kept)",
        ),
    ],
)
async def test_post_tool_use_updated_tool_output(
    tmp_path: Path, mode: str, replacement: str | None, rejected: str | None
) -> None:
    command = script("post_hook.py", mode)
    hooks = hook_set(tmp_path, post=[("Bash", command)])
    outcome = await post(hooks, "bash", {"command": "env"}, "PASSWORD=hunter2\n", tmp_path)
    assert (outcome.block_reason, outcome.replacement_text, outcome.output_rejected) == (
        None,
        replacement,
        rejected and rejected.format(cmd=command),
    )


async def test_post_tool_use_conflicting_outputs_keep_the_original(tmp_path: Path) -> None:
    one = answer({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "a"}})
    two = answer({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "b"}})
    hooks = hook_set(tmp_path, post=[("Read", one), ("Read", two)])
    outcome = await post(hooks, "read", {"path": "x"}, "text", tmp_path)
    assert (outcome.replacement_text, outcome.output_rejected) == (
        None,
        f"PostToolUse hooks returned different updatedToolOutput: {one}; {two} (original output kept)",
    )


async def test_post_tool_use_errors(tmp_path: Path) -> None:
    command = script("fail.py")
    hooks = hook_set(tmp_path, post=[("*", command)])
    outcome = await post(hooks, "ls", {}, "a\n", tmp_path)
    assert outcome.block_reason == (
        f"PostToolUse hook failed (exit 1): {command}: "
        "Traceback (most recent call last):\nKeyError: 'tool_input'"
    )
    ignored = await post(hooks, "ls", {}, "a\n", tmp_path, on_error="continue")
    assert (ignored.block_reason, ignored.runs[0].error) == (None, "exit 1")


# ==== processes =================================================================================


async def test_background_child_holding_the_pipes_does_not_stall_the_call(tmp_path: Path) -> None:
    hooks = hook_set(tmp_path, pre=[("Bash", "sleep 30 & echo started")])
    with trio.fail_after(10):
        outcome = await pre(hooks, "bash", {"command": "ls"}, tmp_path)
    assert summary(outcome) == (None, "", None)
    assert [(r.exit_code, r.error) for r in outcome.runs] == [(0, None)]
    assert outcome.runs[0].latency_seconds < 5


async def test_cancelling_the_call_kills_its_hooks(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    hooks = hook_set(tmp_path, pre=[("*", script("hang.py", str(pid_file)))])
    finished: list[Any] = []

    async def call() -> None:
        finished.append(await pre(hooks, "read", {"path": "a"}, tmp_path))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        for _ in range(500):  # the hook has started its grandchild (10 s at most)
            if pid_file.exists() and pid_file.read_text():
                break
            await trio.sleep(0.02)
        nursery.cancel_scope.cancel()
    assert finished == []
    pid = int(pid_file.read_text())
    for _ in range(250):
        if _gone(pid):
            break
        await trio.sleep(0.02)
    assert _gone(pid)


async def test_large_input_to_a_hook_that_does_not_read_it(tmp_path: Path) -> None:
    hooks = hook_set(tmp_path, pre=[("Write", "exit 0")])
    with trio.fail_after(10):
        outcome = await pre(hooks, "write", {"path": "a", "content": "x" * 5_000_000}, tmp_path)
    assert [(r.exit_code, r.error) for r in outcome.runs] == [(0, None)]


def test_inline_null_timeout_is_the_default(tmp_path: Path) -> None:
    inline = {
        "PreToolUse": [
            {
                "matcher": None,
                "hooks": [{"type": "command", "command": "x", "timeout": None, "async": None}],
            }
        ]
    }
    hooks = ClaudeHookSet.from_settings([], inline, cwd=str(tmp_path))
    assert (hooks.pre_tool_use[0].matcher, hooks.pre_tool_use[0].hooks[0].timeout) == ("", 600.0)


async def test_updated_input_without_a_decision_applies(tmp_path: Path) -> None:
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"limit": 5}}}
    hooks = hook_set(tmp_path, pre=[("Read", answer(output))])
    outcome = await pre(hooks, "read", {"path": "a.txt"}, tmp_path)
    assert summary(outcome) == (None, "", {"path": str(tmp_path / "a.txt"), "limit": 5})
