"""``pi mcp serve``: the session's tools as an MCP server, every ``tools/call`` a pi tool call.

API (used by :mod:`pi_builtin_tools.mcp.commands`): :func:`configure_serve` adds the arguments of
``pi mcp serve`` to its parser; :func:`run_serve` runs the server and returns the exit status.

::

    pi mcp serve [--cwd DIR] [--tools a,b] [--audit FILE]
                 [--http [HOST:]PORT] [--token-env VAR | --no-auth] [--max-sessions N]
                 [--ask-timeout SECONDS]

* **Sessions.** One pi session per MCP session, built as ``pi call`` builds its own (the
  plugins minus ``--no-plugin``, plus ``-p``; the config; host ``"mcp"``): over stdio the
  process's, over streamable HTTP one per ``Mcp-Session-Id`` (a request of the 2026-07-28
  protocol, which has no session, gets a session of its own). ``pi_session_start`` runs
  before its first call, ``pi_session_end`` when the MCP session ends (end of input, ``DELETE``,
  idle timeout, shutdown). ``--audit FILE`` is every session's audit log.
* **Tools.** ``tools/list`` offers the session's *callable* tools (exposure ``direct`` and
  active, ``codemode``, ``deferred``), or exactly those ``--tools a,b`` names (any registered
  tool that is not ``hidden``: ``--tools codemode`` offers codemode as the one tool): name,
  description, ``inputSchema`` = the tool's parameters, ``outputSchema`` when the tool declares
  an object schema.
* **Calls.** ``tools/call`` runs :func:`pi_core.run_tool_call` on the offered tools:
  ``prepare_arguments``, validation, ``pi_before_tool_call``, ``execute`` on the session's
  backends, ``pi_after_tool_call``, the audit log. Text and image blocks become MCP content,
  a JSON object in ``structured_content`` becomes ``structuredContent``, ``isError`` is the
  pipeline's (an unknown tool, invalid arguments and a policy's block are error results with
  pi's text). With a ``progressToken``, the tool's updates (bash's output so far) become
  ``notifications/progress`` whose ``message`` is the update's text. A policy's ask goes to
  the client as ``elicitation/create`` when it declared form elicitation
  (:meth:`ServedSession.approve`; ``--ask-timeout SECONDS``); otherwise the call is denied as
  in any session without an approver. ``notifications/cancelled``
  aborts the call through its :class:`pi_core.Abort` (bash kills its process group); the
  aborted call still goes through ``pi_after_tool_call`` and the audit log. Calls run
  concurrently (the mutation queue orders edits of one file); ``[pi] tool_execution =
  "sequential"`` and ``max_parallel_tools`` limit them.
* **Transports.** stdio by default: the protocol is read from the standard input ``pi``
  started with and written to its standard output, which carries nothing else (while serving,
  file descriptor 1 points at stderr, so a stray ``print`` cannot corrupt the protocol).
  ``--http [HOST:]PORT`` serves streamable HTTP at ``/mcp`` (host default ``127.0.0.1``;
  port 0 picks a free one) with hypercorn on trio, and prints ``pi: MCP server at URL`` on
  stderr. Every request must carry ``Authorization: Bearer TOKEN`` (401 otherwise, compared in
  constant time): TOKEN is the value of ``--token-env VAR``, else a new random token written to
  ``mcp-serve-PORT.token`` in :func:`user_state_dir` (mode 0600, removed at exit; pi prints the
  file's path, never the token). ``--no-auth`` admits anyone, with a warning. One client (peer
  address) keeps at most ``--max-sessions N`` MCP sessions open: opening one more closes its
  oldest idle one (:mod:`pi_builtin_tools.mcp.session_cap`); a client whose connection closes
  before a call's answer cancels that call (:class:`DisconnectCancelsApp`). A header
  ``Mcp-Protocol-Version`` the SDK does not speak gets 400 naming those it does.
* **Exit status.** 0 when the input ends (stdio) or after SIGTERM; 130 after SIGINT; 2 with
  one line on stderr for unusable input (a missing ``--cwd``, an unknown tool in ``--tools``,
  a bad ``--http`` address, a missing token, an audit file pi cannot append to, a config or
  plugin error).
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import ipaddress
import math
import os
import secrets
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from pi_builtin_tools.mcp.outputs import SessionOutputs, fit_result, link_text
from pi_builtin_tools.mcp.session_cap import (
    DEFAULT_SESSIONS_PER_CLIENT,
    DisconnectCancelsApp,
    SessionCapApp,
)
from pi_core import (
    Abort,
    AgentContext,
    AgentTool,
    AgentToolResult,
    ApprovalRequest,
    AssistantMessage,
    AuditLog,
    CommandInvocation,
    ImageContent,
    LoopConfig,
    PiError,
    Session,
    TextContent,
    ToolCall,
    ToolCallOutcome,
    build_session,
    make_plugin_manager,
    nested_calls_context,
    run_tool_call,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600

MCP_PATH = "/mcp"
"""Where ``--http`` serves streamable HTTP."""

DEFAULT_HTTP_HOST = "127.0.0.1"
"""The host of ``--http PORT``."""

SDK_STDIO_ENV = "_PI_MCP_STDIO_SDK"
"""When set (tests), a stdio connection is the SDK's from its first line, not the lean loop's
(:mod:`pi_builtin_tools.mcp.stdio`)."""

SERVER_DESCRIPTION = "pi's tools behind pi's policies, hooks, backends and audit log"

STATE_KEY = "pi_builtin_tools.mcp.session"
"""Where a connection's pi session is kept in the SDK's per-connection ``state``."""

HTTP_GRACE_SECONDS = 2.0
"""How long ``--http`` waits for open requests at shutdown."""

ASK_TIMEOUT_SECONDS = 300.0
"""How long an approval asked through the client (``elicitation/create``) waits for an answer
before the call is denied (``--ask-timeout``)."""

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this call (leave unchecked to deny it)",
            "default": False,
        },
        "for_session": {
            "type": "boolean",
            "title": "For this session",
            "description": "Also approve later calls of this tool that the same policy asks "
            "about, until this MCP session ends",
            "default": False,
        },
    },
    "required": ["approve"],
}
"""The form of an approval asked through the client."""

TOKEN_BYTES = 32
"""The entropy of a generated bearer token (43 URL-safe characters)."""


class ServeError(PiError):
    """``pi mcp serve`` cannot start: ``pi: error: MESSAGE`` and exit status 2."""


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def configure_serve(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``pi mcp serve`` to ``parser``."""
    parser.add_argument("--cwd", metavar="DIR", help="session working directory (default: .)")
    parser.add_argument(
        "--tools",
        metavar="a,b,...",
        help="offer only these tools, in this order (any registered tool that is not hidden; "
        "default: the session's callable tools)",
    )
    parser.add_argument(
        "--audit",
        metavar="FILE",
        help="append every policy decision to FILE as JSON Lines (the audit log)",
    )
    parser.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST default "
        f"{DEFAULT_HTTP_HOST}; PORT 0 picks a free port)",
    )
    parser.add_argument(
        "--ask-timeout",
        metavar="SECONDS",
        dest="ask_timeout",
        type=_positive_seconds,
        default=ASK_TIMEOUT_SECONDS,
        help="how long a call a policy asks a person about waits for the client's answer "
        f"(elicitation) before it is denied (default {ASK_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        "--max-sessions",
        metavar="N",
        dest="max_sessions",
        type=_positive_int,
        default=DEFAULT_SESSIONS_PER_CLIENT,
        help="with --http: the MCP sessions one client (address) may keep open; opening one "
        f"more closes its oldest idle one (default {DEFAULT_SESSIONS_PER_CLIENT})",
    )
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument(
        "--token-env",
        metavar="VAR",
        dest="token_env",
        help="with --http: the bearer token is the value of the environment variable VAR "
        "(default: a new random token, written to a file only you can read)",
    )
    auth.add_argument(
        "--no-auth",
        action="store_true",
        dest="no_auth",
        help="with --http: admit requests without a bearer token (anyone who can reach the "
        "port can run the offered tools as you)",
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


@dataclass(frozen=True)
class HttpAddress:
    """Where ``--http`` listens: ``host`` (as given, without brackets) and ``port``."""

    host: str
    port: int

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can connect (``localhost``, ``127.0.0.0/8``, ``::1``)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def bind(self) -> str:
        """hypercorn's bind string (``[::1]:8080`` for IPv6)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_http_address(text: str) -> HttpAddress:
    """``PORT``, ``HOST:PORT`` or ``[IPV6]:PORT``; anything else is a :class:`ServeError`."""
    host, port_text = DEFAULT_HTTP_HOST, text
    if text.startswith("["):
        inner, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ServeError(f"--http {text}: expected [HOST:]PORT")
        host, port_text = inner, rest[1:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
    if not host:
        raise ServeError(f"--http {text}: the host is empty (leave it out for {DEFAULT_HTTP_HOST})")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ServeError(f"--http {text}: the port must be a number from 0 to 65535")
    return HttpAddress(host, int(port_text))


@dataclass
class ServeOptions:
    """What :func:`run_serve` checked on the command line before serving."""

    cwd: str
    tools: list[str] | None
    audit: str | None
    http: HttpAddress | None
    token: str | None
    ask_timeout: float = ASK_TIMEOUT_SECONDS
    max_sessions: int = DEFAULT_SESSIONS_PER_CLIENT
    token_generated: bool = False
    """Whether ``token`` is a new random one, to be written to :func:`token_file` (else it came
    from ``--token-env``, or there is none: stdio, ``--no-auth``)."""


def _serve_options(args: Any, environ: dict[str, str] | os._Environ[str]) -> ServeOptions:
    cwd = os.getcwd() if args.cwd is None else args.cwd
    if not os.path.isdir(cwd):
        reason = "not a directory" if os.path.exists(cwd) else "no such directory"
        raise ServeError(f"--cwd {args.cwd}: {reason}")
    cwd = os.path.abspath(cwd)
    tools = None
    if args.tools is not None:
        tools = list(dict.fromkeys(n.strip() for n in args.tools.split(",") if n.strip()))
        if not tools:
            raise ServeError("--tools: no tool named (leave the option out to offer all tools)")
    if args.audit is not None:
        _check_audit(args.audit, cwd)
    http = parse_http_address(args.http) if args.http is not None else None
    token = None
    generated = False
    if args.token_env is not None:
        if http is None:
            raise ServeError("--token-env needs --http (stdio has no bearer token)")
        token = environ.get(args.token_env, "")
        if not token:
            raise ServeError(f"--token-env {args.token_env}: the variable is not set or empty")
    if getattr(args, "no_auth", False) and http is None:
        raise ServeError("--no-auth needs --http (stdio has no bearer token)")
    if http is not None and token is None and not args.no_auth:
        token, generated = secrets.token_urlsafe(TOKEN_BYTES), True
    return ServeOptions(
        cwd=cwd,
        tools=tools,
        audit=args.audit,
        http=http,
        token=token,
        ask_timeout=args.ask_timeout,
        max_sessions=args.max_sessions,
        token_generated=generated,
    )


def user_state_dir() -> str:
    """:func:`pi_builtin_tools.mcp.state.user_state_dir`, its failure a :class:`ServeError`."""
    from pi_builtin_tools.mcp.state import user_state_dir as state_dir

    try:
        return state_dir()
    except OSError as e:
        raise ServeError(
            str(e) if isinstance(e, PermissionError) else f"{e.filename}: {e.strerror}"
        ) from None


def token_file(port: int) -> str:
    """Where ``pi mcp serve --http`` on ``port`` keeps its generated bearer token:
    ``mcp-serve-PORT.token`` in :func:`user_state_dir`."""
    return os.path.join(user_state_dir(), f"mcp-serve-{port}.token")


def write_token_file(port: int, token: str) -> str:
    """Write ``token`` to :func:`token_file` (mode ``0600``, replacing an older server's file
    atomically) and return its path."""
    from pi_builtin_tools.mcp.state import write_private

    path = token_file(port)
    write_private(path, token + "\n")
    return path


def _check_audit(path: str, cwd: str) -> None:
    """``--audit FILE`` must be a regular file pi can append to (created if missing)."""
    try:
        AuditLog.check_path(path, cwd)
    except ValueError as e:
        raise ServeError(f"--audit {path}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Tools and results in MCP's terms
# ---------------------------------------------------------------------------------------------


def offered_tools(session: Session, names: list[str] | None) -> list[AgentTool]:
    """The tools a session offers: its callable tools, or exactly ``names`` (registered and
    not ``hidden``, else a :class:`ServeError` naming the registered ones)."""
    tool_set = session.tool_set
    assert tool_set is not None
    if names is None:
        return tool_set.callable_tools()
    chosen: list[AgentTool] = []
    for name in names:
        tool = tool_set.get(name)
        if tool is None:
            known = ", ".join(t.name for t in session.tools) or "none"
            raise ServeError(f"--tools: unknown tool {name!r} (registered tools: {known})")
        if tool_set.exposure(name) == "hidden":
            raise ServeError(f"--tools: tool {name!r} is hidden ([tools.{name}] exposure)")
        chosen.append(tool)
    return chosen


def _is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def mcp_tool(tool: AgentTool, description: str) -> dict[str, Any]:
    """The MCP declaration of ``tool`` (a ``Tool``'s wire JSON): ``name``, ``title`` (its
    label, when it differs from the name), ``description``, ``inputSchema`` (its parameters)
    and ``outputSchema`` (its ``output_schema`` when that is an object schema, the only kind
    MCP allows)."""
    declaration: dict[str, Any] = {"name": tool.name}
    if tool.label and tool.label != tool.name:
        declaration["title"] = tool.label
    declaration["description"] = description
    declaration["inputSchema"] = tool.parameters
    if _is_object_schema(tool.output_schema):
        declaration["outputSchema"] = tool.output_schema
    return declaration


def mcp_result(outcome: ToolCallOutcome) -> dict[str, Any]:
    """A pi tool call's outcome as an MCP ``CallToolResult`` (wire JSON): text and image
    blocks as content, ``structured_content`` as ``structuredContent`` when it is a JSON
    object, ``isError`` as the pipeline decided."""
    content: list[dict[str, Any]] = []
    for block in outcome.result.content or []:
        if isinstance(block, TextContent):
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            content.append({"type": "image", "data": block.data, "mimeType": block.mime_type})
    result: dict[str, Any] = {"content": content}
    structured = outcome.result.structured_content
    if isinstance(structured, dict):
        result["structuredContent"] = structured
    result["isError"] = outcome.is_error
    return result


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


# ---------------------------------------------------------------------------------------------
# One pi session behind one MCP session
# ---------------------------------------------------------------------------------------------


class _LatestUpdate:
    """The newest partial result of a running call (older ones are dropped: bounded)."""

    def __init__(self) -> None:
        self.partial: AgentToolResult | None = None
        self.changed = trio.Event()

    def __call__(self, partial: AgentToolResult) -> None:
        self.partial = partial
        self.changed.set()


class ServedSession:
    """A pi session serving one MCP session: :meth:`run` is its task (``async with
    session:``, the running calls in a nursery); :meth:`call` runs one tool call in it;
    :meth:`close` ends it (running calls are aborted, then ``pi_session_end``)."""

    def __init__(
        self,
        session: Session,
        tools: list[AgentTool],
        limiter: trio.CapacityLimiter,
        ask_timeout: float = ASK_TIMEOUT_SECONDS,
    ):
        self.session = session
        self.tools = tools
        self._ask_timeout = ask_timeout
        self.outputs = SessionOutputs()
        self._askers: dict[str, Any] = {}
        """The SDK's per-request session of each running call, by pi call id: where an
        approval of that call is asked."""
        self._asking = False
        self._loop_config: LoopConfig = session.loop_config()
        self._limiter = limiter
        self._calls: trio.Nursery | None = None
        self._ready = trio.Event()
        self._closing = trio.Event()
        self._ended = trio.Event()
        self._running: set[Abort] = set()

    async def wait_ready(self) -> None:
        """Return once the session has started (or could not)."""
        await self._ready.wait()

    def ready(self) -> bool:
        """Whether the session has started (or could not): :meth:`wait_ready` would return."""
        return self._ready.is_set()

    def declarations(self) -> list[dict[str, Any]]:
        """The offered tools as MCP declarations (wire JSON)."""
        tool_set = self.session.tool_set
        assert tool_set is not None
        return [mcp_tool(t, tool_set.description(t.name)) for t in self.tools]

    async def run(self) -> None:
        """The session's life: start, serve calls until :meth:`close`, end."""
        try:
            async with self.session:
                async with trio.open_nursery() as calls:
                    self._calls = calls
                    self._ready.set()
                    await self._closing.wait()
                    self._calls = None
                    for abort in list(self._running):
                        abort.abort()
        finally:
            self._calls = None
            self._ready.set()
            self._ended.set()

    async def close(self) -> None:
        """End the session (idempotent) and wait until ``pi_session_end`` has run."""
        self._closing.set()
        await self._ended.wait()

    def ask_through(self, tool_call_id: str, request_session: Any, request_id: Any) -> None:
        """Let approvals of the call ``tool_call_id`` (and of its nested calls) be asked through
        ``request_session`` (the SDK's per-request session) when its client declared form
        elicitation and the request can carry a server request; the session's approver then
        asks the client (:meth:`approve`). Otherwise nothing changes: the session's own approver
        (a plugin's, or none: the call is denied with the reason) answers."""
        if not _can_elicit(request_session):
            return
        self._askers[tool_call_id] = (request_session, request_id)
        if not self._asking:
            self._asking = True
            self.session.set_approver(self.approve)

    async def approve(self, request: ApprovalRequest) -> tuple[str, str]:
        """Ask the client of the call (``elicitation/create``): the message names the tool, its
        arguments in short and the reason; the form is :data:`ASK_SCHEMA`. Accepted with
        ``approve`` allows (``for_session``: ``"always"``); unchecked, declined, cancelled or
        unanswered within the ask timeout denies. Answers ``(answer, who answered)``."""
        asker = self._askers.get(request.tool_call_id)
        if asker is None and request.parent_tool_call_id is not None:
            asker = self._askers.get(request.parent_tool_call_id)
        if asker is None:
            raise RuntimeError("the MCP request of this call has ended")
        request_session, request_id = asker
        client = _client_name(request_session)
        message = (
            f"pi asks whether this call may run:\n{request.describe()}\n"
            f"Reason: {request.reason} ({request.source})"
        )
        with trio.move_on_after(self._ask_timeout):
            answer = await request_session.elicit_form(
                message, ASK_SCHEMA, related_request_id=request_id
            )
            by = f"{client} (elicitation: {answer.action})"
            content = answer.content or {}
            if answer.action != "accept" or content.get("approve") is not True:
                return "deny", by
            return ("always" if content.get("for_session") is True else "allow"), by
        return "deny", f"{client} (no answer in {self._ask_timeout:g} s)"

    async def _run(
        self, tool_call: ToolCall, abort: Abort, updates: _LatestUpdate | None
    ) -> ToolCallOutcome:
        """One call through the pipeline, aborted by ``abort`` (also while it waits for a free
        call slot: it then runs aborted, as any call aborted before it starts)."""
        acquired = False
        try:  # a free token: no loop turn and no cancel scope for it (a cost per message)
            self._limiter.acquire_nowait()
            acquired = True
        except trio.WouldBlock:
            with abort.linked_scope():
                await self._limiter.acquire()
                acquired = True
        try:
            # the message hooks and nested calls see as the one that asked for the call
            message = AssistantMessage(content=[tool_call], stop_reason="toolUse")
            context = AgentContext(messages=[message], tools=self.tools)
            return await run_tool_call(
                tool_call,
                context,
                self._loop_config,
                assistant_message=message,
                abort=abort,
                on_update=updates,
                tool_context=nested_calls_context(tool_call, context, self._loop_config, abort),
            )
        finally:
            if acquired:
                self._limiter.release()

    def _answer(self, outcome: ToolCallOutcome | None) -> dict[str, Any]:
        if outcome is None:
            return _error_result("Operation aborted")
        return self._with_output_link(outcome, mcp_result(outcome))

    async def _past_end(self) -> dict[str, Any] | None:
        """Once the session has started (no loop turn when it has: a cost per message):
        ``None``, or the result a call made after the session ended gets."""
        if not self._ready.is_set():
            await self._ready.wait()
        if self._calls is None:
            return _error_result("the pi session of this MCP session has ended")
        return None

    async def call(
        self,
        tool_call: ToolCall,
        report_progress: Callable[[float, str], Awaitable[None]] | None,
    ) -> dict[str, Any]:
        """Run ``tool_call`` through the pipeline and return its MCP result (wire JSON). The
        call runs in
        the session's nursery: when this caller is cancelled (``notifications/cancelled``,
        the connection closing), the call is aborted and still finalised there."""
        ended = await self._past_end()
        if ended is not None:
            return ended
        abort = Abort()
        updates = _LatestUpdate() if report_progress is not None else None
        outcomes: list[ToolCallOutcome] = []
        done = trio.Event()

        async def run_call() -> None:
            try:
                outcomes.append(await self._run(tool_call, abort, updates))
            finally:
                self._running.discard(abort)
                done.set()

        assert self._calls is not None  # not past the end (no checkpoint since)
        self._running.add(abort)
        self._calls.start_soon(run_call)
        try:
            if updates is None or report_progress is None:
                await done.wait()  # no progress to forward: no nursery (a cost per message)
            else:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_forward_progress, updates, report_progress)
                    await done.wait()
                    nursery.cancel_scope.cancel()
        finally:
            self._askers.pop(tool_call.id, None)
            if not done.is_set():
                abort.abort()
        return self._answer(outcomes[0] if outcomes else None)

    async def call_here(self, tool_call: ToolCall, abort: Abort) -> dict[str, Any]:
        """:meth:`call` with no progress to report, run in the caller's task (no task of its
        own, no wake-up: a cost per message of the lean stdio loop), shielded: the caller stops
        it only with ``abort``, and it is finalised before this returns. The caller's task
        must outlive the call as the session's nursery would (the lean loop's calls end
        before the session does)."""
        ended = await self._past_end()
        if ended is not None:
            return ended
        self._running.add(abort)
        try:
            with trio.CancelScope(shield=True):
                outcome: ToolCallOutcome | None = await self._run(tool_call, abort, None)
        finally:
            self._running.discard(abort)
        return self._answer(outcome)

    def _with_output_link(self, outcome: ToolCallOutcome, result: dict[str, Any]) -> dict[str, Any]:
        """Serve the call's full-output file (``details["fullOutputPath"]``) as a resource of
        this session: a ``resource_link`` block, and a line naming it in the text; then keep
        the message under the clients' limits (:func:`fit_result`)."""
        details = outcome.result.details
        path = details.get("fullOutputPath") if isinstance(details, dict) else None
        link = self.outputs.add(path) if isinstance(path, str) else None
        if link is None:
            return fit_result(result, None)
        content: list[dict[str, Any]] = list(result["content"])
        texts = [i for i, block in enumerate(content) if block["type"] == "text"]
        line = link_text(link)
        if texts:
            last = content[texts[-1]]
            content[texts[-1]] = {"type": "text", "text": f"{last['text']}\n\n{line}"}
        else:
            content.append({"type": "text", "text": line})
        content.append(link)
        return fit_result({**result, "content": content}, str(link["uri"]))


def _can_elicit(request_session: Any) -> bool:
    """Whether the client of ``request_session`` declared form elicitation (an empty
    ``elicitation`` capability means form) and this request can carry a server request."""
    capabilities = request_session.client_capabilities
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None or not request_session.can_send_request:
        return False
    return elicitation.form is not None or elicitation.url is None


def _client_name(request_session: Any) -> str:
    """``MCP client NAME VERSION`` from the client's ``clientInfo`` (``MCP client`` without)."""
    params = request_session.client_params
    info = getattr(params, "client_info", None)
    if info is None:
        return "MCP client"
    return f"MCP client {info.name} {info.version}".rstrip()


async def _forward_progress(
    updates: _LatestUpdate, report: Callable[[float, str], Awaitable[None]]
) -> None:
    """Send each new non-empty update text as a progress notification (1, 2, 3...)."""
    sent = 0
    last = ""
    while True:
        await updates.changed.wait()
        updates.changed = trio.Event()
        partial = updates.partial
        text = partial.text if partial is not None else ""
        if not text or text == last:
            continue
        last = text
        sent += 1
        try:
            await report(sent, text)
        except Exception:  # the client went away: the call goes on
            return


class SessionRegistry:
    """The pi sessions of one server, each a task in ``nursery``: one ``shared`` session for
    every request (stdio), or one per MCP connection, opened on its first request and closed
    with the connection (``connection.exit_stack``)."""

    def __init__(
        self,
        nursery: trio.Nursery,
        new_session: Callable[[], ServedSession],
        shared: ServedSession | None = None,
    ) -> None:
        self._nursery = nursery
        self._new_session = new_session
        self._shared = shared
        self._open: set[ServedSession] = set()

    def for_request(self, ctx: Any) -> ServedSession:
        """The pi session of the MCP session ``ctx`` (a request context) belongs to."""
        if self._shared is not None:
            return self._shared
        connection = _connection_of(ctx)
        served = connection.state.get(STATE_KEY)
        if served is None:
            try:
                served = self._new_session()
            except Exception as exc:
                from mcp.shared.exceptions import MCPError

                raise MCPError(
                    code=INTERNAL_ERROR,
                    message=f"pi could not set up a session: {type(exc).__name__}: {exc}",
                ) from exc
            connection.state[STATE_KEY] = served
            self._open.add(served)
            self._nursery.start_soon(self._run, served)
            connection.exit_stack.push_async_callback(served.close)
        return served

    async def _run(self, served: ServedSession) -> None:
        try:
            await served.run()
        finally:
            self._open.discard(served)

    async def aclose(self) -> None:
        """Close every open session (each ends with ``pi_session_end``)."""
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for served in list(self._open):
                    nursery.start_soon(served.close)


def _connection_of(ctx: Any) -> Any:
    """The SDK's per-connection object of a request context (its ``state`` and
    ``exit_stack`` are public; the context reaches it through its session until the SDK's
    ``Context.connection`` rework lands)."""
    connection = getattr(ctx.session, "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack"):
        from mcp.shared.exceptions import MCPError

        raise MCPError(code=INTERNAL_ERROR, message="no MCP connection for this request")
    return connection


def _pi_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pi-builtin-tools")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


def initialize_result() -> dict[str, Any]:
    """What the SDK answers ``initialize`` with for :func:`build_server`'s server, less the
    ``protocolVersion`` (wire JSON; the lean stdio loop's answer, a test holds them equal)."""
    return {
        "capabilities": {
            "resources": {"subscribe": False, "listChanged": False},
            "tools": {"listChanged": False},
        },
        "serverInfo": {
            "name": "pi",
            "title": "pi",
            "description": SERVER_DESCRIPTION,
            "version": _pi_version(),
        },
    }


def build_server(
    registry_context: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
    input_schemas: dict[str, Any],
) -> Server[Any]:
    """The MCP server: ``tools/list`` and ``tools/call`` on the request's pi session;
    ``registry_context`` is its lifespan (yielding the :class:`SessionRegistry`);
    ``input_schemas`` the offered tools' parameters by name (what the SDK checks a 2026-07-28
    request's ``Mcp-Param-*`` headers against, without opening a session for a listing)."""
    from mcp.server.lowlevel import Server

    from mcp import types

    # The session builds declarations and results as wire JSON (the lean stdio loop sends
    # them as they are); the SDK's handlers return its types, whose defaults (a 2026-07-28
    # result's ``resultType``) its per-version sieve expects.
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        served = ctx.lifespan_context.for_request(ctx)
        await served.wait_ready()
        return types.ListToolsResult.model_validate({"tools": served.declarations()})

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        served = ctx.lifespan_context.for_request(ctx)
        arguments: Any = {} if params.arguments is None else params.arguments
        tool_call = ToolCall(id=f"mcp-{ctx.request_id}", name=params.name, arguments=arguments)
        served.ask_through(tool_call.id, ctx.session, ctx.request_id)
        meta = ctx.meta or {}
        report = None
        if meta.get("progress_token", meta.get("progressToken")) is not None:

            async def report(progress: float, message: str) -> None:
                await ctx.session.report_progress(progress, None, message)

        return types.CallToolResult.model_validate(await served.call(tool_call, report))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        served = ctx.lifespan_context.for_request(ctx)
        return types.ListResourcesResult(resources=served.outputs.resources())

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        served = ctx.lifespan_context.for_request(ctx)
        return served.outputs.read(str(params.uri))

    return Server(
        "pi",
        version=_pi_version(),
        title="pi",
        description=SERVER_DESCRIPTION,
        lifespan=lambda _server: registry_context(),
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


# ---------------------------------------------------------------------------------------------
# Running the server
# ---------------------------------------------------------------------------------------------


def run_serve(invocation: CommandInvocation) -> int:
    """``pi mcp serve``: check the command line, build a first session (a bad config, plugin
    or ``--tools`` fails here, before any client connects), then serve until the input ends or
    a signal arrives. Returns the exit status."""
    options = _serve_options(invocation.args, os.environ)
    args = invocation.args
    pm = make_plugin_manager(
        block=getattr(args, "no_plugin", ()) or (),
        plugins=getattr(args, "plugins", ()) or (),
        trace_hooks=bool(getattr(args, "trace_hooks", False)),
        trace_stream=invocation.stderr,
    )
    config = invocation.config
    core = config.get("pi", {}) if isinstance(config.get("pi"), dict) else {}
    parallel = core.get("max_parallel_tools")
    limit = 1 if core.get("tool_execution") == "sequential" else (parallel or math.inf)

    def new_session(audit: str | None = options.audit) -> Session:
        try:
            return build_session(pm, options.cwd, config, host="mcp", audit=audit)
        except PiError:
            raise
        except Exception as e:  # a plugin's hook raised while setting the session up
            raise ServeError(
                f"a plugin failed while setting up tools: {type(e).__name__}: {e}"
            ) from e

    probe = new_session(audit=None)  # never started: nothing to release
    # --tools names registered, visible tools; every session offers the same ones
    input_schemas = {t.name: t.parameters for t in offered_tools(probe, options.tools)}
    limiter_box: list[trio.CapacityLimiter] = []

    def served_session() -> ServedSession:
        session = new_session()
        tools = offered_tools(session, options.tools)
        return ServedSession(session, tools, limiter_box[0], options.ask_timeout)

    if options.http is not None:
        return _run_http(invocation, options, served_session, limit, limiter_box, input_schemas)
    return _run_stdio(invocation, served_session, limit, limiter_box, input_schemas)


def _signal_names() -> tuple[int, ...]:
    return (signal.SIGINT, signal.SIGTERM)


async def _wait_for_signal(received: list[int]) -> None:
    if threading.current_thread() is not threading.main_thread():
        await trio.sleep_forever()
    with trio.open_signal_receiver(*_signal_names()) as signals:
        async for signum in signals:
            received.append(signum)
            return


def _exit_status(received: list[int]) -> int:
    return 130 if received and received[0] == signal.SIGINT else 0


# -- stdio ------------------------------------------------------------------------------------


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


@contextlib.contextmanager
def _protocol_fds(invocation: CommandInvocation) -> Any:
    """The input and output file descriptors of the protocol (private duplicates). When the
    output is the process's fd 1, fd 1 points at stderr while serving (restored after)."""
    stdin = invocation.stdin if invocation.stdin is not None else sys.stdin
    in_fd = _fileno(stdin)
    if in_fd is None:
        raise ServeError("pi mcp serve: the standard input has no file descriptor")
    reader_fd = os.dup(in_fd)
    out_fd = _fileno(invocation.stdout)
    writer_fd: int | None = None
    saved_fd: int | None = None
    try:
        if out_fd == 1:
            with contextlib.suppress(OSError):
                sys.stdout.flush()
            writer_fd = os.dup(1)
            saved_fd = os.dup(1)
            try:
                os.dup2(2, 1)  # stray output goes to stderr, never into the protocol
            except OSError:
                os.close(saved_fd)
                saved_fd = None
        yield reader_fd, writer_fd
    finally:
        if saved_fd is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            with contextlib.suppress(OSError):
                os.dup2(saved_fd, 1)
            os.close(saved_fd)


def _run_stdio(
    invocation: CommandInvocation,
    served_session: Callable[[], ServedSession],
    limit: float,
    limiter_box: list[trio.CapacityLimiter],
    input_schemas: dict[str, Any],
) -> int:
    from pi_builtin_tools.mcp.stdio import FdWriter, LineReader, TextWriter, serve_lines

    received: list[int] = []

    async def main(reader_fd: int, writer_fd: int | None) -> None:
        limiter_box.append(trio.CapacityLimiter(limit))
        reader = LineReader(reader_fd)
        writer: Any = (
            FdWriter(writer_fd) if writer_fd is not None else TextWriter(invocation.stdout)
        )
        served = served_session()
        serving = trio.CancelScope()
        async with trio.open_nursery() as nursery:

            async def watch_signals() -> None:
                await _wait_for_signal(received)
                if received and received[0] == signal.SIGINT:
                    served.session.outcome = "interrupted"
                serving.cancel()  # stop reading; the session still ends in order

            nursery.start_soon(watch_signals)

            async def with_sdk(lines: AsyncIterator[str], out: Any) -> None:
                from mcp.server.stdio import stdio_server

                @contextlib.asynccontextmanager
                async def lifespan() -> AsyncIterator[SessionRegistry]:
                    yield SessionRegistry(nursery, served_session, shared=served)

                server = build_server(lifespan, input_schemas)
                async with stdio_server(stdin=lines, stdout=out) as streams:  # type: ignore[arg-type]
                    read, write = streams
                    await server.run(read, write, server.create_initialization_options())

            try:
                async with served_task(nursery, served):
                    with serving:
                        await serve_lines(
                            reader,
                            writer,
                            served,
                            initialize_result(),
                            with_sdk,
                            lean=not os.environ.get(SDK_STDIO_ENV),
                        )
            finally:
                with trio.CancelScope(shield=True):
                    await reader.aclose()
                    await writer.aclose()
            nursery.cancel_scope.cancel()

    with _protocol_fds(invocation) as (reader_fd, writer_fd):
        trio.run(main, reader_fd, writer_fd)
    return _exit_status(received)


@contextlib.asynccontextmanager
async def served_task(nursery: trio.Nursery, served: ServedSession) -> AsyncIterator[None]:
    """Run ``served`` in ``nursery`` for the body; close it (``pi_session_end``) after."""
    nursery.start_soon(served.run)
    try:
        yield
    finally:
        with trio.CancelScope(shield=True):
            await served.close()


# -- streamable HTTP --------------------------------------------------------------------------


class BearerTokenApp:
    """An ASGI wrapper admitting only HTTP requests with ``Authorization: Bearer TOKEN``
    (compared in constant time); others get 401 with ``WWW-Authenticate: Bearer`` and an
    ``error_description`` saying whether the token is missing or wrong."""

    MISSING = (
        "this server requires a bearer token: send 'Authorization: Bearer TOKEN' (pi mcp serve "
        "printed the file that holds TOKEN, or it is the value of --token-env VAR)"
    )
    WRONG = "the bearer token is wrong (the server's token is new each time it starts)"

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode("utf-8")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            problem = self._problem(scope)
            if problem is not None:
                from starlette.responses import JSONResponse

                response = JSONResponse(
                    {"error": "invalid_token", "error_description": problem},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _problem(self, scope: Any) -> str | None:
        values = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if not values:
            return self.MISSING
        if len(values) != 1:
            return "send one Authorization header, not several"
        scheme, _, credentials = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return self.MISSING
        if not hmac.compare_digest(credentials.strip(), self._token):
            return self.WRONG
        return None


class ProtocolVersionApp:
    """An ASGI wrapper answering a request whose ``Mcp-Protocol-Version`` header names a
    version the SDK does not speak with 400 and a JSON-RPC error listing the versions it does
    (the SDK alone would take it for a request of the newest protocol and complain about its
    ``_meta``)."""

    def __init__(self, app: Any) -> None:
        from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

        self.app = app
        self.supported = tuple(SUPPORTED_PROTOCOL_VERSIONS)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers", [])
            versions = [v for k, v in headers if k.lower() == b"mcp-protocol-version"]
            version = versions[0].decode("latin-1") if versions else None
            if version is not None and version not in self.supported:
                from starlette.responses import JSONResponse

                message = (
                    f"unsupported Mcp-Protocol-Version {version!r}: this server speaks "
                    + ", ".join(self.supported)
                )
                error = {"code": INVALID_REQUEST, "message": message}
                body = {"jsonrpc": "2.0", "id": None, "error": error}
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _run_http(
    invocation: CommandInvocation,
    options: ServeOptions,
    served_session: Callable[[], ServedSession],
    limit: float,
    limiter_box: list[trio.CapacityLimiter],
    input_schemas: dict[str, Any],
) -> int:
    try:
        from hypercorn.config import Config
        from hypercorn.trio import serve
    except ImportError:  # pragma: no cover - a dependency of pi-builtin-tools
        raise ServeError("--http needs the hypercorn package (pip install hypercorn)") from None

    address = options.http
    assert address is not None
    received: list[int] = []
    started: list[bool] = []

    async def main() -> None:
        limiter_box.append(trio.CapacityLimiter(limit))

        @contextlib.asynccontextmanager
        async def lifespan() -> AsyncIterator[SessionRegistry]:
            async with trio.open_nursery() as nursery:
                registry = SessionRegistry(nursery, served_session)
                try:
                    yield registry
                finally:
                    await registry.aclose()

        server = build_server(lifespan, input_schemas)
        app: Any = server.streamable_http_app(streamable_http_path=MCP_PATH, host=address.host)
        app = DisconnectCancelsApp(app, MCP_PATH)
        app = ProtocolVersionApp(SessionCapApp(app, options.max_sessions, MCP_PATH))
        if options.token is not None:
            app = BearerTokenApp(app, options.token)
        config = Config()
        config.bind = [address.bind]
        config.loglevel = "WARNING"
        config.accesslog = None
        config.graceful_timeout = HTTP_GRACE_SECONDS
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                partial(serve, app, config, shutdown_trigger=partial(_wait_for_signal, received))
            )
            started.append(True)
            if options.token_generated and options.token is not None:
                port = int(binds[0].rpartition(":")[2].rstrip("/"))
                token_path.append(write_token_file(port, options.token))
                print(
                    f"pi: the bearer token is in {token_path[0]} "
                    "(send 'Authorization: Bearer TOKEN')",
                    file=invocation.stderr,
                    flush=True,
                )
            elif options.token is None:
                print(
                    f"pi: warning: --no-auth: anyone who can reach {binds[0]}{MCP_PATH} can run "
                    "the offered tools as this user",
                    file=invocation.stderr,
                    flush=True,
                )
            for bind in binds:
                print(f"pi: MCP server at {bind}{MCP_PATH}", file=invocation.stderr, flush=True)

    token_path: list[str] = []
    if options.token_generated:
        user_state_dir()  # an unusable state directory fails before the server starts
    try:
        trio.run(main)
    except BaseExceptionGroup as group:
        leaves = _leaves(group)
        errors = [e for e in leaves if isinstance(e, ServeError)]
        if errors:
            raise errors[0] from None
        unbound = [e for e in leaves if isinstance(e, OSError)]
        if unbound and not started:  # the address cannot be listened on
            raise ServeError(
                f"--http {address.bind}: {unbound[0].strerror or unbound[0]}"
            ) from None
        raise
    finally:
        for path in token_path:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return _exit_status(received)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


__all__ = [
    "BearerTokenApp",
    "HttpAddress",
    "ServeError",
    "ServedSession",
    "SessionRegistry",
    "configure_serve",
    "mcp_result",
    "mcp_tool",
    "offered_tools",
    "parse_http_address",
    "run_serve",
]
