"""``pi replay FILE``: recorded tool calls through the agent loop (DESIGN §5, replay.mjs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import call, without_timestamps, write_jsonl

from pi_core._wire.session_files import read_session_file

SESSIONS = Path("/work/shared/sessions")


def assistant(*calls: dict[str, Any], stop_reason: str | None = "toolUse") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": list(calls)}
    if stop_reason is not None:
        message["stopReason"] = stop_reason
    return message


def result(call_id: str, name: str, text: str, is_error: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
    }
    if is_error:
        message["details"] = {}
    message["isError"] = is_error
    return message


@pytest.fixture
def two_turns(plugin_env: Path) -> Path:
    """Turn 1: a slow echo and a fast one in one parallel batch; turn 2: one echo."""
    return write_jsonl(
        plugin_env / "replay.jsonl",
        [
            assistant(
                call("c1", "echo", value="a", delay=0.2),
                call("c2", "echo", value="b"),
            ),
            assistant(call("c3", "echo", value="c")),
        ],
    )


def test_json_prints_one_result_per_call_in_source_order(pi, two_turns: Path) -> None:
    out = pi("-p", "cli_plugin", "replay", str(two_turns), "--json")
    assert (out.status, out.err) == (0, "")
    lines = out.out.splitlines()
    assert all(json.loads(line)["timestamp"] > 1_700_000_000_000 for line in lines)
    assert [without_timestamps(json.loads(line)) for line in lines] == [
        result("c1", "echo", "a"),
        result("c2", "echo", "b"),
        result("c3", "echo", "c"),
    ]


def test_rendered_results_are_separated_by_an_empty_line(pi, two_turns: Path) -> None:
    out = pi("-p", "cli_plugin", "replay", str(two_turns))
    assert out.out == (
        'echo {"value":"a","delay":0.2}\na\n\necho {"value":"b"}\nb\n\necho {"value":"c"}\nc\n'
    )


def _event_summary(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind.startswith("tool_execution"):
        return f"{kind}:{event['toolCallId']}"
    if kind in ("message_start", "message_end"):
        message = event["message"]
        return f"{kind}:{message.get('toolCallId') or message['role']}"
    if kind == "turn_end":
        return f"turn_end:{len(event['toolResults'])}"
    return kind


def test_events_start_at_the_first_tool_execution(pi, two_turns: Path) -> None:
    out = pi("-p", "cli_plugin", "replay", str(two_turns), "--events")
    assert out.status == 0
    events = [json.loads(line) for line in out.out.splitlines()]
    assert [_event_summary(e) for e in events] == [
        "tool_execution_start:c1",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        "tool_execution_end:c1",
        "message_start:c1",
        "message_end:c1",
        "message_start:c2",
        "message_end:c2",
        "turn_end:2",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "tool_execution_start:c3",
        "tool_execution_end:c3",
        "message_start:c3",
        "message_end:c3",
        "turn_end:1",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:0",
        "agent_end",
    ]
    assert events[0] == {
        "type": "tool_execution_start",
        "toolCallId": "c1",
        "toolName": "echo",
        "args": {"value": "a", "delay": 0.2},
    }
    assert events[3] == {
        "type": "tool_execution_end",
        "toolCallId": "c1",
        "toolName": "echo",
        "result": {"content": [{"type": "text", "text": "a"}]},
        "isError": False,
    }
    done = without_timestamps(events[-2]["message"])
    assert (done["content"], done["stopReason"]) == ([{"type": "text", "text": "done"}], "stop")
    system, prompt = events[-1]["messages"][:2]
    declared = [t["name"] for t in system["toolsAdded"]]
    assert declared == ["echo", "fail", "where", "wait", "stdin", "sequential"]
    assert (system["role"], system["content"], "toolsRemoved" in system) == ("system", "", False)
    assert without_timestamps(prompt) == {
        "role": "user",
        "content": [{"type": "text", "text": "replay"}],
    }


def test_sequential_option_runs_the_batch_in_order(pi, two_turns: Path) -> None:
    out = pi("-p", "cli_plugin", "replay", str(two_turns), "--events", "--sequential")
    kinds = [_event_summary(json.loads(line)) for line in out.out.splitlines()]
    assert kinds[:8] == [
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "message_start:c1",
        "message_end:c1",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        "message_start:c2",
        "message_end:c2",
    ]


def test_config_tool_execution_sequential_applies(pi, two_turns: Path, plugin_env: Path) -> None:
    (plugin_env / "pi.toml").write_text('[pi]\ntool_execution = "sequential"\n')
    out = pi("-p", "cli_plugin", "replay", str(two_turns), "--events")
    kinds = [_event_summary(json.loads(line)) for line in out.out.splitlines()]
    assert kinds[:2] == ["tool_execution_start:c1", "tool_execution_end:c1"]


def test_on_event_hook_sees_every_event_from_agent_start(pi, two_turns: Path) -> None:
    import cli_plugin

    pi("-p", "cli_plugin", "replay", str(two_turns), "--json")
    assert cli_plugin.SEEN[:6] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
    ]
    assert cli_plugin.SEEN[-1] == "agent_end"
    assert cli_plugin.SEEN.count("tool_execution_end") == 3


def test_missing_stop_reason_means_tool_use(pi, plugin_env: Path) -> None:
    file = write_jsonl(
        plugin_env / "r.jsonl", [assistant(call("c1", "echo", value="x"), stop_reason=None)]
    )
    out = pi("-p", "cli_plugin", "replay", str(file), "--events")
    turn_end = next(json.loads(x) for x in out.out.splitlines() if '"turn_end"' in x)
    assert turn_end["message"]["stopReason"] == "toolUse"


def test_length_stop_reason_executes_nothing(pi, plugin_env: Path) -> None:
    file = write_jsonl(
        plugin_env / "r.jsonl", [assistant(call("c1", "fail", message="ran"), stop_reason="length")]
    )
    out = pi("-p", "cli_plugin", "replay", str(file), "--json")
    assert [without_timestamps(json.loads(line)) for line in out.out.splitlines()] == [
        result(
            "c1",
            "fail",
            'Tool call "fail" was not executed: the response hit the output token limit, so '
            "its arguments may be truncated. Re-issue the tool call with complete arguments.",
            is_error=True,
        )
    ]


def test_a_text_reply_ends_a_run_and_the_next_message_starts_a_new_one(
    pi, plugin_env: Path
) -> None:
    file = write_jsonl(
        plugin_env / "r.jsonl",
        [
            assistant(call("c1", "echo", value="1")),
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "stopReason": "stop",
            },
            assistant(call("c2", "echo", value="2")),
        ],
    )
    out = pi("-p", "cli_plugin", "replay", str(file), "--events")
    kinds = [_event_summary(json.loads(line)) for line in out.out.splitlines()]
    assert kinds == [
        "tool_execution_start:c1",
        "tool_execution_end:c1",
        "message_start:c1",
        "message_end:c1",
        "turn_end:1",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:0",
        "agent_end",
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_end:assistant",
        "tool_execution_start:c2",
        "tool_execution_end:c2",
        "message_start:c2",
        "message_end:c2",
        "turn_end:1",
        "turn_start",
        "message_start:assistant",
        "message_end:assistant",
        "turn_end:0",
        "agent_end",
    ]


def test_aborted_message_calls_are_not_executed(pi, plugin_env: Path) -> None:
    file = write_jsonl(
        plugin_env / "r.jsonl",
        [
            assistant(call("c1", "echo", value="never"), stop_reason="aborted"),
            assistant(call("c2", "echo", value="2")),
        ],
    )
    out = pi("-p", "cli_plugin", "replay", str(file), "--json")
    assert [json.loads(line)["toolCallId"] for line in out.out.splitlines()] == ["c2"]


def test_empty_file_prints_nothing(pi, plugin_env: Path) -> None:
    (plugin_env / "empty.jsonl").write_text("\n")
    out = pi("replay", str(plugin_env / "empty.jsonl"), "--json")
    assert (out.status, out.out, out.err) == (0, "", "")


def _session_v3(path: Path) -> Path:
    """A v3 tree whose first branch (c-old) was abandoned for c-new."""
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/x"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "t",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "hi"}],
                "timestamp": 1,
            },
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "t",
            "message": assistant(call("c-old", "echo", value="old")),
        },
        {
            "type": "message",
            "id": "r1",
            "parentId": "a1",
            "timestamp": "t",
            "message": result("c-old", "echo", "old") | {"timestamp": 2},
        },
        {
            "type": "model_change",
            "id": "m1",
            "parentId": "u1",
            "timestamp": "t",
            "provider": "p",
            "modelId": "m",
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "m1",
            "timestamp": "t",
            "message": assistant(call("c-new", "echo", value="new")),
        },
    ]
    return write_jsonl(path, entries)


def test_session_v3_replays_the_active_branch_only(pi, plugin_env: Path) -> None:
    file = _session_v3(plugin_env / "session.jsonl")
    out = pi("-p", "cli_plugin", "replay", str(file), "--json")
    assert [without_timestamps(json.loads(line)) for line in out.out.splitlines()] == [
        result("c-new", "echo", "new")
    ]


def _executed_call_ids(path: Path) -> list[str]:
    return [
        c.id
        for m in read_session_file(path).assistant_messages
        if m.stop_reason not in ("error", "aborted")
        for c in m.tool_calls
    ]


@pytest.mark.parametrize(
    "name",
    [
        "kimchi-dev_user-agent_2026-04-27.jsonl",
        "pi-mono_compact_2025-12-24.jsonl",
        "pi-mono_large-session_2025-11-20.jsonl",
        "pi-mono_session_2025-12-17.jsonl",
        "pi-mono_before-compaction_2025-12-08.jsonl",
    ],
)
def test_real_session_every_recorded_call_gets_one_result_in_order(
    pi, plugin_env: Path, name: str
) -> None:
    """With no tools registered each call is ``Tool NAME not found``; the ids come back in the
    session's order, calls of aborted/error turns excluded, calls after text replies included.
    They equal the recorded results' ids, except one call in before-compaction whose process
    was killed before it recorded a result."""
    path = SESSIONS / name
    out = pi("replay", str(path), "--json", "--cwd", str(plugin_env))
    assert out.status == 0
    results = [json.loads(line) for line in out.out.splitlines()]
    ours = [r["toolCallId"] for r in results]
    assert ours == _executed_call_ids(path)
    assert {r["content"][0]["text"] for r in results} == {
        f"Tool {r['toolName']} not found" for r in results
    }
    recorded = [m.tool_call_id for m in read_session_file(path).messages if m.role == "toolResult"]
    if name.startswith("pi-mono_before-compaction"):
        ours.remove("toolu_01571BXn2nSXvrR7sxVHAXXE")
    assert ours == recorded
