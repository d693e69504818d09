"""``anthropic:MODEL``: the Anthropic Messages protocol with streaming tool use.

``POST {base_url}/v1/messages`` with ``stream: true``, headers ``x-api-key`` and
``anthropic-version: 2023-06-01``, as pi-ai's ``anthropic-messages`` API does.

Request (:meth:`AnthropicProvider.build_request_body`): ``system`` as one text block; user
messages (blank text left out; images as base64 ``image`` sources); assistant messages as
``text`` (non-blank), ``thinking`` (with its signature; without one it is sent as text;
redacted thinking as ``redacted_thinking``) and ``tool_use`` blocks; consecutive tool results
as one ``user`` message of ``tool_result`` blocks (``content`` the text joined by newlines, or
text/image blocks when there are images, ``is_error``). Tool-call ids are normalised to
``[a-zA-Z0-9_-]{1,64}``. ``structuredContent`` is never sent; error/aborted assistant messages
are left out and calls without a result get ``No result provided``
(:func:`pi_core._providers.options.llm_history`). ``tools``: ``name``, ``description``,
``input_schema`` (``type: object`` with the schema's ``properties`` and ``required``, and its
``additionalProperties``, ``$defs`` and ``definitions`` when present). With ``strict_tools``
(the endpoint supports strict tools: Pi's ``compat.supportsStrictTools``, off by default), a
tool whose ``constrained_sampling`` asks for JSON-schema sampling and whose schema converts
(:mod:`pi_core._providers.constrained_sampling`; Anthropic also rejects ``minimum``,
``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``maxItems``,
``uniqueItems``, ``minContains``, ``maxContains``, ``minProperties``, ``maxProperties``,
``minItems`` other than 0 or 1, and a ``format`` other than ``date-time``, ``time``,
``date``, ``duration``, ``email``, ``hostname``, ``uri``, ``ipv4``, ``ipv6``, ``uuid``) is sent
with ``strict: true`` and the converted schema. When the endpoint rejects a request (400
``invalid_request_error``) because the strict tools exceed Claude's limits, the request is sent
again with the ``prefer`` tools non-strict, and so are the later requests of this provider
(one provider serves one session). With
``cache`` (default on, as Pi), ``cache_control: {"type": "ephemeral"}`` marks the system block,
the last tool and the last block of the last user message.

Response events: ``message_start`` (usage), ``content_block_start`` (``text``, ``thinking``,
``redacted_thinking``, ``tool_use``), ``content_block_delta`` (``text_delta``,
``thinking_delta``, ``input_json_delta``, ``signature_delta``), ``content_block_stop`` (a tool
call's arguments are parsed here), ``message_delta`` (``stop_reason``, usage), ``message_stop``;
``event: error`` ends the call with its data as the message. ``stop_reason``: ``end_turn``/
``stop_sequence``/``pause_turn`` → ``stop``, ``max_tokens`` → ``length``, ``tool_use`` →
``toolUse``, ``refusal``/``sensitive`` → ``error`` (``Provider stop_reason: REASON``), any
other value → error ``Unhandled stop reason: REASON``. Usage: ``input_tokens``,
``output_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``; cost 0. An HTTP
failure's message is ``STATUS BODY`` (the JSON body), as the Anthropic SDK words it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast

import httpx_sse

from pi_core._errors import ConfigError, ProviderError
from pi_core._providers.assembly import MessageAssembler, total_usage
from pi_core._providers.constrained_sampling import (
    is_strict_tool_limit_error,
    prefers_strict,
    resolve_strict_sampling,
    tool_parameters,
)
from pi_core._providers.http import HttpSettings, SSEProvider, error_body_text
from pi_core._providers.options import bool_option, http_settings, llm_history
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from pi_core._abort import Abort
    from pi_core._providers.base import ModelRequest, ProviderEvent

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
ANTHROPIC_VERSION = "2023-06-01"
API_NAME = "anthropic-messages"
DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` when none is given (the protocol requires one)."""

CACHE_CONTROL = {"type": "ephemeral"}
_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def error_text(status: int, body: bytes) -> str:
    """The Anthropic SDK's wording: ``STATUS {JSON body}`` (compact), the raw text, or
    ``STATUS status code (no body)``."""
    return error_body_text(status, body, _error_detail)


def _error_detail(parsed: Any) -> str | None:
    if parsed is None:
        return None
    message = parsed.get("message") if isinstance(parsed, dict) else None
    if isinstance(message, str):
        return message
    return json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))


_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "sensitive": "error",
}


def map_stop_reason(reason: str) -> tuple[str, str | None]:
    """``stop_reason`` → (Pi stop reason, error message or ``None``)."""
    mapped = _STOP_REASONS.get(reason)
    if mapped is None:
        return "error", f"Unhandled stop reason: {reason}"
    if mapped == "error":
        return "error", f"Provider stop_reason: {reason}"
    return mapped, None


_USAGE_FIELDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cacheRead",
    "cache_creation_input_tokens": "cacheWrite",
}


class _EventHandler:
    """Reads Messages stream events into the assembler."""

    def __init__(self, assembler: MessageAssembler) -> None:
        self.assembler = assembler
        self.blocks: dict[int, int] = {}
        self.stop_reason = "stop"
        self.error: str | None = None
        self.started = False
        self.stopped = False

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        usage = self.assembler.usage
        for source, target in _USAGE_FIELDS.items():
            if raw.get(source) is not None:
                usage[target] = raw[source]
        total_usage(usage)

    def handle(self, sse: httpx_sse.ServerSentEvent) -> Iterable[ProviderEvent]:
        if sse.event == "error":
            raise ProviderError(sse.data)
        if not sse.data.strip():
            return []
        event = parse_json(sse.data)
        kind = event.get("type")
        if kind == "message_start":
            self.started = True
            self._usage((event.get("message") or {}).get("usage"))
            return []
        if kind == "message_stop":
            self.stopped = True
            return []
        if kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if reason:
                self.stop_reason, self.error = map_stop_reason(reason)
            self._usage(event.get("usage"))
            return []
        if kind == "content_block_start":
            return self._block_start(event["index"], event.get("content_block") or {})
        if kind == "content_block_delta":
            index = self.blocks.get(event["index"])
            delta = event.get("delta") or {}
            if index is None:
                return []
            delta_type = delta.get("type")
            if delta_type == "text_delta":
                return [self.assembler.append(index, delta.get("text", ""))]
            if delta_type == "thinking_delta":
                return [self.assembler.append(index, delta.get("thinking", ""))]
            if delta_type == "input_json_delta":
                return [self.assembler.append(index, delta.get("partial_json", ""))]
            if delta_type == "signature_delta":
                self.assembler.append_signature(index, delta.get("signature", ""))
            return []
        if kind == "content_block_stop":
            index = self.blocks.get(event["index"])
            end = self.assembler.end(index) if index is not None else None
            return [end] if end is not None else []
        return []

    def _block_start(self, stream_index: int, block: dict[str, Any]) -> list[ProviderEvent]:
        kind = block.get("type")
        if kind == "text":
            index, start = self.assembler.open_text()
        elif kind == "thinking":
            index, start = self.assembler.open_thinking("")
        elif kind == "redacted_thinking":
            index, start = self.assembler.open_thinking(block.get("data", ""))
            self.assembler.blocks[index] = ThinkingContent(
                thinking="[Reasoning redacted]",
                thinking_signature=block.get("data", ""),
                redacted=True,
            )
        elif kind == "tool_use":
            index, start = self.assembler.open_tool_call(block.get("id", ""), block.get("name", ""))
        else:
            return []
        self.blocks[stream_index] = index
        return [start]

    def finish(self) -> Iterable[ProviderEvent]:
        if self.started and not self.stopped:
            raise ProviderError("Anthropic stream ended before message_stop")
        return self.assembler.finish(self.stop_reason, self.error)


# --- pi messages → Messages API messages --------------------------------------------------


def normalize_tool_call_id(call_id: str) -> str:
    """An id the Messages API accepts: other characters become ``_``, at most 64."""
    return _ID_CHARS.sub("_", call_id)[:64]


def _image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def _tool_result_content(blocks: list[Any]) -> Any:
    if not any(isinstance(b, ImageContent) for b in blocks):
        return "\n".join(b.text for b in blocks if isinstance(b, TextContent))
    converted = [
        {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image(b)
        for b in blocks
    ]
    if not any(b["type"] == "text" for b in converted):
        converted.insert(0, {"type": "text", "text": "(see attached image)"})
    return converted


def convert_messages(messages: list[Any], *, cache: bool = True) -> list[dict[str, Any]]:
    """pi's messages as Messages API ``messages`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    history = llm_history(messages)
    i = 0
    while i < len(history):
        message = history[i]
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    out.append({"role": "user", "content": message.content})
            else:
                blocks = [
                    {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image(b)
                    for b in message.content
                    if not isinstance(b, TextContent) or b.text.strip()
                ]
                if blocks:
                    out.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif isinstance(message, ToolResultMessage):
            results = []
            while i < len(history) and isinstance(history[i], ToolResultMessage):
                result = history[i]
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": normalize_tool_call_id(result.tool_call_id),
                        "content": _tool_result_content(result.content),
                        "is_error": result.is_error,
                    }
                )
                i += 1
            out.append({"role": "user", "content": results})
            continue
        i += 1
    if cache and out and out[-1]["role"] == "user":
        last = out[-1]
        if isinstance(last["content"], str):
            last["content"] = [
                {"type": "text", "text": last["content"], "cache_control": dict(CACHE_CONTROL)}
            ]
        elif last["content"] and last["content"][-1]["type"] in ("text", "image", "tool_result"):
            last["content"][-1]["cache_control"] = dict(CACHE_CONTROL)
    return out


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif not block.thinking.strip():
                continue
            elif not (block.thinking_signature or "").strip():
                blocks.append({"type": "text", "text": block.thinking})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.thinking_signature,
                    }
                )
        elif isinstance(block, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": normalize_tool_call_id(block.id),
                    "name": block.name,
                    "input": block.arguments if block.arguments is not None else {},
                }
            )
    return blocks


_STRICT_UNSUPPORTED_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    }
)
_STRICT_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


def _strict_unsupported_keyword(key: str, value: Any) -> bool:
    """Keywords Anthropic's strict tool use rejects (with a 400 for the whole request)."""
    if key in _STRICT_UNSUPPORTED_KEYWORDS:
        return True
    if key == "minItems":
        return value not in (0, 1) or isinstance(value, bool)
    if key == "format":
        return not isinstance(value, str) or value not in _STRICT_STRING_FORMATS
    return False


def _generator(events: AsyncIterator[ProviderEvent]) -> AsyncGenerator[ProviderEvent, None]:
    """``events`` as the async generator it is (:meth:`SSEProvider.stream` returns one)."""
    return cast("AsyncGenerator[ProviderEvent, None]", events)


def _is_strict_limit_rejection(message: str) -> bool:
    """A 400 ``invalid_request_error`` whose text is one of Claude's strict-tool limits."""
    return (
        message.startswith("400 ")
        and '"invalid_request_error"' in message
        and is_strict_tool_limit_error(message)
    )


class AnthropicProvider(SSEProvider):
    """A :class:`~pi_core._providers.base.ModelProvider` for one model behind the Messages API.

    ``model``; ``api_key`` (sent as ``x-api-key``); ``base_url`` (default
    ``https://api.anthropic.com``); ``max_tokens`` (default 8192); ``temperature``;
    ``cache`` (prompt-cache markers, default ``True``); ``headers``; ``settings``;
    ``strict_tools`` (the endpoint accepts ``strict`` tools; see the module docstring).
    ``over_strict_tool_limits`` becomes true once the endpoint rejected the strict tools for
    Claude's limits: later requests send ``prefer`` tools non-strict.
    """

    name = "anthropic"
    api_name = API_NAME
    handler_type = _EventHandler
    http_error_text = staticmethod(error_text)

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        cache: bool = True,
        headers: dict[str, str] | None = None,
        settings: HttpSettings | None = None,
        strict_tools: bool = False,
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.strict_tools = strict_tools
        self.over_strict_tool_limits = False
        self.base_url = base_url.rstrip("/")
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.cache = cache
        self.headers = dict(headers or {})
        self.settings = settings or HttpSettings()
        self.provider_name = "anthropic"

    @property
    def url(self) -> str:
        """``{base_url}/v1/messages``."""
        return f"{self.base_url}/v1/messages"

    def request_headers(self) -> dict[str, str]:
        """``x-api-key``, ``anthropic-version`` and the extra ``headers``."""
        return {
            "x-api-key": self.api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            **self.headers,
        }

    def build_request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (module docstring); ``request.options``
        ``max_tokens``/``temperature`` override the provider's."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": convert_messages(request.messages, cache=self.cache),
            "max_tokens": request.options.get("max_tokens") or self.max_tokens,
            "stream": True,
        }
        if request.system_prompt:
            system: dict[str, Any] = {"type": "text", "text": request.system_prompt}
            if self.cache:
                system["cache_control"] = dict(CACHE_CONTROL)
            body["system"] = [system]
        temperature = request.options.get("temperature", self.temperature)
        if temperature is not None:
            body["temperature"] = temperature
        if request.tools:
            tools = [self._tool(tool) for tool in request.tools]
            if self.cache:
                tools[-1]["cache_control"] = dict(CACHE_CONTROL)
            body["tools"] = tools
        return body

    def strict_tool_parameters(self, request: ModelRequest) -> dict[str, dict[str, Any]]:
        """The tools sent strict (see :meth:`SSEProvider.strict_tool_parameters`)."""
        return {t.name: t.parameters for t in request.tools if self._is_strict(t)}

    def _is_strict(self, tool: Any) -> bool:
        if self.over_strict_tool_limits and prefers_strict(tool):
            return False
        return resolve_strict_sampling(tool, self.strict_tools, _strict_unsupported_keyword)

    def _tool(self, tool: Any) -> dict[str, Any]:
        strict = self._is_strict(tool)
        schema = tool_parameters(tool, strict) if strict else (tool.parameters or {})
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": schema.get("properties") or {},
            "required": schema.get("required") or [],
        }
        for key in ("additionalProperties", "$defs", "definitions"):
            if key in schema:
                input_schema[key] = schema[key]
        converted: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if strict:
            converted["strict"] = True
            input_schema = {**schema, **input_schema}
        converted["input_schema"] = input_schema
        return converted

    def stream(
        self, request: ModelRequest, abort: Abort | None = None
    ) -> AsyncIterator[ProviderEvent]:
        """The events of one call (:meth:`SSEProvider.stream`), sent again with the ``prefer``
        tools non-strict when the endpoint rejects the strict tools for Claude's limits."""
        return self._stream_with_strict_fallback(request, abort)

    async def _stream_with_strict_fallback(
        self, request: ModelRequest, abort: Abort | None
    ) -> AsyncIterator[ProviderEvent]:
        may_fall_back = not self.over_strict_tool_limits and any(
            prefers_strict(tool) and self._is_strict(tool) for tool in request.tools
        )
        first = True
        rejected = False
        async with aclosing(_generator(super().stream(request, abort))) as events:
            async for event in events:
                if (
                    first
                    and may_fall_back
                    and event.type == "error"
                    and _is_strict_limit_rejection(event.error.error_message or "")
                ):
                    rejected = True
                    break
                first = False
                yield event
        if rejected:
            self.over_strict_tool_limits = True
            async with aclosing(_generator(super().stream(request, abort))) as events:
                async for event in events:
                    yield event


class AnthropicProviderFactory:
    """What ``pi_register_providers`` registers as ``anthropic``."""

    name = "anthropic"

    def create(self, model: str, options: dict[str, Any]) -> AnthropicProvider:
        """``options``: ``api_key`` (else ``$ANTHROPIC_API_KEY``), ``base_url`` (else
        ``$ANTHROPIC_BASE_URL``, else the Anthropic API), ``max_tokens``, ``temperature``,
        ``cache``, ``headers``, ``strict_tools`` (bool, default false) and the HTTP options of
        :func:`pi_core._providers.options.http_settings`.

        Raises :class:`~pi_core._errors.ConfigError` when there is no API key.
        """
        api_key = options.get("api_key") or os.environ.get(API_KEY_ENV)
        if not api_key:
            raise ConfigError(
                f"anthropic:{model} needs an API key: set {API_KEY_ENV} or pass api_key"
            )
        return AnthropicProvider(
            model,
            api_key=api_key,
            base_url=options.get("base_url") or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL,
            max_tokens=options.get("max_tokens") or DEFAULT_MAX_TOKENS,
            temperature=options.get("temperature"),
            cache=options.get("cache", True),
            headers=options.get("headers"),
            settings=http_settings(options),
            strict_tools=bool_option(options, "strict_tools"),
        )


__all__ = [
    "ANTHROPIC_VERSION",
    "API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "AnthropicProvider",
    "AnthropicProviderFactory",
    "convert_messages",
    "error_text",
    "map_stop_reason",
    "normalize_tool_call_id",
]
