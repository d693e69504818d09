"""The ``jsonschema`` side of argument validation (:mod:`pi_core._tools.validation`): the
validator class with TypeBox's keyword order and texts, the schema-guided coercion for any
schema, and Pi 1.6's explainer.

validation imports this module only when it needs it: to check and compile
a schema outside the flat subset it validates by hand (``$ref``, unions, formats, bounds...), and
to write the error lines of arguments that do not match. So a session whose tools have flat
schemas (the built-in ones) and whose calls are valid never imports ``jsonschema`` and
``referencing`` (about a tenth of ``pi``'s start-up).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing
import referencing.exceptions
import referencing.jsonschema

from pi_core._errors import ToolError
from pi_core._tools.validation_common import (
    _FALSE_SCHEMA,
    _MISSING,
    MAX_ERRORS,
    ToolArgumentsError,
    _Compiled,
    _copy_json,
    _json_key,
    _list,
    _parse_number,
    _Resolver,
    js_number_to_string,
    json_stringify,
)

# ----------------------------------------------------------------------------------------------
# The jsonschema validator class: TypeBox keyword order and TypeBox-shaped errors
# ----------------------------------------------------------------------------------------------

_TYPEBOX_ORDER = (
    _FALSE_SCHEMA,
    "type",
    # objects
    "required",
    "additionalProperties",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    # arrays
    "contains",
    "items",
    "minItems",
    "maxItems",
    "prefixItems",
    "uniqueItems",
    # strings
    "minLength",
    "maxLength",
    "format",
    "pattern",
    # numbers
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minimum",
    "maximum",
    "multipleOf",
    # any type
    "$ref",
    "$dynamicRef",
    "const",
    "enum",
    "if",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_RANK = {keyword: rank for rank, keyword in enumerate(_TYPEBOX_ORDER)}


def _typebox_order(schema: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """The keywords of ``schema`` in the order TypeBox checks them (``ErrorSchema``)."""
    return sorted(schema.items(), key=lambda item: _RANK.get(item[0], len(_RANK)))


class _Line(jsonschema.exceptions.ValidationError):
    """An error whose ``message`` is already Pi's text. ``required_name`` is set for a
    ``required`` line: pi-ai prints it after the object's path."""

    required_name: str | None = None


def _required_line(missing: list[str]) -> _Line:
    line = _Line(f"must have required properties {', '.join(missing)}")
    line.required_name = missing[0]
    return line


def _kw_false_schema(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[_Line]:
    yield _Line("schema is false")


def _kw_required(validator: Any, required: Any, instance: Any, schema: Any) -> Iterator[_Line]:
    if validator.is_type(instance, "object"):
        missing = [name for name in required if name not in instance]
        if missing:
            yield _required_line(missing)


def _extra_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [
        key
        for key in instance
        if key not in properties
        and not (isinstance(key, str) and any(re.search(p, key) for p in patterns))
    ]


def _kw_additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    failed = False
    for key in _extra_keys(instance, schema):  # ``false`` is {_FALSE_SCHEMA: true} by now
        errors = list(validator.descend(instance[key], additional, path=key))
        failed = failed or bool(errors)
        yield from errors
    if failed:
        yield _Line("must not have additional properties")


def _kw_property_names(
    validator: Any, names_schema: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    invalid = []
    for key in instance:
        errors = list(validator.descend(key, names_schema, path=key))
        if errors:
            invalid.append(str(key))
            yield from errors
    if invalid:
        yield _Line(f"property names {', '.join(invalid)} are invalid")


def _kw_dependent_required(
    validator: Any, dependent: Any, instance: Any, schema: Any
) -> Iterator[_Line]:
    if not validator.is_type(instance, "object"):
        return
    for name, dependencies in dependent.items():
        if name in instance:
            for dependency in dependencies:
                if dependency not in instance:
                    yield _Line(
                        f"must have properties {', '.join(dependencies)} "
                        f"when property {name} is present"
                    )


def _kw_any_of(
    validator: Any, members: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    collected: list[jsonschema.exceptions.ValidationError] = []
    for index, member in enumerate(members):
        errors = list(validator.descend(instance, member, schema_path=index))
        if not errors:
            return
        collected.extend(errors)
    yield from collected
    yield _Line("must match a schema in anyOf")


def _kw_one_of(
    validator: Any, members: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    collected: list[jsonschema.exceptions.ValidationError] = []
    passing = 0
    for index, member in enumerate(members):
        errors = list(validator.descend(instance, member, schema_path=index))
        collected.extend(errors)
        passing += not errors
    if passing == 1:
        return
    if passing == 0:
        yield from collected
    yield _Line("must match exactly one schema in oneOf")


def _kw_if(
    validator: Any, if_schema: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    if validator.evolve(schema=if_schema).is_valid(instance):
        if "then" in schema:
            for _error in validator.descend(instance, schema["then"], schema_path="then"):
                yield _Line('must match "then" schema')
                return
    elif "else" in schema:
        errors = list(validator.descend(instance, schema["else"], schema_path="else"))
        if errors:
            yield from errors
            yield _Line('must match "else" schema')


_BASE = jsonschema.Draft202012Validator
_PiValidator: Any = jsonschema.validators.create(
    meta_schema=_BASE.META_SCHEMA,
    validators={
        **_BASE.VALIDATORS,
        _FALSE_SCHEMA: _kw_false_schema,
        "required": _kw_required,
        "additionalProperties": _kw_additional_properties,
        "propertyNames": _kw_property_names,
        "dependentRequired": _kw_dependent_required,
        "anyOf": _kw_any_of,
        "oneOf": _kw_one_of,
        "if": _kw_if,
    },
    type_checker=_BASE.TYPE_CHECKER,
    format_checker=_BASE.FORMAT_CHECKER,
    id_of=referencing.jsonschema.DRAFT202012.id_of,
    applicable_validators=_typebox_order,
)

_COMPARISONS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
_COUNTED = {
    "minLength": ("fewer", "characters"),
    "maxLength": ("more", "characters"),
    "minItems": ("fewer", "items"),
    "maxItems": ("more", "items"),
    "minProperties": ("fewer", "properties"),
    "maxProperties": ("more", "properties"),
}
_FIXED = {
    "enum": "must be equal to one of the allowed values",
    "const": "must be equal to constant",
    "uniqueItems": "must not have duplicate items",
    "contains": "must contain at least 1 valid item",
    "not": "must not be valid",
    "unevaluatedItems": "must not have unevaluated items",
    "unevaluatedProperties": "must not have unevaluated properties",
    None: "schema is false",  # a ``false`` subschema _normalise() could not see
}


def _message(error: jsonschema.exceptions.ValidationError) -> str:
    """The TypeBox text of a jsonschema error (keywords not overridden above)."""
    if isinstance(error, _Line):
        return error.message
    keyword = error.validator
    value = error.validator_value
    if keyword == "type":
        if isinstance(value, list):
            return f"must be either {' or '.join(map(str, value))}"
        return f"must be {value}"
    if keyword in _COMPARISONS:
        return f"must be {_COMPARISONS[str(keyword)]} {js_number_to_string(value)}"
    if keyword == "multipleOf":
        return f"must be multiple of {js_number_to_string(value)}"
    if keyword in _COUNTED:
        side, unit = _COUNTED[str(keyword)]
        return f"must not have {side} than {js_number_to_string(value)} {unit}"
    if keyword == "pattern":
        return f'must match pattern "{value}"'
    if keyword == "format":
        return f'must match format "{value}"'
    fixed = _FIXED.get(keyword)
    return fixed if fixed is not None else error.message


def _encode_fragment(part: Any) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _error_line(error: jsonschema.exceptions.ValidationError) -> tuple[str, str]:
    """``(path, message)`` of one error, as pi-ai's ``formatValidationPath`` writes the path."""
    base = ".".join(_encode_fragment(part) for part in error.absolute_path)
    name = getattr(error, "required_name", None)
    if name:
        return (f"{base}.{name}" if base else name), _message(error)
    return (base or "root"), _message(error)


# ----------------------------------------------------------------------------------------------
# Compiling a schema
# ----------------------------------------------------------------------------------------------


def check_schema(tool_name: str, schema: Any) -> None:
    """Raise :class:`~pi_core._errors.ToolError` when the normalised ``schema`` is not a valid
    Draft 2020-12 schema: ``Invalid parameters schema for tool "NAME": MESSAGE (at PATH)``."""
    try:
        _BASE.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "root"
        raise ToolError(
            f'Invalid parameters schema for tool "{tool_name}": {exc.message} (at {where})'
        ) from None


def build(schema: Any) -> tuple[Any, _Resolver]:
    """The validator and the ``$ref`` resolver of a checked, normalised ``schema``."""
    validator = _PiValidator(schema, registry=referencing.Registry())
    resource = referencing.jsonschema.DRAFT202012.create_resource(schema)
    resolver = referencing.Registry().resolver_with_root(resource)
    return validator, resolver


# ----------------------------------------------------------------------------------------------
# Lossless coercion, for any schema
# ----------------------------------------------------------------------------------------------


class _Coercer:
    """Applies the lossless conversions to a value in place, guided by a (normalised) schema."""

    def __init__(self, compiled: _Compiled) -> None:
        self.validator = compiled.validator
        self.active: set[tuple[int, int]] = set()

    def is_valid(self, value: Any, schema: Any, resolver: _Resolver) -> bool:
        for _error in self.validator.descend(value, schema, resolver=resolver):
            return False
        return True

    def coerce(self, value: Any, schema: Any, resolver: _Resolver) -> Any:
        if not isinstance(schema, dict):
            return value
        guard = (id(schema), id(value))
        if guard in self.active:  # a $ref loop that consumes no part of the value
            return value
        self.active.add(guard)
        try:
            return self._coerce(value, schema, resolver)
        finally:
            self.active.discard(guard)

    def _coerce(self, value: Any, schema: dict[str, Any], resolver: _Resolver) -> Any:
        if "$id" in schema:
            resource = referencing.jsonschema.DRAFT202012.create_resource(schema)
            resolver = resolver.in_subresource(resource)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable:
                pass  # validation reports it
            else:
                value = self.coerce(value, resolved.contents, resolved.resolver)
        for member in _list(schema.get("allOf")):
            value = self.coerce(value, member, resolver)
        for key in ("anyOf", "oneOf"):
            members = _list(schema.get(key))
            if members:
                value = self._coerce_union(value, members, resolver)
        types = schema.get("type")
        type_names = [types] if isinstance(types, str) else _list(types)
        if type_names and not any(self._is_type(value, name) for name in type_names):
            for name in type_names:
                converted = self._convert(value, name, schema, resolver)
                if converted is not _MISSING:
                    value = converted
                    break
        if isinstance(value, dict):
            self._coerce_object(value, schema, resolver)
        elif isinstance(value, list):
            self._coerce_array(value, schema, resolver)
        return value

    def _is_type(self, value: Any, name: Any) -> bool:
        try:
            return bool(self.validator.is_type(value, name))
        except jsonschema.exceptions.UnknownType:
            return False

    def _coerce_union(self, value: Any, members: list[Any], resolver: _Resolver) -> Any:
        if any(self.is_valid(value, member, resolver) for member in members):
            return value
        for member in members:
            candidate = self.coerce(_copy_json(value), member, resolver)
            if self.is_valid(candidate, member, resolver):
                return candidate
        return value

    def _convert(
        self,
        value: Any,
        type_name: str,
        schema: dict[str, Any],
        resolver: _Resolver,
    ) -> Any:
        if type_name in ("number", "integer") and isinstance(value, str):
            number = _parse_number(value, integer=type_name == "integer")
            return _MISSING if number is None else number
        if type_name == "boolean" and value in ("true", "false") and isinstance(value, str):
            return value == "true"
        if (
            type_name == "array"
            and isinstance(value, dict)
            and self._accepts_objects(schema.get("items"), resolver, depth=0)
        ):
            return [value]
        return _MISSING

    def _accepts_objects(self, schema: Any, resolver: _Resolver, depth: int) -> bool:
        """Whether ``schema`` (an array's ``items``) describes objects."""
        if not isinstance(schema, dict) or depth > 32:
            return False
        types = schema.get("type")
        if types is not None:
            if "object" in ([types] if isinstance(types, str) else _list(types)):
                return True
        elif any(key in schema for key in ("properties", "required", "additionalProperties")):
            return True
        ref = schema.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable:
                return False
            if self._accepts_objects(resolved.contents, resolved.resolver, depth + 1):
                return True
        return any(
            self._accepts_objects(member, resolver, depth + 1)
            for key in ("anyOf", "oneOf", "allOf")
            for member in _list(schema.get(key))
        )

    def _coerce_object(
        self, value: dict[Any, Any], schema: dict[str, Any], resolver: _Resolver
    ) -> None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        for key, sub in properties.items():
            if key in value:
                value[key] = self.coerce(value[key], sub, resolver)
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        for pattern, sub in patterns.items():
            for key in value:
                if isinstance(key, str) and re.search(pattern, key):
                    value[key] = self.coerce(value[key], sub, resolver)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                if key not in properties and not (
                    isinstance(key, str) and any(re.search(p, key) for p in patterns)
                ):
                    value[key] = self.coerce(value[key], additional, resolver)

    def _coerce_array(self, value: list[Any], schema: dict[str, Any], resolver: _Resolver) -> None:
        prefix = _list(schema.get("prefixItems"))
        for index, sub in enumerate(prefix[: len(value)]):
            value[index] = self.coerce(value[index], sub, resolver)
        items = schema.get("items")
        if isinstance(items, dict):
            for index in range(len(prefix), len(value)):
                value[index] = self.coerce(value[index], items, resolver)


# ----------------------------------------------------------------------------------------------
# Pi 1.6 messages (pi-schema's explainer) and the line between its errors and refused coercions
# ----------------------------------------------------------------------------------------------

_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _js_number_is_finite(text: str) -> bool:
    """Whether JavaScript's ``Number(text)`` is finite (``""`` and blanks are 0; hex, octal and
    binary literals count; ``Infinity`` does not)."""
    stripped = text.strip(_JS_SPACE)
    if not stripped or _JS_RADIX.fullmatch(stripped):
        return True
    return bool(_JS_DECIMAL.fullmatch(stripped)) and math.isfinite(float(stripped))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pi16_converts(value: Any, type_name: Any) -> bool:
    """Whether Pi 1.6's coercion (pi-schema: TypeBox's ``Value.Convert`` rules, then Ajv-style
    primitive coercion) turns ``value`` into a ``type_name`` value that lossless coercion does
    not: a number or boolean into a string, ``null`` into ``0``/``false``/``"null"``, a blank or
    ``"0x10"`` string into a number, any single value into a one-item array."""
    finite = _is_number(value) and math.isfinite(value)
    if type_name == "string":
        return value is None or isinstance(value, bool) or finite
    if type_name in ("number", "integer"):
        if value is None or isinstance(value, bool) or finite:
            return True
        return isinstance(value, str) and (
            _js_number_is_finite(value) or value.lower() in ("true", "false")
        )
    if type_name == "boolean":
        if value is None or (finite and value in (0, 1)):
            return True
        return isinstance(value, str) and (
            value.lower() in ("true", "false") or value in ("0", "1")
        )
    if type_name == "null":
        if value is False or (finite and value == 0):
            return True
        return isinstance(value, str) and value.lower() in ("undefined", "null", "", "0")
    return type_name == "array" and not isinstance(value, list)


def _js_type_name(value: Any) -> str:
    """pi-schema's name of a value's type in ``expected X, got Y``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        if not math.isfinite(value):
            return js_number_to_string(value)
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _compact(value: Any) -> str:
    return json_stringify(value, indent=0)


def _list_values(values: list[Any]) -> str:
    if len(values) <= 20:
        return _compact(values)
    return f"{_compact(values[:20])[:-1]}, ... and {len(values) - 20} more]"


_PathParts = tuple[Any, ...]


class _Explainer:
    """pi-schema's ``Explainer``: each failing keyword reported at the value it failed on, with
    pi-schema's words (``missing``, ``expected string, got integer``, ``unknown field``).

    A type mismatch that Pi 1.6 would have coerced away (:func:`_pi16_converts`), and a ``null``
    in an optional property (which Pi 1.6 drops), is not an error of its kind: it is counted in
    ``refused`` (lossless coercion refuses it) and not explained further.
    """

    def __init__(self, coercer: _Coercer, root: _Resolver) -> None:
        self.coercer = coercer
        self.root = root
        self.errors: list[tuple[_PathParts, str]] = []
        self.refused = 0

    def ok(self, node: Any, value: Any, resolver: _Resolver) -> bool:
        return self.coercer.is_valid(value, node, resolver)

    def walk(self, node: Any, value: Any, path: _PathParts, resolver: _Resolver) -> None:
        if not isinstance(node, dict) or self.ok(node, value, resolver):
            return
        if node.get(_FALSE_SCHEMA):
            self.errors.append((path, "no value is allowed here"))
            return
        if "$id" in node:
            resource = referencing.jsonschema.DRAFT202012.create_resource(node)
            resolver = resolver.in_subresource(resource)
        push = self.errors.append
        start = len(self.errors)
        types = node.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else _list(types)
            if not any(self.coercer._is_type(value, name) for name in names):
                if any(_pi16_converts(value, name) for name in names):
                    self.refused += 1
                else:
                    push(
                        (
                            path,
                            f"expected {' or '.join(map(str, names))}, got {_js_type_name(value)}",
                        )
                    )
                return
        if isinstance(node.get("enum"), list) and not self.ok(
            {"enum": node["enum"]}, value, resolver
        ):
            push((path, f"expected one of {_list_values(node['enum'])}"))
        if "const" in node and not self.ok({"const": node["const"]}, value, resolver):
            push((path, f"expected {_compact(node['const'])}"))
        if isinstance(value, str):
            self._walk_string(node, value, path)
        elif _is_number(value):
            self._walk_number(node, value, path)
        elif isinstance(value, dict):
            self._walk_object(node, value, path, resolver)
        elif isinstance(value, list):
            self._walk_array(node, value, path, resolver)
        for member in _list(node.get("allOf")):
            self.walk(member, value, path, resolver)
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                self._walk_union(node[key], value, path, resolver, exactly_one=key == "oneOf")
        if "not" in node and self.ok(node["not"], value, resolver):
            push((path, "must not match the schema in not"))
        if "if" in node:
            branch = node.get("then") if self.ok(node["if"], value, resolver) else node.get("else")
            if branch is not None:
                self.walk(branch, value, path, resolver)
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable:
                push((path, f"unresolved reference {ref}"))
            else:
                self.walk(resolved.contents, value, path, resolved.resolver)
        if len(self.errors) == start and node.get("unevaluatedProperties") is not None:
            self._walk_unevaluated(node, value, path, resolver)

    def _walk_unevaluated(
        self, node: dict[str, Any], value: Any, path: _PathParts, resolver: _Resolver
    ) -> None:
        """``unevaluatedProperties`` over the properties this node and its ``allOf`` members
        declare (a simplification of JSON Schema's annotation collection)."""
        if not isinstance(value, dict):
            return
        declared: set[str] = set()
        patterns: list[str] = []
        for member in [node, *_list(node.get("allOf"))]:
            if isinstance(member, dict):
                properties = member.get("properties")
                declared.update(properties if isinstance(properties, dict) else ())
                pattern_map = member.get("patternProperties")
                patterns.extend(pattern_map if isinstance(pattern_map, dict) else ())
                if member.get("additionalProperties") is not None:
                    return
        rest = node["unevaluatedProperties"]
        for name in value:
            if name in declared or (
                isinstance(name, str) and any(re.search(p, name) for p in patterns)
            ):
                continue
            if isinstance(rest, dict) and rest.get(_FALSE_SCHEMA):
                self.errors.append(((*path, name), "unknown field"))
            else:
                self.walk(rest, value[name], (*path, name), resolver)

    def _walk_string(self, node: dict[str, Any], value: str, path: _PathParts) -> None:
        length = len(value)
        if _is_number(node.get("minLength")) and length < node["minLength"]:
            self.errors.append(
                (path, f"expected at least {js_number_to_string(node['minLength'])} characters")
            )
        if _is_number(node.get("maxLength")) and length > node["maxLength"]:
            self.errors.append(
                (path, f"expected at most {js_number_to_string(node['maxLength'])} characters")
            )
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not self.ok({"pattern": pattern}, value, self.root):
            self.errors.append((path, f"expected to match {pattern}"))

    def _walk_number(self, node: dict[str, Any], value: float, path: _PathParts) -> None:
        checks = (
            ("minimum", ">=", lambda bound: value < bound),
            ("maximum", "<=", lambda bound: value > bound),
            ("exclusiveMinimum", ">", lambda bound: value <= bound),
            ("exclusiveMaximum", "<", lambda bound: value >= bound),
        )
        for keyword, sign, fails in checks:
            bound: Any = node.get(keyword)
            if _is_number(bound) and fails(bound):
                self.errors.append((path, f"expected {sign} {js_number_to_string(bound)}"))
        step: Any = node.get("multipleOf")
        if _is_number(step) and not self.ok({"multipleOf": step}, value, self.root):
            self.errors.append((path, f"expected a multiple of {js_number_to_string(step)}"))

    def _walk_object(
        self, node: dict[str, Any], value: dict[str, Any], path: _PathParts, resolver: _Resolver
    ) -> None:
        push = self.errors.append
        properties = node.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = [name for name in _list(node.get("required")) if isinstance(name, str)]
        for name in required:
            if name not in value:
                push(((*path, name), "missing"))
        for name, sub in properties.items():
            if name not in value:
                continue
            if (
                value[name] is None
                and name not in required
                and not (isinstance(sub, dict) and "$ref" in sub)
                and not self.ok(sub, None, resolver)
            ):
                self.refused += 1  # Pi 1.6 drops an optional null, as if omitted
                continue
            self.walk(sub, value[name], (*path, name), resolver)
        patterns = node.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        additional = node.get("additionalProperties")
        for name in value:
            matched = name in properties
            for pattern, sub in patterns.items():
                if isinstance(name, str) and re.search(pattern, name):
                    matched = True
                    self.walk(sub, value[name], (*path, name), resolver)
            if not matched and additional is not None:
                if isinstance(additional, dict) and additional.get(_FALSE_SCHEMA):
                    push(((*path, name), "unknown field"))
                else:
                    self.walk(additional, value[name], (*path, name), resolver)
            names = node.get("propertyNames")
            if names is not None and not self.ok(names, name, resolver):
                push(((*path, name), "invalid property name"))
        count = len(value)
        if _is_number(node.get("minProperties")) and count < node["minProperties"]:
            push(
                (path, f"expected at least {js_number_to_string(node['minProperties'])} properties")
            )
        if _is_number(node.get("maxProperties")) and count > node["maxProperties"]:
            push(
                (path, f"expected at most {js_number_to_string(node['maxProperties'])} properties")
            )
        dependent = node.get("dependentRequired")
        for name, needed in (dependent if isinstance(dependent, dict) else {}).items():
            if name in value:
                for other in _list(needed):
                    if other not in value:
                        push(((*path, other), f"required when {name} is present"))
        schemas = node.get("dependentSchemas")
        for name, sub in (schemas if isinstance(schemas, dict) else {}).items():
            if name in value:
                self.walk(sub, value, path, resolver)

    def _walk_array(
        self, node: dict[str, Any], value: list[Any], path: _PathParts, resolver: _Resolver
    ) -> None:
        prefix = _list(node.get("prefixItems"))
        rest = node.get("items")
        for index, item in enumerate(value):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is not None:
                self.walk(sub, item, (*path, index), resolver)
        if _is_number(node.get("minItems")) and len(value) < node["minItems"]:
            self.errors.append(
                (path, f"expected at least {js_number_to_string(node['minItems'])} items")
            )
        if _is_number(node.get("maxItems")) and len(value) > node["maxItems"]:
            self.errors.append(
                (path, f"expected at most {js_number_to_string(node['maxItems'])} items")
            )
        if node.get("uniqueItems") is True and not self.ok({"uniqueItems": True}, value, self.root):
            self.errors.append((path, "expected unique items"))
        if "contains" in node:
            wanted = {k: node[k] for k in ("contains", "minContains", "maxContains") if k in node}
            if not self.ok(wanted, value, resolver):
                low = node.get("minContains", 1)
                high = node.get("maxContains")
                if high is None:
                    text = f"expected at least {low} matching {'item' if low == 1 else 'items'}"
                elif low == 0:
                    text = f"expected at most {high} matching {'item' if high == 1 else 'items'}"
                else:
                    text = f"expected between {low} and {high} matching items"
                self.errors.append((path, text))

    def _walk_union(
        self,
        branches: list[Any],
        value: Any,
        path: _PathParts,
        resolver: _Resolver,
        *,
        exactly_one: bool,
    ) -> None:
        matches = sum(self.ok(branch, value, resolver) for branch in branches)
        if matches == 1 or (not exactly_one and matches > 0):
            return
        if matches > 1:
            self.errors.append((path, "matches more than one alternative"))
            return
        best: tuple[int, int, list[tuple[_PathParts, str]], int] | None = None
        for branch in branches:
            inner = _Explainer(self.coercer, self.root)
            inner.walk(branch, value, path, resolver)
            if not inner.errors:
                if inner.refused:  # Pi 1.6 would have converted the value to this branch
                    self.refused += inner.refused
                    return
                continue
            declared = 0
            if isinstance(value, dict) and isinstance(branch, dict):
                properties = branch.get("properties")
                if isinstance(properties, dict):
                    declared = sum(1 for name in value if name in properties)
            depth = len(_pointer(inner.errors[0][0])) if inner.errors else -1
            if best is None or declared > best[0] or (declared == best[0] and depth > best[1]):
                best = (declared, depth, inner.errors, inner.refused)
        if best is None:
            self.errors.append((path, "matches no alternative"))
        else:
            self.errors.extend(best[2])
            self.refused += best[3]


def _pointer(path: _PathParts) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _pi16_errors(compiled: _Compiled, value: Any) -> tuple[list[tuple[str, str]], int]:
    """The errors pi-schema reports for ``value`` (paths as pi-ai prints them: the keys joined
    by ``.``, ``root`` for the top), and how many mismatches are only refused coercions."""
    explainer = _Explainer(_Coercer(compiled), compiled.resolver)
    explainer.walk(compiled.schema, value, (), compiled.resolver)
    lines = [(".".join(map(_json_key, path)) or "root", text) for path, text in explainer.errors]
    return lines, explainer.refused


# ----------------------------------------------------------------------------------------------
# Validation with jsonschema
# ----------------------------------------------------------------------------------------------


def validate(compiled: _Compiled, name: str, arguments: Any) -> Any:
    """:func:`~pi_core._tools.validation.validate_tool_arguments` with jsonschema, for a
    ``compiled`` entry whose validator is built: the coerced copy of ``arguments``, or
    :class:`ToolArgumentsError` with every line."""
    try:
        coerced = _Coercer(compiled).coerce(
            _copy_json(arguments), compiled.schema, compiled.resolver
        )
        found = itertools.islice(compiled.validator.iter_errors(coerced), MAX_ERRORS)
        errors = [_error_line(error) for error in found]
    except referencing.exceptions.Unresolvable as exc:
        raise ToolError(
            f'Invalid parameters schema for tool "{name}": cannot resolve {exc}'
        ) from None
    except RecursionError:
        raise ToolArgumentsError(
            name, [("root", "too deeply nested to validate")], arguments
        ) from None
    if errors:
        # Errors Pi 1.6 also reports are reported in its words; when the only problems are
        # conversions Pi 1.6 would make and lossless coercion refuses, the TypeBox lines are.
        try:
            pi16_lines, _refused = _pi16_errors(compiled, coerced)
        except RecursionError:
            pi16_lines = []
        raise ToolArgumentsError(name, pi16_lines or errors, arguments)
    return coerced


__all__ = ["build", "check_schema", "validate"]
