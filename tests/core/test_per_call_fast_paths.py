"""Short cuts on the per-call path (``docs/explanation/performance.md`` P1): the JSON line of
``pi replay --json`` and the async hook modes without implementations give exactly what the
long way gives."""

from __future__ import annotations

import functools
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


def _json_text_the_long_way(value: Any) -> str:
    """What ``json_text`` gave with ``json.dumps`` alone (before the pydantic serializer)."""
    import re

    from pi_core._cli.output import _RAW_CONTROLS

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    assert isinstance(_RAW_CONTROLS, re.Pattern)
    return _RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Text(str):
    pass


class _Number(int):
    def __repr__(self) -> str:
        return "0"


@pytest.mark.parametrize(
    "value",
    [
        # every code point outside the surrogates, as a value and as a key
        [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000],
        {chr(c): chr(c) for c in range(0x3000)},
        [1e-05, 1e16, 0.1, 2.0, float("nan"), float("inf"), -0.0],
        {"usage": {"cost": 1e-05, "tokens": 3}},
        [2**63, -(2**63) - 1, 2**64, -(2**64), 10**40, True, False, None, [], {}, [[[]]]],
        {"lone": "\udfff", "ok": "\u00e9"},
        {1: "int key", "2": "str key"},
        [_Text("a str subclass"), _Number(7)],
        ("a tuple", ["inside"]),
        functools.reduce(lambda inner, _: [inner], range(200), ["deep"]),
    ],
    ids=[
        "code points",
        "keys",
        "floats",
        "float inside",
        "ints",
        "surrogates",
        "int keys",
        "subclasses",
        "tuple",
        "deep",
    ],
)
def test_json_text_is_json_dumps_text(value: Any) -> None:
    """The compact line goes through pydantic's serializer only for values it writes as
    ``json.dumps`` does: every other value (floats, subclasses, tuples, non-str keys, lone
    surrogates, deep nesting) gives the same text as before."""
    assert json_text(value) == _json_text_the_long_way(value)


def test_dump_json_is_json_dumps() -> None:
    """``pi_core.dump_json``: ``json.dumps``'s compact text, or its exception."""
    from pi_core import dump_json

    for value in ([1e-05, "\u00e9\x7f", {"k": [None, 2**70]}], {"lone": "\ud800"}):
        assert dump_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    with pytest.raises(ValueError, match="integer string conversion"):
        dump_json([10**5000])  # more digits than str() converts
    with pytest.raises(TypeError):
        dump_json({"bytes": b"x"})


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
