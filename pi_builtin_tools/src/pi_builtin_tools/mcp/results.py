"""MCP results as pi tool results, exactly as Pi 1.6 maps them (``pi-mcp`` ``output-limit.js``,
``protocol/content.js``; ``extensions/mcp/tools.js``, ``resources.js``).

Everything works on the JSON form of MCP objects (``model_dump(by_alias=True, mode="json")``).

API:

* :func:`convert_call_result` ``(server, tool, result, readable_resources)``: a ``CallToolResult``
  as an :class:`~pi_core.AgentToolResult`: the content blocks (embedded resources unwrapped,
  binary ones saved to files, links and audio as placeholders), the ``structuredContent`` JSON
  when there is no block, ``MCP tool <server>/<tool> returned an error`` for an ``isError``
  result without text, the 20 KB limit (:func:`limit_content`), ``details: {server, tool,
  fullOutputPath?}``, ``structured_content`` (the whole result without ``_meta``) and
  ``is_error``.
* :func:`model_content` ``(server, blocks, readable_resources)``: the model-facing blocks of MCP
  content blocks, before the limit.
* :func:`limit_content` ``(blocks)``: text over :data:`MCP_OUTPUT_MAX_BYTES` kept at its start
  and end, the middle cut out (Codex's format), the full text saved to a file.
* :func:`save_output` ``(data, extension)``: a new private file ``<tmp>/pi-mcp-<hex><ext>``.
* :func:`mcp_result_schema` ``(structured_schema)``: the output schema every MCP tool declares.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import secrets
import tempfile
from typing import Any
from urllib.parse import urlparse

from pi_core import AgentToolResult, ImageContent, TextContent, format_size

MCP_OUTPUT_MAX_BYTES = 20 * 1024
"""Model-facing text of an MCP result beyond this many UTF-8 bytes is cut in the middle."""

READ_MCP_RESOURCE_TOOL = "read_mcp_resource"

Block = TextContent | ImageContent


def save_output(data: str | bytes, extension: str) -> str:
    """Write ``data`` to a new file only the user may read (``<tmp>/pi-mcp-<16 hex><extension>``,
    created exclusively, never through a link) and return its path."""
    path = os.path.join(tempfile.gettempdir(), f"pi-mcp-{secrets.token_hex(8)}{extension}")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(raw)
    return path


def _is_text_mime(mime: str | None) -> bool:
    if not mime:
        return False
    kind = mime.split(";", 1)[0].strip().lower()
    return (
        kind.startswith("text/")
        or kind == "application/json"
        or kind.endswith("+json")
        or kind.endswith("+xml")
    )


def _extension_of(uri: str) -> str:
    path = urlparse(uri).path if "://" in uri else uri
    match = re.search(r"\.[A-Za-z0-9]{1,8}$", path)
    return match.group(0) if match else ".bin"


def _plain_block(block: dict[str, Any]) -> Block:
    """Pi's ``blockToLlmContent`` (``toLlmContent``) for one block."""
    kind = block.get("type")
    if kind == "text":
        return TextContent(text=str(block.get("text", "")))
    if kind == "image":
        return ImageContent(
            data=str(block.get("data", "")), mime_type=str(block.get("mimeType", ""))
        )
    if kind == "audio":
        return TextContent(text=f"[audio {block.get('mimeType')} omitted]")
    if kind == "resource_link":
        return TextContent(text=f"{block.get('name')}: {block.get('uri')}")
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return TextContent(text=str(resource["text"]))
        mime = resource.get("mimeType")
        if isinstance(mime, str) and mime.startswith("image/"):
            return ImageContent(data=str(resource.get("blob", "")), mime_type=mime)
        return TextContent(
            text=f"[binary resource {resource.get('uri')} ({mime or 'unknown type'}) omitted]"
        )
    return TextContent(text=f"[unsupported MCP content {kind}]")


def _block_content(server: str, block: dict[str, Any], readable_resources: bool) -> Block:
    """Pi's ``blockToContent``: resource links name ``read_mcp_resource``; binary embedded
    resources that are not images are decoded (text types) or saved to a file."""
    kind = block.get("type")
    if kind == "resource_link":
        details = [
            block.get("mimeType"),
            None if block.get("size") is None else format_size(int(block["size"])),
        ]
        shown = [d for d in details if d]
        read = (
            f'. Read it with {READ_MCP_RESOURCE_TOOL} (server "{server}")'
            if readable_resources
            else ""
        )
        description = f": {block['description']}" if block.get("description") else ""
        title = block.get("title") or block.get("name")
        extra = f" ({', '.join(shown)})" if shown else ""
        return TextContent(
            text=f'[Resource {block.get("uri")} "{title}"{extra}{description}{read}]'
        )
    resource = block.get("resource") if kind == "resource" else None
    if isinstance(resource, dict) and "blob" in resource:
        mime = resource.get("mimeType")
        if not (isinstance(mime, str) and mime.startswith("image/")):
            uri = str(resource.get("uri", ""))
            try:
                data = base64.b64decode(str(resource["blob"]), validate=False)
            except ValueError:
                data = b""
            if _is_text_mime(mime):
                return TextContent(text=data.decode("utf-8", errors="replace"))
            kind_text = f"{mime or 'unknown type'}, {format_size(len(data))}"
            try:
                path = save_output(data, _extension_of(uri))
            except OSError as exc:
                return TextContent(
                    text=f"[Binary resource {uri} ({kind_text}) could not be saved: {exc}]"
                )
            return TextContent(text=f"[Binary resource {uri} ({kind_text}) saved to {path}]")
    return _plain_block(block)


def model_content(
    server: str, blocks: list[dict[str, Any]], readable_resources: bool = False
) -> list[Block]:
    """The model-facing blocks of ``server``'s MCP content blocks, before the output limit."""
    return [_block_content(server, block, readable_resources) for block in blocks]


def _truncate_middle(text: str, max_bytes: int) -> tuple[str, int, int] | None:
    """Pi's ``truncateMiddle``: ``(content, total_bytes, total_lines)``, or ``None`` when
    ``text`` fits in ``max_bytes`` UTF-8 bytes."""
    buf = text.encode("utf-8", errors="surrogatepass")
    if len(buf) <= max_bytes:
        return None

    def boundary(index: int) -> bool:
        return index >= len(buf) or (buf[index] & 0xC0) != 0x80

    head_end = max_bytes // 2
    while head_end > 0 and not boundary(head_end):
        head_end -= 1
    tail_start = len(buf) - (max_bytes - max_bytes // 2)
    while tail_start < len(buf) and not boundary(tail_start):
        tail_start += 1
    head = buf[:head_end].decode("utf-8", errors="replace")
    tail = buf[tail_start:].decode("utf-8", errors="replace")
    removed = len(buf[head_end:tail_start].decode("utf-8", errors="replace"))
    lines = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
    return f"{head}…{removed} chars truncated…{tail}", len(buf), lines


def limit_content(blocks: list[Block]) -> tuple[list[Block], str | None]:
    """Pi's ``limitMcpContent``: ``(blocks, full_output_path)``. Within the limit the blocks are
    returned as they are; otherwise one text block
    ``Warning: truncated output (original token count: <n>)\\nTotal output lines: <n>\\n\\n<head>…<N> chars truncated…<tail>``
    followed by ``\\n\\n[Full output: <path> (read it with offset/limit)]`` (the file holding the
    text blocks joined by newlines), then the images."""
    combined = "\n".join(b.text for b in blocks if isinstance(b, TextContent))
    truncation = _truncate_middle(combined, MCP_OUTPUT_MAX_BYTES)
    if truncation is None:
        return blocks, None
    content, total_bytes, total_lines = truncation
    path: str | None = None
    try:
        path = save_output(combined, ".txt")
        where = f"\n\n[Full output: {path} (read it with offset/limit)]"
    except OSError as exc:
        where = f"\n\n[Could not save the full output: {exc}]"
    tokens = math.ceil(total_bytes / 4)
    text = (
        f"Warning: truncated output (original token count: {tokens})\n"
        f"Total output lines: {total_lines}\n\n{content}{where}"
    )
    images = [b for b in blocks if isinstance(b, ImageContent)]
    return [TextContent(text=text), *images], path


def structured_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)``."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def convert_call_result(
    server: str, tool: str, result: dict[str, Any], readable_resources: bool = False
) -> AgentToolResult:
    """Pi's ``convertMcpResult`` for the JSON of a ``CallToolResult``."""
    blocks = [b for b in result.get("content") or [] if isinstance(b, dict)]
    if blocks:
        converted = model_content(server, blocks, readable_resources)
    elif result.get("structuredContent") is not None:
        converted = [TextContent(text=structured_json(result["structuredContent"]))]
    else:
        converted = []
    is_error = bool(result.get("isError"))
    if is_error and "\n".join(b.text for b in converted if isinstance(b, TextContent)) == "":
        converted.append(TextContent(text=f"MCP tool {server}/{tool} returned an error"))
    content, full_path = limit_content(converted)
    script_result = {k: v for k, v in result.items() if k != "_meta"}
    details: dict[str, Any] = {"server": server, "tool": tool}
    if full_path:
        details["fullOutputPath"] = full_path
    return AgentToolResult(
        content=list(content),
        details=details,
        structured_content=script_result,
        is_error=True if is_error else None,
    )


_CONTENT_BLOCK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["text", "image", "audio", "resource_link", "resource"]},
        "text": {"type": "string"},
        "data": {"type": "string"},
        "mimeType": {"type": "string"},
    },
    "required": ["type"],
    "additionalProperties": True,
}

_DATA_KEYWORDS = {"const", "enum", "default", "examples"}
_MAP_KEYWORDS = {
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
}


def _relocate(schema: Any, pointer: str) -> Any:
    """Pi's ``relocateSchema``: local ``$ref``s rewritten to point below ``pointer``."""
    if isinstance(schema, list):
        return [_relocate(item, pointer) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and (value == "#" or value.startswith("#/")):
            out[key] = pointer + value[1:]
        elif key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _MAP_KEYWORDS and isinstance(value, dict):
            out[key] = {name: _relocate(sub, pointer) for name, sub in value.items()}
        else:
            out[key] = _relocate(value, pointer)
    return out


def mcp_result_schema(structured_schema: dict[str, Any] | None) -> dict[str, Any]:
    """Pi's ``createMcpResultSchema``: ``{content, structuredContent?, isError?}`` with the
    tool's own output schema as ``structuredContent``."""
    return {
        "type": "object",
        "properties": {
            "content": {"type": "array", "items": _CONTENT_BLOCK_SCHEMA},
            "structuredContent": (
                _relocate(structured_schema, "#/properties/structuredContent")
                if structured_schema
                else {}
            ),
            "isError": {"type": "boolean"},
        },
        "required": ["content"],
        "additionalProperties": True,
    }


def input_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Pi's ``normalizeMcpInputSchema``: an object schema (``type`` defaults to ``object``,
    ``properties`` to ``{}``), other keywords kept."""
    schema = dict(schema or {})
    schema.setdefault("type", "object")
    if schema.get("properties") is None:
        schema["properties"] = {}
    return schema


__all__ = [
    "MCP_OUTPUT_MAX_BYTES",
    "READ_MCP_RESOURCE_TOOL",
    "convert_call_result",
    "input_schema",
    "limit_content",
    "mcp_result_schema",
    "model_content",
    "save_output",
    "structured_json",
]
