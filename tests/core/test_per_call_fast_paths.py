"""Short cuts on the per-call path (``docs/explanation/performance.md`` P1): the JSON line of
``pi replay --json`` and the async hook modes without implementations give exactly what the
long way gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_core._cli.output import json_text
from pi_core._plugins import caller
from pi_core._plugins.manager import make_plugin_manager
from pi_core._plugins.markers import hookimpl


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"text": 'plain ascii\n\t"q" \\'}, '{"text":"plain ascii\\n\\t\\"q\\" \\\\"}'),
        ({"text": "del\x7fhere"}, '{"text":"del\\u007fhere"}'),
        ({"text": "esc\x1b[0m"}, '{"text":"esc\\u001b[0m"}'),
        ({"text": "caf\u00e9 \u202e bidi \u0085"}, '{"text":"caf\u00e9 \\u202e bidi \\u0085"}'),
        ({"text": "lone \ud800 surrogate \u00e9"}, '{"text":"lone \\ud800 surrogate \\u00e9"}'),
        ([1, 2.5, None, True], "[1,2.5,null,true]"),
    ],
)
def test_json_text_exact(value: Any, expected: str) -> None:
    assert json_text(value) == expected
    assert json.loads(json_text(value)) == value


def test_json_text_indent_unchanged() -> None:
    assert json_text({"a": [1, "\x7f"]}, indent=2) == '{\n  "a": [\n    1,\n    "\\u007f"\n  ]\n}'


async def test_async_modes_without_implementations() -> None:
    pm = make_plugin_manager(autoload=False)
    arguments = {"path": "x"}
    hook = pm.hook.pi_prepare_arguments
    assert hook.get_hookimpls() == []
    same = await caller.acall_chain(
        hook, {"tool_name": "read", "arguments": arguments}, "arguments"
    )
    assert same is arguments
    first = await caller.acall_first(pm.hook.pi_before_tool_call, {"context": None}, caller.blocks)
    assert first == (None, None)
    assert await caller.acall_notify(pm.hook.pi_on_event, {"event": None}) is None


async def test_async_modes_with_an_implementation_still_call_it() -> None:
    seen: list[Any] = []

    class Plugin:
        @hookimpl
        def pi_on_event(self, event: Any) -> None:
            seen.append(event)

        @hookimpl
        def pi_prepare_arguments(self, tool_name: str, arguments: Any) -> Any:
            return {**arguments, "seen": tool_name}

    pm = make_plugin_manager(autoload=False)
    pm.register(Plugin())
    await caller.acall_notify(pm.hook.pi_on_event, {"event": "e1"})
    assert seen == ["e1"]
    chained = await caller.acall_chain(
        pm.hook.pi_prepare_arguments, {"tool_name": "read", "arguments": {"a": 1}}, "arguments"
    )
    assert chained == {"a": 1, "seen": "read"}
