"""The full outputs of one MCP session of ``pi mcp serve``, served as MCP resources.

A tool whose text was cut keeps the complete output in a file (its result's
``details["fullOutputPath"]``: bash, codemode, an MCP server's tool behind pi). That path means
nothing to a client on another machine or in another sandbox, so ``pi mcp serve`` also serves
each such file of the session as a resource: ``pi://output/N/NAME`` (``N`` counts the session's
outputs from 1, ``NAME`` is the file's name). The tool result gets a ``resource_link`` block
for it (with its size), and its text a line naming the link (:func:`link_text`).

``resources/list`` lists the outputs of the caller's own MCP session; ``resources/read`` reads
one, :data:`READ_BYTES` at a time: ``?offset=K`` (and ``&length=L``, at most
:data:`READ_BYTES`) picks a range. A range that is valid UTF-8 (its end moved back to a
character boundary) is text, else a base64 blob; ``_meta`` gives ``offset``, ``length``,
``size`` and, while more remains, the ``next`` range's URI. The outputs expire with the MCP
session (and the files with the bash tool's own retention).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import types

READ_BYTES = 512 * 1024
"""The most one ``resources/read`` returns, so every message stays well under the 1 MiB that
common clients accept."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code of an unknown resource (the MCP specification's)."""

INVALID_PARAMS = -32602
"""JSON-RPC's error code of invalid parameters."""

URI_PREFIX = "pi://output/"


class SessionOutputs:
    """The full-output files of one MCP session, by URI."""

    def __init__(self) -> None:
        self._paths: dict[str, str] = {}

    def add(self, path: str) -> dict[str, Any] | None:
        """Serve ``path`` (a file that exists) and return its ``resource_link`` block (wire
        JSON); ``None`` when it is gone."""
        try:
            size = os.stat(path).st_size
        except OSError:
            return None
        known = [uri for uri, p in self._paths.items() if p == path]
        if known:
            uri = known[0]
        else:
            name = urllib.parse.quote(os.path.basename(path))
            uri = f"{URI_PREFIX}{len(self._paths) + 1}/{name}"
            self._paths[uri] = path
        return {
            "type": "resource_link",
            "name": os.path.basename(path),
            "description": "the full output of a tool call",
            "uri": uri,
            "mimeType": "text/plain",
            "size": size,
        }

    def resources(self) -> list[types.Resource]:
        """The session's outputs whose files still exist."""
        from mcp import types

        listed = []
        for uri, path in self._paths.items():
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            listed.append(
                types.Resource(
                    uri=uri,
                    name=os.path.basename(path),
                    description="the full output of a tool call",
                    mime_type="text/plain",
                    size=size,
                )
            )
        return listed

    def read(self, uri: str) -> types.ReadResourceResult:
        """One range of an output (see the module doc); an unknown URI, a bad range or a file
        that is gone is an :class:`MCPError` saying which."""
        from mcp.shared.exceptions import MCPError

        from mcp import types

        base, _, query = uri.partition("?")
        path = self._paths.get(base)
        if path is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"Resource not found: {base} is not an output of this MCP session "
                "(outputs expire with their session)",
            )
        offset, length = _range(query)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(offset)
                data = f.read(length)
        except OSError as e:
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"Resource not found: {base}: {e.strerror or e}",
            ) from None
        text: str | None = "" if not data else None
        for cut in range(min(4, len(data))):  # a character split by the range's end
            try:
                text = data[: len(data) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            data = data[: len(data) - cut]
            break
        meta: dict[str, Any] = {"offset": offset, "length": len(data), "size": size}
        end = offset + len(data)
        if end < size:
            meta["next"] = f"{base}?offset={end}"
        contents: types.TextResourceContents | types.BlobResourceContents
        if text is not None:
            contents = types.TextResourceContents(
                uri=uri, mime_type="text/plain", text=text, _meta=meta
            )
        else:
            contents = types.BlobResourceContents(
                uri=uri,
                mime_type="application/octet-stream",
                blob=base64.b64encode(data).decode("ascii"),
                _meta=meta,
            )
        return types.ReadResourceResult(contents=[contents])


def _range(query: str) -> tuple[int, int]:
    from mcp.shared.exceptions import MCPError

    fields = urllib.parse.parse_qs(query, keep_blank_values=True) if query else {}
    unknown = [k for k in fields if k not in ("offset", "length")]
    if unknown:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"unknown range parameter {unknown[0]!r}: use ?offset=K&length=L",
        )
    values = []
    for key, default in (("offset", 0), ("length", READ_BYTES)):
        text = fields.get(key, [str(default)])[-1]
        if not text.isdigit():
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"{key}={text!r}: must be a whole number of bytes",
            )
        values.append(int(text))
    offset, length = values
    return offset, min(length, READ_BYTES)


MESSAGE_BUDGET_BYTES = 768 * 1024
"""The JSON size of a tool result over which :func:`fit_result` cuts its structured content: the
SDKs' HTTP clients refuse server-sent events over 1 MiB (the Python SDK's included)."""

KEEP_CHARS = 64 * 1024
"""How much of a long string of a cut structured content is kept, at each end."""


def fit_result(result: dict[str, Any], uri: str | None) -> dict[str, Any]:
    """``result`` (a ``CallToolResult``'s wire JSON), or when its JSON is over :data:`MESSAGE_BUDGET_BYTES`, with every string of
    its ``structuredContent`` longer than twice :data:`KEEP_CHARS` cut to its first and last
    :data:`KEEP_CHARS` around ``[... N characters omitted ...]`` (naming the full output's
    resource ``uri`` when there is one). The text blocks are the tool's and stay as they are."""
    structured = result.get("structuredContent")
    if structured is None:
        return result
    if len(json.dumps(result, ensure_ascii=False, separators=(",", ":"))) <= MESSAGE_BUDGET_BYTES:
        return result
    where = f": the full output is the MCP resource {uri}" if uri else ""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > 2 * KEEP_CHARS:
            omitted = len(value) - 2 * KEEP_CHARS
            return (
                f"{value[:KEEP_CHARS]}\n[... {omitted} characters omitted to keep this MCP "
                f"message under 1 MiB{where} ...]\n{value[-KEEP_CHARS:]}"
            )
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v) for v in value]
        return value

    return {**result, "structuredContent": cut(structured)}


def link_text(link: dict[str, Any]) -> str:
    """The line a tool result's text gets for its full output's resource (``link``: the
    ``resource_link`` block of :meth:`SessionOutputs.add`)."""
    return (
        f"[Full output ({link['size']} bytes) as MCP resource {link['uri']}: resources/read "
        "returns "
        f"{READ_BYTES} bytes at a time, ?offset=K for more]"
    )


__all__ = ["MESSAGE_BUDGET_BYTES", "READ_BYTES", "SessionOutputs", "fit_result", "link_text"]
