"""Model providers: the event protocol and ``ScriptedProvider`` (spec §1.6, §2.3)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_core._abort import Abort
from pi_core._errors import ProviderError
from pi_core._providers.base import (
    ModelProvider,
    ModelRequest,
    ScriptedProvider,
    StreamDone,
    StreamError,
    error_message,
    stream_events,
)
from pi_core._wire.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall
from support import collect


def request(prompt: str = "p") -> ModelRequest:
    return ModelRequest(system_prompt=prompt, messages=[])


def answer(text: str, stop_reason: Any = "stop") -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], stop_reason=stop_reason)


async def test_scripted_provider_plays_one_message_per_call_and_records_requests() -> None:
    provider = ScriptedProvider(
        [answer("one"), {"role": "assistant", "content": [], "stopReason": "stop"}]
    )
    assert isinstance(provider, ModelProvider)
    first = await collect(provider, request("a"))
    second = await collect(provider, request("b"))
    assert [type(e) for e in first + second] == [StreamDone, StreamDone]
    assert first[0].message.text == "one"
    assert second[0].message.content == []
    assert [r.system_prompt for r in provider.requests] == ["a", "b"]
    assert provider.played == 2


async def test_played_messages_are_copies() -> None:
    script = answer("one")
    provider = ScriptedProvider([script], when_exhausted="repeat")
    first = await collect(provider, request())
    first[0].message.content.append(TextContent(text="mutated"))
    again = await collect(provider, request())
    assert again[0].message.text == "one"
    assert script.text == "one"


async def test_when_exhausted_error_raises_provider_error() -> None:
    provider = ScriptedProvider([answer("one")])
    await collect(provider, request())
    with pytest.raises(
        ProviderError, match=r"^ScriptedProvider has no more messages \(1 played\)$"
    ):
        await collect(provider, request())


async def test_when_exhausted_stop_and_message() -> None:
    stop = ScriptedProvider([], when_exhausted="stop")
    events = await collect(stop, request())
    assert events[0].message.content == []
    assert events[0].message.stop_reason == "stop"
    fixed = ScriptedProvider([], when_exhausted=answer("always"))
    assert (await collect(fixed, request()))[0].message.text == "always"
    assert (await collect(fixed, request()))[0].message.text == "always"


async def test_error_stop_reasons_are_error_events() -> None:
    failing = AssistantMessage(content=[], stop_reason="error", error_message="overloaded")
    events = await collect(ScriptedProvider([failing]), request())
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].reason == "error"
    assert events[0].error.error_message == "overloaded"


async def test_an_aborted_run_gets_an_aborted_message_and_keeps_the_script() -> None:
    abort = Abort()
    abort.abort()
    provider = ScriptedProvider([answer("kept")])
    events = await collect(provider, request(), abort)
    assert isinstance(events[0], StreamError)
    assert events[0].error.to_json_dict() | {"timestamp": 0} == {
        "role": "assistant",
        "content": [],
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "aborted",
        "errorMessage": "Operation aborted",
        "timestamp": 0,
    }
    assert provider.played == 0
    assert len(provider.requests) == 1


def test_stream_events_for_text_thinking_and_tool_calls() -> None:
    message = AssistantMessage(
        content=[
            ThinkingContent(thinking="hmm"),
            TextContent(text="Hi"),
            ToolCall(id="c1", name="read", arguments={"path": "a"}),
        ],
        stop_reason="toolUse",
    )
    events = stream_events(message)
    summary = [
        {k: v for k, v in e.to_json_dict().items() if k not in ("partial", "message")}
        for e in events
    ]
    assert summary == [
        {"type": "start"},
        {"type": "thinking_start", "contentIndex": 0},
        {"type": "thinking_delta", "contentIndex": 0, "delta": "hmm"},
        {"type": "thinking_end", "contentIndex": 0, "content": "hmm"},
        {"type": "text_start", "contentIndex": 1},
        {"type": "text_delta", "contentIndex": 1, "delta": "Hi"},
        {"type": "text_end", "contentIndex": 1, "content": "Hi"},
        {"type": "toolcall_start", "contentIndex": 2},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"path": "a"}'},
        {
            "type": "toolcall_end",
            "contentIndex": 2,
            "toolCall": {
                "type": "toolCall",
                "id": "c1",
                "name": "read",
                "arguments": {"path": "a"},
            },
        },
        {"type": "done", "reason": "toolUse"},
    ]
    partials = [e.partial for e in events[:-1]]  # type: ignore[union-attr]
    assert [len(p.content) for p in partials] == [0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert partials[1].content[0].thinking == ""
    assert partials[7].content[2].arguments == {}
    assert events[-1].message is message  # type: ignore[union-attr]


def test_error_message_shape() -> None:
    failed = error_message("boom")
    assert failed.to_json_dict() | {"timestamp": 0} == {
        "role": "assistant",
        "content": [{"type": "text", "text": ""}],
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": "error",
        "errorMessage": "boom",
        "timestamp": 0,
    }
    assert error_message("x", aborted=True).stop_reason == "aborted"


async def test_stream_deltas_option_yields_the_full_stream() -> None:
    provider = ScriptedProvider([answer("Hi")], stream_deltas=True)
    events = await collect(provider, request())
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "done"]
