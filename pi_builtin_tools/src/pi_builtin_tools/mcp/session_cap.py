"""A cap on the MCP sessions each client of ``pi mcp serve --http`` keeps open.

Every MCP session of the streamable HTTP transport is a pi session (its tools, its backends, its
plugins' state), and the SDK refuses new sessions once its global limit is reached: a client
that opens sessions without using them (or forgets to ``DELETE`` them) would lock every other
client out until the idle timeout. :class:`SessionCapApp` wraps the SDK's ASGI app and keeps at
most ``cap`` sessions per client (the peer's address): a request that opens a session beyond the
cap first closes that client's **oldest idle** session (no ``POST`` in flight; the one whose last
request ended first), through the protocol's own ``DELETE`` sent to the SDK's app, so the session
ends as if its client had ended it (``pi_session_end``, reason ``completed``). When every one of
the client's sessions has a request in flight, the new session is refused: 503 with a JSON-RPC
error naming the cap.

The app learns a session's id from the ``Mcp-Session-Id`` header of the response that opened
it, its activity from the requests carrying it, and forgets it on a ``DELETE`` or a 404 (a
session the SDK ended after its idle timeout).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import trio

from pi_core import parse_json

DEFAULT_SESSIONS_PER_CLIENT = 32
"""``--max-sessions``: the open MCP sessions one client (peer address) may keep."""

SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Tracked:
    client: str
    last_used: float = field(default_factory=trio.current_time)
    in_flight: int = 0


class SessionCapApp:
    """The ASGI wrapper described in the module doc: ``app`` is the SDK's streamable HTTP app
    (served at ``path``), ``cap`` the sessions per client."""

    def __init__(self, app: Any, cap: int = DEFAULT_SESSIONS_PER_CLIENT, path: str = "/mcp"):
        self.app = app
        self.cap = cap
        self.path = path
        self._sessions: dict[str, _Tracked] = {}
        self._opening: dict[str, int] = {}
        self._admission = trio.Lock()

    def sessions_of(self, client: str) -> list[str]:
        """The ids of ``client``'s tracked sessions, oldest use first."""
        mine = [(t.last_used, sid) for sid, t in self._sessions.items() if t.client == client]
        return [sid for _, sid in sorted(mine)]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = _header(scope, SESSION_HEADER)
        if session_id is not None:
            await self._existing(session_id, scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        client = _client_of(scope)
        async with self._admission:  # the opening request itself is served outside the lock
            if not await self._make_room(client, scope):
                await _refuse(self.cap, send)
                return
            self._opening[client] = self._opening.get(client, 0) + 1
        opened: list[str] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                new = _header(message, SESSION_HEADER)
                if new is not None and new not in self._sessions:
                    self._sessions[new] = _Tracked(client, in_flight=1)
                    opened.append(new)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._opening[client] -= 1
            for new in opened:
                self._done(new)

    async def _existing(self, session_id: str, scope: Any, receive: Any, send: Any) -> None:
        tracked = self._sessions.get(session_id)
        counts = tracked is not None and scope["method"] == "POST"
        if counts:
            assert tracked is not None
            tracked.in_flight += 1
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if counts:
                self._done(session_id)
            if scope["method"] == "DELETE" or status[:1] == [404]:
                self._sessions.pop(session_id, None)

    def _done(self, session_id: str) -> None:
        tracked = self._sessions.get(session_id)
        if tracked is not None:
            tracked.in_flight -= 1
            tracked.last_used = trio.current_time()

    async def _make_room(self, client: str, scope: Any) -> bool:
        """Close ``client``'s oldest idle sessions until it has fewer than the cap (counting the
        sessions being opened); ``False`` when every one it keeps has a request in flight."""
        while len(ids := self.sessions_of(client)) + self._opening.get(client, 0) >= self.cap:
            idle = [sid for sid in ids if self._sessions[sid].in_flight == 0]
            if not idle:
                return False
            await self._close(idle[0], scope)
        return True

    async def _close(self, session_id: str, request: Any) -> None:
        """End a session the way its client would: ``DELETE`` with its id, to the SDK's app."""
        self._sessions.pop(session_id, None)
        await send_internal(self.app, request, self.path, "DELETE", session_id)


async def send_internal(
    app: Any, request: Any, path: str, method: str, session_id: str, body: bytes = b""
) -> None:
    """Send the SDK's ``app`` a request of pi's own in the MCP session ``session_id``, as its
    client would (the Host of ``request``, the request pi acts on, passes the SDK's
    DNS-rebinding check); the response is dropped."""
    headers = [(SESSION_HEADER, session_id.encode())]
    headers += [(k, v) for k, v in request.get("headers", []) if k.lower() in _KEPT_HEADERS]
    if body:
        headers.append((b"content-type", b"application/json"))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": request.get("client"),
        "server": request.get("server"),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await trio.sleep_forever()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def discard(message: Any) -> None:
        pass

    await app(scope, receive, discard)


_KEPT_HEADERS = (b"host", b"accept", b"mcp-protocol-version")


class DisconnectCancelsApp:
    """An ASGI wrapper: when the client of an MCP session goes away while a ``POST`` of its
    requests is unanswered (the connection closes before the response ends), pi cancels those
    requests (``notifications/cancelled``, sent to the SDK's ``app`` in that session), as the
    client would have: pi keeps no event store, so nobody could ever receive their results, and
    a running ``bash`` is aborted instead of running on (its whole process tree ends)."""

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        session_id = _header(scope, SESSION_HEADER)
        if scope["type"] != "http" or scope["method"] != "POST" or session_id is None:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        complete = trio.Event()
        answered = False

        async def receive_body() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    complete.set()
            return message

        async def watch_send(message: Any) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True
            await send(message)

        cancelled = False

        async def cancel_requests() -> None:
            nonlocal cancelled
            if cancelled or answered:
                return
            cancelled = True
            for request_id in _request_ids(bytes(body)):
                note = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": "the client disconnected"},
                }
                await send_internal(
                    self.app, scope, self.path, "POST", session_id, json.dumps(note).encode()
                )

        async def watch_disconnect() -> None:
            await complete.wait()
            while (await receive())["type"] != "http.disconnect":
                pass
            await cancel_requests()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_disconnect)
            try:
                await self.app(scope, receive_body, watch_send)
            finally:
                # the response ended without the answer (the SDK saw the client go): cancel too
                if complete.is_set():
                    with trio.CancelScope(shield=True):
                        await cancel_requests()
                nursery.cancel_scope.cancel()


def _request_ids(body: bytes) -> list[Any]:
    """The ids of the JSON-RPC requests in a ``POST`` body (a message or a batch)."""
    try:
        data = parse_json(body)
    except ValueError:
        return []
    messages = data if isinstance(data, list) else [data]
    return [
        m["id"]
        for m in messages
        if isinstance(m, dict) and "method" in m and m.get("id") is not None
    ]


def _header(scope_or_message: Any, name: bytes) -> str | None:
    for key, value in scope_or_message.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _client_of(scope: Any) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


async def _refuse(cap: int, send: Any) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32000,
                "message": f"too many MCP sessions from this client: all {cap} (--max-sessions) "
                "have a request running; end one (DELETE) or wait",
            },
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["DEFAULT_SESSIONS_PER_CLIENT", "DisconnectCancelsApp", "SessionCapApp", "send_internal"]
