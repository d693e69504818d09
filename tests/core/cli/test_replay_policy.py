"""``replay`` policy on tools (issue 11 item 6, delta §6): ``pi replay --respect-replay-policy``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import call, without_timestamps, write_jsonl

import pi_builtin_tools.plugin
from pi_core import build_session, make_plugin_manager


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(calls), "stopReason": "toolUse"}


def recorded(call_id: str, name: str, text: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": 1,
    }


def session(plugin_env: Path) -> Path:
    (plugin_env / "a.txt").write_text("hello\n")
    return write_jsonl(
        plugin_env / "session.jsonl",
        [
            {"role": "user", "content": "go", "timestamp": 1},
            assistant(call("c1", "bash", command="echo ran > ran.txt; echo live")),
            recorded("c1", "bash", "recorded output\n"),
            assistant(
                call("c2", "read", path="a.txt"), call("c3", "write", path="b.txt", content="x")
            ),
            recorded("c2", "read", "stale\n"),
        ],
    )


def test_builtin_tools_declare_their_replay_policy(tmp_path: Path) -> None:
    pm = make_plugin_manager(autoload=False)
    pm.register(pi_builtin_tools.plugin, name="builtin_tools")
    classic = ("read", "bash", "powershell", "edit", "write", "grep", "find", "ls", "tool_search")
    policies = {t.name: t.replay for t in build_session(pm, tmp_path).tools if t.name in classic}
    assert policies == {
        "read": "safe",
        "bash": "never",
        "powershell": "never",
        "edit": "never",
        "write": "never",
        "grep": "safe",
        "find": "safe",
        "ls": "safe",
        "tool_search": "safe",
    }


def test_replay_reexecutes_everything_by_default(pi: Any, plugin_env: Path) -> None:
    out = pi("-p", "pi_builtin_tools.plugin", "replay", str(session(plugin_env)), "--json")
    assert (out.status, out.err) == (0, "")
    lines = [without_timestamps(json.loads(line)) for line in out.out.splitlines()]
    texts = [line["content"][0]["text"] for line in lines]
    assert texts[:2] == ["live\n", "hello\n"]
    assert texts[2].startswith("Successfully wrote")
    assert (plugin_env / "ran.txt").exists() and (plugin_env / "b.txt").exists()


def test_respect_replay_policy_reports_recorded_results_of_never_tools(
    pi: Any, plugin_env: Path
) -> None:
    out = pi(
        "-p",
        "pi_builtin_tools.plugin",
        "replay",
        str(session(plugin_env)),
        "--json",
        "--respect-replay-policy",
    )
    assert out.status == 0
    assert out.err == (
        'pi replay: c1: bash not re-executed (replay policy "never"): recorded result reported\n'
        'pi replay: c3: write not re-executed (replay policy "never"): no recorded result\n'
    )
    lines = [without_timestamps(json.loads(line)) for line in out.out.splitlines()]
    assert lines == [
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": "recorded output\n"}],
            "isError": False,
        },
        # read is "safe": it runs again and reads the file as it is now
        {
            "role": "toolResult",
            "toolCallId": "c2",
            "toolName": "read",
            "content": [{"type": "text", "text": "hello\n"}],
            "isError": False,
        },
        {
            "role": "toolResult",
            "toolCallId": "c3",
            "toolName": "write",
            "content": [
                {
                    "type": "text",
                    "text": 'Tool write was not re-executed (replay policy "never") and the replay '
                    "input holds no recorded result for call c3",
                }
            ],
            "details": {},
            "isError": True,
        },
    ]
    assert not (plugin_env / "ran.txt").exists() and not (plugin_env / "b.txt").exists()
