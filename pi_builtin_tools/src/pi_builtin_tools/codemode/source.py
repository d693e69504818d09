"""Codemode source format (Pi 1.6.0's ``pi-codemode/dist/source.js``): JavaScript, optionally
preceded by one options line ``// @options: {"max_output_tokens": 2000, "timeout_ms": 30000}``.

:func:`parse_codemode_source` splits the options from the script and raises
:class:`CodemodeSourceError` with Pi's exact texts. The options are JSON parsed as
JavaScript's ``JSON.parse`` would; its error messages (those of V8 in Node 20, which the
reference runs) are reproduced by :func:`json_parse_error`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_builtin_tools.catalog.definitions import CODEMODE_SOURCE_GRAMMAR as CODEMODE_SOURCE_GRAMMAR
from pi_core import parse_json

CODEMODE_OPTIONS_PREFIX = "// @options:"
SUPPORTED_FIELDS = ("max_output_tokens", "timeout_ms")
SUPPORTED_FIELDS_TEXT = "`max_output_tokens` and `timeout_ms`"
MAX_TIMEOUT_MS = 2_147_483_647
"""Largest delay ``setTimeout`` supports, which bounds ``timeout_ms``."""
MAX_SAFE_INTEGER = 2**53 - 1

EMPTY_SOURCE_TEXT = (
    "Expected JavaScript source text (non-empty). Provide JS only, optionally with a first line "
    '`// @options: {"max_output_tokens": 1000}`.'
)
MISPLACED_OPTIONS_TEXT = (
    "The // @options: line must be the first line of the input; found one on line {line}"
)
NOT_AN_OBJECT_TEXT = f"@options must be a JSON object with supported fields {SUPPORTED_FIELDS_TEXT}"
INVALID_JSON_TEXT = (
    "@options must be valid JSON with supported fields " + SUPPORTED_FIELDS_TEXT + ": {error}"
)
UNKNOWN_FIELD_TEXT = "@options only supports " + SUPPORTED_FIELDS_TEXT + "; got `{key}`"
BAD_MAX_OUTPUT_TOKENS_TEXT = (
    "@options field `max_output_tokens` must be a non-negative safe integer"
)
BAD_TIMEOUT_TEXT = f"@options field `timeout_ms` must be a positive integer up to {MAX_TIMEOUT_MS}"
NO_CODE_TEXT = "The @options line must be followed by JavaScript source on subsequent lines"


class CodemodeSourceError(ValueError):
    """Invalid codemode input; the message is the tool's error text."""


@dataclass(frozen=True)
class CodemodeSource:
    """The script (starting at the newline after an options line, so line numbers stay) and
    its options (``None``: not given)."""

    code: str
    max_output_tokens: int | None = None
    timeout_ms: int | None = None


# JavaScript's String.prototype.trim/trimStart whitespace: WhiteSpace and LineTerminator.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _is_safe_integer(value: object) -> bool:
    """``Number.isSafeInteger(value) && value >= 0`` for a value from ``JSON.parse``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        if not value.is_integer():
            return False
        value = int(value)
    return isinstance(value, int) and 0 <= value <= MAX_SAFE_INTEGER


def _parse_options(directive: str) -> tuple[int | None, int | None]:
    if directive == "":
        raise CodemodeSourceError(NOT_AN_OBJECT_TEXT)
    error = json_parse_error(directive)
    if error is not None:
        raise CodemodeSourceError(INVALID_JSON_TEXT.format(error=error))
    value = parse_json(directive)
    if not isinstance(value, dict):
        raise CodemodeSourceError(NOT_AN_OBJECT_TEXT)
    for key in value:
        if key not in SUPPORTED_FIELDS:
            raise CodemodeSourceError(UNKNOWN_FIELD_TEXT.format(key=key))
    max_output_tokens = value.get("max_output_tokens")
    timeout_ms = value.get("timeout_ms")
    if max_output_tokens is not None or "max_output_tokens" in value:
        if not _is_safe_integer(max_output_tokens):
            raise CodemodeSourceError(BAD_MAX_OUTPUT_TOKENS_TEXT)
        max_output_tokens = int(max_output_tokens)  # type: ignore[arg-type]
    if timeout_ms is not None or "timeout_ms" in value:
        if not _is_safe_integer(timeout_ms) or timeout_ms == 0 or timeout_ms > MAX_TIMEOUT_MS:  # type: ignore[operator]
            raise CodemodeSourceError(BAD_TIMEOUT_TEXT)
        timeout_ms = int(timeout_ms)  # type: ignore[arg-type]
    return max_output_tokens, timeout_ms


def parse_codemode_source(source: str) -> CodemodeSource:
    """Split an optional first-line ``// @options: {...}`` from the script (Pi's
    ``parseCodemodeSource``). Raises :class:`CodemodeSourceError` for empty input, invalid
    options, and an options line that is not the first line."""
    if source.strip(_JS_WHITESPACE) == "":
        raise CodemodeSourceError(EMPTY_SOURCE_TEXT)
    lines = source.split("\n")
    for index, line in enumerate(lines):
        if index > 0 and line.lstrip(_JS_WHITESPACE).startswith(CODEMODE_OPTIONS_PREFIX):
            raise CodemodeSourceError(MISPLACED_OPTIONS_TEXT.format(line=index + 1))
    newline = source.find("\n")
    first_line = lines[0].removesuffix("\r")
    trimmed = first_line.lstrip(_JS_WHITESPACE)
    if not trimmed.startswith(CODEMODE_OPTIONS_PREFIX):
        return CodemodeSource(code=source)
    code = "" if newline == -1 else source[newline:]
    if code.strip(_JS_WHITESPACE) == "":
        raise CodemodeSourceError(NO_CODE_TEXT)
    directive = trimmed[len(CODEMODE_OPTIONS_PREFIX) :].strip(_JS_WHITESPACE)
    max_output_tokens, timeout_ms = _parse_options(directive)
    return CodemodeSource(code=code, max_output_tokens=max_output_tokens, timeout_ms=timeout_ms)


# ---------------------------------------------------------------------------------------------
# JSON.parse error messages (V8, Node 20)
# ---------------------------------------------------------------------------------------------


class _JsonError(Exception):
    pass


_JSON_WS = " \t\n\r"


class _V8Json:
    """A JSON validator that fails with V8's ``JSON.parse`` message."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail_at(self, what: str, pos: int) -> _JsonError:
        return _JsonError(f"{what} in JSON at position {pos}")

    def unexpected(self, pos: int) -> _JsonError:
        """V8's ``ReportUnexpectedToken`` for the token starting at ``pos``."""
        s = self.s
        if pos >= len(s):
            return _JsonError("Unexpected end of JSON input")
        c = s[pos]
        if c in "-0123456789":
            return self.fail_at("Unexpected number", pos)
        if c == '"':
            return self.fail_at("Unexpected string", pos)
        if len(s) <= 20:
            context = f'"{s}"'
        else:
            start, end = max(0, pos - 10), min(len(s), pos + 10)
            context = (
                ("..." if start > 0 else "") + f'"{s[start:end]}"' + ("..." if end < len(s) else "")
            )
        return _JsonError(f"Unexpected token '{c}', {context} is not valid JSON")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in _JSON_WS:
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def parse(self) -> None:
        self.ws()
        self.value()
        self.ws()
        if self.i < len(self.s):
            raise _JsonError(f"Unexpected non-whitespace character after JSON at position {self.i}")

    def value(self) -> None:
        self.ws()
        c = self.peek()
        if c == "{":
            self.obj()
        elif c == "[":
            self.arr()
        elif c == '"':
            self.string()
        elif c == "-" or (c.isdigit() and c.isascii()):
            self.number()
        elif c in ("t", "f", "n"):
            word = {"t": "true", "f": "false", "n": "null"}[c]
            for k, expected in enumerate(word):
                if self.i + k >= len(self.s):
                    raise _JsonError("Unexpected end of JSON input")
                if self.s[self.i + k] != expected:
                    raise self.unexpected(self.i + k)
            self.i += len(word)
        else:
            raise self.unexpected(self.i)

    def obj(self) -> None:
        self.i += 1
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return
        if self.peek() != '"':
            raise self.fail_at("Expected property name or '}'", self.i)
        first = True
        while True:
            self.string()
            self.ws()
            if self.peek() != ":":
                if first:
                    raise self.fail_at("Expected ':' after property name", self.i)
                raise self.unexpected(self.i)
            self.i += 1
            self.value()
            self.ws()
            c = self.peek()
            if c == "}":
                self.i += 1
                return
            if c != ",":
                raise self.fail_at("Expected ',' or '}' after property value", self.i)
            self.i += 1
            self.ws()
            if self.peek() != '"':
                raise self.fail_at("Expected double-quoted property name", self.i)
            first = False

    def arr(self) -> None:
        self.i += 1
        self.ws()
        if self.peek() == "]":
            self.i += 1
            return
        while True:
            self.value()
            self.ws()
            c = self.peek()
            if c == "]":
                self.i += 1
                return
            if c != ",":
                raise self.fail_at("Expected ',' or ']' after array element", self.i)
            self.i += 1

    def string(self) -> None:
        s = self.s
        self.i += 1
        while True:
            if self.i >= len(s):
                raise self.fail_at("Unterminated string", self.i)
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                self.i += 1
                if self.i >= len(s):
                    raise self.fail_at("Unterminated string", self.i)
                e = s[self.i]
                if e == "u":
                    for k in range(1, 5):
                        if self.i + k >= len(s) or s[self.i + k] not in "0123456789abcdefABCDEF":
                            raise self.fail_at("Bad Unicode escape", self.i + k)
                    self.i += 5
                    continue
                if e not in '"\\/bfnrt':
                    raise self.fail_at("Bad escaped character", self.i)
                self.i += 1
                continue
            if ord(c) < 0x20:
                raise self.fail_at("Bad control character in string literal", self.i)
            self.i += 1

    def number(self) -> None:
        s = self.s

        def digits() -> int:
            start = self.i
            while self.i < len(s) and s[self.i] in "0123456789":
                self.i += 1
            return self.i - start

        if self.peek() == "-":
            self.i += 1
            if not (self.peek().isascii() and self.peek().isdigit()):
                raise self.fail_at("No number after minus sign", self.i)
        if self.peek() == "0":
            self.i += 1
            if self.peek().isascii() and self.peek().isdigit():
                raise self.fail_at("Unexpected number", self.i)
        else:
            digits()
        if self.peek() == ".":
            self.i += 1
            if digits() == 0:
                raise self.fail_at("Unterminated fractional number", self.i)
        if self.peek() in ("e", "E"):
            self.i += 1
            if self.peek() in ("+", "-"):
                self.i += 1
            if digits() == 0:
                raise self.fail_at("Exponent part is missing a number", self.i)


def json_parse_error(text: str) -> str | None:
    """The message ``JSON.parse(text)`` throws in Node 20 (V8), or ``None`` when it parses."""
    try:
        _V8Json(text).parse()
    except _JsonError as e:
        return str(e)
    return None


__all__ = [
    "BAD_MAX_OUTPUT_TOKENS_TEXT",
    "BAD_TIMEOUT_TEXT",
    "CODEMODE_OPTIONS_PREFIX",
    "CODEMODE_SOURCE_GRAMMAR",
    "EMPTY_SOURCE_TEXT",
    "INVALID_JSON_TEXT",
    "MAX_TIMEOUT_MS",
    "MISPLACED_OPTIONS_TEXT",
    "NOT_AN_OBJECT_TEXT",
    "NO_CODE_TEXT",
    "UNKNOWN_FIELD_TEXT",
    "CodemodeSource",
    "CodemodeSourceError",
    "json_parse_error",
    "parse_codemode_source",
]
