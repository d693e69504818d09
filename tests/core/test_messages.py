"""Wire types: camelCase JSON, unset optionals omitted, unknown fields kept (DESIGN §4)."""

from __future__ import annotations

import json

from pi_core._wire.messages import (
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def test_tool_result_message_json_uses_camel_case_and_omits_unset_fields() -> None:
    message = ToolResultMessage(
        tool_call_id="call-1",
        tool_name="read",
        content=[TextContent(text="...")],
        timestamp=0,
    )
    assert message.to_json() == (
        '{"role":"toolResult","toolCallId":"call-1","toolName":"read",'
        '"content":[{"type":"text","text":"..."}],"isError":false,"timestamp":0}'
    )


def test_assistant_message_from_design_example_round_trips() -> None:
    line = (
        '{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read",'
        '"arguments":{"path":"a.ts"}}],"stopReason":"toolUse"}'
    )
    message = AssistantMessage.model_validate_json(line)
    assert message.tool_calls == [ToolCall(id="call-1", name="read", arguments={"path": "a.ts"})]
    assert message.to_json_dict(exclude_unset=True) == json.loads(line)


def test_unknown_block_types_and_fields_are_kept_and_never_tool_calls() -> None:
    data = {
        "role": "assistant",
        "content": [
            {"type": "finalAnswer", "text": "x"},
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
        ],
        "api": "anthropic-messages",
        "responseId": "r1",
        "stopReason": "stop",
        "timestamp": 5,
    }
    message = AssistantMessage.model_validate(data)
    assert message.tool_calls == []
    assert message.to_json_dict(exclude_unset=True) == data


def test_image_content_uses_mime_type_key() -> None:
    block = ImageContent(data="aGk=", mime_type="image/png")
    assert block.to_json_dict() == {"type": "image", "data": "aGk=", "mimeType": "image/png"}


def test_user_message_accepts_plain_string_content() -> None:
    message = UserMessage.model_validate({"role": "user", "content": "Hello", "timestamp": 1})
    assert message.to_json() == '{"role":"user","content":"Hello","timestamp":1}'


def test_agent_tool_result_error_has_empty_details() -> None:
    assert AgentToolResult.error("Tool nope not found").to_json_dict() == {
        "content": [{"type": "text", "text": "Tool nope not found"}],
        "details": {},
    }


def test_agent_tool_result_keeps_null_inside_details() -> None:
    result = AgentToolResult(content=[], details={"a": None}, is_error=True)
    assert result.to_json_dict() == {"content": [], "details": {"a": None}, "isError": True}


def test_structured_content_is_camel_case() -> None:
    result = AgentToolResult(content=[TextContent(text="x")], structured_content={"ok": False})
    assert result.to_json_dict() == {
        "content": [{"type": "text", "text": "x"}],
        "structuredContent": {"ok": False},
    }
