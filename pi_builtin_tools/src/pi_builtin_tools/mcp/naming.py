"""Names and exposure of MCP tools as pi registers them, exactly as Pi 1.6 does (``pi-mcp``
``naming.js``, ``core/mcp-servers.js``).

API:

* :func:`mcp_tool_name` ``(server, tool, is_taken)``: ``mcp__<server>__<tool>``, every character
  outside ``[A-Za-z0-9_]`` made ``_``; a name over 64 characters, or one ``is_taken`` reports
  used, is cut to 55 characters + ``_`` + the first 8 hex digits of sha256(``server\\0tool``).
* :func:`assign_tool_names` ``(server, tools, owners)``: the names of one server's tools, Pi's way
  (every tool whose plain name collides with another's gets the hash suffix).
* :func:`mcp_namespace` ``(server)``: ``mcp__<server with - made _>``.
* :func:`configured_exposure` ``(exposure, tool_exposure, tool)``: the MCP exposure of one tool
  (exact ``tool_exposure`` names beat ``*`` patterns, the first matching pattern wins, else the
  server's ``exposure``, default ``codemode``).
* :func:`to_tool_exposure` ``(mcp_exposure)``: pi's tool exposure (``codemode`` → ``deferred``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping

from pi_core import ToolExposure

MAX_TOOL_NAME_LENGTH = 64
"""Provider tool names are at most 64 characters of ``[A-Za-z0-9_-]``."""

MCP_EXPOSURES = ("codemode", "deferred", "direct", "hidden")
"""The exposures an MCP server or tool may be configured with (``codemode`` is the default)."""

EXPOSURE_ALIASES = {"codemode-deferred": "codemode"}
"""Older exposure names, accepted in configs."""

_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_]")


def mcp_tool_name(server: str, tool: str, is_taken: Callable[[str], bool] = lambda _: False) -> str:
    """Pi's ``createMcpToolName``: ``mcp__<server>__<tool>`` sanitised, shortened with a hash
    suffix when longer than 64 characters or taken."""
    name = _NOT_NAME_CHAR.sub("_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_TOOL_NAME_LENGTH and not is_taken(name):
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME_LENGTH - len(digest) - 1]}_{digest}"


def assign_tool_names(server: str, tools: Iterable[str], owners: dict[str, str]) -> dict[str, str]:
    """The pi names of ``server``'s ``tools`` (MCP names), as Pi's ``registerTools`` gives them:
    a tool whose plain name is also another tool's plain name (``a-b`` and ``a_b``), or is used
    by a tool of another server (``owners``: pi name → ``server\\0tool``, updated here), gets the
    hash suffix, whatever the order of the list. Returns MCP name → pi name."""
    unique = list(dict.fromkeys(tools))
    plain = [mcp_tool_name(server, tool) for tool in unique]
    current: set[str] = set()
    result: dict[str, str] = {}
    for tool in unique:
        owner = f"{server}\0{tool}"

        def taken(candidate: str, owner: str = owner) -> bool:
            existing = owners.get(candidate)
            return (
                (existing is not None and existing != owner)
                or candidate in current
                or plain.count(candidate) > 1
            )

        name = mcp_tool_name(server, tool, taken)
        owners[name] = owner
        current.add(name)
        result[tool] = name
    return result


def mcp_namespace(server: str) -> str:
    """The namespace of a server's tools: ``mcp__<server>`` with ``-`` made ``_``."""
    return "mcp__" + server.replace("-", "_")


def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")


def configured_exposure(exposure: str | None, tool_exposure: Mapping[str, str], tool: str) -> str:
    """Pi's ``getMcpToolExposure``: the ``tool_exposure`` entry of ``tool`` (an exact name
    first, then the first ``*`` pattern that matches), else ``exposure``, else ``codemode``."""
    exact = tool_exposure.get(tool)
    if exact is not None:
        return exact
    for pattern, level in tool_exposure.items():
        if "*" in pattern and _pattern(pattern).match(tool):
            return level
    return exposure or "codemode"


def to_tool_exposure(mcp_exposure: str) -> ToolExposure:
    """pi's tool exposure of an MCP exposure: ``codemode`` → ``deferred`` (so the codemode
    description does not list the tools); ``deferred``, ``direct``, ``hidden`` unchanged."""
    if mcp_exposure == "codemode":
        return "deferred"
    level: ToolExposure = mcp_exposure  # type: ignore[assignment]
    return level


__all__ = [
    "EXPOSURE_ALIASES",
    "MAX_TOOL_NAME_LENGTH",
    "MCP_EXPOSURES",
    "assign_tool_names",
    "configured_exposure",
    "mcp_namespace",
    "mcp_tool_name",
    "to_tool_exposure",
]
