"""Argument validation for the tool pipeline: Pi 1.6's coercion, then JSON Schema, then Pi's text.

pi-ai's ``validateToolArguments``, run between ``prepareArguments`` and ``execute``. One call,
:func:`validate_tool_arguments`, turns the raw arguments of a tool call (after
``prepare_arguments`` and the ``pi_prepare_arguments`` chain) into the params ``execute``
receives, or raises :class:`ToolArgumentsError`, whose ``str()`` is the complete error text the
model sees::

    Validation failed for tool "edit":
      - path: missing
      - edits: missing

    Received arguments:
    {}

**Coercion** is Pi 1.6's (pi-schema's ``coerce``, :mod:`pi_core._tools.coercion`), applied to a
copy of the arguments: an optional ``null`` is dropped, numeric strings become numbers
(``""`` is 0), ``"1"``/``"true"`` booleans, numbers and ``null`` strings where a string is
required (``123`` → ``"123"``, ``null`` → ``"null"``), a single value a one-item array, a union
takes the first branch the value converts to. A tool whose ``coerce_arguments`` is false
(:class:`~pi_core.AgentTool`, :class:`~pi_core.ToolDefinition`, ``@tool``) gets its arguments
checked as they are.

**Validation** uses ``jsonschema`` Draft 2020-12 (``$schema`` is not consulted; ``format`` is an
annotation and is not checked, as the 2020-12 default says; tools that need formats check them
in ``execute``, as ``@tool`` does through pydantic). The validator is compiled once per tool and
per ``parameters`` object (replace ``tool.parameters``, do not mutate it in place, to change the
schema); :func:`validator_cache_info` reports hits and misses.

A *flat* schema (only ``type``, ``properties``, ``required``, ``items``, ``additionalProperties``
``true``/``false`` and the annotations ``description``, ``title``, ``default``, every value
well-formed: the built-in tools' schemas) is coerced and checked by hand, with the same rules
(:func:`_is_flat`); jsonschema (:mod:`pi_core._tools.schema_validation`) is imported only for
other schemas and to write the error lines of arguments that do not match, so the texts are
the same either way and a session of valid calls to flat tools never imports it (start-up).

**Messages** are pi-schema's (its ``Explainer``): each failing keyword at the value it failed
on, every error listed, in the order of the schema walk: ``missing`` (one line per missing
property, at the property), ``expected string, got integer`` (``expected integer or null``;
``got`` is ``null``, ``array``, ``integer``, ``number``, ``string``, ``boolean`` or
``object``), ``unknown field``, ``no value is allowed here``, ``expected one of ["a","b"]``,
``expected "x"``, ``expected at least N characters``, ``expected >= N``, ``expected a multiple
of N``, ``expected at least N items``, ``expected unique items``, ``invalid property name``,
``required when a is present``, ``matches no alternative`` (else the errors of the branch a
tagged union's tag selects, or that declares most of the object's keys, or whose first error is
deepest), ``matches more than one alternative``, ``must not match the schema in not``.
Paths are the keys joined by ``.`` (``edits.0.oldText``), ``root`` for the top level.
``Received arguments`` is the input as JavaScript's ``JSON.stringify(value, null, 2)`` writes it
(see :func:`json_stringify`), except that keys keep their order (JavaScript would list
integer-like keys first).

**Schemas** may use draft-07 spellings TypeBox also accepts (an ``items`` array,
``additionalItems``, ``dependencies``); they are read as their 2020-12 equivalents. A
``parameters`` that is not a valid schema, or a ``$ref`` that cannot be resolved (remote
references are never fetched), is a :class:`~pi_core._errors.ToolError` naming the tool.
"""

from __future__ import annotations

import numbers
import threading
import weakref
from typing import Any, NamedTuple

from pi_core._errors import ToolError
from pi_core._tools.coercion import Coercer
from pi_core._tools.definition import AgentTool
from pi_core._tools.validation_common import (
    _FALSE_SCHEMA,
    ToolArgumentsError,
    _Compiled,
    _copy_json,
    js_number_to_string,
    json_stringify,
)

__all__ = [
    "ToolArgumentsError",
    "ValidatorCacheInfo",
    "js_number_to_string",
    "json_stringify",
    "validate_tool_arguments",
    "validator_cache_info",
]


# ----------------------------------------------------------------------------------------------
# Schema preparation and the per-tool cache
# ----------------------------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_VALUES = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _normalise(schema: Any) -> Any:
    """A copy of ``schema`` whose ``false`` subschemas are ``{_FALSE_SCHEMA: true}``, without
    ``$schema`` keys, and whose draft-07 spellings are the 2020-12 ones TypeBox also accepts:
    an ``items`` array is ``prefixItems`` (``additionalItems`` becomes ``items``),
    ``dependencies`` is split into ``dependentRequired`` and ``dependentSchemas``."""
    if schema is False:
        return {_FALSE_SCHEMA: True}
    if not isinstance(schema, dict):
        return schema
    result = dict(schema)
    # Every subschema is read as 2020-12 by our validator class: a "$schema" would make
    # jsonschema switch to its stock class for that subtree (and to its own message texts).
    result.pop("$schema", None)
    if isinstance(result.get("items"), list) and "prefixItems" not in result:
        result["prefixItems"] = result.pop("items")
        if "additionalItems" in result:
            result["items"] = result.pop("additionalItems")
    dependencies = result.get("dependencies")
    if isinstance(dependencies, dict):
        del result["dependencies"]
        for name, dependency in dependencies.items():
            target = "dependentRequired" if isinstance(dependency, list) else "dependentSchemas"
            result[target] = {**result.get(target, {}), name: dependency}
    for key in _SCHEMA_MAPS:
        if isinstance(result.get(key), dict):
            result[key] = {name: _normalise(sub) for name, sub in result[key].items()}
    for key in _SCHEMA_VALUES:
        if key in result:
            result[key] = _normalise(result[key])
    for key in _SCHEMA_LISTS:
        if isinstance(result.get(key), list):
            result[key] = [_normalise(sub) for sub in result[key]]
    return result


class ValidatorCacheInfo(NamedTuple):
    """Counters of the per-tool validator cache: ``hits`` (a compiled validator was reused),
    ``misses`` (a validator was compiled), ``currsize`` (tools currently cached)."""

    hits: int
    misses: int
    currsize: int


_cache: weakref.WeakKeyDictionary[Any, _Compiled] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()
_hits = 0
_misses = 0


def validator_cache_info() -> ValidatorCacheInfo:
    """How often :func:`validate_tool_arguments` reused or compiled a tool's validator."""
    with _cache_lock:
        return ValidatorCacheInfo(_hits, _misses, len(_cache))


def _compile(tool_name: str, parameters: Any) -> _Compiled:
    if parameters is True or parameters is None:
        parameters_schema: Any = {}
    elif isinstance(parameters, dict) or parameters is False:
        parameters_schema = parameters
    else:
        raise ToolError(
            f'Invalid parameters schema for tool "{tool_name}": expected a JSON Schema object, '
            f"got {type(parameters).__name__}"
        )
    schema = _normalise(parameters_schema)
    if _is_flat(schema):  # valid under the meta-schema by construction
        return _Compiled(parameters, schema, flat=True, typed=_is_typed(schema))
    from pi_core._tools.schema_validation import build, check_schema

    check_schema(tool_name, schema)
    return _Compiled(parameters, schema, flat=False, parts=build(schema))


def _compiled_for(tool: AgentTool) -> _Compiled:
    global _hits, _misses
    parameters = tool.parameters
    with _cache_lock:
        try:
            entry = _cache.get(tool)
        except TypeError:  # not weak-referenceable: compile every time
            entry = None
        if entry is not None and entry.parameters is parameters:
            _hits += 1
            return entry
        _misses += 1
    entry = _compile(tool.name, parameters)
    with _cache_lock:
        try:
            _cache[tool] = entry
        except TypeError:
            pass
    return entry


# ----------------------------------------------------------------------------------------------
# Flat schemas: coerced and checked without jsonschema
# ----------------------------------------------------------------------------------------------

_TYPE_NAMES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_NO_ADDITIONAL = {_FALSE_SCHEMA: True}
"""``additionalProperties: false`` once :func:`_normalise` has rewritten it."""
_MAX_FLAT_DEPTH = 32


def _is_flat(schema: Any, depth: int = 0) -> bool:
    """Whether the normalised ``schema`` is one :func:`_flat_coerce` and :func:`_flat_valid`
    handle: a dict of only ``type`` (a known type name, or a non-empty list of distinct ones),
    ``properties`` (flat subschemas), ``required`` (distinct strings), ``items`` (a flat
    subschema), ``additionalProperties`` (``true`` or ``false``), ``description`` and ``title``
    (strings) and ``default``. Such a schema is valid under the Draft 2020-12 meta-schema, so
    it needs no ``check_schema``; anything else (``$ref``, unions, ``enum``, bounds, formats,
    unknown keywords, a malformed value) goes to jsonschema."""
    if type(schema) is not dict or depth > _MAX_FLAT_DEPTH:
        return False
    for key, value in schema.items():
        if key == "type":
            names = [value] if isinstance(value, str) else value
            if not (
                type(names) is list
                and names
                and all(isinstance(name, str) and name in _TYPE_NAMES for name in names)
                and len(set(names)) == len(names)
            ):
                return False
        elif key == "properties":
            if type(value) is not dict or not all(
                isinstance(name, str) and _is_flat(sub, depth + 1) for name, sub in value.items()
            ):
                return False
        elif key == "required":
            if not (
                type(value) is list
                and all(isinstance(name, str) for name in value)
                and len(set(value)) == len(value)
            ):
                return False
        elif key == "items":
            if not _is_flat(value, depth + 1):
                return False
        elif key == "additionalProperties":
            if value is not True and value != _NO_ADDITIONAL:
                return False
        elif key in ("description", "title"):
            if not isinstance(value, str):
                return False
        elif key != "default":
            return False
    return True


def _is_type(value: Any, name: str) -> bool:
    """jsonschema's Draft 2020-12 type check (an integral float is an ``integer``; a bool is
    not a number)."""
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "number":
        return isinstance(value, numbers.Number)
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _flat_valid(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` matches the flat ``schema`` (jsonschema would report no error)."""
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_is_type(value, name) for name in names):
            return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", ())):
            return False
        for key, sub in properties.items():
            if key in value and not _flat_valid(value[key], sub):
                return False
        if schema.get("additionalProperties", True) is not True:
            if any(key not in properties for key in value):
                return False
    elif isinstance(value, list):
        items = schema.get("items")
        if items is not None and not all(_flat_valid(item, items) for item in value):
            return False
    return True


def _is_typed(schema: dict[str, Any]) -> bool:
    """Whether the flat ``schema`` and each of its subschemas (``properties``, ``items``) has
    a ``type``. Without one, coercion changes values the schema accepts (``items`` without a
    ``type`` wraps a single value in an array)."""
    if "type" not in schema:
        return False
    items = schema.get("items")
    return all(_is_typed(sub) for sub in schema.get("properties", {}).values()) and (
        items is None or _is_typed(items)
    )


def _coercion_free(value: Any) -> bool:
    """Whether ``value`` holds only strings, booleans, integers (not floats), lists and dicts.

    Such a value that matches a flat schema whose every subschema has a ``type``
    (:func:`_is_typed`) is one Pi 1.6's coercion leaves as it is: no null to drop or convert,
    no integral float to turn into an integer, every string, boolean and integer already has
    its single schema type (which converts it to itself) or matches a type list (which neither
    pass touches), and every list and dict is where its schema's type says. The common call
    (strings and integers that match) then skips the three coercion walks."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is not str and kind is not bool and kind is not int:
            return False
    return True


# ----------------------------------------------------------------------------------------------
# The entry point
# ----------------------------------------------------------------------------------------------


MAX_ARGUMENT_DEPTH = 64
"""Arguments nested deeper (arrays and objects) are refused before validation: ``root: too
deeply nested to validate``. Validating them recursively would reach Python's recursion limit
at a depth that depends on the caller's stack, and inside a compiled extension (jsonschema's
``rpds`` maps) that limit is a panic, not a ``RecursionError``."""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def validate_tool_arguments(tool: AgentTool, arguments: Any) -> Any:
    """Coerce and validate ``arguments`` against ``tool.parameters``.

    ``tool`` is an :class:`~pi_core._tools.definition.AgentTool` (a ``ToolDefinition`` or ``@tool``
    function works too: only ``name``, ``parameters`` and ``coerce_arguments`` are read).
    ``arguments`` are the call's arguments after ``prepare_arguments`` (any JSON value;
    untrusted). Returns a deep copy coerced as Pi 1.6 coerces (not coerced when the tool's
    ``coerce_arguments`` is false); the caller's object is never modified.

    Raises :class:`ToolArgumentsError` (its ``str()`` is Pi's full message) when the coerced
    copy does not match the schema, and :class:`~pi_core._errors.ToolError` when the tool's
    ``parameters`` is not a valid JSON Schema or holds an unresolvable ``$ref``.
    """
    compiled = _compiled_for(tool)
    if _deeper_than(arguments, MAX_ARGUMENT_DEPTH):
        raise ToolArgumentsError(tool.name, [("root", "too deeply nested to validate")], arguments)
    coerce = getattr(tool, "coerce_arguments", True) is not False
    if compiled.flat:
        try:
            value = _copy_json(arguments)
            if (  # what coercion would return: the value itself (no need to walk it thrice)
                coerce
                and compiled.typed
                and _coercion_free(value)
                and _flat_valid(value, compiled.schema)
            ):
                return value
            if coerce:
                value = _FLAT_COERCER.coerce(value, compiled.schema)
            if _flat_valid(value, compiled.schema):
                return value
        except RecursionError:
            pass
    # another schema, or arguments that do not match: jsonschema writes the error lines
    from pi_core._tools.schema_validation import build, validate

    if compiled.parts is None:
        compiled.parts = build(compiled.schema)
    return validate(compiled, tool.name, arguments, coerce=coerce)


_FLAT_COERCER = Coercer(lambda node, _scope, value: _flat_valid(value, node))
"""Pi 1.6's coercion for flat schemas: no ``$ref`` to resolve, validity checked by hand."""
