"""A tool's ``constrained_sampling`` as the HTTP providers send it (Pi 1.6's
``constrained-sampling.js`` and ``strict-tool-limits.js``).

JSON-schema sampling (``{"type": "json_schema", "strict": "prefer" | "require"}``): when the
provider supports strict tools, the tool's parameters are converted to the strict subset
(:func:`make_strict_json_schema`) and the tool is sent strict. ``prefer`` falls back to a
non-strict tool, silently, when the provider has no strict tools or the schema does not
convert; ``require`` makes the request fail (:class:`~pi_core._errors.ProviderError`) with
``Tool "NAME" requires JSON-schema constrained sampling, but REASON.`` or ``... but strict tools
are unsupported.``.

A strict model answers ``null`` for an optional argument it leaves out (the conversion made
optional properties nullable); the providers drop such ``null`` values from the calls of the
tools they sent strict (:func:`omit_added_nulls`), so validation sees what a non-strict model
would have sent (even for a tool whose ``coerce_arguments`` is false, where validation keeps an
optional ``null``).

Grammar sampling (``{"type": "grammar", ...}``) needs a provider with OpenAI grammar tools; the
built-in providers have none, so such a tool is sent as an ordinary, non-strict function tool.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from pi_core._errors import ProviderError

UNSUPPORTED_STRICT_SCHEMA_KEYS = (
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
)
"""Keywords that make a schema unconvertible to the strict subset."""

STRICT_TOOL_LIMIT_ERROR_MESSAGES = (
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
)
"""Texts of Claude's rejections of a request whose strict tools exceed its limits (20 strict
tools, 16 optional or union-typed parameters across them)."""

UnsupportedKeyword = Callable[[str, Any], bool]
"""``(key, value) -> bool``: a keyword a provider's strict mode rejects besides the common ones."""


class UnsupportedStrictSchema(Exception):
    """The schema cannot be converted to the strict subset; the message says why."""


def _is_schema_object(value: Any) -> bool:
    return isinstance(value, dict)


def _types(schema: dict[str, Any]) -> list[Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return list(kind) if isinstance(kind, list) else []


def _is_structured(schema: Any) -> bool:
    if not _is_schema_object(schema):
        return False
    types = _types(schema)
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: Any) -> bool:
    if not _is_schema_object(schema):
        return False
    if "null" in _types(schema):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    any_of = schema.get("anyOf")
    return isinstance(any_of, list) and any(_allows_null(v) for v in any_of)


def _make_strict(schema: Any, unsupported: UnsupportedKeyword | None) -> None:
    """Convert ``schema`` in place (see :func:`make_strict_json_schema`)."""
    if not _is_schema_object(schema):
        raise UnsupportedStrictSchema("boolean schemas are unsupported")
    for key in UNSUPPORTED_STRICT_SCHEMA_KEYS:
        if key in schema:
            raise UnsupportedStrictSchema(f"{key} schemas are unsupported")
    if unsupported is not None:
        for key, value in schema.items():
            if unsupported(key, value):
                text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                raise UnsupportedStrictSchema(f"{key}: {text} is unsupported")
    if "type" not in schema and "anyOf" not in schema and "enum" not in schema:
        raise UnsupportedStrictSchema("schemas without a type are unsupported")
    if "anyOf" in schema:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise UnsupportedStrictSchema("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise UnsupportedStrictSchema("object and array unions are unsupported")
            _make_strict(variant, unsupported)
    if "items" in schema:
        if isinstance(schema["items"], list):
            raise UnsupportedStrictSchema("tuple schemas are unsupported")
        _make_strict(schema["items"], unsupported)
    is_object = schema.get("type") == "object"
    if "properties" in schema and not is_object:
        raise UnsupportedStrictSchema("properties require type object")
    if not is_object:
        return
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        raise UnsupportedStrictSchema("schema-valued or true additionalProperties is unsupported")
    if "properties" in schema and not _is_schema_object(schema["properties"]):
        raise UnsupportedStrictSchema("object properties must be a schema map")
    required_value = schema.get("required")
    if "required" in schema and (
        not isinstance(required_value, list) or any(not isinstance(k, str) for k in required_value)
    ):
        raise UnsupportedStrictSchema("object required must be a string array")
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(required_value or [])
    if any(key not in properties for key in required):
        raise UnsupportedStrictSchema("required contains an unknown property")
    for key, prop in list(properties.items()):
        _make_strict(prop, unsupported)
        if key not in required and not _allows_null(prop):
            properties[key] = {"anyOf": [prop, {"type": "null"}]}
    schema["required"] = list(properties)
    schema["additionalProperties"] = False


def make_strict_json_schema(
    schema: Any, unsupported: UnsupportedKeyword | None = None
) -> dict[str, Any]:
    """A copy of ``schema`` in the strict subset: every object lists all its properties as
    required, an optional property that does not accept ``null`` becomes
    ``{"anyOf": [SCHEMA, {"type": "null"}]}``, and ``additionalProperties`` is ``false``.

    Raises :class:`UnsupportedStrictSchema` for a schema outside the subset: any of
    :data:`UNSUPPORTED_STRICT_SCHEMA_KEYS`, boolean schemas, nodes without ``type`` (a bare
    ``enum`` counts as typed), object or array unions, tuples, ``additionalProperties`` other
    than ``false``, a root that is not ``type: object``, or a keyword ``unsupported`` rejects.
    """
    if not _is_schema_object(schema):
        raise UnsupportedStrictSchema("root schema must have type object")
    cloned = copy.deepcopy(schema)
    _make_strict(cloned, unsupported)
    if cloned.get("type") != "object":
        raise UnsupportedStrictSchema("root schema must have type object")
    return cloned


def prefers_strict(tool: Any) -> bool:
    """Whether ``tool`` asks for strict JSON-schema sampling only when possible (``prefer``)."""
    config = getattr(tool, "constrained_sampling", False)
    return (
        isinstance(config, dict)
        and config.get("type") == "json_schema"
        and config.get("strict") == "prefer"
    )


def resolve_strict_sampling(
    tool: Any, supports_strict: bool, unsupported: UnsupportedKeyword | None = None
) -> bool:
    """Whether ``tool`` is sent strict by a provider that does (``supports_strict``) or does not
    support strict tools; raises :class:`~pi_core._errors.ProviderError` for a ``require`` tool
    that cannot be (see the module docstring)."""
    config = getattr(tool, "constrained_sampling", False)
    if not isinstance(config, dict) or config.get("type") != "json_schema":
        return False
    if supports_strict:
        try:
            make_strict_json_schema(tool.parameters, unsupported)
        except UnsupportedStrictSchema as exc:
            if config.get("strict") != "require":
                return False
            raise ProviderError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, but {exc}.'
            ) from None
        return True
    if config.get("strict") == "require":
        raise ProviderError(
            f'Tool "{tool.name}" requires JSON-schema constrained sampling, but strict tools '
            "are unsupported."
        )
    return False


def tool_parameters(tool: Any, strict: bool) -> dict[str, Any]:
    """The parameters sent for ``tool``: converted to the strict subset when ``strict``."""
    params: dict[str, Any] = tool.parameters
    return make_strict_json_schema(params) if strict else params


def omit_added_nulls(schema: Any, value: Any) -> Any:
    """``value`` (a strict tool call's arguments) without the ``null`` values the strict
    conversion made possible: an optional property whose own schema does not accept ``null``
    was sent as ``anyOf [schema, {"type": "null"}]``, so a strict model answers ``null`` where it
    means "omitted"; such a ``null`` is dropped, in nested objects and array items too. Other
    values are returned unchanged (a new object where something was dropped)."""
    if not _is_schema_object(schema):
        return value
    if isinstance(value, dict) and schema.get("type") == "object":
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        result: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                result[key] = item
            elif item is None and key not in required and not _allows_null(sub):
                continue
            else:
                result[key] = omit_added_nulls(sub, item)
        return result
    if isinstance(value, list) and _is_schema_object(schema.get("items")):
        return [omit_added_nulls(schema["items"], item) for item in value]
    return value


def is_strict_tool_limit_error(message: str) -> bool:
    """Whether a provider error message says the strict tools exceed Claude's limits."""
    return any(text in message for text in STRICT_TOOL_LIMIT_ERROR_MESSAGES)


__all__ = [
    "STRICT_TOOL_LIMIT_ERROR_MESSAGES",
    "UNSUPPORTED_STRICT_SCHEMA_KEYS",
    "UnsupportedStrictSchema",
    "is_strict_tool_limit_error",
    "make_strict_json_schema",
    "omit_added_nulls",
    "prefers_strict",
    "resolve_strict_sampling",
    "tool_parameters",
]
