"""Shared helpers of the loop tests: the spec's ``echo`` tool, message builders, an event
recorder. (A module of the test folder, imported by ``test_loop*.py`` and ``test_agent.py``.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from pi_core._loop.config import LoopConfig
from pi_core._loop.loop import run_agent_loop
from pi_core._pipeline.config import AgentContext
from pi_core._providers.base import ScriptedProvider
from pi_core._tools.definition import AgentTool, OnUpdate
from pi_core._wire.events import AgentEvent
from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    TextContent,
    ToolCall,
    UserMessage,
)

ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
}


def make_echo(
    log: list[Any] | None = None, *, terminate: bool | None = None, name: str = "echo"
) -> AgentTool:
    """The spec's ``echo``: ``{value: string}`` → text ``echoed: {value}``, details ``{value}``;
    every received params object is appended to ``log``."""

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None = None
    ) -> AgentToolResult:
        if log is not None:
            log.append(params)
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")],
            details={"value": params["value"]},
            terminate=terminate,
        )

    return AgentTool(name=name, description="Echo a value", parameters=ECHO_SCHEMA, execute=execute)


def make_tool(
    name: str,
    execute: Callable[[str, Any, OnUpdate | None], Awaitable[AgentToolResult]],
    *,
    schema: dict[str, Any] | None = None,
    execution_mode: Any = "parallel",
    prepare_arguments: Callable[[Any], Any] | None = None,
) -> AgentTool:
    return AgentTool(
        name=name,
        description=name,
        parameters=schema or {"type": "object", "properties": {}},
        execute=execute,
        execution_mode=execution_mode,
        prepare_arguments=prepare_arguments,
    )


def call(call_id: str, name: str, arguments: Any = None) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={} if arguments is None else arguments)


def tool_use(*calls: ToolCall, stop_reason: Any = "toolUse") -> AssistantMessage:
    return AssistantMessage(content=list(calls), stop_reason=stop_reason)


def text(answer: str, stop_reason: Any = "stop") -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=answer)], stop_reason=stop_reason)


def user(content: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=content)])


class Recorder:
    """An event sink that keeps every event (and the trio time it arrived)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.times: list[float] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        self.times.append(trio.current_time())

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def tool_events(self) -> list[str]:
        """``start:id``, ``update:id``, ``end:id``, ``msg:id`` for the tool part of the stream."""
        out: list[str] = []
        for e in self.events:
            if e.type == "tool_execution_start":
                out.append(f"start:{e.tool_call_id}")
            elif e.type == "tool_execution_update":
                out.append(f"update:{e.tool_call_id}")
            elif e.type == "tool_execution_end":
                out.append(f"end:{e.tool_call_id}")
            elif e.type == "message_end" and e.message.role == "toolResult":
                out.append(f"msg:{e.message.tool_call_id}")
        return out


async def run(
    script: list[AssistantMessage],
    tools: list[AgentTool],
    *,
    prompt: str = "Hello",
    config: LoopConfig | None = None,
    when_exhausted: Any = "error",
    **kwargs: Any,
) -> tuple[list[Any], Recorder, ScriptedProvider]:
    """One ``run_agent_loop`` with a scripted model; returns (messages, recorder, provider)."""
    provider = ScriptedProvider(script, when_exhausted=when_exhausted)
    config = config or LoopConfig()
    config.provider = provider
    recorder = Recorder()
    messages = await run_agent_loop(
        [user(prompt)], AgentContext(tools=tools), config, recorder, **kwargs
    )
    return messages, recorder, provider


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


def result_json(message: Any) -> dict[str, Any]:
    """A ToolResultMessage's JSON without its timestamp."""
    data = message.to_json_dict()
    data.pop("timestamp")
    return data
