"""``constrained_sampling`` on tools and strict tools in the HTTP providers (issue 11 item 7,
delta §8): the strict-subset conversion, ``prefer``/``require``, the exact request bodies the
OpenAI-compatible and Anthropic providers send (loopback protocol servers), and the fallback
after Claude rejects the strict tools for its limits."""

from __future__ import annotations

import json
from typing import Any

import pytest
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

from pi_core._errors import ConfigError
from pi_core._providers.anthropic import AnthropicProvider, AnthropicProviderFactory
from pi_core._providers.constrained_sampling import (
    UnsupportedStrictSchema,
    make_strict_json_schema,
    omit_added_nulls,
)
from pi_core._providers.http import HttpSettings, RetryPolicy
from pi_core._providers.openai import OpenAIProvider, OpenAIProviderFactory
from pi_core._tools.definition import AgentTool, ToolDefinition, tool, wrap_tool_definition
from pi_core._tools.validation import validate_tool_arguments
from support import collect, final, request

FAST = HttpSettings(timeout=10, retry=RetryPolicy(max_retries=0))
PREFER: Any = {"type": "json_schema", "strict": "prefer"}
REQUIRE: Any = {"type": "json_schema", "strict": "require"}

SHELL_PARAMETERS = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "description": "Shell command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds"},
    },
}
STRICT_SHELL_PARAMETERS = {
    "type": "object",
    "required": ["command", "timeout"],
    "properties": {
        "command": {"type": "string", "description": "Shell command to execute"},
        "timeout": {
            "anyOf": [{"type": "number", "description": "Timeout in seconds"}, {"type": "null"}]
        },
    },
    "additionalProperties": False,
}


def make_tool(
    name: str = "shell",
    parameters: dict[str, Any] | None = None,
    sampling: Any = False,
) -> AgentTool:
    return AgentTool(
        name=name,
        description=f"The {name} tool",
        parameters=parameters if parameters is not None else SHELL_PARAMETERS,
        execute=None,  # type: ignore[arg-type]
        constrained_sampling=sampling,
    )


# --- the declaration --------------------------------------------------------------------------


def test_constrained_sampling_defaults_to_false_and_is_copied_by_the_wrapper() -> None:
    assert make_tool().constrained_sampling is False
    definition = ToolDefinition(
        name="t",
        description="d",
        parameters={"type": "object", "properties": {}},
        execute=None,  # type: ignore[arg-type]
        constrained_sampling=REQUIRE,
    )
    assert wrap_tool_definition(definition).constrained_sampling == REQUIRE


def test_tool_decorator_accepts_constrained_sampling() -> None:
    @tool(constrained_sampling=PREFER)
    def greet(name: str, punctuation: str = "!") -> str:
        """Greet someone."""
        return f"hi {name}{punctuation}"

    assert greet.constrained_sampling == PREFER
    assert wrap_tool_definition(greet).constrained_sampling == PREFER


# --- the strict subset --------------------------------------------------------------------------


def test_make_strict_json_schema_requires_everything_and_makes_optionals_nullable() -> None:
    assert make_strict_json_schema(SHELL_PARAMETERS) == STRICT_SHELL_PARAMETERS
    assert SHELL_PARAMETERS["required"] == ["command"]  # the original is left alone


def test_make_strict_json_schema_nested_objects_arrays_and_nullable_optionals() -> None:
    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                    "required": ["old"],
                },
            },
            "mode": {"enum": ["a", "b", None]},
            "label": {"type": ["string", "null"]},
            "kind": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["edits"],
        "additionalProperties": False,
    }
    assert make_strict_json_schema(schema) == {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "old": {"type": "string"},
                        "new": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    },
                    "required": ["old", "new"],
                    "additionalProperties": False,
                },
            },
            "mode": {"enum": ["a", "b", None]},
            "label": {"type": ["string", "null"]},
            "kind": {
                "anyOf": [
                    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    {"type": "null"},
                ]
            },
        },
        "required": ["edits", "mode", "label", "kind"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "string"}, "root schema must have type object"),
        (True, "root schema must have type object"),
        ({"type": "object", "properties": {"a": True}}, "boolean schemas are unsupported"),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
            "$ref schemas are unsupported",
        ),
        ({"type": "object", "$defs": {}}, "$defs schemas are unsupported"),
        ({"type": "object", "allOf": []}, "allOf schemas are unsupported"),
        ({"type": "object", "oneOf": []}, "oneOf schemas are unsupported"),
        ({"type": "object", "patternProperties": {}}, "patternProperties schemas are unsupported"),
        ({"type": "object", "not": {}}, "not schemas are unsupported"),
        ({"type": "object", "if": {}}, "if schemas are unsupported"),
        (
            {"type": "object", "properties": {"a": {"description": "x"}}},
            "schemas without a type are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"const": 1}}},
            "schemas without a type are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}]}}},
            "object and array unions are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"anyOf": []}}},
            "anyOf must contain at least one schema",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": [{}]}}},
            "tuple schemas are unsupported",
        ),
        (
            {"type": "object", "additionalProperties": True},
            "schema-valued or true additionalProperties is unsupported",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            "schema-valued or true additionalProperties is unsupported",
        ),
        (
            {"type": "object", "properties": {}, "required": ["a"]},
            "required contains an unknown property",
        ),
        ({"type": "string", "properties": {}}, "properties require type object"),
    ],
)
def test_unconvertible_schemas_say_why(schema: Any, reason: str) -> None:
    with pytest.raises(UnsupportedStrictSchema) as info:
        make_strict_json_schema(schema)
    assert str(info.value) == reason


# --- OpenAI-compatible chat completions --------------------------------------------------------


def openai_provider(server: ProtocolServer, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider("gpt-test", base_url=f"{server.url}/v1", settings=FAST, **kwargs)


async def openai_tools(tools: list[AgentTool], **kwargs: Any) -> Any:
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        events = await collect(openai_provider(server, **kwargs), request(tools=tools))
    assert final(events).stop_reason == "stop"
    (received,) = server.requests
    return received.body["tools"]


async def test_openai_without_strict_tools_sends_no_strict_field() -> None:
    assert await openai_tools([make_tool(sampling=PREFER), make_tool("plain")]) == [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "description": "The shell tool",
                "parameters": SHELL_PARAMETERS,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "plain",
                "description": "The plain tool",
                "parameters": SHELL_PARAMETERS,
            },
        },
    ]


async def test_openai_strict_tools_sends_prefer_tools_strict_and_others_not() -> None:
    unconvertible = {"type": "object", "properties": {"a": {"description": "untyped"}}}
    tools = [
        make_tool(sampling=PREFER),
        make_tool("plain"),
        make_tool("loose", unconvertible, PREFER),
        make_tool("grammar", sampling={"type": "grammar", "variants": {"openai_lark": "x"}}),
    ]
    assert await openai_tools(tools, strict_tools=True) == [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "description": "The shell tool",
                "parameters": STRICT_SHELL_PARAMETERS,
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "plain",
                "description": "The plain tool",
                "parameters": SHELL_PARAMETERS,
                "strict": False,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "loose",
                "description": "The loose tool",
                "parameters": unconvertible,
                "strict": False,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "grammar",
                "description": "The grammar tool",
                "parameters": SHELL_PARAMETERS,
                "strict": False,
            },
        },
    ]


async def test_openai_require_without_strict_tools_fails_the_call_before_sending() -> None:
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        events = await collect(
            openai_provider(server), request(tools=[make_tool("exact", sampling=REQUIRE)])
        )
    assert server.requests == []
    assert [e.type for e in events] == ["error"]
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == (
        'Tool "exact" requires JSON-schema constrained sampling, but strict tools are unsupported.'
    )


async def test_openai_require_with_an_unconvertible_schema_names_the_reason() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "oneOf": []}
    with ProtocolServer([openai_text_reply(["ok"])]) as server:
        events = await collect(
            openai_provider(server, strict_tools=True),
            request(tools=[make_tool("exact", schema, REQUIRE)]),
        )
    assert server.requests == []
    assert final(events).error_message == (
        'Tool "exact" requires JSON-schema constrained sampling, but oneOf schemas are unsupported.'
    )


async def test_openai_require_with_strict_tools_is_sent_strict() -> None:
    assert await openai_tools([make_tool(sampling=REQUIRE)], strict_tools=True) == [
        {
            "type": "function",
            "function": {
                "name": "shell",
                "description": "The shell tool",
                "parameters": STRICT_SHELL_PARAMETERS,
                "strict": True,
            },
        }
    ]


def test_strict_tools_option_of_the_factories(monkeypatch: pytest.MonkeyPatch) -> None:
    openai = OpenAIProviderFactory().create("m", {"base_url": "http://x", "strict_tools": True})
    assert openai.strict_tools is True
    assert OpenAIProviderFactory().create("m", {"base_url": "http://x"}).strict_tools is False
    anthropic = AnthropicProviderFactory().create("m", {"api_key": "k", "strict_tools": True})
    assert anthropic.strict_tools is True
    with pytest.raises(ConfigError) as info:
        OpenAIProviderFactory().create("m", {"base_url": "http://x", "strict_tools": "yes"})
    assert str(info.value) == "provider option strict_tools must be a boolean (got 'yes')"


# --- Anthropic Messages -------------------------------------------------------------------------


def anthropic_provider(server: ProtocolServer, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-test", api_key="k", base_url=server.url, settings=FAST, cache=False, **kwargs
    )


def anthropic_ok() -> Reply:
    return Reply(frames=anthropic_frames(anthropic_text_block(0, ["ok"]), "end_turn"))


def limit_rejection(text: str) -> Reply:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
    return Reply(status=400, body=json.dumps(body).encode())


ANTHROPIC_SHELL_SCHEMA = {
    "type": "object",
    "properties": SHELL_PARAMETERS["properties"],
    "required": ["command"],
}
ANTHROPIC_STRICT_SHELL = {
    "name": "shell",
    "description": "The shell tool",
    "strict": True,
    "input_schema": STRICT_SHELL_PARAMETERS,
}
ANTHROPIC_PLAIN_SHELL = {
    "name": "shell",
    "description": "The shell tool",
    "input_schema": ANTHROPIC_SHELL_SCHEMA,
}


async def test_anthropic_strict_tools_body() -> None:
    bounded = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
        "additionalProperties": False,
    }
    dated = {
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date"}},
        "required": ["when"],
    }
    tools = [
        make_tool(sampling=PREFER),
        make_tool("bounded", bounded, PREFER),
        make_tool("dated", dated, PREFER),
        make_tool("plain", bounded),
    ]
    with ProtocolServer([anthropic_ok()]) as server:
        await collect(anthropic_provider(server, strict_tools=True), request(tools=tools))
    (received,) = server.requests
    assert received.body["tools"] == [
        ANTHROPIC_STRICT_SHELL,
        {"name": "bounded", "description": "The bounded tool", "input_schema": bounded},
        {
            "name": "dated",
            "description": "The dated tool",
            "strict": True,
            "input_schema": {**dated, "additionalProperties": False},
        },
        {"name": "plain", "description": "The plain tool", "input_schema": bounded},
    ]


async def test_anthropic_without_strict_tools_sends_plain_tools_and_require_fails() -> None:
    with ProtocolServer([anthropic_ok(), anthropic_ok()]) as server:
        provider = anthropic_provider(server)
        await collect(provider, request(tools=[make_tool(sampling=PREFER)]))
        events = await collect(provider, request(tools=[make_tool("exact", sampling=REQUIRE)]))
    assert [r.body["tools"] for r in server.requests] == [[ANTHROPIC_PLAIN_SHELL]]
    assert final(events).error_message == (
        'Tool "exact" requires JSON-schema constrained sampling, but strict tools are unsupported.'
    )
    bounded = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}
    with ProtocolServer([]) as server:
        events = await collect(
            anthropic_provider(server, strict_tools=True),
            request(tools=[make_tool("exact", bounded, REQUIRE)]),
        )
    assert server.requests == []
    assert final(events).error_message == (
        'Tool "exact" requires JSON-schema constrained sampling, but maximum: 3 is unsupported.'
    )


@pytest.mark.parametrize(
    "text",
    [
        "The compiled grammar is too large, which would cause performance issues.",
        "Too many strict tools (21). The maximum number of strict tools supported is 20.",
        "Schemas contains too many parameters with union types (17 parameters with type "
        "arrays or anyOf). This would result in an excessively large compiled grammar.",
    ],
)
async def test_anthropic_strict_limit_rejection_resends_prefer_tools_non_strict(
    text: str,
) -> None:
    exact = make_tool("exact", sampling=REQUIRE)
    replies = [limit_rejection(text), anthropic_ok(), anthropic_ok()]
    with ProtocolServer(replies) as server:
        provider = anthropic_provider(server, strict_tools=True)
        first = await collect(provider, request(tools=[make_tool(sampling=PREFER), exact]))
        second = await collect(provider, request(tools=[make_tool(sampling=PREFER), exact]))
    assert first[0].type == "start"
    assert final(first).stop_reason == "stop"
    assert final(second).stop_reason == "stop"
    strict_exact = {
        "name": "exact",
        "description": "The exact tool",
        "strict": True,
        "input_schema": STRICT_SHELL_PARAMETERS,
    }
    assert [r.body["tools"] for r in server.requests] == [
        [ANTHROPIC_STRICT_SHELL, strict_exact],
        [ANTHROPIC_PLAIN_SHELL, strict_exact],  # the same call, sent again
        [ANTHROPIC_PLAIN_SHELL, strict_exact],  # later calls of the session
    ]
    assert provider.over_strict_tool_limits is True


async def test_anthropic_other_rejections_are_not_retried() -> None:
    other = Reply(
        status=400,
        body=b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}',
    )
    only_require = [make_tool("exact", sampling=REQUIRE)]
    with ProtocolServer([other, limit_rejection("Too many strict tools (21)")]) as server:
        provider = anthropic_provider(server, strict_tools=True)
        events = await collect(provider, request(tools=[make_tool(sampling=PREFER)]))
        assert final(events).error_message == (
            '400 {"type":"error","error":{"type":"invalid_request_error",'
            '"message":"prompt is too long"}}'
        )
        # no prefer tool sent strict: nothing to fall back to
        events = await collect(provider, request(tools=only_require))
    assert len(server.requests) == 2
    assert final(events).error_message.startswith("400 ")
    assert provider.over_strict_tool_limits is False


# --- what a strict model sends back -------------------------------------------------------------


def test_omit_added_nulls_drops_only_nulls_the_conversion_allowed() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "number"},
            "c": {"type": ["string", "null"]},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        },
    }
    arguments = {"a": None, "b": None, "c": None, "items": [{"x": None}, {"x": "1"}], "z": None}
    assert omit_added_nulls(schema, arguments) == {
        "a": None,  # required: the model meant null
        "c": None,  # accepts null itself
        "items": [{}, {"x": "1"}],
        "z": None,  # not declared: left to validation
    }


async def test_strict_tool_calls_come_back_without_added_nulls() -> None:
    """A strict model sends ``null`` for optionals it leaves out; validation (lossless only, port
    decision 4) would refuse them, so the provider drops them from the calls of tools it sent
    strict, and only from those."""
    calls = [
        *openai_tool_call_chunks(0, "c1", "shell", ['{"command": "ls", "timeout": null}']),
        *openai_tool_call_chunks(1, "c2", "plain", ['{"command": "ls", "timeout": null}']),
    ]
    reply = Reply(frames=openai_frames(*calls, openai_chunk({}, "tool_calls")))
    tools = [make_tool(sampling=PREFER), make_tool("plain")]
    with ProtocolServer([reply]) as server:
        events = await collect(openai_provider(server, strict_tools=True), request(tools=tools))
    ends = [e.tool_call.arguments for e in events if e.type == "toolcall_end"]
    expected = [{"command": "ls"}, {"command": "ls", "timeout": None}]
    assert ends == expected
    assert [block.arguments for block in final(events).tool_calls] == expected
    shell = make_tool(sampling=PREFER)
    assert validate_tool_arguments(shell, ends[0]) == {"command": "ls"}


async def test_anthropic_strict_tool_calls_come_back_without_added_nulls() -> None:
    block = anthropic_tool_block(0, "toolu_1", "shell", ['{"command": "ls", "timeout": null}'])
    reply = Reply(frames=anthropic_frames(block, "tool_use"))
    with ProtocolServer([reply]) as server:
        events = await collect(
            anthropic_provider(server, strict_tools=True),
            request(tools=[make_tool(sampling=PREFER)]),
        )
    assert [c.arguments for c in final(events).tool_calls] == [{"command": "ls"}]
