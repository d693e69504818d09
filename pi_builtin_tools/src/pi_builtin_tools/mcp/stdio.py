"""The stdio transport of ``pi mcp serve``: a lean JSON-RPC loop for the methods a session
spends its time in, the MCP SDK for everything else.

A session that only sends ``initialize`` (a handshake protocol version whose result shapes
need no per-version sieve: :data:`LEAN_VERSIONS`, and no ``elicitation`` capability),
``notifications/initialized``, ``ping``, ``tools/list``, ``tools/call`` (``_meta.progressToken``
allowed) and ``notifications/cancelled`` is answered here, without importing the SDK (about
0.4 s of CPU at start-up and ~0.9 ms per call of its dispatch). The answers are the SDK's, byte
for byte after JSON normalisation (tests/mcp/test_mcp_stdio_lean.py sends the same lines to
both). The first line this loop does not take exactly as it is (any other method or
notification, a malformed, batched or oversized message, a request before ``initialize``,
unusual parameters) hands the connection to the SDK (:func:`serve_lines`' ``handover``): the
SDK is given the ``initialize`` line (its answer dropped, the client has it) and
``notifications/initialized`` again, then that line and the rest of the input; calls still
running stay with this loop (their cancellation too).

API (used by :mod:`pi_builtin_tools.mcp.server`): :func:`serve_lines`, :class:`LineReader`,
:class:`FdWriter`, :class:`TextWriter`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import trio

from pi_core import Abort, ToolCall, dump_json

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON-RPC message read from stdin (64 MiB); a longer line is dropped unread (the
SDK logs it as unparseable) instead of growing without bound."""

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions the SDK negotiates in ``initialize`` (``mcp_types.version``'s
``HANDSHAKE_PROTOCOL_VERSIONS``; a test holds them equal); any other request gets the last."""

LEAN_VERSIONS = ("2025-06-18", "2025-11-25")
"""The negotiated versions this loop serves (older ones drop fields of pi's results: the SDK
sieves them)."""

CONNECTION_CLOSED = -32000
"""The SDK's error code for a request still running when the input ends."""

CLIENT_CAPABILITIES = {"roots", "sampling", "experimental"}
"""The client capabilities this loop accepts in ``initialize`` (``elicitation`` needs server
requests: the SDK's)."""


class LineReader:
    """The lines of a file descriptor for the SDK's stdio transport (``async for line``),
    through a trio stream, so reading is cancellable; a line over :data:`MAX_LINE_BYTES` is
    replaced by an empty JSON object the SDK cannot parse as a message.

    The stream holds the descriptor (non-blocking while it is open); the reads are this
    class's own: a read that finds nothing waits until the descriptor is readable, and a read
    that finds data at once passes a checkpoint first. So a client that sends one request and
    waits for its answer costs one loop turn per request (``FdStream.receive_some`` passes a
    checkpoint before every read: two)."""

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(fd)
        self._fd = self._stream.fileno()
        self._buffer = bytearray()
        self._scanned = 0
        self._skipping = False
        self._eof = False
        self._waited = False

    async def _receive(self) -> bytes:
        """The next chunk of input; ``b""`` at its end or when it cannot be read."""
        while True:
            if not self._waited:
                await trio.lowlevel.checkpoint()
            self._waited = False
            try:
                return os.read(self._fd, 1 << 16)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self._fd)
                self._waited = True
            except OSError:  # not readable (a directory, a closed terminal): end of input
                return b""

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                if self._skipping or end > MAX_LINE_BYTES:
                    self._skipping = False
                    return "{}"
                if line.strip():
                    return line.decode("utf-8", "replace")
                continue
            self._scanned = len(self._buffer)
            if len(self._buffer) > MAX_LINE_BYTES:
                self._buffer.clear()
                self._scanned = 0
                self._skipping = True
            if self._eof:
                raise StopAsyncIteration
            chunk = await self._receive()
            if not chunk:
                self._eof = True
                if self._buffer.strip() and not self._skipping:
                    self._buffer += b"\n"
                continue
            self._buffer += chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class FdWriter:
    """The stdio output (``write`` then ``flush`` per message) on a file descriptor, one
    message after another (a lock: the lean loop's calls answer from their own tasks); once
    the reader has gone away, output is dropped.

    As :class:`LineReader`, the stream holds the descriptor and the writes are this class's
    own: a message the pipe takes at once (the usual case) costs no loop turn; a full pipe is
    waited on until it is writable, and a message waits for the lock only when another one is
    being sent."""

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(fd)
        self._fd = self._stream.fileno()
        self._pending: list[bytes] = []
        self._broken = False
        self._lock = trio.Lock()

    async def _send_all(self, data: bytes) -> None:
        with memoryview(data) as view:
            sent = 0
            while sent < len(view):
                try:
                    sent += os.write(self._fd, view[sent:])
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(self._fd)

    async def write(self, text: str) -> None:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: see _escaped
            data = _escaped(text).encode("utf-8")
        self._pending.append(data)

    async def flush(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        if self._broken or not data:
            return
        try:
            try:
                self._lock.acquire_nowait()
            except trio.WouldBlock:
                await self._lock.acquire()
            try:
                await self._send_all(data)
            finally:
                self._lock.release()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self._broken = True

    async def aclose(self) -> None:
        await self._stream.aclose()


def _escaped(text: str) -> str:
    """JSON lines holding a lone surrogate (a client's own string, echoed in an answer or an
    error text: JSON's ``\\ud800`` escape reads as one) written with JSON escapes, as the client
    wrote it, since UTF-8 cannot carry it; a line that is not JSON gets U+FFFD for it."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        try:
            lines[i] = json.dumps(json.loads(line), ensure_ascii=True, separators=(",", ":"))
        except (ValueError, RecursionError):
            lines[i] = line.encode("utf-8", "replace").decode("utf-8")
    return "\n".join(lines)


class TextWriter:
    """``FdWriter`` over a text stream without a file descriptor (a program's own ``stdout``)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def write(self, text: str) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _escaped(text)
        self._stream.write(text)

    async def flush(self) -> None:
        self._stream.flush()

    async def aclose(self) -> None:
        pass


class Writer(Protocol):
    """Where messages go: ``write`` a message's text, ``flush`` to send it."""

    async def write(self, text: str) -> None: ...

    async def flush(self) -> None: ...


class Served(Protocol):
    """What the loop needs of :class:`pi_builtin_tools.mcp.server.ServedSession`."""

    async def wait_ready(self) -> None: ...

    def ready(self) -> bool: ...

    def declarations(self) -> list[dict[str, Any]]: ...

    async def call(
        self,
        tool_call: ToolCall,
        report_progress: Callable[[float, str], Awaitable[None]] | None,
    ) -> dict[str, Any]: ...

    async def call_here(self, tool_call: ToolCall, abort: Abort) -> dict[str, Any]: ...


Handover = Callable[[AsyncIterator[str], Writer], Awaitable[None]]
"""Serve the rest of a connection with the SDK: its input lines and its output."""


def _dumps(message: dict[str, Any]) -> str:
    return dump_json(message) + "\n"  # json.dumps(ensure_ascii=False, compact)'s text


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _empty(params: Any) -> bool:
    return params is None or params == {}


def _plain_initialize(params: Any) -> bool:
    """Whether ``initialize`` ``params`` are valid as they are and ask for nothing the loop
    leaves to the SDK (unusual fields, an ``elicitation`` capability)."""
    if not isinstance(params, dict) or set(params) - {
        "protocolVersion",
        "capabilities",
        "clientInfo",
    }:
        return False
    info = params.get("clientInfo")
    capabilities = params.get("capabilities")
    if not isinstance(params.get("protocolVersion"), str) or not isinstance(capabilities, dict):
        return False
    if not isinstance(info, dict) or set(info) - {"name", "version", "title"}:
        return False
    if not all(isinstance(info.get(k), str) for k in ("name", "version")):
        return False
    if not all(isinstance(v, str) for v in info.values()):
        return False
    return set(capabilities) <= CLIENT_CAPABILITIES and all(v == {} for v in capabilities.values())


class _Loop:
    """The state of one lean connection."""

    def __init__(self, served: Served, writer: Writer, server_info: dict[str, Any]) -> None:
        self.served = served
        self.writer = writer
        self.server_info = server_info
        self.replay: list[str] = []
        """The lines the SDK must see again after a handover (``initialize``,
        ``notifications/initialized``)."""
        self.init_id: Any = None
        self.running: dict[Any, Callable[[], None]] = {}
        """How to stop each running call, by request id (its scope's ``cancel`` or its
        abort's ``abort``)."""
        self.closed: set[Any] = set()
        self.calls: trio.Nursery | None = None
        self._tools: list[dict[str, Any]] | None = None

    async def send(self, message: dict[str, Any]) -> None:
        await self.writer.write(_dumps(message))
        await self.writer.flush()

    async def take(self, line: str) -> bool:
        """Serve ``line`` if the loop takes it exactly as it is; ``False`` hands over."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deep: the SDK's to judge
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        params = message.get("params")
        if "id" not in message:
            if set(message) - {"jsonrpc", "method", "params"}:
                return False
            return self._notification(method, params, line)
        rid = message["id"]
        if set(message) - {"jsonrpc", "id", "method", "params"} or not _is_id(rid):
            return False
        if method == "initialize":
            if self.init_id is not None or not _plain_initialize(params):
                return False
            requested = str(params["protocolVersion"])  # type: ignore[index]
            version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            if version not in LEAN_VERSIONS:
                return False
            self.init_id = rid
            self.replay.append(line)
            result = {"protocolVersion": version, **self.server_info}
            await self.send({"jsonrpc": "2.0", "id": rid, "result": result})  # before any other
            return True
        if self.init_id is None or rid in self.running:
            return False
        if method == "ping" and _empty(params):
            await self.send({"jsonrpc": "2.0", "id": rid, "result": {}})
            return True
        if method == "tools/list" and _empty(params):
            await self._until_ready()
            if self._tools is None:
                self._tools = self.served.declarations()
            await self.send({"jsonrpc": "2.0", "id": rid, "result": {"tools": self._tools}})
            return True
        if method == "tools/call":
            await self._until_ready()
            return self._tools_call(rid, params)
        return False

    async def _until_ready(self) -> None:
        """Wait, before reading on, until the session has started (at once when it has): the
        list and the calls are then answered in the order they came, the list at once."""
        if not self.served.ready():
            await self.served.wait_ready()

    def _notification(self, method: Any, params: Any, line: str) -> bool:
        if self.init_id is None:
            return False
        if method == "notifications/initialized" and _empty(params):
            if not self.replay[1:]:
                self.replay.append(line)
            return True
        if method == "notifications/cancelled":
            return self.cancel(params)
        return False

    def cancel(self, params: Any) -> bool:
        """Cancel the running call ``params`` name (``notifications/cancelled``); ``False``
        when the params are unusual (the SDK's to judge)."""
        if not isinstance(params, dict) or set(params) - {"requestId", "reason"}:
            return False
        if not _is_id(params.get("requestId")) or not isinstance(params.get("reason", ""), str):
            return False
        stop = self.running.get(params["requestId"])
        if stop is not None:
            stop()
        return True

    def _tools_call(self, rid: Any, params: Any) -> bool:
        if not isinstance(params, dict) or set(params) - {"name", "arguments", "_meta"}:
            return False
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
            return False
        token = None
        if meta is not None:
            if not isinstance(meta, dict) or set(meta) - {"progressToken"}:
                return False
            token = meta.get("progressToken")
            if token is not None and not _is_id(token):
                return False
        tool_call = ToolCall(id=f"mcp-{rid}", name=name, arguments=arguments or {})
        if token is None:
            abort = Abort()
            self.running[rid] = abort.abort
            self._start(self._call_here, rid, tool_call, abort)
        else:
            scope = trio.CancelScope()
            self.running[rid] = scope.cancel
            self._start(self._call, rid, tool_call, token, scope)
        return True

    def _start(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self.calls is not None
        self.calls.start_soon(fn, *args)

    async def _call(
        self, rid: Any, tool_call: ToolCall, token: Any, scope: trio.CancelScope
    ) -> None:
        """A call with progress: the session runs it; cancelling ``scope`` stops waiting for
        it (the session aborts and finalises it). Shielded, as :meth:`_call_here`: only
        ``scope`` stops it (a cancelled request, the input's end, the server stopping: each
        goes through :meth:`close` or :meth:`cancel`), so every stopped call is answered the
        same way."""

        async def report(progress: float, message: str) -> None:
            params = {"progressToken": token, "progress": float(progress), "message": message}
            await self.send(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            )

        result = None
        try:
            with trio.CancelScope(shield=True), scope:
                result = await self.served.call(tool_call, report)
        finally:
            del self.running[rid]
        await self._answer(rid, result)

    async def _call_here(self, rid: Any, tool_call: ToolCall, abort: Abort) -> None:
        """A call without progress, run in this task (no task and wake-up of its own): stopped
        only by ``abort`` (a cancelled request, the input's end), finalised before it is
        answered; an aborted call is answered only when the input has ended, as with
        :meth:`_call`."""
        try:
            result: dict[str, Any] | None = await self.served.call_here(tool_call, abort)
        finally:
            del self.running[rid]
        await self._answer(rid, None if abort.aborted else result)

    async def _answer(self, rid: Any, result: dict[str, Any] | None) -> None:
        """The call's result; for a stopped call, nothing (``notifications/cancelled``) or, when
        the input ended, the SDK's ``Connection closed`` error."""
        if result is not None:
            await self.send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif rid in self.closed:
            error = {"code": CONNECTION_CLOSED, "message": "Connection closed"}
            await self.send({"jsonrpc": "2.0", "id": rid, "error": error})

    def close(self) -> None:
        """The input has ended: stop the running calls, each answered as the SDK does."""
        for rid, stop in list(self.running.items()):
            self.closed.add(rid)
            stop()


class _Rest:
    """The SDK's input after a handover: the replayed lines, then the reader's, less the
    cancellations of calls the loop still runs."""

    def __init__(self, lines: list[str], reader: AsyncIterator[str], loop: _Loop) -> None:
        self._lines = lines
        self._reader = reader
        self._loop = loop

    def __aiter__(self) -> _Rest:
        return self

    async def __anext__(self) -> str:
        if self._lines:
            return self._lines.pop(0)
        while True:
            line = await self._reader.__anext__()
            if not self._loop.running or '"notifications/cancelled"' not in line:
                return line
            try:
                message = json.loads(line)
                params = message["params"]
                request_id = params["requestId"]
            except (ValueError, TypeError, KeyError, RecursionError):
                return line
            if message.get("method") != "notifications/cancelled" or not _is_id(request_id):
                return line
            if request_id not in self._loop.running:
                return line
            self._loop.cancel(params)


class _DropInitAnswer:
    """The SDK's output after a handover, less its answer to the replayed ``initialize``."""

    def __init__(self, writer: Writer, init_id: Any) -> None:
        self._writer = writer
        self._init_id = init_id
        self._dropping = init_id is not None

    async def write(self, text: str) -> None:
        if self._dropping:
            try:
                message = json.loads(text)
            except (ValueError, RecursionError):
                message = None
            if isinstance(message, dict) and "method" not in message:
                if message.get("id") == self._init_id:
                    self._dropping = False
                    return
        await self._writer.write(text)

    async def flush(self) -> None:
        await self._writer.flush()


async def serve_lines(
    reader: AsyncIterator[str],
    writer: Writer,
    served: Served,
    server_info: dict[str, Any],
    handover: Handover,
    *,
    lean: bool = True,
) -> None:
    """Serve a connection: ``reader``'s lines in, ``writer``'s messages out, the calls in
    ``served``; ``server_info`` is the ``initialize`` result less ``protocolVersion``. The
    first line the loop does not take (every line with ``lean=False``) goes to
    ``handover`` with the rest of the input. Returns when the input ends; calls still running
    are cancelled and answered ``Connection closed``, as the SDK does."""
    loop = _Loop(served, writer, server_info)
    async with trio.open_nursery() as calls:
        loop.calls = calls
        try:
            async for line in reader:
                if lean and await loop.take(line):
                    continue
                rest = _Rest([*loop.replay, line], reader, loop)
                await handover(
                    rest, _DropInitAnswer(writer, loop.init_id) if loop.replay else writer
                )
                break
        finally:
            loop.close()
