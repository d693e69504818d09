"""TypeScript-like declarations of tools for codemode scripts (Pi 1.6.0's
``pi-codemode/dist/declarations.js``): what ``ALL_TOOLS``, ``searchTools`` and
``describeTool`` show of a tool.

:func:`render_tool_sample` is the tool's description followed by
``codemode tool declaration:`` and a ``declare const tools: { id(args: ...): Promise<...>; };``
block; :func:`schema_to_type` renders a JSON Schema as a TypeScript type (sorted properties,
``?`` for optional ones, descriptions and constraint tags as ``//`` comments).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

DEFAULT_INPUT_SCHEMA_MAX_CHARS = 16_000
MAX_REF_EXPANSIONS = 32
MAX_TAG_CHARS = 80
INDENT = "  "
TEXT_OUTPUT_SCHEMA: dict[str, Any] = {"type": "string"}

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_LINE_TERMINATORS = re.compile("[\r\n\u2028\u2029]")
_TAG_KEYWORDS = (
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
)
_LOWER_BOUNDS = {"minimum", "exclusiveMinimum", "minLength", "minItems"}
_UPPER_BOUNDS = {"maximum", "exclusiveMaximum", "maxLength", "maxItems"}


def to_codemode_identifier(name: str) -> str:
    """The identifier a script uses for a tool: characters not valid in a JavaScript identifier
    become ``_`` (``my-tool`` → ``my_tool``, empty → ``_``)."""
    out: list[str] = []
    for char in name:
        valid = char.isascii() and (
            char.isalpha() or char in "_$" or (bool(out) and char.isdigit())
        )
        out.append(char if valid else "_")
    return "".join(out) or "_"


def _js_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _js_number(value: float) -> str:
    """A number as JavaScript's ``String(n)`` writes it (integral floats without ``.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "unknown" in unique:
        return "unknown"
    return "never" if not unique else " | ".join(unique)


def resolve_schema_ref(ref: str, root: Any) -> Any:
    """The target of a local ``$ref`` (``#`` or ``#/a/b``), ``None`` when it does not resolve."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    current = root
    for segment in (s for s in ref[2:].split("/") if s):
        key = unquote(segment).replace("~1", "/").replace("~0", "~")
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    if isinstance(current, bool) or isinstance(current, dict):
        return current
    return None


class _Context:
    def __init__(self, root: Any, tags: bool) -> None:
        self.root = root
        self.resolving: set[str] = set()
        self.expansions = 0
        self.tags = tags


def schema_to_type(schema: Any, max_chars: int | None = None) -> str:
    """A JSON Schema as a TypeScript type; over ``max_chars`` without the constraint tags,
    and ``unknown`` when still too long."""
    rendered = _to_type(schema, _Context(schema, True))
    if max_chars is None or len(rendered) <= max_chars:
        return rendered
    untagged = _to_type(schema, _Context(schema, False))
    return untagged if len(untagged) <= max_chars else "unknown"


def _to_type(schema: Any, context: _Context) -> str:
    if schema is True:
        return "unknown"
    if schema is False:
        return "never"
    if not isinstance(schema, dict):
        return "unknown"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in context.resolving or context.expansions >= MAX_REF_EXPANSIONS:
            return "unknown"
        target = resolve_schema_ref(ref, context.root)
        if target is None:
            return "unknown"
        context.expansions += 1
        context.resolving.add(ref)
        try:
            return _to_type(target, context)
        finally:
            context.resolving.discard(ref)
    if "const" in schema:
        return _js_json(schema["const"])
    if isinstance(schema.get("enum"), list):
        return _union([_js_json(v) for v in schema["enum"]])
    variants = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else None
    if variants is None and isinstance(schema.get("oneOf"), list):
        variants = schema["oneOf"]
    if variants is not None:
        return _union([_to_type(v, context) for v in variants])
    if isinstance(schema.get("allOf"), list):
        parts = [p for p in (_to_type(p, context) for p in schema["allOf"]) if p != "unknown"]
        if not parts:
            return "unknown"
        return " & ".join(f"({p})" if " | " in p else p for p in parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_to_type({**schema, "type": entry}, context) for entry in kind])
    if kind == "string":
        return "string"
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        return _array_type(schema, context)
    if kind == "object":
        return _object_type(schema, context)
    if kind is None:
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            return _object_type(schema, context)
        if "items" in schema or "prefixItems" in schema:
            return _array_type(schema, context)
    return "unknown"


def _array_type(schema: dict[str, Any], context: _Context) -> str:
    items = schema.get("items")
    if items is not None and not isinstance(items, list):
        return f"Array<{_to_type(items, context)}>"
    prefix = schema.get("prefixItems")
    tuple_items = prefix if isinstance(prefix, list) else items if isinstance(items, list) else []
    if tuple_items:
        return "[" + ", ".join(_to_type(item, context) for item in tuple_items) + "]"
    return "unknown[]"


def _description_of(schema: Any) -> str:
    description = schema.get("description") if isinstance(schema, dict) else None
    return description.strip() if isinstance(description, str) else ""


def _constraint_tags(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    variants = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else schema.get("oneOf")
    non_null = (
        [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
        if isinstance(variants, list)
        else []
    )
    branch = non_null[0] if len(non_null) == 1 else None
    branches = [schema, branch] if isinstance(branch, dict) else [schema]
    schemas = []
    for s in branches:
        s = dict(s)
        if s.get("exclusiveMinimum") is True:
            s["minimum"], s["exclusiveMinimum"] = None, s.get("minimum")
        if s.get("exclusiveMaximum") is True:
            s["maximum"], s["exclusiveMaximum"] = None, s.get("maximum")
        schemas.append(s)
    tags: list[str] = []

    def is_integer(kind: Any) -> bool:
        return kind == "integer" or (isinstance(kind, list) and "integer" in kind)

    if any(is_integer(s.get("type")) for s in schemas):
        tags.append("@integer")
    for keyword in _TAG_KEYWORDS:
        values = [s.get(keyword) for s in schemas]
        if keyword in _LOWER_BOUNDS or keyword in _UPPER_BOUNDS:
            numbers: list[Any] = [v for v in values if _is_number(v)]
            if not numbers:
                continue
            bound = max(numbers) if keyword in _LOWER_BOUNDS else min(numbers)
            tags.append(f"@{keyword} {_js_number(bound)}")
            continue
        value: Any
        for value in dict.fromkeys(v for v in values if _is_number(v) or isinstance(v, str)):
            tags.append(f"@{keyword} {_js_number(value) if _is_number(value) else value}")
    if any(s.get("uniqueItems") is True for s in schemas):
        tags.append("@uniqueItems")
    if schema.get("default") is not None:
        tags.append(f"@default {_js_json(schema['default'])}")
    if schema.get("deprecated") is True:
        tags.append("@deprecated")
    return " ".join(
        _LINE_TERMINATORS.sub(lambda m: f"\\u{ord(m.group(0)):04x}", tag)
        for tag in tags
        if len(tag) <= MAX_TAG_CHARS
    )


def _property_key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else _js_json(name)


def _object_type(schema: dict[str, Any], context: _Context) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    required = (
        set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    )
    names = sorted(properties, key=lambda n: n.encode("utf-16-be"))
    members = [
        f"{_property_key(n)}{'' if n in required else '?'}: {_to_type(properties[n], context)};"
        for n in names
    ]
    additional = schema.get("additionalProperties")
    if additional is not None and additional is not False:
        kind = "unknown" if additional is True else _to_type(additional, context)
        members.append(f"[key: string]: {kind};")
    elif additional is None and not names:
        members.append("[key: string]: unknown;")
    if not members:
        return "{}"
    comments: list[list[str]] = []
    for n in names:
        lines = [
            line.strip()
            for line in _LINE_TERMINATORS.split(_description_of(properties[n]))
            if line.strip()
        ]
        tags = _constraint_tags(properties[n]) if context.tags else ""
        comments.append([*lines, tags] if tags else lines)
    if not any(comments):
        return "{ " + " ".join(members) + " }"
    out = ["{"]
    for index, comment in enumerate(comments):
        out.extend(f"{INDENT}// {line}" for line in comment)
        out.append(INDENT + members[index].replace("\n", "\n" + INDENT))
    out.extend(INDENT + member for member in members[len(names) :])
    out.append("}")
    return "\n".join(out)


def render_tool_output_type(schema: Any) -> str:
    return "unknown" if schema is None else schema_to_type(schema)


def render_tool_signature(name: str, input_schema: Any, output_schema: Any) -> str:
    """``id(args: <input>): Promise<<output>>;``"""
    rendered = (
        "unknown"
        if input_schema is None
        else schema_to_type(input_schema, DEFAULT_INPUT_SCHEMA_MAX_CHARS)
    )
    output = render_tool_output_type(output_schema)
    return f"{to_codemode_identifier(name)}(args: {rendered}): Promise<{output}>;"


def render_tool_sample(tool: Any, guidelines: list[str] | None = None) -> str:
    """What scripts see of a tool (Pi's ``renderToolSample(toCodemodeDeclaration(tool))``):
    its description (and its prompt guidelines as ``- `` bullets), then its declaration in a
    ``ts`` block. A tool without an output schema resolves to a string."""
    signature = render_tool_signature(
        tool.name, tool.parameters, getattr(tool, "output_schema", None) or TEXT_OUTPUT_SCHEMA
    )
    bullets = [f"- {g.strip()}" for g in guidelines or [] if g.strip()]
    description = (tool.description or "").strip()
    if bullets:
        description = description + "\n\n" + "\n".join(bullets)
    return (
        f"{description}\n\ncodemode tool declaration:\n```ts\n"
        f"declare const tools: {{ {signature} }};\n```"
    )


# ---------------------------------------------------------------------------------------------
# The codemode tool's description and the "Codemode:" line of declared tools
# ---------------------------------------------------------------------------------------------

CHARS_PER_TOKEN = 4
DEFAULT_INLINE_BUDGET = 3000
"""Estimated tokens (characters / 4) of tool sections the codemode description lists inline
(Pi's ``codemode.inlineBudget``)."""


def _follow_ref(schema: Any, root: Any) -> Any:
    seen: list[Any] = []
    current = schema
    while isinstance(current, dict) and not any(current is s for s in seen):
        ref = current.get("$ref")
        if not isinstance(ref, str):
            break
        target = resolve_schema_ref(ref, root)
        if target is None:
            break
        seen.append(current)
        current = target
    return current


def _describe_fields(schema: Any, root: Any, depth: int) -> str | None:
    resolved = _follow_ref(schema, root)
    if not isinstance(resolved, dict):
        return None
    properties = resolved.get("properties")
    if resolved.get("type") != "object" or not isinstance(properties, dict):
        return None
    required = (
        set(resolved.get("required") or []) if isinstance(resolved.get("required"), list) else set()
    )
    fields = []
    for name, field_schema in properties.items():
        target = _follow_ref(field_schema, root)
        nested: str | None = None
        if isinstance(target, dict) and "const" in target:
            nested = _js_json(target["const"])
        elif depth > 0:
            nested = _describe_fields(field_schema, root, depth - 1)
        fields.append(f"{name}{'' if name in required else '?'}{f': {nested}' if nested else ''}")
    return "{ " + ", ".join(fields) + " }"


def _describe_union_fields(schema: Any, root: Any) -> str | None:
    resolved = _follow_ref(schema, root)
    if not isinstance(resolved, dict):
        return None
    variants = resolved.get("anyOf")
    if variants is None:
        variants = resolved.get("oneOf")
    if not isinstance(variants, list) or not variants:
        return None
    described = [_describe_fields(v, root, 0) for v in variants]
    return None if any(d is None for d in described) else " | ".join(described)  # type: ignore[arg-type]


def _describe_output(name: str, schema: Any) -> str:
    rendered = render_tool_output_type(schema)
    if rendered == "string":
        return "a string"
    fields = None
    if schema is not None:
        fields = _describe_fields(schema, schema, 1) or _describe_union_fields(schema, schema)
    if fields:
        return f"`{fields}`"
    if "\n" not in rendered:
        return f"`{rendered}`"
    return f"a value; `await describeTool({_js_json(name)})` shows its type"


def describe_script_call(tool: Any) -> str:
    """A declared tool's description when codemode is active: ``\n\nCodemode:
    `tools.<id>(args)` resolves to <what>.`` appended."""
    output = _describe_output(tool.name, getattr(tool, "output_schema", None) or TEXT_OUTPUT_SCHEMA)
    return (
        f"{tool.description.strip()}\n\nCodemode: `tools.{to_codemode_identifier(tool.name)}(args)` "
        f"resolves to {output}."
    )


def _tool_section(tool: Any, guidelines: list[str]) -> str:
    identifier = to_codemode_identifier(tool.name)
    heading = (
        f"### `{identifier}`" if identifier == tool.name else f"### `{identifier}` (`{tool.name}`)"
    )
    return f"{heading}\n{render_tool_sample(tool, guidelines).strip()}"


def create_codemode_description(
    intro: str,
    tools: list[Any],
    *,
    namespaces: dict[str, Any],
    guidelines: dict[str, list[str]],
    deferred: set[str],
    inline_budget: int | None = DEFAULT_INLINE_BUDGET,
    render_section: Any = None,
) -> str:
    """Pi's ``createCodemodeDescription``: ``intro`` (the introduction and the globals), then
    ``Nested tools:`` with a section per listed tool (grouped by namespace, the tools without
    one first), as many as fit the inline budget, cheapest first in each group.
    ``render_section(tool, guidelines)`` renders a tool's section (default: the TypeScript one;
    ``codemode_python`` passes its Python one)."""
    render = render_section or _tool_section
    listed = [t for t in tools if t.name not in deferred]
    if not listed:
        return intro
    groups: dict[str, tuple[Any, list[tuple[str, str, int]]]] = {"": (None, [])}
    for tool in listed:
        namespace = namespaces.get(tool.name)
        key = f"ns:{namespace.name}" if namespace is not None else ""
        group = groups.setdefault(key, (namespace, []))
        section = render(tool, guidelines.get(tool.name, []))
        group[1].append((tool.name, section, -(-len(section) // CHARS_PER_TOKEN)))
    ordered = sorted(
        groups.values(), key=lambda g: (g[0] is not None, g[0].name if g[0] is not None else "")
    )
    shown: set[str]
    if inline_budget is None:
        shown = {name for _, entries in ordered for name, _, _ in entries}
    else:
        shown = set()
        remaining = inline_budget
        queues = [sorted(entries, key=lambda e: e[2]) for _, entries in ordered]
        active = [q for q in queues if q]
        while active:
            still = []
            for queue in active:
                name, _, cost = queue[0]
                if cost > remaining:
                    continue
                remaining -= cost
                shown.add(name)
                queue.pop(0)
                if queue:
                    still.append(queue)
            active = still
    sections = ["Nested tools:"]
    for namespace, entries in ordered:
        visible = [e for e in entries if e[0] in shown]
        if namespace is not None:
            listing = (
                ""
                if len(visible) == len(entries)
                else " (tools not listed)"
                if not visible
                else " (some tools not listed)"
            )
            description = (namespace.description or "").strip()
            sections.append(
                f"## {namespace.name}{listing}" + (f"\n{description}" if description else "")
            )
        sections.extend(section for _, section, _ in visible)
    return f"{intro}\n\n" + "\n\n".join(sections)


__all__ = [
    "create_codemode_description",
    "describe_script_call",
    "render_tool_output_type",
    "render_tool_sample",
    "render_tool_signature",
    "resolve_schema_ref",
    "schema_to_type",
    "to_codemode_identifier",
]
