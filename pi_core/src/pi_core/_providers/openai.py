"""``openai:MODEL``: the OpenAI-compatible chat-completions protocol, streamed.

Works with OpenAI and the servers that speak its protocol (Ollama, vLLM, llama.cpp's server,
LM Studio): ``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options.include_usage``, as pi-ai's ``openai-completions`` API does.

Request (:func:`build_request_body`): the system prompt as a ``system`` message; user messages
(text as a string, blocks as ``text``/``image_url`` data URLs); assistant messages as one
``content`` string (non-blank text blocks joined) plus ``tool_calls`` (arguments as JSON text),
thinking sent back only under the reasoning field it came from (``thinkingSignature``
``reasoning_content``/``reasoning``/``reasoning_text``); tool results as ``tool`` messages (text
joined by newlines, ``(see attached image)`` when there is none; images follow in one ``user``
message ``Attached image(s) from tool result:``). ``structuredContent`` is never sent.
Assistant messages that ended in ``error``/``aborted`` are left out, and a call left without
a result gets an error result ``No result provided`` (pi-ai's ``transformMessages``).
``tools``: ``{"type": "function", "function": {name, description, parameters}}``; with
``strict_tools`` (the server supports strict tools: Pi's ``compat.supportsStrictMode``, off by
default) each function also has ``strict``: ``true`` for a tool whose ``constrained_sampling``
asks for JSON-schema sampling and whose parameters convert to the strict subset (they are sent
converted), else ``false`` (:mod:`pi_core._providers.constrained_sampling`).

Response: ``delta.content`` → one text block; ``reasoning_content``/``reasoning``/
``reasoning_text`` → one thinking block; ``delta.tool_calls`` → a tool-call block per ``index``
(arguments assembled, parsed when the stream ends: :mod:`pi_core._providers.assembly`). Blocks are
closed in content order when the stream ends. ``finish_reason``: ``stop``/``end`` → ``stop``,
``length`` → ``length``, ``tool_calls``/``function_call`` → ``toolUse``, anything else →
``error`` with ``Provider finish_reason: REASON``. Usage: ``input`` = prompt tokens minus
cached ones, ``output`` = completion tokens, ``cacheRead`` = ``prompt_tokens_details.
cached_tokens``, ``cacheWrite`` = ``prompt_tokens_details.cache_write_tokens``; cost is 0 (pi
has no price table). An HTTP failure's message is ``STATUS MESSAGE`` (the body's
``error.message``), as the OpenAI SDK words it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import httpx_sse

from pi_core._errors import ConfigError, ProviderError
from pi_core._providers.assembly import MessageAssembler, total_usage
from pi_core._providers.constrained_sampling import resolve_strict_sampling, tool_parameters
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
    from pi_core._providers.base import ModelRequest, ProviderEvent

DEFAULT_BASE_URL = "https://api.openai.com/v1"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
API_NAME = "openai-completions"
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


def error_text(status: int, body: bytes) -> str:
    """The OpenAI SDK's wording: ``STATUS error.message`` (or the ``error`` object as JSON,
    the raw body text, ``STATUS status code (no body)``)."""
    return error_body_text(status, body, _error_detail)


def _error_detail(parsed: Any) -> str | None:
    if not (isinstance(parsed, dict) and "error" in parsed):
        return None
    error = parsed["error"]
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str):
        return message
    return json.dumps(error, ensure_ascii=False, separators=(",", ":"))


def map_finish_reason(reason: str | None) -> tuple[str, str | None]:
    """``finish_reason`` → (Pi stop reason, error message or ``None``)."""
    if reason is None or reason in ("stop", "end"):
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("tool_calls", "function_call"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {reason}"


def map_usage(raw: dict[str, Any], usage: dict[str, Any]) -> None:
    """Write an OpenAI ``usage`` object into Pi's ``usage`` dict (see the module docstring)."""
    prompt = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens") or 0
    cache_write = details.get("cache_write_tokens") or 0
    cache_read = max(0, cached - cache_write) if cache_write > 0 else cached
    usage["input"] = max(0, prompt - cache_read - cache_write)
    usage["output"] = raw.get("completion_tokens") or 0
    usage["cacheRead"] = cache_read
    usage["cacheWrite"] = cache_write
    total_usage(usage)


class _ChunkHandler:
    """Reads ``chat.completion.chunk`` events into the assembler."""

    def __init__(self, assembler: MessageAssembler) -> None:
        self.assembler = assembler
        self.text_index: int | None = None
        self.thinking_index: int | None = None
        self.calls_by_stream_index: dict[int, int] = {}
        self.calls_by_id: dict[str, int] = {}
        self.stop_reason = "stop"
        self.error: str | None = None

    def handle(self, sse: httpx_sse.ServerSentEvent) -> Iterable[ProviderEvent]:
        data = sse.data.strip()
        if not data or data == "[DONE]":
            return []
        chunk = parse_json(data)
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk and not chunk.get("choices"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise ProviderError(message if isinstance(message, str) else json.dumps(error))
        events: list[ProviderEvent] = []
        choices = chunk.get("choices") or []
        choice = choices[0] if choices else None
        raw_usage = chunk.get("usage") or (choice or {}).get("usage")
        if isinstance(raw_usage, dict):
            map_usage(raw_usage, self.assembler.usage)
        if not isinstance(choice, dict):
            return events
        if choice.get("finish_reason"):
            self.stop_reason, self.error = map_finish_reason(choice["finish_reason"])
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self.text_index is None:
                self.text_index, start = self.assembler.open_text()
                events.append(start)
            events.append(self.assembler.append(self.text_index, content))
        for field in REASONING_FIELDS:
            reasoning = delta.get(field)
            if isinstance(reasoning, str) and reasoning:
                if self.thinking_index is None:
                    self.thinking_index, start = self.assembler.open_thinking(field)
                    events.append(start)
                events.append(self.assembler.append(self.thinking_index, reasoning))
                break
        for call in delta.get("tool_calls") or []:
            events.extend(self._tool_call(call))
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        stream_index = call.get("index")
        call_id = call.get("id") or ""
        function = call.get("function") or {}
        index = (
            self.calls_by_stream_index.get(stream_index) if isinstance(stream_index, int) else None
        )
        if index is None and call_id:
            index = self.calls_by_id.get(call_id)
        if index is None:
            index, start = self.assembler.open_tool_call(call_id, function.get("name") or "")
            events.append(start)
        if isinstance(stream_index, int):
            self.calls_by_stream_index.setdefault(stream_index, index)
        block = self.assembler.blocks[index]
        if call_id:
            self.calls_by_id[call_id] = index
            if not block.id:
                self.assembler.update_tool_call(index, id=call_id)
        if not block.name and function.get("name"):
            self.assembler.update_tool_call(index, name=function["name"])
        events.append(self.assembler.append(index, function.get("arguments") or ""))
        return events

    def finish(self) -> Iterable[ProviderEvent]:
        return self.assembler.finish(self.stop_reason, self.error)


# --- pi messages → chat-completions messages ----------------------------------------------


def convert_messages(system_prompt: str, messages: list[Any]) -> list[dict[str, Any]]:
    """pi's messages as chat-completions ``messages`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    history = llm_history(messages)
    i = 0
    while i < len(history):
        message = history[i]
        if isinstance(message, UserMessage):
            converted = _user(message)
            if converted is not None:
                out.append(converted)
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message)
            if converted is not None:
                out.append(converted)
        elif isinstance(message, ToolResultMessage):
            images: list[dict[str, Any]] = []
            while i < len(history) and isinstance(history[i], ToolResultMessage):
                result = history[i]
                text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
                out.append(
                    {
                        "role": "tool",
                        "content": text if text else "(see attached image)",
                        "tool_call_id": result.tool_call_id,
                    }
                )
                images.extend(_image_url(b) for b in result.content if isinstance(b, ImageContent))
                i += 1
            if images:
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Attached image(s) from tool result:"},
                            *images,
                        ],
                    }
                )
            continue
        i += 1
    return out


def _image_url(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def _user(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    content = [
        {"type": "text", "text": b.text} if isinstance(b, TextContent) else _image_url(b)
        for b in message.content
    ]
    return {"role": "user", "content": content} if content else None


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    converted: dict[str, Any] = {"role": "assistant", "content": None}
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    if text:
        converted["content"] = text
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    if thinking and thinking[0].thinking_signature in REASONING_FIELDS:
        converted[thinking[0].thinking_signature] = "\n".join(b.thinking for b in thinking)
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if calls:
        converted["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(
                        call.arguments, ensure_ascii=False, separators=(",", ":")
                    ),
                },
            }
            for call in calls
        ]
    if not text and not calls:
        return None
    return converted


class OpenAIProvider(SSEProvider):
    """A :class:`~pi_core._providers.base.ModelProvider` for one model behind an OpenAI-compatible
    chat-completions endpoint.

    ``model``: the model id sent; ``base_url`` (default ``https://api.openai.com/v1``);
    ``api_key`` (sent as ``Authorization: Bearer``; none for local servers); ``max_tokens``
    (sent as ``max_completion_tokens``, or ``max_tokens`` with ``max_tokens_field``);
    ``temperature``; ``headers`` (extra HTTP headers); ``settings`` (timeout, retries).
    ``provider_name`` is written into each message's ``provider`` (default ``openai``).
    ``strict_tools``: the server accepts ``strict`` function tools (module docstring).
    """

    name = "openai"
    api_name = API_NAME
    handler_type = _ChunkHandler
    http_error_text = staticmethod(error_text)

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        max_tokens: int | None = None,
        max_tokens_field: str = "max_completion_tokens",
        temperature: float | None = None,
        headers: dict[str, str] | None = None,
        settings: HttpSettings | None = None,
        provider_name: str = "openai",
        strict_tools: bool = False,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.max_tokens_field = max_tokens_field
        self.temperature = temperature
        self.headers = dict(headers or {})
        self.settings = settings or HttpSettings()
        self.provider_name = provider_name
        self.strict_tools = strict_tools

    @property
    def url(self) -> str:
        """``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def build_request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request`` (see the module docstring); ``request.options``
        ``max_tokens``/``temperature`` override the provider's."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": convert_messages(request.system_prompt, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        max_tokens = request.options.get("max_tokens", self.max_tokens)
        if max_tokens:
            body[self.max_tokens_field] = max_tokens
        temperature = request.options.get("temperature", self.temperature)
        if temperature is not None:
            body["temperature"] = temperature
        if request.tools:
            body["tools"] = [self._tool(tool) for tool in request.tools]
        return body

    def strict_tool_parameters(self, request: ModelRequest) -> dict[str, dict[str, Any]]:
        """The tools sent strict (see :meth:`SSEProvider.strict_tool_parameters`)."""
        return {
            tool.name: tool.parameters
            for tool in request.tools
            if resolve_strict_sampling(tool, self.strict_tools)
        }

    def _tool(self, tool: Any) -> dict[str, Any]:
        strict = resolve_strict_sampling(tool, self.strict_tools)
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool_parameters(tool, strict),
        }
        if self.strict_tools:
            function["strict"] = strict
        return {"type": "function", "function": function}

    def request_headers(self) -> dict[str, str]:
        """``authorization`` (when there is a key) plus the extra ``headers``."""
        headers: dict[str, str] = {}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        headers.update(self.headers)
        return headers


class OpenAIProviderFactory:
    """What ``pi_register_providers`` registers as ``openai``: :meth:`create` makes an
    :class:`OpenAIProvider` from ``--model openai:MODEL`` and its options."""

    name = "openai"

    def create(self, model: str, options: dict[str, Any]) -> OpenAIProvider:
        """``options``: ``base_url`` (else ``$OPENAI_BASE_URL``, else the OpenAI API),
        ``api_key`` (else ``$OPENAI_API_KEY``; required only for ``api.openai.com``),
        ``max_tokens``, ``max_tokens_field``, ``temperature``, ``headers``, ``strict_tools``
        (bool, default false), and the HTTP
        options of :func:`pi_core._providers.options.http_settings`.

        Raises :class:`~pi_core._errors.ConfigError` when the OpenAI API is used without a key.
        """
        base_url = options.get("base_url") or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
        api_key = options.get("api_key") or os.environ.get(API_KEY_ENV) or None
        if api_key is None and "api.openai.com" in base_url:
            raise ConfigError(
                f"openai:{model} needs an API key: set {API_KEY_ENV} or pass api_key "
                "(a local server given with --base-url needs none)"
            )
        return OpenAIProvider(
            model,
            base_url=base_url,
            api_key=api_key,
            max_tokens=options.get("max_tokens"),
            max_tokens_field=options.get("max_tokens_field", "max_completion_tokens"),
            temperature=options.get("temperature"),
            headers=options.get("headers"),
            settings=http_settings(options),
            strict_tools=bool_option(options, "strict_tools"),
        )


__all__ = [
    "API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "OpenAIProvider",
    "OpenAIProviderFactory",
    "convert_messages",
    "error_text",
    "map_finish_reason",
    "map_usage",
]
