"""ripgrep's regex error texts, the same whichever ripgrep version runs.

Pi passes ripgrep's error text on; the reference runs ripgrep 13, we run the ``ripgrep`` wheel
(14.x) and remote backends whatever ``rg`` they have. ripgrep ≥ 14 prefixes its lines with
``rg: `` and parses the pattern wrapped as ``(?:PATTERN)``, so its echo, its caret line and, when
the wrapper's own ``(?:`` or ``)`` took part in the error, the error itself differ from ripgrep
13's. :func:`clean_rg_error` gives ripgrep 13's text for both:

* ``rg: `` prefixes dropped; the echoed ``(?:PATTERN)`` becomes ``PATTERN`` and carets move 3
  columns left;
* an error the wrapper took part in (its caret points into the wrapper, it is about an
  unclosed or unopened group, or the pattern ends in ``(?``, which ripgrep 14 reads as ``(?)``)
  is the pattern's own error at its end, which ripgrep 13 reports as: ``incomplete escape sequence, reached end of pattern prematurely`` (a
  trailing ``\\``), ``unclosed counted repetition`` (from ``{`` to the end), ``unclosed capture
  group name`` (``(?P<name`` at the end), ``expected flag but got end of regex`` (``(?i`` at the
  end), ``unclosed group`` (under the innermost unclosed ``(``) or, for a stray ``)`` that the
  wrapper's ``(?:`` absorbed, ``unopened group`` under that ``)``;
* :func:`stray_close_error` finds a stray ``)`` before ripgrep runs (ripgrep 14 may accept it);
* the PCRE2 hint ripgrep 13 adds to ``backreferences``/``look-around`` errors.

Errors of the regex syntax itself that changed between versions (``(?<name>`` is a named group
since ripgrep 14) keep the running version's meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CARETS = re.compile(r"^ *\^[ ^]*$")
_WRAPPER = len("(?:")
_ECHO_INDENT = 4
_PCRE2_HINT = (
    "\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\n"
    "and look-around."
)
_NEEDS_PCRE2 = (
    "error: backreferences are not supported",
    "error: look-around, including look-ahead and look-behind, is not supported",
)

_INCOMPLETE_ESCAPE = "error: incomplete escape sequence, reached end of pattern prematurely"


@dataclass(frozen=True)
class _EndError:
    """What ripgrep 13 reports for a pattern that ends inside a construct: the message and the
    caret span (first column in the pattern, number of carets)."""

    message: str
    start: int
    width: int = 1


def _end_error(pattern: str) -> _EndError | None:
    """The error ripgrep 13 finds where the wrapper makes ripgrep 14 differ: a stray ``)``
    (found as the parser reaches it) or the construct ``pattern`` ends inside; None when the
    pattern is balanced and ends cleanly."""
    groups: list[int] = []
    in_class = False
    brace: int | None = None
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return _EndError(_INCOMPLETE_ESCAPE, i)
            if pattern[i + 1] in "pP" and pattern[i + 2 : i + 3] == "{":
                close = pattern.find("}", i + 3)
                if close == -1:
                    return _EndError(_INCOMPLETE_ESCAPE, n)
                i = close + 1
                continue
            i += 2
            continue
        if in_class:
            if c == "[" and pattern[i + 1 : i + 2] == ":":
                end = pattern.find(":]", i + 2)
                i = end + 2 if end != -1 else i + 1
                continue
            if c == "]":
                in_class = False
            i += 1
            continue
        if brace is not None:
            if c == "}":
                brace = None
            i += 1
            continue
        if c == "[":
            in_class = True
            i += 1
            if pattern[i : i + 1] == "^":
                i += 1
            if pattern[i : i + 1] == "]":
                i += 1
            continue
        if c == "{" and i > 0 and pattern[i - 1] not in "(|":
            brace = i
        elif c == "(":
            if pattern.startswith("(?P<", i):
                close = pattern.find(">", i + 4)
                if close == -1:
                    return _EndError("error: unclosed capture group name", n)
                groups.append(i)
                i = close + 1
                continue
            if pattern.startswith("(?", i):
                j = i + 2
                while j < n and (pattern[j].isalpha() or pattern[j] == "-"):
                    j += 1
                if j >= n and j > i + 2:
                    return _EndError("error: expected flag but got end of regex", n)
            groups.append(i)
        elif c == ")":
            if not groups:
                return _EndError("error: unopened group", i)
            groups.pop()
        i += 1
    if brace is not None:
        return _EndError("error: unclosed counted repetition", brace, n - brace)
    if groups:
        return _EndError("error: unclosed group", groups[-1])
    return None


_GROUP_ERRORS = ("error: unclosed group", "error: unopened group")
"""ripgrep 14 errors that the wrapper's own parentheses always take part in."""


def _format(pattern: str, error: _EndError) -> str:
    caret = " " * (_ECHO_INDENT + error.start) + "^" * error.width
    return f"regex parse error:\n{' ' * _ECHO_INDENT}{pattern}\n{caret}\n{error.message}"


def stray_close_error(pattern: str) -> str | None:
    """ripgrep 13's error for a regex with a ``)`` that closes no group, or None.

    ripgrep ≥ 14 lets its wrapper's ``(?:`` absorb such a ``)``, so ``x)(`` is even accepted
    there (as ``(?:x)()``); grep checks this before running ripgrep. Patterns with the ``x``
    flag (where ``#`` starts a comment) are left to ripgrep."""
    if "(?" in pattern and re.search(r"\(\?[a-zA-Z-]*x", pattern):
        return None
    error = _end_error(pattern)
    if error is None or error.message != "error: unopened group":
        return None
    return _format(pattern, error)


def clean_rg_error(stderr: str, pattern: str) -> str:
    """ripgrep 13's text for ripgrep's error output ``stderr`` about ``pattern`` (any version;
    see the module docstring). Text that is not a regex error only loses its ``rg: `` prefixes."""
    lines = [line.removeprefix("rg: ") for line in stderr.strip().split("\n")]
    wrapped = " " * _ECHO_INDENT + f"(?:{pattern})"
    for i, line in enumerate(lines):
        if line != wrapped or i == 0 or lines[i - 1] != "regex parse error:":
            continue
        lines[i] = " " * _ECHO_INDENT + pattern
        carets = i + 1
        if carets + 1 < len(lines) and _CARETS.match(lines[carets]):
            caret_line = lines[carets]
            start = len(caret_line) - len(caret_line.lstrip(" "))
            column = start - _ECHO_INDENT - _WRAPPER
            in_wrapper = column < 0 or len(caret_line) - _ECHO_INDENT - _WRAPPER > len(pattern)
            end_error = None
            # A pattern ending in "(?" reads "(?)" to ripgrep 14: a repetition of nothing.
            ends_open = pattern.endswith("(?") and column == len(pattern) - 1
            if in_wrapper or ends_open or lines[carets + 1] in _GROUP_ERRORS:
                end_error = _end_error(pattern)
            if end_error is not None:
                lines[i - 1 :] = _format(pattern, end_error).split("\n")
            else:
                lines[carets] = caret_line[min(_WRAPPER, max(0, start - _ECHO_INDENT)) :]
        break
    text = "\n".join(lines)
    if lines and lines[-1] in _NEEDS_PCRE2:
        text += _PCRE2_HINT
    return text


__all__ = ["clean_rg_error", "stray_close_error"]
