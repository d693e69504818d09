"""Assembling a streamed assistant message, shared by the HTTP providers.

:class:`MessageAssembler` owns the message being streamed: each change (a block opens, text or
tool-call arguments arrive, a block closes) returns the :class:`~pi_core._providers.base.StreamDelta`
to yield, whose ``partial`` is a snapshot (later changes never alter an event already yielded).

Tool-call arguments arrive as JSON text in pieces. They are concatenated and parsed with
:func:`parse_streaming_json`, Pi's ``parseStreamingJson``: while streaming, ``partial`` shows the
best-effort parse of what has arrived; when the block closes (``toolcall_end``) the whole text is
parsed once more and that value is the call's ``arguments``. Only the final message's calls are
executed (the loop takes calls from ``done`` only). Text that is not JSON at all becomes ``{}``;
JSON cut off mid-way (a ``length`` stop) is completed as far as it goes (``{"path": "a.t`` gives
``{"path": "a.t"}``), as Pi's ``partial-json`` does; the loop's length guard then refuses to run
those calls anyway.
"""

from __future__ import annotations

import re
from typing import Any

import pydantic_core

from pi_core._providers.base import EMPTY_USAGE, StreamDelta, StreamDone, StreamError, StreamStart
from pi_core._wire.json_parse import parse_json
from pi_core._wire.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, now_ms

_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def repair_json(text: str) -> str:
    """Pi's ``repairJson``: inside string literals, escape raw control characters and double
    a backslash that starts an invalid escape. Text outside strings is unchanged."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if not in_string:
            out.append(char)
            in_string = char == '"'
        elif char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[i + 1] if i + 1 < len(text) else ""
            if following == "u" and _HEX4.fullmatch(text[i + 2 : i + 6]):
                out.append(text[i : i + 6])
                i += 5
            elif following and following in _VALID_ESCAPES and following != "u":
                out.append("\\" + following)
                i += 1
            else:
                out.append("\\\\")
        elif ord(char) < 0x20:
            out.append(_CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}"))
        else:
            out.append(char)
        i += 1
    return "".join(out)


def parse_streaming_json(text: str) -> Any:
    """Pi's ``parseStreamingJson``: the value of possibly incomplete JSON ``text``.

    Empty or blank text gives ``{}``; valid JSON its value; JSON with raw control characters or
    bad escapes in strings is repaired (:func:`repair_json`); incomplete JSON is completed
    (unterminated strings kept as far as they go, through ``pydantic_core.from_json``'s partial
    mode); anything else gives ``{}``. Never raises.
    """
    if not text or not text.strip():
        return {}
    for candidate in (text, repair_json(text)):
        try:
            return parse_json(candidate)
        except ValueError:
            pass
    for candidate in (text, repair_json(text)):
        try:
            value = pydantic_core.from_json(candidate, allow_partial="trailing-strings")
        except ValueError:
            continue
        return {} if value is None else value
    return {}


def new_usage() -> dict[str, Any]:
    """A fresh zero usage dict in Pi's shape (``cost`` is its own copy)."""
    usage = dict(EMPTY_USAGE)
    usage["cost"] = dict(EMPTY_USAGE["cost"])
    return usage


def total_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """``usage`` with ``totalTokens`` = input + output + cacheRead + cacheWrite (Pi's sum)."""
    usage["totalTokens"] = (
        usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
    )
    return usage


class MessageAssembler:
    """The assistant message of one streamed response.

    ``api``, ``provider``, ``model`` are copied onto the message. Blocks are addressed by their
    index in ``content`` (the ``contentIndex`` of the events). Tool-call argument text is kept
    per block in :attr:`partial_args` until :meth:`end` parses it.
    """

    def __init__(self, *, api: str, provider: str, model: str) -> None:
        self.base = AssistantMessage(
            content=[],
            api=api,
            provider=provider,
            model=model,
            usage=new_usage(),
            timestamp=now_ms(),
        )
        self.blocks: list[Any] = []
        self.partial_args: dict[int, str] = {}
        self.open: set[int] = set()

    @property
    def usage(self) -> dict[str, Any]:
        """The message's usage dict (mutable; providers update it in place)."""
        assert self.base.usage is not None
        return self.base.usage

    def snapshot(self) -> AssistantMessage:
        """The message as it stands: a copy with its own content list and usage."""
        usage = dict(self.usage)
        usage["cost"] = dict(usage["cost"])
        return self.base.model_copy(update={"content": list(self.blocks), "usage": usage})

    def start(self) -> StreamStart:
        """The ``start`` event (empty partial)."""
        return StreamStart(partial=self.snapshot())

    def _event(self, kind: str, index: int, **fields: Any) -> StreamDelta:
        return StreamDelta(type=kind, content_index=index, partial=self.snapshot(), **fields)  # type: ignore[arg-type]

    def open_text(self) -> tuple[int, StreamDelta]:
        """Append an empty text block: its index and ``text_start``."""
        return self._open(TextContent(text=""), "text_start")

    def open_thinking(self, signature: str | None = None) -> tuple[int, StreamDelta]:
        """Append an empty thinking block (``thinkingSignature`` ``signature``)."""
        return self._open(
            ThinkingContent(thinking="", thinking_signature=signature), "thinking_start"
        )

    def open_tool_call(self, call_id: str, name: str) -> tuple[int, StreamDelta]:
        """Append a tool call with ``arguments`` ``{}``: its index and ``toolcall_start``."""
        index, event = self._open(ToolCall(id=call_id, name=name, arguments={}), "toolcall_start")
        self.partial_args[index] = ""
        return index, event

    def _open(self, block: Any, kind: str) -> tuple[int, StreamDelta]:
        self.blocks.append(block)
        index = len(self.blocks) - 1
        self.open.add(index)
        return index, self._event(kind, index)

    def update_tool_call(self, index: int, **fields: Any) -> None:
        """Set ``id``/``name`` of a tool call that arrived after its start (no event)."""
        self.blocks[index] = self.blocks[index].model_copy(update=fields)

    def append(self, index: int, delta: str) -> StreamDelta:
        """Add ``delta`` to block ``index``: ``text_delta``, ``thinking_delta`` or
        ``toolcall_delta`` (the partial's arguments are the best-effort parse so far)."""
        block = self.blocks[index]
        if isinstance(block, TextContent):
            self.blocks[index] = block.model_copy(update={"text": block.text + delta})
            return self._event("text_delta", index, delta=delta)
        if isinstance(block, ThinkingContent):
            self.blocks[index] = block.model_copy(update={"thinking": block.thinking + delta})
            return self._event("thinking_delta", index, delta=delta)
        self.partial_args[index] += delta
        arguments = parse_streaming_json(self.partial_args[index])
        self.blocks[index] = block.model_copy(update={"arguments": arguments})
        return self._event("toolcall_delta", index, delta=delta)

    def append_signature(self, index: int, signature: str) -> None:
        """Add to a thinking block's ``thinkingSignature`` (no event)."""
        block = self.blocks[index]
        current = block.thinking_signature or ""
        self.blocks[index] = block.model_copy(update={"thinking_signature": current + signature})

    def end(self, index: int) -> StreamDelta | None:
        """Close block ``index``: ``text_end``/``thinking_end`` with the whole text, or
        ``toolcall_end`` with the call whose arguments are the final parse. ``None`` when the
        block is already closed."""
        if index not in self.open:
            return None
        self.open.discard(index)
        block = self.blocks[index]
        if isinstance(block, TextContent):
            return self._event("text_end", index, content=block.text)
        if isinstance(block, ThinkingContent):
            return self._event("thinking_end", index, content=block.thinking)
        arguments = parse_streaming_json(self.partial_args.pop(index, ""))
        self.blocks[index] = block.model_copy(update={"arguments": arguments})
        return self._event("toolcall_end", index, tool_call=self.blocks[index])

    def end_all(self) -> list[StreamDelta]:
        """Close every open block, in content order."""
        events = [self.end(index) for index in sorted(self.open)]
        return [event for event in events if event is not None]

    def done(self, stop_reason: Any) -> StreamDone:
        """``done`` with the completed message (``stopReason`` ``stop_reason``)."""
        message = self.snapshot()
        message.stop_reason = stop_reason
        return StreamDone(reason=stop_reason, message=message)

    def finish(
        self, stop_reason: Any, error: str | None
    ) -> list[StreamDelta | StreamDone | StreamError]:
        """The last events of a stream that ended: :meth:`end_all`, then :meth:`error` with
        ``error`` when it is not ``None``, else :meth:`done` with ``stop_reason``."""
        events: list[StreamDelta | StreamDone | StreamError] = list(self.end_all())
        if error is not None:
            events.append(self.error(error))
        else:
            events.append(self.done(stop_reason))
        return events

    def error(self, text: str, *, aborted: bool = False) -> StreamError:
        """``error``: the message so far (open tool calls parsed as far as they go),
        ``stopReason`` ``"error"`` (``"aborted"``), ``errorMessage`` ``text``."""
        for index in list(self.open):
            if index in self.partial_args:
                arguments = parse_streaming_json(self.partial_args.pop(index))
                self.blocks[index] = self.blocks[index].model_copy(update={"arguments": arguments})
        self.open.clear()
        message = self.snapshot()
        message.stop_reason = "aborted" if aborted else "error"
        message.error_message = text
        return StreamError(reason=message.stop_reason, error=message)


__all__ = [
    "MessageAssembler",
    "new_usage",
    "parse_streaming_json",
    "repair_json",
    "total_usage",
]
