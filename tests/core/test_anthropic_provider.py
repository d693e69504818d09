"""``anthropic:MODEL`` against a loopback Messages server (issue 5 items 1 and 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from protocol_servers import (
    ProtocolServer,
    Reply,
    anthropic_frame,
    anthropic_frames,
    anthropic_message_start,
    anthropic_text_block,
    anthropic_tool_block,
)

from pi_core._abort import Abort
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._providers.anthropic import (
    AnthropicProvider,
    convert_messages,
    error_text,
    map_stop_reason,
)
from pi_core._providers.base import ModelProvider
from pi_core._providers.http import HttpSettings, RetryPolicy
from pi_core._tools.definition import AgentTool, to_agent_tool, tool
from pi_core._wire.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from support import collect, final, kinds, request, usage, wire

FAST = HttpSettings(timeout=10, retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05))
EPHEMERAL = {"type": "ephemeral"}

READ_TOOL = AgentTool(
    name="read",
    description="Read a file",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
    execute=None,  # type: ignore[arg-type]
)


def provider_for(server: ProtocolServer, **kwargs: Any) -> AnthropicProvider:
    kwargs.setdefault("settings", FAST)
    return AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=server.url, **kwargs)


def text_reply(pieces: list[str], stop_reason: str = "end_turn") -> Reply:
    return Reply(frames=anthropic_frames(anthropic_text_block(0, pieces), stop_reason))


# --- streaming text -------------------------------------------------------------------------


async def test_text_stream_events_message_and_request() -> None:
    with ProtocolServer([text_reply(["Hel", "lo!"])]) as server:
        provider = provider_for(server)
        assert isinstance(provider, ModelProvider)
        events = await collect(provider, request())
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.partial.text for e in events[1:5]] == ["", "Hel", "Hello!", "Hello!"]
    assert events[4].content == "Hello!"
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello!"}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": usage(30, 12),
        "stopReason": "stop",
    }
    (received,) = server.requests
    assert received.path == "/v1/messages"
    assert received.headers["x-api-key"] == "sk-ant-test"
    assert received.headers["anthropic-version"] == "2023-06-01"
    assert received.headers["accept"] == "text/event-stream"
    assert received.body == {
        "model": "claude-test",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Hi", "cache_control": EPHEMERAL}],
            }
        ],
        "max_tokens": 8192,
        "stream": True,
        "system": [{"type": "text", "text": "You are pi.", "cache_control": EPHEMERAL}],
    }


async def test_tools_options_and_no_cache_in_the_body() -> None:
    with ProtocolServer([text_reply(["ok"])]) as server:
        provider = provider_for(server, max_tokens=1000, temperature=0.5, cache=False)
        await collect(provider, request(tools=[READ_TOOL]))
    (received,) = server.requests
    assert received.body == {
        "model": "claude-test",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1000,
        "stream": True,
        "system": [{"type": "text", "text": "You are pi."}],
        "temperature": 0.5,
        "tools": [
            {
                "name": "read",
                "description": "Read a file",
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,  # kept, as Pi 1.6 does
                },
            }
        ],
    }


# --- tool use -----------------------------------------------------------------------------------


def two_tools_reply() -> Reply:
    blocks = [
        *anthropic_text_block(0, ["I'll read", " both."]),
        *anthropic_tool_block(1, "toolu_01", "read", ['{"path": ', '"a.t', 'xt"}']),
        *anthropic_tool_block(2, "toolu_02", "read", ['{"path": "b.txt", "limit"', ": 5}"]),
    ]
    start = anthropic_message_start(input_tokens=12, cache_read=500, cache_write=40)
    return Reply(frames=anthropic_frames(blocks, "tool_use", output_tokens=77, start=start))


async def test_two_tool_uses_with_input_json_split_across_deltas() -> None:
    with ProtocolServer([two_tools_reply()]) as server:
        events = await collect(provider_for(server), request("go", [READ_TOOL]))
    assert kinds(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert [(e.content_index, e.delta) for e in events if e.type == "toolcall_delta"] == [
        (1, ""),
        (1, '{"path": '),
        (1, '"a.t'),
        (1, 'xt"}'),
        (2, ""),
        (2, '{"path": "b.txt", "limit"'),
        (2, ": 5}"),
    ]
    assert [e.partial.content[1].arguments for e in events[5:11]] == [
        {},
        {},
        {},
        {"path": "a.t"},
        {"path": "a.txt"},
        {"path": "a.txt"},
    ]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I'll read both."},
            {"type": "toolCall", "id": "toolu_01", "name": "read", "arguments": {"path": "a.txt"}},
            {
                "type": "toolCall",
                "id": "toolu_02",
                "name": "read",
                "arguments": {"path": "b.txt", "limit": 5},
            },
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": usage(12, 77, cache_read=500, cache_write=40),
        "stopReason": "toolUse",
    }
    assert events[-1].reason == "toolUse"


async def test_thinking_block_with_signature() -> None:
    blocks = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Think"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig=="},
        },
        {"type": "content_block_stop", "index": 0},
        *anthropic_text_block(1, ["Answer"]),
    ]
    with ProtocolServer([Reply(frames=anthropic_frames(blocks, "end_turn"))]) as server:
        events = await collect(provider_for(server), request())
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert final(events).content == [
        ThinkingContent(thinking="Think", thinking_signature="sig=="),
        TextContent(text="Answer"),
    ]


@pytest.mark.parametrize(
    ("reason", "stop_reason", "error"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("pause_turn", "stop", None),
        ("max_tokens", "length", None),
        ("tool_use", "toolUse", None),
        ("refusal", "error", "Provider stop_reason: refusal"),
        ("something_new", "error", "Unhandled stop reason: something_new"),
    ],
)
def test_map_stop_reason(reason: str, stop_reason: str, error: str | None) -> None:
    assert map_stop_reason(reason) == (stop_reason, error)


async def test_max_tokens_stop_completes_the_cut_off_call() -> None:
    blocks = anthropic_tool_block(0, "toolu_09", "write", ['{"path": "x.py", "content": "def f('])
    with ProtocolServer([Reply(frames=anthropic_frames(blocks, "max_tokens"))]) as server:
        events = await collect(provider_for(server), request())
    message = final(events)
    assert message.stop_reason == "length"
    assert message.content == [
        ToolCall(id="toolu_09", name="write", arguments={"path": "x.py", "content": "def f("})
    ]


async def test_refusal_ends_with_an_error_message() -> None:
    with ProtocolServer([text_reply(["No"], "refusal")]) as server:
        events = await collect(provider_for(server), request())
    assert events[-1].type == "error"
    message = final(events)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "Provider stop_reason: refusal",
    )
    assert message.content == [TextContent(text="No")]


async def test_error_event_in_the_stream() -> None:
    data = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    frames = [
        anthropic_frame(anthropic_message_start()),
        *[anthropic_frame(e) for e in anthropic_text_block(0, ["Par"])[:2]],
        f"event: error\ndata: {data}\n\n",
    ]
    with ProtocolServer([Reply(frames=frames)]) as server:
        events = await collect(provider_for(server), request())
    message = final(events)
    assert (message.stop_reason, message.error_message) == ("error", data)
    assert message.content == [TextContent(text="Par")]


async def test_stream_cut_before_message_stop_is_an_error() -> None:
    frames = anthropic_frames(anthropic_text_block(0, ["Hi"]), "end_turn", stop=False)
    with ProtocolServer([Reply(frames=frames)]) as server:
        events = await collect(provider_for(server), request())
    message = final(events)
    assert (message.stop_reason, message.error_message) == (
        "error",
        "Anthropic stream ended before message_stop",
    )
    assert message.content == [TextContent(text="Hi")]


# --- HTTP failures and retries ---------------------------------------------------------------

OVERLOADED = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


async def test_429_then_success_waits_retry_after() -> None:
    limited = Reply(
        status=429,
        headers={"retry-after": "0.25"},
        body=b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
    )
    with ProtocolServer([limited, text_reply(["fine"])]) as server:
        started = trio.current_time()
        events = await collect(provider_for(server), request())
        elapsed = trio.current_time() - started
    assert final(events).text == "fine"
    assert len(server.requests) == 2
    assert elapsed >= 0.25


async def test_529_until_giving_up_reports_the_body() -> None:
    with ProtocolServer([Reply(status=529, body=OVERLOADED) for _ in range(3)]) as server:
        events = await collect(provider_for(server), request())
    assert len(server.requests) == 3
    assert kinds(events) == ["error"]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": usage(0, 0),
        "stopReason": "error",
        "errorMessage": '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    }


async def test_401_is_not_retried() -> None:
    body = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    with ProtocolServer([Reply(status=401, body=body), text_reply(["no"])]) as server:
        events = await collect(provider_for(server), request())
    assert len(server.requests) == 1
    assert final(events).error_message == "401 " + body.decode()


def test_error_text_wording() -> None:
    assert error_text(500, b"oops") == "500 oops"
    assert error_text(500, b"") == "500 status code (no body)"
    assert error_text(400, b'{"message": "bad"}') == "400 bad"


# --- abort --------------------------------------------------------------------------------


async def test_abort_cancels_the_stream_promptly() -> None:
    frames = [
        anthropic_frame(anthropic_message_start()),
        *[
            anthropic_frame(e)
            for e in anthropic_tool_block(0, "toolu_1", "read", ['{"pa'], stop=False)
        ],
    ]
    abort = Abort()
    events: list[Any] = []
    aborted_at = None
    with ProtocolServer([Reply(frames=frames, hang=True)]) as server:
        async for event in provider_for(server).stream(request(), abort):
            events.append(event)
            if event.type == "toolcall_delta" and event.delta:
                abort.abort()
                aborted_at = trio.current_time()
        assert aborted_at is not None
        # From the abort on: the server hangs, so without the abort the stream would end only
        # at FAST's 10 s timeout (the client's start and the first frames are not measured).
        elapsed = trio.current_time() - aborted_at
    assert kinds(events) == ["start", "toolcall_start", "toolcall_delta", "toolcall_delta", "error"]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {}}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": usage(30, 1),
        "stopReason": "aborted",
        "errorMessage": "Operation aborted",
    }
    assert elapsed < 2


# --- pi messages → request --------------------------------------------------------------------


def test_convert_messages_full_history() -> None:
    history = [
        UserMessage(content="Fix it", timestamp=1),
        UserMessage(content="   ", timestamp=2),
        UserMessage(
            content=[
                TextContent(text="see"),
                TextContent(text=""),
                ImageContent(data="AAAA", mime_type="image/png"),
            ],
            timestamp=3,
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="signed", thinking_signature="sig"),
                ThinkingContent(thinking="unsigned"),
                ThinkingContent(
                    thinking="[Reasoning redacted]", thinking_signature="opaque", redacted=True
                ),
                TextContent(text="Looking"),
                ToolCall(id="call|odd/id", name="read", arguments={"path": "a.txt"}),
                ToolCall(id="c2", name="ls", arguments={}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="call|odd/id",
            tool_name="read",
            content=[TextContent(text="line 1"), TextContent(text="line 2")],
            structured_content={"secret": True},
        ),
        ToolResultMessage(
            tool_call_id="c2",
            tool_name="ls",
            content=[ImageContent(data="BBBB", mime_type="image/jpeg")],
            is_error=True,
        ),
        AssistantMessage(content=[TextContent(text="oops")], stop_reason="error"),
        UserMessage(content="and?", timestamp=4),
    ]
    assert convert_messages(history) == [
        {"role": "user", "content": "Fix it"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed", "signature": "sig"},
                {"type": "text", "text": "unsigned"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Looking"},
                {
                    "type": "tool_use",
                    "id": "call_odd_id",
                    "name": "read",
                    "input": {"path": "a.txt"},
                },
                {"type": "tool_use", "id": "c2", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_odd_id",
                    "content": "line 1\nline 2",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": [
                        {"type": "text", "text": "(see attached image)"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/jpeg",
                                "data": "BBBB",
                            },
                        },
                    ],
                    "is_error": True,
                },
            ],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "and?", "cache_control": EPHEMERAL}],
        },
    ]


# --- the loop against the server -----------------------------------------------------------------


async def test_run_agent_loop_multi_turn_edits_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("draft\n")

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file in the workspace."""
        (tmp_path / path).write_text(content)
        return f"Wrote {path}"

    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return (tmp_path / path).read_text()

    turn1 = Reply(
        frames=anthropic_frames(
            [
                *anthropic_text_block(0, ["Reading first."]),
                *anthropic_tool_block(1, "toolu_r", "read_file", ['{"path":', ' "notes.txt"}']),
            ],
            "tool_use",
        )
    )
    turn2 = Reply(
        frames=anthropic_frames(
            [
                *anthropic_tool_block(
                    0,
                    "toolu_w1",
                    "write_file",
                    ['{"path": "notes.txt", ', '"content": "final\\n"}'],
                ),
                *anthropic_tool_block(
                    1, "toolu_w2", "write_file", ['{"path": "log.txt", "content": "ok"}']
                ),
            ],
            "tool_use",
        )
    )
    turn3 = text_reply(["Both files ", "written."])
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    with ProtocolServer([turn1, turn2, turn3]) as server:
        messages = await run_agent_loop(
            ["Finalize notes"],
            AgentContext(
                system_prompt="You are pi.",
                tools=[to_agent_tool(write_file), to_agent_tool(read_file)],
            ),
            LoopConfig(provider=provider_for(server)),
            emit,
        )
    assert (tmp_path / "notes.txt").read_text() == "final\n"
    assert (tmp_path / "log.txt").read_text() == "ok"
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert messages[2].text == "draft\n"
    assert [m.text for m in messages[4:6]] == ["Wrote notes.txt", "Wrote log.txt"]
    assert messages[6].text == "Both files written."
    assert messages[6].stop_reason == "stop"
    assert server.requests[2].body["messages"] == [
        {"role": "user", "content": "Finalize notes"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading first."},
                {
                    "type": "tool_use",
                    "id": "toolu_r",
                    "name": "read_file",
                    "input": {"path": "notes.txt"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_r",
                    "content": "draft\n",
                    "is_error": False,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_w1",
                    "name": "write_file",
                    "input": {"path": "notes.txt", "content": "final\n"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_w2",
                    "name": "write_file",
                    "input": {"path": "log.txt", "content": "ok"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_w1",
                    "content": "Wrote notes.txt",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_w2",
                    "content": "Wrote log.txt",
                    "is_error": False,
                    "cache_control": EPHEMERAL,
                },
            ],
        },
    ]
    assert events[-1].type == "agent_end"


async def test_run_agent_loop_length_stop_triggers_the_guard() -> None:
    blocks = anthropic_tool_block(0, "toolu_1", "read", ['{"path": "a'])
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    ran: list[Any] = []

    async def execute(call_id: str, params: Any, on_update: Any = None) -> Any:
        ran.append(params)
        raise AssertionError("must not run")

    read = AgentTool(
        name="read", description="Read", parameters=READ_TOOL.parameters, execute=execute
    )
    replies = [Reply(frames=anthropic_frames(blocks, "max_tokens")), text_reply(["Sorry."])]
    with ProtocolServer(replies) as server:
        messages = await run_agent_loop(
            ["read a"], AgentContext(tools=[read]), LoopConfig(provider=provider_for(server)), emit
        )
    assert ran == []
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[1].stop_reason == "length"
    assert messages[2].is_error is True
    assert messages[3].text == "Sorry."
