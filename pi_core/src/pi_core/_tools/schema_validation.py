"""The ``jsonschema`` side of argument validation (:mod:`pi_core._tools.validation`): the
validator class (which only says whether a value is valid), Pi 1.6's coercion for any schema
(:mod:`pi_core._tools.coercion`, with ``$ref`` resolved by ``referencing``), and Pi 1.6's
explainer, which writes the error lines.

validation imports this module only when it needs it: to check and compile
a schema outside the flat subset it validates by hand (``$ref``, unions, formats, bounds...), and
to write the error lines of arguments that do not match. So a session whose tools have flat
schemas (the built-in ones) and whose calls are valid never imports ``jsonschema`` and
``referencing`` (about a tenth of ``pi``'s start-up).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing
import referencing.exceptions
import referencing.jsonschema

from pi_core._errors import ToolError
from pi_core._tools.coercion import Coercer
from pi_core._tools.validation_common import (
    _FALSE_SCHEMA,
    ToolArgumentsError,
    _Compiled,
    _copy_json,
    _json_key,
    _list,
    _Resolver,
    js_number_to_string,
    json_stringify,
)

# ----------------------------------------------------------------------------------------------
# The jsonschema validator class
# ----------------------------------------------------------------------------------------------


def _kw_false_schema(
    validator: Any, value: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.exceptions.ValidationError]:
    yield jsonschema.exceptions.ValidationError("no value is allowed here")


def _is_json_number(checker: Any, instance: Any) -> bool:
    """A finite number: ``inf`` (JSON ``1e400``) and NaN are no numbers to pi-schema
    (``expected number, got Infinity``)."""
    return _BASE.TYPE_CHECKER.is_type(instance, "number") and math.isfinite(instance)


_BASE = jsonschema.Draft202012Validator
_PiValidator: Any = jsonschema.validators.create(
    meta_schema=_BASE.META_SCHEMA,
    validators={**_BASE.VALIDATORS, _FALSE_SCHEMA: _kw_false_schema},
    type_checker=_BASE.TYPE_CHECKER.redefine("number", _is_json_number),
    format_checker=_BASE.FORMAT_CHECKER,
    id_of=referencing.jsonschema.DRAFT202012.id_of,
)


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
# Pi 1.6's coercion, for any schema
# ----------------------------------------------------------------------------------------------


class _Checks:
    """Validity of a value under a subschema, and ``$ref`` and ``$id`` resolution, for one
    compiled schema: what :class:`~pi_core._tools.coercion.Coercer` and the explainer ask."""

    def __init__(self, compiled: _Compiled) -> None:
        self.validator = compiled.validator

    def is_valid(self, value: Any, schema: Any, resolver: _Resolver) -> bool:
        for _error in self.validator.descend(value, schema, resolver=resolver):
            return False
        return True

    def passes(self, node: Any, resolver: _Resolver, value: Any) -> bool:
        return self.is_valid(value, node, resolver)

    def is_type(self, value: Any, name: Any) -> bool:
        try:
            return bool(self.validator.is_type(value, name))
        except jsonschema.exceptions.UnknownType:
            return False

    @staticmethod
    def resolve(ref: str, resolver: _Resolver) -> tuple[Any, _Resolver] | None:
        try:
            resolved = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return None  # validation reports it
        return resolved.contents, resolved.resolver

    @staticmethod
    def enter(node: Any, resolver: _Resolver) -> _Resolver:
        if isinstance(node, dict) and "$id" in node:
            resource = referencing.jsonschema.DRAFT202012.create_resource(node)
            return resolver.in_subresource(resource)
        return resolver

    def coercer(self) -> Coercer:
        return Coercer(self.passes, self.resolve, self.enter)


# ----------------------------------------------------------------------------------------------
# Pi 1.6 messages (pi-schema's explainer)
# ----------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    pi-schema's words (``missing``, ``expected string, got integer``, ``unknown field``)."""

    def __init__(self, checks: _Checks, root: _Resolver) -> None:
        self.checks = checks
        self.root = root
        self.errors: list[tuple[_PathParts, str]] = []

    def ok(self, node: Any, value: Any, resolver: _Resolver) -> bool:
        return self.checks.is_valid(value, node, resolver)

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
            if not any(self.checks.is_type(value, name) for name in names):
                push((path, f"expected {' or '.join(map(str, names))}, got {_js_type_name(value)}"))
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
            if name in value:
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
        # A tagged union reports the branch its tag selects
        resolved = [self._target(branch, resolver) for branch in branches]
        tag = _tag_of(resolved)
        if tag is not None and isinstance(value, dict):
            key, values = tag
            matching = [i for i, v in enumerate(values) if _same_json(v, value.get(key, _ABSENT))]
            if not matching:
                self.errors.append(((*path, key), f"expected one of {_list_values(values)}"))
            else:
                self.walk(branches[matching[0]], value, path, resolver)
            return
        # else the branch that declares most of the object's keys, then the one whose first
        # error is deepest
        best: tuple[int, int, list[tuple[_PathParts, str]]] | None = None
        for branch, target in zip(branches, resolved, strict=True):
            inner = _Explainer(self.checks, self.root)
            inner.walk(branch, value, path, resolver)
            if not inner.errors:
                continue
            declared = 0
            if isinstance(value, dict) and isinstance(target, dict):
                properties = target.get("properties")
                if isinstance(properties, dict):
                    declared = sum(1 for name in value if name in properties)
            depth = len(_pointer(inner.errors[0][0]))
            if best is None or declared > best[0] or (declared == best[0] and depth > best[1]):
                best = (declared, depth, inner.errors)
        if best is None:
            self.errors.append((path, "matches no alternative"))
        else:
            self.errors.extend(best[2])

    def _target(self, branch: Any, resolver: _Resolver) -> Any:
        """A union branch, or what its ``$ref`` names."""
        if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
            found = _Checks.resolve(branch["$ref"], _Checks.enter(branch, resolver))
            return found[0] if found is not None else None
        return branch


_ABSENT = object()


def _same_json(a: Any, b: Any) -> bool:
    """JavaScript's ``===`` between a primitive tag value and a property value."""
    if b is _ABSENT:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _tag_of(branches: list[Any]) -> tuple[str, list[Any]] | None:
    """pi-schema's ``tagOf``: the first property of the first branch whose ``const`` is a
    distinct primitive in every branch."""
    first = branches[0] if branches else None
    if not isinstance(first, dict) or not isinstance(first.get("properties"), dict):
        return None
    for key in first["properties"]:
        values = []
        for branch in branches:
            properties = branch.get("properties") if isinstance(branch, dict) else None
            tag = properties.get(key) if isinstance(properties, dict) else None
            values.append(tag["const"] if isinstance(tag, dict) and "const" in tag else _ABSENT)
        if all(v is not _ABSENT and not isinstance(v, dict | list) for v in values):
            distinct = {(type(v) is bool, v) for v in values}
            if len(distinct) == len(values):
                return key, values
    return None


def _pointer(path: _PathParts) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _pi16_errors(checks: _Checks, compiled: _Compiled, value: Any) -> list[tuple[str, str]]:
    """The errors pi-schema reports for ``value`` (paths as pi-ai prints them: the keys joined
    by ``.``, ``root`` for the top); at least one (``root: invalid``)."""
    explainer = _Explainer(checks, compiled.resolver)
    explainer.walk(compiled.schema, value, (), compiled.resolver)
    lines = [(".".join(map(_json_key, path)) or "root", text) for path, text in explainer.errors]
    return lines or [("root", "invalid")]


# ----------------------------------------------------------------------------------------------
# Validation with jsonschema
# ----------------------------------------------------------------------------------------------


def validate(compiled: _Compiled, name: str, arguments: Any, *, coerce: bool = True) -> Any:
    """:func:`~pi_core._tools.validation.validate_tool_arguments` with jsonschema, for a
    ``compiled`` entry whose validator is built: a copy of ``arguments`` coerced as Pi 1.6
    coerces (unless ``coerce`` is false), or :class:`ToolArgumentsError` with pi-schema's
    lines for it."""
    checks = _Checks(compiled)
    try:
        value = _copy_json(arguments)
        if coerce:
            value = checks.coercer().coerce(value, compiled.schema, compiled.resolver)
        if compiled.validator.is_valid(value):
            return value
        lines = _pi16_errors(checks, compiled, value)
    except referencing.exceptions.Unresolvable as exc:
        raise ToolError(
            f'Invalid parameters schema for tool "{name}": cannot resolve {exc}'
        ) from None
    except RecursionError:
        raise ToolArgumentsError(
            name, [("root", "too deeply nested to validate")], arguments
        ) from None
    raise ToolArgumentsError(name, lines, arguments)


__all__ = ["build", "check_schema", "validate"]
