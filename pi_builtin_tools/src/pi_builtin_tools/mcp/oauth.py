"""OAuth for the HTTP MCP servers pi connects to (``[mcp.servers.X] auth = "oauth"``).

The flow is the ``mcp`` SDK's (:class:`mcp.client.auth.OAuthClientProvider`): protected
resource metadata, authorization server metadata, dynamic client registration (or a client ID
metadata document), PKCE, scopes, refresh. pi gives it three things:

* **Where tokens live** (:class:`FileTokenStorage`): ``mcp-oauth/NAME.json`` in the user's state
  directory (``$XDG_STATE_HOME/pi``, ``~/.local/state/pi``), the directory ``0700`` and the file
  ``0600``, written atomically; never a session file or a log. ``pi mcp logout NAME`` removes it.
* **The person's browser**: the authorization URL is printed on stderr (``pi: MCP server "X"
  needs your authorization: open URL``), or given as the last argument to the command
  ``PI_MCP_OAUTH_OPEN`` names (split like a shell would, e.g. ``xdg-open``, or ``curl -sL -o
  /dev/null`` against an authorization server that approves without a person).
* **The redirect**: a listener on ``127.0.0.1`` (a free port, bound before the client
  registers, so its ``redirect_uri`` is ``http://127.0.0.1:PORT/callback``) that takes the one
  request the browser is sent back with and answers it with a line saying it can be closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import urllib.parse
from typing import Any

import trio

from pi_builtin_tools.mcp.state import user_state_dir, write_private

CALLBACK_PATH = "/callback"
CALLBACK_TIMEOUT_SECONDS = 300.0
"""How long pi waits for the browser to come back with the authorization code."""


def token_file(server_name: str) -> str:
    """Where the tokens of the server ``server_name`` are kept."""
    folder = os.path.join(user_state_dir(), "mcp-oauth")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    return os.path.join(folder, f"{server_name}.json")


class FileTokenStorage:
    """The SDK's ``TokenStorage`` on :func:`token_file`: ``{"tokens": ..., "client_info": ...}``."""

    def __init__(self, server_name: str) -> None:
        self.path = token_file(server_name)

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _store(self, key: str, value: Any) -> None:
        data = self._load()
        data[key] = value.model_dump(mode="json", exclude_none=True)
        write_private(self.path, json.dumps(data))

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self._load().get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: Any) -> None:
        self._store("tokens", tokens)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        info = self._load().get("client_info")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: Any) -> None:
        self._store("client_info", client_info)


class LoopbackCallback:
    """The redirect's listener: :meth:`bind` picks the port; :meth:`__call__` (the SDK's
    ``callback_handler``) waits for the browser's request and returns its code and state."""

    def __init__(self) -> None:
        self._socket: trio.socket.SocketType | None = None
        self.redirect_uri = ""
        self.openers: list[trio.Process] = []
        """The ``PI_MCP_OAUTH_OPEN`` commands started, reaped by :meth:`close`."""

    async def bind(self) -> str:
        sock = trio.socket.socket()
        await sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        self._socket = sock
        self.redirect_uri = f"http://127.0.0.1:{sock.getsockname()[1]}{CALLBACK_PATH}"
        return self.redirect_uri

    async def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        for process in self.openers:
            with trio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        self.openers.clear()

    async def __call__(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._socket is not None
        with trio.fail_after(CALLBACK_TIMEOUT_SECONDS):
            while True:
                conn, _ = await self._socket.accept()
                stream = trio.SocketStream(conn)
                try:
                    request = await _read_head(stream)
                    target = request.split(b" ")[1].decode("latin-1") if b" " in request else ""
                    parsed = urllib.parse.urlsplit(target)
                    query = dict(urllib.parse.parse_qsl(parsed.query))
                    if parsed.path != CALLBACK_PATH or (
                        "code" not in query and "error" not in query
                    ):
                        await _answer(stream, 404, "not the authorization callback")
                        continue
                    if "error" in query:
                        await _answer(stream, 400, f"authorization failed: {query['error']}")
                        raise RuntimeError(
                            f"the authorization server answered {query['error']}: "
                            + query.get("error_description", "")
                        )
                    await _answer(stream, 200, "pi is authorized; you can close this page.")
                    return AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                finally:
                    await stream.aclose()


async def _read_head(stream: trio.SocketStream) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0]


async def _answer(stream: trio.SocketStream, status: int, text: str) -> None:
    body = (text + "\n").encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    with contextlib.suppress(trio.BrokenResourceError):
        await stream.send_all(head.encode() + b"Connection: close\r\n\r\n" + body)


def redirect_handler(server_name: str, callback: LoopbackCallback, stderr: Any = None) -> Any:
    """The SDK's ``redirect_handler``: start ``PI_MCP_OAUTH_OPEN URL`` (not waited for here:
    the browser, or curl, comes back to ``callback``, which only listens once this returns), or
    print the URL."""

    async def open_url(url: str) -> None:
        command = os.environ.get("PI_MCP_OAUTH_OPEN")
        if command:
            # stdout may carry pi's own output (pi call --json): the command's goes nowhere
            process = await trio.lowlevel.open_process(
                [*shlex.split(command), url], stdout=subprocess.DEVNULL
            )
            callback.openers.append(process)
            return
        out = stderr if stderr is not None else sys.stderr
        print(
            f'pi: MCP server "{server_name}" needs your authorization: open {url}',
            file=out,
            flush=True,
        )

    return open_url


@contextlib.asynccontextmanager
async def oauth_provider(server_name: str, url: str, stderr: Any = None) -> Any:
    """An ``httpx`` auth running the SDK's OAuth flow for the server ``server_name`` at
    ``url`` (see the module doc), with its redirect listener open for the body."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    callback = LoopbackCallback()
    redirect_uri = await callback.bind()
    try:
        yield OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="pi",
                redirect_uris=[redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=FileTokenStorage(server_name),
            redirect_handler=redirect_handler(server_name, callback, stderr),
            callback_handler=callback,
        )
    finally:
        with trio.CancelScope(shield=True):
            await callback.close()


def logout(server_name: str) -> bool:
    """Forget the tokens of ``server_name``; whether there were any."""
    try:
        os.unlink(token_file(server_name))
    except FileNotFoundError:
        return False
    return True


__all__ = ["FileTokenStorage", "LoopbackCallback", "logout", "oauth_provider"]
