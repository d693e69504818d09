"""Pi 1.6's argument coercion (pi-schema's ``coerce``), before the arguments are checked.

Models send ``"42"`` for a number, ``null`` for an omitted optional property, a single value
for an array. Pi 1.6 coerces the arguments towards the tool's schema before validating them
(pi-ai's ``validateToolArguments`` runs pi-schema's ``parse``); so does pi, with the same three
passes, in this order:

1. **Optional nulls.** A ``null`` in an optional property whose schema rejects ``null`` is
   dropped, as if omitted (also inside the values of ``patternProperties`` and
   ``additionalProperties``, and inside array items).
2. **Conversions** (TypeBox 1.3.27's ``Value.Convert`` as pi-schema ports it), by the first
   keyword of a schema that applies: ``$ref`` follows the reference; ``const`` and ``enum``
   take the member the value converts to; ``anyOf``/``oneOf`` keep a value one branch accepts,
   else take the first branch's conversion the whole schema accepts; ``allOf`` converts with
   each member in turn; then by ``type``:

   * ``string``: numbers and booleans to their JavaScript text (``1.0`` → ``"1"``), ``null``
     to ``"null"``;
   * ``number``: numeric strings as JavaScript's ``Number()`` reads them (``""`` and blanks
     are 0, ``"0x10"`` is 16), ``"true"``/``"false"`` (any case), booleans to 1/0, ``null``
     to 0;
   * ``integer``: as ``number``, then truncated (``"3.5"`` and ``3.5`` become 3);
   * ``boolean``: ``"true"``/``"false"`` (any case), ``"1"``/``"0"``, 1/0, ``null`` to
     ``false``;
   * ``null``: ``"null"``, ``"undefined"``, ``""``, ``"0"``, 0 and ``false``;
   * ``array``: a single value becomes a one-item array, then each item converts (a tuple,
     ``prefixItems``, converts its items and never wraps);
   * ``object``: each property converts by ``properties``, ``patternProperties`` or
     ``additionalProperties``.
3. **Primitive coercion by type**, as Ajv's ``coerceTypes``, for what pass 2 leaves (type
   arrays such as ``["integer", "null"]``): numbers from numeric strings and booleans, booleans
   from ``"true"``/``"false"`` and 1/0, strings from numbers and booleans, ``null`` from
   ``""``, 0 and ``false``, and ``null`` to ``""``, 0 or ``false``; a value that already has
   one of a type array's types stays.

A value no rule applies to stays as it is, and the check then reports it. The value given is
never modified: changed objects and arrays are copies.

The schema walk needs two things from its caller, so this module imports no JSON Schema
library (start-up): ``passes(node, scope, value)``, whether ``value`` is valid under the
(normalised) schema ``node``, and ``resolve(ref, scope)``, the target of a ``$ref`` as
``(node, scope)`` or ``None``; ``enter(node, scope)`` gives the scope inside a node (its
``$id``). ``scope`` is whatever the caller resolves references with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeGuard

from pi_core._tools.validation_common import _FALSE_SCHEMA, js_number_to_string

Passes = Callable[[Any, Any, Any], bool]
Resolve = Callable[[str, Any], "tuple[Any, Any] | None"]
Enter = Callable[[Any, Any], Any]

_MAX_SAFE = 2**53 - 1
_JS_SPACE = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_JS_RADIX = {"x": 16, "o": 8, "b": 2}
_JS_RADIX_DIGITS = {16: "0-9a-fA-F", 8: "0-7", 2: "01"}
_BIGINT_SUFFIX = re.compile(r"-?(?:0|[1-9][0-9]*)n")


def js_number(text: str) -> float:
    """JavaScript's ``Number(text)`` (``StringToNumber``): blanks are 0, ``0x``/``0o``/``0b``
    literals are read in their radix, ``Infinity`` is infinite, anything else is NaN."""
    stripped = text.strip(_JS_SPACE)
    if not stripped:
        return 0.0
    if len(stripped) > 2 and stripped[0] == "0" and stripped[1].lower() in _JS_RADIX:
        radix = _JS_RADIX[stripped[1].lower()]
        digits = stripped[2:]
        if re.fullmatch(f"[{_JS_RADIX_DIGITS[radix]}]+", digits):
            return float(int(digits, radix))
        return math.nan
    if not _JS_DECIMAL.fullmatch(stripped):
        return math.nan
    return float(stripped.replace("Infinity", "inf"))


def _number(value: float) -> int | float:
    """A JavaScript number as the tools receive it: an integral value as ``int``."""
    if math.isfinite(value) and value.is_integer() and abs(value) <= _MAX_SAFE:
        return int(value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _same(a: Any, b: Any) -> bool:
    """JavaScript's ``a === b`` for JSON values (containers by identity)."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _is_schema(node: Any) -> TypeGuard[dict[str, Any]]:
    """pi-schema's ``isSchemaObject``: a schema object, not ``true``/``false`` (a normalised
    ``false`` is ``{_FALSE_SCHEMA: true}``)."""
    return isinstance(node, dict) and not node.get(_FALSE_SCHEMA)


# -- TypeBox's conversions of one value --------------------------------------------------------


def _try_string(value: Any) -> tuple[Any] | None:
    if isinstance(value, bool):
        return ("true" if value else "false",)
    if _is_finite(value):
        return (js_number_to_string(value),)
    if value is None:
        return ("null",)
    if isinstance(value, str):
        return (value,)
    return None


def _try_number(value: Any) -> tuple[Any] | None:
    if isinstance(value, bool):
        return (1 if value else 0,)
    if _is_finite(value):
        return (value,)
    if value is None:
        return (0,)
    if not isinstance(value, str):
        return None
    number = js_number(value)
    if math.isfinite(number):
        return (_number(number),)
    lowered = value.lower()
    if lowered == "false":
        return (0,)
    if lowered == "true":
        return (1,)
    if _BIGINT_SUFFIX.fullmatch(value):
        big = int(value[:-1])
        if -_MAX_SAFE <= big <= _MAX_SAFE:
            return (big,)
    return None


def _try_boolean(value: Any) -> tuple[Any] | None:
    if isinstance(value, bool):
        return (value,)
    if _is_finite(value):
        return (False,) if value == 0 else (True,) if value == 1 else None
    if value is None:
        return (False,)
    if not isinstance(value, str):
        return None
    lowered = value.lower()
    if lowered == "false" or value == "0":
        return (False,)
    if lowered == "true" or value == "1":
        return (True,)
    return None


def _try_null(value: Any) -> tuple[Any] | None:
    if isinstance(value, bool):
        return (None,) if value is False else None
    if _is_finite(value):
        return (None,) if value == 0 else None
    if value is None:
        return (None,)
    if not isinstance(value, str):
        return None
    lowered = value.lower()
    return (None,) if lowered in ("undefined", "null", "", "0") else None


def _convert_literal(literal: Any, value: Any) -> Any:
    """A ``const``/``enum`` member taken from a value of another type that converts to it."""
    if _same(literal, value):
        return value
    if isinstance(literal, str):
        result = _try_string(value)
    elif isinstance(literal, bool):
        result = _try_boolean(value)
    elif _is_number(literal):
        result = _try_number(value)
    else:
        result = None
    return result[0] if result is not None and _same(result[0], literal) else value


# -- Ajv's primitive coercion by type ----------------------------------------------------------


def _types_of(schema: dict[str, Any]) -> list[str]:
    types = schema.get("type")
    if isinstance(types, str):
        return [types]
    if isinstance(types, list):
        return [t for t in types if isinstance(t, str)]
    return []


def _matches_type(value: Any, name: str) -> bool:
    if name == "number":
        return _is_finite(value)
    if name == "integer":
        return _is_finite(value) and float(value).is_integer()
    if name == "boolean":
        return isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "null":
        return value is None
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    return False


def _coerce_primitive(value: Any, name: str) -> Any:
    if name in ("number", "integer"):
        if value is None:
            return 0
        if isinstance(value, str) and value.strip(_JS_SPACE) != "":
            parsed = js_number(value)
            if math.isfinite(parsed) and (name == "number" or parsed.is_integer()):
                return _number(parsed)
        if isinstance(value, bool):
            return 1 if value else 0
        return value
    if name == "boolean":
        if value is None:
            return False
        if value == "true" or _same(value, 1):
            return True
        if value == "false" or _same(value, 0):
            return False
        return value
    if name == "string":
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if _is_number(value):
            return js_number_to_string(value)
        return value
    if name == "null":
        return None if value == "" or _same(value, 0) or value is False else value
    return value


# -- Walking the schema ------------------------------------------------------------------------


def _item_schema(schema: dict[str, Any], index: int) -> Any:
    """The schema of the array item at ``index``: ``prefixItems`` for a tuple's prefix, else
    ``items``; ``None`` when nothing applies."""
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return schema.get("items")


def _map_items(items: list[Any], change: Callable[[Any, int], Any]) -> list[Any]:
    out: list[Any] | None = None
    for index, item in enumerate(items):
        new = change(item, index)
        if new is item:
            continue
        if out is None:
            out = list(items)
        out[index] = new
    return items if out is None else out


def _patterns(schema: dict[str, Any]) -> list[tuple[re.Pattern[str] | None, Any]]:
    patterns = schema.get("patternProperties")
    if not _is_schema(patterns):
        return []
    out: list[tuple[re.Pattern[str] | None, Any]] = []
    for pattern, sub in patterns.items():
        try:
            out.append((re.compile(pattern), sub))
        except re.error:
            out.append((None, sub))
    return out


def _pattern_matches(pattern: re.Pattern[str] | None, key: str) -> bool:
    return pattern is not None and pattern.search(key) is not None


def _members(schema: dict[str, Any]) -> tuple[dict[str, Any], list[Any], Any]:
    """``(properties, patterns, additional)`` of an object schema: the ``properties`` (``{}``
    when absent), the compiled ``patternProperties``, the ``additionalProperties`` schema
    (``None`` unless it is a schema object)."""
    found = schema.get("properties")
    properties: dict[str, Any] = found if _is_schema(found) else {}
    additional = schema.get("additionalProperties")
    return properties, _patterns(schema), additional if _is_schema(additional) else None


class _CopyOnWrite:
    """An object changed key by key: copied on the first change, ``value`` itself when nothing
    changes (pi-schema's copy-on-write)."""

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value
        self.copy: dict[str, Any] | None = None

    @property
    def current(self) -> dict[str, Any]:
        return self.value if self.copy is None else self.copy

    def put(self, key: str, new: Any) -> None:
        if new is self.current[key]:
            return
        if self.copy is None:
            self.copy = dict(self.value)
        self.copy[key] = new

    def delete(self, key: str) -> None:
        if self.copy is None:
            self.copy = dict(self.value)
        del self.copy[key]

    def put_unlisted(
        self,
        properties: dict[str, Any],
        patterns: list[Any],
        additional: Any,
        convert: Callable[[Any, Any], Any],
    ) -> None:
        """``convert(value, schema)`` on every remaining key by the schemas of the
        ``patternProperties`` it matches (each in turn), else by ``additionalProperties``."""
        if not patterns and additional is None:
            return
        for key in list(self.value):
            if key not in self.current:
                continue
            matched = key in properties
            for pattern, sub in patterns:
                if _pattern_matches(pattern, key):
                    matched = True
                    self.put(key, convert(self.current[key], sub))
            if not matched and additional is not None:
                self.put(key, convert(self.value[key], additional))


class Coercer:
    """Pi 1.6's three coercion passes for one (normalised) schema; see the module docstring."""

    def __init__(
        self,
        passes: Passes,
        resolve: Resolve | None = None,
        enter: Enter | None = None,
    ) -> None:
        self._passes = passes
        self._resolve = resolve
        self._enter = enter
        self._entered: list[tuple[int, Any]] = []

    def coerce(self, value: Any, schema: Any, scope: Any = None) -> Any:
        """``value`` coerced towards ``schema``: a copy along the changed paths, or ``value``
        itself when nothing changes."""
        without_nulls = self._drop_optional_nulls(value, schema, scope)
        converted = self._convert(schema, scope, without_nulls)
        return self._coerce_types(converted, schema, scope)

    def _passes_node(self, node: Any, scope: Any, value: Any) -> bool:
        try:
            return self._passes(node, scope, value)
        except RecursionError:
            raise
        except Exception:
            return False

    def _scope(self, node: Any, scope: Any) -> Any:
        return self._enter(node, scope) if self._enter is not None and _is_schema(node) else scope

    # -- pass 1: optional nulls ----------------------------------------------------------------

    def _drop_optional_nulls(self, value: Any, schema: Any, scope: Any) -> Any:
        if not _is_schema(schema):
            return value
        scope = self._scope(schema, scope)
        if isinstance(value, list):
            return _map_items(
                value,
                lambda item, i: (
                    item
                    if _item_schema(schema, i) is None
                    else self._drop_optional_nulls(item, _item_schema(schema, i), scope)
                ),
            )
        if not isinstance(value, dict):
            return value
        properties, patterns, additional = _members(schema)
        if not patterns and additional is None and not properties:
            return value
        required = (
            set(schema.get("required") or ()) if isinstance(schema.get("required"), list) else set()
        )
        out = _CopyOnWrite(value)
        for key, sub in properties.items():
            if key not in value:
                continue
            is_ref = _is_schema(sub) and isinstance(sub.get("$ref"), str)
            if (
                value[key] is None
                and key not in required
                and not is_ref
                and not self._passes_node(sub, scope, None)
            ):
                out.delete(key)
                continue
            out.put(key, self._drop_optional_nulls(value[key], sub, scope))
        out.put_unlisted(
            properties,
            patterns,
            additional,
            lambda item, sub: self._drop_optional_nulls(item, sub, scope),
        )
        return out.current

    # -- pass 2: TypeBox's conversions ----------------------------------------------------------

    def _convert(self, node: Any, scope: Any, value: Any) -> Any:
        if not _is_schema(node):
            return value
        scope = self._scope(node, scope)
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref, scope) if self._resolve is not None else None
            if target is None or not _is_schema(target[0]):
                return value
            return self._reenter(target[0], target[1], value)
        return self._convert_node(node, scope, value)

    def _reenter(self, node: Any, scope: Any, value: Any) -> Any:
        """``node`` converted for ``value`` at a re-entry point (a ``$ref``, a wrapped single
        value): unchanged when that pair is already being converted (a recursive schema)."""
        key = id(value) if isinstance(value, dict | list) else (type(value), value)
        for entered_node, entered_value in self._entered:
            if entered_node == id(node) and entered_value == key:
                return value
        self._entered.append((id(node), key))
        try:
            return self._convert(node, scope, value)
        finally:
            self._entered.pop()

    def _convert_node(self, node: dict[str, Any], scope: Any, value: Any) -> Any:
        if "const" in node:
            return _convert_literal(node["const"], value)
        if isinstance(node.get("enum"), list):
            return self._convert_enum(node, node["enum"], scope, value)
        if isinstance(node.get("anyOf"), list):
            return self._convert_union(node, node["anyOf"], scope, value)
        if isinstance(node.get("oneOf"), list):
            return self._convert_union(node, node["oneOf"], scope, value)
        if isinstance(node.get("allOf"), list):
            for member in node["allOf"]:
                value = self._convert(member, scope, value)
            return self._convert_members(node, scope, value)
        kind = node.get("type")
        if kind == "string":
            result = _try_string(value)
        elif kind == "number":
            result = _try_number(value)
        elif kind == "integer":
            result = _try_number(value)
            if result is not None and not isinstance(result[0], int):
                result = (_number(float(math.trunc(result[0]))),)
        elif kind == "boolean":
            result = _try_boolean(value)
        elif kind == "null":
            result = _try_null(value)
        elif kind == "array":
            return self._convert_array(node, scope, value)
        elif kind == "object":
            return self._convert_object(node, scope, value)
        elif kind is None:
            if "properties" in node or "patternProperties" in node:
                return self._convert_object(node, scope, value)
            if "items" in node or "prefixItems" in node:
                return self._convert_array(node, scope, value)
            return value
        else:
            return value
        return value if result is None else result[0]

    def _convert_enum(self, node: dict[str, Any], values: list[Any], scope: Any, value: Any) -> Any:
        if any(_same(member, value) for member in values):
            return value
        for member in values:
            candidate = _convert_literal(member, value)
            if not _same(candidate, value) and self._passes_node(node, scope, candidate):
                return candidate
        return value

    def _convert_union(
        self, node: dict[str, Any], branches: list[Any], scope: Any, value: Any
    ) -> Any:
        if any(self._passes_node(branch, scope, value) for branch in branches):
            return self._convert_members(node, scope, value)
        for branch in branches:
            candidate = self._convert_members(node, scope, self._convert(branch, scope, value))
            if self._passes_node(node, scope, candidate):
                return candidate
        return self._convert_members(node, scope, value)

    def _convert_members(self, node: dict[str, Any], scope: Any, value: Any) -> Any:
        declares = any(
            k in node for k in ("properties", "patternProperties", "additionalProperties")
        )
        return self._convert_object(node, scope, value) if declares else value

    def _convert_array(self, node: dict[str, Any], scope: Any, value: Any) -> Any:
        prefix = node.get("prefixItems")
        if isinstance(prefix, list):
            if not isinstance(value, list):
                return value  # a tuple never wraps a single value
            rest = node.get("items")
            return _map_items(
                value,
                lambda item, i: (
                    self._convert(prefix[i], scope, item)
                    if i < len(prefix)
                    else item
                    if rest is None
                    else self._convert(rest, scope, item)
                ),
            )
        items = node.get("items")
        if isinstance(value, list):
            if items is None:
                return value
            return _map_items(value, lambda item, _i: self._convert(items, scope, item))
        return [self._reenter(items, scope, value) if _is_schema(items) else value]

    def _convert_object(self, node: dict[str, Any], scope: Any, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        properties, patterns, additional = _members(node)
        out = _CopyOnWrite(value)
        for key, original in value.items():
            new = original
            matched = key in properties
            if matched:
                new = self._convert(properties[key], scope, new)
            for pattern, sub in patterns:
                if _pattern_matches(pattern, key):
                    matched = True
                    new = self._convert(sub, scope, new)
            if not matched and additional is not None:
                new = self._convert(additional, scope, new)
            out.put(key, new)
        return out.current

    # -- pass 3: primitive coercion by type ----------------------------------------------------

    def _coerce_types(self, value: Any, schema: Any, scope: Any) -> Any:
        if not _is_schema(schema):
            return value
        scope = self._scope(schema, scope)
        new = value
        members = schema.get("allOf")
        for member in members if isinstance(members, list) else ():
            new = self._coerce_types(new, member, scope)
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                new = self._coerce_union(new, schema[key], scope)
        types = _types_of(schema)
        matches_member = len(types) > 1 and any(_matches_type(new, t) for t in types)
        if types and not matches_member:
            for name in types:
                candidate = _coerce_primitive(new, name)
                if not _same(candidate, new):
                    new = candidate
                    break
        if "object" in types and isinstance(new, dict):
            new = self._coerce_properties(new, schema, scope)
        if "array" in types and isinstance(new, list):
            new = _map_items(
                new,
                lambda item, i: (
                    self._coerce_types(item, _item_schema(schema, i), scope)
                    if _is_schema(_item_schema(schema, i))
                    else item
                ),
            )
        return new

    def _coerce_union(self, value: Any, branches: list[Any], scope: Any) -> Any:
        if any(self._passes_node(branch, scope, value) for branch in branches):
            return value
        for branch in branches:
            coerced = self._coerce_types(value, branch, scope)
            if self._passes_node(branch, scope, coerced):
                return coerced
        return value

    def _coerce_properties(self, value: dict[str, Any], schema: dict[str, Any], scope: Any) -> Any:
        properties, patterns, additional = _members(schema)
        out = _CopyOnWrite(value)
        for key, sub in properties.items():
            if key in value:
                out.put(key, self._coerce_types(value[key], sub, scope))
        out.put_unlisted(
            properties, patterns, additional, lambda item, sub: self._coerce_types(item, sub, scope)
        )
        return out.current


__all__ = ["Coercer", "js_number"]
