"""``pi run`` against loopback servers speaking the OpenAI and Anthropic streaming protocols
(issue 5, "done when"): a multi-turn task with the real built-in tools, end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import Result
from protocol_servers import (
    ProtocolServer,
    Reply,
    anthropic_frames,
    anthropic_text_block,
    anthropic_tool_block,
    openai_chunk,
    openai_frames,
    openai_text_reply,
    openai_tool_call_chunks,
)

BUILTINS = ("-p", "pi_builtin_tools.plugin")
EDIT_ARGS = '{"path": "a.txt", "edits": [{"oldText": "hello", "newText": "goodbye"}]}'

EXPECTED_SCREEN = """\
model: {model}
cwd: {cwd}

Let me look.
• read a.txt
• ls {{"path":"."}}
↳ read a.txt
  hello world
↳ ls {{"path":"."}}
  a.txt

Changing it.
• edit a.txt
  Successfully replaced 1 block(s) in a.txt.
  -1 hello world
  +1 goodbye world

Done: a.txt now says goodbye.

"""


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch, plugin_env: Path) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    (plugin_env / "a.txt").write_text("hello world\n")
    return plugin_env


def _body(out: str) -> str:
    return out.rsplit("\n", 2)[0].rsplit("\n", 1)[0] + "\n\n"


def test_openai_protocol_multi_turn_task(pi: Callable[..., Result], keys: Path) -> None:
    replies = [
        Reply(
            frames=openai_frames(
                openai_chunk({"role": "assistant", "content": ""}),
                openai_chunk({"content": "Let me look."}),
                *openai_tool_call_chunks(0, "call_a", "read", ['{"pa', 'th": "a.t', 'xt"}']),
                *openai_tool_call_chunks(1, "call_b", "ls", ['{"path"', ': "."}']),
                openai_chunk({}, "tool_calls"),
            )
        ),
        Reply(
            frames=openai_frames(
                openai_chunk({"role": "assistant", "content": "Changing it."}),
                *openai_tool_call_chunks(0, "call_c", "edit", [EDIT_ARGS[:20], EDIT_ARGS[20:]]),
                openai_chunk({}, "tool_calls"),
            )
        ),
        openai_text_reply(["Done: a.txt ", "now says goodbye."]),
    ]
    with ProtocolServer(replies) as server:
        r = pi(*BUILTINS, "run", "change hello to goodbye", "--model", "openai:gpt-test",
               "--base-url", server.url, "--tools", "read,ls,edit")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    assert _body(r.out) == EXPECTED_SCREEN.format(model="openai:gpt-test", cwd=keys)
    assert r.out.splitlines()[-1].startswith("3 turns, 3 tool calls, 0 errors, ")
    assert (keys / "a.txt").read_text() == "goodbye world\n"
    assert len(server.requests) == 3
    first = server.requests[0].body
    assert first["model"] == "gpt-test"
    assert [t["function"]["name"] for t in first["tools"]] == ["read", "ls", "edit"]
    assert first["messages"][0]["role"] in ("system", "developer")
    assert "- read: Read file contents" in first["messages"][0]["content"]
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_a", "hello world\n"),
        ("call_b", "a.txt"),
    ]


def test_anthropic_protocol_multi_turn_task(pi: Callable[..., Result], keys: Path) -> None:
    replies = [
        Reply(
            frames=anthropic_frames(
                [
                    *anthropic_text_block(0, ["Let me ", "look."]),
                    *anthropic_tool_block(1, "toolu_a", "read", ['{"path":', ' "a.txt"}']),
                    *anthropic_tool_block(2, "toolu_b", "ls", ['{"path": "."}']),
                ],
                "tool_use",
            )
        ),
        Reply(
            frames=anthropic_frames(
                [
                    *anthropic_text_block(0, ["Changing it."]),
                    *anthropic_tool_block(1, "toolu_c", "edit", [EDIT_ARGS[:7], EDIT_ARGS[7:]]),
                ],
                "tool_use",
            )
        ),
        Reply(
            frames=anthropic_frames(
                anthropic_text_block(0, ["Done: a.txt now says goodbye."]), "end_turn"
            )
        ),
    ]
    with ProtocolServer(replies) as server:
        r = pi(*BUILTINS, "run", "change hello to goodbye", "--model", "anthropic:claude-test",
               "--base-url", server.url, "--tools", "read,ls,edit", "--session", "../s.jsonl")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    assert _body(r.out) == EXPECTED_SCREEN.format(model="anthropic:claude-test", cwd=keys)
    assert (keys / "a.txt").read_text() == "goodbye world\n"
    assert len(server.requests) == 3
    first = server.requests[0].body
    assert first["model"] == "claude-test"
    assert [t["name"] for t in first["tools"]] == ["read", "ls", "edit"]
    results = [
        block
        for message in server.requests[1].body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [b["tool_use_id"] for b in results] == ["toolu_a", "toolu_b"]
    # the session file holds the whole conversation, with the provider's metadata
    entries = [json.loads(line) for line in (keys.parent / "s.jsonl").read_text().splitlines()]
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert roles == ["system", "user", "assistant", "toolResult", "toolResult", "assistant",
                     "toolResult", "assistant"]  # fmt: skip
    assert entries[-1]["message"]["stopReason"] == "stop"


def test_strict_tools_flag_sends_prefer_tools_strict(pi: Callable[..., Result], keys: Path) -> None:
    """``--strict-tools``: the built-in tools that prefer JSON-schema constrained sampling (read,
    bash) go strict with their schema converted; grep does not ask for it (issue 11 item 7)."""
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        r = pi(*BUILTINS, "run", "hi", "--model", "openai:gpt-test", "--base-url", server.url,
               "--tools", "bash,grep", "--strict-tools")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
    assert tools["bash"]["strict"] is True
    assert tools["bash"]["parameters"]["required"] == ["command", "timeout"]
    assert tools["bash"]["parameters"]["additionalProperties"] is False
    assert tools["bash"]["parameters"]["properties"]["timeout"] == {
        "anyOf": [
            {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
            {"type": "null"},
        ]
    }
    assert tools["grep"]["strict"] is False
    assert "additionalProperties" not in tools["grep"]["parameters"]
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        r = pi(*BUILTINS, "run", "hi", "--model", "openai:gpt-test", "--base-url", server.url,
               "--tools", "bash")  # fmt: skip
    assert (r.status, r.err) == (0, "")
    assert "strict" not in server.requests[0].body["tools"][0]["function"]
