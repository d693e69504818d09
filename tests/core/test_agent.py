"""``Agent``: the stateful host (spec §2.14; §8.1 scenarios 40–44)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from test_loop_support import (
    call,
    make_echo,
    make_tool,
    roles,
    text,
    tool_use,
    user,
)

from pi_core import Agent, tool
from pi_core._loop.config import LoopConfig
from pi_core._pipeline.contexts import BeforeToolCallResult
from pi_core._providers.base import ScriptedProvider
from pi_core._wire.messages import AgentToolResult, TextContent


def gate_tool(release: trio.Event, started: trio.Event) -> Any:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        started.set()
        await release.wait()
        return AgentToolResult(content=[TextContent(text="released")])

    return make_tool("gate", execute)


async def test_40_prompt_and_continue_while_running_are_rejected() -> None:
    release, started = trio.Event(), trio.Event()
    provider = ScriptedProvider([tool_use(call("g", "gate")), text("done")])
    agent = Agent(provider, tools=[gate_tool(release, started)])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(agent.prompt, "hi")
        await started.wait()
        assert agent.is_streaming is True
        with pytest.raises(RuntimeError) as prompt_error:
            await agent.prompt("again")
        assert str(prompt_error.value) == (
            "Agent is already processing a prompt. Use steer() or followUp() to queue "
            "messages, or wait for completion."
        )
        with pytest.raises(RuntimeError) as continue_error:
            await agent.continue_()
        assert str(continue_error.value) == (
            "Agent is already processing. Wait for completion before continuing."
        )
        with pytest.raises(RuntimeError) as reset_error:
            agent.reset()
        assert str(reset_error.value) == (
            "Agent is already processing. Wait for completion before resetting."
        )
        release.set()
        await agent.wait_for_idle()
    assert agent.is_streaming is False
    assert roles(agent.messages) == ["user", "assistant", "toolResult", "assistant"]


async def test_41_continue_drains_a_follow_up_after_an_assistant_tail() -> None:
    provider = ScriptedProvider([text("first"), text("second")])
    agent = Agent(provider)
    await agent.prompt("hi")
    assert roles(agent.messages) == ["user", "assistant"]
    agent.follow_up("more please")
    await agent.continue_()
    assert roles(agent.messages) == ["user", "assistant", "user", "assistant"]
    assert agent.messages[2].content[0].text == "more please"
    assert agent.messages[-1].text == "second"


async def test_42_one_at_a_time_steering_from_an_assistant_tail() -> None:
    provider = ScriptedProvider([text("a1"), text("a2"), text("a3")])
    agent = Agent(provider)
    await agent.prompt("hi")
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_()
    assert roles(agent.messages)[-4:] == ["user", "assistant", "user", "assistant"]
    assert [m.content[0].text for m in agent.messages if m.role == "user"] == ["hi", "s1", "s2"]
    assert len(provider.requests) == 3  # 1 for the prompt, 2 for the steering messages


async def test_all_mode_drains_every_queued_message_at_once() -> None:
    provider = ScriptedProvider([text("a1"), text("a2")])
    agent = Agent(provider, steering_mode="all")
    await agent.prompt("hi")
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_()
    assert roles(agent.messages) == ["user", "assistant", "user", "user", "assistant"]
    assert len(provider.requests) == 2
    assert agent.steering_mode == "all"
    agent.follow_up_mode = "all"
    assert agent.follow_up_mode == "all"


async def test_43_a_throwing_provider_closes_the_run_with_an_error_message() -> None:
    class Exploding:
        async def stream(self, request: Any, abort: Any) -> Any:
            raise RuntimeError("provider exploded")
            yield  # pragma: no cover

    agent = Agent(Exploding())
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(event.type))
    await agent.prompt("hello")
    assert seen == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    last = agent.messages[-1]
    assert (last.role, last.stop_reason, last.error_message) == (
        "assistant",
        "error",
        "provider exploded",
    )
    assert agent.error_message == "provider exploded"
    assert agent.is_streaming is False


async def test_44_pending_tool_calls() -> None:
    observed: list[Any] = []
    agent: Agent

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        observed.append(("during", set(agent.pending_tool_calls)))
        return AgentToolResult(content=[TextContent(text="ok")])

    provider = ScriptedProvider([tool_use(call("t-1", "probe")), text("done")])
    agent = Agent(provider, tools=[make_tool("probe", execute)])

    def listener(event: Any) -> None:
        if event.type in ("tool_execution_start", "tool_execution_end"):
            observed.append((event.type, set(agent.pending_tool_calls)))

    agent.subscribe(listener)
    await agent.prompt("go")
    assert observed == [
        ("tool_execution_start", {"t-1"}),
        ("during", {"t-1"}),
        ("tool_execution_end", set()),
    ]
    assert agent.pending_tool_calls == set()


async def test_continue_errors() -> None:
    agent = Agent(ScriptedProvider([text("x")]))
    with pytest.raises(ValueError, match=r"^No messages to continue from$"):
        await agent.continue_()
    await agent.prompt("hi")
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_continue_from_a_user_tail_runs_a_continuation() -> None:
    provider = ScriptedProvider([text("answer")])
    agent = Agent(provider, messages=[user("pending question")])
    seen: list[str] = []
    agent.subscribe(lambda event: seen.append(event.type))
    await agent.continue_()
    assert roles(agent.messages) == ["user", "assistant"]
    assert seen == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_listeners_run_in_order_may_be_async_and_may_take_the_abort() -> None:
    calls: list[str] = []

    async def first(event: Any) -> None:
        await trio.lowlevel.checkpoint()
        calls.append(f"1:{event.type}")

    def second(event: Any, abort: Any) -> None:
        calls.append(f"2:{event.type}:{abort.aborted}")

    agent = Agent(ScriptedProvider([text("x"), text("y")]))
    agent.subscribe(first)
    unsubscribe = agent.subscribe(second)
    await agent.prompt("hi")
    assert calls[:4] == [
        "1:agent_start",
        "2:agent_start:False",
        "1:turn_start",
        "2:turn_start:False",
    ]
    unsubscribe()
    calls.clear()
    agent.follow_up("again")
    await agent.continue_()
    assert all(c.startswith("1:") for c in calls)


async def test_abort_stops_the_active_run() -> None:
    async def sleeper(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        await trio.sleep(30)
        return AgentToolResult(content=[TextContent(text="finished")])

    provider = ScriptedProvider([tool_use(call("s", "sleeper")), text("never")])
    agent = Agent(provider, tools=[make_tool("sleeper", sleeper)])
    agent.abort()  # idle: nothing to abort
    running = trio.Event()
    agent.subscribe(lambda event: running.set() if event.type == "tool_execution_start" else None)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.prompt, "go")
            await running.wait()
            await trio.sleep(0.01)
            assert agent.pending_tool_calls == {"s"}
            assert agent.abort_handle is not None
            agent.abort()
    assert [m.text for m in agent.messages if m.role == "toolResult"] == ["Operation aborted"]
    assert agent.messages[-1].stop_reason == "aborted"
    assert agent.error_message == "Operation aborted"
    assert agent.abort_handle is None


async def test_a_failing_listener_closes_the_run_like_pi() -> None:
    failed = False

    def listener(event: Any) -> None:
        nonlocal failed
        if event.type == "turn_end" and not failed:
            failed = True
            raise RuntimeError("listener broke")

    agent = Agent(ScriptedProvider([text("x")]))
    seen: list[str] = []
    agent.subscribe(listener)
    agent.subscribe(lambda event: seen.append(event.type))
    await agent.prompt("hi")
    assert seen[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert agent.messages[-1].error_message == "listener broke"
    assert agent.error_message == "listener broke"


async def test_reset_and_queues() -> None:
    agent = Agent(ScriptedProvider([text("x")]))
    await agent.prompt("hi")
    agent.steer("s")
    agent.follow_up("f")
    assert agent.has_queued_messages() is True
    agent.reset()
    assert agent.messages == []
    assert agent.has_queued_messages() is False
    assert agent.error_message is None
    agent.steer("s")
    agent.clear_all_queues()
    assert agent.has_queued_messages() is False


async def test_agent_takes_tool_functions_config_hooks_and_a_system_prompt() -> None:
    @tool
    async def shout(word: str) -> str:
        """Shout a word."""
        return word.upper()

    async def before(ctx: Any) -> BeforeToolCallResult | None:
        if ctx.args.get("word") == "secret":
            return BeforeToolCallResult(block=True, reason="not that one")
        return None

    provider = ScriptedProvider(
        [
            tool_use(call("1", "shout", {"word": "hey"}), call("2", "shout", {"word": "secret"})),
            text("done"),
        ]
    )
    agent = Agent(
        provider,
        tools=[shout, make_echo()],
        system_prompt="be loud",
        config=LoopConfig(before_tool_call=before),
    )
    await agent.prompt("go")
    assert [m.text for m in agent.messages if m.role == "toolResult"] == ["HEY", "not that one"]
    assert provider.requests[0].system_prompt == "be loud"
    assert [t.name for t in provider.requests[0].tools] == ["shout", "echo"]


async def test_prompt_accepts_messages_and_images() -> None:
    from pi_core._wire.messages import ImageContent

    provider = ScriptedProvider([text("a"), text("b")])
    agent = Agent(provider)
    await agent.prompt("look", [ImageContent(data="AAAA", mime_type="image/png")])
    assert agent.messages[0].to_json_dict()["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ]
    await agent.prompt([user("one"), user("two")])
    assert roles(agent.messages) == ["user", "assistant", "user", "user", "assistant"]
