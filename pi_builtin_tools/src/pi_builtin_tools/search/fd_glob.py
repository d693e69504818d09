"""Glob patterns with fd's semantics, for the find tool.

Pi's ``find`` runs ``fd --glob``: fd compiles the pattern with the ``globset`` crate
(``literal_separator`` on, so ``*`` and ``?`` never match ``/``; ``**`` spans directories only as
a whole path component), matches it against the entry's basename, or against its absolute path
with ``--full-path``, and is case-insensitive unless the pattern has an uppercase character
("smart case"). Pi 1.6 rewrites the pattern first (:func:`fd_effective_pattern`). fd is not
available where the files may be (a remote backend has a shell and ``rg``), so this module
re-implements that translation in Python: :func:`compile_fd_glob` turns a pattern into a
:class:`FdGlob` or raises :class:`GlobError` with globset's wording (``error parsing glob '[':
unclosed character class; missing ']'``).

Differences from globset: matching is done on code points, not bytes (``?`` matches ``é``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "EffectivePattern",
    "FdGlob",
    "GlobError",
    "compile_fd_glob",
    "escape_glob",
    "fd_effective_pattern",
    "glob_body",
]


class GlobError(ValueError):
    """A pattern globset cannot parse; ``str(error)`` is globset's message."""


@dataclass(frozen=True)
class _Tok:
    kind: str  # lit, any, zom, rprefix, rsuffix, rzom, class, alt
    char: str = ""
    negated: bool = False
    ranges: tuple[tuple[str, str], ...] = ()
    alternates: tuple[tuple[_Tok, ...], ...] = ()


_RPREFIX = _Tok("rprefix")
_RSUFFIX = _Tok("rsuffix")
_ZOM = _Tok("zom")

_UNCLOSED_CLASS = "unclosed character class; missing ']'"
_UNOPENED_ALT = "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)"
_UNCLOSED_ALT = "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
_DANGLING_ESCAPE = "dangling '\\'"


@dataclass
class _Parser:
    glob: str
    pos: int = 0
    prev: str | None = None
    cur: str | None = None
    alternates_stack: list[int] = field(default_factory=list)
    branches: list[list[_Tok]] = field(default_factory=lambda: [[]])

    def error(self, message: str) -> GlobError:
        return GlobError(f"error parsing glob '{self.glob}': {message}")

    def bump(self) -> str | None:
        self.prev = self.cur
        if self.pos < len(self.glob):
            self.cur = self.glob[self.pos]
            self.pos += 1
        else:
            self.cur = None
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def push(self, tok: _Tok) -> None:
        if not self.branches:
            raise self.error(_UNOPENED_ALT)
        self.branches[-1].append(tok)

    def pop(self) -> _Tok:
        if not self.branches:
            raise self.error(_UNOPENED_ALT)
        return self.branches[-1].pop()

    def have_tokens(self) -> bool:
        if not self.branches:
            raise self.error(_UNOPENED_ALT)
        return bool(self.branches[-1])

    def parse(self) -> list[_Tok]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.push(_Tok("any"))
            elif c == "*":
                self.parse_star()
            elif c == "[":
                self.parse_class()
            elif c == "{":
                self.alternates_stack.append(len(self.branches))
                self.branches.append([])
            elif c == "}":
                if not self.alternates_stack:
                    raise self.error(_UNOPENED_ALT)
                start = self.alternates_stack.pop()
                alts = tuple(tuple(b) for b in self.branches[start:])
                del self.branches[start:]
                self.push(_Tok("alt", alternates=alts))
            elif c == ",":
                if self.alternates_stack:
                    self.branches.append([])
                else:
                    self.push(_Tok("lit", ","))
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise self.error(_DANGLING_ESCAPE)
                self.push(_Tok("lit", escaped))
            else:
                self.push(_Tok("lit", c))
        if len(self.branches) > 1:
            raise self.error(_UNCLOSED_ALT)
        return self.branches[0]

    def parse_star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.push(_ZOM)
            return
        self.bump()
        if not self.have_tokens():
            following = self.peek()
            if following is not None and following != "/":
                self.push(_ZOM)
                self.push(_ZOM)
            else:
                self.push(_RPREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.branches) <= 1 or prev not in (",", "{")):
            self.push(_ZOM)
            self.push(_ZOM)
            return
        following = self.peek()
        if following is None:
            self.bump()
            is_suffix = True
        elif following in (",", "}") and len(self.branches) >= 2:
            is_suffix = True
        elif following == "/":
            self.bump()
            is_suffix = False
        else:
            self.push(_ZOM)
            self.push(_ZOM)
            return
        last = self.pop()
        if last in (_RPREFIX, _RSUFFIX):
            self.push(last)
        else:
            self.push(_RSUFFIX if is_suffix else _Tok("rzom"))

    def parse_class(self) -> None:
        ranges: list[tuple[str, str]] = []
        negated = False
        if self.peek() in ("!", "^"):
            self.bump()
            negated = True
        first = True
        in_range = False
        while True:
            c = self.bump()
            if c is None:
                raise self.error(_UNCLOSED_CLASS)
            if c == "]":
                if not first:
                    break
                ranges.append(("]", "]"))
            elif c == "-":
                if first:
                    ranges.append(("-", "-"))
                elif in_range:
                    self._extend_range(ranges, "-")
                    in_range = False
                else:
                    in_range = True
            else:
                if in_range:
                    self._extend_range(ranges, c)
                else:
                    ranges.append((c, c))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        self.push(_Tok("class", negated=negated, ranges=tuple(ranges)))

    def _extend_range(self, ranges: list[tuple[str, str]], end: str) -> None:
        start = ranges[-1][0]
        if end < start:
            raise self.error(f"invalid range; '{start}' > '{end}'")
        ranges[-1] = (start, end)


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def _to_regex(tokens: list[_Tok] | tuple[_Tok, ...], out: list[str]) -> None:
    for tok in tokens:
        if tok.kind == "lit":
            out.append(re.escape(tok.char))
        elif tok.kind == "any":
            out.append("[^/]")
        elif tok.kind == "zom":
            out.append("[^/]*")
        elif tok.kind == "rprefix":
            out.append("(?:/?|.*/)")
        elif tok.kind == "rsuffix":
            out.append("/.*")
        elif tok.kind == "rzom":
            out.append("(?:/|/.*/)")
        elif tok.kind == "class":
            body = "".join(
                _class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}"
                for a, b in tok.ranges
            )
            out.append(f"[{'^' if tok.negated else ''}{body}]")
        else:
            parts = []
            for alternative in tok.alternates:
                sub: list[str] = []
                _to_regex(alternative, sub)
                if sub:
                    parts.append("".join(sub))
            if parts:
                out.append("(?:" + "|".join(parts) + ")")


def _has_uppercase(tokens: list[_Tok] | tuple[_Tok, ...]) -> bool:
    for tok in tokens:
        if tok.kind == "lit" and tok.char.isupper():
            return True
        if tok.kind == "class" and any(a.isupper() or b.isupper() for a, b in tok.ranges):
            return True
        if tok.kind == "alt" and any(_has_uppercase(alt) for alt in tok.alternates):
            return True
    return False


@dataclass(frozen=True)
class FdGlob:
    """A compiled pattern: ``full_path`` says whether it is matched against the absolute path
    (the pattern has a ``/``) or the basename; ``case_sensitive`` is fd's smart case."""

    pattern: str
    regex: re.Pattern[str]
    full_path: bool
    case_sensitive: bool

    def matches(self, absolute_path: str) -> bool:
        """Whether the entry at ``absolute_path`` (no trailing ``/``) is a result."""
        candidate = absolute_path if self.full_path else absolute_path.rsplit("/", 1)[-1]
        return self.regex.match(candidate) is not None


@dataclass(frozen=True)
class EffectivePattern:
    """What Pi 1.6's find hands fd for a user's pattern: the ``pattern``, whether it is matched
    against the full path (``full_path``), and ``ignore_case`` when Pi passes ``--ignore-case``
    (else fd's smart case decides)."""

    pattern: str
    full_path: bool
    ignore_case: bool = False


def escape_glob(text: str) -> str:
    """``text`` with the glob characters ``\\ * ? [ ] { }`` escaped (Pi's escaping of the
    search path)."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", text)


def fd_effective_pattern(pattern: str, root: str) -> EffectivePattern:
    """Pi 1.6's rewrite before calling fd in the search directory ``root`` (absolute): leading
    ``./`` are dropped; a pattern without ``/`` is matched against file names; one with ``/`` is
    matched against the full path and, when relative, anchored at ``root`` (the glob-escaped
    root, ``/``, the pattern: ``src/*.ts`` finds ``src/a.ts``, not ``pkg/src/b.ts``), with
    ``--ignore-case`` when the user's pattern is all lowercase."""
    effective = re.sub(r"^(?:\./)+", "", pattern)
    if "/" not in effective:
        return EffectivePattern(effective, full_path=False)
    if effective.startswith("/"):
        return EffectivePattern(effective, full_path=True)
    anchored = f"{escape_glob(root.rstrip('/'))}/{effective}"
    return EffectivePattern(anchored, full_path=True, ignore_case=effective == effective.lower())


def glob_body(pattern: str) -> tuple[str, bool]:
    """globset's regular expression for ``pattern`` (``literal_separator`` on, backslash
    escapes) without anchors, and whether the pattern has an uppercase letter. Raises
    :class:`GlobError`."""
    tokens = _Parser(pattern).parse()
    if len(tokens) == 1 and tokens[0] == _RPREFIX:
        return ".*", False
    parts: list[str] = []
    _to_regex(tokens, parts)
    return "".join(parts), _has_uppercase(tokens)


def compile_fd_glob(pattern: str, root: str) -> FdGlob:
    """Compile ``pattern`` for a search of ``root`` the way Pi's find and fd do (see the module
    docstring). An empty pattern matches everything (fd's empty regex). Raises
    :class:`GlobError`."""
    effective = fd_effective_pattern(pattern, root)
    if effective.pattern == "":
        return FdGlob(pattern, re.compile(""), effective.full_path, case_sensitive=False)
    body, has_uppercase = glob_body(effective.pattern)
    case_sensitive = not effective.ignore_case and has_uppercase
    flags = re.DOTALL | (0 if case_sensitive else re.IGNORECASE)
    return FdGlob(pattern, re.compile(f"(?:{body})\\Z", flags), effective.full_path, case_sensitive)
