"""Tool exposure (Pi 1.6, delta §4): the registered / active / callable sets of a
:class:`~pi_core.ToolSet`, the loadout projection, and the system messages the loop writes when
the declared tools change (delta §5)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_core import (
    AgentContext,
    AgentTool,
    AgentToolResult,
    LoadoutChanges,
    LoopConfig,
    SystemMessage,
    TextContent,
    ToolLoadout,
    ToolSet,
    run_agent_loop,
)
from pi_core._errors import ConfigError
from pi_core._tools.exposure import exposures_from_config, parse_exposure_list, tool_declaration
from pi_core._wire.messages import current_tools
from pi_core.providers import ScriptedProvider

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def plain(name: str, exposure: Any = "direct", **options: Any) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=f"{name} ran")])

    return AgentTool(
        name=name,
        description=f"The {name} tool.",
        parameters=SCHEMA,
        execute=execute,
        exposure=exposure,
        **options,
    )


def five() -> list[AgentTool]:
    return [
        plain("d"),
        plain("m", "model-only"),
        plain("c", "codemode"),
        plain("f", "deferred"),
        plain("h", "hidden"),
    ]


# -- the three sets ----------------------------------------------------------------------------


def test_each_exposure_level_starts_in_its_sets() -> None:
    tools = ToolSet(five())
    assert [t.name for t in tools.registered] == ["d", "m", "c", "f", "h"]
    assert tools.active_names == ["d", "m"]
    assert [t.name for t in tools.callable_tools()] == ["d", "c", "f"]
    assert tools.rows() == [
        {"name": "d", "exposure": "direct", "active": True, "callable": True},
        {"name": "m", "exposure": "model-only", "active": True, "callable": False},
        {"name": "c", "exposure": "codemode", "active": False, "callable": True},
        {"name": "f", "exposure": "deferred", "active": False, "callable": True},
        {"name": "h", "exposure": "hidden", "active": False, "callable": False},
    ]


def test_active_order_is_stable_kept_tools_keep_their_place_new_ones_are_appended() -> None:
    tools = ToolSet(five())
    tools.set_active(["f", "m", "d", "c"])
    assert tools.active_names == ["d", "m", "f", "c"]
    tools.set_active(["c", "d"])
    assert tools.active_names == ["d", "c"]
    tools.activate(["f", "m"])
    assert tools.active_names == ["d", "c", "f", "m"]


def test_hidden_and_unknown_tools_never_become_active() -> None:
    tools = ToolSet(five())
    tools.set_active(["h", "nope", "d"])
    assert tools.active_names == ["d"]
    assert tools.is_callable("h") is False and tools.is_callable("nope") is False


def test_a_direct_tool_is_callable_only_while_active_codemode_and_deferred_always() -> None:
    tools = ToolSet(five())
    tools.set_active(["m"])
    assert [t.name for t in tools.callable_tools()] == ["c", "f"]
    tools.set_active(["m", "c", "f"])
    assert [t.name for t in tools.callable_tools()] == ["c", "f"]


def test_default_active_false_registers_a_tool_inactive() -> None:
    tools = ToolSet([plain("d"), plain("search", "model-only", default_active=False)])
    assert tools.active_names == ["d"]
    tools.replace_active(["search", "d"])
    assert tools.active_names == ["search", "d"]


def test_exposure_overrides_reset_the_default_active_set() -> None:
    tools = ToolSet(five(), {"d": "deferred"})
    assert tools.active_names == ["m"]
    tools.set_exposures({"d": "direct", "m": "hidden", "f": "model-only"})
    assert tools.active_names == ["d", "f"]
    assert tools.exposure("m") == "hidden"


def test_parse_exposure_list() -> None:
    assert parse_exposure_list("read=codemode, ls=hidden,") == {"read": "codemode", "ls": "hidden"}
    with pytest.raises(ValueError, match=r"^expected NAME=LEVEL, got 'read'$"):
        parse_exposure_list("read")
    with pytest.raises(ValueError) as info:
        parse_exposure_list("read=sideways")
    assert str(info.value) == (
        "unknown exposure 'sideways' for read (one of: direct, model-only, codemode, deferred, "
        "hidden)"
    )


def test_exposures_from_config_reads_only_the_exposure_key() -> None:
    config = {"tools": {"read": {"max_image_width": 5, "exposure": "deferred"}, "bash": {}}}
    assert exposures_from_config(config) == {"read": "deferred"}
    with pytest.raises(ConfigError) as info:
        exposures_from_config({"tools": {"ls": {"exposure": "sideways"}}})
    assert str(info.value) == (
        "pi.toml: tools.ls.exposure: Input should be 'direct', 'model-only', 'codemode', "
        "'deferred' or 'hidden' (got \"sideways\")"
    )


# -- the loadout projection --------------------------------------------------------------------


def test_prepare_loadout_replaces_descriptions_and_hides_declarations() -> None:
    seen: list[ToolLoadout] = []

    def prepare(loadout: ToolLoadout) -> LoadoutChanges:
        seen.append(loadout)
        return LoadoutChanges(
            descriptions={"d": "D, as the loadout says."}, hidden_declarations=["m"]
        )

    tools = ToolSet([plain("d"), plain("m", "model-only"), plain("p", prepare_loadout=prepare)])
    assert [t.name for t in seen[-1].declared] == ["d", "m", "p"]
    assert seen[-1].get_exposure("m") == "model-only"
    assert tools.description("d") == "D, as the loadout says."
    assert tools.hidden_declarations == ["m"]
    assert [t.description for t in tools.model_tools()] == [
        "D, as the loadout says.",
        "The m tool.",
        "The p tool.",
    ]
    tools.set_active(["d", "m"])  # p is no longer active: its hook no longer runs
    assert tools.description("d") == "The d tool."
    assert tools.hidden_declarations == []


def test_a_raising_prepare_loadout_is_reported_and_ignored() -> None:
    errors: list[tuple[str, str]] = []

    def broken(loadout: ToolLoadout) -> LoadoutChanges:
        raise RuntimeError("boom")

    tools = ToolSet(
        [plain("b", prepare_loadout=broken), plain("d")],
        on_error=lambda name, exc: errors.append((name, str(exc))),
    )
    assert tools.active_names == ["b", "d"]
    assert errors == [("b", "boom")]


# -- system messages ---------------------------------------------------------------------------


def test_current_tools_replays_removed_then_added() -> None:
    a, b = {"name": "a", "description": "1"}, {"name": "b", "description": "2"}
    a2 = {"name": "a", "description": "changed"}
    messages = [
        SystemMessage(tools_added=[a, b]),
        {"role": "user"},
        SystemMessage(tools_added=[a2], tools_removed=[{"name": "a"}]),
    ]
    assert current_tools(messages) == [b, a2]


def test_system_message_wire_json() -> None:
    message = SystemMessage(
        tools_added=[tool_declaration(plain("d"))], tools_removed=[{"name": "x"}], timestamp=5
    )
    assert message.to_json_dict() == {
        "role": "system",
        "content": "",
        "toolsAdded": [{"name": "d", "description": "The d tool.", "parameters": SCHEMA}],
        "toolsRemoved": [{"name": "x"}],
        "timestamp": 5,
    }


def loader(holder: list[ToolSet]) -> AgentTool:
    """A tool that activates ``f`` (as tool_search does) and deactivates ``m``."""

    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        (tools,) = holder
        tools.set_active([n for n in tools.active_names if n != "m"] + ["f"])
        return AgentToolResult(content=[TextContent(text="loaded f")])

    return AgentTool(name="load", description="Load f.", parameters=SCHEMA, execute=execute)


def call(*names: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": f"c{i}", "name": n, "arguments": {}}
            for i, n in enumerate(names, 1)
        ],
        "stopReason": "toolUse",
    }


def summary(event: Any) -> str:
    message = getattr(event, "message", None)
    role = getattr(message, "role", None)
    if event.type in ("message_start", "message_end") and role == "system":
        added = [t["name"] for t in message.tools_added or []]
        removed = [t["name"] for t in message.tools_removed or []]
        return f"{event.type} system +{added} -{removed}"
    if event.type in ("message_start", "message_end"):
        return f"{event.type} {role}"
    if event.type == "tool_execution_end":
        return f"{event.type} {event.tool_call_id} {event.result.content[0].text}"
    return event.type


async def test_the_loop_declares_the_tools_then_announces_each_change() -> None:
    holder: list[ToolSet] = []
    load = loader(holder)
    tools = ToolSet([plain("d"), plain("m", "model-only"), plain("f", "deferred"), load])
    holder.append(tools)
    provider = ScriptedProvider([call("f", "load"), call("f")], when_exhausted="stop")
    config = LoopConfig(provider=provider, tool_set=tools, declare_tool_changes=True)
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    new = await run_agent_loop(["go"], AgentContext(), config, emit)
    assert [summary(e) for e in events] == [
        "agent_start",
        "turn_start",
        "message_start system +['d', 'm', 'load'] -[]",
        "message_end system +['d', 'm', 'load'] -[]",
        "message_start user",
        "message_end user",
        "message_start assistant",
        "message_end assistant",
        "tool_execution_start",
        "tool_execution_end c1 Tool f not found",
        "tool_execution_start",
        "tool_execution_end c2 loaded f",
        "message_start toolResult",
        "message_end toolResult",
        "message_start toolResult",
        "message_end toolResult",
        "turn_end",
        "turn_start",
        "message_start system +['f'] -['m']",
        "message_end system +['f'] -['m']",
        "message_start assistant",
        "message_end assistant",
        "tool_execution_start",
        "tool_execution_end c1 f ran",
        "message_start toolResult",
        "message_end toolResult",
        "turn_end",
        "turn_start",
        "message_start assistant",
        "message_end assistant",
        "turn_end",
        "agent_end",
    ]
    assert [m.role for m in new] == [
        "system", "user", "assistant", "toolResult", "toolResult",
        "system", "assistant", "toolResult", "assistant",
    ]  # fmt: skip
    # each request declared exactly the tools the transcript's system messages declared so far
    assert [[t.name for t in r.tools] for r in provider.requests] == [
        ["d", "m", "load"],
        ["d", "load", "f"],
        ["d", "load", "f"],
    ]
    assert [t["name"] for t in current_tools(new)] == ["d", "load", "f"]


async def test_a_changed_declaration_is_removed_and_added_again() -> None:
    tools = ToolSet([plain("d")])
    context = AgentContext(
        messages=[SystemMessage(tools_added=[{"name": "d", "description": "old"}])]
    )
    config = LoopConfig(
        provider=ScriptedProvider([], when_exhausted="stop"),
        tool_set=tools,
        declare_tool_changes=True,
    )
    new = await run_agent_loop(["go"], context, config, _ignore)
    system = new[0]
    assert (system.role, system.tools_removed) == ("system", [{"name": "d"}])
    assert system.tools_added == [{"name": "d", "description": "The d tool.", "parameters": SCHEMA}]


async def test_no_change_no_system_message_and_off_by_default() -> None:
    tools = ToolSet([plain("d")])
    declared = SystemMessage(tools_added=[tool_declaration(plain("d"))])
    config = LoopConfig(
        provider=ScriptedProvider([], when_exhausted="stop"),
        tool_set=tools,
        declare_tool_changes=True,
    )
    new = await run_agent_loop(["go"], AgentContext(messages=[declared]), config, _ignore)
    assert [m.role for m in new] == ["user", "assistant"]
    plain_config = LoopConfig(provider=ScriptedProvider([], when_exhausted="stop"))
    new = await run_agent_loop(["go"], AgentContext(tools=[plain("d")]), plain_config, _ignore)
    assert [m.role for m in new] == ["user", "assistant"]


async def test_hidden_declarations_are_declared_in_the_transcript_but_not_sent() -> None:
    def hide(loadout: ToolLoadout) -> LoadoutChanges:
        return LoadoutChanges(hidden_declarations=["d"])

    tools = ToolSet([plain("d"), plain("p", prepare_loadout=hide)])
    provider = ScriptedProvider([call("d")], when_exhausted="stop")
    config = LoopConfig(provider=provider, tool_set=tools, declare_tool_changes=True)
    new = await run_agent_loop(["go"], AgentContext(), config, _ignore)
    assert [t["name"] for t in new[0].tools_added] == ["d", "p"]
    assert [t.name for t in provider.requests[0].tools] == ["p"]
    assert new[3].content[0].text == "d ran"  # still active and callable


async def _ignore(event: Any) -> None:
    pass
