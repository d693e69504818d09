"""Loopback HTTP servers speaking the OpenAI and Anthropic streaming protocols (issue 5 item 7).

A :class:`ProtocolServer` is a real ``http.server.ThreadingHTTPServer`` on 127.0.0.1 in a
thread. It answers each POST with the next prepared :class:`Reply` (an SSE stream written frame
by frame with a flush after each, or an error status with a body) and records every request
(path, headers, JSON body). The SSE builders replay the shapes the real services send: OpenAI
``chat.completion.chunk`` objects (``data: {...}`` then ``data: [DONE]``) and Anthropic
``event: TYPE`` / ``data: {...}`` frames.

(A module of the test folder, imported by the provider tests.)
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One answer: ``status``, extra ``headers``; ``frames`` (SSE text pieces, each written and
    flushed on its own) for a stream, else ``body`` bytes; ``hang``: keep the connection open
    after the frames until the server stops (or the client goes away)."""

    status: int = 200
    frames: list[str] = field(default_factory=list)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


@dataclass
class Recorded:
    """A request the server received: ``path``, ``headers`` (lower-case names), ``body``
    (the parsed JSON)."""

    path: str
    headers: dict[str, str]
    body: Any


class ProtocolServer:
    """``with ProtocolServer(replies) as server:`` serves ``replies`` in order on
    ``server.url``; a request beyond them gets ``500 {"error": {"message": "no reply left"}}``.
    ``server.requests`` lists what arrived."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Recorded] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with outer._lock:
                    outer.requests.append(
                        Recorded(
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=json.loads(raw) if raw else None,
                        )
                    )
                    reply = outer.replies.pop(0) if outer.replies else None
                if reply is None:
                    reply = Reply(status=500, body=b'{"error": {"message": "no reply left"}}')
                self.send_response(reply.status)
                streaming = reply.status == 200 and not reply.body
                if streaming:
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                else:
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    if not streaming:
                        self.wfile.write(reply.body)
                        return
                    for frame in reply.frames:
                        self.wfile.write(frame.encode("utf-8"))
                        self.wfile.flush()
                    if reply.hang:
                        while not outer.stopping.wait(0.05):
                            # a closed client shows up as a failed write
                            self.wfile.write(b": keep-alive\n\n")
                            self.wfile.flush()
                except OSError:  # the client went away
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def __enter__(self) -> ProtocolServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# --- OpenAI chat-completions stream ------------------------------------------------------------


def openai_chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: dict[str, Any] | None = None,
    model: str = "gpt-test",
    choices: bool = True,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice (``delta``, ``finish_reason``), or with
    ``choices: []`` and ``usage`` (the last chunk when ``include_usage`` is on)."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1764470000,
        "model": model,
        "system_fingerprint": "fp_test",
        "choices": [],
    }
    if choices:
        chunk["choices"] = [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ]
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def openai_frames(*chunks: dict[str, Any], done: bool = True) -> list[str]:
    """``data: {chunk}`` frames, then ``data: [DONE]``."""
    frames = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    if done:
        frames.append("data: [DONE]\n\n")
    return frames


def openai_text_reply(text_pieces: list[str], finish_reason: str = "stop") -> Reply:
    """A streamed text answer: the role chunk, one chunk per piece, the finish chunk, usage."""
    return Reply(
        frames=openai_frames(
            openai_chunk({"role": "assistant", "content": ""}),
            *[openai_chunk({"content": piece}) for piece in text_pieces],
            openai_chunk({}, finish_reason),
            openai_chunk(
                usage={"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
                choices=False,
            ),
        )
    )


def openai_tool_call_chunks(
    index: int, call_id: str, name: str, argument_pieces: list[str]
) -> list[dict[str, Any]]:
    """A tool call as OpenAI streams it: the first chunk names it (``arguments: ""``), then
    one chunk per argument piece carrying only ``index`` and ``function.arguments``."""
    first = {
        "tool_calls": [
            {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
        ]
    }
    chunks = [openai_chunk(first)]
    for piece in argument_pieces:
        chunks.append(
            openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        )
    return chunks


# --- Anthropic Messages stream -------------------------------------------------------------------


def anthropic_frame(event: dict[str, Any]) -> str:
    """``event: TYPE`` / ``data: {event}``."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


def anthropic_message_start(
    input_tokens: int = 30, cache_read: int = 0, cache_write: int = 0, model: str = "claude-test"
) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": cache_write,
                "cache_read_input_tokens": cache_read,
                "output_tokens": 1,
            },
        },
    }


def anthropic_text_block(index: int, pieces: list[str]) -> list[dict[str, Any]]:
    """``content_block_start`` (text), one ``text_delta`` per piece, ``content_block_stop``."""
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        },
        *[
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in pieces
        ],
        {"type": "content_block_stop", "index": index},
    ]


def anthropic_tool_block(
    index: int, call_id: str, name: str, json_pieces: list[str], *, stop: bool = True
) -> list[dict[str, Any]]:
    """``content_block_start`` (tool_use, ``input: {}``), an empty and then one
    ``input_json_delta`` per piece, ``content_block_stop`` (unless ``stop`` is false)."""
    events: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
    ]
    for piece in json_pieces:
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
        )
    if stop:
        events.append({"type": "content_block_stop", "index": index})
    return events


def anthropic_frames(
    blocks: list[dict[str, Any]],
    stop_reason: str,
    *,
    output_tokens: int = 12,
    start: dict[str, Any] | None = None,
    stop: bool = True,
) -> list[str]:
    """A whole message: ``message_start``, a ``ping``, the block events, ``message_delta``
    (``stop_reason``, ``output_tokens``), ``message_stop`` (unless ``stop`` is false)."""
    events = [
        start or anthropic_message_start(),
        {"type": "ping"},
        *blocks,
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    ]
    if stop:
        events.append({"type": "message_stop"})
    return [anthropic_frame(event) for event in events]
