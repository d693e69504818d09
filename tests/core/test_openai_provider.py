"""``openai:MODEL`` against a loopback chat-completions server (issue 5 items 1 and 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from protocol_servers import (
    ProtocolServer,
    Reply,
    openai_chunk,
    openai_frames,
    openai_text_reply,
    openai_tool_call_chunks,
)

from pi_core._abort import Abort
from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._providers.base import ModelProvider, StreamDelta
from pi_core._providers.http import HttpSettings, RetryPolicy
from pi_core._providers.openai import OpenAIProvider, convert_messages, error_text
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


READ_TOOL = AgentTool(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    execute=None,  # type: ignore[arg-type]
)


def provider_for(server: ProtocolServer, **kwargs: Any) -> OpenAIProvider:
    kwargs.setdefault("settings", FAST)
    return OpenAIProvider("gpt-test", base_url=f"{server.url}/v1", **kwargs)


# --- streaming text -----------------------------------------------------------------------


async def test_text_stream_events_message_and_request() -> None:
    with ProtocolServer([openai_text_reply(["Hel", "lo", "!"])]) as server:
        provider = provider_for(server, api_key="sk-test")
        assert isinstance(provider, ModelProvider)
        events = await collect(provider, request())
    assert kinds(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo", "!"]
    assert [e.partial.text for e in events[1:6]] == ["", "Hel", "Hello", "Hello!", "Hello!"]
    assert events[5].content == "Hello!"
    assert events[0].partial.content == []
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello!"}],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": usage(20, 5),
        "stopReason": "stop",
    }
    (received,) = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test"
    assert received.headers["accept"] == "text/event-stream"
    assert received.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are pi."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_no_key_sends_no_authorization_and_options_reach_the_body() -> None:
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        provider = provider_for(server, max_tokens=256, temperature=0.2)
        req = request(tools=[READ_TOOL])
        req.options["max_tokens"] = 512
        await collect(provider, req)
    (received,) = server.requests
    assert "authorization" not in received.headers
    assert received.body["max_completion_tokens"] == 512
    assert received.body["temperature"] == 0.2
    assert received.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            },  # no "strict": the server is not declared to support strict tools (Pi 1.6)
        }
    ]


# --- tool calls ---------------------------------------------------------------------------


def two_calls_reply() -> Reply:
    return Reply(
        frames=openai_frames(
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({"content": "Reading"}),
            openai_chunk({"content": " both."}),
            *openai_tool_call_chunks(0, "call_a", "read", ['{"pa', 'th": "a', '.txt"}']),
            *openai_tool_call_chunks(
                1, "call_b", "write", ['{"path": "b.txt", ', '"content": "h\\u00e9llo\\n"}']
            ),
            openai_chunk({}, "tool_calls"),
            openai_chunk(
                usage={
                    "prompt_tokens": 120,
                    "completion_tokens": 40,
                    "total_tokens": 160,
                    "prompt_tokens_details": {"cached_tokens": 100},
                },
                choices=False,
            ),
        )
    )


async def test_two_tool_calls_with_arguments_split_across_chunks() -> None:
    with ProtocolServer([two_calls_reply()]) as server:
        events = await collect(provider_for(server), request("go", [READ_TOOL]))
    assert kinds(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "text_end",
        "toolcall_end",
        "toolcall_end",
        "done",
    ]
    deltas = [(e.content_index, e.delta) for e in events if e.type == "toolcall_delta"]
    assert deltas == [
        (1, ""),
        (1, '{"pa'),
        (1, 'th": "a'),
        (1, '.txt"}'),
        (2, ""),
        (2, '{"path": "b.txt", '),
        (2, '"content": "h\\u00e9llo\\n"}'),
    ]
    # while streaming, the partial shows the arguments parsed as far as they go
    partial_args = [e.partial.content[1].arguments for e in events[4:9]]
    assert partial_args == [{}, {}, {}, {"path": "a"}, {"path": "a.txt"}]
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [e.tool_call.to_json_dict() for e in ends] == [
        {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a.txt"}},
        {
            "type": "toolCall",
            "id": "call_b",
            "name": "write",
            "arguments": {"path": "b.txt", "content": "héllo\n"},
        },
    ]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading both."},
            {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a.txt"}},
            {
                "type": "toolCall",
                "id": "call_b",
                "name": "write",
                "arguments": {"path": "b.txt", "content": "héllo\n"},
            },
        ],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": usage(20, 40, cache_read=100),
        "stopReason": "toolUse",
    }
    assert events[-1].reason == "toolUse"


async def test_length_stop_completes_cut_off_arguments() -> None:
    reply = Reply(
        frames=openai_frames(
            *openai_tool_call_chunks(0, "call_w", "write", ['{"path": "big.txt", "content": "abc']),
            openai_chunk({}, "length"),
        )
    )
    with ProtocolServer([reply]) as server:
        events = await collect(provider_for(server), request())
    message = final(events)
    assert message.stop_reason == "length"
    assert message.content == [
        ToolCall(id="call_w", name="write", arguments={"path": "big.txt", "content": "abc"})
    ]
    assert message.usage == usage(0, 0)


async def test_arguments_that_are_not_json_become_an_empty_object() -> None:
    reply = Reply(
        frames=openai_frames(
            *openai_tool_call_chunks(0, "call_x", "read", ["path=a.txt"]),
            openai_chunk({}, "tool_calls"),
        )
    )
    with ProtocolServer([reply]) as server:
        events = await collect(provider_for(server), request())
    assert final(events).content == [ToolCall(id="call_x", name="read", arguments={})]


async def test_reasoning_content_becomes_a_thinking_block() -> None:
    reply = Reply(
        frames=openai_frames(
            openai_chunk({"role": "assistant", "reasoning_content": "Let me"}),
            openai_chunk({"reasoning_content": " think."}),
            openai_chunk({"content": "42"}),
            openai_chunk({}, "stop"),
        )
    )
    with ProtocolServer([reply]) as server:
        events = await collect(provider_for(server), request())
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "text_start",
        "text_delta",
        "thinking_end",
        "text_end",
        "done",
    ]
    assert final(events).content == [
        ThinkingContent(thinking="Let me think.", thinking_signature="reasoning_content"),
        TextContent(text="42"),
    ]


async def test_content_filter_ends_with_an_error_message() -> None:
    reply = Reply(
        frames=openai_frames(openai_chunk({"content": "Part"}), openai_chunk({}, "content_filter"))
    )
    with ProtocolServer([reply]) as server:
        events = await collect(provider_for(server), request())
    assert events[-1].type == "error"
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Part"}],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": usage(0, 0),
        "stopReason": "error",
        "errorMessage": "Provider finish_reason: content_filter",
    }


async def test_error_object_in_the_stream_ends_the_call() -> None:
    reply = Reply(
        frames=[
            *openai_frames(openai_chunk({"content": "Hi"}), done=False),
            'data: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n',
        ]
    )
    with ProtocolServer([reply]) as server:
        events = await collect(provider_for(server), request())
    message = final(events)
    assert (message.stop_reason, message.error_message) == ("error", "The server had an error")
    assert message.content == [TextContent(text="Hi")]


# --- HTTP failures and retries --------------------------------------------------------------


def rate_limited(retry_after: str) -> Reply:
    return Reply(
        status=429,
        headers={"retry-after": retry_after},
        body=b'{"error": {"message": "Rate limit reached for requests", "type": "requests"}}',
    )


async def test_429_then_success_waits_retry_after_and_retries() -> None:
    with ProtocolServer([rate_limited("0.3"), openai_text_reply(["fine"])]) as server:
        started = trio.current_time()
        events = await collect(provider_for(server), request())
        elapsed = trio.current_time() - started
    assert final(events).text == "fine"
    assert final(events).stop_reason == "stop"
    assert kinds(events)[0] == "start"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert elapsed >= 0.3


async def test_500_until_giving_up_ends_with_the_provider_message() -> None:
    failing = [
        Reply(status=500, body=b'{"error": {"message": "The server had an error"}}')
        for _ in range(3)
    ]
    with ProtocolServer(failing) as server:
        events = await collect(provider_for(server), request())
    assert len(server.requests) == 3  # the first attempt and max_retries=2 retries
    assert kinds(events) == ["error"]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": usage(0, 0),
        "stopReason": "error",
        "errorMessage": "500 The server had an error",
    }


async def test_400_is_not_retried() -> None:
    bad = Reply(status=400, body=b'{"error": {"message": "Invalid model", "code": null}}')
    with ProtocolServer([bad, openai_text_reply(["never"])]) as server:
        events = await collect(provider_for(server), request())
    assert len(server.requests) == 1
    assert final(events).error_message == "400 Invalid model"


async def test_connection_refused_is_retried_then_reported() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", settings=FAST)
    events = await collect(provider, request())
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Connection error: ")


def test_error_text_wording() -> None:
    assert error_text(429, b'{"error": {"message": "slow down"}}') == "429 slow down"
    assert error_text(500, b'{"error": {"code": 1}}') == '500 {"code":1}'
    assert error_text(502, b"Bad Gateway") == "502 Bad Gateway"
    assert error_text(503, b"") == "503 status code (no body)"


# --- abort -----------------------------------------------------------------------------------


async def test_abort_cancels_the_stream_promptly() -> None:
    reply = Reply(frames=openai_frames(openai_chunk({"content": "Hel"}), done=False), hang=True)
    abort = Abort()
    events: list[Any] = []
    with ProtocolServer([reply]) as server:
        started = trio.current_time()
        async for event in provider_for(server).stream(request(), abort):
            events.append(event)
            if event.type == "text_delta":
                abort.abort()
        elapsed = trio.current_time() - started
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert wire(final(events)) == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hel"}],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "usage": usage(0, 0),
        "stopReason": "aborted",
        "errorMessage": "Operation aborted",
    }
    assert elapsed < 2


async def test_aborted_before_the_call_sends_nothing() -> None:
    abort = Abort()
    abort.abort()
    with ProtocolServer([openai_text_reply(["x"])]) as server:
        events = await collect(provider_for(server), request(), abort)
    assert server.requests == []
    assert kinds(events) == ["error"]
    assert final(events).stop_reason == "aborted"


# --- pi messages → request -------------------------------------------------------------------


def test_convert_messages_full_history() -> None:
    history = [
        UserMessage(content="Fix it", timestamp=1),
        UserMessage(
            content=[TextContent(text="see"), ImageContent(data="AAAA", mime_type="image/png")],
            timestamp=2,
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hmm"),
                TextContent(text="Looking"),
                TextContent(text="  "),
                ToolCall(id="c1", name="read", arguments={"path": "a.txt"}),
                ToolCall(id="c2", name="ls", arguments={}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="c1",
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
        AssistantMessage(content=[TextContent(text="partial")], stop_reason="aborted"),
        AssistantMessage(
            content=[ToolCall(id="c3", name="read", arguments={"path": "b"})],
            stop_reason="toolUse",
        ),
        UserMessage(content="and?", timestamp=3),
    ]
    assert convert_messages("SYS", history) == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "Fix it"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Looking",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.txt"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "content": "line 1\nline 2", "tool_call_id": "c1"},
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "c2"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BBBB"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c3",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"b"}'},
                }
            ],
        },
        {"role": "tool", "content": "No result provided", "tool_call_id": "c3"},
        {"role": "user", "content": "and?"},
    ]


# --- the loop against the server ---------------------------------------------------------------


async def test_run_agent_loop_multi_turn_writes_a_file(tmp_path: Path) -> None:
    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file in the workspace.

        Args:
            path: Relative path.
            content: The whole text.
        """
        target = tmp_path / path
        target.write_text(content)
        return f"Wrote {len(content)} bytes to {path}"

    @tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return (tmp_path / path).read_text()

    turn1 = Reply(
        frames=openai_frames(
            openai_chunk({"role": "assistant", "content": None}),
            *openai_tool_call_chunks(
                0,
                "call_1",
                "write_file",
                ['{"path": "hello.txt",', ' "content": "Hello from pi\\n"}'],
            ),
            openai_chunk({}, "tool_calls"),
        )
    )
    turn2 = Reply(
        frames=openai_frames(
            *openai_tool_call_chunks(0, "call_2", "read_file", ['{"path": "hello.txt"}']),
            openai_chunk({}, "tool_calls"),
        )
    )
    turn3 = openai_text_reply(["Done: ", "hello.txt says hi."])
    tools = [to_agent_tool(write_file), to_agent_tool(read_file)]
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    with ProtocolServer([turn1, turn2, turn3]) as server:
        config = LoopConfig(provider=provider_for(server))
        messages = await run_agent_loop(
            ["Create hello.txt and check it"],
            AgentContext(system_prompt="You are pi.", tools=tools),
            config,
            emit,
        )
    assert (tmp_path / "hello.txt").read_text() == "Hello from pi\n"
    assert [m.role for m in messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert [m.stop_reason for m in messages if m.role == "assistant"] == [
        "toolUse",
        "toolUse",
        "stop",
    ]
    assert messages[2].text == "Wrote 14 bytes to hello.txt"
    assert messages[4].text == "Hello from pi\n"
    assert messages[5].text == "Done: hello.txt says hi."
    assert len(server.requests) == 3
    assert server.requests[2].body["messages"] == [
        {"role": "system", "content": "You are pi."},
        {"role": "user", "content": "Create hello.txt and check it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": '{"path":"hello.txt","content":"Hello from pi\\n"}',
                    },
                }
            ],
        },
        {"role": "tool", "content": "Wrote 14 bytes to hello.txt", "tool_call_id": "call_1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"hello.txt"}'},
                }
            ],
        },
        {"role": "tool", "content": "Hello from pi\n", "tool_call_id": "call_2"},
    ]
    assert [t["function"]["name"] for t in server.requests[0].body["tools"]] == [
        "write_file",
        "read_file",
    ]
    updates = [e for e in events if e.type == "message_update"]
    assert [u.assistant_message_event["type"] for u in updates[-4:]] == [
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
    ]
    assert isinstance(events[-1].messages, list)
    assert events[-1].type == "agent_end"


async def test_run_agent_loop_provider_error_ends_the_run() -> None:
    failing = [Reply(status=503, body=b'{"error": {"message": "overloaded"}}') for _ in range(3)]
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    with ProtocolServer(failing) as server:
        messages = await run_agent_loop(
            ["hi"], AgentContext(), LoopConfig(provider=provider_for(server)), emit
        )
    assert [m.role for m in messages] == ["user", "assistant"]
    assert (messages[1].stop_reason, messages[1].error_message) == ("error", "503 overloaded")
    assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]


async def test_run_agent_loop_abort_mid_stream() -> None:
    reply = Reply(frames=openai_frames(openai_chunk({"content": "Work"}), done=False), hang=True)
    abort = Abort()
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)
        if event.type == "message_update" and event.assistant_message_event["type"] == "text_delta":
            abort.abort()

    with ProtocolServer([reply]) as server:
        with trio.fail_after(5):
            messages = await run_agent_loop(
                ["hi"], AgentContext(), LoopConfig(provider=provider_for(server)), emit, abort=abort
            )
    assert messages[-1].stop_reason == "aborted"
    assert messages[-1].error_message == "Operation aborted"
    assert messages[-1].content == [TextContent(text="Work")]
    assert isinstance(events[-1].messages, list)


async def test_stream_delta_events_carry_snapshots() -> None:
    with ProtocolServer([openai_text_reply(["a", "b"])]) as server:
        events = await collect(provider_for(server), request())
    deltas = [e for e in events if isinstance(e, StreamDelta)]
    # an event already yielded is never changed by later ones
    assert [d.partial.text for d in deltas] == ["", "a", "ab", "ab"]


async def test_a_consumer_that_stops_reading_closes_the_request() -> None:
    reply = Reply(frames=openai_frames(openai_chunk({"content": "Hel"}), done=False), hang=True)
    with ProtocolServer([reply]) as server:
        with trio.fail_after(3):
            stream = provider_for(server).stream(request(), None)
            seen = [await anext(stream), await anext(stream)]
            await stream.aclose()  # type: ignore[attr-defined]
    assert kinds(seen) == ["start", "text_start"]
