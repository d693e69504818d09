"""Connections to MCP servers on trio, with the ``mcp`` SDK's client (``ClientSession`` over
``stdio_client`` or ``streamable_http_client``; the SDK runs on anyio, so on trio).

One :class:`ServerConnection` per server and session. It starts the server on first use: a trio
*system task* hosts the SDK's context managers for the session's lifetime (a tool call's task
cannot: it ends with the call), and :meth:`ServerConnection.close` stops it (stdin closed, then
SIGTERM/SIGKILL of the server's process group: the SDK's shutdown, shielded). Start-up
(spawn, ``initialize``, ``tools/list``) and each request are bounded by the server's ``timeout``.

* A server that cannot start, exits at once or does not answer in time:
  ``MCP server "<name>" failed to connect: <reason>`` (and the tail of its stderr on the next
  line), for this call and every later one of the session (no retry).
* A server that exits while a request is in flight: that request fails with
  ``MCP server "<name>": MCP connection closed`` (+ stderr tail). The next request restarts it,
  once per session; after a second exit: ``MCP server "<name>" exited again after a restart;
  it stays stopped for this session``.
* A request that times out: ``MCP server "<name>": MCP request timed out after <ms>ms`` (the
  SDK sends ``notifications/cancelled``).

:func:`discover` runs one connection to list a server's tools outside any session (what
``pi_register_tools``, which is synchronous, and ``pi mcp list`` use).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import trio

from pi_builtin_tools.mcp.mcp_config import McpServer, ValueResolutionError, resolve_value
from pi_core import js_number_to_string

MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024
"""The largest server-sent event pi's client accepts from an HTTP MCP server (the SDK's default
is 1 MiB, which a server's 1 MB tool result exceeds); bounded, so a server cannot make pi hold
any amount."""


class _OneLineReport(logging.Handler):
    """What the ``mcp`` SDK logs (a server printing something that is not JSON-RPC on stdout,
    a dropped message) as one line on stderr, ``pi: mcp: MESSAGE``, never a traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            lines = record.getMessage().splitlines() or [""]
            sys.stderr.write(f"pi: mcp: {lines[0][:500]}\n")
        except Exception:  # a report must never break a call
            pass


def _quiet_sdk_logs() -> None:
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, _OneLineReport) for h in logger.handlers):
        logger.addHandler(_OneLineReport(logging.WARNING))
        logger.propagate = False


_quiet_sdk_logs()

STDERR_TAIL_CHARS = 2000
"""How much of a failed server's stderr an error shows."""

CLIENT_NAME = "pi"


class McpServerError(Exception):
    """A server failed: its message is the error result's text (it names the server)."""


def _error_text(exc: BaseException) -> str:
    """One readable reason for ``exc`` (exception groups are looked into)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        if "connection closed" in str(exc).lower():
            return "MCP connection closed"
        return str(exc)
    if isinstance(exc, (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)):
        return "MCP connection closed"
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"cannot start the server: no such file or directory: {exc.filename} (the command or its cwd)"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    text = str(exc)
    return text or type(exc).__name__


def _client_version() -> str:
    try:
        from importlib.metadata import version

        return version("pi-builtin-tools")
    except Exception:
        return "0"


@dataclass
class _Attempt:
    """One start of a server: the host task's state."""

    ready: trio.Event = field(default_factory=trio.Event)
    stop: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    lost: trio.Event = field(default_factory=trio.Event)
    session: Any = None
    error: str | None = None
    stderr_fd: int | None = None
    stderr_tail: str = ""

    def read_stderr_tail(self) -> str:
        """The last :data:`STDERR_TAIL_CHARS` characters the server wrote on stderr, trimmed."""
        if self.stderr_fd is None:
            return self.stderr_tail
        try:
            size = os.fstat(self.stderr_fd).st_size
            start = max(0, size - STDERR_TAIL_CHARS * 4)
            data = os.pread(self.stderr_fd, size - start, start)
        except OSError:
            return self.stderr_tail
        text = data.decode("utf-8", errors="replace").strip()
        return text[-STDERR_TAIL_CHARS:]


class ServerConnection:
    """One MCP server within one session: started on first use, restarted once after an exit,
    stopped by :meth:`close`. ``state`` is ``"idle"``, ``"connecting"``, ``"connected"``,
    ``"failed"`` (``error`` says why), ``"exited"`` (between an exit and the restart) or
    ``"closed"``; after a start, ``tools`` (the JSON of each ``Tool``), ``has_resources`` and
    ``instructions``."""

    def __init__(self, server: McpServer, cwd: str) -> None:
        self.server = server
        self.cwd = cwd
        self.state = "idle"
        self.error: str | None = None
        self.tools: list[dict[str, Any]] = []
        self.has_resources = False
        self.instructions: str | None = None
        self.restarts = 0
        self._attempt: _Attempt | None = None
        self._lock = trio.Lock()

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def timeout_ms(self) -> int:
        return round(self.server.timeout * 1000)

    # -- start and stop ---------------------------------------------------------------------

    async def session(self) -> Any:
        """The connected ``ClientSession``, starting (or restarting, once) the server first.
        Raises :class:`McpServerError`."""
        async with self._lock:
            attempt = self._attempt
            if self.state == "closed":
                raise McpServerError(f'MCP server "{self.name}" is shut down')
            if self.state == "failed":
                raise McpServerError(f'MCP server "{self.name}" failed to connect: {self.error}')
            if attempt is not None and attempt.session is not None and attempt.lost.is_set():
                await self._retire(attempt)
                attempt = None
                if self.restarts >= 1:
                    self.state = "exited"
                    self.error = "exited again after a restart"
                    raise McpServerError(
                        f'MCP server "{self.name}" exited again after a restart; '
                        "it stays stopped for this session"
                    )
                self.restarts += 1
            if attempt is None:
                attempt = self._attempt = _Attempt()
                self.state = "connecting"
                trio.lowlevel.spawn_system_task(self._host, attempt, name=f"mcp server {self.name}")
        await attempt.ready.wait()
        if attempt.error is not None:
            raise McpServerError(f'MCP server "{self.name}" failed to connect: {attempt.error}')
        return attempt.session

    async def _retire(self, attempt: _Attempt) -> None:
        attempt.stop.set()
        with trio.CancelScope(shield=True):
            await attempt.done.wait()

    async def close(self) -> None:
        """Stop the server (if it runs) and refuse later requests."""
        self.state = "closed"
        attempt = self._attempt
        if attempt is not None:
            await self._retire(attempt)

    @contextlib.asynccontextmanager
    async def _transport(self, stderr: Any) -> AsyncIterator[tuple[Any, Any]]:
        server = self.server
        if server.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {
                key: resolve_value(
                    value, f'MCP server "{server.name}" header "{key}"', server.allow_command_values
                )
                for key, value in server.headers.items()
            }
            async with contextlib.AsyncExitStack() as stack:
                auth = None
                if server.auth == "oauth":
                    from pi_builtin_tools.mcp.oauth import oauth_provider

                    auth = await stack.enter_async_context(
                        oauth_provider(server.name, str(server.url))
                    )
                client = httpx2.AsyncClient(
                    headers=headers, timeout=httpx2.Timeout(30, read=300), auth=auth
                )
                async with (
                    client,
                    streamable_http_client(
                        str(server.url), http_client=client, max_sse_event_size=MAX_SSE_EVENT_BYTES
                    ) as streams,
                ):
                    yield streams[0], streams[1]
            return
        from mcp.client.stdio import stdio_client

        async with stdio_client(_stdio_parameters(server, self.cwd), errlog=stderr) as streams:
            yield streams[0], streams[1]

    async def _host(self, attempt: _Attempt) -> None:
        """The system task of one start: holds the transport and the ``ClientSession`` until
        ``attempt.stop`` (or the server's exit) and always sets ``ready`` and ``done``."""
        from mcp.client.session import ClientSession
        from mcp.types import Implementation

        try:
            with tempfile.TemporaryFile() as stderr:
                attempt.stderr_fd = stderr.fileno()
                try:
                    with trio.CancelScope() as scope:
                        scope.deadline = trio.current_time() + self.server.timeout
                        async with (
                            self._transport(stderr) as (read, write),
                            trio.open_nursery() as nursery,
                        ):
                            relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)
                            nursery.start_soon(self._relay, read, relay_send, attempt)
                            info = Implementation(name=CLIENT_NAME, version=_client_version())
                            async with ClientSession(
                                relay_receive, write, client_info=info
                            ) as session:
                                init = await session.initialize()
                                tools = (
                                    await _list_all_tools(session)
                                    if init.capabilities.tools
                                    else []
                                )
                                scope.deadline = math.inf
                                self.tools = tools
                                self.has_resources = init.capabilities.resources is not None
                                self.instructions = (init.instructions or "").strip() or None
                                attempt.session = session
                                self.state = "connected"
                                self.error = None
                                attempt.ready.set()
                                async with trio.open_nursery() as waiter:
                                    waiter.start_soon(_set_on, attempt.lost, waiter.cancel_scope)
                                    waiter.start_soon(_set_on, attempt.stop, waiter.cancel_scope)
                                if attempt.lost.is_set() and not attempt.stop.is_set():
                                    self.state = "exited"
                            nursery.cancel_scope.cancel()
                    if scope.cancelled_caught and not attempt.ready.is_set():
                        attempt.error = f"MCP request timed out after {self.timeout_ms}ms"
                except ValueResolutionError as exc:
                    attempt.error = str(exc)
                except Exception as exc:
                    attempt.error = _error_text(exc)
                finally:
                    attempt.stderr_tail = attempt.read_stderr_tail()
                    attempt.stderr_fd = None
        except Exception as exc:  # the temporary file itself
            attempt.error = attempt.error or _error_text(exc)
        finally:
            if attempt.error is not None and not attempt.ready.is_set():
                if attempt.stderr_tail:
                    attempt.error = f"{attempt.error}\n{attempt.stderr_tail}"
                self.state = "failed"
                self.error = attempt.error
            elif attempt.error is None and not attempt.ready.is_set():
                attempt.error = "MCP connection closed"
                self.state = "failed"
                self.error = attempt.error
            attempt.lost.set()
            attempt.ready.set()
            attempt.done.set()

    @staticmethod
    async def _relay(read: Any, send: Any, attempt: _Attempt) -> None:
        """Forward the transport's messages to the session; notice the end of the stream
        (the server exited)."""
        try:
            async with send:
                async for item in read:
                    await send.send(item)
        except Exception:
            pass
        finally:
            attempt.lost.set()

    # -- requests ---------------------------------------------------------------------------

    async def request(self, what: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``what(session)`` within the server's timeout; failures become
        :class:`McpServerError` naming the server."""
        session = await self.session()
        attempt = self._attempt
        failure: str | None = None
        with trio.move_on_after(self.server.timeout) as scope:
            try:
                return await what(session)
            except McpServerError:
                raise
            except Exception as exc:
                failure = _error_text(exc)
        if scope.cancelled_caught:
            failure = f"MCP request timed out after {self.timeout_ms}ms"
        if attempt is not None and attempt.lost.is_set():
            failure = "MCP connection closed"
            with trio.move_on_after(1):
                await attempt.done.wait()
            tail = (
                attempt.read_stderr_tail() if attempt.stderr_fd is not None else attempt.stderr_tail
            )
            if tail:
                failure = f"{failure}\n{tail}"
            self.state = "exited"
        raise McpServerError(f'MCP server "{self.name}": {failure}')

    async def call_tool(
        self, tool: str, arguments: Any, on_progress: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """``tools/call``: the JSON of the ``CallToolResult``."""

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                suffix = "" if total is None else f"/{js_number_to_string(total)}"
                on_progress(
                    message
                    if message is not None
                    else f"Progress {js_number_to_string(value)}{suffix}"
                )

        async def run(session: Any) -> dict[str, Any]:
            result = await session.call_tool(
                tool, arguments if isinstance(arguments, dict) else {}, progress_callback=progress
            )
            return _dump(result)

        result: dict[str, Any] = await self.request(run)
        return result

    async def resources_page(self, cursor: str | None, templates: bool = False) -> dict[str, Any]:
        """One page of ``resources/list`` (or ``resources/templates/list``) as JSON."""
        from mcp.types import PaginatedRequestParams

        async def run(session: Any) -> dict[str, Any]:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            if templates:
                try:
                    return _dump(await session.list_resource_templates(params=params))
                except Exception as exc:
                    if "method not found" in str(exc).lower():
                        return {"resourceTemplates": []}
                    raise
            return _dump(await session.list_resources(params=params))

        result: dict[str, Any] = await self.request(run)
        return result

    async def all_resources(self, templates: bool = False) -> list[dict[str, Any]]:
        """Every page of ``resources/list`` (or of the templates)."""
        key = "resourceTemplates" if templates else "resources"
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):
            page = await self.resources_page(cursor, templates)
            items.extend(page.get(key) or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return items

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read`` as JSON."""

        async def run(session: Any) -> dict[str, Any]:
            return _dump(await session.read_resource(uri))

        result: dict[str, Any] = await self.request(run)
        return result


WATCHDOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_server_watchdog.py")
"""The script a stdio server runs under (:mod:`pi_builtin_tools.mcp._server_watchdog`)."""


def _stdio_parameters(server: McpServer, cwd: str) -> Any:
    """The SDK's ``StdioServerParameters`` of ``server``: ``~`` expanded in the command,
    arguments and ``cwd`` (relative to the session's ``cwd``); the environment is pi's with
    the server's ``env`` (resolved: ``${VAR}``, ``!command``) over it, as Pi does."""
    from mcp.client.stdio import StdioServerParameters

    env = {
        key: resolve_value(
            value, f'MCP server "{server.name}" env "{key}"', server.allow_command_values
        )
        for key, value in server.env.items()
    }
    command = os.path.expanduser(str(server.command))
    directory = os.path.normpath(os.path.join(cwd, os.path.expanduser(server.cwd or ".")))
    full_env = {**os.environ, **env}
    # what a spawn would say, said before the watchdog hides it
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), directory)
    if os.sep in command:
        program = command if os.path.isabs(command) else os.path.join(directory, command)
        found = program if os.access(program, os.X_OK) and os.path.isfile(program) else None
    else:
        found = shutil.which(command, path=full_env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    # the server runs under a watchdog that stops its process group when pi goes away, even
    # killed without its clean-up (SIGTERM, SIGKILL); a server that ignores the end of its
    # stdin would otherwise be left running
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-I",
            "-S",
            WATCHDOG,
            str(os.getpid()),
            found,
            *[os.path.expanduser(a) if a.startswith("~") else a for a in server.args],
        ],
        env=full_env,
        cwd=directory,
    )


async def _set_on(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return data


async def _list_all_tools(session: Any) -> list[dict[str, Any]]:
    from mcp.types import PaginatedRequestParams

    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(_dump(tool) for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@dataclass
class Discovery:
    """What :func:`discover` learnt of a server: ``tools`` (JSON), ``has_resources``,
    ``instructions``, or ``error`` (the text of :class:`McpServerError`)."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    has_resources: bool = False
    instructions: str | None = None
    error: str | None = None


async def discover(servers: list[McpServer], cwd: str) -> dict[str, Discovery]:
    """Start each server (in parallel), list its tools, stop it."""
    found: dict[str, Discovery] = {}

    async def one(server: McpServer) -> None:
        connection = ServerConnection(server, cwd)
        try:
            await connection.session()
            found[server.name] = Discovery(
                connection.tools, connection.has_resources, connection.instructions
            )
        except McpServerError as exc:
            found[server.name] = Discovery(error=str(exc))
        finally:
            await connection.close()

    async with trio.open_nursery() as nursery:
        for server in servers:
            nursery.start_soon(one, server)
    return found


__all__ = ["Discovery", "McpServerError", "ServerConnection", "discover"]
