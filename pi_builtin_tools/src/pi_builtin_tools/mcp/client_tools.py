"""MCP servers as pi tools, named, described and mapped as Pi 1.6 does (spec
``pi-1.6-delta.md`` §10), and ``pi mcp list``.

Each tool of each enabled server of the config (:mod:`pi_builtin_tools.mcp.mcp_config`) is registered
as ``mcp__<server>__<tool>`` (:mod:`pi_builtin_tools.mcp.naming`) with the label ``<server>/<tool>``,
the server's description of the tool (else its title, else ``MCP tool <tool> from server
<server>``), its input schema, the ``CallToolResult`` output schema, the exposure of the config
(``codemode`` → ``deferred``), the namespace ``mcp__<server>`` and the boolean annotation hints.
Every call runs through pi's pipeline like any tool's (policies, approval, audit, codemode);
``execute`` calls the server (:mod:`pi_builtin_tools.mcp.connections`) and maps the result
(:mod:`pi_builtin_tools.mcp.results`). Servers with resources add ``list_mcp_resources``,
``list_mcp_resource_templates`` and ``read_mcp_resource``.

Tool lists at registration (``pi_register_tools`` is synchronous): a server's tool list comes
from the cache (``$XDG_CACHE_HOME/pi/mcp/<server>-<key>.json``, ``~/.cache`` by default; the key
is a digest of the server's command, arguments, env, cwd, URL and headers), else from starting
the server once, listing its tools and stopping it (in a worker thread with its own trio loop,
bounded by the server's ``timeout``). In the session, a server starts on its first call (lazily),
is restarted once after it exits, and stops at session end (``pi_session_end``); when its live
tool list differs from the cache, the cache is rewritten for the next session, and a call to a
tool it no longer offers is ``MCP tool "<server>/<tool>" is no longer available.``. A server that
fails at registration gets no tools (a warning on stderr); ``pi mcp list`` shows why.

API: :func:`register_mcp_tools` ``(register, context)`` (the hookimpl's body),
:func:`start_session` ``(context)`` (activates ``codemode``/``tool_search`` as Pi does),
:func:`end_session` ``(context)``, :class:`McpSessionState` (``context.state["mcp"]``),
:func:`run_list` (``pi mcp list``; its options are in ``commands``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from pi_builtin_tools.mcp.connections import Discovery, McpServerError, ServerConnection, discover
from pi_builtin_tools.mcp.mcp_config import McpServer, McpServers, load_mcp_servers
from pi_builtin_tools.mcp.naming import (
    assign_tool_names,
    configured_exposure,
    mcp_namespace,
    to_tool_exposure,
)
from pi_builtin_tools.mcp.results import (
    READ_MCP_RESOURCE_TOOL,
    convert_call_result,
    input_schema,
    limit_content,
    mcp_result_schema,
    model_content,
)
from pi_core import (
    AgentToolResult,
    CommandInvocation,
    OnUpdate,
    PiError,
    TextContent,
    ToolDefinition,
    ToolNamespace,
    parse_json,
)

STATE_KEY = "mcp"
LIST_MCP_RESOURCES_TOOL = "list_mcp_resources"
LIST_MCP_RESOURCE_TEMPLATES_TOOL = "list_mcp_resource_templates"
ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


# -- the tool-list cache -------------------------------------------------------------------


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/pi/mcp`` (``~/.cache/pi/mcp`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pi", "mcp")


def _cache_path(server: McpServer) -> str:
    return os.path.join(cache_dir(), f"{server.name}-{server.cache_key()}.json")


def read_cache(server: McpServer) -> Discovery | None:
    """The cached tool list of ``server`` (``None``: none, or unreadable)."""
    try:
        with open(_cache_path(server), encoding="utf-8") as file:
            data = parse_json(file.read())
        tools = data["tools"]
        if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
        ):
            return None
        return Discovery(tools, bool(data.get("hasResources")), data.get("instructions"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_cache(server: McpServer, found: Discovery) -> None:
    """Save the tool list of ``server`` (atomically; failures are ignored: the cache is only
    an optimisation)."""
    path = _cache_path(server)
    data = {
        "server": server.name,
        "tools": found.tools,
        "hasResources": found.has_resources,
        "instructions": found.instructions,
    }
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(temp, path)
    except OSError:
        pass


def discover_blocking(servers: list[McpServer], cwd: str) -> dict[str, Discovery]:
    """:func:`~pi_builtin_tools.mcp.connections.discover` from synchronous code, in a worker thread
    with its own trio loop (so it works inside a running trio loop too)."""
    if not servers:
        return {}
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["found"] = trio.run(discover, servers, cwd)
        except BaseException as exc:  # reported below, in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="pi-mcp-discover", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        error = box["error"]
        return {
            s.name: Discovery(error=f'MCP server "{s.name}" failed to connect: {error}')
            for s in servers
        }
    found: dict[str, Discovery] = box["found"]
    return found


# -- per-session state ---------------------------------------------------------------------


@dataclass
class McpSessionState:
    """One session's MCP servers: ``servers`` (the config), ``connections`` (name →
    :class:`~pi_builtin_tools.mcp.connections.ServerConnection`), ``known`` (name → the tool list the
    tools were registered from) and ``resource_tools`` (whether the resource tools are
    registered). Kept in ``context.session.state["mcp"]``."""

    cwd: str
    servers: McpServers
    connections: dict[str, ServerConnection] = field(default_factory=dict)
    known: dict[str, Discovery] = field(default_factory=dict)
    resource_tools: bool = False
    _checked: set[int] = field(default_factory=set)

    def connection(self, name: str) -> ServerConnection:
        """The session's connection to server ``name`` (created, not started, on first use)."""
        connection = self.connections.get(name)
        if connection is None:
            server = self.servers.get(name)
            assert server is not None
            connection = self.connections[name] = ServerConnection(server, self.cwd)
        return connection

    def resource_servers(self) -> list[str]:
        """The enabled, non-hidden servers with resources, sorted by name."""
        names = [
            s.name
            for s in self.servers.servers
            if s.enabled
            and s.exposure != "hidden"
            and (
                self.connections[s.name].has_resources
                if s.name in self.connections and self.connections[s.name].state == "connected"
                else self.known.get(s.name, Discovery()).has_resources
            )
        ]
        return sorted(names)

    def note_live_tools(self, connection: ServerConnection) -> None:
        """After a start: rewrite the cache when the live tool list differs from the known one."""
        attempt = id(connection._attempt)
        if attempt in self._checked or connection.state != "connected":
            return
        self._checked.add(attempt)
        live = Discovery(connection.tools, connection.has_resources, connection.instructions)
        known = self.known.get(connection.name)
        if known is None or known.tools != live.tools or known.has_resources != live.has_resources:
            write_cache(connection.server, live)

    async def close(self) -> None:
        """Stop every server of the session, in parallel."""
        async with trio.open_nursery() as nursery:
            for connection in list(self.connections.values()):
                nursery.start_soon(connection.close)


# -- tool definitions ----------------------------------------------------------------------


@dataclass(eq=False)
class McpToolDefinition(ToolDefinition):
    """A ``ToolDefinition`` of an MCP tool: also ``server``, ``mcp_tool`` (its MCP name) and
    ``annotations`` (the boolean hints ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
    ``openWorldHint`` it declares; ``None`` without any)."""

    server: str = ""
    mcp_tool: str = ""
    annotations: dict[str, bool] | None = None


def _annotations(tool: dict[str, Any]) -> dict[str, bool] | None:
    declared = tool.get("annotations") or {}
    hints = {h: declared[h] for h in ANNOTATION_HINTS if isinstance(declared.get(h), bool)}
    return hints or None


def _description(server: str, tool: dict[str, Any]) -> str:
    title = tool.get("title") or (tool.get("annotations") or {}).get("title")
    text = (tool.get("description") or "").strip()
    return text or title or f"MCP tool {tool['name']} from server {server}"


def mcp_tool_definition(
    state: McpSessionState,
    server: McpServer,
    tool: dict[str, Any],
    name: str,
    namespace: ToolNamespace,
) -> McpToolDefinition:
    """The pi tool of one MCP tool (see the module docstring)."""
    tool_name = str(tool["name"])
    label = f"{server.name}/{tool_name}"

    async def execute(
        tool_call_id: str, params: Any, on_update: OnUpdate | None, ctx: Any
    ) -> AgentToolResult:
        connection = state.connection(server.name)
        await connection.session()
        state.note_live_tools(connection)
        if not any(t.get("name") == tool_name for t in connection.tools):
            raise McpServerError(f'MCP tool "{label}" is no longer available.')

        def progress(text: str) -> None:
            if on_update is not None:
                on_update(
                    AgentToolResult(
                        content=[TextContent(text=text)],
                        details={"server": server.name, "tool": tool_name},
                    )
                )

        result = await connection.call_tool(
            tool_name, params if params is not None else {}, progress
        )
        readable = state.resource_tools and server.name in state.resource_servers()
        return convert_call_result(server.name, tool_name, result, readable)

    exposure = configured_exposure(server.exposure, server.tool_exposure, tool_name)
    return McpToolDefinition(
        name=name,
        label=label,
        description=_description(server.name, tool),
        parameters=input_schema(tool.get("inputSchema")),
        execute=execute,
        output_schema=mcp_result_schema(tool.get("outputSchema")),
        exposure=to_tool_exposure(exposure),
        namespace=namespace,
        server=server.name,
        mcp_tool=tool_name,
        annotations=_annotations(tool),
    )


# -- resource tools (Codex's names, as Pi 1.6) ---------------------------------------------------

_SERVER_FILTER = {
    "type": "string",
    "description": "MCP server name. Omit to list every server with resources.",
}
_CURSOR = {
    "type": "string",
    "description": "Opaque cursor from a previous call with the same server; omit for the first page.",
}
LIST_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"server": _SERVER_FILTER, "cursor": _CURSOR},
    "additionalProperties": False,
}
READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {
            "type": "string",
            "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources.",
        },
        "uri": {
            "type": "string",
            "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources.",
        },
    },
    "required": ["server", "uri"],
    "additionalProperties": False,
}
_OPTIONAL_STRING: dict[str, Any] = {"type": "string"}
_LISTING_ERRORS: dict[str, Any] = {
    "type": "array",
    "description": "Servers that could not be listed",
    "items": {
        "type": "object",
        "properties": {"server": {"type": "string"}, "error": {"type": "string"}},
        "required": ["server", "error"],
    },
}
LIST_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": _OPTIONAL_STRING,
        "resources": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "server": {"type": "string"},
                    "uri": {"type": "string"},
                    "name": {"type": "string"},
                    "title": _OPTIONAL_STRING,
                    "description": _OPTIONAL_STRING,
                    "mimeType": _OPTIONAL_STRING,
                    "size": {"type": "number"},
                },
                "required": ["server", "uri", "name"],
            },
        },
        "nextCursor": _OPTIONAL_STRING,
        "errors": _LISTING_ERRORS,
    },
    "required": ["resources"],
}
LIST_TEMPLATES_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": _OPTIONAL_STRING,
        "resourceTemplates": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "server": {"type": "string"},
                    "uriTemplate": {"type": "string", "description": "RFC 6570 URI template"},
                    "name": {"type": "string"},
                    "title": _OPTIONAL_STRING,
                    "description": _OPTIONAL_STRING,
                    "mimeType": _OPTIONAL_STRING,
                },
                "required": ["server", "uriTemplate", "name"],
            },
        },
        "nextCursor": _OPTIONAL_STRING,
        "errors": _LISTING_ERRORS,
    },
    "required": ["resourceTemplates"],
}
READ_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {"type": "string"},
        "uri": {"type": "string"},
        "contents": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "uri": {"type": "string"},
                            "mimeType": _OPTIONAL_STRING,
                            "text": {"type": "string"},
                        },
                        "required": ["uri", "text"],
                    },
                    {
                        "type": "object",
                        "properties": {
                            "uri": {"type": "string"},
                            "mimeType": _OPTIONAL_STRING,
                            "blob": {"type": "string", "description": "base64"},
                        },
                        "required": ["uri", "blob"],
                    },
                ]
            },
        },
    },
    "required": ["server", "uri", "contents"],
}
LIST_DESCRIPTION = (
    "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to "
    "language models, such as files, database schemas, or application-specific information. Prefer resources "
    "over web search when possible."
)
LIST_TEMPLATES_DESCRIPTION = (
    "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share "
    "data that takes parameters and provides context to language models, such as files, database schemas, or "
    "application-specific information. Prefer resource templates over web search when possible."
)
READ_DESCRIPTION = (
    "Read a specific resource from an MCP server given the server name and resource URI."
)


def _string_argument(params: Any, key: str) -> str | None:
    value = params.get(key) if isinstance(params, dict) else None
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value.strip() or None


def _is_app_resource(item: dict[str, Any]) -> bool:
    uri = str(item.get("uri") or item.get("uriTemplate") or "")
    return uri.startswith("ui://") or bool(
        re.search(r';\s*profile\s*=\s*"?mcp-app"?', str(item.get("mimeType") or ""), re.IGNORECASE)
    )


def _listed(server: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"server": server, **{k: v for k, v in item.items() if k not in ("_meta", "icons")}}


def _json_result(tool: str, server: str | None, payload: Any) -> AgentToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    content, path = limit_content([TextContent(text=text)])
    details: dict[str, Any] = {"server": server or "", "tool": tool}
    if path:
        details["fullOutputPath"] = path
    return AgentToolResult(content=list(content), details=details, structured_content=payload)


def resource_tool_definitions(state: McpSessionState, exposure: str) -> list[ToolDefinition]:
    """``list_mcp_resources``, ``list_mcp_resource_templates``, ``read_mcp_resource`` for the
    session's servers with resources (found at call time)."""

    def find(name: str) -> ServerConnection:
        servers = state.resource_servers()
        if name not in servers:
            available = ", ".join(servers)
            raise ValueError(
                f'MCP server "{name}" has no resources'
                + (f". Servers with resources: {available}" if available else "")
            )
        return state.connection(name)

    async def listing(params: Any, key: str, templates: bool) -> dict[str, Any]:
        server_name = _string_argument(params, "server")
        cursor = _string_argument(params, "cursor")
        if server_name:
            connection = find(server_name)
            page = await connection.resources_page(cursor, templates)
            items = [i for i in page.get(key) or [] if not _is_app_resource(i)]
            out: dict[str, Any] = {
                "server": server_name,
                key: [_listed(server_name, i) for i in items],
            }
            if page.get("nextCursor") is not None:
                out["nextCursor"] = page["nextCursor"]
            return out
        if cursor:
            raise ValueError("cursor can only be used when a server is specified")
        names = state.resource_servers()
        results: dict[str, list[dict[str, Any]] | str] = {}

        async def one(name: str) -> None:
            try:
                results[name] = await state.connection(name).all_resources(templates)
            except Exception as exc:
                results[name] = str(exc)

        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(one, name)
        items_out: list[dict[str, Any]] = []
        errors: list[dict[str, str]] = []
        for name in names:
            got = results[name]
            if isinstance(got, str):
                errors.append({"server": name, "error": got})
            else:
                items_out.extend(_listed(name, i) for i in got if not _is_app_resource(i))
        payload: dict[str, Any] = {key: items_out}
        if errors:
            payload["errors"] = errors
        return payload

    async def list_resources(
        tool_call_id: str, params: Any, on_update: Any, ctx: Any
    ) -> AgentToolResult:
        payload = await listing(params, "resources", False)
        return _json_result(LIST_MCP_RESOURCES_TOOL, _string_argument(params, "server"), payload)

    async def list_templates(
        tool_call_id: str, params: Any, on_update: Any, ctx: Any
    ) -> AgentToolResult:
        payload = await listing(params, "resourceTemplates", True)
        return _json_result(
            LIST_MCP_RESOURCE_TEMPLATES_TOOL, _string_argument(params, "server"), payload
        )

    async def read_resource(
        tool_call_id: str, params: Any, on_update: Any, ctx: Any
    ) -> AgentToolResult:
        server_name = _string_argument(params, "server")
        uri = _string_argument(params, "uri")
        if not server_name:
            raise ValueError("server must be provided")
        if not uri:
            raise ValueError("uri must be provided")
        connection = find(server_name)
        result = await connection.read_resource(uri)
        contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
        blocks: list[dict[str, Any]] = []
        for item in contents:
            if len(contents) > 1:
                blocks.append({"type": "text", "text": f"{item.get('uri')}:"})
            blocks.append({"type": "resource", "resource": item})
        converted = model_content(server_name, blocks)
        content, path = limit_content(converted or [TextContent(text=f"Resource {uri} is empty.")])
        details: dict[str, Any] = {"server": server_name, "tool": READ_MCP_RESOURCE_TOOL}
        if path:
            details["fullOutputPath"] = path
        structured = {
            "server": server_name,
            "uri": uri,
            "contents": [{k: v for k, v in c.items() if k != "_meta"} for c in contents],
        }
        return AgentToolResult(
            content=list(content), details=details, structured_content=structured
        )

    level = to_tool_exposure(exposure)
    return [
        McpToolDefinition(
            name=name,
            label=name,
            description=description,
            parameters=parameters,
            output_schema=output_schema,
            execute=execute,
            annotations={"readOnlyHint": True},
            replay="safe",
            exposure=level,
        )
        for name, description, parameters, output_schema, execute in (
            (
                LIST_MCP_RESOURCES_TOOL,
                LIST_DESCRIPTION,
                LIST_PARAMETERS,
                LIST_OUTPUT_SCHEMA,
                list_resources,
            ),
            (
                LIST_MCP_RESOURCE_TEMPLATES_TOOL,
                LIST_TEMPLATES_DESCRIPTION,
                LIST_PARAMETERS,
                LIST_TEMPLATES_OUTPUT_SCHEMA,
                list_templates,
            ),
            (
                READ_MCP_RESOURCE_TOOL,
                READ_DESCRIPTION,
                READ_PARAMETERS,
                READ_OUTPUT_SCHEMA,
                read_resource,
            ),
        )
    ]


# -- registration and session end ------------------------------------------------------------


def _warn(text: str) -> None:
    sys.stderr.write(f"pi: mcp: {text}\n")
    sys.stderr.flush()


def tool_lists(
    servers: Sequence[McpServer], cwd: str, *, refresh: bool = False
) -> dict[str, Discovery]:
    """The tool list of each server: cached, else discovered (and cached)."""
    found: dict[str, Discovery] = {}
    missing: list[McpServer] = []
    for server in servers:
        cached = None if refresh else read_cache(server)
        if cached is None:
            missing.append(server)
        else:
            found[server.name] = cached
    for name, discovery in discover_blocking(missing, cwd).items():
        found[name] = discovery
        if discovery.error is None:
            write_cache(next(s for s in missing if s.name == name), discovery)
    return found


def register_mcp_tools(register: Callable[[Any], None], context: Any) -> McpSessionState | None:
    """Register the tools of the configured MCP servers (the body of ``pi_register_tools``).
    Raises :class:`~pi_core.ConfigError` for an invalid ``[mcp]`` table."""
    cwd = context.cwd
    servers = load_mcp_servers(context.config, cwd)
    for error in servers.errors:
        _warn(error)
    if not servers.servers:
        return None
    state = McpSessionState(cwd=cwd, servers=servers)
    session = getattr(context, "session", None)
    if session is not None:
        session.state[STATE_KEY] = state
    enabled = [s for s in servers.servers if s.enabled]
    found = tool_lists(enabled, cwd)
    owners: dict[str, str] = {}
    for server in enabled:
        discovery = found.get(
            server.name, Discovery(error=f'MCP server "{server.name}" failed to connect')
        )
        if discovery.error is not None:
            _warn(discovery.error.split("\n", 1)[0] + " (no tools registered; see pi mcp list)")
            continue
        state.known[server.name] = discovery
        namespace = ToolNamespace(
            name=mcp_namespace(server.name),
            aliases=(server.name,),
            description=(server.description or "").strip() or None,
            instructions=discovery.instructions,
        )
        names = assign_tool_names(server.name, [str(t["name"]) for t in discovery.tools], owners)
        seen: set[str] = set()
        for tool in discovery.tools:
            if tool["name"] in seen:
                continue
            seen.add(tool["name"])
            register(mcp_tool_definition(state, server, tool, names[tool["name"]], namespace))
    exposures = {
        s.exposure
        for s in enabled
        if s.name in state.known and state.known[s.name].has_resources and s.exposure != "hidden"
    }
    widest = next((e for e in ("direct", "codemode", "deferred") if e in exposures), None)
    if widest is not None:
        state.resource_tools = True
        for definition in resource_tool_definitions(state, widest):
            register(definition)
    return state


CODEMODE_TOOL = "codemode"
TOOL_SEARCH_TOOL = "tool_search"


def start_session(context: Any) -> list[str]:
    """Activate the tools that reach MCP tools the model is not given directly (the body of
    ``pi_session_start``), as Pi's MCP extension does: ``codemode`` when a server has tools of
    ``codemode`` exposure (unless ``auto_enable_codemode`` is false), ``tool_search`` when one
    has ``deferred`` tools; only when such a tool is registered. Returns the names activated."""
    state = context.state.get(STATE_KEY)
    tools = getattr(context, "tools", None)
    if not isinstance(state, McpSessionState) or tools is None:
        return []
    exposures: set[str] = set()
    for server in state.servers.servers:
        if server.enabled and server.name in state.known:
            exposures.add(server.exposure)
            exposures.update(server.tool_exposure.values())
    wanted = []
    if "codemode" in exposures and state.servers.auto_enable_codemode:
        wanted.append(CODEMODE_TOOL)
    if "deferred" in exposures:
        wanted.append(TOOL_SEARCH_TOOL)
    activate = [n for n in wanted if tools.get(n) is not None and not tools.is_active(n)]
    if activate:
        tools.activate(activate)
    return activate


async def end_session(context: Any) -> None:
    """Stop the session's MCP servers (the body of ``pi_session_end``)."""
    state = context.state.get(STATE_KEY)
    if isinstance(state, McpSessionState):
        await state.close()


# -- pi mcp list ---------------------------------------------------------------------------------


def _report(server: McpServer, found: Discovery | None, owners: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "name": server.name,
        "scope": server.scope,
        "source": server.source,
        "enabled": server.enabled,
        "exposure": server.exposure,
        "transport": server.launch,
        "state": "disabled",
        "tools": [],
    }
    if server.override:
        report["override"] = server.override
    if found is None:
        return report
    if found.error is not None:
        report["state"] = "failed"
        report["error"] = found.error.removeprefix(
            f'MCP server "{server.name}" failed to connect: '
        )
        return report
    report["state"] = "connected"
    names = assign_tool_names(server.name, [str(t["name"]) for t in found.tools], owners)
    report["tools"] = [
        {
            "name": names[str(t["name"])],
            "mcpName": t["name"],
            "exposure": to_tool_exposure(
                configured_exposure(server.exposure, server.tool_exposure, str(t["name"]))
            ),
        }
        for t in found.tools
    ]
    if found.has_resources:
        report["resources"] = True
    return report


def run_list(invocation: CommandInvocation) -> int:
    """``pi mcp list``: start each enabled server, list its tools (refreshing the cache), stop
    it; print each server's state and tools. Exit status 1 when a server failed or a config
    file has an error. A ``--cwd`` that is not a directory is a :class:`PiError` (``pi: error:
    ...``, exit status 2), as for every command."""
    args = invocation.args
    given = getattr(args, "cwd", None)
    if given is not None and not os.path.isdir(given):
        reason = "not a directory" if os.path.exists(given) else "no such directory"
        raise PiError(f"--cwd {given}: {reason}")
    cwd = os.path.abspath(given) if given else os.getcwd()
    servers = load_mcp_servers(invocation.config, cwd)
    enabled = [s for s in servers.servers if s.enabled]
    found = tool_lists(enabled, cwd, refresh=True)
    owners: dict[str, str] = {}
    reports = [
        _report(s, found.get(s.name) if s.enabled else None, owners) for s in servers.servers
    ]
    failed = bool(servers.errors) or any(r["state"] == "failed" for r in reports)
    out = invocation.stdout
    if args.json:
        out.write(
            json.dumps({"servers": reports, "errors": servers.errors}, indent=2, ensure_ascii=False)
            + "\n"
        )
        return 1 if failed else 0
    if not reports and not servers.errors:
        out.write(
            "No MCP servers configured. Add [mcp.servers.NAME] to pi.toml, or servers to "
            f"{os.path.join('~', '.pi', 'agent', 'mcp.json')}.\n"
        )
    for report in reports:
        state = report["state"]
        if state == "connected":
            count = len(report["tools"])
            state = f"connected, {count} tool{'' if count == 1 else 's'}"
        out.write(f"{report['name']}: {state} ({report['exposure']}, {report['scope']})\n")
        out.write(f"  {report['transport']}\n")
        if report.get("override"):
            out.write(f"  project override: {report['override']}\n")
        for tool in report["tools"]:
            out.write(f"  {tool['name']} [{tool['exposure']}]\n")
        if report.get("resources"):
            out.write("  offers resources\n")
        if report.get("error"):
            out.write("  " + report["error"].replace("\n", "\n  ") + "\n")
    for error in servers.errors:
        out.write(f"config error: {error}\n")
    return 1 if failed else 0


__all__ = [
    "McpSessionState",
    "McpToolDefinition",
    "end_session",
    "mcp_tool_definition",
    "register_mcp_tools",
    "resource_tool_definitions",
    "run_list",
    "start_session",
]
